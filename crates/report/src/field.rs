//! A field run's own views: what each origin offered and what each load
//! used, and the real path's drift (the round trip every cell's
//! connections measured, in run order).

use std::collections::BTreeMap;

use h3lab_results::bench::{ClientReport, FieldRun, Outcome, Results};
use h3lab_results::offer::answer;
use h3lab_results::quantile::quantile_sorted;
use h3lab_results::WorkloadKind;
use serde::Serialize;

/// The drift of the measured round trip on one profile, a line per
/// protocol over the cells in run order.
#[derive(Serialize)]
pub(crate) struct DriftPlot {
    pub(crate) id: String,
    title: String,
    traces: Vec<DriftTrace>,
}

#[derive(Serialize)]
struct DriftTrace {
    protocol: String,
    /// The cell's place in the run (1 = first cell).
    x: Vec<usize>,
    /// Its measured round trip, ms.
    y: Vec<f64>,
}

/// The measured round trip of one profile and protocol over the run.
pub(crate) struct DriftRow {
    pub(crate) profile: String,
    pub(crate) protocol: String,
    /// The round trip the profile adds (0 for the real path alone).
    pub(crate) added_ms: f64,
    pub(crate) n: usize,
    pub(crate) median_ms: f64,
    pub(crate) min_ms: f64,
    pub(crate) max_ms: f64,
}

/// Which protocols one origin's responses came over, in one profile and
/// protocol row of a page workload, counted over its loads.
pub(crate) struct UsedRow {
    pub(crate) workload: String,
    pub(crate) profile: String,
    pub(crate) protocol: String,
    pub(crate) origin: String,
    /// `h3 ×40, h2 ×2`; the count of responses per protocol.
    pub(crate) used: BTreeMap<String, usize>,
}

/// One plot per profile with a measured round trip.
pub(crate) fn drift_plots(results: &Results) -> Vec<DriftPlot> {
    let mut plots: Vec<DriftPlot> = Vec::new();
    for (index, cell) in results.cells.iter().enumerate() {
        let Some(rtt) = cell.measured_rtt_ms else {
            continue;
        };
        let plot = match plots
            .iter()
            .position(|p| p.title == drift_title(&cell.profile))
        {
            Some(at) => &mut plots[at],
            None => {
                plots.push(DriftPlot {
                    id: format!("drift-{}", plots.len()),
                    title: drift_title(&cell.profile),
                    traces: Vec::new(),
                });
                plots.last_mut().expect("just pushed")
            }
        };
        let protocol = cell.protocol.to_string();
        let trace = match plot.traces.iter().position(|t| t.protocol == protocol) {
            Some(at) => &mut plot.traces[at],
            None => {
                plot.traces.push(DriftTrace {
                    protocol,
                    x: Vec::new(),
                    y: Vec::new(),
                });
                plot.traces.last_mut().expect("just pushed")
            }
        };
        trace.x.push(index + 1);
        trace.y.push(rtt);
    }
    plots
}

fn drift_title(profile: &str) -> String {
    format!("Measured round trip, {profile}")
}

/// The median measured round trip of each profile's successful cells.
pub(crate) fn measured_rtt_by_profile(results: &Results) -> BTreeMap<String, f64> {
    let mut by_profile: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let measured = results.cells.iter().filter(|c| c.outcome == Outcome::Ok);
    for cell in measured {
        if let Some(rtt) = cell.measured_rtt_ms {
            by_profile
                .entry(cell.profile.clone())
                .or_default()
                .push(rtt);
        }
    }
    by_profile
        .into_iter()
        .filter_map(|(profile, mut values)| {
            h3lab_results::quantile::median(&mut values).map(|median| (profile, median))
        })
        .collect()
}

/// Median, min and max of the measured round trip per profile and
/// protocol, in the order the run met them.
pub(crate) fn drift_rows(results: &Results) -> Vec<DriftRow> {
    let mut groups: Vec<((String, String, f64), Vec<f64>)> = Vec::new();
    for cell in &results.cells {
        let Some(rtt) = cell.measured_rtt_ms else {
            continue;
        };
        let key = (
            cell.profile.clone(),
            cell.protocol.to_string(),
            cell.path_rtt_ms,
        );
        match groups
            .iter_mut()
            .find(|(k, _)| k.0 == key.0 && k.1 == key.1)
        {
            Some((_, values)) => values.push(rtt),
            None => groups.push((key, vec![rtt])),
        }
    }
    groups
        .into_iter()
        .map(|((profile, protocol, added_ms), mut values)| {
            values.sort_by(f64::total_cmp);
            DriftRow {
                profile,
                protocol,
                added_ms,
                n: values.len(),
                median_ms: quantile_sorted(&values, 0.5),
                min_ms: values[0],
                max_ms: values[values.len() - 1],
            }
        })
        .collect()
}

/// For every page workload, profile and protocol: the protocols each
/// origin's responses came over, from the loads the cells kept.
pub(crate) fn used_rows(results: &Results) -> Vec<UsedRow> {
    let mut rows: Vec<UsedRow> = Vec::new();
    let pages = results
        .cells
        .iter()
        .filter(|c| c.kind == WorkloadKind::Page && c.outcome == Outcome::Ok);
    for cell in pages {
        let Some(report) = cell.client_report.as_ref().and_then(ClientReport::page) else {
            continue;
        };
        for resource in report.loads.iter().flat_map(|load| &load.resources) {
            let origin = origin_of(&resource.url);
            let used = resource
                .protocol
                .clone()
                .unwrap_or_else(|| "unknown".into());
            let row = rows.iter_mut().find(|r| {
                r.workload == cell.workload
                    && r.profile == cell.profile
                    && r.protocol == cell.protocol.name()
                    && r.origin == origin
            });
            let row = match row {
                Some(row) => row,
                None => {
                    rows.push(UsedRow {
                        workload: cell.workload.clone(),
                        profile: cell.profile.clone(),
                        protocol: cell.protocol.to_string(),
                        origin,
                        used: BTreeMap::new(),
                    });
                    rows.last_mut().expect("just pushed")
                }
            };
            *row.used.entry(used).or_default() += 1;
        }
    }
    rows
}

/// `https://host:port`, as the offer check names origins.
pub(crate) fn origin_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(url) => format!(
            "{}://{}:{}",
            url.scheme(),
            url.host_str().unwrap_or_default(),
            url.port_or_known_default().unwrap_or(443)
        ),
        Err(_) => url.to_string(),
    }
}

/// `h3 ×40, h2 ×2`.
pub(crate) fn used_text(used: &BTreeMap<String, usize>) -> String {
    let mut counts: Vec<(&String, &usize)> = used.iter().collect();
    counts.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let parts: Vec<String> = counts.iter().map(|(p, n)| format!("{p} ×{n}")).collect();
    parts.join(", ")
}

/// Where a field run ran from: its `place`, with this machine's name.
pub(crate) fn place_of(field: &FieldRun) -> String {
    match (&field.place, &field.hostname) {
        (Some(place), Some(host)) => format!("{place} ({host})"),
        (Some(place), None) => place.clone(),
        (None, Some(host)) => host.clone(),
        (None, None) => "an unnamed machine".to_string(),
    }
}

/// What a field run is about to measure, as `h3lab bench` prints it
/// before the first cell: where from, the pinned addresses, and what each
/// origin offered.
pub fn field_origins_text(field: &FieldRun) -> String {
    let mut text = String::new();
    let place = place_of(field);
    text.push_str(&format!(
        "field run from {place}, to {}\n",
        field.urls.join(", ")
    ));
    text.push_str(&format!("  pinned: {}\n", field.pinned.join(", ")));
    for origin in &field.origins {
        text.push_str(&format!(
            "  {}  h1 {}  h2 {}  h3 {}  alt-svc: {}\n",
            origin.origin,
            answer(origin.h1),
            answer(origin.h2),
            answer(origin.h3),
            origin.alt_svc.as_deref().unwrap_or("none")
        ));
    }
    text
}

/// The measured round trip per profile and protocol, as `h3lab bench`
/// prints it after a field run: `real path + broadband h3: 20.4 ms
/// [20.1, 23.0] over 10 cells`.
pub fn field_drift_text(results: &Results) -> String {
    let mut text = String::new();
    let rows = drift_rows(results);
    if !rows.is_empty() {
        text.push_str("measured round trip (median [min, max]):\n");
    }
    for row in rows {
        text.push_str(&format!(
            "  {} {}: {:.1} ms [{:.1}, {:.1}] over {} cells\n",
            row.profile, row.protocol, row.median_ms, row.min_ms, row.max_ms, row.n
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use h3lab_results::page::{PageLoad, PageReport, ResourceTiming};
    use h3lab_results::{Loader, Proto, ResourceKind, Visit};

    fn page_cell(
        protocol: Proto,
        rtt: f64,
        used: &[(&str, &str)],
    ) -> h3lab_results::bench::CellRecord {
        let mut cell = fixture::rps_record("real path", protocol.name(), 0, 100.0, None);
        cell.kind = WorkloadKind::Page;
        cell.workload = "page".into();
        cell.measured_rtt_ms = Some(rtt);
        let mut report = PageReport::new(
            "https://www.site.test/",
            protocol,
            Loader::Builtin,
            Visit::Cold,
        );
        report.loads.push(PageLoad {
            failed: Vec::new(),
            started_at: "2026-11-28T08:00:00.000Z".into(),
            load_ms: 100.0,
            resources: used
                .iter()
                .map(|(url, proto)| ResourceTiming {
                    method: "GET".to_string(),
                    url: url.to_string(),
                    kind: ResourceKind::Script,
                    render_blocking: false,
                    status: 200,
                    protocol: Some(proto.to_string()),
                    start_ms: 0.0,
                    ttfb_ms: 1.0,
                    end_ms: 10.0,
                    bytes: 10,
                    connection: Some(1),
                    stream: None,
                })
                .collect(),
            browser: None,
            skipped: Vec::new(),
            path_rtt_ms: Some(rtt),
        });
        cell.client_report = Some(report.into());
        cell
    }

    #[test]
    fn each_origin_counts_the_protocols_its_responses_came_over() {
        let mut results = fixture::results();
        results.cells = vec![
            page_cell(
                Proto::Auto,
                1.0,
                &[
                    ("https://www.site.test/", "h2"),
                    ("https://www.site.test/a.js", "h3"),
                ],
            ),
            page_cell(
                Proto::Auto,
                3.0,
                &[
                    ("https://www.site.test/", "h2"),
                    ("https://cdn.site.test:8443/b.css", "h2"),
                ],
            ),
        ];
        let rows = used_rows(&results);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].origin, "https://www.site.test:443");
        assert_eq!(used_text(&rows[0].used), "h2 ×2, h3 ×1");
        assert_eq!(rows[1].origin, "https://cdn.site.test:8443");
        let drift = drift_rows(&results);
        assert_eq!(
            (
                drift[0].n,
                drift[0].median_ms,
                drift[0].min_ms,
                drift[0].max_ms
            ),
            (2, 2.0, 1.0, 3.0)
        );
        let plots = drift_plots(&results);
        assert_eq!(plots[0].traces[0].x, [1, 2]);
    }
}
