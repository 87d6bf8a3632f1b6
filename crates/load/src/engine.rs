//! Planning a run: the preflight check, splitting connections, requests
//! and rate across worker threads, and merging their results into the
//! report.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use h3lab_client::{client_tls_config, AutoConnector, Connector, SharedDiscovery};
use h3lab_results::load::LoadReport;
use h3lab_results::Proto;
use tokio_util::sync::CancellationToken;

use crate::config::LoadConfig;
use crate::cpu::CpuTime;
use crate::plan::{Plan, Share};
use crate::progress::Progress;
use crate::report::{self, RunShape, RunTotals};
use crate::schedule::Schedule;
use crate::tally::Tally;
use crate::worker::{run_worker, WorkerResult};

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
    let (addr, discovery) = control.block_on(preflight(config))?;
    let plan = Arc::new(Plan::new(config, addr, discovery)?);
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

async fn preflight(config: &LoadConfig) -> anyhow::Result<(SocketAddr, Option<SharedDiscovery>)> {
    let addr = config.target.resolve(&config.resolve).await?;
    if config.proto == Proto::Auto {
        let discovery = first_call(config, addr).await?;
        return Ok((addr, Some(discovery)));
    }
    // A private TLS config, so no session ticket leaks into the measured run.
    let tls = client_tls_config(&config.tls, config.proto)?;
    let target = Arc::new(config.target.clone());
    let connector = Connector::new(target, addr, config.proto, tls, config.connect_timeout)?;
    connector.connect().await?;
    connector.close().await;
    Ok((addr, None))
}

/// `auto`'s first call: one request over TCP, whose `Alt-Svc` the run's
/// connections then know.
async fn first_call(config: &LoadConfig, addr: SocketAddr) -> anyhow::Result<SharedDiscovery> {
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
    let mut sender = connector.connect().await?.sender;
    let response = sender.send(&config.request_template()).await?;
    connector.observe(sender.proto(), response.headers());
    response.drain().await?;
    connector.close().await;
    Ok(discovery)
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
