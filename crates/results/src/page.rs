//! The page-load record (`h3lab.page/1`, docs/results-schema.md): every
//! load of one page, each with its waterfall, from either loader.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::vocab::{Loader, Proto, ResourceKind, Visit};

/// Schema identifier of a [`PageReport`].
pub const PAGE_SCHEMA: &str = "h3lab.page/1";

/// What `h3lab page` measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PageReport {
    /// Always [`PAGE_SCHEMA`].
    pub schema: String,
    /// The page's URL.
    pub url: String,
    /// The protocol every resource was requested over.
    pub proto: Proto,
    /// Which loader loaded it.
    pub loader: Loader,
    /// Cold or warm loads.
    pub visit: Visit,
    /// Every measured load, in order. A warm run's priming load is not here.
    pub loads: Vec<PageLoad>,
}

/// One load of the page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageLoad {
    /// Wall-clock start of the navigation, RFC 3339 in UTC (HAR needs it).
    pub started_at: String,
    /// Page load time: from the start of the navigation until every
    /// resource is complete.
    pub load_ms: f64,
    /// Every resource fetched, the document first, in the order requested.
    pub resources: Vec<ResourceTiming>,
    /// What only a browser knows; null for the built-in loader.
    pub browser: Option<BrowserTimings>,
    /// URLs the page referenced that were not fetched: on other hosts than
    /// the page's (h3lab sends traffic only to the host under test), or, in
    /// a replay, never recorded; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// The path's round trip during this load: the median over its
    /// connections of what each measured just after set-up (TCP_INFO's
    /// smoothed RTT, or QUIC's estimate). Absent when unknown, as for
    /// Chromium, which does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_rtt_ms: Option<f64>,
    /// Resources that failed without failing the load (a beacon, an image,
    /// any resource but the document and render-blocking ones), as a
    /// browser goes on without them; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedResource>,
}

impl PageLoad {
    /// Body bytes of every resource.
    pub fn bytes(&self) -> u64 {
        self.resources.iter().map(|r| r.bytes).sum()
    }

    /// The number of distinct connections the resources came over, when
    /// every resource names its connection.
    pub fn connections(&self) -> Option<usize> {
        let mut ids: Vec<u64> = self
            .resources
            .iter()
            .map(|r| r.connection)
            .collect::<Option<_>>()?;
        ids.sort_unstable();
        ids.dedup();
        Some(ids.len())
    }

    /// The distinct connections each host's resources came over, when
    /// every resource names its connection and has a host.
    pub fn connections_by_host(&self) -> Option<std::collections::BTreeMap<String, usize>> {
        let mut by_host: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
        for resource in &self.resources {
            let url = url::Url::parse(&resource.url).ok()?;
            by_host
                .entry(url.host_str()?.to_string())
                .or_default()
                .push(resource.connection?);
        }
        let counts = by_host.into_iter().map(|(host, mut ids)| {
            ids.sort_unstable();
            ids.dedup();
            (host, ids.len())
        });
        Some(counts.collect())
    }
}

/// One resource of a load: the waterfall's row. Times are milliseconds
/// since the start of the navigation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceTiming {
    /// Absolute URL.
    pub url: String,
    /// The request's method: GET, unless the page sent another (a replayed
    /// POST beacon); absent for GET.
    #[serde(default = "get", skip_serializing_if = "is_get")]
    pub method: String,
    /// What it is.
    pub kind: ResourceKind,
    /// It blocks rendering (a stylesheet or a synchronous script in
    /// `<head>`), so the loader asked for it first.
    pub render_blocking: bool,
    /// The response status.
    pub status: u16,
    /// The protocol it came over as the client reported it (`h3`, `h2`,
    /// `http/1.1`); null when unknown.
    pub protocol: Option<String>,
    /// The request was sent.
    pub start_ms: f64,
    /// The response head arrived.
    pub ttfb_ms: f64,
    /// The last body byte arrived.
    pub end_ms: f64,
    /// Body bytes received (after any content decoding).
    pub bytes: u64,
    /// Which connection carried it, numbered within the load; null when
    /// the client does not say.
    pub connection: Option<u64>,
    /// The stream it used on a multiplexed connection; null for h1 and
    /// when the client does not say.
    pub stream: Option<u64>,
}

/// Whether a page cannot be shown without a resource of `kind`: its
/// document, and what blocks rendering. A browser shows the page without
/// anything else that fails; both loaders go by this.
pub fn blocks_the_page(kind: ResourceKind, render_blocking: bool) -> bool {
    kind == ResourceKind::Document || render_blocking
}

fn get() -> String {
    "GET".to_string()
}

fn is_get(method: &str) -> bool {
    method == "GET"
}

/// A resource the load went on without: neither the document nor
/// render-blocking, so a browser shows the page all the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedResource {
    /// The request's method.
    pub method: String,
    /// Absolute URL.
    pub url: String,
    /// What went wrong: a status other than the one recorded, or an error.
    pub why: String,
}

impl fmt::Display for FailedResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.method, self.url, self.why)
    }
}

/// Timings only a real browser reports, in milliseconds since the start
/// of the navigation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BrowserTimings {
    /// The load event fired.
    pub load_event_ms: f64,
    /// DOMContentLoaded fired; null if the browser did not say.
    pub dom_content_loaded_ms: Option<f64>,
    /// Navigation Timing's responseStart (the document's first byte).
    pub response_start_ms: Option<f64>,
    /// Largest Contentful Paint; null when the page painted no candidate.
    pub largest_contentful_paint_ms: Option<f64>,
}

impl PageReport {
    /// A report with no loads yet.
    pub fn new(url: &str, proto: Proto, loader: Loader, visit: Visit) -> PageReport {
        PageReport {
            schema: PAGE_SCHEMA.to_string(),
            url: url.to_string(),
            proto,
            loader,
            visit,
            loads: Vec::new(),
        }
    }

    /// The index of the load with the median load time (the lower middle
    /// for an even count); `None` with no loads.
    pub fn median_load(&self) -> Option<usize> {
        let mut order: Vec<usize> = (0..self.loads.len()).collect();
        order.sort_by(|&a, &b| self.loads[a].load_ms.total_cmp(&self.loads[b].load_ms));
        order.get(self.loads.len().saturating_sub(1) / 2).copied()
    }
}

/// One line: median, min and max page-load time over the loads.
impl fmt::Display for PageReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut times: Vec<f64> = self.loads.iter().map(|l| l.load_ms).collect();
        times.sort_by(f64::total_cmp);
        let median = match times.is_empty() {
            true => f64::NAN,
            false => crate::quantile::quantile_sorted(&times, 0.5),
        };
        write!(
            f,
            "{} {} {} page load over {}: median {:.1} ms, min {:.1} ms, max {:.1} ms ({} loads)",
            self.url,
            self.loader,
            self.visit,
            self.proto,
            median,
            times.first().copied().unwrap_or(f64::NAN),
            times.last().copied().unwrap_or(f64::NAN),
            times.len()
        )
    }
}

/// One line: the load's time, resources, bytes and connections.
impl fmt::Display for PageLoad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.1} ms, {} resources, {:.1} KB, ",
            self.load_ms,
            self.resources.len(),
            self.bytes() as f64 / 1e3
        )?;
        match self.connections() {
            Some(c) => write!(f, "{c} connection(s)")?,
            None => write!(f, "? connections")?,
        }
        if !self.skipped.is_empty() {
            let n = self.skipped.len();
            write!(f, ", {n} not fetched (other hosts, or not in the replay)")?;
        }
        match self.failed.len() {
            0 => Ok(()),
            n => write!(f, ", {n} failed without failing the load"),
        }
    }
}

impl PageLoad {
    /// The load's waterfall as text, for a terminal.
    pub fn waterfall(&self) -> Waterfall<'_> {
        Waterfall(self)
    }
}

/// A load's waterfall as text: one row per resource, its bar spanning
/// request to last byte, `=` waiting for the first byte and `#` receiving.
pub struct Waterfall<'a>(&'a PageLoad);

impl fmt::Display for Waterfall<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const WIDTH: f64 = 40.0;
        const ROWS: usize = 40;
        let load = self.0;
        let scale = WIDTH / load.load_ms.max(1e-9);
        writeln!(f, "waterfall of the median load ({:.1} ms):", load.load_ms)?;
        for row in load.resources.iter().take(ROWS) {
            let at = |ms: f64| ((ms * scale).round() as usize).min(WIDTH as usize);
            let (start, first, end) = (at(row.start_ms), at(row.ttfb_ms), at(row.end_ms));
            let bar = format!(
                "{}{}{}",
                " ".repeat(start),
                "=".repeat(first.saturating_sub(start)),
                "#".repeat(end.saturating_sub(first).max(1))
            );
            let name = row.url.rsplit('/').next().unwrap_or(&row.url);
            writeln!(
                f,
                "  {name:<28.28} {:>8.1} ms {:>9} B  |{bar:<41}|",
                row.end_ms - row.start_ms,
                row.bytes
            )?;
        }
        if load.resources.len() > ROWS {
            writeln!(
                f,
                "  … {} more in --json/--har",
                load.resources.len() - ROWS
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(connection: Option<u64>, bytes: u64) -> ResourceTiming {
        ResourceTiming {
            method: "GET".to_string(),
            url: "https://a.test/x".into(),
            kind: ResourceKind::Script,
            render_blocking: false,
            status: 200,
            protocol: Some("h2".into()),
            start_ms: 0.0,
            ttfb_ms: 1.0,
            end_ms: 2.0,
            bytes,
            connection,
            stream: None,
        }
    }

    fn load(ms: f64, resources: Vec<ResourceTiming>) -> PageLoad {
        PageLoad {
            failed: Vec::new(),
            path_rtt_ms: None,
            started_at: "2026-11-23T08:00:00.000Z".into(),
            load_ms: ms,
            resources,
            browser: None,
            skipped: Vec::new(),
        }
    }

    #[test]
    fn bytes_and_connections_sum_the_waterfall() {
        let page = load(
            5.0,
            vec![
                resource(Some(1), 10),
                resource(Some(2), 5),
                resource(Some(1), 1),
            ],
        );
        assert_eq!(page.bytes(), 16);
        assert_eq!(page.connections(), Some(2));
        let unknown = load(5.0, vec![resource(Some(1), 10), resource(None, 5)]);
        assert_eq!(unknown.connections(), None);
        assert_eq!(unknown.connections_by_host(), None);
        let mut other = resource(Some(3), 1);
        other.url = "https://CDN.a.test:8443/y".into();
        let mut two = page.clone();
        two.resources.push(other);
        let by_host = two.connections_by_host().unwrap();
        assert_eq!(
            by_host.into_iter().collect::<Vec<_>>(),
            [("a.test".to_string(), 2), ("cdn.a.test".to_string(), 1)]
        );
    }

    #[test]
    fn median_load_is_the_lower_middle() {
        let mut report =
            PageReport::new("https://a.test/", Proto::H3, Loader::Builtin, Visit::Cold);
        assert_eq!(report.median_load(), None);
        for ms in [30.0, 10.0, 20.0, 40.0] {
            report.loads.push(load(ms, vec![]));
        }
        assert_eq!(report.median_load(), Some(2));
        let round_trip: PageReport =
            serde_json::from_str(&serde_json::to_string(&report).unwrap()).unwrap();
        assert_eq!(round_trip.loads, report.loads);
    }

    #[test]
    fn a_load_and_a_report_print_their_lines_and_waterfall() {
        let page = load(4.0, vec![resource(Some(1), 10), resource(None, 5)]);
        assert_eq!(
            page.to_string(),
            "4.0 ms, 2 resources, 0.0 KB, ? connections"
        );
        let waterfall = page.waterfall().to_string();
        assert!(waterfall.starts_with("waterfall of the median load (4.0 ms):\n"));
        assert!(
            waterfall.contains("|==========##########                     |"),
            "{waterfall}"
        );
        let mut report =
            PageReport::new("https://a.test/", Proto::H3, Loader::Builtin, Visit::Cold);
        report.loads = vec![page.clone(), load(2.0, vec![])];
        assert_eq!(
            report.to_string(),
            "https://a.test/ builtin cold page load over h3: median 3.0 ms, min 2.0 ms, max 4.0 ms (2 loads)"
        );
    }
}
