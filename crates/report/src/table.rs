//! The summary printed at the end of a run: one block per profile, at most
//! 100 columns wide, the baseline marked and failures listed.

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use h3lab_bench::results::Results;

use crate::format::{fraction_as_percent, maybe, number};
use crate::studies::compare_claims;
use crate::summary::{summarize, CellSummary};

/// Width the table is laid out for.
pub const TABLE_WIDTH: u16 = 100;

/// Plain-text summary of a run.
pub fn terminal_table(results: &Results) -> String {
    let summaries = summarize(results);
    let mut out = run_header(results, &summaries);
    for profile in profiles_in_order(&summaries) {
        let block: Vec<&CellSummary> = summaries
            .iter()
            .filter(|s| s.key.profile == profile)
            .collect();
        out.push_str(&profile_block(&profile, &block, &results.suite.baseline));
    }
    out.push_str(&claims_block(results, &summaries));
    out
}

fn run_header(results: &Results, summaries: &[CellSummary]) -> String {
    let suite = &results.suite;
    let failed: usize = summaries.iter().map(CellSummary::failed).sum();
    let recorded: usize = summaries.iter().map(|s| s.repetitions).sum();
    let mut header = format!(
        "h3lab bench: {} ({} repetition(s) recorded, {failed} failed; baseline {}, marked *)\n",
        suite.name, recorded, suite.baseline
    );
    if results.interrupted {
        header.push_str("INTERRUPTED: the run stopped early; the cells below are complete.\n");
    }
    header
}

/// Profiles in the order the summaries list them.
pub(crate) fn profiles_in_order(summaries: &[CellSummary]) -> Vec<String> {
    let mut profiles: Vec<String> = Vec::new();
    for summary in summaries {
        if !profiles.contains(&summary.key.profile) {
            profiles.push(summary.key.profile.clone());
        }
    }
    profiles
}

fn profile_block(profile: &str, block: &[&CellSummary], baseline: &str) -> String {
    let rtt = block.first().map_or(0.0, |s| s.path_rtt_ms);
    let mut out = format!("\n{profile} (path RTT {} ms)\n", number(rtt));
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_HORIZONTAL_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(TABLE_WIDTH)
        .set_header(vec![
            "workload",
            "proto",
            "n",
            "fail",
            "median",
            "p90",
            "p99",
            "min",
            "max",
            "cv",
            &format!("vs {baseline}"),
            "p99 lat ms",
        ]);
    let mut previous_workload = None;
    for summary in block {
        let label = format!("{} [{}]", summary.key.workload_label(), summary.unit);
        let workload = if previous_workload.as_ref() == Some(&label) {
            String::new()
        } else {
            label.clone()
        };
        previous_workload = Some(label);
        table.add_row(row(summary, workload));
    }
    for column in 2..12 {
        if let Some(column) = table.column_mut(column) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    out.push_str(&table.to_string());
    out.push('\n');
    out.push_str(&failure_lines(block));
    out
}

fn row(summary: &CellSummary, workload: String) -> Vec<String> {
    let stats = summary.stats.as_ref();
    let protocol = if summary.is_baseline {
        format!("{}*", summary.key.protocol)
    } else {
        summary.key.protocol.clone()
    };
    let versus = if summary.is_baseline {
        "baseline".to_string()
    } else {
        summary
            .vs_baseline
            .map_or_else(|| "–".into(), |d| d.describe())
    };
    vec![
        workload,
        protocol,
        stats.map_or(0, |s| s.n).to_string(),
        summary.failed().to_string(),
        maybe(stats.map(|s| s.median)),
        maybe(stats.map(|s| s.p90)),
        maybe(stats.map(|s| s.p99)),
        maybe(stats.map(|s| s.min)),
        maybe(stats.map(|s| s.max)),
        fraction_as_percent(stats.and_then(|s| s.cv)),
        versus,
        maybe(summary.latency.as_ref().map(|l| l.p99_ms)),
    ]
}

fn failure_lines(block: &[&CellSummary]) -> String {
    let mut out = String::new();
    for summary in block {
        let cell = format!("{} {}", summary.key.protocol, summary.key.workload_label());
        for failure in &summary.failures {
            out.push_str(&format!(
                "  FAILED {cell} repetition {}: {}\n",
                failure.repetition, failure.error
            ));
        }
        for problem in &summary.problems {
            out.push_str(&format!("  note {cell}: {problem}\n"));
        }
    }
    out
}

fn claims_block(results: &Results, summaries: &[CellSummary]) -> String {
    let comparisons = compare_claims(&results.studies, summaries, &results.suite.target);
    if comparisons.is_empty() {
        return String::new();
    }
    let mut out = String::from("\npublished vs ours\n");
    for comparison in &comparisons {
        let claim = comparison.claim;
        out.push_str(&format!(
            "  {} ({}, {} {}):\n",
            claim.label, claim.study, claim.profile, claim.workload
        ));
        for pair in &comparison.pairs {
            out.push_str(&format!("    {}\n", pair.describe()));
        }
        if comparison.differs() {
            out.push_str(&format!("    why it may differ: {}\n", claim.caveat));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn fits_in_100_columns_and_shows_failures() {
        let text = terminal_table(&fixture::results());
        for line in text.lines() {
            assert!(
                line.chars().count() <= TABLE_WIDTH as usize,
                "too wide: {line:?}"
            );
        }
        assert!(text.contains("broadband (path RTT 20.00 ms)"));
        assert!(text.contains("cellular (path RTT 50.00 ms)"));
        assert!(text.contains("h2*"));
        assert!(text.contains("+19.0 % better"));
        assert!(text.contains("FAILED h1 rps-1k repetition 1: connection refused"));
        assert!(text.contains("direction DIFFERS"));
        assert!(text.contains("why it may differ: ttfb caveat"));
        assert!(!text.contains("INTERRUPTED"));
    }

    #[test]
    fn says_when_interrupted() {
        let mut results = fixture::results();
        results.interrupted = true;
        assert!(terminal_table(&results).contains("INTERRUPTED"));
    }
}
