//! How many of a run's verdicts chance alone would make, and, from an A/A
//! run, how many it did make: the false-verdict share per workload kind,
//! for the current rule and for the old range bootstrap, over disjoint
//! blocks of repetitions (`h3lab report --calibrate`). docs/statistics.md
//! has the derivation and the measured table.

use std::collections::BTreeMap;
use std::fmt::Write;

use h3lab_results::bench::{Outcome, Replica, Results};
use h3lab_results::difference::{seed_for, Call, Difference, LEVEL};
use h3lab_results::range_bootstrap;
use h3lab_results::WorkloadKind;

use crate::cell::{CellKey, CellSummary};
use crate::stats::split_finite;

/// The run's verdicts and what chance alone would make of them, e.g.
/// `12 differences tested, each called at p <= 0.05: if none were real,
/// about 0.6 would be called by chance`.
pub fn expected_false(summaries: &[CellSummary], aa: bool) -> String {
    let calls: Vec<Call> = summaries
        .iter()
        .filter_map(|s| s.vs_baseline.as_ref().map(Difference::call))
        .collect();
    let tested = calls
        .iter()
        .filter(|call| **call != Call::TooFewRepetitions)
        .count();
    let called = calls.iter().filter(|call| call.is_clear()).count();
    let too_few = calls.len() - tested;
    let mut line = format!(
        "{tested} difference(s) tested, each called at p <= {LEVEL:.2}: if none were real, \
         about {:.1} would be called by chance",
        tested as f64 * LEVEL
    );
    if aa {
        let _ = write!(
            line,
            "; this A/A run called {called}, every one of them false"
        );
    }
    if too_few > 0 {
        let _ = write!(
            line,
            "; {too_few} had too few repetitions for any call (each side needs {})",
            h3lab_results::difference::repetitions_needed()
        );
    }
    line
}

/// Which rule a calibration counts the calls of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    /// The permutation test every verdict now follows.
    Permutation,
    /// The percentile bootstrap verdicts followed before it.
    RangeBootstrap,
}

impl Rule {
    fn name(self) -> &'static str {
        match self {
            Rule::Permutation => "permutation test",
            Rule::RangeBootstrap => "old range bootstrap",
        }
    }

    fn call(self, subject: &[Vec<f64>], reference: &[Vec<f64>], higher: bool, seed: u64) -> Call {
        match self {
            Rule::Permutation => Difference::relative(subject, reference, higher, seed)
                .map_or(Call::TooFewRepetitions, |d| d.call()),
            Rule::RangeBootstrap => range_bootstrap::call(subject, reference, higher, seed),
        }
    }
}

/// What was compared: the two replicas of one block (as `h3lab bench
/// --aa` verdicts are), or replica A of one block against A of the next
/// (as `h3lab compare` of two runs made one after the other is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Comparison {
    Replicas,
    ConsecutiveRuns,
}

impl Comparison {
    fn name(self) -> &'static str {
        match self {
            Comparison::Replicas => "A/A within a run",
            Comparison::ConsecutiveRuns => "compare, run after run",
        }
    }
}

/// Calls counted for one row of the calibration table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Comparisons a call could be made in.
    pub tested: usize,
    /// Those called better or worse: all false in an A/A run.
    pub called: usize,
}

impl Tally {
    /// The false-verdict share with its 95 % Wilson interval.
    pub fn share(&self) -> Option<(f64, f64, f64)> {
        (self.tested > 0).then(|| {
            let (low, high) = wilson(self.called, self.tested);
            (self.called as f64 / self.tested as f64, low, high)
        })
    }
}

/// The false-verdict counts of an A/A run, by comparison, rule, block
/// size and workload kind.
pub type Calibration = BTreeMap<(Comparison, Rule, usize, WorkloadKind), Tally>;

/// Counts the calls each rule makes between things that do not differ,
/// over disjoint blocks of `block` repetitions of an A/A run: for each
/// cell, replica B against replica A block by block, and replica A of
/// each block against A of the block before. Blocks are consecutive in
/// time, so the second count includes the drift between runs.
pub fn calibrate(results: &Results, blocks: &[usize]) -> anyhow::Result<Calibration> {
    anyhow::ensure!(
        results.suite.aa,
        "not an A/A run: calibrating needs a results.json from `h3lab bench --aa`, \
         where both sides of every verdict are the same"
    );
    let cells = samples_by_cell(results);
    let mut calibration = Calibration::new();
    for (key, (kind, higher, by_repetition)) in &cells {
        if key.replica != Some(Replica::B) {
            continue;
        }
        let Some((a_key, (_, _, a_by_repetition))) =
            cells.iter().find(|(other, _)| key.is_replica_a_of(other))
        else {
            continue;
        };
        for &block in blocks.iter().filter(|&&block| block > 0) {
            let a_blocks = split(a_by_repetition, block);
            let b_blocks = split(by_repetition, block);
            for rule in [Rule::Permutation, Rule::RangeBootstrap] {
                let seed = seed_for(&key.name(), &a_key.name());
                for (a, b) in a_blocks.iter().zip(&b_blocks) {
                    let call = rule.call(b, a, *higher, seed);
                    count(
                        &mut calibration,
                        (Comparison::Replicas, rule, block, *kind),
                        call,
                    );
                }
                for pair in a_blocks.windows(2) {
                    let call = rule.call(&pair[1], &pair[0], *higher, seed);
                    let row = (Comparison::ConsecutiveRuns, rule, block, *kind);
                    count(&mut calibration, row, call);
                }
            }
        }
    }
    Ok(calibration)
}

fn count(calibration: &mut Calibration, row: (Comparison, Rule, usize, WorkloadKind), call: Call) {
    if call == Call::TooFewRepetitions {
        return;
    }
    let tally = calibration.entry(row).or_default();
    tally.tested += 1;
    tally.called += usize::from(call.is_clear());
}

type CellSamples = (WorkloadKind, bool, BTreeMap<u32, Vec<f64>>);

/// Every cell's finite samples by repetition number, successful
/// repetitions only.
fn samples_by_cell(results: &Results) -> BTreeMap<CellKey, CellSamples> {
    let mut cells: BTreeMap<CellKey, CellSamples> = BTreeMap::new();
    for record in &results.cells {
        if !matches!(record.outcome, Outcome::Ok) {
            continue;
        }
        let (samples, _) = split_finite(&record.metric.samples);
        let entry = cells
            .entry(CellKey::of(record))
            .or_insert_with(|| (record.kind, record.metric.higher_is_better, BTreeMap::new()));
        entry.2.insert(record.repetition, samples);
    }
    cells
}

/// Disjoint, whole blocks of `block` consecutive repetitions (by number,
/// so both replicas' blocks hold the same repetitions); a partial last
/// block is left out.
fn split(by_repetition: &BTreeMap<u32, Vec<f64>>, block: usize) -> Vec<Vec<Vec<f64>>> {
    let last = by_repetition
        .keys()
        .next_back()
        .map_or(0, |&n| n as usize + 1);
    (0..last / block)
        .map(|index| {
            (index * block..(index + 1) * block)
                .filter_map(|repetition| by_repetition.get(&(repetition as u32)).cloned())
                .collect()
        })
        .collect()
}

/// The 95 % Wilson score interval of `successes` in `trials`.
fn wilson(successes: usize, trials: usize) -> (f64, f64) {
    const Z: f64 = 1.959_964;
    let n = trials as f64;
    let p = successes as f64 / n;
    let centre = (p + Z * Z / (2.0 * n)) / (1.0 + Z * Z / n);
    let half = Z / (1.0 + Z * Z / n) * (p * (1.0 - p) / n + Z * Z / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The calibration as a table, one row per comparison, rule, block size
/// and workload kind.
pub fn calibration_table(calibration: &Calibration) -> String {
    let mut out = format!(
        "{:<24} {:<20} {:>5} {:<9} {:>7} {:>7}  false verdicts [95 % interval]\n",
        "comparison", "rule", "reps", "kind", "tested", "called"
    );
    for ((comparison, rule, block, kind), tally) in calibration {
        let share = tally.share().map_or("–".to_string(), |(share, low, high)| {
            format!(
                "{:.1} % [{:.1}, {:.1}]",
                share * 100.0,
                low * 100.0,
                high * 100.0
            )
        });
        let _ = writeln!(
            out,
            "{:<24} {:<20} {:>5} {:<9} {:>7} {:>7}  {share}",
            comparison.name(),
            rule.name(),
            block,
            kind.to_string(),
            tally.tested,
            tally.called
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn the_wilson_interval_brackets_the_share() {
        let (low, high) = wilson(10, 100);
        assert!((low - 0.0552).abs() < 1e-3 && (high - 0.1744).abs() < 1e-3);
        assert_eq!(wilson(0, 20).0, 0.0);
    }

    /// An A/A run's records: replica A and B of one rps cell over
    /// `repetitions`, B at `shift` times A.
    fn aa_results(repetitions: u32, shift: f64) -> Results {
        let mut results = fixture::results();
        results.suite.aa = true;
        results.cells.clear();
        for repetition in 0..repetitions {
            for (replica, factor) in [(Replica::A, 1.0), (Replica::B, shift)] {
                let value = (100.0 + f64::from(repetition % 7)) * factor;
                let mut record = fixture::rps_record("broadband", "h2", repetition, value, None);
                record.replica = Some(replica);
                results.cells.push(record);
            }
        }
        results
    }

    #[test]
    fn replicas_are_compared_block_by_block() {
        let calibration = calibrate(&aa_results(12, 2.0), &[3, 4]).unwrap();
        let tally =
            |comparison, rule, block| calibration[&(comparison, rule, block, WorkloadKind::Rps)];
        // B at twice A: every block of 4 is called; 3 are too few for
        // the permutation test, not for the old rule.
        let replicas = tally(Comparison::Replicas, Rule::Permutation, 4);
        assert_eq!(
            replicas,
            Tally {
                tested: 3,
                called: 3
            }
        );
        assert!(!calibration.contains_key(&(
            Comparison::Replicas,
            Rule::Permutation,
            3,
            WorkloadKind::Rps
        )));
        let old = tally(Comparison::Replicas, Rule::RangeBootstrap, 3);
        assert_eq!(
            old,
            Tally {
                tested: 4,
                called: 4
            }
        );
        // Consecutive blocks of A: 3 blocks of 4 make 2 comparisons.
        let runs = tally(Comparison::ConsecutiveRuns, Rule::Permutation, 4);
        assert_eq!(runs.tested, 2);
        assert!(calibration_table(&calibration).contains("A/A within a run"));
    }

    #[test]
    fn a_run_that_is_not_a_a_is_refused() {
        let error = calibrate(&fixture::results(), &[3]).unwrap_err();
        assert!(error.to_string().contains("h3lab bench --aa"), "{error}");
    }
}
