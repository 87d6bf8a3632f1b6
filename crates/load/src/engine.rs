//! Running a load: the preflight check, the start (at once or at a shared
//! wall-clock instant), splitting connections, requests and rate across
//! worker threads (each one's part is `plan`'s), and merging their results
//! into the report.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, Context};
use h3lab_client::{
    client_tls_config, AutoConnector, Connector, HttpsRecord, NameServer, OriginLookup,
    SharedDiscovery,
};
use h3lab_results::load::{FirstCall, LoadReport, Worker};
use h3lab_results::Proto;
use tokio_util::sync::CancellationToken;

use crate::config::{spread, spread_in_proportion, LoadConfig, Part, StartAt};
use crate::cpu::CpuTime;
use crate::host;
use crate::plan::{Plan, Share};
use crate::progress::Progress;
use crate::report::{self, RunShape, RunTotals};
use crate::schedule::Schedule;
use crate::tally::Tally;
use crate::worker::{run_worker, WorkerResult};

/// Beyond this, a worker that began after the common start warns.
const LATE_START_WARNING: Duration = Duration::from_millis(10);

/// How often a worker waiting for the common start looks for Ctrl-C.
const CANCEL_CHECK: Duration = Duration::from_millis(100);
/// How long `auto` holds the target's `HTTPS` record: longer than any run.
const RECORD_HELD_FOR_RUN: Duration = Duration::from_secs(365 * 86_400);

/// Has this process take its memory in 4 KiB pages from now on, never
/// transparent huge pages, for a process that only runs a load (`h3lab
/// load`). mimalloc asks for huge pages, and zeroing a 2 MiB one on its
/// first touch cost the h3 client about 7 % of its CPU in a
/// 300,000-request run (performance.md, fourteenth round). Best effort.
pub fn use_small_pages() {
    let _ = nix::sys::prctl::set_thp_disable(true);
}

/// Runs the load described by `config` until its bound, a fatal set-up
/// error, or `cancel` (Ctrl-C), and returns everything measured.
///
/// Before the run one throw-away connection checks that the target answers
/// at all, so an untrusted certificate or a missing UDP listener fails
/// fast with one clear message instead of a report full of errors. Under
/// `auto` it also sends the request once, as an app's first call would, so
/// the run's connections know the target's `Alt-Svc` and race QUIC
/// against TCP.
pub fn run(config: &LoadConfig, cancel: CancellationToken) -> anyhow::Result<LoadReport> {
    config.validate()?;
    let control = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let Preflight {
        addr,
        discovery,
        first_call,
    } = control.block_on(preflight(config))?;
    let part = config.part();
    if let Some(start) = &config.start_at {
        wait_for_start(start, &cancel);
    }
    let plan = Arc::new(Plan::new(config, addr, discovery)?);
    let started_late = config
        .start_at
        .as_ref()
        .map(|start| started_late(start, plan.start_wall));
    let threads = config.threads.min(part.connections);
    let shares = split_work(config, &part, threads, plan.start);
    let progress = Progress::new(config, part.requests);
    let workers = spawn_workers(&plan, shares, &cancel, &progress)?;
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
        connections: part.connections,
        streams: config.streams,
        threads,
        target_rate: part.rate,
        first_call,
    };
    let totals = RunTotals {
        engine: Engine::for_plan(&plan).name(),
        duration_s: end
            .saturating_duration_since(measured_from(plan.measure_start, tally.first_attempt))
            .as_secs_f64(),
        warmup_s: end
            .min(plan.measure_start)
            .duration_since(plan.start)
            .as_secs_f64(),
        interrupted: cancel.is_cancelled(),
        user_s: cpu.user.as_secs_f64(),
        sys_s: cpu.sys.as_secs_f64(),
    };
    let worker = Worker {
        shard: config.shard,
        host: host::name(),
        start_at: config.start_at.as_ref().map(|start| start.text.clone()),
        started_late_us: started_late.map(|late| late.as_micros() as u64),
        clock: host::clock(),
    };
    Ok(report::build(shape, tally, totals, worker))
}

/// One thread per share, each driving its connections with the engine
/// the protocol calls for.
fn spawn_workers(
    plan: &Arc<Plan>,
    shares: Vec<Share>,
    cancel: &CancellationToken,
    progress: &Progress,
) -> anyhow::Result<Vec<JoinHandle<anyhow::Result<WorkerResult>>>> {
    let engine = Engine::for_plan(plan);
    shares
        .into_iter()
        .enumerate()
        .map(|(index, share)| {
            let plan = plan.clone();
            let cancel = cancel.clone();
            let done = progress.counter();
            std::thread::Builder::new()
                .name(format!("h3lab-load-{index}"))
                .spawn(move || match engine {
                    Engine::Quic => crate::quic::run_worker(plan, share, cancel, done),
                    Engine::Tcp => crate::tcp::run_worker(plan, share, cancel, done),
                    Engine::Tokio => run_worker(plan, share, cancel, done),
                })
                .context("spawning a load worker thread")
        })
        .collect()
}

/// Which loop drives a worker's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    /// h3: quinn-proto driven directly by one event loop per thread
    /// (`quic`), at about twice the requests per CPU-second of tokio's.
    Quic,
    /// h1 and h2: mio's epoll, rustls' sans-I/O client and framing of
    /// their own, one event loop per thread (`tcp`).
    Tcp,
    /// `auto` (which races TCP against QUIC) and h3 with `--qlog`:
    /// `h3lab_client`'s connections on a tokio runtime per thread.
    Tokio,
}

impl Engine {
    /// Its name in the report's `cpu.engine`.
    fn name(self) -> &'static str {
        match self {
            Engine::Quic => "quic",
            Engine::Tcp => "tcp",
            Engine::Tokio => "tokio",
        }
    }

    fn for_plan(plan: &Plan) -> Engine {
        match plan.proto {
            Proto::H3 if plan.qlog.is_none() => Engine::Quic,
            Proto::H1 | Proto::H2 => Engine::Tcp,
            _ => Engine::Tokio,
        }
    }
}

/// Sleeps until the common start (or Ctrl-C).
fn wait_for_start(start: &StartAt, cancel: &CancellationToken) {
    while let Ok(ahead) = start.at.duration_since(SystemTime::now()) {
        if cancel.is_cancelled() || ahead.is_zero() {
            break;
        }
        std::thread::sleep(ahead.min(CANCEL_CHECK));
    }
}

/// How long after the common start the load began; a late worker says so.
fn started_late(start: &StartAt, began: SystemTime) -> Duration {
    let late = began.duration_since(start.at).unwrap_or_default();
    if late > LATE_START_WARNING {
        eprintln!(
            "warning: this worker began {:.1} ms after --start-at {}: the checks before the \
             run (connecting to the target) took longer than the wait, or the machine was \
             busy; start further ahead",
            late.as_secs_f64() * 1000.0,
            start.text
        );
    }
    late
}

/// What the run learns before it starts.
struct Preflight {
    addr: SocketAddr,
    /// Under `auto`: what the first call taught the run's connections.
    discovery: Option<SharedDiscovery>,
    first_call: Option<FirstCall>,
}

async fn preflight(config: &LoadConfig) -> anyhow::Result<Preflight> {
    let auto = config.proto == Proto::Auto;
    let lookup = OriginLookup::new(NameServer::System, auto)?;
    let (addr, https_record) = lookup.locate(&config.target, &config.resolve).await?;
    crate::politeness::check(config, addr.ip())?;
    if auto {
        let (discovery, first) = first_call(config, addr, https_record).await?;
        return Ok(Preflight {
            addr,
            discovery: Some(discovery),
            first_call: Some(first),
        });
    }
    // A private TLS config, so no session ticket leaks into the measured run.
    let tls = client_tls_config(&config.tls, config.proto)?;
    let target = Arc::new(config.target.clone());
    let connector = Connector::new(target, addr, config.proto, tls, config.connect_timeout)?;
    connector.connect().await?;
    connector.close().await;
    Ok(Preflight {
        addr,
        discovery: None,
        first_call: None,
    })
}

/// `auto`'s first call: one request, over TCP unless the target's DNS
/// `HTTPS` record lists h3, whose `Alt-Svc` the run's connections then
/// know. DNS is asked once: the record is held for the whole run, as an
/// app's resolver would find it again each time its TTL ends.
async fn first_call(
    config: &LoadConfig,
    addr: SocketAddr,
    https_record: Option<HttpsRecord>,
) -> anyhow::Result<(SharedDiscovery, FirstCall)> {
    let discovery = SharedDiscovery::default();
    let target = Arc::new(config.target.clone());
    let connector = AutoConnector::new(
        target,
        addr,
        client_tls_config(&config.tls, Proto::H2)?,
        client_tls_config(&config.tls, Proto::H3)?,
        config.connect_timeout,
        discovery.clone(),
    )?;
    if let Some(record) = &https_record {
        connector.observe_https_record(&HttpsRecord {
            ttl: RECORD_HELD_FOR_RUN,
            ..record.clone()
        });
    }
    let mut sender = connector.connect().await?.sender;
    let response = sender.send(&config.request_template()).await?;
    connector.observe(sender.proto(), response.headers());
    response.drain().await?;
    connector.close().await;
    let first = FirstCall {
        protocol: sender.proto(),
        https_record_alpn: https_record.map(|record| record.alpn),
    };
    Ok((discovery, first))
}

/// Where the measured time starts: at the end of the warm-up, or at the
/// first connection attempt if that came later. Starting a worker thread
/// and its connector (for h3 a QUIC endpoint and its receive buffers) is
/// the tool's set-up, not the protocol's, and would otherwise count in a
/// short run's duration and in a download's time.
fn measured_from(measure_start: Instant, first_attempt: Option<Instant>) -> Instant {
    first_attempt.map_or(measure_start, |attempt| attempt.max(measure_start))
}

/// This process's part is split across threads in proportion to their
/// connections, and each thread's timetable is offset by its place among
/// all shards' threads, so their sends interleave.
fn split_work(config: &LoadConfig, part: &Part, threads: usize, start: Instant) -> Vec<Share> {
    let connections = spread(part.connections as u64, threads);
    let limits = part
        .requests
        .map(|limit| spread_in_proportion(limit, &connections, part.connections as u64));
    let measure_start = start + config.warmup;
    let deadline = config.duration.map(|duration| measure_start + duration);
    connections
        .iter()
        .enumerate()
        .map(|(index, &conns)| {
            let rate = part.rate.zip(part.whole_rate).map(|(rate, whole_rate)| {
                let share = rate * conns as f64 / part.connections as f64;
                let slot = part.first_slot + part.stride * index as u64;
                (
                    share,
                    start + Duration::from_secs_f64(slot as f64 / whole_rate),
                )
            });
            let limit = limits.as_ref().map(|limits| limits[index]);
            Share {
                connections: conns as usize,
                schedule: Schedule::new(measure_start, deadline, limit, rate),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use h3lab_client::Target;
    use h3lab_results::load::Shard;

    use super::*;

    /// The flag stays on the process (the test process here: it only
    /// changes the size of the pages it is given).
    #[test]
    fn small_pages_turn_transparent_huge_pages_off_for_the_process() {
        use_small_pages();
        assert_eq!(nix::sys::prctl::get_thp_disable(), Ok(true));
    }

    #[test]
    fn the_clock_starts_at_the_first_connection_attempt_or_after_the_warmup() {
        let start = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(measured_from(start, Some(start + ms(2))), start + ms(2));
        assert_eq!(
            measured_from(start + ms(500), Some(start + ms(2))),
            start + ms(500)
        );
        assert_eq!(measured_from(start, None), start);
    }

    #[test]
    fn spread_is_exact_and_even() {
        assert_eq!(spread(10, 3), vec![4, 3, 3]);
        assert_eq!(spread(2, 2), vec![1, 1]);
        assert_eq!(spread_in_proportion(200, &[4, 3, 3], 10), vec![80, 60, 60]);
        let shares = spread_in_proportion(7, &[2, 1], 3);
        assert_eq!(shares.iter().sum::<u64>(), 7);
        assert_eq!(shares, vec![5, 2]);
    }

    #[test]
    fn shards_and_threads_interleave_their_sends() {
        let mut config = LoadConfig::new(Target::parse("https://127.0.0.1:1/").unwrap());
        config.connections = 4;
        config.rate = Some(1000.0);
        let start = Instant::now();
        let mut firsts: Vec<Duration> = (0..2)
            .flat_map(|index| {
                config.shard = Some(Shard { index, count: 2 });
                split_work(&config, &config.part(), 2, start)
            })
            .map(|mut share| share.schedule.next(start).unwrap().intended.unwrap() - start)
            .collect();
        firsts.sort();
        let ms = Duration::from_millis;
        assert_eq!(firsts, vec![ms(0), ms(1), ms(2), ms(3)]);
    }
}
