//! The settings a verdict rests on: the initial windows a cell's
//! connections started with, and verdicts that change with a swept
//! setting or with the page loader (the browser engine), which the report
//! must not print as settled.

use h3lab_results::bench::{InitialWindows, Results};
use h3lab_results::{Loader, Visit};

use crate::cell::{CellKey, CellSummary};
use h3lab_results::difference::{seed_for, Call, Difference};
use h3lab_results::quantile::median;

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

/// One line per protocol and workload whose difference from the baseline
/// changes with the swept setting by more than the noise, e.g. `h3 vs h2
/// on page-small turns on initial_window: worse at 10, better at 32 (the
/// difference moves by -18.4 points [-21.0, -15.9] from 10 to 32); not
/// settled`. Two calls that differ are not enough: the line comes from a
/// test of the change itself, the interaction. Each repetition's effect is
/// the subject's median against the baseline's of the same repetition
/// (same seed, run back to back), in %; the effects at the first value
/// and at each other value are compared with the same permutation test as
/// every verdict ([`Difference::absolute`], in percentage points).
pub fn turning_verdicts(cells: &[&CellSummary], baseline: &str) -> Vec<String> {
    let mut rows: Vec<SweptRow> = Vec::new();
    for cell in cells {
        let (Some(sweep), Some(difference)) = (&cell.sweep, &cell.vs_baseline) else {
            continue;
        };
        let Some(reference) = reference_of(cells, cell, baseline) else {
            continue;
        };
        let suffix = sweep.row_label("");
        let row = SweptRow {
            workload: cell.key.workload_label().replace(&suffix, ""),
            protocol: cell.key.protocol.clone(),
            tunable: sweep.tunable.clone(),
            preposition: "at",
            values: Vec::new(),
        };
        let value = SweptValue {
            value: sweep.value.clone(),
            call: difference.call(),
            effects: paired_effects(cell, reference),
        };
        match rows.iter_mut().find(|r| r.same_as(&row)) {
            Some(found) => found.values.push(value),
            None => rows.push(SweptRow {
                values: vec![value],
                ..row
            }),
        }
    }
    rows.iter()
        .filter_map(|row| row.turning_line(baseline))
        .collect()
}

/// One line per protocol and page whose difference from the baseline
/// changes with the loader by more than the noise, e.g. `h3 vs h2 on
/// captured, captured-firefox turns on the loader: better with builtin, no
/// clear difference with firefox (...)`: page workloads of one profile
/// that load the same page in the same visit with different loaders are
/// compared as a swept setting's values are (see [`turning_verdicts`]).
pub fn loader_verdicts(cells: &[&CellSummary], results: &Results, baseline: &str) -> Vec<String> {
    let mut rows: Vec<(PageIdentity, Vec<String>, SweptRow)> = Vec::new();
    for cell in cells {
        let (Some(difference), Some(page)) = (&cell.vs_baseline, page_of(results, cell)) else {
            continue;
        };
        let Some(reference) = reference_of(cells, cell, baseline) else {
            continue;
        };
        let value = SweptValue {
            value: page.loader.to_string(),
            call: difference.call(),
            effects: paired_effects(cell, reference),
        };
        // A second workload of the same page and loader differs in
        // something else (its headers): it is no loader's comparison.
        let same = |(identity, _, row): &&mut (PageIdentity, Vec<String>, SweptRow)| {
            identity.same_page(&page)
                && row.protocol == cell.key.protocol
                && !row.values.iter().any(|other| other.value == value.value)
        };
        match rows.iter_mut().find(same) {
            Some((_, workloads, row)) => {
                workloads.push(cell.key.workload_label());
                row.values.push(value);
            }
            None => rows.push((
                page,
                vec![cell.key.workload_label()],
                SweptRow {
                    workload: String::new(),
                    protocol: cell.key.protocol.clone(),
                    tunable: "the loader".to_string(),
                    preposition: "with",
                    values: vec![value],
                },
            )),
        }
    }
    (rows.into_iter())
        .filter(|(_, _, row)| row.values.len() > 1)
        .filter_map(|(_, workloads, row)| {
            let row = SweptRow {
                workload: workloads.join(", "),
                ..row
            };
            row.turning_line(baseline)
        })
        .collect()
}

/// Which page a page cell loaded, how and with what: its URL, visit and
/// loader from its first client report, and its site from the suite (two
/// sites served in turn at one address share a URL).
#[derive(Debug)]
struct PageIdentity {
    url: String,
    visit: Visit,
    loader: Loader,
    site: Option<String>,
}

impl PageIdentity {
    fn same_page(&self, other: &PageIdentity) -> bool {
        (&self.url, self.visit, &self.site) == (&other.url, other.visit, &other.site)
    }
}

fn page_of(results: &Results, cell: &CellSummary) -> Option<PageIdentity> {
    let (record, report) = (results.cells.iter())
        .filter(|record| CellKey::of(record) == cell.key)
        .find_map(|record| Some((record, record.client_report.as_ref()?.page()?)))?;
    Some(PageIdentity {
        url: report.url.clone(),
        visit: report.visit,
        loader: report.loader,
        site: results.suite.pages.get(&record.workload).cloned(),
    })
}

/// The baseline's cell of the same condition and swept value as `cell`.
fn reference_of<'a>(
    cells: &[&'a CellSummary],
    cell: &CellSummary,
    baseline: &str,
) -> Option<&'a CellSummary> {
    let wanted = cell.key.with_protocol(baseline);
    cells.iter().copied().find(|other| other.key == wanted)
}

/// Per repetition both cells measured: the subject's median against the
/// reference's, in %.
fn paired_effects(subject: &CellSummary, reference: &CellSummary) -> Vec<Vec<f64>> {
    let median_of = |cell: &CellSummary, repetition: u32| {
        let index = cell
            .repetition_numbers
            .iter()
            .position(|&n| n == repetition)?;
        median(&mut cell.samples_by_repetition.get(index)?.clone())
    };
    subject
        .repetition_numbers
        .iter()
        .filter_map(|&repetition| {
            let subject = median_of(subject, repetition)?;
            let reference = median_of(reference, repetition).filter(|r| *r != 0.0)?;
            Some(vec![(subject - reference) / reference.abs() * 100.0])
        })
        .collect()
}

/// One protocol's differences in one workload across a swept tunable's
/// values (or one page's across its loaders).
struct SweptRow {
    workload: String,
    protocol: String,
    tunable: String,
    /// Before each value: `worse at 10`, `better with firefox`.
    preposition: &'static str,
    values: Vec<SweptValue>,
}

/// The call and the per-repetition effects at one value.
struct SweptValue {
    value: String,
    call: Call,
    effects: Vec<Vec<f64>>,
}

impl SweptRow {
    fn same_as(&self, other: &SweptRow) -> bool {
        (&self.workload, &self.protocol, &self.tunable)
            == (&other.workload, &other.protocol, &other.tunable)
    }

    /// The line for this row when its calls differ and the effect's change
    /// from the first value to another is called by the test.
    fn turning_line(&self, baseline: &str) -> Option<String> {
        let first = self.values.first()?;
        if self.values.iter().all(|v| v.call == first.call) {
            return None;
        }
        let changes: Vec<String> = self.values[1..]
            .iter()
            .filter_map(|other| {
                let seed = seed_for(&self.protocol, &format!("{} {}", first.value, other.value));
                let change =
                    Difference::absolute(&other.effects, &first.effects, "points", true, seed)?;
                change.call().is_clear().then(|| {
                    format!(
                        "the difference moves by {} from {} to {}",
                        change.figure(),
                        first.value,
                        other.value
                    )
                })
            })
            .collect();
        if changes.is_empty() {
            return None;
        }
        let each: Vec<String> = self
            .values
            .iter()
            .map(|v| format!("{} {} {}", v.call.word(), self.preposition, v.value))
            .collect();
        Some(format!(
            "{} vs {baseline} on {} turns on {}: {} ({}); not settled",
            self.protocol,
            self.workload,
            self.tunable,
            each.join(", "),
            changes.join("; ")
        ))
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

    /// h3 and h2 page cells at swept values: h2 at 200 + r ms in
    /// repetition r, h3 at the row's five values.
    fn swept_page_results(rows: &[(&str, [f64; 5])]) -> h3lab_results::bench::Results {
        let mut results = fixture::with_pages();
        results.cells.clear();
        for (value, h3) in rows {
            for repetition in 0..5u32 {
                let h2 = 200.0 + f64::from(repetition);
                for (protocol, ms) in [("h2", h2), ("h3", h3[repetition as usize])] {
                    let mut record = fixture::page_record("broadband", protocol, vec![ms], ms);
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

    fn turning(rows: &[(&str, [f64; 5])]) -> (Vec<Call>, Vec<String>) {
        let summaries = crate::summary::summarize(&swept_page_results(rows));
        let cells: Vec<&CellSummary> = summaries.iter().collect();
        let calls = cells
            .iter()
            .filter_map(|cell| cell.vs_baseline.as_ref().map(Difference::call))
            .collect();
        (calls, turning_verdicts(&cells, "h2"))
    }

    #[test]
    fn a_verdict_that_changes_with_the_setting_is_named_and_not_settled() {
        let slower = [220.0, 221.0, 222.0, 223.0, 224.0];
        let faster = [180.0, 181.0, 182.0, 183.0, 184.0];
        let (calls, lines) = turning(&[("10", slower), ("32", faster)]);
        assert_eq!(calls, [Call::Worse, Call::Better]);
        assert_eq!(lines.len(), 1, "{lines:?}");
        let line = &lines[0];
        let start = "h3 vs h2 on page-small turns on initial_window: worse at 10, better at 32 \
                     (the difference moves by -19.80 points [";
        assert!(line.starts_with(start), "{line}");
        assert!(line.ends_with("] from 10 to 32); not settled"), "{line}");
        // The same calls at both values: nothing turns.
        let a_bit_faster = faster.map(|ms| ms - 10.0);
        let (calls, lines) = turning(&[("10", faster), ("32", a_bit_faster)]);
        assert_eq!(calls, [Call::Better, Call::Better]);
        assert!(lines.is_empty());
    }

    #[test]
    fn calls_that_differ_inside_the_noise_of_the_change_are_not_a_turn() {
        // At 10 h3 is 3 % slower in every repetition (called worse); at 32
        // it spreads from 5 % faster to 7 % slower (no clear difference).
        // The calls differ, but the paired effects at 32 straddle those at
        // 10, so the change itself is not called.
        let steady = [206.0, 207.0, 208.0, 209.0, 210.0];
        let spread = [190.0, 215.0, 198.0, 212.0, 205.0];
        let (calls, lines) = turning(&[("10", steady), ("32", spread)]);
        assert_eq!(calls, [Call::Worse, Call::NoClearDifference]);
        assert!(lines.is_empty(), "{lines:?}");
    }

    /// One page loaded by two loaders: h2 at 200 + r ms in repetition r,
    /// h3 at the loader's five values.
    fn two_loader_results(loaders: &[(Loader, [f64; 5])]) -> Results {
        let pages: Vec<(&str, Loader, [f64; 5])> = (loaders.iter())
            .map(|&(loader, h3)| ("page", loader, h3))
            .collect();
        loader_results(&pages)
    }

    /// Each (site, loader) pair's page workload `SITE-LOADER` at one URL:
    /// h2 at 200 + r ms in repetition r, h3 at the pair's five values.
    fn loader_results(pages: &[(&str, Loader, [f64; 5])]) -> Results {
        let mut results = fixture::with_pages();
        results.cells.clear();
        for (site, loader, h3) in pages {
            let workload = format!("{site}-{loader}");
            (results.suite.pages).insert(workload.clone(), format!("site {site}"));
            for repetition in 0..5u32 {
                let h2 = 200.0 + f64::from(repetition);
                for (protocol, ms) in [("h2", h2), ("h3", h3[repetition as usize])] {
                    let mut record = fixture::page_record("broadband", protocol, vec![ms], ms);
                    record.repetition = repetition;
                    record.workload = workload.clone();
                    fixture::page_mut(&mut record).loader = *loader;
                    results.cells.push(record);
                }
            }
        }
        results
    }

    fn loader_lines(loaders: &[(Loader, [f64; 5])]) -> Vec<String> {
        lines_of(&two_loader_results(loaders))
    }

    fn lines_of(results: &Results) -> Vec<String> {
        let summaries = crate::summary::summarize(results);
        let cells: Vec<&CellSummary> = summaries.iter().collect();
        loader_verdicts(&cells, results, "h2")
    }

    #[test]
    fn a_verdict_that_turns_on_the_loader_is_named_and_one_that_does_not_is_not() {
        let slower = [220.0, 221.0, 222.0, 223.0, 224.0];
        let faster = [180.0, 181.0, 182.0, 183.0, 184.0];
        let lines = loader_lines(&[(Loader::Builtin, faster), (Loader::Firefox, slower)]);
        assert_eq!(lines.len(), 1, "{lines:?}");
        let start = "h3 vs h2 on page-builtin, page-firefox turns on the loader: better with \
                     builtin, worse with firefox (the difference moves by +19.80 points [";
        assert!(lines[0].starts_with(start), "{}", lines[0]);
        let a_bit_faster = faster.map(|ms| ms - 10.0);
        let agree = loader_lines(&[(Loader::Builtin, faster), (Loader::Firefox, a_bit_faster)]);
        assert!(agree.is_empty(), "{agree:?}");
        // One loader alone has nothing to disagree with.
        assert!(loader_lines(&[(Loader::Firefox, slower)]).is_empty());
    }

    #[test]
    fn two_sites_at_one_url_are_two_pages_whose_loaders_are_compared_apart() {
        // Both loaders find h3 faster on the small site and slower on the
        // content site: they agree on each page, so no line, though the
        // builtin loader's two calls differ.
        let slower = [220.0, 221.0, 222.0, 223.0, 224.0];
        let faster = [180.0, 181.0, 182.0, 183.0, 184.0];
        let results = loader_results(&[
            ("small", Loader::Builtin, faster),
            ("small", Loader::Firefox, faster),
            ("content", Loader::Builtin, slower),
            ("content", Loader::Firefox, slower),
        ]);
        assert!(lines_of(&results).is_empty(), "{:?}", lines_of(&results));
        let results = loader_results(&[
            ("small", Loader::Builtin, faster),
            ("content", Loader::Builtin, slower),
            ("content", Loader::Firefox, faster),
        ]);
        let lines = lines_of(&results);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("h3 vs h2 on content-builtin, content-firefox turns"),
            "{}",
            lines[0]
        );
    }
}
