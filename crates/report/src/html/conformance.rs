//! The "HTTP/3 conformance" section: for each conformance workload and
//! profile, cases as rows and servers as columns, a failed case showing
//! what the server did (in full, and the RFC's words, on hover). A server
//! without a report has no column; the table says why under it.

use maud::{html, Markup};

use crate::conformance::{conformance_tables, CaseCell, ConformanceTable, Tally};
use h3lab_results::bench::Results;

/// The whole section; nothing without conformance cells.
pub(super) fn conformance_section(results: &Results) -> Markup {
    let tables = conformance_tables(results);
    if tables.is_empty() {
        return html! {};
    }
    html! {
        section #conformance {
            h2 { "HTTP/3 conformance" }
            p.hint { "Each case on a new QUIC connection, sent by h3i (Cloudflare's HTTP/3 test client, on quiche; "
                "the transport parameter cases by quiche itself): "
                "what the server must do by the RFC section named, and what it did. \"pass\": what the RFC "
                "requires; a failure names what the server did instead (\"carried on\": it served the case, or "
                "ignored it, and answered the next request); \"?\": no verdict, because the case could not run or "
                "the answer neither refuses nor serves (a 405 to a malformed request), which is not a failure. "
                "\"failed 1 of 2\": failed in one run, passed in the other. Hover a case for the RFC's words, a "
                "cell for what the server did in full (docs/conformance.md)." }
            @for table in &tables { (table_card(table)) }
        }
    }
}

fn table_card(table: &ConformanceTable) -> Markup {
    let shown: Vec<(usize, usize, usize)> = (table.servers.iter().enumerate())
        .filter_map(|(column, server)| match server.tally {
            Tally::Reported { reports, failed } => Some((column, reports, failed)),
            Tally::NoReport { .. } => None,
        })
        .collect();
    let missing: Vec<(&str, &str)> = (table.servers.iter())
        .filter_map(|server| match &server.tally {
            Tally::NoReport { why } => Some((server.name.as_str(), why.as_str())),
            Tally::Reported { .. } => None,
        })
        .collect();
    html! {
        div.card.conformance {
            h3 { (table.workload) " on " (table.profile) }
            table.summary {
                thead {
                    tr {
                        th { "case" } th { "RFC" }
                        @for &(column, ..) in &shown { th { (table.servers[column].name) } }
                    }
                    tr {
                        th { "failed" } th {}
                        @for &(_, reports, failed) in &shown { (tally(reports, failed, table.cases.len())) }
                    }
                }
                tbody {
                    @for row in &table.cases {
                        tr {
                            td title=(format!("{}\nMUST: {}\nExpected: {}", row.title, row.must, row.expected)) {
                                code { (row.id) }
                            }
                            td.nowrap { (row.rfc) }
                            @for &(column, ..) in &shown { (case_cell(&row.cells[column])) }
                        }
                    }
                }
            }
            @if !missing.is_empty() {
                p.hint { "No report, so no column:" }
                ul { @for (name, why) in &missing { li.hint { (name) ": " (why) } } }
            }
            @if !table.not_covered.is_empty() {
                p.hint { "Not covered by the suite:" }
                ul { @for line in &table.not_covered { li.hint { (line) } } }
            }
        }
    }
}

/// A column's head: the cases it failed in at least one run.
fn tally(reports: usize, failed: usize, cases: usize) -> Markup {
    let title = format!("cases failed in at least one of {reports} run(s)");
    match failed {
        0 => html! { td.better title=(title) { "0 of " (cases) } },
        failed => html! { td.worse title=(title) { (failed) " of " (cases) } },
    }
}

fn case_cell(cell: &CaseCell) -> Markup {
    match cell {
        CaseCell::Pass => html! { td.better { (cell.short()) } },
        CaseCell::Fail { .. } | CaseCell::Mixed { .. } => {
            html! { td.bad title=(cell) { (cell.short()) } }
        }
        CaseCell::Unknown { why } => html! { td.muted title=(why) { (cell.short()) } },
        CaseCell::Absent => html! { td.muted { (cell.short()) } },
    }
}
