//! The population verdict (docs/population.md): for a suite with a
//! `[population]`, each page or rps workload's distribution over all the
//! groups' users with h3 off and with h3 on, who gains and who loses, what
//! a partial rollout would show, and the costs a rollout changes.
//!
//! Samples are page load times, or request latencies from each cell's
//! histogram. The arithmetic (mixture by share, bootstrap within groups)
//! is `h3lab_results::population`'s.

use h3lab_results::bench::{CellRecord, Outcome, Results, SERVER_CPU_RESOLVED_S};
use h3lab_results::difference::{repetitions_needed, seed_for, Call, LEVEL};
use h3lab_results::population::{
    Estimate, Group, GroupSamples, Mixture, Population, PopulationMeasure,
    PublishedPopulationFigure, Repetition, View,
};
use h3lab_results::{Proto, WorkloadKind};

pub(crate) mod handoff;
pub(crate) mod text;

pub(crate) use text::terminal_lines;

/// What a page workload's samples are.
const PAGE_LOAD_TIME: &str = "page load time";

/// The percentiles reported, with their names.
pub(crate) const QUANTILES: [(f64, &str); 4] =
    [(0.50, "p50"), (0.75, "p75"), (0.95, "p95"), (0.99, "p99")];

/// The rollout fractions shown, as study B stepped through them.
pub(crate) const ROLLOUT: [f64; 7] = [0.01, 0.02, 0.05, 0.10, 0.20, 0.50, 1.0];

/// The verdict on one workload.
#[derive(Debug, Clone)]
pub(crate) struct PopulationVerdict {
    pub(crate) workload: String,
    /// What the samples are, in words.
    pub(crate) what: &'static str,
    /// Each group, in the suite's order.
    pub(crate) groups: Vec<GroupRow>,
    /// The population's figures; `Err` names the groups without samples.
    pub(crate) mixed: Result<Mixed, Vec<String>>,
    /// Connections per page load, off and on; page workloads only.
    pub(crate) connections: Option<Side<Option<f64>>>,
    /// The server's CPU per request in µs, off and on; rps workloads only,
    /// whose measured interval is the requests' (a page cell's few loads
    /// leave its server's CPU to its start-up and clock ticks: the same
    /// cell read 20 to 410 ms).
    pub(crate) server_cpu_us: Option<Side<Option<f64>>>,
    /// Study figures beside ours.
    pub(crate) published: Vec<PublishedRow>,
}

/// Neither side known.
const UNKNOWN: Side<Option<f64>> = Side {
    off: None,
    on: None,
};

/// A figure with h3 off and with h3 on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Side<T> {
    pub(crate) off: T,
    pub(crate) on: T,
}

/// The population's figures.
#[derive(Debug, Clone)]
pub(crate) struct Mixed {
    /// One row per [`QUANTILES`] entry.
    pub(crate) quantiles: Vec<QuantileRow>,
    /// One row per [`ROLLOUT`] fraction.
    pub(crate) rollout: Vec<RolloutRow>,
    /// The population's distribution as steps, off and on (for the plot).
    pub(crate) steps: Side<Vec<(f64, f64)>>,
}

/// A percentile of the population off and on, and its change.
#[derive(Debug, Clone)]
pub(crate) struct QuantileRow {
    pub(crate) name: &'static str,
    pub(crate) figures: Side<Estimate>,
    pub(crate) change: Estimate,
    pub(crate) call: Call,
}

/// The population with a fraction of its users on h3.
#[derive(Debug, Clone)]
pub(crate) struct RolloutRow {
    pub(crate) fraction: f64,
    pub(crate) p75: Estimate,
    pub(crate) p99: Estimate,
    /// Against no user on h3.
    pub(crate) p75_change: Estimate,
    pub(crate) p99_change: Estimate,
    pub(crate) p75_call: Call,
    pub(crate) p99_call: Call,
}

/// One group: its p75 off and on, and the change.
#[derive(Debug, Clone)]
pub(crate) struct GroupRow {
    pub(crate) group: Group,
    /// `None` when a side has no successful repetition.
    pub(crate) p75: Option<QuantileRow>,
    /// Repetitions that failed, off and on.
    pub(crate) failed: Side<usize>,
    /// The share of page requests that went over h3, off and on: what the
    /// group's users got (a first visit learns h3 only for later visits).
    pub(crate) over_h3: Side<Option<f64>>,
}

/// A study's figure and ours.
#[derive(Debug, Clone)]
pub(crate) struct PublishedRow {
    pub(crate) figure: PublishedPopulationFigure,
    /// Ours, off and on, in the figure's unit where we know it.
    pub(crate) ours: Side<Option<f64>>,
    /// Our unit.
    pub(crate) unit: &'static str,
}

/// The verdict on each page or rps workload; empty without a population.
pub(crate) fn population_verdicts(results: &Results) -> Vec<PopulationVerdict> {
    let Some(population) = &results.suite.population else {
        return Vec::new();
    };
    let mut verdicts = Vec::new();
    for workload in &results.suite.workloads {
        let kind = results
            .cells
            .iter()
            .find(|cell| &cell.workload == workload)
            .map(|cell| cell.kind);
        let what = match kind {
            Some(WorkloadKind::Page) => PAGE_LOAD_TIME,
            Some(WorkloadKind::Rps) => "request latency",
            _ => continue,
        };
        verdicts.push(verdict_on(results, population, workload, what));
    }
    verdicts
}

fn verdict_on(
    results: &Results,
    population: &Population,
    workload: &str,
    what: &'static str,
) -> PopulationVerdict {
    let seed = seed_for(workload, "population");
    let cells = |group: &Group, protocol: Proto| -> Vec<&CellRecord> {
        (results.cells.iter())
            .filter(|cell| cell.workload == workload && cell.profile == group.name)
            .filter(|cell| cell.protocol == protocol && cell.replica.is_none())
            .collect()
    };
    let sides: Vec<Side<Vec<&CellRecord>>> = (population.groups.iter())
        .map(|group| Side {
            off: cells(group, group.off),
            on: cells(group, group.on),
        })
        .collect();
    let samples: Vec<GroupSamples> = (population.groups.iter())
        .zip(&sides)
        .map(|(group, side)| GroupSamples {
            share: group.share,
            off: repetitions(&side.off),
            on: repetitions(&side.on),
        })
        .collect();
    let groups = (population.groups.iter())
        .zip(&sides)
        .zip(&samples)
        .map(|((group, side), samples)| group_row(group, side, samples, seed))
        .collect();
    let mixed = match Mixture::new(samples.clone()) {
        Some(mixture) => Ok(mixed(&mixture, seed)),
        None => Err(unknown_groups(&population.groups, &samples)),
    };
    let pages = what == PAGE_LOAD_TIME;
    let connections = pages.then(|| side_mean(population, &sides, connections_per_load));
    let server_cpu_us = (!pages).then(|| side_mean(population, &sides, server_cpu_per_request_us));
    let mut verdict = PopulationVerdict {
        workload: workload.to_string(),
        what,
        groups,
        mixed,
        connections,
        server_cpu_us,
        published: Vec::new(),
    };
    verdict.published = (population.published.iter())
        .filter(|figure| {
            figure
                .workload
                .as_deref()
                .is_none_or(|name| name == workload)
        })
        .filter_map(|figure| published_row(figure, &verdict, &population.groups, &samples))
        .collect();
    verdict
}

/// Each successful repetition's samples: page load times, or the request
/// latencies its histogram holds, in ms.
fn repetitions(cells: &[&CellRecord]) -> Vec<Repetition> {
    (cells.iter())
        .filter(|cell| cell.outcome == Outcome::Ok)
        .filter_map(|cell| match cell.kind {
            WorkloadKind::Rps => latencies(cell),
            _ => Repetition::of_samples(&cell.metric.samples),
        })
        .collect()
}

fn latencies(cell: &CellRecord) -> Option<Repetition> {
    let histogram = crate::histogram::decode(cell.latency_histogram.as_deref()?).ok()?;
    let points = histogram
        .iter_recorded()
        .map(|value| {
            let ms = histogram.highest_equivalent(value.value_iterated_to()) as f64 / 1000.0;
            (ms, value.count_since_last_iteration())
        })
        .collect::<Vec<_>>();
    Repetition::new(points)
}

fn unknown_groups(groups: &[Group], samples: &[GroupSamples]) -> Vec<String> {
    (groups.iter().zip(samples))
        .filter(|(_, samples)| samples.off.is_empty() || samples.on.is_empty())
        .map(|(group, _)| group.name.clone())
        .collect()
}

fn mixed(mixture: &Mixture, seed: u64) -> Mixed {
    let callable = mixture.fewest_repetitions() >= repetitions_needed();
    let quantiles = QUANTILES
        .iter()
        .map(|&(q, name)| quantile_row(mixture, q, name, callable, seed))
        .collect();
    let rollout = ROLLOUT
        .iter()
        .map(|&fraction| rollout_row(mixture, fraction, callable, seed))
        .collect();
    let steps = Side {
        off: mixture.steps(0.0),
        on: mixture.steps(1.0),
    };
    Mixed {
        quantiles,
        rollout,
        steps,
    }
}

fn quantile_row(
    mixture: &Mixture,
    q: f64,
    name: &'static str,
    callable: bool,
    seed: u64,
) -> QuantileRow {
    let figures = Side {
        off: mixture.estimate(seed, |view| view.quantile(0.0, q)),
        on: mixture.estimate(seed, |view| view.quantile(1.0, q)),
    };
    let (change, call) = judged(mixture, seed, callable, |view| {
        view.quantile(1.0, q) - view.quantile(0.0, q)
    });
    QuantileRow {
        name,
        figures,
        change,
        call,
    }
}

fn rollout_row(mixture: &Mixture, fraction: f64, callable: bool, seed: u64) -> RolloutRow {
    let at = |q: f64| mixture.estimate(seed, |view| view.quantile(fraction, q));
    let change = |q: f64| {
        judged(mixture, seed, callable, |view| {
            view.quantile(fraction, q) - view.quantile(0.0, q)
        })
    };
    let ((p75_change, p75_call), (p99_change, p99_call)) = (change(0.75), change(0.99));
    RolloutRow {
        fraction,
        p75: at(0.75),
        p99: at(0.99),
        p75_change,
        p99_change,
        p75_call,
        p99_call,
    }
}

/// A change's figure and bootstrap interval, and its call: better
/// (shorter) or worse when the permutation test's p-value is at most
/// [`LEVEL`], which keeps a false call that rare, and the interval leaves
/// zero out, so no figure is called whose interval holds zero (a change of
/// one histogram step can pass the test alone); none with fewer
/// repetitions than any call in h3lab needs. The bootstrap's interval of
/// so few repetitions is narrower than 95 %, so at the margin it may leave
/// zero out with no call (docs/population.md).
pub(crate) fn judged(
    mixture: &Mixture,
    seed: u64,
    callable: bool,
    change: impl Fn(&View) -> f64 + Copy,
) -> (Estimate, Call) {
    let estimate = mixture.estimate(seed, change);
    let clear = estimate.excludes_zero() && mixture.p_value(seed, change) <= LEVEL;
    let call = match callable && clear {
        false if !callable => Call::TooFewRepetitions,
        false => Call::NoClearDifference,
        true if estimate.value < 0.0 => Call::Better,
        true => Call::Worse,
    };
    (estimate, call)
}

fn group_row(
    group: &Group,
    side: &Side<Vec<&CellRecord>>,
    samples: &GroupSamples,
    seed: u64,
) -> GroupRow {
    let alone = GroupSamples {
        share: 1.0,
        ..samples.clone()
    };
    let p75 = Mixture::new(vec![alone]).map(|mixture| {
        let callable = mixture.fewest_repetitions() >= repetitions_needed();
        quantile_row(&mixture, 0.75, "p75", callable, seed)
    });
    let failed = |cells: &[&CellRecord]| {
        (cells.iter())
            .filter(|cell| matches!(cell.outcome, Outcome::Failed { .. }))
            .count()
    };
    GroupRow {
        group: group.clone(),
        p75,
        failed: Side {
            off: failed(&side.off),
            on: failed(&side.on),
        },
        over_h3: Side {
            off: over_h3(&side.off),
            on: over_h3(&side.on),
        },
    }
}

/// The share of page requests over h3 in the loads the successful
/// repetitions kept (their median ones); `None` for other workloads, and
/// when a resource's protocol is unknown.
fn over_h3(cells: &[&CellRecord]) -> Option<f64> {
    let mut requests = 0;
    let mut on_h3 = 0;
    for cell in cells.iter().filter(|cell| cell.outcome == Outcome::Ok) {
        let report = crate::cell::page_report(cell).ok()?;
        for resource in report.loads.iter().flat_map(|load| &load.resources) {
            requests += 1;
            on_h3 += usize::from(resource.protocol.as_deref()? == "h3");
        }
    }
    (requests > 0).then(|| on_h3 as f64 / requests as f64)
}

/// The groups' figures weighed by share, on each side; unknown when any
/// group's is.
fn side_mean(
    population: &Population,
    sides: &[Side<Vec<&CellRecord>>],
    figure: fn(&[&CellRecord]) -> Option<f64>,
) -> Side<Option<f64>> {
    let mean = |on: bool| {
        (population.groups.iter().zip(sides))
            .map(|(group, side)| {
                let cells = if on { &side.on } else { &side.off };
                Some(group.share * figure(cells)?)
            })
            .sum::<Option<f64>>()
    };
    Side {
        off: mean(false),
        on: mean(true),
    }
}

/// The mean number of connections a page load used, over every load of
/// the successful repetitions; unknown when any load's count is.
fn connections_per_load(cells: &[&CellRecord]) -> Option<f64> {
    let mut counts: Vec<u32> = Vec::new();
    for cell in cells.iter().filter(|cell| cell.outcome == Outcome::Ok) {
        counts.extend(cell.connections_per_load.as_ref()?);
    }
    (!counts.is_empty())
        .then(|| counts.iter().map(|&c| f64::from(c)).sum::<f64>() / counts.len() as f64)
}

/// The server's CPU over the successful repetitions' measured intervals,
/// per request, in µs; unknown when any interval's CPU is, or when all of
/// it is too little for /proc's clock ticks to resolve.
fn server_cpu_per_request_us(cells: &[&CellRecord]) -> Option<f64> {
    let mut cpu_s = 0.0;
    let mut requests = 0.0;
    for cell in cells.iter().filter(|cell| cell.outcome == Outcome::Ok) {
        cpu_s += cell.cpu.server_interval_s?;
        requests += cell.requests as f64;
    }
    (cpu_s >= SERVER_CPU_RESOLVED_S && requests > 0.0).then(|| cpu_s * 1e6 / requests)
}

/// A study's figure beside ours; `None` for a figure on handoffs, which
/// the handoffs' verdict shows.
fn published_row(
    figure: &PublishedPopulationFigure,
    verdict: &PopulationVerdict,
    groups: &[Group],
    samples: &[GroupSamples],
) -> Option<PublishedRow> {
    let (ours, unit) = match figure.measure {
        PopulationMeasure::Connections => (verdict.connections.unwrap_or(UNKNOWN), "connections"),
        PopulationMeasure::ServerCpu => (verdict.server_cpu_us.unwrap_or(UNKNOWN), "µs"),
        PopulationMeasure::HandoffResets => return None,
        measure => {
            let q = measure
                .quantile()
                .expect("the other measures are percentiles");
            (quantile_of(figure, verdict, groups, samples, q), "ms")
        }
    };
    Some(PublishedRow {
        figure: figure.clone(),
        ours,
        unit,
    })
}

/// Our `q` quantile off and on, of the figure's group or of everyone.
fn quantile_of(
    figure: &PublishedPopulationFigure,
    verdict: &PopulationVerdict,
    groups: &[Group],
    samples: &[GroupSamples],
    q: f64,
) -> Side<Option<f64>> {
    let mixture = match &figure.group {
        None => match &verdict.mixed {
            Ok(_) => Mixture::new(samples.to_vec()),
            Err(_) => None,
        },
        Some(name) => (groups.iter().zip(samples))
            .find(|(group, _)| &group.name == name)
            .and_then(|(_, samples)| {
                Mixture::new(vec![GroupSamples {
                    share: 1.0,
                    ..samples.clone()
                }])
            }),
    };
    let Some(mixture) = mixture else {
        return UNKNOWN;
    };
    Side {
        off: Some(mixture.value(|view| view.quantile(0.0, q))),
        on: Some(mixture.value(|view| view.quantile(1.0, q))),
    }
}

impl PopulationVerdict {
    /// The groups h3 on makes worse at p75, by how much.
    pub(crate) fn losers(&self) -> Vec<&GroupRow> {
        (self.groups.iter())
            .filter(|row| row.p75.as_ref().is_some_and(|p75| p75.call == Call::Worse))
            .collect()
    }

    /// The smallest rollout fraction from which on this run tells the
    /// change at p75 (or p99) from noise: it and every larger fraction
    /// get the same clear call, so a lone call below a fraction without
    /// one is not read as the threshold.
    pub(crate) fn smallest_visible(&self, p99: bool) -> Option<f64> {
        let mixed = self.mixed.as_ref().ok()?;
        let calls = (mixed.rollout.iter()).map(|row| match p99 {
            false => (row.fraction, row.p75_call),
            true => (row.fraction, row.p99_call),
        });
        start_of_clear_tail(&calls.collect::<Vec<_>>())
    }
}

/// The first fraction of the longest run of one clear call that reaches
/// the last; none when the last has no clear call.
fn start_of_clear_tail(calls: &[(f64, Call)]) -> Option<f64> {
    let &(_, last) = calls.last()?;
    if !last.is_clear() {
        return None;
    }
    let tail = (calls.iter().rev()).take_while(|(_, call)| *call == last);
    tail.last().map(|(fraction, _)| *fraction)
}

#[cfg(test)]
pub(crate) mod tests {
    use h3lab_results::bench::Results;
    use h3lab_results::population::{Group, Population};
    use h3lab_results::Proto;

    use super::*;
    use crate::fixture::{page_record, results, rps_record};

    pub(crate) fn group(name: &str, share: f64, udp: &str) -> Group {
        Group {
            name: name.into(),
            share,
            network: "broadband".into(),
            udp: udp.into(),
            discovery: "alt-svc".into(),
            off: Proto::H2,
            on: Proto::Auto,
            loader: None,
            visit: None,
            source: None,
            handoffs: false,
        }
    }

    /// 80 % at home, where h3 on takes 100 ms off every load, and 20 %
    /// behind a UDP throttle, where it adds 50 ms; five repetitions of
    /// four loads each, a millisecond apart.
    pub(crate) fn population_run() -> Results {
        let mut results = results();
        results.cells.clear();
        results.suite.workloads = vec!["page-small".into()];
        results.suite.population = Some(Population {
            groups: vec![
                group("home", 0.8, "open"),
                group("throttled", 0.2, "throttle:1mbit"),
            ],
            published: Vec::new(),
        });
        for (profile, protocol, base) in [
            ("home", Proto::H2, 500.0),
            ("home", Proto::Auto, 400.0),
            ("throttled", Proto::H2, 600.0),
            ("throttled", Proto::Auto, 650.0),
        ] {
            for repetition in 0..5 {
                let first = base + 4.0 * f64::from(repetition);
                let samples = (0..4).map(|load| first + f64::from(load)).collect();
                let served = match (profile, protocol) {
                    ("home", Proto::Auto) => "h3",
                    _ => "h2",
                };
                let mut record = page_record(profile, served, samples, first);
                record.protocol = protocol;
                record.repetition = repetition;
                record.connections_per_load =
                    Some(vec![if protocol == Proto::H2 { 3 } else { 1 }; 4]);
                results.cells.push(record);
            }
        }
        results
    }

    #[test]
    fn the_population_gains_and_the_throttled_group_is_named_as_losing() {
        let verdicts = population_verdicts(&population_run());
        let [verdict] = verdicts.as_slice() else {
            panic!("{verdicts:?}")
        };
        let mixed = verdict.mixed.as_ref().unwrap();
        let p50 = &mixed.quantiles[0];
        // Off, the median is the home group's (80 %): its loads run from
        // 500 to 519 ms, and 0.5 / 0.8 of them reach 512.
        assert_eq!(p50.figures.off.value, 512.0);
        assert_eq!(p50.figures.on.value, 412.0);
        assert_eq!(p50.call, Call::Better);
        // p99 is the throttled group's, which h3 on slows down.
        let p99 = &mixed.quantiles[3];
        assert!(p99.figures.on.value > p99.figures.off.value, "{p99:?}");
        assert_eq!(p99.call, Call::Worse);
        let losers: Vec<&str> = verdict
            .losers()
            .iter()
            .map(|row| row.group.name.as_str())
            .collect();
        assert_eq!(losers, ["throttled"]);
        let over_h3: Vec<Side<Option<f64>>> =
            verdict.groups.iter().map(|row| row.over_h3).collect();
        let (never, always) = (Some(0.0), Some(1.0));
        assert_eq!(
            over_h3,
            [
                Side {
                    off: never,
                    on: always
                },
                Side {
                    off: never,
                    on: never
                }
            ]
        );
        let everyone = &mixed.rollout[ROLLOUT.len() - 1];
        assert_eq!(everyone.p75_change.value, mixed.quantiles[1].change.value);
        let connections = verdict.connections.unwrap();
        assert!(
            (connections.off.unwrap() - 3.0).abs() < 1e-9,
            "{connections:?}"
        );
        assert!(
            (connections.on.unwrap() - 1.0).abs() < 1e-9,
            "{connections:?}"
        );
        assert_eq!(verdict.server_cpu_us, None, "not for page loads");
    }

    /// Request latencies come from each cell's histogram, and an rps
    /// workload's cost is the server's CPU per request.
    #[test]
    fn an_rps_workload_mixes_the_latency_histograms_and_gives_server_cpu() {
        let mut run = results();
        run.cells.clear();
        run.suite.workloads = vec!["rps-1k".into()];
        run.suite.population = Some(Population {
            groups: vec![group("near", 0.5, "open"), group("far", 0.5, "open")],
            published: Vec::new(),
        });
        for (profile, protocol, micros, cpu_s) in [
            ("near", "h2", 10_000, 0.10),
            ("near", "auto", 9_000, 0.12),
            ("far", "h2", 50_000, 0.10),
            ("far", "auto", 40_000, 0.12),
        ] {
            for repetition in 0..4 {
                let latencies: Vec<u64> = (0..100).map(|at| micros + at).collect();
                let mut record = rps_record(profile, protocol, repetition, 1.0, Some(&latencies));
                record.cpu.server_interval_s = Some(cpu_s);
                run.cells.push(record);
            }
        }
        let verdicts = population_verdicts(&run);
        let [verdict] = verdicts.as_slice() else {
            panic!("{verdicts:?}")
        };
        assert_eq!(verdict.what, "request latency");
        let mixed = verdict.mixed.as_ref().unwrap();
        // Half the requests take 10.0 to 10.1 ms and half 50.0 to 50.1 ms,
        // to the histogram's precision: p75 is among the far ones.
        let p75 = &mixed.quantiles[1];
        assert!((p75.figures.off.value - 50.05).abs() < 0.1, "{p75:?}");
        assert!((p75.figures.on.value - 40.05).abs() < 0.1, "{p75:?}");
        assert_eq!(p75.call, Call::Better);
        let cpu = verdict.server_cpu_us.unwrap();
        assert!((cpu.off.unwrap() - 100.0).abs() < 1e-6, "{cpu:?}");
        assert!((cpu.on.unwrap() - 120.0).abs() < 1e-6, "{cpu:?}");
        assert_eq!(verdict.connections, None);
    }

    #[test]
    fn a_rollout_is_told_from_noise_from_the_fraction_where_calls_stop_breaking() {
        use Call::{Better, NoClearDifference as Unclear, Worse};
        let calls = |list: &[Call]| -> Vec<(f64, Call)> {
            ROLLOUT.iter().copied().zip(list.iter().copied()).collect()
        };
        let lone_call_below = calls(&[Better, Unclear, Unclear, Better, Unclear, Better, Better]);
        assert_eq!(start_of_clear_tail(&lone_call_below), Some(0.5));
        let none_at_everyone =
            calls(&[Better, Unclear, Unclear, Better, Unclear, Unclear, Unclear]);
        assert_eq!(start_of_clear_tail(&none_at_everyone), None);
        let turns = calls(&[Worse, Worse, Worse, Worse, Worse, Better, Better]);
        assert_eq!(start_of_clear_tail(&turns), Some(0.5));
        assert_eq!(start_of_clear_tail(&calls(&[Worse; 7])), Some(0.01));
    }

    #[test]
    fn a_group_without_samples_makes_the_population_unknown_and_is_named() {
        let mut run = population_run();
        for cell in run.cells.iter_mut() {
            if cell.profile == "throttled" && cell.protocol == Proto::Auto {
                cell.outcome = Outcome::Failed {
                    error: "stalled".into(),
                };
                cell.metric.samples.clear();
            }
        }
        let verdicts = population_verdicts(&run);
        assert_eq!(verdicts[0].mixed.as_ref().unwrap_err(), &["throttled"]);
        assert_eq!(verdicts[0].groups[1].failed, Side { off: 0, on: 5 });
        let text = crate::table::terminal_table(&run);
        assert!(text.contains("unknown: group throttled"), "{text}");
    }

    #[test]
    fn the_terminal_and_the_page_say_who_loses_and_draw_the_two_cdfs() {
        let run = population_run();
        let text = crate::table::terminal_table(&run);
        assert!(
            text.contains("! h3 on makes page load time worse for throttled (20 % of users)"),
            "{text}"
        );
        assert!(text.contains("rollout (against no user on h3)"), "{text}");
        let page = crate::html::render_html(&run);
        let section = &page[page.find("id=\"population\"").unwrap()..];
        assert!(section.contains("h3 off") && section.contains("fraction of users"));
        assert_eq!(
            section[..section.find("</section>").unwrap()]
                .matches("<path")
                .count(),
            2
        );
    }
}
