//! The "HTTP/3 conformance" section: for each conformance workload and
//! profile, cases as rows and servers as columns, a failed case showing
//! what the server did (and, on hover, what the RFC requires).

use maud::{html, Markup};

use crate::conformance::{conformance_tables, CaseCell, ConformanceTable, ServerColumn};
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
            p.hint { "Each case on a new QUIC connection, sent by h3i (Cloudflare's HTTP/3 test client, on quiche): "
                "what the server must do by the RFC section named, and what it did. \"pass\": it did what the "
                "RFC requires; a failure names what it did instead; \"?\": the case could not run, which is "
                "unknown, not a failure. A server that failed some runs of a case and passed others shows both "
                "counts. Hover a case for the RFC's words (docs/conformance.md)." }
            @for table in &tables { (table_card(table)) }
        }
    }
}

fn table_card(table: &ConformanceTable) -> Markup {
    html! {
        div.card.conformance {
            h3 { (table.workload) " on " (table.profile) }
            table.summary {
                thead {
                    tr {
                        th { "case" } th { "RFC" }
                        @for server in &table.servers { th { (server.name) } }
                    }
                    tr {
                        th { "failed" } th {}
                        @for server in &table.servers { (tally(server, table.cases.len())) }
                    }
                }
                tbody {
                    @for row in &table.cases {
                        tr {
                            td title=(format!("{}\nMUST: {}\nExpected: {}", row.title, row.must, row.expected)) {
                                code { (row.id) }
                            }
                            td.nowrap { (row.rfc) }
                            @for cell in &row.cells { (case_cell(cell)) }
                        }
                    }
                }
            }
            @if !table.not_covered.is_empty() {
                p.hint { "Not covered by the suite:" }
                ul { @for line in &table.not_covered { li.hint { (line) } } }
            }
        }
    }
}

/// A column's head: cases failed, or why it has no report.
fn tally(server: &ServerColumn, cases: usize) -> Markup {
    match (server.failed, &server.error) {
        (Some(0), _) => html! { td.better { "0 of " (cases) } },
        (Some(failed), _) => html! { td.worse title=(runs(server)) { (failed) " of " (cases) } },
        (None, Some(error)) => html! { td.error { "no report: " (error) } },
        (None, None) => html! { td.muted { "no report" } },
    }
}

fn runs(server: &ServerColumn) -> String {
    format!("cases failed in at least one of {} run(s)", server.reports)
}

fn case_cell(cell: &CaseCell) -> Markup {
    match cell {
        CaseCell::Pass => html! { td.better { (cell) } },
        CaseCell::Fail { .. } | CaseCell::Mixed { .. } => html! { td.bad { (cell) } },
        CaseCell::Unknown { why } => html! { td.muted title=(why) { (cell) } },
        CaseCell::Absent => html! { td.muted { (cell) } },
    }
}
