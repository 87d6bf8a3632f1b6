//! The matrix runner: expands a suite into cells and runs each on a fresh
//! emulated path, recording what it measured. Cells run in order
//! repetition → profile → workload → mode → protocol, so the protocols of one
//! condition run back to back and slow drifts of the machine hit them alike.

use std::sync::atomic::Ordering;

pub use crate::cell::RunContext;

use crate::cell;
use anyhow::Context;
use linkem::EmulatedPath;

use crate::environment;
use crate::profile;
use crate::spec::CellSpec;
use crate::suite::{Load, Suite, Workload};
use h3lab_results::bench::{CellRecord, Results, StudyClaim, SuiteInfo, RESULTS_SCHEMA};

/// Every cell of the suite, in run order.
pub fn plan(suite: &Suite) -> Vec<CellSpec> {
    let mut cells = Vec::new();
    for repetition in 0..suite.repetitions.0 {
        for profile in &suite.profiles {
            for workload in suite.workloads.iter().filter(|w| w.runs_on(profile)) {
                for mode in modes_of(workload) {
                    for &protocol in &suite.protocols {
                        if mode.is_none_or(|m| m.applies_to(protocol)) {
                            cells.push(CellSpec {
                                profile: profile.clone(),
                                workload: workload.clone(),
                                protocol,
                                mode,
                                repetition,
                            });
                        }
                    }
                }
            }
        }
    }
    cells
}

/// Rough wall time of a cell: set-up plus the workload's own length on the
/// profile's path.
pub fn estimated_seconds(suite: &Suite, cell: &CellSpec) -> f64 {
    const SETUP_S: f64 = 1.0;
    let settings = profile::settings(suite, &cell.profile, suite.seed)
        .ok()
        .flatten();
    let (rtt_s, down_bits_per_s) = settings.map_or((0.0, 10e9), |s| {
        let rate = s.down.mean_bits_per_sec().unwrap_or(10e9);
        (s.rtt as f64 / 1e9, rate)
    });
    SETUP_S
        + match &cell.workload.load {
            Load::Rps { duration, .. } => duration.0.as_secs_f64(),
            Load::Download { size, streams, .. } => {
                (size.0 * u64::from(streams.0)) as f64 * 8.0 / down_bits_per_s + 20.0 * rtt_s
            }
            Load::Ttfb { samples, .. } => f64::from(samples.0 + 1) * 4.0 * rtt_s,
        }
}

/// Fails early, with linkem's explanation, when this process cannot build
/// the suite's emulated paths (no root, and no usable unprivileged user
/// namespaces), instead of failing every cell the same way.
pub fn check_can_emulate(suite: &Suite) -> anyhow::Result<()> {
    let Some(name) = suite.profiles.iter().find(|p| p.as_str() != "loopback") else {
        return Ok(());
    };
    let Some(settings) = profile::settings(suite, name, suite.seed)? else {
        return Ok(());
    };
    let path = EmulatedPath::start(settings.build())
        .with_context(|| format!("`h3lab bench` cannot emulate profile `{name}`"))?;
    path.shutdown()?;
    Ok(())
}

fn modes_of(workload: &Workload) -> Vec<Option<h3lab_results::TtfbMode>> {
    match &workload.load {
        Load::Ttfb { modes, .. } => modes.iter().copied().map(Some).collect(),
        _ => vec![None],
    }
}

/// An empty result set for `suite`, ready to receive cells.
pub fn new_results(suite: &Suite, ctx: &RunContext) -> Results {
    Results {
        schema: RESULTS_SCHEMA.to_string(),
        suite: suite_info(suite, ctx),
        environment: environment::capture(suite),
        started_at: now_rfc3339(),
        finished_at: None,
        interrupted: false,
        cells: Vec::new(),
        studies: study_claims(suite),
    }
}

/// Runs every cell, calling `after_cell` with the results so far after each
/// one (so they can be written to disk at once). Stops early when
/// `ctx.stop` is set; the results then say `interrupted`.
pub fn run(
    suite: &Suite,
    ctx: &RunContext,
    mut after_cell: impl FnMut(&Results, &CellRecord),
) -> Results {
    let mut results = new_results(suite, ctx);
    for spec in plan(suite) {
        if ctx.stop.load(Ordering::Relaxed) {
            results.interrupted = true;
            break;
        }
        let record = cell::run(suite, &spec, ctx);
        results.cells.push(record);
        if ctx.stop.load(Ordering::Relaxed) {
            results.interrupted = true;
        }
        after_cell(&results, results.cells.last().expect("just pushed"));
    }
    results.finished_at = Some(now_rfc3339());
    results
}

fn suite_info(suite: &Suite, ctx: &RunContext) -> SuiteInfo {
    SuiteInfo {
        name: suite.name.clone(),
        preset: ctx.preset.clone(),
        description: suite.description.clone(),
        protocols: suite.protocols.iter().map(|p| p.to_string()).collect(),
        profiles: suite.profiles.clone(),
        workloads: suite
            .workloads
            .iter()
            .map(|w| w.name().to_string())
            .collect(),
        repetitions: suite.repetitions.0,
        seed: suite.seed,
        warmup_s: suite.warmup.0.as_secs_f64(),
        baseline: suite.baseline.to_string(),
        target: match &suite.target.server_cmd {
            Some(command) => format!("custom server: {command}"),
            None => "built-in server (h3lab serve)".to_string(),
        },
    }
}

fn study_claims(suite: &Suite) -> Vec<StudyClaim> {
    suite
        .published
        .iter()
        .map(|figure| StudyClaim {
            study: figure.study.clone(),
            label: figure.label.clone(),
            profile: figure.profile.clone(),
            workload: figure.workload.clone(),
            mode: figure.mode.clone(),
            unit: figure.unit.clone(),
            higher_is_better: figure.higher_is_better,
            published: [("h1", figure.h1), ("h2", figure.h2), ("h3", figure.h3)]
                .into_iter()
                .filter_map(|(proto, value)| value.map(|v| (proto.to_string(), v)))
                .collect(),
            caveat: figure.caveat.clone(),
        })
        .collect()
}

/// Seconds since the Unix epoch, formatted as RFC 3339 UTC.
fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use h3lab_results::Proto;

    #[test]
    fn plan_interleaves_protocols_and_skips_zero_rtt_for_tcp() {
        let suite = Suite::from_toml(
            r#"
name = "t"
protocols = ["h2", "h3"]
profiles = ["broadband"]
repetitions = 2
[[workload]]
kind = "ttfb"
name = "hs"
modes = ["cold", "0rtt"]
"#,
        )
        .unwrap();
        let cells = plan(&suite);
        let labels: Vec<String> = cells
            .iter()
            .map(|c| format!("{}{}{}", c.repetition, c.mode.unwrap(), c.protocol))
            .collect();
        assert_eq!(
            labels,
            ["0coldh2", "0coldh3", "00rtth3", "1coldh2", "1coldh3", "10rtth3"]
        );
        assert!(cells.iter().all(|c| c.mode.unwrap().applies_to(c.protocol)));
        assert_eq!(cells.iter().filter(|c| c.protocol == Proto::H3).count(), 4);
    }
}
