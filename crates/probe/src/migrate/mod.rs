//! `probe migrate`: a client moves to a new port or address in the middle
//! of a steady request stream on an emulated path; QUIC migrates, a TCP
//! connection breaks and is replaced. Per protocol, a fresh path, the
//! built-in server in the server namespace and the client (`drive`) in the
//! client namespace; then the pure summaries (`summary`, `claims`) and the
//! report (`h3lab.migrate/1`, `report`) of the experiment (`scenario`).

mod claims;
mod drive;
pub mod report;
pub mod scenario;
pub mod summary;

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use anyhow::{anyhow, Context};
use h3lab_harness::scrape;
use h3lab_results::Proto;
use linkem::run::{Interrupted, Placement};
use linkem::{EmulatedPath, LinkSettings};

use h3lab_server::cli::ServeArgs;

use crate::shell::{connector_parts, run_each, start_server, the_run_of, SERVER_GRACE};
use drive::{Gathered, Job, Switch};
use report::{MigrateReport, ProtoResult, MIGRATE_SCHEMA};
use scenario::{Change, Scenario};
use summary::summarise;

/// What `probe migrate` runs.
#[derive(Debug, Clone)]
pub struct MigrateOptions {
    /// The emulated path.
    pub settings: LinkSettings,
    /// The built-in profile's name, if one was given, for the report.
    pub profile: Option<String>,
    /// The experiment.
    pub scenario: Scenario,
    /// The `h3lab` binary, started as `h3lab serve` in the server namespace.
    pub exe: PathBuf,
}

/// The header line: the change, the request stream, the path and the
/// thresholds.
impl fmt::Display for MigrateOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scenario = &self.scenario;
        write!(
            f,
            "probe migrate: {} change at {:.2} s; {} req/s of /bytes/{} for {:.1} s; path {} (RTT {} ms); \
             request timeout {} ms, delayed above {} ms",
            scenario.change,
            scenario.switch_at.as_secs_f64(),
            scenario.rate_per_s,
            scenario.body_bytes,
            scenario.duration.as_secs_f64(),
            self.profile.as_deref().unwrap_or("custom"),
            self.settings.rtt / 1_000_000,
            scenario.request_timeout.as_millis(),
            scenario.delay_threshold.as_millis(),
        )
    }
}

/// Runs the scenario once per protocol, each on a fresh path, calling
/// `on_result` after each. Stops early when interrupted or when a
/// protocol's run fails; the report then holds the protocols done so far,
/// and the failure comes beside it.
pub fn run_migrate(
    options: &MigrateOptions,
    interrupted: &Interrupted,
    mut on_result: impl FnMut(&ProtoResult),
) -> anyhow::Result<(MigrateReport, Option<anyhow::Error>)> {
    options.scenario.validate()?;
    crate::ensure_root()?;
    let (protocols, failure) = run_each(
        options.scenario.protos.iter().copied(),
        interrupted,
        the_run_of,
        "the requests made so far",
        |proto| run_protocol(options, proto, interrupted),
        &mut on_result,
    );
    let summaries: Vec<_> = protocols.iter().map(|r| (r.proto, &r.summary)).collect();
    let claims = claims::compare(&summaries);
    let scenario = &options.scenario;
    let report = MigrateReport {
        schema: MIGRATE_SCHEMA,
        change: scenario.change,
        profile: options.profile.clone(),
        link: options.settings.clone(),
        rate_per_s: scenario.rate_per_s,
        duration_s: scenario.duration.as_secs_f64(),
        switch_at_s: scenario.switch_at.as_secs_f64(),
        body_bytes: scenario.body_bytes,
        request_timeout_ms: scenario.request_timeout.as_secs_f64() * 1e3,
        delay_threshold_ms: scenario.delay_threshold.as_secs_f64() * 1e3,
        protocols,
        claims,
    };
    Ok((report, failure))
}

/// One protocol on its own path; the path and server go away at the end,
/// whatever happened.
fn run_protocol(
    options: &MigrateOptions,
    proto: Proto,
    interrupted: &Interrupted,
) -> anyhow::Result<ProtoResult> {
    let path = EmulatedPath::start(options.settings.build())?;
    let control = path.control()?;
    let change = options.scenario.change;
    let second = match change {
        Change::Address => Some(path.add_client_address()?),
        Change::Port => None,
    };
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let cert = scratch.path().join("server-cert.pem");
    let mut server = start_server(&path, &options.exe, &cert, &ServeArgs::new())?;
    let addr = server.addr;
    let (switch, description) = switch_for(proto, change, path.client_ip(), second);
    let job = Job {
        proto,
        connector_parts: connector_parts(addr, proto, options.scenario.body_bytes, &cert)?,
        scenario: options.scenario.clone(),
        switch,
        control,
        interrupted: interrupted.clone(),
    };
    let gathered = path
        .spawn_in_client(move || job.run())?
        .join()
        .map_err(|_| anyhow!("the client thread panicked"))?;
    let migrations = server_migrations(&path, server.start.metrics);
    server.process.stop(SERVER_GRACE);
    let gathered = gathered?;
    Ok(result(
        proto,
        description,
        &gathered,
        &options.scenario,
        migrations?,
    ))
}

/// The migrations the server counted (`h3lab_quic_migrations_total`).
fn server_migrations(path: &EmulatedPath, metrics: Option<SocketAddr>) -> anyhow::Result<u64> {
    let metrics = metrics.context("the server printed no `metrics:` line before `listening:`")?;
    let samples = scrape(&Placement::Emulated(path), metrics)?;
    let migrations = samples
        .get("h3lab_quic_migrations_total")
        .context("the server's metrics have no h3lab_quic_migrations_total")?;
    Ok(*migrations as u64)
}

/// The change for `proto`, and the words for it. QUIC moves itself; a
/// TCP connection cannot, so the path changes under it.
fn switch_for(
    proto: Proto,
    change: Change,
    client_ip: Ipv4Addr,
    second: Option<Ipv4Addr>,
) -> (Switch, String) {
    match (proto, change, second) {
        (Proto::H3, Change::Port, _) => (
            Switch::Rebind {
                local: (Ipv4Addr::UNSPECIFIED, 0).into(),
                remove: None,
            },
            "the client's QUIC endpoint moved to a new UDP socket (a new port)".to_string(),
        ),
        (Proto::H3, Change::Address, Some(second)) => (
            Switch::Rebind {
                local: (second, 0).into(),
                remove: Some(client_ip),
            },
            format!(
                "the client's QUIC endpoint moved to a socket on {second}, then {client_ip} was removed"
            ),
        ),
        (_, Change::Port, _) => (
            Switch::RebindNat,
            "the path's NAT rebound: the client's port left as a new one, \
             packets to the old mapping were dropped"
                .to_string(),
        ),
        (_, Change::Address, _) => (
            Switch::RemoveAddress(client_ip),
            format!(
                "the client's address {client_ip} was removed; {} remained",
                second.map_or("the second address".to_string(), |ip| ip.to_string())
            ),
        ),
    }
}

fn result(
    proto: Proto,
    switch: String,
    gathered: &Gathered,
    scenario: &Scenario,
    server_migrations: u64,
) -> ProtoResult {
    let summary = summarise(&gathered.observed, scenario.delay_threshold);
    let frames = gathered.frames.map(|(before, after)| {
        (
            after.challenges_received - before.challenges_received,
            after.responses_sent - before.responses_sent,
        )
    });
    // h3 whose first connection broke: the new path was not validated on it.
    let h3_frames = (proto == Proto::H3).then_some(frames.unwrap_or((0, 0)));
    ProtoResult {
        proto,
        switch,
        switched_at_s: gathered.observed.switched_at.as_secs_f64(),
        summary,
        path_validated: h3_frames.map(|(challenges, responses)| challenges > 0 && responses > 0),
        path_challenges_received: h3_frames.map(|(challenges, _)| challenges),
        path_responses_sent: h3_frames.map(|(_, responses)| responses),
        server_migrations: Some(server_migrations),
    }
}
