//! The page-load record (`h3lab.page/1`, docs/results-schema.md): every
//! load of one page, each with its waterfall, from either loader.

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
    /// URLs on other hosts than the page's, which h3lab never fetches (it
    /// sends traffic only to the host under test); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
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
}

/// One resource of a load: the waterfall's row. Times are milliseconds
/// since the start of the navigation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceTiming {
    /// Absolute URL.
    pub url: String,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(connection: Option<u64>, bytes: u64) -> ResourceTiming {
        ResourceTiming {
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
}
