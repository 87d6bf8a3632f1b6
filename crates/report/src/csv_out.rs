//! `results.csv`: a header and one row per cell. Cells hold plain numbers;
//! units live in the header names, or in the `unit` column for the metric
//! statistics, whose unit depends on the workload.

use std::io::Write;

use anyhow::{Context, Result};
use h3lab_results::WorkloadKind;
use serde::Serialize;

use crate::cell::CellSummary;

#[derive(Default, Serialize)]
struct Row<'a> {
    profile: &'a str,
    workload: &'a str,
    mode: Option<&'a str>,
    protocol: &'a str,
    is_baseline: bool,
    kind: &'a str,
    metric: &'a str,
    unit: &'a str,
    higher_is_better: bool,
    path_rtt_ms: f64,
    repetitions: usize,
    failed: usize,
    n: Option<usize>,
    median: Option<f64>,
    /// ttfb cells: the median in round trips of the path.
    median_rtts: Option<f64>,
    mean: Option<f64>,
    p90: Option<f64>,
    p99: Option<f64>,
    min: Option<f64>,
    max: Option<f64>,
    cv: Option<f64>,
    vs_baseline_pct: Option<f64>,
    /// The 95 % interval of `vs_baseline_pct` (docs/statistics.md).
    vs_baseline_low_pct: Option<f64>,
    vs_baseline_high_pct: Option<f64>,
    vs_baseline: Option<&'static str>,
    /// The permutation test's p-value the call comes from.
    vs_baseline_p: Option<f64>,
    /// The smallest difference the run could have called, in %.
    vs_baseline_detectable_pct: Option<f64>,
    latency_count: Option<u64>,
    latency_p50_ms: Option<f64>,
    latency_p90_ms: Option<f64>,
    latency_p99_ms: Option<f64>,
    latency_max_ms: Option<f64>,
    requests: u64,
    request_errors: u64,
    client_cpu_pct: Option<f64>,
    server_cpu_pct: Option<f64>,
    server_cpu_per_request_us: Option<f64>,
    server_cpu_per_gb_s: Option<f64>,
    client_cpu_per_request_us: Option<f64>,
    client_cpu_per_gb_s: Option<f64>,
    failures: String,
    not_offered: Option<String>,
    problems: String,
    measured_rtt_ms: Option<f64>,
    wire_bytes_per_request: Option<f64>,
    wire_overhead_per_request: Option<f64>,
    wire_overhead_share: Option<f64>,
    wire_resent_per_mb: Option<f64>,
    header_request_first_bytes: Option<f64>,
    header_request_later_bytes: Option<f64>,
    header_response_first_bytes: Option<f64>,
    header_response_later_bytes: Option<f64>,
    connections_per_page_load: Option<f64>,
    wire_bytes_per_page_load: Option<f64>,
}

impl<'a> Row<'a> {
    fn of(s: &'a CellSummary) -> Row<'a> {
        let stats = s.stats.as_ref();
        let latency = s.latency.as_ref();
        let interval = s.vs_baseline.as_ref().and_then(|d| d.interval);
        Row {
            profile: &s.key.profile,
            workload: &s.key.workload,
            mode: s.key.mode.as_deref(),
            protocol: &s.key.protocol,
            is_baseline: s.is_baseline,
            kind: s.kind.map_or("", WorkloadKind::name),
            metric: &s.metric,
            unit: &s.unit,
            higher_is_better: s.higher_is_better,
            path_rtt_ms: s.path_rtt_ms,
            repetitions: s.repetitions,
            failed: s.failed(),
            n: stats.map(|st| st.n),
            median: stats.map(|st| st.median),
            median_rtts: s.median_rtts(),
            mean: stats.map(|st| st.mean),
            p90: stats.map(|st| st.p90),
            p99: stats.map(|st| st.p99),
            min: stats.map(|st| st.min),
            max: stats.map(|st| st.max),
            cv: stats.and_then(|st| st.cv),
            vs_baseline_pct: s.vs_baseline.as_ref().map(|d| d.estimate),
            vs_baseline_low_pct: interval.map(|(low, _)| low),
            vs_baseline_high_pct: interval.map(|(_, high)| high),
            vs_baseline: s.vs_baseline.as_ref().map(|d| d.call().word()),
            vs_baseline_p: s.vs_baseline.as_ref().and_then(|d| d.p_value),
            vs_baseline_detectable_pct: s.vs_baseline.as_ref().and_then(|d| d.detectable),
            latency_count: latency.map(|l| l.count),
            latency_p50_ms: latency.map(|l| l.p50_ms),
            latency_p90_ms: latency.map(|l| l.p90_ms),
            latency_p99_ms: latency.map(|l| l.p99_ms),
            latency_max_ms: latency.map(|l| l.max_ms),
            requests: s.requests,
            request_errors: s.request_errors,
            client_cpu_pct: s.client_cpu_pct,
            server_cpu_pct: s.server_cpu_pct,
            server_cpu_per_request_us: s.server_cpu_per_request_us,
            server_cpu_per_gb_s: s.server_cpu_per_gb_s,
            client_cpu_per_request_us: s.client_cpu_per_request_us,
            client_cpu_per_gb_s: s.client_cpu_per_gb_s,
            failures: s
                .failures
                .iter()
                .map(|f| format!("repetition {}: {}", f.repetition, f.error))
                .collect::<Vec<_>>()
                .join("; "),
            not_offered: s.not_offered.clone(),
            problems: s.problems.join("; "),
            measured_rtt_ms: s.measured_rtt_ms,
            wire_bytes_per_request: s.wire.and_then(|w| w.bytes_per_request()),
            wire_overhead_per_request: s.wire.and_then(|w| w.overhead_per_request()),
            wire_overhead_share: s.wire.and_then(|w| w.overhead_share()),
            wire_resent_per_mb: s.wire.and_then(|w| w.resent_per_mb()),
            header_request_first_bytes: s.header_blocks.and_then(|b| b.request_first.mean()),
            header_request_later_bytes: s.header_blocks.and_then(|b| b.request_later.mean()),
            header_response_first_bytes: s.header_blocks.and_then(|b| b.response_first.mean()),
            header_response_later_bytes: s.header_blocks.and_then(|b| b.response_later.mean()),
            connections_per_page_load: s.page_connections.as_ref().map(|c| c.all),
            wire_bytes_per_page_load: s
                .wire
                .and_then(|w| w.bytes_per_request())
                .zip(s.page_requests)
                .map(|(per_request, requests)| per_request * requests),
        }
    }
}

/// Writes the header and one row per summary.
pub fn write_csv(summaries: &[CellSummary], w: impl Write) -> Result<()> {
    let mut writer = csv::Writer::from_writer(w);
    if summaries.is_empty() {
        // serde only writes the header with the first row; write it by hand.
        writer.write_record(header()?)?;
    }
    for summary in summaries {
        writer
            .serialize(Row::of(summary))
            .context("writing a results.csv row")?;
    }
    writer.flush().context("writing results.csv")?;
    Ok(())
}

/// The column names, taken from a serialised empty row so they cannot
/// drift from the rows.
fn header() -> Result<Vec<String>> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.serialize(Row::default())?;
    let bytes = writer
        .into_inner()
        .map_err(|err| anyhow::anyhow!("{}", err.error()))?;
    let mut reader = csv::Reader::from_reader(bytes.as_slice());
    Ok(reader.headers()?.iter().map(str::to_string).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::summary::summarize;

    fn rows(summaries: &[CellSummary]) -> (csv::StringRecord, Vec<csv::StringRecord>) {
        let mut bytes = Vec::new();
        write_csv(summaries, &mut bytes).unwrap();
        let mut reader = csv::Reader::from_reader(bytes.as_slice());
        let header = reader.headers().unwrap().clone();
        (header, reader.records().map(Result::unwrap).collect())
    }

    #[test]
    fn one_row_per_cell_with_plain_numbers() {
        let summaries = summarize(&fixture::results());
        let (header, rows) = rows(&summaries);
        assert_eq!(rows.len(), summaries.len());
        let column = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .unwrap_or_else(|| panic!("no column {name}"))
        };
        let h3 = rows
            .iter()
            .find(|r| {
                &r[column("profile")] == "broadband"
                    && &r[column("protocol")] == "h3"
                    && &r[column("workload")] == "rps-1k"
            })
            .unwrap();
        assert_eq!(&h3[column("median")], "250.0");
        assert_eq!(&h3[column("unit")], "req/s");
        assert_eq!(&h3[column("n")], "5");
        assert_eq!(&h3[column("vs_baseline")], "better");
        let pct = |name: &str| -> f64 { h3[column(name)].parse().unwrap() };
        assert!((pct("vs_baseline_pct") - 40.0 / 210.0 * 100.0).abs() < 1e-9);
        // Five repetitions a side, wholly apart: the test rejects a shift
        // that leaves fewer than three of the 25 h3 / h2 ratios beyond it,
        // so the ends are the third smallest and third largest ratios
        // (found by bisection, hence the tolerance).
        assert!((pct("vs_baseline_low_pct") - (240.0 / 215.0 - 1.0) * 100.0).abs() < 1e-6);
        assert!((pct("vs_baseline_high_pct") - (260.0 / 205.0 - 1.0) * 100.0).abs() < 1e-6);
        let p50: f64 = h3[column("latency_p50_ms")].parse().unwrap();
        // 10 latencies each of 10, 20, 30, 40 and 50 ms.
        assert!((p50 - 30.0).abs() <= 0.03);
        assert_eq!(&h3[column("client_cpu_per_request_us")], "1000.0");

        let failed = rows
            .iter()
            .find(|r| &r[column("profile")] == "cellular" && &r[column("protocol")] == "h1")
            .unwrap();
        assert_eq!(&failed[column("failed")], "1");
        assert_eq!(
            &failed[column("failures")],
            "repetition 1: connection refused"
        );
        assert_eq!(&failed[column("latency_p50_ms")], "");
    }

    #[test]
    fn empty_run_still_has_the_header() {
        let (header, records) = rows(&[]);
        assert!(records.is_empty());
        assert_eq!(header, rows(&summarize(&fixture::results())).0);
        assert!(header.iter().any(|name| name == "latency_p99_ms"));
    }

    #[test]
    fn page_cells_have_rows() {
        let summaries = summarize(&fixture::with_pages());
        let (header, rows) = rows(&summaries);
        let column = |name: &str| header.iter().position(|h| h == name).unwrap();
        let pages: Vec<&csv::StringRecord> = rows
            .iter()
            .filter(|r| &r[column("kind")] == "page")
            .collect();
        assert_eq!(pages.len(), 4);
        let h2 = pages
            .iter()
            .find(|r| &r[column("profile")] == "broadband" && &r[column("protocol")] == "h2")
            .unwrap();
        assert_eq!(&h2[column("metric")], "page_load_ms");
        assert_eq!(&h2[column("unit")], "ms");
        assert_eq!(&h2[column("higher_is_better")], "false");
        assert_eq!(&h2[column("n")], "20");
        assert_eq!(&h2[column("median")], "395.0");
        assert_eq!(&h2[column("min")], "300.0");
        assert_eq!(&h2[column("max")], "490.0");
        assert_eq!(&h2[column("requests")], "5");
        assert_eq!(&h2[column("latency_p50_ms")], "");
        assert_eq!(&h2[column("median_rtts")], "");
    }
}
