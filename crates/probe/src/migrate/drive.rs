//! The client side of one protocol's run, inside the client namespace: a
//! steady request stream over one connection (h1: a small pool, one
//! request per connection at a time), the change at the switch, and a
//! record of every request and connection.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use anyhow::Context;
use bytes::Bytes;
use h3lab_client::{ClientError, Connector, PathFrames, RequestTemplate, Sender};
use h3lab_results::{ErrorKind, Proto};
use http::{HeaderMap, Method};
use linkem::run::Interrupted;
use linkem::PathControl;
use tokio::task::JoinSet;
use tokio::time::{sleep_until, timeout_at};

use super::scenario::Scenario;
use super::summary::{ConnectionRecord, Observed, RequestRecord};
use crate::shell::ConnectorParts;

/// How the client's address changes at the switch.
#[derive(Debug, Clone, Copy)]
pub enum Switch {
    /// The QUIC endpoint moves to a new socket on `local`; then, if given,
    /// the old address is removed.
    Rebind {
        local: SocketAddr,
        remove: Option<Ipv4Addr>,
    },
    /// The path's NAT gives every flow a new external port.
    RebindNat,
    /// The client's old address is removed.
    RemoveAddress(Ipv4Addr),
}

/// What the client needs to run; moved onto the client namespace's thread.
pub struct Job {
    pub proto: Proto,
    pub connector_parts: ConnectorParts,
    pub scenario: Scenario,
    pub switch: Switch,
    pub control: PathControl,
    pub interrupted: Interrupted,
}

/// What the client saw, plus the h3 path frames around the switch.
pub struct Gathered {
    pub observed: Observed,
    /// h3: frames on the first connection just before the switch and at
    /// the end, when it was still the one in use.
    pub frames: Option<(PathFrames, PathFrames)>,
}

impl Job {
    /// Runs on a fresh single-threaded runtime (its threads stay in this
    /// thread's namespace).
    pub fn run(self) -> anyhow::Result<Gathered> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the tokio runtime")?;
        runtime.block_on(self.drive())
    }

    async fn drive(self) -> anyhow::Result<Gathered> {
        let parts = &self.connector_parts;
        let connector = Connector::new(
            parts.target.clone(),
            parts.addr,
            self.proto,
            parts.tls.clone(),
            self.scenario.request_timeout,
        )?;
        let template = Arc::new(RequestTemplate::new(
            &parts.target,
            Method::GET,
            HeaderMap::new(),
            Bytes::new(),
        ));
        let pool = Arc::new(Pool::new(connector, self.proto));
        let first = pool
            .checkout()
            .await
            .map_err(|err| anyhow::anyhow!("the first connection failed: {err}"))?;
        pool.checkin(first);
        // The schedule starts once the first connection is up, so its
        // handshake delays no request.
        let (observed, frames) = self.stream(&pool, &template, Instant::now()).await?;
        pool.connector.close().await;
        Ok(Gathered { observed, frames })
    }

    /// Starts the requests on schedule, makes the change at its time, and
    /// waits for every request (each bounded by the request timeout).
    async fn stream(
        &self,
        pool: &Arc<Pool>,
        template: &Arc<RequestTemplate>,
        start: Instant,
    ) -> anyhow::Result<(Observed, Option<(PathFrames, PathFrames)>)> {
        let scenario = &self.scenario;
        let switch_time = start + scenario.switch_at;
        let mut switched = None;
        let mut before = None;
        let mut tasks = JoinSet::new();
        for index in 0..scenario.requests() {
            let intended = start + scenario.intended_at(index);
            if switched.is_none() && intended >= switch_time {
                sleep_until(switch_time.into()).await;
                before = pool.first_connection_frames();
                self.make_switch(&pool.connector).await?;
                switched = Some(start.elapsed());
            }
            if self.interrupted.is_set() {
                break;
            }
            sleep_until(intended.into()).await;
            let deadline = intended + scenario.request_timeout;
            let times = Times {
                start,
                intended,
                deadline,
            };
            tasks.spawn(request(pool.clone(), template.clone(), times));
        }
        let mut requests = Vec::new();
        while let Some(record) = tasks.join_next().await {
            requests.push(record.context("a request task panicked")?);
        }
        let after = pool.first_connection_frames();
        let observed = Observed {
            requests,
            connections: pool.connection_records(start),
            switched_at: switched.context("interrupted before the switch")?,
        };
        Ok((observed, before.zip(after)))
    }

    async fn make_switch(&self, connector: &Connector) -> anyhow::Result<()> {
        match self.switch {
            Switch::Rebind { local, remove } => {
                connector.rebind(local)?;
                if let Some(address) = remove {
                    self.remove_address(address).await?;
                }
            }
            Switch::RebindNat => self.control.rebind_nat(),
            Switch::RemoveAddress(address) => self.remove_address(address).await?,
        }
        Ok(())
    }

    /// Runs `ip addr del` off the runtime's thread, so responses keep
    /// being read meanwhile.
    async fn remove_address(&self, address: Ipv4Addr) -> anyhow::Result<()> {
        let control = self.control.clone();
        tokio::task::spawn_blocking(move || control.remove_client_address(address))
            .await
            .context("the address removal panicked")?
    }
}

/// When the run started, when a request is meant to start, and by when
/// it must have its whole response.
#[derive(Clone, Copy)]
struct Times {
    start: Instant,
    intended: Instant,
    deadline: Instant,
}

/// One request: a connection from the pool, the exchange, the record.
/// A request that never left (its connection had closed) is retried once
/// on a fresh connection, as clients do.
async fn request(pool: Arc<Pool>, template: Arc<RequestTemplate>, times: Times) -> RequestRecord {
    let deadline = times.deadline;
    let mut retried = false;
    let (error, connection) = loop {
        let live = match timeout_at(deadline.into(), pool.checkout()).await {
            Err(_) => break (Some(ErrorKind::Timeout), None),
            Ok(Err(err)) => break (Some(err.kind()), None),
            Ok(Ok(live)) => live,
        };
        let id = live.id;
        match exchange(live, &template, deadline).await {
            Ok(live) => {
                pool.checkin(live);
                break (None, Some(id));
            }
            Err(err) if err.breaks_connection() => {
                pool.broken(id).await;
                if err.unsent && !retried {
                    retried = true;
                    continue;
                }
                break (Some(err.kind), Some(id));
            }
            Err(err) => break (Some(err.kind), Some(id)),
        }
    };
    RequestRecord {
        intended_at: times.intended - times.start,
        finished_at: times.start.elapsed(),
        error,
        connection,
    }
}

/// Why an exchange failed.
struct Failure {
    kind: ErrorKind,
    unsent: bool,
}

impl Failure {
    /// A bad status is the server's answer, not a dead connection.
    fn breaks_connection(&self) -> bool {
        self.kind != ErrorKind::BadStatus
    }
}

impl From<ClientError> for Failure {
    fn from(err: ClientError) -> Failure {
        Failure {
            kind: err.kind(),
            unsent: err.is_unsent(),
        }
    }
}

/// Sends the request and reads the whole response by `deadline`.
async fn exchange(
    mut live: Live,
    template: &RequestTemplate,
    deadline: Instant,
) -> Result<Live, Failure> {
    let answer = async {
        let response = live.sender.send(template).await?;
        let status = response.status();
        response.drain().await?;
        Ok::<_, ClientError>(status)
    };
    match timeout_at(deadline.into(), answer).await {
        Err(_) => Err(Failure {
            kind: ErrorKind::Timeout,
            unsent: false,
        }),
        Ok(Err(err)) => Err(err.into()),
        Ok(Ok(status)) if status.is_client_error() || status.is_server_error() => Err(Failure {
            kind: ErrorKind::BadStatus,
            unsent: false,
        }),
        Ok(Ok(_)) => Ok(live),
    }
}

/// A connection's request handle and its index in the records.
struct Live {
    id: usize,
    sender: Sender,
}

/// The run's connections: one shared connection for h2/h3 (replaced when
/// it breaks), idle h1 connections otherwise.
struct Pool {
    connector: Connector,
    proto: Proto,
    /// h2/h3: the connection in use; its lock is held while a replacement
    /// connects, so requests wait for it rather than open their own.
    shared: tokio::sync::Mutex<Option<Live>>,
    /// h1: connections waiting for a request.
    idle: Mutex<Vec<Live>>,
    /// Every connection opened, by index: when it was ready and when it
    /// was found broken. Then the first one's handle (h3), to read its
    /// path frames.
    records: Mutex<Vec<(Instant, Option<Instant>)>>,
    first: Mutex<Option<Sender>>,
}

impl Pool {
    fn new(connector: Connector, proto: Proto) -> Pool {
        Pool {
            connector,
            proto,
            shared: tokio::sync::Mutex::new(None),
            idle: Mutex::new(Vec::new()),
            records: Mutex::new(Vec::new()),
            first: Mutex::new(None),
        }
    }

    fn multiplexed(&self) -> bool {
        self.proto != Proto::H1
    }

    async fn checkout(&self) -> Result<Live, ClientError> {
        if !self.multiplexed() {
            return match self.idle_connection() {
                Some(live) => Ok(live),
                None => self.open().await,
            };
        }
        let mut slot = self.shared.lock().await;
        if let Some(live) = slot.as_ref().filter(|live| !live.sender.is_closed()) {
            return Ok(clone(live));
        }
        if let Some(closed) = slot.take() {
            self.mark_broken(closed.id);
        }
        let live = self.open().await?;
        *slot = Some(clone(&live));
        Ok(live)
    }

    /// An idle h1 connection that is still open; closed ones count as
    /// broken.
    fn idle_connection(&self) -> Option<Live> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(live) = idle.pop() {
            if !live.sender.is_closed() {
                return Some(live);
            }
            self.mark_broken(live.id);
        }
        None
    }

    fn checkin(&self, live: Live) {
        if !self.multiplexed() && !live.sender.is_closed() {
            self.idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(live);
        }
    }

    async fn open(&self) -> Result<Live, ClientError> {
        let connection = self.connector.connect().await?;
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let id = records.len();
        records.push((Instant::now(), None));
        if id == 0 {
            *self.first.lock().unwrap_or_else(PoisonError::into_inner) =
                connection.sender.try_clone();
        }
        Ok(Live {
            id,
            sender: connection.sender,
        })
    }

    /// A request on connection `id` failed: it counts as broken, and the
    /// next request gets another.
    async fn broken(&self, id: usize) {
        self.mark_broken(id);
        if self.multiplexed() {
            let mut slot = self.shared.lock().await;
            if slot.as_ref().is_some_and(|live| live.id == id) {
                *slot = None;
            }
        }
    }

    fn mark_broken(&self, id: usize) {
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, broken)) = records.get_mut(id) {
            broken.get_or_insert_with(Instant::now);
        }
    }

    /// The connections, times from `start` (one ready before it at zero).
    fn connection_records(&self, start: Instant) -> Vec<ConnectionRecord> {
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let since_start = |at: Instant| at.saturating_duration_since(start);
        records
            .iter()
            .map(|&(ready, broken)| ConnectionRecord {
                ready_at: since_start(ready),
                broken_at: broken.map(since_start),
            })
            .collect()
    }

    /// h3: the first connection's path frames while it is unbroken.
    fn first_connection_frames(&self) -> Option<PathFrames> {
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let unbroken = records.first()?.1.is_none();
        drop(records);
        let first = self.first.lock().unwrap_or_else(PoisonError::into_inner);
        first.as_ref().filter(|_| unbroken)?.path_frames()
    }
}

fn clone(live: &Live) -> Live {
    Live {
        id: live.id,
        sender: live.sender.try_clone().expect("h2 and h3 handles clone"),
    }
}
