//! `h3lab compare a.json b.json`: cells aligned by (profile, workload,
//! protocol, mode), medians side by side and the relative change of b
//! against a, with its interval over the two runs' repetitions.
//!
//! A change is called better or worse only when the permutation test of
//! the two runs' repetitions says so at 5 % ([`Difference::call`], the
//! rule of the whole report); otherwise it is "no clear difference". Two
//! runs made at different times also differ by the machine's drift, which
//! the test cannot tell from a real change (docs/statistics.md).

use std::collections::BTreeMap;

use h3lab_results::bench::Results;

use crate::cell::{CellKey, CellSummary};
use crate::format::maybe;
use crate::stats::SampleStats;
use crate::summary::summarize;
use crate::table::{aligned, column_widths, rule};
use h3lab_results::difference::Difference;

/// One aligned cell of two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CellChange {
    pub key: CellKey,
    pub unit: String,
    pub a: Option<SampleStats>,
    pub b: Option<SampleStats>,
    /// b's median against a's; `None` when a side has no data, a's median
    /// is zero or the two runs measured different metrics.
    pub change: Option<Difference>,
    pub note: Option<String>,
}

impl CellChange {
    /// Whether b is clearly better or worse than a.
    pub fn is_clear(&self) -> bool {
        self.change.as_ref().is_some_and(|c| c.call().is_clear())
    }
}

/// Aligns the cells of two runs, in a's order then b's new cells.
pub fn cell_changes(a: &Results, b: &Results) -> Vec<CellChange> {
    let a_cells = summarize(a);
    let b_cells = summarize(b);
    let b_by_key: BTreeMap<&CellKey, &CellSummary> = b_cells.iter().map(|s| (&s.key, s)).collect();
    let mut changes: Vec<CellChange> = a_cells
        .iter()
        .map(|a_cell| change_of(a_cell, Some(a_cell), b_by_key.get(&a_cell.key).copied()))
        .collect();
    let a_keys: Vec<&CellKey> = a_cells.iter().map(|s| &s.key).collect();
    changes.extend(
        b_cells
            .iter()
            .filter(|b_cell| !a_keys.contains(&&b_cell.key))
            .map(|b_cell| change_of(b_cell, None, Some(b_cell))),
    );
    changes
}

/// `either` is whichever side has the cell; it names the key and unit.
fn change_of(either: &CellSummary, a: Option<&CellSummary>, b: Option<&CellSummary>) -> CellChange {
    let a_stats = a.and_then(|s| s.stats.clone());
    let b_stats = b.and_then(|s| s.stats.clone());
    let mut note = match (a, b) {
        (Some(_), None) => Some("only in a".to_string()),
        (None, Some(_)) => Some("only in b".to_string()),
        (Some(a), Some(b)) if a.metric != b.metric => Some(format!(
            "metrics differ ({} vs {}): not compared",
            a.metric, b.metric
        )),
        _ => None,
    };
    let mut change = None;
    if let (None, Some(a), Some(b)) = (&note, a, b) {
        match (&a_stats, &b_stats) {
            (Some(_), Some(_)) => change = b_against_a(a, b),
            (None, None) => note = Some("no data in either".to_string()),
            (None, Some(_)) => note = Some("no data in a".to_string()),
            (Some(_), None) => note = Some("no data in b".to_string()),
        }
    }
    CellChange {
        key: either.key.clone(),
        unit: either.unit.clone(),
        a: a_stats,
        b: b_stats,
        change,
        note,
    }
}

fn b_against_a(a: &CellSummary, b: &CellSummary) -> Option<Difference> {
    Difference::relative(
        &b.samples_by_repetition,
        &a.samples_by_repetition,
        b.higher_is_better,
        b.key.seed_against(&a.key),
    )
}

/// Text report of two runs' differences, one block per profile.
pub fn compare(a: &Results, b: &Results) -> String {
    let changes = cell_changes(a, b);
    let mut out = format!(
        "a: {} (started {}, seed {})\nb: {} (started {}, seed {})\n\
         change = b's median against a's [95 % interval]; better or worse only when a\n\
         permutation test of the repetitions gives p <= 0.05 (docs/statistics.md)\n",
        a.suite.name, a.started_at, a.suite.seed, b.suite.name, b.started_at, b.suite.seed
    );
    let header: Vec<String> = [
        "workload", "proto", "unit", "median a", "median b", "change", "",
    ]
    .map(str::to_string)
    .to_vec();
    let rows: Vec<(String, Vec<String>)> = changes
        .iter()
        .map(|change| (change.key.profile.clone(), change_row(change)))
        .collect();
    let widths = column_widths(std::iter::once(&header).chain(rows.iter().map(|(_, row)| row)));
    let mut profiles: Vec<&str> = Vec::new();
    for (profile, _) in &rows {
        if !profiles.contains(&profile.as_str()) {
            profiles.push(profile);
        }
    }
    for profile in profiles {
        let block: Vec<Vec<String>> = rows
            .iter()
            .filter(|(p, _)| p == profile)
            .map(|(_, row)| row.clone())
            .collect();
        out.push_str(&format!("\n{profile}\n"));
        out.push_str(&aligned(vec![header.clone()], &widths, 3));
        out.push_str(&rule(&widths));
        out.push_str(&aligned(block, &widths, 3));
    }
    let clear = changes.iter().filter(|c| c.is_clear()).count();
    out.push_str(&format!(
        "\n{clear} of {} cell(s) changed clearly (p <= 0.05; about {:.1} would by chance alone).\n",
        changes.len(),
        changes.len() as f64 * h3lab_results::difference::LEVEL
    ));
    out
}

fn change_row(change: &CellChange) -> Vec<String> {
    let verdict = match (&change.change, &change.note) {
        (_, Some(note)) => note.clone(),
        (Some(difference), None) => difference.call().word().to_string(),
        (None, None) => "no ratio (zero median)".to_string(),
    };
    vec![
        change.key.workload_label(),
        change.key.protocol.clone(),
        change.unit.clone(),
        maybe(change.a.as_ref().map(|s| s.median)),
        maybe(change.b.as_ref().map(|s| s.median)),
        change
            .change
            .as_ref()
            .map_or_else(|| "–".into(), Difference::figure),
        verdict,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::format::TABLE_WIDTH;
    use h3lab_results::bench::Outcome;
    use h3lab_results::difference::Call;
    use h3lab_results::{Proto, WorkloadKind};

    /// The fixture with broadband h3 rps-1k doubled and a cell only b has.
    fn faster_run() -> Results {
        let mut b = fixture::results();
        for record in b.cells.iter_mut() {
            if record.profile == "broadband"
                && record.protocol == Proto::H3
                && record.workload == "rps-1k"
            {
                record.metric.samples.iter_mut().for_each(|s| *s *= 2.0);
            }
        }
        let mut extra = b.cells[0].clone();
        extra.profile = "satellite".into();
        b.cells.push(extra);
        b
    }

    #[test]
    fn aligns_cells_and_calls_changes_beyond_the_noise() {
        let a = fixture::results();
        let changes = cell_changes(&a, &faster_run());
        assert_eq!(changes.len(), 11);

        let doubled = changes
            .iter()
            .find(|c| {
                c.key.profile == "broadband" && c.key.protocol == "h3" && c.key.workload == "rps-1k"
            })
            .unwrap();
        let change = doubled.change.as_ref().unwrap();
        assert_eq!(change.estimate, 100.0);
        assert_eq!(change.call(), Call::Better);
        assert!(doubled.is_clear());

        // The same repetitions in both runs: a zero change inside the noise.
        let unchanged: Vec<&CellChange> = changes
            .iter()
            .filter(|c| c.note.is_none() && !c.is_clear())
            .collect();
        assert_eq!(unchanged.len(), 9);
        assert!(unchanged.iter().all(|c| {
            let change = c.change.as_ref().unwrap();
            change.estimate == 0.0 && change.call() == Call::NoClearDifference
        }));

        let failed_in_a = changes
            .iter()
            .find(|c| c.key.profile == "cellular" && c.key.protocol == "h1")
            .unwrap();
        assert!(
            failed_in_a.change.is_some(),
            "four of five repetitions succeeded"
        );

        let only_b = changes.last().unwrap();
        assert_eq!(only_b.key.profile, "satellite");
        assert_eq!(only_b.note.as_deref(), Some("only in b"));
    }

    #[test]
    fn overlapping_repetitions_are_no_clear_difference() {
        let a = fixture::results();
        let mut b = fixture::results();
        // h2 broadband rps [200,210,220,205,215] → [210,220,230,215,225]:
        // interleaves with a's (rank sum 35.5 of 40 at most, p = 32 / 252).
        for record in b.cells.iter_mut().filter(|r| {
            r.profile == "broadband" && r.protocol == Proto::H2 && r.workload == "rps-1k"
        }) {
            record.metric.samples.iter_mut().for_each(|s| *s += 10.0);
        }
        let changes = cell_changes(&a, &b);
        let shifted = changes
            .iter()
            .find(|c| {
                c.key.protocol == "h2" && c.key.workload == "rps-1k" && c.key.profile == "broadband"
            })
            .unwrap();
        let change = shifted.change.as_ref().unwrap();
        assert!((change.estimate - 10.0 / 210.0 * 100.0).abs() < 1e-9);
        assert_eq!(change.call(), Call::NoClearDifference);
        assert!(!shifted.is_clear());
    }

    #[test]
    fn a_cell_without_data_on_one_side_says_which() {
        let a = fixture::results();
        let mut b = fixture::results();
        for record in b
            .cells
            .iter_mut()
            .filter(|r| r.profile == "cellular" && r.protocol == Proto::H3)
        {
            record.outcome = Outcome::Failed {
                error: "timeout".into(),
            };
        }
        let changes = cell_changes(&a, &b);
        let missing = changes
            .iter()
            .find(|c| c.key.profile == "cellular" && c.key.protocol == "h3")
            .unwrap();
        assert_eq!(missing.note.as_deref(), Some("no data in b"));
        assert_eq!(missing.change, None);
        assert!(!missing.is_clear());
    }

    #[test]
    fn text_report_names_the_verdicts() {
        let text = compare(&fixture::results(), &faster_run());
        let line = |start: &str| {
            text.lines()
                .find(|line| line.starts_with(start))
                .unwrap_or_else(|| panic!("no line {start:?} in {text}"))
        };
        // b's h3 [500, 480, 520, 490, 510] against a's [250, 240, 260, 245,
        // 255]: the interval runs between the third smallest and the third
        // largest ratio of a b repetition to an a repetition (5 against 5
        // is rejected at a rank sum within 2 of its extreme), from 490 / 260
        // to 520 / 245.
        let doubled = line("  rps-1k          h3");
        assert!(doubled.contains(" +100.0 % [+88.5, +112.2] "), "{doubled}");
        assert!(doubled.ends_with(" better"), "{doubled}");
        // h2 [200, 210, 220, 205, 215] in both: from 205 / 220 to 220 / 205.
        let same = line("  rps-1k          h2");
        assert!(same.contains(" 0.0 % [-6.8, +7.3] "), "{same}");
        assert!(same.ends_with(" no clear difference"), "{same}");
        assert!(text.contains("only in b"));
        assert!(text.contains("1 of 11 cell(s) changed clearly"));
        assert!(
            text.lines()
                .all(|line| line.chars().count() <= TABLE_WIDTH as usize),
            "{text}"
        );
    }

    #[test]
    fn page_cells_compare_like_any_cell() {
        // cellular h3 loads twice as fast: 500..690 → 250..345, in all five
        // repetitions, below a's range.
        let a = fixture::with_page_repetitions(5);
        let mut b = fixture::with_page_repetitions(5);
        for record in b.cells.iter_mut().filter(|r| {
            r.kind == WorkloadKind::Page && r.profile == "cellular" && r.protocol == Proto::H3
        }) {
            record.metric.samples.iter_mut().for_each(|s| *s /= 2.0);
        }
        let changes = cell_changes(&a, &b);
        let pages: Vec<&CellChange> = changes
            .iter()
            .filter(|c| c.key.workload == "page-small")
            .collect();
        assert_eq!(pages.len(), 4);
        let faster = pages
            .iter()
            .find(|c| c.key.profile == "cellular" && c.key.protocol == "h3")
            .unwrap();
        assert_eq!(faster.unit, "ms");
        let change = faster.change.as_ref().unwrap();
        assert_eq!(change.estimate, -50.0);
        assert_eq!(change.call(), Call::Better);
        assert_eq!(
            pages.iter().filter(|c| !c.is_clear()).count(),
            3,
            "the other page cells are unchanged"
        );
        let text = compare(&a, &b);
        // Repetition r is r % slower in both runs: from 0.5 / 1.04 ×
        // 1.01 to 0.5 × 1.04 / 1.01, the third smallest and largest ratios.
        assert!(text.contains("-50.0 % [-51.4, -48.5]"), "{text}");
        assert!(text.contains("page-small"));
    }
}
