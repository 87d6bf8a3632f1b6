//! The I/O shell of `probe hol`: per repetition and protocol, a fresh
//! emulated path with that repetition's seed, the built-in server in the
//! server namespace, the client and its capture in the client namespace,
//! then the analysis.

use std::fmt;
use std::net::{SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Context};
use h3lab_results::Proto;
use linkem::run::Interrupted;
use linkem::{EmulatedPath, LinkSettings};

use super::analyse::analyse;
use super::claim::hol_claim;
use super::drive::HolJob;
use super::report::{
    stalls, summarise, DirectionLoss, HolReport, HolRun, LossPattern, RunCpu, Spread, HOL_SCHEMA,
};
use h3lab_server::cli::ServeArgs;

use crate::shell::{connector_parts, ensure_root, run_each, start_server, SERVER_GRACE};

/// Most parallel streams.
const MAX_STREAMS: u32 = 64;
/// Most body bytes on the connection: below h2's 5 MB connection window
/// and quinn's stream windows, so flow control never paces a run.
const MAX_TOTAL_BYTES: u64 = 4 << 20;
const MAX_REPETITIONS: u32 = 100;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A run whose responses take longer than this fails rather than hang.
const RUN_DEADLINE: Duration = Duration::from_secs(60);

/// What `probe hol` runs.
#[derive(Debug, Clone)]
pub struct HolOptions {
    /// The emulated path; its seed is the first repetition's.
    pub settings: LinkSettings,
    /// The built-in profile's name, if one was given, for the report.
    pub profile: Option<String>,
    /// Protocols, each run on its own path per repetition.
    pub protos: Vec<Proto>,
    /// Parallel GETs on the one connection.
    pub streams: u32,
    /// Body bytes of each (`/bytes/N`).
    pub body_bytes: u64,
    /// Repetitions; repetition `r` uses seed `settings.seed + r` for every
    /// protocol.
    pub repetitions: u32,
    /// The `h3lab` binary, started as `h3lab serve` in the server namespace.
    pub exe: PathBuf,
}

/// The header line: the streams, the path and the runs.
impl fmt::Display for HolOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "probe hol: {} streams of /bytes/{} on one connection; path {} (RTT {} ms, loss {:.1} %, seed {}); {} repetition(s) of {}",
            self.streams,
            self.body_bytes,
            self.profile.as_deref().unwrap_or("custom"),
            self.settings.rtt / 1_000_000,
            self.settings.loss.mean_loss() * 100.0,
            self.settings.seed,
            self.repetitions,
            self.protos.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
        )
    }
}

impl HolOptions {
    /// Rejects values that cannot make a run, naming the fix.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.protos.is_empty()
                && self.protos.iter().all(|p| matches!(p, Proto::H2 | Proto::H3)),
            "`probe hol` compares h2 and h3, each on one connection; give --protos h2,h3 or one of them"
        );
        anyhow::ensure!(
            (2..=MAX_STREAMS).contains(&self.streams),
            "--streams {} is out of range; give 2 to {MAX_STREAMS} (head-of-line blocking needs \
             more than one stream)",
            self.streams
        );
        anyhow::ensure!(
            self.body_bytes > 0 && u64::from(self.streams) * self.body_bytes <= MAX_TOTAL_BYTES,
            "--size {} x --streams {} is out of range; keep the total above 0 and at most {} bytes",
            self.body_bytes,
            self.streams,
            MAX_TOTAL_BYTES
        );
        anyhow::ensure!(
            (1..=MAX_REPETITIONS).contains(&self.repetitions),
            "--repetitions {} is out of range; give 1 to {MAX_REPETITIONS}",
            self.repetitions
        );
        Ok(())
    }

    fn seed(&self, repetition: u32) -> u64 {
        self.settings.seed.wrapping_add(u64::from(repetition))
    }
}

/// Runs every repetition of every protocol, calling `on_run` after each.
/// Stops early when interrupted or when a run fails; the report then
/// holds the runs done so far, and the failure comes beside it.
pub fn run_hol(
    options: &HolOptions,
    interrupted: &Interrupted,
    mut on_run: impl FnMut(&HolRun),
) -> anyhow::Result<(HolReport, Option<anyhow::Error>)> {
    options.validate()?;
    ensure_root()?;
    let variants = (0..options.repetitions)
        .flat_map(|repetition| options.protos.iter().map(move |&proto| (repetition, proto)));
    let (runs, failure) = run_each(
        variants,
        interrupted,
        |(repetition, proto)| format!("the {proto} run of repetition {}", repetition + 1),
        "the runs made so far",
        |(repetition, proto)| run_once(options, proto, repetition),
        &mut on_run,
    );
    let report = report(options, runs);
    Ok((report, failure))
}

fn report(options: &HolOptions, runs: Vec<HolRun>) -> HolReport {
    let mean_stall = |proto| {
        let (stall, _) = stalls(&runs, proto);
        Spread::of(&stall).map(|spread| spread.mean)
    };
    let loss_percent = options.settings.loss.mean_loss() * 100.0;
    let claims = vec![hol_claim(
        mean_stall(Proto::H2),
        mean_stall(Proto::H3),
        loss_percent,
    )];
    HolReport {
        schema: HOL_SCHEMA,
        profile: options.profile.clone(),
        link: options.settings.clone(),
        streams: options.streams,
        body_bytes: options.body_bytes,
        repetitions: options.repetitions,
        summary: summarise(&runs, &options.protos),
        runs,
        claims,
    }
}

/// One protocol on its own path; the path and the server go away at the
/// end, whatever happened.
fn run_once(options: &HolOptions, proto: Proto, repetition: u32) -> anyhow::Result<HolRun> {
    let seed = options.seed(repetition);
    let settings = LinkSettings {
        seed,
        ..options.settings.clone()
    };
    let path = EmulatedPath::start(settings.build())?;
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let cert = scratch.path().join("server-cert.pem");
    let mut server = start_server(&path, &options.exe, &cert, &ServeArgs::new())?;
    let addr = server.addr;
    let job = HolJob {
        proto,
        parts: connector_parts(addr, proto, options.body_bytes, &cert)?,
        streams: options.streams,
        connect_timeout: CONNECT_TIMEOUT,
        deadline: RUN_DEADLINE,
    };
    let server_cpu_before = server.process.group_cpu_s();
    let gathered = path
        .spawn_in_client(move || job.run())
        .map(|thread| thread.join());
    let server_cpu = server
        .process
        .group_cpu_s()
        .zip(server_cpu_before)
        .map(|(after, before)| after - before);
    server.process.stop(SERVER_GRACE);
    let emulator_s = path.forwarder_cpu_s();
    let stats = path.shutdown()?;
    let gathered = gathered?.map_err(|_| anyhow!("the client thread panicked"))??;
    let SocketAddr::V4(server) = addr else {
        anyhow::bail!("the server's address {addr} is not IPv4");
    };
    let server: SocketAddrV4 = server;
    let streams = analyse(
        proto,
        server,
        &gathered.captured,
        &gathered.secret,
        &gathered.responses,
    )?;
    Ok(HolRun {
        proto,
        repetition,
        seed,
        loss: LossPattern {
            up: DirectionLoss {
                packets: stats.up.packets_in,
                lost: stats.up.lost_packets,
                queue_drops: stats.up.dropped_queue,
            },
            down: DirectionLoss {
                packets: stats.down.packets_in,
                lost: stats.down.lost_packets,
                queue_drops: stats.down.dropped_queue,
            },
        },
        streams,
        cpu: RunCpu {
            wall_s: gathered.wall_s,
            client_s: gathered.client_schedstat.map(|(running, _)| running),
            client_waiting_s: gathered.client_schedstat.map(|(_, waiting)| waiting),
            server_s: server_cpu,
            emulator_s,
        },
    })
}
