//! The summary printed at the end of a run: one block per profile, at most
//! 100 columns wide, the baseline marked and failures listed. Under each
//! workload's rows, every protocol's difference from the baseline with its
//! interval and verdict: on lines of their own, as the interval would not
//! fit in a column.

use comfy_table::{
    presets, CellAlignment, ColumnConstraint, ContentArrangement, Table, TableComponent, Width,
};
use h3lab_results::bench::{BlockTally, Results, ServerRow};
use h3lab_results::offer::H3Features;
use h3lab_results::{Proto, WorkloadKind};

use crate::captures::compare_captures;
use crate::cell::CellSummary;
use crate::format::list_repetitions;
use crate::format::wrapped;
use crate::format::{fraction_as_percent, maybe};
use crate::settings;
use crate::studies::compare_claims;
use crate::summary::{path_impairments, summarize};

/// Plain-text summary of a run.
pub fn terminal_table(results: &Results) -> String {
    let summaries = summarize(results);
    let mut out = run_header(results, &summaries);
    for profile in profiles_in_order(&summaries) {
        let block: Vec<&CellSummary> = summaries
            .iter()
            .filter(|s| s.key.profile == profile)
            .collect();
        let loss = path_impairments(results, &profile);
        out.push_str(&profile_block(&profile, loss, &block, results));
    }
    out.push_str(&claims_block(results, &summaries));
    out.push_str(&captures_block(results, &summaries));
    out.push_str(&legs_block(&summaries));
    out.push_str(&crate::population::terminal_lines(results));
    out.push_str(&crate::conformance::terminal_lines(results));
    out
}

/// Behind an edge that says its origin's time: how much of each cell's
/// latency was the origin's.
fn legs_block(summaries: &[CellSummary]) -> String {
    let lines: Vec<(String, String)> = summaries
        .iter()
        .filter_map(CellSummary::legs_line)
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "
where the time went (the edge's Server-Timing: its wait for the origin)
",
    );
    for (title, line) in &lines {
        out.push_str(&wrapped(2, title));
        out.push_str(&wrapped(4, line));
    }
    out
}

/// Each replayed HAR: what it recorded, beside the replay's medians.
fn captures_block(results: &Results, summaries: &[CellSummary]) -> String {
    let compared = compare_captures(&results.captures, summaries);
    if compared.is_empty() {
        return String::new();
    }
    let mut out = String::from("\ncaptured pages\n");
    for capture in &compared {
        out.push_str(&wrapped(2, &capture.title()));
        out.push_str(&wrapped(4, &capture.recorded()));
        out.push_str(&wrapped(4, &capture.replayed_line()));
    }
    out
}

fn run_header(results: &Results, summaries: &[CellSummary]) -> String {
    let suite = &results.suite;
    let failed: usize = summaries.iter().map(CellSummary::failed).sum();
    let recorded: usize = summaries.iter().map(|s| s.repetitions).sum();
    let reference = match suite.aa {
        true => "A/A run: each protocol run twice, back to back; the first marked *".to_string(),
        false => format!("baseline {}, marked *", suite.baseline),
    };
    let mut header = format!(
        "h3lab bench: {} ({} repetition(s) recorded, {failed} failed; {reference})\n",
        suite.name, recorded
    );
    let versus = match suite.aa {
        true => "again vs the first run".to_string(),
        false => format!("vs {}", suite.baseline),
    };
    header.push_str(&wrapped(
        0,
        &format!(
            "{versus}: difference of the medians [95 % interval], called better or worse only \
             when a permutation test of the repetitions gives p <= 0.05; \"detects\": the \
             smallest difference the run could have called (docs/statistics.md)"
        ),
    ));
    header.push_str(&wrapped(
        0,
        &crate::verdicts::expected_false(summaries, suite.aa),
    ));
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

/// A profile's cells: one header, then per workload a heading line, one
/// row per protocol and the differences from the baseline. The workloads
/// are separate comfy tables given the same column widths so they line up
/// as one.
fn profile_block(
    profile: &str,
    loss: Option<String>,
    block: &[&CellSummary],
    results: &Results,
) -> String {
    let baseline = &results.suite.baseline;
    let round_trip = block
        .first()
        .map_or(String::new(), |s| s.round_trip_label());
    let header: Vec<String> = [
        "proto",
        "n",
        "fail",
        "median",
        "p90",
        "p99",
        "min",
        "max",
        "cv",
        "p99 lat ms",
    ]
    .map(str::to_string)
    .to_vec();
    let groups = workload_groups(block);
    let rows: Vec<Vec<Vec<String>>> = groups
        .iter()
        .map(|(_, cells)| cells.iter().map(|summary| row(summary)).collect())
        .collect();
    let widths = column_widths(std::iter::once(&header).chain(rows.iter().flatten()));
    let loss = loss.map_or(String::new(), |loss| format!(", {loss}"));
    let mut out = format!("\n{profile} ({round_trip}{loss})\n");
    let common_windows = settings::common_windows(block);
    if let Some(windows) = &common_windows {
        out.push_str(&wrapped(0, windows));
    }
    out.push_str(&aligned(vec![header], &widths, 1));
    out.push_str(&rule(&widths));
    for ((heading, cells), rows) in groups.iter().zip(rows) {
        out.push_str(&format!("{heading}\n"));
        out.push_str(&aligned(rows, &widths, 1));
        out.push_str(&server_line(cells, results));
        if common_windows.is_none() {
            if let Some(windows) = settings::common_windows(cells) {
                out.push_str(&wrapped(COLUMN_GAP as u16, &windows));
            }
        }
        out.push_str(&baseline_lines(cells));
        out.push_str(&bottleneck_lines(cells));
        out.push_str(&resources_gone_without_line(cells));
        out.push_str(&server_cpu_line(cells));
        out.push_str(&client_cpu_line(cells));
        out.push_str(&wire_line(cells));
        out.push_str(&header_block_line(cells));
        out.push_str(&connections_line(cells));
    }
    if block.iter().any(|cell| cell.header_blocks.is_some()) {
        out.push_str(&wrapped(0, HEADER_COMPRESSION));
    }
    let loaders = settings::loader_verdicts(block, results, baseline);
    for line in settings::turning_verdicts(block, baseline)
        .iter()
        .chain(&loaders)
    {
        out.push_str(&wrapped(0, &format!("! {line}")));
    }
    out.push_str(&failure_lines(block));
    out
}

/// Spaces before every column.
const COLUMN_GAP: usize = 2;

/// Under a `server` sweep's row: the QUIC stack under that server, and
/// each protocol of the run it does not offer, which is not a failure.
fn server_line(cells: &[&CellSummary], results: &Results) -> String {
    let Some(row) = server_row(cells, results) else {
        return String::new();
    };
    let mut parts: Vec<String> = Vec::new();
    if row.stack.is_some() || row.offers.contains(&Proto::H3) {
        parts.push(format!("QUIC stack {}", row.stack_text()));
    }
    let not_offered = not_offered(row, results);
    if !not_offered.is_empty() {
        parts.push(format!("{} not offered", not_offered.join(", ")));
    }
    let profile = cells.first().map(|cell| cell.key.profile.as_str());
    if let Some(features) = h3_features(row, results, profile) {
        parts.push(features.describe());
        parts.extend(features.notes.iter().cloned());
    }
    wrapped(
        COLUMN_GAP as u16,
        &format!("{}: {}", row.name, parts.join("; ")),
    )
}

/// The `server` sweep row the cells of one workload heading ran against.
pub(crate) fn server_row<'a>(
    cells: &[&CellSummary],
    results: &'a Results,
) -> Option<&'a ServerRow> {
    let sweep = cells.first()?.sweep.as_ref()?;
    (sweep.tunable == "server")
        .then(|| {
            results
                .suite
                .servers
                .iter()
                .find(|row| row.name == sweep.value)
        })
        .flatten()
}

/// What `row`'s server's h3 does, as the run's probe found it on
/// `profile`, or else on the first profile it was probed on.
pub(crate) fn h3_features<'a>(
    row: &ServerRow,
    results: &'a Results,
    profile: Option<&str>,
) -> Option<&'a H3Features> {
    let probed = probed_on_each_profile(row, results);
    (profile.and_then(|wanted| probed.iter().find(|(on, _)| *on == wanted)))
        .or(probed.first())
        .map(|(_, features)| *features)
}

/// What the probe found of `row`'s h3, on each profile it ran on.
pub(crate) fn probed_on_each_profile<'a>(
    row: &ServerRow,
    results: &'a Results,
) -> Vec<(&'a str, &'a H3Features)> {
    results
        .cells
        .iter()
        .filter(|cell| {
            cell.sweep
                .as_ref()
                .is_some_and(|s| s.tunable == "server" && s.value == row.name)
        })
        .filter_map(|cell| Some((cell.profile.as_str(), cell.h3_features.as_ref()?)))
        .collect()
}

/// The run's protocols that `row`'s server does not offer.
pub(crate) fn not_offered<'a>(row: &ServerRow, results: &'a Results) -> Vec<&'a str> {
    results
        .suite
        .protocols
        .iter()
        .filter(|name| {
            Proto::ALL
                .iter()
                .any(|p| p.name() == name.as_str() && !row.offers.contains(p))
        })
        .map(String::as_str)
        .collect()
}

/// Consecutive cells of one workload (and mode), under their heading.
fn workload_groups<'a>(block: &[&'a CellSummary]) -> Vec<(String, Vec<&'a CellSummary>)> {
    let mut groups: Vec<(String, Vec<&CellSummary>)> = Vec::new();
    for summary in block {
        let direction = if summary.higher_is_better {
            "higher"
        } else {
            "lower"
        };
        let heading = format!(
            "{}: {} ({}, {direction} is better)",
            summary.key.workload_label(),
            summary.measure(),
            summary.unit
        );
        match groups.last_mut() {
            Some((last, cells)) if *last == heading => cells.push(summary),
            _ => groups.push((heading, vec![summary])),
        }
    }
    groups
}

/// One line per protocol with a difference from the baseline, e.g.
/// `h3 vs h2: +4.1 % [-8.2, +15.3] no clear difference`.
fn baseline_lines(cells: &[&CellSummary]) -> String {
    cells
        .iter()
        .filter_map(|summary| {
            let difference = summary.vs_baseline.as_ref()?;
            let reference = summary.reference.as_deref()?;
            Some(wrapped(
                COLUMN_GAP as u16,
                &format!(
                    "{} vs {reference}: {}",
                    summary.key.protocol,
                    difference.describe()
                ),
            ))
        })
        .collect()
}

/// The server's CPU per unit of work, per protocol, where it is known:
/// per request for request-rate cells, per GB for downloads.
fn server_cpu_line(cells: &[&CellSummary]) -> String {
    cpu_line(cells, "server CPU", |summary| {
        (
            summary.server_cpu_per_request_us,
            summary.server_cpu_per_gb_s,
        )
    })
}

/// The same for the client (its whole run).
fn client_cpu_line(cells: &[&CellSummary]) -> String {
    cpu_line(cells, "client CPU (whole run)", |summary| {
        (
            summary.client_cpu_per_request_us,
            summary.client_cpu_per_gb_s,
        )
    })
}

/// `label: h2 1.27 s/GB, h3 2.17 s/GB`, from each cell's (per request,
/// per GB) figures; empty when no cell has its figure.
fn cpu_line(
    cells: &[&CellSummary],
    label: &str,
    per_unit: impl Fn(&CellSummary) -> (Option<f64>, Option<f64>),
) -> String {
    let figures: Vec<String> = cells
        .iter()
        .filter_map(|summary| {
            let (per_request_us, per_gb_s) = per_unit(summary);
            let figure = match summary.kind? {
                WorkloadKind::Rps => format!("{:.1} us/request", per_request_us?),
                WorkloadKind::Download => format!("{:.2} s/GB", per_gb_s?),
                WorkloadKind::Ttfb | WorkloadKind::Page | WorkloadKind::Conformance => return None,
            };
            Some(format!("{} {figure}", summary.key.protocol))
        })
        .collect();
    labelled_line(label, &figures)
}

/// `label: a, b`, wrapped under the rows; empty without figures.
fn labelled_line(label: &str, figures: &[String]) -> String {
    if figures.is_empty() {
        return String::new();
    }
    wrapped(
        COLUMN_GAP as u16,
        &format!("{label}: {}", figures.join(", ")),
    )
}

/// What each protocol put on the link, where it is known: per request for
/// request-rate and page cells, over the body and resent per MB for
/// downloads, e.g. `on the wire: h2 1,208 B/request (174 B beyond the
/// body), h3 ...`.
fn wire_line(cells: &[&CellSummary]) -> String {
    let figures: Vec<String> = cells
        .iter()
        .filter_map(|summary| {
            let wire = summary.wire?;
            let figure = match summary.kind? {
                WorkloadKind::Rps => format!(
                    "{:.0} B/request ({:.0} B beyond the body)",
                    wire.bytes_per_request()?,
                    wire.overhead_per_request()?
                ),
                WorkloadKind::Page => {
                    let per_request = wire.bytes_per_request()?;
                    let per_load = summary.page_requests.map_or(String::new(), |requests| {
                        format!(", {:.1} kB per page load", per_request * requests / 1e3)
                    });
                    format!(
                        "{per_request:.0} B/request ({:.0} B beyond the body){per_load}",
                        wire.overhead_per_request()?
                    )
                }
                WorkloadKind::Download => format!(
                    "+{:.2} % over the body, {:.0} B resent per MB",
                    wire.overhead_share()? * 100.0,
                    wire.resent_per_mb()?
                ),
                WorkloadKind::Ttfb | WorkloadKind::Conformance => return None,
            };
            Some(format!("{} {figure}", summary.key.protocol))
        })
        .collect();
    labelled_line("on the wire (IP bytes both ways)", &figures)
}

/// The header blocks each protocol's requests and responses carried, a
/// connection's first apart from later ones: a dynamic table pays off
/// only after the first.
fn header_block_line(cells: &[&CellSummary]) -> String {
    let bytes = |tally: BlockTally| tally.mean().map_or("-".to_string(), |b| format!("{b:.0}"));
    let figures: Vec<String> = cells
        .iter()
        .filter_map(|summary| {
            let blocks = summary.header_blocks?;
            Some(format!(
                "{} {}/{} ({}/{})",
                summary.key.protocol,
                bytes(blocks.request_first),
                bytes(blocks.request_later),
                bytes(blocks.response_first),
                bytes(blocks.response_later)
            ))
        })
        .collect();
    labelled_line(
        "header block bytes, requests first/later on a connection (responses)",
        &figures,
    )
}

/// Which compression made the header blocks, given once per profile where
/// h3lab's server counted them (docs/costs.md has the measurements).
pub(crate) const HEADER_COMPRESSION: &str = "header compression: h1 none (text); h2 HPACK with a \
    dynamic table, but h3lab's h2 (the h2 crate) never indexes cookie or :path, so it \
    sends them whole every time; h3 QPACK with the static table only: h3lab's server \
    offers no dynamic table, so no client can use one (docs/costs.md: stacks that use \
    their tables send the cookie once per connection)";

/// The connections a page load opened, per protocol (the median over the
/// loads), and per host when the page has several, e.g. `connections per
/// page load (median): h1 12 (www.site.test 6, cdn.site.test 6), h2 2 ...`.
fn connections_line(cells: &[&CellSummary]) -> String {
    let figures: Vec<String> = cells
        .iter()
        .filter_map(|summary| {
            let connections = summary.page_connections.as_ref()?;
            let hosts = match connections.by_host.len() {
                0 | 1 => String::new(),
                _ => {
                    let each: Vec<String> = (connections.by_host.iter())
                        .map(|(host, count)| format!("{host} {count}"))
                        .collect();
                    format!(" ({})", each.join(", "))
                }
            };
            Some(format!(
                "{} {}{hosts}",
                summary.key.protocol, connections.all
            ))
        })
        .collect();
    labelled_line("connections per page load (median)", &figures)
}

/// Under page cells whose loads went on without resources that failed
/// (a beacon, an image): how many each protocol lost, over all its loads,
/// since its times are of a page without them.
fn resources_gone_without_line(cells: &[&CellSummary]) -> String {
    let page = |s: &&&CellSummary| s.kind == Some(WorkloadKind::Page);
    let lost: Vec<String> = (cells.iter().filter(page))
        .map(|s| format!("{} {}", s.key.protocol, s.request_errors))
        .collect();
    if cells.iter().filter(page).all(|s| s.request_errors == 0) {
        return String::new();
    }
    wrapped(
        COLUMN_GAP as u16,
        &format!(
            "! resources the loads went on without (failed, neither the document nor \
             render-blocking; listed in results.json): {}",
            lost.join(", ")
        ),
    )
}

/// One line per marked cell, e.g. `! h3: server at 0.97 cores (repetition
/// 1): the figure may be the CPU's, not the protocol's`.
fn bottleneck_lines(cells: &[&CellSummary]) -> String {
    cells
        .iter()
        .filter(|summary| !summary.bottlenecks.is_empty())
        .map(|summary| {
            let named: Vec<String> = summary.bottlenecks.iter().map(|b| b.describe()).collect();
            wrapped(
                COLUMN_GAP as u16,
                &format!(
                    "! {}: {}: the figure may be the CPU's, not the protocol's",
                    summary.key.protocol,
                    named.join(", ")
                ),
            )
        })
        .collect()
}

pub(crate) fn column_widths<'a>(rows: impl Iterator<Item = &'a Vec<String>>) -> Vec<u16> {
    let mut widths: Vec<u16> = Vec::new();
    for row in rows {
        widths.resize(widths.len().max(row.len()), 0);
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count() as u16);
        }
    }
    widths
}

/// Rows laid out with fixed column widths; columns from `first_right` on
/// are right-aligned (numbers), the ones before left-aligned (names).
pub(crate) fn aligned(rows: Vec<Vec<String>>, widths: &[u16], first_right: usize) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .remove_style(TableComponent::VerticalLines)
        .remove_style(TableComponent::LeftBorder)
        .remove_style(TableComponent::RightBorder)
        .set_content_arrangement(ContentArrangement::Disabled)
        .add_rows(rows)
        // Absolute widths include the padding.
        .set_constraints(
            widths
                .iter()
                .map(|w| ColumnConstraint::Absolute(Width::Fixed(w + COLUMN_GAP as u16))),
        );
    for (index, column) in table.column_iter_mut().enumerate() {
        column.set_padding((COLUMN_GAP as u16, 0));
        if index >= first_right {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
        .lines()
        .map(|line| line.trim_end().to_string() + "\n")
        .collect()
}

/// A horizontal rule as wide as aligned rows of these widths.
pub(crate) fn rule(widths: &[u16]) -> String {
    let width: usize = widths.iter().map(|w| usize::from(*w) + COLUMN_GAP).sum();
    format!("{}\n", "─".repeat(width))
}

fn row(summary: &CellSummary) -> Vec<String> {
    let stats = summary.stats.as_ref();
    let baseline = if summary.is_baseline { "*" } else { "" };
    let bottleneck = if summary.bottlenecks.is_empty() {
        ""
    } else {
        "!"
    };
    let protocol = format!("{}{baseline}{bottleneck}", summary.key.protocol);
    vec![
        protocol,
        stats.map_or(0, |s| s.n).to_string(),
        summary.failed().to_string(),
        median_with_rtts(summary),
        maybe(stats.map(|s| s.p90)),
        maybe(stats.map(|s| s.p99)),
        maybe(stats.map(|s| s.min)),
        maybe(stats.map(|s| s.max)),
        fraction_as_percent(stats.and_then(|s| s.cv)),
        maybe(summary.latency.as_ref().map(|l| l.p99_ms)),
    ]
}

/// The median, and for ttfb cells its size in path round trips.
fn median_with_rtts(summary: &CellSummary) -> String {
    if summary.stats.is_none() && summary.not_offered.is_some() {
        return "not offered".to_string();
    }
    let median = maybe(summary.stats.as_ref().map(|s| s.median));
    match summary.median_rtts() {
        Some(rtts) => format!("{median} ({rtts:.1} RTT)"),
        None => median,
    }
}

fn failure_lines(block: &[&CellSummary]) -> String {
    let mut out = String::new();
    for summary in block {
        let cell = format!("{} {}", summary.key.protocol, summary.key.workload_label());
        for (repetitions, error) in summary.failures_by_error() {
            let plural = if repetitions.len() > 1 { "s" } else { "" };
            out.push_str(&wrapped(
                2,
                &format!(
                    "FAILED {cell} repetition{plural} {}: {error}",
                    list_repetitions(&repetitions)
                ),
            ));
        }
        if let Some(reason) = &summary.not_offered {
            out.push_str(&wrapped(2, &format!("NOT OFFERED {cell}: {reason}")));
        }
        if !summary.interrupted.is_empty() {
            let plural = if summary.interrupted.len() > 1 {
                "s"
            } else {
                ""
            };
            out.push_str(&wrapped(
                2,
                &format!(
                    "INTERRUPTED {cell} repetition{plural} {}: cut short by Ctrl-C, not measured",
                    list_repetitions(&summary.interrupted)
                ),
            ));
        }
        for problem in &summary.problems {
            out.push_str(&wrapped(2, &format!("note {cell}: {problem}")));
        }
    }
    out
}

/// What a claim with no published figure says in place of a comparison.
pub(crate) const NOTHING_PUBLISHED: &str =
    "no figure published, so nothing to compare: ours are in the table above";

fn claims_block(results: &Results, summaries: &[CellSummary]) -> String {
    let comparisons = compare_claims(&results.studies, summaries, &results.suite.baseline);
    if comparisons.is_empty() {
        return String::new();
    }
    let mut out = String::from("\npublished vs ours\n");
    for comparison in &comparisons {
        let claim = comparison.claim;
        let mode = claim
            .mode
            .as_ref()
            .map_or_else(String::new, |m| format!(" ({m})"));
        out.push_str(&wrapped(
            2,
            &format!(
                "{} ({}; ours: {} {}{mode}):",
                claim.label, claim.study, claim.profile, claim.workload
            ),
        ));
        for pair in &comparison.pairs {
            out.push_str(&wrapped(4, &pair.describe()));
        }
        if comparison.pairs.is_empty() {
            out.push_str(&wrapped(4, NOTHING_PUBLISHED));
        }
        if comparison.differs() {
            out.push_str(&wrapped(4, &format!("why it may differ: {}", claim.caveat)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::format::TABLE_WIDTH;
    use h3lab_results::bench::{HeaderBlocks, Loss, LossDirection, PathSettings, Rate};
    use h3lab_results::Proto;

    #[test]
    fn a_cell_near_a_full_core_is_marked_and_names_what_ran_short() {
        let mut results = fixture::results();
        for cell in results.cells.iter_mut() {
            cell.cpu.interval_s = Some(2.0);
            cell.cpu.machine_busy = Some(0.5);
            cell.cpu.server_interval_s = Some(match cell.protocol {
                Proto::H3 if cell.profile == "broadband" && cell.workload == "rps-1k" => 1.96,
                _ => 0.4,
            });
        }
        let text = terminal_table(&results);
        assert!(text.contains("\n  h3!  "), "{text}");
        assert!(
            text.contains("! h3: server at 0.98 cores (repetitions"),
            "{text}"
        );
        assert_eq!(
            text.matches("the figure may be the CPU's").count(),
            1,
            "{text}"
        );
        let page = crate::html::render_html(&results);
        assert!(page.contains("CPU-bound?"), "{page}");
        assert!(page.contains("server at 0.98 cores"), "{page}");
    }

    /// A page the loads showed without some resources is marked with how
    /// many each protocol went without; none lost, no line.
    #[test]
    fn page_cells_that_went_on_without_resources_say_how_many() {
        let mut results = fixture::with_pages();
        let marked = "! resources the loads went on without";
        assert!(!terminal_table(&results).contains(marked));
        for cell in results.cells.iter_mut() {
            if cell.workload == "page-small" && cell.profile == "broadband" {
                cell.errors = if cell.protocol == Proto::H3 { 4 } else { 0 };
            }
        }
        let text = terminal_table(&results);
        assert_eq!(text.matches(marked).count(), 1, "{text}");
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains("listed in results.json): h"), "{text}");
        assert!(words.contains(", h3 4"), "{text}");
        let page = crate::html::render_html(&results);
        assert!(
            page.contains("4 resources failed; the loads went on without them"),
            "{page}"
        );
    }

    #[test]
    fn an_edges_origin_wait_is_shown_beside_the_latency_only_where_it_was_said() {
        let mut results = fixture::results();
        assert!(!terminal_table(&results).contains("where the time went"));
        let mut wait = h3lab_results::Micros::default();
        wait.record(std::time::Duration::from_millis(80));
        let leg = h3lab_results::load::OriginLeg {
            responses: 1000,
            origin_wait_us: wait.clone(),
            client_leg_us: wait,
        };
        for cell in results.cells.iter_mut().filter(|cell| {
            cell.profile == "broadband"
                && cell.protocol == Proto::H3
                && cell.latency_histogram.is_some()
        }) {
            cell.client_report = Some(crate::fixture::load_report(Some(leg.clone())));
        }
        let text = terminal_table(&results);
        let block = text.split("where the time went").nth(1).expect(&text);
        assert!(block.contains("broadband rps-1k h3"), "{block}");
        assert!(block.contains("origin wait p50 80 / p99 80 ms"), "{block}");
        assert!(!block.contains(" h2"), "only the cells that said: {block}");
    }

    #[test]
    fn server_and_client_cpu_lines_give_each_protocol_per_request() {
        let mut results = fixture::results();
        for cell in results.cells.iter_mut() {
            cell.cpu.server_interval_s = Some(0.25);
        }
        let text = terminal_table(&results);
        // 5 × 0.25 s server and 5 × 1.0 s client over 5 × 1000 requests.
        assert!(
            text.contains(
                "server CPU: h1 250.0 us/request, h2 250.0 us/request, h3 250.0 us/request"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "client CPU (whole run): h1 1000.0 us/request, h2 1000.0 us/request, h3 1000.0 us/request"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_wire_line_gives_each_protocols_bytes_per_request_beyond_the_body() {
        let mut results = fixture::results();
        for cell in results.cells.iter_mut() {
            let headers = if cell.protocol == h3lab_results::Proto::H1 {
                300
            } else {
                100
            };
            cell.wire = Some(h3lab_results::bench::WireCost {
                up_bytes: 1000 * headers,
                down_bytes: 1000 * (1000 + headers),
                requests: 1000,
                body_bytes: 1000 * 1000,
                ..Default::default()
            });
        }
        let text = terminal_table(&results);
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains(
                "on the wire (IP bytes both ways): h1 1600 B/request (600 B beyond the body), \
                 h2 1200 B/request (200 B beyond the body)"
            ),
            "{text}"
        );
    }

    #[test]
    fn header_blocks_are_given_first_and_later_with_the_compression_that_made_them() {
        let mut results = fixture::results();
        let tally = |blocks, bytes| BlockTally { blocks, bytes };
        for cell in results.cells.iter_mut() {
            cell.header_blocks = match cell.protocol {
                h3lab_results::Proto::H1 => None,
                _ => Some(HeaderBlocks {
                    request_first: tally(1, 1141),
                    request_later: tally(9, 7533),
                    response_first: tally(1, 84),
                    response_later: tally(0, 0),
                }),
            };
        }
        let text = terminal_table(&results);
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains(
                "header block bytes, requests first/later on a connection (responses): \
                 h2 1141/837 (84/-)"
            ),
            "{text}"
        );
        assert!(
            words.contains("h3 QPACK with the static table only"),
            "{text}"
        );
        assert!(!words.contains("h1 1141/"), "h1 has no counts: {text}");
    }

    #[test]
    fn page_cells_give_the_connections_a_load_opened_in_all_and_per_host() {
        let mut results = fixture::with_pages();
        // The h2 cells' image comes from a CDN on a second connection.
        for cell in results
            .cells
            .iter_mut()
            .filter(|c| c.kind == WorkloadKind::Page)
        {
            if cell.protocol != h3lab_results::Proto::H2 {
                continue;
            }
            let image = &mut fixture::page_mut(cell).loads[0].resources[4];
            image.url = "https://cdn.site.test/img/hero.jpg".into();
            image.connection = Some(2);
        }
        let text = terminal_table(&results);
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains(
                "connections per page load (median): h2 2 (cdn.site.test 1, site.test 1), h3 1"
            ),
            "{text}"
        );
    }

    #[test]
    fn page_cells_give_the_wire_bytes_per_page_load() {
        let mut results = fixture::with_pages();
        let mut resources = 0;
        for cell in (results.cells.iter_mut()).filter(|c| c.kind == WorkloadKind::Page) {
            resources = fixture::page_mut(cell).loads[0].resources.len();
            cell.wire = Some(h3lab_results::bench::WireCost {
                up_bytes: 20_000,
                down_bytes: 80_000,
                requests: 50,
                body_bytes: 60_000,
                ..Default::default()
            });
        }
        let text = terminal_table(&results);
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let per_load = format!("{:.1} kB per page load", 2000.0 * resources as f64 / 1e3);
        assert!(
            words.contains(&format!(
                "h2 2000 B/request (800 B beyond the body), {per_load}"
            )),
            "{text}"
        );
    }

    #[test]
    fn a_server_rows_stack_and_the_protocols_it_does_not_offer_are_named() {
        let mut results = fixture::results();
        results.suite.protocols = ["h1", "h2", "h3"].map(String::from).to_vec();
        let row = |name: &str, stack: Option<&str>, offers: &[Proto]| ServerRow {
            name: name.into(),
            stack: stack.map(String::from),
            offers: offers.to_vec(),
        };
        results.suite.servers = vec![
            row("bun", Some("lsquic"), &[Proto::H1, Proto::H3]),
            row("nginx", None, &[Proto::H1, Proto::H2]),
            row("odd", None, &[Proto::H3]),
        ];
        results.cells.clear();
        for (server, protocols) in [
            ("bun", ["h1", "h3"]),
            ("nginx", ["h1", "h2"]),
            ("odd", ["h3", "h3"]),
        ] {
            for protocol in protocols {
                let mut cell = fixture::rps_record("broadband", protocol, 0, 100.0, None);
                cell.sweep = Some(h3lab_results::bench::SweptSetting {
                    tunable: "server".into(),
                    value: server.into(),
                });
                cell.workload = format!("rps-1k [server={server}]");
                if server == "bun" && protocol == "h3" {
                    let cubic = h3lab_results::offer::LossWindows {
                        before_bytes: 100_000,
                        after_bytes: 70_000,
                    };
                    cell.h3_features = Some(H3Features {
                        loss_windows: vec![cubic; 3],
                        ..H3Features::default()
                    });
                }
                results.cells.push(cell);
            }
        }
        let text = terminal_table(&results);
        assert!(
            text.contains("  bun: QUIC stack lsquic; h2 not offered; server (no header),"),
            "{text}"
        );
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("after one loss CUBIC-like (x0.70)"),
            "{text}"
        );
        assert!(text.contains("  nginx: h3 not offered\n"), "{text}");
        assert!(
            text.contains("  odd: QUIC stack not given; h1, h2 not offered\n"),
            "{text}"
        );
        let html = crate::html::render_html(&results);
        assert!(html.contains("Servers compared"), "{html}");
        assert!(html.contains("<td>lsquic</td>"), "{html}");
        assert_eq!(html.matches("<td>not offered</td>").count(), 4, "{html}");
        assert!(
            html.contains("<td>broadband: CUBIC-like (x0.70)</td>"),
            "{html}"
        );
    }

    #[test]
    fn a_profile_header_names_its_loss_and_direction() {
        let mut results = fixture::results();
        for cell in results.cells.iter_mut().filter(|c| c.profile == "cellular") {
            let mut link = crate::fixture::link((0, 0), (0, 0));
            link.settings = Some(PathSettings {
                rtt_ns: 50_000_000,
                down: Rate::Unlimited,
                up: Rate::Unlimited,
                loss: Loss::Bernoulli { p: 0.01 },
                loss_direction: LossDirection::Down,
                jitter: None,
                queue: None,
                reorder: None,
                duplicate: 0.0,
                udp: None,
                seed: 1,
            });
            cell.link = Some(link);
        }
        let text = terminal_table(&results);
        assert!(
            text.contains("cellular (path RTT 50 ms, loss 1 % down)"),
            "{text}"
        );
        assert!(text.contains("broadband (path RTT 20 ms)\n"), "{text}");
        let page = crate::html::render_html(&results);
        assert!(page.contains(" · loss 1 % down"), "{page}");
    }

    #[test]
    fn fits_in_100_columns_and_shows_failures() {
        let text = terminal_table(&fixture::results());
        for line in text.lines() {
            assert!(
                line.chars().count() <= TABLE_WIDTH as usize,
                "too wide: {line:?}"
            );
        }
        assert!(text.contains("broadband (path RTT 20 ms)"));
        assert!(text.contains("cellular (path RTT 50 ms)"));
        assert!(text.contains("h2*"));
        assert!(text.contains(
            "vs h2: difference of the medians [95 % interval], called better or worse only"
        ));
        // h3 [250, 240, 260, 245, 255] against h2 [200, 210, 220, 205, 215]:
        // from 240 / 215 to 260 / 205; h1 [100, 110, 120, 105, 115]: from
        // 100 / 210 to 115 / 200 (the third smallest and largest ratios).
        // What each detects is the interval's larger half-width.
        assert!(
            text.contains("\n  h3 vs h2: +19.0 % [+11.6, +26.8] better (detects ±7.8 %)\n"),
            "{text}"
        );
        assert!(
            text.contains("\n  h1 vs h2: -47.6 % [-52.4, -42.5] worse (detects ±5.1 %)\n"),
            "{text}"
        );
        assert!(
            !text.contains("h2 vs h2"),
            "the baseline has no difference line"
        );
        assert!(text.contains("FAILED h1 rps-1k repetition 1: connection refused"));
        assert!(text.contains("direction DIFFERS"));
        assert!(text.contains("why it may differ: ttfb caveat"));
        assert!(!text.contains("INTERRUPTED"));
    }

    #[test]
    fn a_difference_inside_the_noise_says_so() {
        let text = terminal_table(&fixture::with_h3_near_h2());
        // h3 [215, 205, 225, 210, 220] against h2 [200, 210, 220, 205, 215]:
        // from 210 / 220 to 225 / 205.
        assert!(
            text.contains(
                "\n  h3 vs h2: +2.4 % [-4.5, +9.8] no clear difference (detects ±7.4 %)\n"
            ),
            "{text}"
        );
        assert!(!text.contains("h3 vs h2: +2.4 % [-4.5, +9.8] better"));
    }

    #[test]
    fn a_claim_without_a_figure_says_there_is_nothing_to_compare() {
        let mut results = fixture::results();
        let mut claim = results.studies[0].clone();
        claim.label = "h3 faster, by more than elsewhere (no figure published)".into();
        claim.published.clear();
        results.studies = vec![claim];
        let text = terminal_table(&results);
        let after = text.split("(no figure published)").nth(1).unwrap();
        assert!(
            after.contains(NOTHING_PUBLISHED.split(',').next().unwrap()),
            "{text}"
        );
        assert!(crate::html::render_html(&results).contains(NOTHING_PUBLISHED));
    }

    #[test]
    fn says_when_interrupted() {
        let mut results = fixture::results();
        results.interrupted = true;
        assert!(terminal_table(&results).contains("INTERRUPTED"));
    }

    #[test]
    fn page_cells_get_rows_named_page_load() {
        let text = terminal_table(&fixture::with_pages());
        assert!(
            text.contains("page-small: page load (ms, lower is better)"),
            "{text}"
        );
        assert!(text.contains("rps-1k: request rate (req/s, higher is better)"));
        let rows: Vec<&str> = text
            .lines()
            .skip_while(|line| !line.starts_with("page-small"))
            .skip(1)
            .take(3)
            .collect();
        // broadband h2 (baseline): n 20, median 395; h3 median 297.5 is
        // (297.5 − 395) / 395 = −24.7 % of it, but from one repetition each.
        assert!(
            rows[0].trim_start().starts_with("h2*") && rows[0].contains("395.0"),
            "{rows:?}"
        );
        assert!(rows[1].contains("297.5"), "{rows:?}");
        assert_eq!(
            rows[2],
            "  h3 vs h2: -24.7 % (too few repetitions: 1 and 1 repetitions, a call needs 4 each)"
        );
        assert!(text
            .lines()
            .all(|l| l.chars().count() <= TABLE_WIDTH as usize));
        assert!(text.contains("median page load, lossy mobile"));
    }
}
