//! The population's network handoffs (docs/population.md): for each group
//! with `handoffs = true`, how many of its handoff runs ended in a
//! connection reset with h3 off and with h3 on, and the share over those
//! groups' users weighted by their shares, called by the same
//! permutation test as the percentiles.

use h3lab_results::bench::{Outcome, Results};
use h3lab_results::difference::{repetitions_needed, seed_for, Call};
use h3lab_results::handoff::{HandoffRecord, HandoffScenario};
use h3lab_results::population::{
    Estimate, Group, GroupSamples, Mixture, PopulationMeasure, Repetition,
};
use h3lab_results::quantile::median;
use h3lab_results::Proto;

use super::{judged, PublishedRow, Side};

/// Each repetition is 1 for a reset and 0 for none: the population's
/// share above this is the share of handoffs that reset.
const RESET_ABOVE: f64 = 0.5;

/// The handoffs of a population run.
#[derive(Debug, Clone)]
pub(crate) struct HandoffVerdict {
    /// What each run did (the first run's; every run shares it but the
    /// timeout, which follows the group's round trip).
    pub(crate) scenario: HandoffScenario,
    /// Each group with handoffs, in the suite's order.
    pub(crate) groups: Vec<HandoffGroup>,
    /// The share of handoffs that reset, over the handoff groups' users;
    /// `Err` names the groups without a completed run on a side.
    pub(crate) resets: Result<Resets, Vec<String>>,
    /// Study figures beside ours.
    pub(crate) published: Vec<PublishedRow>,
}

/// One group's handoff runs.
#[derive(Debug, Clone)]
pub(crate) struct HandoffGroup {
    pub(crate) group: Group,
    pub(crate) sides: Side<HandoffSide>,
}

/// One side's runs of a group.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HandoffSide {
    /// The protocol the client followed.
    pub(crate) protocol: Proto,
    /// Runs that completed.
    pub(crate) completed: usize,
    /// Of those, runs in which a connection the client held broke.
    pub(crate) resets: usize,
    /// Runs that failed (no figures).
    pub(crate) failed: usize,
    /// The median over completed runs of the longest time without a
    /// successful response.
    pub(crate) median_stall_ms: Option<f64>,
}

/// The population's share of handoffs that reset, off and on.
#[derive(Debug, Clone)]
pub(crate) struct Resets {
    pub(crate) off: f64,
    pub(crate) on: f64,
    /// On minus off, as a fraction, with its bootstrap interval.
    pub(crate) change: Estimate,
    pub(crate) call: Call,
}

/// The verdict on a run's handoffs; `None` when it ran none.
pub(crate) fn handoff_verdict(results: &Results) -> Option<HandoffVerdict> {
    let population = results.suite.population.as_ref()?;
    let scenario = results.handoffs.first()?.scenario.clone();
    let runs = |group: &Group, h3_on: bool| -> Vec<&HandoffRecord> {
        (results.handoffs.iter())
            .filter(|run| run.group == group.name && run.h3_on() == h3_on)
            .collect()
    };
    let moving: Vec<&Group> = population.groups.iter().filter(|g| g.handoffs).collect();
    let groups: Vec<HandoffGroup> = (moving.iter())
        .map(|group| HandoffGroup {
            group: (*group).clone(),
            sides: Side {
                off: side(group.off, &runs(group, false)),
                on: side(Proto::H3, &runs(group, true)),
            },
        })
        .collect();
    let resets = population_resets(&groups);
    let published = (population.published.iter())
        .filter(|figure| figure.measure == PopulationMeasure::HandoffResets)
        .map(|figure| {
            let ours = |group: Option<&str>| -> Option<Side<f64>> {
                match group {
                    Some(name) => {
                        let row = groups.iter().find(|row| row.group.name == name)?;
                        Some(Side {
                            off: row.sides.off.reset_share()?,
                            on: row.sides.on.reset_share()?,
                        })
                    }
                    None => (resets.as_ref().ok()).map(|r| Side {
                        off: r.off,
                        on: r.on,
                    }),
                }
            };
            let ours = ours(figure.group.as_deref());
            PublishedRow {
                figure: figure.clone(),
                ours: Side {
                    off: ours.map(|side| side.off * 100.0),
                    on: ours.map(|side| side.on * 100.0),
                },
                unit: "% of handoffs",
            }
        })
        .collect();
    Some(HandoffVerdict {
        scenario,
        groups,
        resets,
        published,
    })
}

fn side(protocol: Proto, runs: &[&HandoffRecord]) -> HandoffSide {
    let completed: Vec<_> = runs.iter().filter_map(|run| run.measured).collect();
    let failed = (runs.iter())
        .filter(|run| matches!(run.outcome, Outcome::Failed { .. }))
        .count();
    HandoffSide {
        protocol,
        completed: completed.len(),
        resets: completed.iter().filter(|m| m.ended_in_reset()).count(),
        failed,
        median_stall_ms: median(&mut completed.iter().map(|m| m.stall_ms).collect::<Vec<f64>>()),
    }
}

impl HandoffSide {
    /// Resets per completed run; `None` without one.
    pub(crate) fn reset_share(&self) -> Option<f64> {
        (self.completed > 0).then(|| self.resets as f64 / self.completed as f64)
    }

    /// Each completed run as a repetition of 1 (reset) or 0.
    fn repetitions(&self) -> Vec<Repetition> {
        let reset = |run: usize| f64::from(u8::from(run < self.resets));
        (0..self.completed)
            .filter_map(|run| Repetition::of_samples(&[reset(run)]))
            .collect()
    }
}

/// The groups' runs mixed by share: each side's share of handoffs that
/// reset, and the change called when the runs allow.
fn population_resets(groups: &[HandoffGroup]) -> Result<Resets, Vec<String>> {
    let samples: Vec<GroupSamples> = (groups.iter())
        .map(|row| GroupSamples {
            share: row.group.share,
            off: row.sides.off.repetitions(),
            on: row.sides.on.repetitions(),
        })
        .collect();
    let Some(mixture) = Mixture::new(samples) else {
        return Err((groups.iter())
            .filter(|row| row.sides.off.completed == 0 || row.sides.on.completed == 0)
            .map(|row| row.group.name.clone())
            .collect());
    };
    let callable = mixture.fewest_repetitions() >= repetitions_needed();
    let share =
        |on_fraction: f64| mixture.value(|view| view.fraction_above(on_fraction, RESET_ABOVE));
    let (change, call) = judged(
        &mixture,
        seed_for("handoffs", "population"),
        callable,
        |view| view.fraction_above(1.0, RESET_ABOVE) - view.fraction_above(0.0, RESET_ABOVE),
    );
    Ok(Resets {
        off: share(0.0),
        on: share(1.0),
        change,
        call,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::population::tests::{group, population_run};
    use h3lab_results::handoff::HandoffMeasured;

    fn run(group: &str, protocol: Proto, repetition: u32, broken: u64) -> HandoffRecord {
        HandoffRecord {
            group: group.into(),
            protocol,
            repetition,
            seed: 1 + u64::from(repetition),
            scenario: HandoffScenario {
                change: "address".into(),
                rate_per_s: 20,
                duration_s: 4.0,
                switch_at_s: 2.0,
                body_bytes: 1000,
                request_timeout_ms: 1000.0,
            },
            outcome: Outcome::Ok,
            measured: Some(HandoffMeasured {
                requests: 80,
                failed: 20 * broken,
                connections_used: 1 + broken,
                connections_broken: broken,
                stall_ms: if broken > 0 { 1000.0 } else { 60.0 },
            }),
        }
    }

    /// `phones` (30 %) and `trains` (10 %) move; `trains`' h3 resets in
    /// one run of five.
    fn moving_run() -> Results {
        let mut results = population_run();
        let population = results.suite.population.as_mut().unwrap();
        population.groups = vec![
            group("home", 0.6, "open"),
            Group {
                handoffs: true,
                ..group("phones", 0.3, "open")
            },
            Group {
                handoffs: true,
                ..group("trains", 0.1, "open")
            },
        ];
        for repetition in 0..5 {
            for name in ["phones", "trains"] {
                results.handoffs.push(run(name, Proto::H2, repetition, 1));
                let h3_broken = u64::from(name == "trains" && repetition == 0);
                results
                    .handoffs
                    .push(run(name, Proto::H3, repetition, h3_broken));
            }
        }
        results
    }

    #[test]
    fn resets_are_counted_per_group_and_mixed_by_share_over_the_moving_groups() {
        let verdict = handoff_verdict(&moving_run()).unwrap();
        let names: Vec<&str> = verdict.groups.iter().map(|r| &*r.group.name).collect();
        assert_eq!(names, ["phones", "trains"]);
        let trains = &verdict.groups[1].sides;
        assert_eq!((trains.off.completed, trains.off.resets), (5, 5));
        assert_eq!((trains.on.completed, trains.on.resets), (5, 1));
        assert_eq!(trains.on.median_stall_ms, Some(60.0));
        assert_eq!(trains.off.median_stall_ms, Some(1000.0));
        let resets = verdict.resets.unwrap();
        // Off: everyone resets. On: a fifth of trains' 10 % among the
        // moving 40 %.
        assert_eq!(resets.off, 1.0);
        assert!((resets.on - 0.2 * 0.1 / 0.4).abs() < 1e-9, "{}", resets.on);
        assert!((resets.change.value + 0.95).abs() < 1e-9);
        assert_eq!(resets.call, Call::Better);
    }

    #[test]
    fn alike_sides_are_not_called_and_a_group_without_runs_is_named() {
        let mut results = moving_run();
        for run in &mut results.handoffs {
            if let Some(measured) = &mut run.measured {
                measured.connections_broken = 1;
            }
        }
        let verdict = handoff_verdict(&results).unwrap();
        let resets = verdict.resets.unwrap();
        assert_eq!((resets.off, resets.on), (1.0, 1.0));
        assert_eq!(resets.call, Call::NoClearDifference);
        results
            .handoffs
            .retain(|run| run.group != "trains" || !run.h3_on());
        let verdict = handoff_verdict(&results).unwrap();
        assert_eq!(verdict.resets.unwrap_err(), ["trains"]);
        assert_eq!(verdict.groups[1].sides.on.reset_share(), None);
    }

    #[test]
    fn a_run_without_handoffs_has_no_verdict() {
        assert!(handoff_verdict(&population_run()).is_none());
    }
}
