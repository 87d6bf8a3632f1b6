//! One load worker thread: its own current-thread tokio runtime, its
//! connection slots and request loops, reconnects with backoff, and a
//! tally of everything it measured.

use std::cell::{Cell, RefCell};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::stream::{FuturesUnordered, StreamExt};
use h3lab_client::{
    AutoConnector, ClientError, ConnectTiming, Connector, OriginConnector, RequestTemplate, Sender,
};
use h3lab_results::{ErrorKind, Proto};
use http::StatusCode;
use tokio::time::{sleep, sleep_until, Sleep};
use tokio_util::sync::CancellationToken;

use crate::cpu::CpuTime;
use crate::pacer::Pacer;
use crate::plan::{Plan, Share};
use crate::schedule::{Schedule, Ticket};
use crate::server_timing;
use crate::tally::Tally;

const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// A connection slot gives up after this many failed connects in a row
/// (about 1.5 s of backoff), so a dead server ends even a long counted run.
const CONNECT_ATTEMPTS: u32 = 5;
/// Sent later than intended by more than this counts as late.
const LATE: Duration = Duration::from_millis(1);

/// What one worker measured, for the planner to merge.
pub(crate) struct WorkerResult {
    pub(crate) tally: Tally,
    pub(crate) cpu: CpuTime,
    pub(crate) end: Instant,
}

/// Runs one worker's share of the load on this thread.
pub(crate) fn run_worker(
    plan: Arc<Plan>,
    share: Share,
    cancel: CancellationToken,
    done: Arc<AtomicU64>,
) -> anyhow::Result<WorkerResult> {
    let cpu_before = CpuTime::of_this_thread();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting a worker runtime")?;
    let connections = share.connections;
    let pacer = {
        let _runtime = runtime.enter();
        let interval = share.schedule.interval().unwrap_or(Duration::MAX);
        Pacer::new(interval).context("creating the send timer (timerfd)")?
    };
    let worker = Rc::new(Worker {
        plan,
        pacer,
        schedule: RefCell::new(share.schedule),
        tally: RefCell::new(Tally::default()),
        in_flight: Cell::new(0),
        done,
    });
    let end = runtime.block_on(worker.clone().drive(connections, cancel))?;
    drop(runtime);
    let worker = Rc::into_inner(worker).expect("the runtime that shared the worker is gone");
    let mut tally = worker.tally.into_inner();
    let schedule = worker.schedule.borrow();
    tally.unsent = schedule.unsent(end);
    tally.not_attempted = schedule.not_attempted();
    Ok(WorkerResult {
        tally,
        cpu: CpuTime::of_this_thread().since(cpu_before),
        end,
    })
}

/// State of one worker thread; only its own tasks touch it.
struct Worker {
    plan: Arc<Plan>,
    pacer: Pacer,
    schedule: RefCell<Schedule>,
    tally: RefCell<Tally>,
    in_flight: Cell<u64>,
    /// Finished measured attempts, for the progress bar only.
    done: Arc<AtomicU64>,
}

/// Why a request loop stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoopEnd {
    /// No more tickets for this worker.
    Done,
    /// The connection can carry no more requests; open a new one.
    ConnectionLost,
}

/// A response received in full.
struct Exchange {
    status: StatusCode,
    head_at: Instant,
    end_at: Instant,
    body_bytes: u64,
    /// What the edge said it waited for its origin (`Server-Timing`).
    origin_wait: Option<Duration>,
}

impl Worker {
    /// Runs this worker's connections until done, the deadline, or cancel;
    /// returns when the measured phase ended for it.
    async fn drive(
        self: Rc<Self>,
        connections: usize,
        cancel: CancellationToken,
    ) -> anyhow::Result<Instant> {
        let connector = Rc::new(self.connector()?);
        // FuturesUnordered polls only the woken future; join_all would poll
        // every connection on each wake-up.
        let all = (0..connections)
            .map(|_| self.clone().keep_connected(connector.clone()))
            .collect::<FuturesUnordered<_>>()
            .collect::<Vec<()>>();
        let deadline = async {
            match self.plan.deadline {
                Some(deadline) => sleep_until(deadline.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = all => {}
            _ = deadline => {}
            _ = cancel.cancelled() => {}
        }
        self.tally.borrow_mut().aborted_in_flight = self.in_flight.get();
        let now = Instant::now();
        connector.close().await;
        Ok(self.plan.deadline.map_or(now, |deadline| deadline.min(now)))
    }

    /// The connector of this worker's connections.
    fn connector(&self) -> anyhow::Result<OriginConnector> {
        let plan = &self.plan;
        if let Some((quic_tls, discovery)) = &plan.auto {
            return Ok(OriginConnector::Auto(Box::new(AutoConnector::new(
                plan.target.clone(),
                plan.addr,
                plan.tls.clone(),
                quic_tls.clone(),
                plan.connect_timeout,
                discovery.clone(),
            )?)));
        }
        let mut connector = Connector::new(
            plan.target.clone(),
            plan.addr,
            plan.proto,
            plan.tls.clone(),
            plan.connect_timeout,
        )?;
        if let Some(dir) = &plan.qlog {
            connector.log_qlog(dir.clone())?;
        }
        Ok(OriginConnector::Fixed(Box::new(connector)))
    }

    /// One connection slot: connect, run its streams, reconnect with a
    /// small backoff when it breaks. Failed connects use up tickets so a
    /// dead server still ends a counted run.
    async fn keep_connected(self: Rc<Self>, connector: Rc<OriginConnector>) {
        let mut backoff = BACKOFF_MIN;
        let mut failures = 0;
        let mut opened = 0u64;
        while !self.schedule.borrow().is_done(Instant::now()) {
            self.tally
                .borrow_mut()
                .first_attempt
                .get_or_insert_with(Instant::now);
            match connector.connect(false).await {
                Err(err) => {
                    let Some(ticket) = self.next_ticket() else {
                        return;
                    };
                    self.record_error(&ticket, &err);
                    failures += 1;
                    if failures == CONNECT_ATTEMPTS {
                        return;
                    }
                    sleep(backoff).await;
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                }
                Ok(connection) => {
                    backoff = BACKOFF_MIN;
                    failures = 0;
                    let proto = connection.sender.proto();
                    self.record_connection(&connection.timing, opened > 0, proto);
                    opened += 1;
                    if self.run_streams(connection.sender, &connector).await == LoopEnd::Done {
                        return;
                    }
                }
            }
        }
    }

    async fn run_streams(&self, first: Sender, connector: &OriginConnector) -> LoopEnd {
        let mut senders: Vec<Sender> = (1..self.plan.streams)
            .filter_map(|_| first.try_clone())
            .collect();
        senders.push(first);
        let answered = Cell::new(false);
        let ends: Vec<LoopEnd> = senders
            .into_iter()
            .map(|sender| self.request_loop(sender, connector, &answered))
            .collect::<FuturesUnordered<_>>()
            .collect()
            .await;
        if ends.contains(&LoopEnd::ConnectionLost) {
            LoopEnd::ConnectionLost
        } else {
            LoopEnd::Done
        }
    }

    /// Sends requests one after another on one stream slot. `answered`
    /// tells whether this connection ever carried a response: a request
    /// refused by a connection that did is retried elsewhere, uncounted.
    async fn request_loop(
        &self,
        mut sender: Sender,
        connector: &OriginConnector,
        answered: &Cell<bool>,
    ) -> LoopEnd {
        let timeout = self.plan.request_timeout;
        let watchdog = sleep(timeout);
        tokio::pin!(watchdog);
        loop {
            if sender.is_closed() {
                return LoopEnd::ConnectionLost;
            }
            let Some(ticket) = self.next_ticket() else {
                return LoopEnd::Done;
            };
            if let Some(intended) = ticket.intended {
                self.pacer.sleep_until(intended).await;
            }
            let sent_at = Instant::now();
            self.note_sent(&ticket, sent_at);
            self.in_flight.set(self.in_flight.get() + 1);
            let outcome = tokio::select! {
                biased;
                result = exchange(&mut sender, &self.plan.template, connector) => Ok(result),
                () = expire(watchdog.as_mut(), sent_at + timeout) => Err(()),
            };
            self.in_flight.set(self.in_flight.get() - 1);
            match outcome {
                Ok(Ok(exchange)) => {
                    answered.set(true);
                    self.record_response(&ticket, sent_at, &exchange);
                }
                Ok(Err(err)) if err.is_unsent() && answered.get() => {
                    self.schedule.borrow_mut().retry(ticket);
                    return LoopEnd::ConnectionLost;
                }
                Ok(Err(err)) => {
                    self.record_error(&ticket, &err);
                    if sender.is_closed() || err.is_unsent() {
                        return LoopEnd::ConnectionLost;
                    }
                }
                Err(_) => {
                    self.record_timeout(&ticket);
                    // An h1 connection is stuck mid-response, and a QUIC
                    // connection to a dead peer looks open until its idle
                    // timeout: start afresh rather than wait on it again.
                    return LoopEnd::ConnectionLost;
                }
            }
        }
    }

    fn next_ticket(&self) -> Option<Ticket> {
        self.schedule.borrow_mut().next(Instant::now())
    }

    fn note_sent(&self, ticket: &Ticket, sent_at: Instant) {
        let (Some(intended), false) = (ticket.intended, ticket.warmup) else {
            return;
        };
        let mut tally = self.tally.borrow_mut();
        tally.sent += 1;
        let lag = sent_at.saturating_duration_since(intended);
        tally.lag.record(lag);
        if lag > LATE {
            tally.late += 1;
        }
    }

    fn record_response(&self, ticket: &Ticket, sent_at: Instant, exchange: &Exchange) {
        let origin = ticket.intended.unwrap_or(sent_at);
        let latency = exchange.end_at.saturating_duration_since(origin);
        let mut tally = self.tally.borrow_mut();
        if ticket.warmup {
            tally.warmup_completed += 1;
            tally.warmup_latency.record(latency);
            return;
        }
        tally.record_response(
            self.plan.unix_second(exchange.end_at),
            exchange.status.as_u16(),
            exchange.body_bytes,
            exchange.head_at.saturating_duration_since(origin),
            latency,
            exchange.origin_wait,
        );
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    fn record_error(&self, ticket: &Ticket, err: &ClientError) {
        self.record_failure(ticket, err.kind(), || err.to_string());
    }

    fn record_timeout(&self, ticket: &Ticket) {
        let limit = self.plan.request_timeout;
        self.record_failure(ticket, ErrorKind::Timeout, || {
            format!(
                "no complete response within {limit:?}; raise --timeout if the server is just slow"
            )
        });
    }

    fn record_failure(&self, ticket: &Ticket, kind: ErrorKind, message: impl FnOnce() -> String) {
        let mut tally = self.tally.borrow_mut();
        if ticket.warmup {
            tally.warmup_failed += 1;
            return;
        }
        tally.record_failure(self.plan.unix_second(Instant::now()), kind, message);
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    fn record_connection(&self, timing: &ConnectTiming, reconnect: bool, proto: Proto) {
        let mut tally = self.tally.borrow_mut();
        tally.connections_opened += 1;
        if self.plan.auto.is_some() {
            *tally.connections_by_protocol.entry(proto).or_default() += 1;
        }
        tally.reconnects += u64::from(reconnect);
        if let Some(tcp) = timing.tcp_connect {
            tally.tcp_connect.record(tcp);
        }
        if let Some(handshake) = timing.handshake {
            tally.handshake.record(handshake);
        }
    }
}

/// Resolves at `due`. The slot's one timer is moved forward only when it
/// fires early, so a request costs no timer insertion and removal, as a
/// `tokio::time::timeout` per request would.
async fn expire(mut watchdog: Pin<&mut Sleep>, due: Instant) {
    loop {
        watchdog.as_mut().await;
        if Instant::now() >= due {
            return;
        }
        watchdog.as_mut().reset(due.into());
    }
}

async fn exchange(
    sender: &mut Sender,
    template: &RequestTemplate,
    connector: &OriginConnector,
) -> Result<Exchange, ClientError> {
    let response = sender.send(template).await?;
    connector.observe(sender.proto(), response.headers());
    let head_at = Instant::now();
    let status = response.status();
    let origin_wait = server_timing::origin_wait(response.headers());
    let body_bytes = response.drain().await?;
    Ok(Exchange {
        status,
        head_at,
        end_at: Instant::now(),
        body_bytes,
        origin_wait,
    })
}
