//! A population's network handoffs (docs/population.md): each group with
//! `handoffs = true` runs, per repetition, `probe migrate`'s scenario on
//! its own path with its h3-off protocol and with h3: a steady request
//! stream whose client moves to a new address half-way. They run after
//! the cells. [`plan`] resolves everything once and does no I/O; [`run`]
//! runs one plan and records it.

use std::path::Path;
use std::time::Duration;

use h3lab_probe::migrate::scenario::{
    default_delay_threshold, default_request_timeout, Change, Scenario,
};
use h3lab_probe::{run_migrate, MigrateOptions};
use h3lab_results::bench::Outcome;
use h3lab_results::handoff::{HandoffMeasured, HandoffRecord, HandoffScenario};
use h3lab_results::Proto;
use linkem::run::Interrupted;
use linkem::LinkSettings;

use crate::suite::Suite;

/// Requests started per second: enough that a stall of one round trip
/// shows, few enough for a phone's background traffic.
const RATE_PER_S: u32 = 20;
/// How long requests are started.
const DURATION: Duration = Duration::from_secs(4);
/// When the address changes: half-way, so both halves are seen.
const SWITCH_AT: Duration = Duration::from_secs(2);
/// Each response's body: a small API answer.
const BODY_BYTES: u64 = 1000;
/// Namespaces, a server and a client to start and stop, per run.
const SET_UP: Duration = Duration::from_secs(2);

/// One handoff run, resolved.
#[derive(Debug, Clone)]
pub struct HandoffPlan {
    /// The group, whose profile has its name.
    pub group: String,
    /// The protocol the client follows: the group's h3-off one, or h3.
    pub protocol: Proto,
    /// From 0.
    pub repetition: u32,
    /// The group's path, seeded as the repetition's cells are.
    pub settings: LinkSettings,
    /// The request stream and the change.
    pub scenario: Scenario,
}

impl HandoffPlan {
    /// For the progress bar: `handoff phone h3 #2`.
    pub fn label(&self) -> String {
        format!(
            "handoff {} {} #{}",
            self.group,
            self.protocol,
            self.repetition + 1
        )
    }

    /// About how long the run takes: the stream, the last request's
    /// timeout and the set-up.
    pub fn estimated_seconds(&self) -> f64 {
        (self.scenario.duration + self.scenario.request_timeout + SET_UP).as_secs_f64()
    }
}

/// The handoff runs of `suite`'s population, repetition by repetition,
/// each group's two sides one after the other; none without one.
pub fn plan(suite: &Suite) -> anyhow::Result<Vec<HandoffPlan>> {
    let Some(population) = &suite.population else {
        return Ok(Vec::new());
    };
    let mut plans = Vec::new();
    for repetition in 0..suite.repetitions.0 {
        let seed = suite.seed.wrapping_add(u64::from(repetition));
        for group in population.groups.iter().filter(|group| group.handoffs) {
            let settings = crate::profile::settings(suite, &group.name, seed)?
                .ok_or_else(|| anyhow::anyhow!("group `{}` is not an emulated path", group.name))?;
            for protocol in [group.off, Proto::H3] {
                plans.push(HandoffPlan {
                    group: group.name.clone(),
                    protocol,
                    repetition,
                    scenario: scenario(protocol, &settings),
                    settings: settings.clone(),
                });
            }
        }
    }
    Ok(plans)
}

/// The stream on `settings`' path, its timeouts scaled to its round trip
/// as `probe migrate`'s defaults are.
fn scenario(protocol: Proto, settings: &LinkSettings) -> Scenario {
    let rtt = Duration::from_nanos(settings.rtt);
    Scenario {
        change: Change::Address,
        protos: vec![protocol],
        rate_per_s: RATE_PER_S,
        duration: DURATION,
        switch_at: SWITCH_AT,
        body_bytes: BODY_BYTES,
        request_timeout: default_request_timeout(rtt),
        delay_threshold: default_delay_threshold(rtt),
    }
}

/// Runs `plan` with `exe` as the server; a failure is recorded, not
/// returned.
pub fn run(plan: &HandoffPlan, exe: &Path, interrupted: &Interrupted) -> HandoffRecord {
    let options = MigrateOptions {
        settings: plan.settings.clone(),
        profile: Some(plan.group.clone()),
        scenario: plan.scenario.clone(),
        exe: exe.to_path_buf(),
    };
    let ran = run_migrate(&options, interrupted, |_| {});
    let (outcome, measured) = match ran {
        _ if interrupted.is_set() => (Outcome::Interrupted, None),
        Ok((report, None)) => match report.protocols.first() {
            Some(result) => (Outcome::Ok, Some(measured(&result.summary))),
            None => failed("the run returned no result"),
        },
        Ok((_, Some(err))) | Err(err) => failed(&format!("{err:#}")),
    };
    HandoffRecord {
        group: plan.group.clone(),
        protocol: plan.protocol,
        repetition: plan.repetition,
        seed: plan.settings.seed,
        scenario: scenario_record(&plan.scenario),
        outcome,
        measured,
    }
}

fn failed(error: &str) -> (Outcome, Option<HandoffMeasured>) {
    let error = format!("the handoff run failed: {error}");
    (Outcome::Failed { error }, None)
}

fn measured(summary: &h3lab_probe::migrate::summary::Summary) -> HandoffMeasured {
    HandoffMeasured {
        requests: summary.requests,
        failed: summary.failed,
        connections_used: summary.connections_used as u64,
        connections_broken: summary.connections_broken as u64,
        stall_ms: summary.stall_ms,
    }
}

fn scenario_record(scenario: &Scenario) -> HandoffScenario {
    HandoffScenario {
        change: scenario.change.to_string(),
        rate_per_s: scenario.rate_per_s,
        duration_s: scenario.duration.as_secs_f64(),
        switch_at_s: scenario.switch_at.as_secs_f64(),
        body_bytes: scenario.body_bytes,
        request_timeout_ms: scenario.request_timeout.as_secs_f64() * 1e3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUITE: &str = r#"name = "movers"
repetitions = 2
seed = 7

[[workload]]
kind = "page"
name = "page"
site = "small"

[[population.group]]
name = "home"
share = 70
profile = "broadband"

[[population.group]]
name = "phone"
share = 30
profile = "mobile-lossy"
h3_off = "h1"
handoffs = true
"#;

    #[test]
    fn each_repetition_runs_a_mobile_group_off_then_on_on_its_seeded_path() {
        let suite = Suite::from_toml(SUITE).unwrap();
        let plans = plan(&suite).unwrap();
        let runs: Vec<(&str, Proto, u32, u64)> = (plans.iter())
            .map(|p| (&*p.group, p.protocol, p.repetition, p.settings.seed))
            .collect();
        assert_eq!(
            runs,
            [
                ("phone", Proto::H1, 0, 7),
                ("phone", Proto::H3, 0, 7),
                ("phone", Proto::H1, 1, 8),
                ("phone", Proto::H3, 1, 8),
            ]
        );
        // mobile-lossy's 200 ms round trip: eight of them before a request
        // fails, two before one counts as delayed.
        let scenario = &plans[0].scenario;
        assert_eq!(scenario.protos, [Proto::H1]);
        assert_eq!(scenario.request_timeout, Duration::from_millis(1600));
        assert_eq!(scenario.delay_threshold, Duration::from_millis(400));
        assert_eq!(plans[0].settings.rtt, 200_000_000);
        assert_eq!(plans[0].estimated_seconds(), 7.6);
        assert_eq!(plans[1].label(), "handoff phone h3 #1");
    }

    #[test]
    fn a_suite_without_handoff_groups_plans_none() {
        let suite = Suite::from_toml(&SUITE.replace("handoffs = true\n", "")).unwrap();
        assert!(plan(&suite).unwrap().is_empty());
    }
}
