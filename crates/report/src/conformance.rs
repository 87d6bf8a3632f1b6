//! Conformance cells (`kind = "conformance"`): the report's view of the
//! HTTP/3 conformance suite across servers. One table per workload and
//! profile, cases as rows and servers as columns (the sweep's values in
//! the order they ran), each cell what that server did with that case over
//! every repetition. Nothing here writes markup.

use h3lab_results::bench::{CellRecord, Outcome, Results};
use h3lab_results::conformance::{CaseResult, ConformanceReport, Observed, Verdict};
use h3lab_results::WorkloadKind;

use crate::format::wrapped;

/// One conformance workload on one profile.
pub(crate) struct ConformanceTable {
    /// The workload's name, without a sweep's setting.
    pub(crate) workload: String,
    pub(crate) profile: String,
    /// One per server, in the order they ran.
    pub(crate) servers: Vec<ServerColumn>,
    /// One per case, in the suite's order.
    pub(crate) cases: Vec<CaseRow>,
    /// What the suite does not check, from its reports.
    pub(crate) not_covered: Vec<String>,
}

/// A server's column.
pub(crate) struct ServerColumn {
    /// The sweep's value (`caddy`), or `server` without a sweep.
    pub(crate) name: String,
    pub(crate) tally: Tally,
}

/// How a server's repetitions went.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tally {
    /// `failed` cases failed in at least one of `reports` reports.
    Reported { reports: usize, failed: usize },
    /// No repetition gave a report: why the first did not.
    NoReport { why: String },
}

/// A case's row.
pub(crate) struct CaseRow {
    pub(crate) id: String,
    pub(crate) title: String,
    pub(crate) rfc: String,
    pub(crate) must: String,
    pub(crate) expected: String,
    /// One per server, in column order.
    pub(crate) cells: Vec<CaseCell>,
}

/// What one server did with one case over its reports.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CaseCell {
    /// It passed every time.
    Pass,
    /// It failed every time; what it did the first time.
    Fail { observed: Observed },
    /// It passed some runs and failed others; what it did when it failed.
    Mixed {
        passed: usize,
        runs: usize,
        observed: Observed,
    },
    /// No verdict: the case did not run (why), or ran only without one.
    Unknown { why: String },
    /// The server has no report with this case.
    Absent,
}

impl CaseCell {
    /// Whether the server failed the case at least once.
    pub(crate) fn failed(&self) -> bool {
        matches!(self, CaseCell::Fail { .. } | CaseCell::Mixed { .. })
    }

    /// In a few words, for a table cell (`reset H3_FRAME_UNEXPECTED`,
    /// `failed 1 of 2: timed out`); `Display` says it in full.
    pub(crate) fn short(&self) -> String {
        match self {
            CaseCell::Fail { observed } => observed.short(),
            CaseCell::Mixed {
                passed,
                runs,
                observed,
            } => format!("failed {} of {runs}: {}", runs - passed, observed.short()),
            other => other.to_string(),
        }
    }
}

/// The terminal's conformance block: per table, each server's tally and
/// the cases it failed, with what it did.
pub(crate) fn terminal_lines(results: &Results) -> String {
    let mut out = String::new();
    for table in conformance_tables(results) {
        out.push_str(&format!(
            "\nHTTP/3 conformance: {} on {}, {} cases (docs/conformance.md)\n",
            table.workload,
            table.profile,
            table.cases.len()
        ));
        for (column, server) in table.servers.iter().enumerate() {
            let tally = match &server.tally {
                Tally::Reported { failed, .. } => format!("{}: {failed} failed", server.name),
                Tally::NoReport { why } => format!("{}: no report: {why}", server.name),
            };
            out.push_str(&wrapped(2, &tally));
            for row in (table.cases.iter()).filter(|row| row.cells[column].failed()) {
                let line = format!("{}: {}", row.id, row.cells[column]);
                out.push_str(&wrapped(4, &line));
            }
        }
    }
    out
}

impl std::fmt::Display for CaseCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaseCell::Pass => write!(f, "pass"),
            CaseCell::Fail { observed } => write!(f, "{observed}"),
            CaseCell::Mixed {
                passed,
                runs,
                observed,
            } => write!(f, "passed {passed} of {runs}; otherwise {observed}"),
            CaseCell::Unknown { .. } => write!(f, "?"),
            CaseCell::Absent => write!(f, "-"),
        }
    }
}

/// Every conformance table of `results`, in the order their cells ran.
pub(crate) fn conformance_tables(results: &Results) -> Vec<ConformanceTable> {
    group_cells(results).into_iter().map(table_of).collect()
}

/// A table's cells before they are judged: one column of cells per server.
struct TableCells<'a> {
    workload: String,
    profile: String,
    columns: Vec<(String, Vec<&'a CellRecord>)>,
}

/// The conformance cells by (workload, profile), then by server.
fn group_cells(results: &Results) -> Vec<TableCells<'_>> {
    let mut groups: Vec<TableCells> = Vec::new();
    for cell in (results.cells.iter()).filter(|cell| cell.kind == WorkloadKind::Conformance) {
        let workload = unswept_workload(cell);
        let at = (groups.iter())
            .position(|group| group.workload == workload && group.profile == cell.profile)
            .unwrap_or_else(|| {
                groups.push(TableCells {
                    workload,
                    profile: cell.profile.clone(),
                    columns: Vec::new(),
                });
                groups.len() - 1
            });
        let columns = &mut groups[at].columns;
        let server = server_of(cell);
        match columns.iter_mut().find(|(name, _)| *name == server) {
            Some((_, cells)) => cells.push(cell),
            None => columns.push((server, vec![cell])),
        }
    }
    groups
}

/// The rows and each column's tally, from each server's cells.
fn table_of(group: TableCells) -> ConformanceTable {
    let reports: Vec<Vec<&ConformanceReport>> = (group.columns.iter())
        .map(|(_, cells)| cells.iter().filter_map(|cell| report_of(cell)).collect())
        .collect();
    let mut cases: Vec<CaseRow> = Vec::new();
    let mut not_covered: Vec<String> = Vec::new();
    for report in reports.iter().flatten() {
        for case in &report.cases {
            if !cases.iter().any(|row| row.id == case.id) {
                cases.push(row_of(case));
            }
        }
        for line in &report.not_covered {
            if !not_covered.contains(line) {
                not_covered.push(line.clone());
            }
        }
    }
    for row in &mut cases {
        row.cells = (reports.iter())
            .map(|reports| cell_of(&row.id, reports))
            .collect();
    }
    let servers = (group.columns.into_iter().zip(&reports).enumerate())
        .map(|(column, ((name, cells), reports))| {
            let tally = match reports.len() {
                0 => Tally::NoReport {
                    why: why_no_report(&cells),
                },
                reports => Tally::Reported {
                    reports,
                    failed: cases
                        .iter()
                        .filter(|row| row.cells[column].failed())
                        .count(),
                },
            };
            ServerColumn { name, tally }
        })
        .collect();
    ConformanceTable {
        workload: group.workload,
        profile: group.profile,
        servers,
        cases,
        not_covered,
    }
}

/// Why a server's cells gave no report: the first one's failure.
fn why_no_report(cells: &[&CellRecord]) -> String {
    let first_failure = cells.iter().find_map(|cell| match &cell.outcome {
        Outcome::Ok => None,
        Outcome::Failed { error } => Some(error.clone()),
        Outcome::Interrupted => Some("interrupted (Ctrl-C)".to_string()),
        Outcome::NotOffered { reason } => Some(format!("not offered: {reason}")),
    });
    first_failure.unwrap_or_else(|| "the client wrote no report".to_string())
}

fn row_of(case: &CaseResult) -> CaseRow {
    CaseRow {
        id: case.id.clone(),
        title: case.title.clone(),
        rfc: case.rfc.clone(),
        must: case.must.clone(),
        expected: case.expected.to_string(),
        cells: Vec::new(),
    }
}

/// What one server did with case `id` over its reports.
fn cell_of(id: &str, reports: &[&ConformanceReport]) -> CaseCell {
    let results: Vec<&CaseResult> = (reports.iter())
        .filter_map(|report| report.cases.iter().find(|case| case.id == id))
        .collect();
    let Some(first) = results.first() else {
        return CaseCell::Absent;
    };
    let judged: Vec<&&CaseResult> = (results.iter())
        .filter(|case| case.verdict != Verdict::Unknown)
        .collect();
    let passed = judged.iter().filter(|c| c.verdict == Verdict::Pass).count();
    let first_failure = judged.iter().find(|c| c.verdict == Verdict::Fail);
    match first_failure {
        None if judged.is_empty() => CaseCell::Unknown {
            why: first.observed.to_string(),
        },
        None => CaseCell::Pass,
        Some(failure) if passed == 0 => CaseCell::Fail {
            observed: failure.observed.clone(),
        },
        Some(failure) => CaseCell::Mixed {
            passed,
            runs: judged.len(),
            observed: failure.observed.clone(),
        },
    }
}

fn report_of(cell: &CellRecord) -> Option<&ConformanceReport> {
    match cell.outcome {
        Outcome::Ok => cell.client_report.as_ref()?.conformance(),
        _ => None,
    }
}

/// The server a cell ran against: the sweep's value, or the suite's one.
fn server_of(cell: &CellRecord) -> String {
    cell.sweep
        .as_ref()
        .map_or_else(|| "server".to_string(), |sweep| sweep.value.clone())
}

/// `conformance` of `conformance [server=caddy]`.
fn unswept_workload(cell: &CellRecord) -> String {
    let suffix = cell.sweep.as_ref().map(|sweep| sweep.row_label(""));
    suffix
        .and_then(|suffix| cell.workload.strip_suffix(&suffix))
        .unwrap_or(&cell.workload)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{conformance_case as case, conformance_record as record, results};

    #[test]
    fn servers_are_columns_and_cases_rows_with_each_servers_runs_merged() {
        use Verdict::{Fail, Pass, Unknown};
        let mut results = results();
        let mut broken = record("broken", 0, vec![]);
        broken.outcome = Outcome::Failed {
            error: "the client wrote no report".into(),
        };
        broken.client_report = None;
        results.cells.extend([
            record("builtin", 0, vec![case("a", Pass), case("b", Pass)]),
            record("caddy", 0, vec![case("a", Fail), case("b", Pass)]),
            record("caddy", 1, vec![case("a", Fail), case("b", Fail)]),
            record("kwik", 0, vec![case("a", Unknown), case("c", Pass)]),
            broken,
        ]);
        let tables = conformance_tables(&results);
        assert_eq!(tables.len(), 1);
        let table = &tables[0];
        assert_eq!(
            (table.workload.as_str(), table.profile.as_str()),
            ("conformance", "loopback")
        );
        let names: Vec<&str> = table.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["builtin", "caddy", "kwik", "broken"]);
        let ids: Vec<&str> = table.cases.iter().map(|row| row.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        let tallies: Vec<&Tally> = table.servers.iter().map(|s| &s.tally).collect();
        let reported = |reports, failed| Tally::Reported { reports, failed };
        let broken = Tally::NoReport {
            why: "the client wrote no report".into(),
        };
        assert_eq!(
            tallies,
            [&reported(1, 0), &reported(2, 2), &reported(1, 0), &broken]
        );
        let fail = CaseCell::Fail {
            observed: Observed::Answered { status: 200 },
        };
        assert_eq!(table.cases[0].cells[0], CaseCell::Pass);
        assert_eq!(table.cases[0].cells[1], fail);
        assert!(matches!(table.cases[0].cells[2], CaseCell::Unknown { .. }));
        assert_eq!(table.cases[0].cells[3], CaseCell::Absent);
        assert_eq!(
            table.cases[1].cells[1],
            CaseCell::Mixed {
                passed: 1,
                runs: 2,
                observed: Observed::Answered { status: 200 }
            }
        );
        assert_eq!(table.cases[2].cells[0], CaseCell::Absent);
        assert_eq!(table.not_covered, ["QUIC transport cases"]);
    }

    #[test]
    fn results_without_conformance_cells_have_no_table() {
        assert!(conformance_tables(&results()).is_empty());
        assert_eq!(terminal_lines(&results()), "");
    }

    #[test]
    fn the_terminal_names_each_servers_failures() {
        use Verdict::{Fail, Pass};
        let mut results = results();
        results.cells.extend([
            record("builtin", 0, vec![case("a", Pass), case("b", Pass)]),
            record("caddy", 0, vec![case("a", Pass), case("b", Fail)]),
        ]);
        let text = terminal_lines(&results);
        assert!(text.contains("conformance on loopback, 2 cases"), "{text}");
        assert!(
            text.contains("  builtin: 0 failed\n  caddy: 1 failed\n"),
            "{text}"
        );
        assert!(
            text.contains("    b: answered the request with 200\n"),
            "{text}"
        );
        assert!(!text.contains("    a:"), "{text}");
    }
}
