//! One load worker thread: its own current-thread tokio runtime, its
//! connection slots and request loops, reconnects with backoff, and a
//! tally of everything it measured.

use std::cell::Cell;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::stream::{FuturesUnordered, StreamExt};
use h3lab_client::{
    AutoConnector, ClientError, Connector, OriginConnector, RequestTemplate, Sender,
};
use tokio::time::{sleep, sleep_until, Sleep};
use tokio_util::sync::CancellationToken;

use crate::books::{Books, Exchange};
use crate::cpu::CpuTime;
use crate::pacer::Pacer;
use crate::plan::{Plan, Share};
use crate::schedule::Ticket;
use crate::server_timing;
use crate::tally::Tally;

pub(crate) const BACKOFF_MIN: Duration = Duration::from_millis(50);
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// A connection slot gives up after this many failed connects in a row
/// (about 1.5 s of backoff), so a dead server ends even a long counted run.
pub(crate) const CONNECT_ATTEMPTS: u32 = 5;

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
        books: Books::new(plan, share.schedule, done),
        pacer,
    });
    let end = runtime.block_on(worker.clone().drive(connections, cancel))?;
    drop(runtime);
    let worker = Rc::into_inner(worker).expect("the runtime that shared the worker is gone");
    Ok(WorkerResult {
        tally: worker.books.into_tally(end),
        cpu: CpuTime::of_this_thread().since(cpu_before),
        end,
    })
}

/// State of one worker thread; only its own tasks touch it.
struct Worker {
    books: Books,
    pacer: Pacer,
}

/// Why a request loop stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoopEnd {
    /// No more tickets for this worker.
    Done,
    /// The connection can carry no more requests; open a new one.
    ConnectionLost,
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
            match self.books.plan.deadline {
                Some(deadline) => sleep_until(deadline.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = all => {}
            _ = deadline => {}
            _ = cancel.cancelled() => {}
        }
        let now = Instant::now();
        connector.close().await;
        Ok(self.books.plan.measured_end(now))
    }

    /// The connector of this worker's connections.
    fn connector(&self) -> anyhow::Result<OriginConnector> {
        let plan = &self.books.plan;
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
        while !self.books.is_done(Instant::now()) {
            self.books.note_first_attempt();
            match connector.connect(false).await {
                Err(err) => {
                    let Some(ticket) = self.books.next_ticket(Instant::now()) else {
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
                    self.books
                        .record_connection(&connection.timing, opened > 0, proto);
                    opened += 1;
                    if self.run_streams(connection.sender, &connector).await == LoopEnd::Done {
                        return;
                    }
                }
            }
        }
    }

    async fn run_streams(&self, first: Sender, connector: &OriginConnector) -> LoopEnd {
        let mut senders: Vec<Sender> = (1..self.books.plan.streams)
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
        let timeout = self.books.plan.request_timeout;
        let watchdog = sleep(timeout);
        tokio::pin!(watchdog);
        loop {
            if sender.is_closed() {
                return LoopEnd::ConnectionLost;
            }
            let Some(ticket) = self.books.next_ticket(Instant::now()) else {
                return LoopEnd::Done;
            };
            let held = self.books.hold(ticket);
            if let Some(intended) = ticket.intended {
                self.pacer.sleep_until(intended).await;
            }
            let ticket = held.send();
            let sent_at = Instant::now();
            self.books.note_sent(&ticket, sent_at);
            let outcome = tokio::select! {
                biased;
                result = exchange(&mut sender, &self.books.plan.template, connector) => Ok(result),
                () = expire(watchdog.as_mut(), sent_at + timeout) => Err(()),
            };
            self.books.note_ended();
            match outcome {
                Ok(Ok(exchange)) => {
                    answered.set(true);
                    self.books.record_response(&ticket, sent_at, &exchange);
                }
                Ok(Err(err)) if err.is_unsent() && answered.get() => {
                    self.books.retry_refused(ticket);
                    return LoopEnd::ConnectionLost;
                }
                Ok(Err(err)) => {
                    self.record_error(&ticket, &err);
                    if sender.is_closed() || err.is_unsent() {
                        return LoopEnd::ConnectionLost;
                    }
                }
                Err(_) => {
                    self.books.record_timeout(&ticket);
                    // An h1 connection is stuck mid-response, and a QUIC
                    // connection to a dead peer looks open until its idle
                    // timeout: start afresh rather than wait on it again.
                    return LoopEnd::ConnectionLost;
                }
            }
        }
    }

    fn record_error(&self, ticket: &Ticket, err: &ClientError) {
        self.books
            .record_failure(ticket, err.kind(), || err.to_string());
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
