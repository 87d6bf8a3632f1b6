//! The settings a verdict rests on: the initial windows a cell's
//! connections started with, and verdicts that change with a swept
//! setting, which the report must not print as settled.

use h3lab_results::bench::InitialWindows;

use crate::cell::CellSummary;
use h3lab_results::difference::Call;

/// e.g. `initial windows: TCP 10 segments (Linux's default), QUIC 14720 B
/// (10 packets)`.
pub fn describe(windows: &InitialWindows) -> String {
    let tcp = match (windows.tcp_segments, windows.tcp_set) {
        (Some(segments), true) => format!("TCP {segments} segments (set on the path's routes)"),
        (Some(segments), false) => format!("TCP {segments} segments (Linux's default)"),
        (None, _) => "TCP the machine's own (loopback)".to_string(),
    };
    let quic = match windows.quic_bytes {
        Some(bytes) if bytes % InitialWindows::QUIC_PACKET_BYTES == 0 => {
            format!(
                "QUIC {bytes} B ({} packets)",
                bytes / InitialWindows::QUIC_PACKET_BYTES
            )
        }
        Some(bytes) => format!("QUIC {bytes} B"),
        None => "QUIC the server's own (it does not report it)".to_string(),
    };
    format!("initial windows: {tcp}, {quic}")
}

/// The initial windows every cell of `cells` recorded, described, if they
/// all recorded the same.
pub fn common_windows(cells: &[&CellSummary]) -> Option<String> {
    let first = cells.first()?.initial_windows?;
    cells
        .iter()
        .all(|cell| cell.initial_windows == Some(first))
        .then(|| describe(&first))
}

/// One line per protocol and workload whose call against the baseline
/// changes with the swept setting, e.g. `h3 vs h2 on page-small turns on
/// initial_window: better at 32, worse at 10; not settled`.
pub fn turning_verdicts(cells: &[&CellSummary], baseline: &str) -> Vec<String> {
    let mut rows: Vec<SweptRow> = Vec::new();
    for cell in cells {
        let (Some(sweep), Some(difference)) = (&cell.sweep, &cell.vs_baseline) else {
            continue;
        };
        let suffix = sweep.row_label("");
        let row = SweptRow {
            workload: cell.key.workload_label().replace(&suffix, ""),
            protocol: cell.key.protocol.clone(),
            tunable: sweep.tunable.clone(),
            calls: Vec::new(),
        };
        let call = (sweep.value.clone(), difference.call());
        match rows.iter_mut().find(|r| r.same_as(&row)) {
            Some(found) => found.calls.push(call),
            None => rows.push(SweptRow {
                calls: vec![call],
                ..row
            }),
        }
    }
    rows.into_iter()
        .filter(|row| row.calls.iter().any(|(_, call)| *call != row.calls[0].1))
        .map(|row| {
            let each: Vec<String> = row
                .calls
                .iter()
                .map(|(value, call)| format!("{} at {value}", call.word()))
                .collect();
            format!(
                "{} vs {baseline} on {} turns on {}: {}; not settled",
                row.protocol,
                row.workload,
                row.tunable,
                each.join(", ")
            )
        })
        .collect()
}

/// One protocol's calls in one workload across a swept tunable's values.
struct SweptRow {
    workload: String,
    protocol: String,
    tunable: String,
    calls: Vec<(String, Call)>,
}

impl SweptRow {
    fn same_as(&self, other: &SweptRow) -> bool {
        (&self.workload, &self.protocol, &self.tunable)
            == (&other.workload, &other.protocol, &other.tunable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use h3lab_results::bench::SweptSetting;

    #[test]
    fn windows_say_where_each_figure_comes_from() {
        let set = InitialWindows {
            tcp_segments: Some(32),
            tcp_set: true,
            quic_bytes: Some(47104),
        };
        assert_eq!(
            describe(&set),
            "initial windows: TCP 32 segments (set on the path's routes), QUIC 47104 B (32 packets)"
        );
        let unknown = InitialWindows {
            tcp_segments: None,
            tcp_set: false,
            quic_bytes: None,
        };
        assert_eq!(
            describe(&unknown),
            "initial windows: TCP the machine's own (loopback), QUIC the server's own (it does \
             not report it)"
        );
    }

    /// h3 and h2 page cells at a swept value, h3 `h3_ms` per load against
    /// h2's 200 ms, three repetitions each.
    fn swept_page_results(rows: &[(&str, f64)]) -> h3lab_results::bench::Results {
        let mut results = fixture::with_pages();
        results.cells.clear();
        for (value, h3_ms) in rows {
            for (protocol, ms) in [("h2", 200.0), ("h3", *h3_ms)] {
                for repetition in 0..3 {
                    let jitter = f64::from(repetition);
                    let mut record =
                        fixture::page_record("broadband", protocol, vec![ms + jitter], ms);
                    record.repetition = repetition;
                    record.workload = format!("page-small [initial_window={value}]");
                    record.sweep = Some(SweptSetting {
                        tunable: "initial_window".into(),
                        value: value.to_string(),
                    });
                    results.cells.push(record);
                }
            }
        }
        results
    }

    #[test]
    fn a_verdict_that_changes_with_the_setting_is_named_and_not_settled() {
        let flipping = swept_page_results(&[("10", 220.0), ("32", 180.0)]);
        let summaries = crate::summary::summarize(&flipping);
        let cells: Vec<&CellSummary> = summaries.iter().collect();
        assert_eq!(
            turning_verdicts(&cells, "h2"),
            ["h3 vs h2 on page-small turns on initial_window: worse at 10, better at 32; not settled"]
        );
        let steady = swept_page_results(&[("10", 180.0), ("32", 170.0)]);
        let summaries = crate::summary::summarize(&steady);
        let cells: Vec<&CellSummary> = summaries.iter().collect();
        assert!(turning_verdicts(&cells, "h2").is_empty());
    }
}
