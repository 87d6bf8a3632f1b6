//! The `conformance` preset, narrowed to the servers CI installs (h3lab
//! serve, Caddy, nginx 1.26 and nginx 1.22, which offers no h3) and to two
//! groups of cases: one h3 cell per server that offers h3, each with the
//! suite's report, its failures as the cell's figure, and the table on the
//! terminal and on the report page.

mod common;

use std::path::Path;

use h3lab_results::bench::{CellRecord, Outcome};
use h3lab_results::conformance::ConformanceReport;
use h3lab_results::{Proto, WorkloadKind};

use common::{bench_ok, results, EXE};

const PRESET: &str = include_str!("../../bench/presets/conformance.toml");

/// The preset with `servers` as its sweep, one repetition, `only` on its
/// workload and `scripts/` made absolute so the suite runs from anywhere.
fn narrowed_preset(servers: &[&str], only: &[&str]) -> String {
    let mut suite: toml::Table = PRESET.parse().unwrap();
    suite.insert("repetitions".into(), 1.into());
    suite["sweep"]["values"] = toml::Value::try_from(servers).unwrap();
    suite["workload"][0]
        .as_table_mut()
        .unwrap()
        .insert("only".into(), toml::Value::try_from(only).unwrap());
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/");
    toml::to_string(&suite)
        .unwrap()
        .replace("\"scripts/", &format!("\"{}/", scripts.display()))
}

fn report_of(cell: &CellRecord) -> &ConformanceReport {
    (cell.client_report.as_ref())
        .and_then(|report| report.conformance())
        .unwrap_or_else(|| panic!("no conformance report: {cell:?}"))
}

#[test]
fn the_conformance_preset_runs_each_server_once_over_h3_and_draws_the_table() {
    let (Some(_), Some(_), Some(_), Some(_)) = (
        h3lab_testenv::conformance_helper(Path::new(EXE)),
        h3lab_testenv::caddy(),
        h3lab_testenv::nginx(),
        h3lab_testenv::nginx_h3(),
    ) else {
        return;
    };
    if !h3lab_testenv::root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conformance");
    let suite = narrowed_preset(
        &["builtin", "caddy", "nginx", "nginx-h3"],
        &["settings.", "qpack."],
    );
    let output = bench_ok(&suite, &out);
    let printed = String::from_utf8_lossy(&output.stdout);

    let results = results(&out);
    let ran: Vec<(&str, Proto)> = (results.cells.iter())
        .map(|cell| (cell.sweep.as_ref().unwrap().value.as_str(), cell.protocol))
        .collect();
    assert_eq!(
        ran,
        [
            ("builtin", Proto::H3),
            ("caddy", Proto::H3),
            ("nginx-h3", Proto::H3)
        ],
        "nginx 1.22 offers no h3, so it has no cell"
    );
    for cell in &results.cells {
        assert_eq!(cell.kind, WorkloadKind::Conformance);
        assert_eq!(cell.outcome, Outcome::Ok, "{}", cell.workload);
        let report = report_of(cell);
        assert!(report.is_complete(), "{report:?}");
        assert!(report.cases.len() >= 14, "{}", report.cases.len());
        assert!((report.cases.iter())
            .all(|case| case.id.starts_with("settings.") || case.id.starts_with("qpack.")));
        let failed = report.failures().count();
        assert_eq!(cell.metric.samples, [failed as f64], "{}", cell.workload);
        assert_eq!(cell.errors, failed as u64);
    }
    let failed: Vec<usize> = (results.cells.iter())
        .map(|cell| report_of(cell).failures().count())
        .collect();
    assert_eq!(failed[0], 0, "h3lab serve passes every case");
    // Measured 2026-12-05: Caddy and nginx 1.26 both go on after SETTINGS
    // that HTTP/2 defined, and answer QPACK connection errors with stream
    // resets.
    assert!(failed[1] > 0 && failed[2] > 0, "{failed:?}");

    assert!(
        printed.contains("HTTP/3 conformance: conformance on loopback")
            && printed.contains("  builtin: 0 failed\n")
            && printed.contains(&format!("  nginx-h3: {} failed\n", failed[2])),
        "{printed}"
    );
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    let section = &page[page.find(r#"<section id="conformance">"#).unwrap()..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(
        section.contains("<th>builtin</th><th>caddy</th><th>nginx-h3</th></tr>"),
        "{section}"
    );
    assert_eq!(
        section.matches("<code>qpack.").count(),
        report_of(&results.cells[0])
            .cases
            .iter()
            .filter(|case| case.id.starts_with("qpack."))
            .count()
    );
}
