//! `h3lab compare a.json b.json`: cells aligned by (profile, workload,
//! protocol, mode), medians side by side and the relative change of b
//! against a.
//!
//! A change is flagged significant when the two runs' sample ranges do not
//! overlap (b's min–max lies wholly above or below a's), i.e. the change is
//! larger than the combined spread of both runs.

use std::collections::BTreeMap;

use h3lab_results::bench::Results;

use crate::format::maybe;
use crate::stats::{RelativeDiff, SampleStats};
use crate::summary::{summarize, CellKey, CellSummary};
use crate::table::{aligned, column_widths, rule};

/// One aligned cell of two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CellChange {
    pub key: CellKey,
    pub unit: String,
    pub a: Option<SampleStats>,
    pub b: Option<SampleStats>,
    /// b's median against a's; `None` when a side has no data or the two
    /// runs measured different metrics.
    pub change: Option<RelativeDiff>,
    pub significant: bool,
    pub note: Option<String>,
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
    let mut significant = false;
    if note.is_none() {
        match (&a_stats, &b_stats) {
            (Some(a_s), Some(b_s)) => {
                change = RelativeDiff::new(b_s.median, a_s.median, either.higher_is_better);
                significant = b_s.min > a_s.max || b_s.max < a_s.min;
            }
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
        significant,
        note,
    }
}

/// Text report of two runs' differences, one block per profile.
pub fn compare(a: &Results, b: &Results) -> String {
    let changes = cell_changes(a, b);
    let mut out = format!(
        "a: {} (started {}, seed {})\nb: {} (started {}, seed {})\n\
         change = b's median against a's; SIGNIFICANT = the two runs' min–max ranges do not overlap\n",
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
    let significant = changes.iter().filter(|c| c.significant).count();
    out.push_str(&format!(
        "\n{significant} of {} cell(s) changed beyond both runs' min–max spread.\n",
        changes.len()
    ));
    out
}

fn change_row(change: &CellChange) -> Vec<String> {
    let verdict = match (&change.change, &change.note) {
        (_, Some(note)) => note.clone(),
        (Some(_), None) if change.significant => "SIGNIFICANT".to_string(),
        (Some(_), None) => "within spread".to_string(),
        (None, None) => "no ratio (zero median)".to_string(),
    };
    vec![
        change.key.workload_label(),
        change.key.protocol.clone(),
        change.unit.clone(),
        maybe(change.a.as_ref().map(|s| s.median)),
        maybe(change.b.as_ref().map(|s| s.median)),
        change.change.map_or_else(|| "–".into(), |d| d.describe()),
        verdict,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::stats::Verdict;
    use crate::table::TABLE_WIDTH;
    use h3lab_results::bench::Outcome;

    /// The fixture with broadband h3 rps-1k doubled and a cell only b has.
    fn faster_run() -> Results {
        let mut b = fixture::results();
        for record in b.cells.iter_mut() {
            if record.profile == "broadband"
                && record.protocol == "h3"
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
    fn aligns_cells_and_flags_changes_beyond_the_spread() {
        let a = fixture::results();
        let changes = cell_changes(&a, &faster_run());
        assert_eq!(changes.len(), 11);

        let doubled = changes
            .iter()
            .find(|c| {
                c.key.profile == "broadband" && c.key.protocol == "h3" && c.key.workload == "rps-1k"
            })
            .unwrap();
        assert_eq!(doubled.change.unwrap().percent, 100.0);
        assert_eq!(doubled.change.unwrap().verdict, Verdict::Better);
        assert!(doubled.significant);

        let unchanged: Vec<&CellChange> = changes
            .iter()
            .filter(|c| c.note.is_none() && !c.significant)
            .collect();
        assert_eq!(unchanged.len(), 9);
        assert!(unchanged
            .iter()
            .all(|c| c.change.unwrap().verdict == Verdict::Same));

        let failed_in_a = changes
            .iter()
            .find(|c| c.key.profile == "cellular" && c.key.protocol == "h1")
            .unwrap();
        assert!(
            failed_in_a.change.is_some(),
            "two of three repetitions succeeded"
        );

        let only_b = changes.last().unwrap();
        assert_eq!(only_b.key.profile, "satellite");
        assert_eq!(only_b.note.as_deref(), Some("only in b"));
    }

    #[test]
    fn overlapping_ranges_are_not_significant() {
        let a = fixture::results();
        let mut b = fixture::results();
        // h2 broadband rps [200,210,220] → [215,225,235]: overlaps a's range.
        for record in b
            .cells
            .iter_mut()
            .filter(|r| r.profile == "broadband" && r.protocol == "h2" && r.workload == "rps-1k")
        {
            record.metric.samples.iter_mut().for_each(|s| *s += 15.0);
        }
        let changes = cell_changes(&a, &b);
        let shifted = changes
            .iter()
            .find(|c| {
                c.key.protocol == "h2" && c.key.workload == "rps-1k" && c.key.profile == "broadband"
            })
            .unwrap();
        assert!((shifted.change.unwrap().percent - 15.0 / 210.0 * 100.0).abs() < 1e-9);
        assert!(!shifted.significant);
    }

    #[test]
    fn a_cell_without_data_on_one_side_says_which() {
        let a = fixture::results();
        let mut b = fixture::results();
        for record in b
            .cells
            .iter_mut()
            .filter(|r| r.profile == "cellular" && r.protocol == "h3")
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
        assert!(!missing.significant);
    }

    #[test]
    fn text_report_names_the_verdicts() {
        let text = compare(&fixture::results(), &faster_run());
        assert!(text.contains("+100.0 % better"));
        assert!(text.contains("SIGNIFICANT"));
        assert!(text.contains("only in b"));
        assert!(text.contains("1 of 11 cell(s) changed"));
        assert!(
            text.lines()
                .all(|line| line.chars().count() <= TABLE_WIDTH as usize),
            "{text}"
        );
    }

    #[test]
    fn page_cells_compare_like_any_cell() {
        let a = fixture::with_pages();
        let mut b = fixture::with_pages();
        // cellular h3 loads twice as fast: 500..690 → 250..345, below a's range.
        for record in b
            .cells
            .iter_mut()
            .filter(|r| r.kind == "page" && r.profile == "cellular" && r.protocol == "h3")
        {
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
        assert_eq!(faster.change.unwrap().percent, -50.0);
        assert_eq!(faster.change.unwrap().verdict, Verdict::Better);
        assert!(faster.significant);
        assert_eq!(
            pages.iter().filter(|c| !c.significant).count(),
            3,
            "the other page cells are unchanged"
        );
        let text = compare(&a, &b);
        assert!(text.contains("-50.0 % better"), "{text}");
        assert!(text.contains("page-small"));
    }
}
