//! The I/O shell: one current-thread tokio runtime per worker thread,
//! connections spread over them, each worker tallying alone.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use futures::stream::{FuturesUnordered, StreamExt};
use h3lab_client::{
    client_tls_config, ClientError, ConnectTiming, Connector, RequestTemplate, Sender, Target,
};
use h3lab_results::load::LoadReport;
use h3lab_results::{ErrorKind, Proto};
use http::StatusCode;
use tokio::time::{sleep, sleep_until, Sleep};
use tokio_util::sync::CancellationToken;

use crate::config::LoadConfig;
use crate::cpu::CpuTime;
use crate::progress::Progress;
use crate::report::{self, RunShape, RunTotals};
use crate::schedule::{Schedule, Ticket};
use crate::tally::Tally;

const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// A connection slot gives up after this many failed connects in a row
/// (about 1.5 s of backoff), so a dead server ends even a long counted run.
const CONNECT_ATTEMPTS: u32 = 5;
/// Sent later than intended by more than this counts as late.
const LATE: Duration = Duration::from_millis(1);

/// Runs the load described by `config` until its bound, a fatal set-up
/// error, or `cancel` (Ctrl-C), and returns everything measured.
///
/// Before the run one throw-away connection checks that the target answers
/// at all, so an untrusted certificate or a missing UDP listener fails
/// fast with one clear message instead of a report full of errors.
pub fn run(config: &LoadConfig, cancel: CancellationToken) -> anyhow::Result<LoadReport> {
    config.validate()?;
    let control = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let addr = control.block_on(preflight(config))?;
    let plan = Arc::new(Plan::new(config, addr)?);
    let threads = config.threads.min(config.connections);
    let shares = split_work(config, threads, plan.start);
    let progress = Progress::new(config);
    let workers: Vec<JoinHandle<anyhow::Result<WorkerResult>>> = shares
        .into_iter()
        .enumerate()
        .map(|(index, share)| {
            let plan = plan.clone();
            let cancel = cancel.clone();
            let done = progress.counter();
            std::thread::Builder::new()
                .name(format!("h3lab-load-{index}"))
                .spawn(move || run_worker(plan, share, cancel, done))
                .context("spawning a load worker thread")
        })
        .collect::<anyhow::Result<_>>()?;
    progress.watch(&workers, plan.measure_start);
    let mut tally = Tally::default();
    let mut cpu = CpuTime::default();
    let mut end = plan.start;
    for worker in workers {
        let result = worker
            .join()
            .map_err(|_| anyhow!("a load worker thread panicked"))??;
        tally.merge(result.tally);
        cpu.user += result.cpu.user;
        cpu.sys += result.cpu.sys;
        end = end.max(result.end);
    }
    let shape = RunShape {
        url: config.target.to_string(),
        proto: config.proto,
        connections: config.connections,
        streams: config.streams,
        threads,
        target_rate: config.rate,
    };
    let totals = RunTotals {
        duration_s: end
            .saturating_duration_since(plan.measure_start)
            .as_secs_f64(),
        warmup_s: end
            .min(plan.measure_start)
            .duration_since(plan.start)
            .as_secs_f64(),
        interrupted: cancel.is_cancelled(),
        user_s: cpu.user.as_secs_f64(),
        sys_s: cpu.sys.as_secs_f64(),
    };
    Ok(report::build(shape, tally, totals))
}

async fn preflight(config: &LoadConfig) -> anyhow::Result<SocketAddr> {
    let addr = config.target.resolve().await?;
    // A private TLS config, so no session ticket leaks into the measured run.
    let tls = client_tls_config(&config.tls, config.proto)?;
    let target = Arc::new(config.target.clone());
    let connector = Connector::new(target, addr, config.proto, tls, config.connect_timeout)?;
    connector.connect().await?;
    connector.close().await;
    Ok(addr)
}

/// Shared, read-only facts of the run.
struct Plan {
    target: Arc<Target>,
    addr: SocketAddr,
    proto: Proto,
    tls: Arc<rustls::ClientConfig>,
    template: RequestTemplate,
    streams: usize,
    request_timeout: Duration,
    connect_timeout: Duration,
    start: Instant,
    measure_start: Instant,
    deadline: Option<Instant>,
}

impl Plan {
    fn new(config: &LoadConfig, addr: SocketAddr) -> anyhow::Result<Plan> {
        let start = Instant::now();
        let measure_start = start + config.warmup;
        Ok(Plan {
            target: Arc::new(config.target.clone()),
            addr,
            proto: config.proto,
            tls: client_tls_config(&config.tls, config.proto)?,
            template: RequestTemplate::new(
                &config.target,
                config.method.clone(),
                config.headers.clone(),
                config.body.clone(),
            ),
            streams: config.streams,
            request_timeout: config.request_timeout,
            connect_timeout: config.connect_timeout,
            start,
            measure_start,
            deadline: config.duration.map(|duration| measure_start + duration),
        })
    }
}

/// One worker's part of the run.
struct Share {
    connections: usize,
    schedule: Schedule,
}

/// Connections, request budget and rate are split in proportion, and each
/// worker's timetable is offset so the merged stream stays evenly spaced.
fn split_work(config: &LoadConfig, threads: usize, start: Instant) -> Vec<Share> {
    let connections = spread(config.connections as u64, threads);
    let limits = config
        .request_limit()
        .map(|limit| spread_in_proportion(limit, &connections, config.connections as u64));
    let measure_start = start + config.warmup;
    let deadline = config.duration.map(|duration| measure_start + duration);
    connections
        .iter()
        .enumerate()
        .map(|(index, &conns)| {
            let rate = config.rate.map(|rate| {
                let share = rate * conns as f64 / config.connections as f64;
                let offset = Duration::from_secs_f64(index as f64 / rate);
                (share, start + offset)
            });
            let limit = limits.as_ref().map(|limits| limits[index]);
            Share {
                connections: conns as usize,
                schedule: Schedule::new(measure_start, deadline, limit, rate),
            }
        })
        .collect()
}

/// `total` split into `parts` near-equal whole numbers.
fn spread(total: u64, parts: usize) -> Vec<u64> {
    let parts_u64 = parts as u64;
    (0..parts_u64)
        .map(|i| total / parts_u64 + u64::from(i < total % parts_u64))
        .collect()
}

/// `total` split like `weights` (which sum to `weight_sum`), exactly.
fn spread_in_proportion(total: u64, weights: &[u64], weight_sum: u64) -> Vec<u64> {
    let mut shares: Vec<u64> = weights.iter().map(|w| total * w / weight_sum).collect();
    let mut left = total - shares.iter().sum::<u64>();
    for share in shares.iter_mut() {
        if left == 0 {
            break;
        }
        *share += 1;
        left -= 1;
    }
    shares
}

struct WorkerResult {
    tally: Tally,
    cpu: CpuTime,
    end: Instant,
}

fn run_worker(
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
    let worker = Rc::new(Worker {
        plan,
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
}

impl Worker {
    /// Runs this worker's connections until done, the deadline, or cancel;
    /// returns when the measured phase ended for it.
    async fn drive(
        self: Rc<Self>,
        connections: usize,
        cancel: CancellationToken,
    ) -> anyhow::Result<Instant> {
        let connector = Rc::new(Connector::new(
            self.plan.target.clone(),
            self.plan.addr,
            self.plan.proto,
            self.plan.tls.clone(),
            self.plan.connect_timeout,
        )?);
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

    /// One connection slot: connect, run its streams, reconnect with a
    /// small backoff when it breaks. Failed connects use up tickets so a
    /// dead server still ends a counted run.
    async fn keep_connected(self: Rc<Self>, connector: Rc<Connector>) {
        let mut backoff = BACKOFF_MIN;
        let mut failures = 0;
        let mut opened = 0u64;
        while !self.schedule.borrow().is_done(Instant::now()) {
            match connector.connect().await {
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
                    self.record_connection(&connection.timing, opened > 0);
                    opened += 1;
                    if self.run_streams(connection.sender).await == LoopEnd::Done {
                        return;
                    }
                }
            }
        }
    }

    async fn run_streams(&self, first: Sender) -> LoopEnd {
        let mut senders: Vec<Sender> = (1..self.plan.streams)
            .filter_map(|_| first.try_clone())
            .collect();
        senders.push(first);
        let answered = Cell::new(false);
        let ends: Vec<LoopEnd> = senders
            .into_iter()
            .map(|sender| self.request_loop(sender, &answered))
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
    async fn request_loop(&self, mut sender: Sender, answered: &Cell<bool>) -> LoopEnd {
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
                sleep_until(intended.into()).await;
            }
            let sent_at = Instant::now();
            self.note_sent(&ticket, sent_at);
            self.in_flight.set(self.in_flight.get() + 1);
            let outcome = tokio::select! {
                biased;
                result = exchange(&mut sender, &self.plan.template) => Ok(result),
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
        if lag > LATE {
            tally.late += 1;
            tally.lag.record(lag);
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
            exchange.status.as_u16(),
            exchange.body_bytes,
            exchange.head_at.saturating_duration_since(origin),
            latency,
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
        tally.record_error(kind, message);
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    fn record_connection(&self, timing: &ConnectTiming, reconnect: bool) {
        let mut tally = self.tally.borrow_mut();
        tally.connections_opened += 1;
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
) -> Result<Exchange, ClientError> {
    let response = sender.send(template).await?;
    let head_at = Instant::now();
    let status = response.status();
    let body_bytes = response.drain().await?;
    Ok(Exchange {
        status,
        head_at,
        end_at: Instant::now(),
        body_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_exact_and_even() {
        assert_eq!(spread(10, 3), vec![4, 3, 3]);
        assert_eq!(spread(2, 2), vec![1, 1]);
        assert_eq!(spread_in_proportion(200, &[4, 3, 3], 10), vec![80, 60, 60]);
        let shares = spread_in_proportion(7, &[2, 1], 3);
        assert_eq!(shares.iter().sum::<u64>(), 7);
        assert_eq!(shares, vec![5, 2]);
    }
}
