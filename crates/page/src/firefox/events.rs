//! The sans-I/O part of the Firefox loader: the WebDriver BiDi events of
//! one navigation, in the order Firefox sent them, become one
//! [`PageLoad`]. No browser, no clock, no socket: the unit tests feed it
//! hand-written event JSON.
//!
//! Times: BiDi's request `timings` are milliseconds (to the microsecond)
//! on the wall clock, as are the events' `timestamp`s (to the
//! millisecond). The document's `timings.requestTime` is zero. Times the
//! page reports itself (Navigation Timing, Largest Contentful Paint) are
//! relative to its `timeOrigin` and are moved onto the same zero through
//! the document's `requestStart`, which both record.

use std::collections::HashMap;

use h3lab_results::page::{BrowserTimings, PageLoad, ResourceTiming};
use h3lab_results::{Proto, ResourceKind};
use serde::Deserialize;
use serde_json::Value;

use crate::chromium::PagePerformance;
use crate::rules::{
    allowed_protocols, host_of, response_problems, sort_problems, unfinished, PageRules, Problem,
    Reason,
};

/// Turns the BiDi events of one navigation into a [`PageLoad`].
///
/// `events` are the `network.*` and `browsingContext.*` events of the
/// page's context from the navigation on; others, and an event that lacks
/// what this reads of it, are ignored. Fails as Chromium's loader does
/// (see [`crate::chromium::page_load_from_events`]): a response over
/// another protocol, a failed request, an error status the captured page
/// did not record, a request that never finished, no load event.
pub fn page_load_from_bidi_events(
    events: &[Value],
    requested: Proto,
    performance: &PagePerformance,
    rules: &PageRules,
) -> Result<PageLoad, String> {
    let mut waterfall = Waterfall::new(requested, rules);
    for event in events.iter().filter_map(|e| Event::deserialize(e).ok()) {
        waterfall.on_event(event);
    }
    waterfall.finish(performance)
}

/// The BiDi events the waterfall is built from: `{"type": "event",
/// "method": "network.responseCompleted", "params": {…}}`.
#[derive(Debug, Deserialize)]
#[serde(tag = "method", content = "params")]
enum Event {
    #[serde(rename = "network.beforeRequestSent")]
    BeforeRequestSent(NetworkEvent),
    #[serde(rename = "network.responseCompleted")]
    ResponseCompleted(NetworkEvent),
    #[serde(rename = "network.fetchError")]
    FetchError(NetworkEvent),
    #[serde(rename = "browsingContext.load")]
    Load(ContextEvent),
    #[serde(rename = "browsingContext.domContentLoaded")]
    DomContentLoaded(ContextEvent),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NetworkEvent {
    request: Request,
    /// Milliseconds since the Unix epoch.
    timestamp: Option<f64>,
    response: Option<Response>,
    error_text: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    /// The request's id, kept across its redirects.
    request: String,
    url: String,
    method: Option<String>,
    /// The Fetch destination: `document`, `style`, `script`, `image`…
    destination: Option<String>,
    timings: Option<Timings>,
}

/// A request's timing; 0 for a step that has not happened.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Timings {
    #[serde(default)]
    request_time: f64,
    #[serde(default)]
    request_start: f64,
    #[serde(default)]
    response_start: f64,
    #[serde(default)]
    response_end: f64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    status: Option<u64>,
    /// The ALPN name: `http/1.1`, `h2`, `h3`.
    protocol: Option<String>,
    /// The body's bytes as they crossed the network.
    body_size: Option<u64>,
    /// Served from a cache of Firefox's own without crossing the network
    /// (the image cache, which bypassing the HTTP cache leaves on).
    #[serde(default)]
    from_cache: bool,
}

#[derive(Debug, Deserialize)]
struct ContextEvent {
    timestamp: Option<f64>,
}

/// A time that happened: BiDi gives 0 for a step that did not.
fn happened(ms: f64) -> Option<f64> {
    (ms > 0.0).then_some(ms)
}

/// One resource while its events arrive; times in ms on the wall clock.
#[derive(Debug)]
struct Row {
    url: String,
    method: String,
    kind: ResourceKind,
    start: f64,
    status: Option<u16>,
    protocol: Option<String>,
    ttfb: Option<f64>,
    end: Option<f64>,
    bytes: u64,
    request_start: Option<f64>,
    /// Answered from Firefox's own cache: left out of the load.
    from_cache: bool,
}

impl Row {
    /// Firefox does not say which resources block rendering; a
    /// stylesheet is taken to, as it does in every browser.
    fn render_blocking(&self) -> bool {
        self.kind == ResourceKind::Stylesheet
    }
}

struct Waterfall<'a> {
    allowed: Vec<&'static str>,
    rules: &'a PageRules,
    rows: Vec<Row>,
    by_id: HashMap<String, usize>,
    document: Option<usize>,
    page_host: Option<String>,
    skipped: Vec<String>,
    load_event: Option<f64>,
    dom_content_loaded: Option<f64>,
    problems: Vec<Problem>,
}

impl<'a> Waterfall<'a> {
    fn new(requested: Proto, rules: &'a PageRules) -> Waterfall<'a> {
        Waterfall {
            allowed: allowed_protocols(requested),
            rules,
            rows: Vec::new(),
            by_id: HashMap::new(),
            document: None,
            page_host: None,
            skipped: Vec::new(),
            load_event: None,
            dom_content_loaded: None,
            problems: Vec::new(),
        }
    }

    fn on_event(&mut self, event: Event) {
        match event {
            Event::BeforeRequestSent(sent) => self.on_request(sent),
            Event::ResponseCompleted(completed) => self.on_response(completed),
            Event::FetchError(failed) => self.on_failed(failed),
            Event::Load(page) => self.load_event = self.load_event.or(page.timestamp),
            Event::DomContentLoaded(page) => {
                self.dom_content_loaded = self.dom_content_loaded.or(page.timestamp)
            }
        }
    }

    fn on_request(&mut self, sent: NetworkEvent) {
        let request = sent.request;
        if !(request.url.starts_with("https://") || request.url.starts_with("http://")) {
            return;
        }
        if let Some(&index) = self.by_id.get(&request.request) {
            // A redirect: the same request continues at a new URL.
            self.rows[index].url = request.url;
            return;
        }
        let kind = resource_kind(request.destination.as_deref().unwrap_or(""));
        let host = host_of(&request.url);
        if self.document.is_none() && kind == ResourceKind::Document {
            self.document = Some(self.rows.len());
            self.page_host = host;
        } else if host != self.page_host && !self.rules.reaches(host) {
            // Another party's: not the page under test.
            self.skipped.push(request.url);
            return;
        }
        let timings = request.timings.unwrap_or_default();
        let start = happened(timings.request_time).or(sent.timestamp);
        let Some(start) = start else { return };
        self.rows.push(Row {
            url: request.url,
            method: request.method.unwrap_or_else(|| "GET".to_string()),
            kind,
            start,
            status: None,
            protocol: None,
            ttfb: None,
            end: None,
            bytes: 0,
            request_start: None,
            from_cache: false,
        });
        self.by_id.insert(request.request, self.rows.len() - 1);
    }

    fn on_response(&mut self, completed: NetworkEvent) {
        let Some(&index) = self.by_id.get(&completed.request.request) else {
            return;
        };
        let response = completed.response.unwrap_or(Response {
            status: None,
            protocol: None,
            body_size: None,
            from_cache: false,
        });
        if response.from_cache {
            // A second request for an image the page fetched already
            // (seen: 0 bytes, protocol "http/1.1" on an h3 load): no
            // fetch of the page's, so no row of its waterfall.
            self.rows[index].from_cache = true;
            return;
        }
        let url = self.rows[index].url.clone();
        let protocol = response.protocol.as_deref();
        let problems =
            response_problems(&self.allowed, self.rules, &url, protocol, response.status);
        self.problems.extend(problems);
        let timings = completed.request.timings.unwrap_or_default();
        let row = &mut self.rows[index];
        row.status = response.status.map(|s| s as u16);
        row.protocol = response.protocol;
        row.bytes = response.body_size.unwrap_or(0);
        row.request_start = happened(timings.request_start);
        row.ttfb = happened(timings.response_start);
        row.end = happened(timings.response_end).or(completed.timestamp);
    }

    fn on_failed(&mut self, failed: NetworkEvent) {
        let Some(&index) = self.by_id.get(&failed.request.request) else {
            return;
        };
        let row = &mut self.rows[index];
        let why = failed
            .error_text
            .unwrap_or_else(|| "unknown error".to_string());
        // A recorded error, answered, is the page as captured: Firefox
        // aborts an image whose answer is an error page before BiDi sees
        // its status (NS_BINDING_ABORTED, seen replaying a recorded 404).
        let answered = row.status.is_some() || why == "NS_BINDING_ABORTED";
        if self.rules.recorded_error(&row.url) && answered {
            row.end = row.end.or(failed.timestamp);
            return;
        }
        self.problems.push(Problem {
            url: row.url.clone(),
            reason: Reason::Failed(why),
        });
    }

    fn finish(mut self, performance: &PagePerformance) -> Result<PageLoad, String> {
        let Some(document) = self.document else {
            return Err("Firefox reported no request for the page's document".to_string());
        };
        let document = self.drop_cached(document);
        self.note_unfinished();
        let rows = &self.rows;
        let (mut problems, failed) = sort_problems(std::mem::take(&mut self.problems), |url| {
            let row = rows.iter().find(|row| row.url == url)?;
            Some((row.method.clone(), row.kind, row.render_blocking()))
        });
        let Some(load_event) = self.load_event else {
            problems.push("the page fired no load event".to_string());
            return Err(problems.join("; "));
        };
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        let document = &self.rows[document];
        let zero = document.start;
        let resources = resource_timings(&self.rows, zero);
        let load_event_ms = load_event - zero;
        let load_ms = resources
            .iter()
            .map(|r| r.end_ms)
            .fold(load_event_ms, f64::max);
        let origin_ms = (document.request_start)
            .zip(performance.request_start)
            .map(|(bidi, page)| bidi - page - zero);
        let page_time = |t: Option<f64>| Some(origin_ms? + t?);
        Ok(PageLoad {
            path_rtt_ms: None,
            started_at: started_at(zero),
            load_ms,
            resources,
            browser: Some(BrowserTimings {
                load_event_ms,
                dom_content_loaded_ms: self.dom_content_loaded.map(|t| t - zero),
                response_start_ms: page_time(performance.response_start),
                largest_contentful_paint_ms: page_time(performance.largest_contentful_paint),
            }),
            skipped: self.skipped,
            failed,
        })
    }

    /// Leaves out the rows answered from Firefox's own cache, but the
    /// document's; returns the document's new index.
    fn drop_cached(&mut self, document: usize) -> usize {
        let cached_before = (self.rows[..document].iter())
            .filter(|row| row.from_cache)
            .count();
        let mut index = 0;
        self.rows.retain(|row| {
            index += 1;
            index - 1 == document || !row.from_cache
        });
        document - cached_before
    }

    fn note_unfinished(&mut self) {
        let requests = (self.rows.iter()).map(|row| (row.url.as_str(), row.end.is_some()));
        let unfinished = unfinished(requests, &self.problems);
        self.problems.extend(unfinished);
    }
}

/// Each finished resource's timing in ms after `zero`. BiDi names no
/// connection, so none is given: unknown, not one.
fn resource_timings(rows: &[Row], zero: f64) -> Vec<ResourceTiming> {
    (rows.iter())
        .filter_map(|row| Some((row, row.end?)))
        .map(|(row, end)| ResourceTiming {
            url: row.url.clone(),
            method: row.method.clone(),
            kind: row.kind,
            render_blocking: row.render_blocking(),
            status: row.status.unwrap_or(0),
            protocol: row.protocol.clone(),
            start_ms: row.start - zero,
            ttfb_ms: row.ttfb.unwrap_or(end) - zero,
            end_ms: end - zero,
            bytes: row.bytes,
            connection: None,
            stream: None,
        })
        .collect()
}

/// `zero`, milliseconds since the Unix epoch, as RFC 3339.
fn started_at(zero: f64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(zero / 1000.0);
    humantime::format_rfc3339_millis(at).to_string()
}

/// A Fetch destination as a [`ResourceKind`].
fn resource_kind(destination: &str) -> ResourceKind {
    match destination {
        "document" => ResourceKind::Document,
        "style" => ResourceKind::Stylesheet,
        "script" => ResourceKind::Script,
        "font" => ResourceKind::Font,
        "image" => ResourceKind::Image,
        _ => ResourceKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const T0: f64 = 1.8e12;

    fn request(id: &str, url: &str, destination: &str, at: f64) -> Value {
        json!({"request": id, "url": url, "method": "GET", "destination": destination,
               "timings": {"requestTime": T0 + at, "requestStart": T0 + at + 1.0,
                           "responseStart": T0 + at + 4.0, "responseEnd": T0 + at + 6.0}})
    }

    fn sent(id: &str, url: &str, destination: &str, at: f64) -> Value {
        let mut request = request(id, url, destination, at);
        for step in ["requestStart", "responseStart", "responseEnd"] {
            request["timings"][step] = json!(0);
        }
        json!({"type": "event", "method": "network.beforeRequestSent",
               "params": {"context": "C", "request": request, "timestamp": T0 + at}})
    }

    fn completed(
        id: &str,
        url: &str,
        destination: &str,
        at: f64,
        protocol: &str,
        status: u64,
    ) -> Value {
        json!({"type": "event", "method": "network.responseCompleted", "params": {
            "context": "C", "request": request(id, url, destination, at), "timestamp": T0 + at + 7.0,
            "response": {"url": url, "protocol": protocol, "status": status, "bodySize": 100}}})
    }

    fn page_event(method: &str, at: f64) -> Value {
        json!({"type": "event", "method": method, "params": {"context": "C", "timestamp": T0 + at}})
    }

    /// A page, a stylesheet and an image, each over `protocols[i]`.
    fn page(protocols: [&str; 3]) -> Vec<Value> {
        let resources = [
            ("1", "https://a.test/", "document", 0.0),
            ("2", "https://a.test/style.css", "style", 10.0),
            ("3", "https://a.test/hero.svg", "image", 12.0),
        ];
        let mut events = Vec::new();
        for ((id, url, destination, at), protocol) in resources.into_iter().zip(protocols) {
            events.push(sent(id, url, destination, at));
            events.push(completed(id, url, destination, at, protocol, 200));
        }
        events.push(page_event("browsingContext.domContentLoaded", 30.0));
        events.push(page_event("browsingContext.load", 40.0));
        events
    }

    fn loaded(events: &[Value], requested: Proto) -> Result<PageLoad, String> {
        let performance = PagePerformance {
            request_start: Some(50.0),
            response_start: Some(53.0),
            largest_contentful_paint: Some(80.0),
        };
        page_load_from_bidi_events(events, requested, &performance, &PageRules::default())
    }

    #[test]
    fn a_load_is_timed_from_the_documents_request_with_the_pages_own_times_aligned() {
        let load = loaded(&page(["h3"; 3]), Proto::H3).unwrap();
        let rows: Vec<(ResourceKind, f64, f64, f64, u64)> = (load.resources.iter())
            .map(|r| (r.kind, r.start_ms, r.ttfb_ms, r.end_ms, r.bytes))
            .collect();
        assert_eq!(
            rows,
            [
                (ResourceKind::Document, 0.0, 4.0, 6.0, 100),
                (ResourceKind::Stylesheet, 10.0, 14.0, 16.0, 100),
                (ResourceKind::Image, 12.0, 16.0, 18.0, 100),
            ]
        );
        assert!(load.resources[1].render_blocking && !load.resources[2].render_blocking);
        assert!(load.resources.iter().all(|r| r.connection.is_none()));
        assert_eq!(load.load_ms, 40.0);
        let browser = load.browser.unwrap();
        assert_eq!(
            (browser.load_event_ms, browser.dom_content_loaded_ms),
            (40.0, Some(30.0))
        );
        // The document's request started at 1 ms here and at 50 ms on
        // the page's clock: its responseStart (53) is 4 ms here.
        assert_eq!(browser.response_start_ms, Some(4.0));
        assert_eq!(browser.largest_contentful_paint_ms, Some(31.0));
        assert_eq!(load.started_at, "2027-01-15T08:00:00.000Z");
    }

    #[test]
    fn a_response_over_another_protocol_fails_the_load_naming_it() {
        let err = loaded(&page(["h3", "h3", "http/1.1"]), Proto::H3).unwrap_err();
        assert_eq!(err, "https://a.test/hero.svg came over http/1.1, not h3");
        assert!(loaded(&page(["h2", "h3", "h3"]), Proto::Auto).is_ok());
    }

    #[test]
    fn a_second_request_answered_from_firefoxs_image_cache_is_no_fetch() {
        let mut events = page(["h3"; 3]);
        events.insert(6, sent("4", "https://a.test/hero.svg", "image", 13.0));
        let mut cached = completed(
            "4",
            "https://a.test/hero.svg",
            "image",
            13.0,
            "http/1.1",
            200,
        );
        cached["params"]["response"]["fromCache"] = json!(true);
        cached["params"]["response"]["bodySize"] = json!(0);
        events.insert(7, cached);
        let load = loaded(&events, Proto::H3).unwrap();
        assert_eq!(load, loaded(&page(["h3"; 3]), Proto::H3).unwrap());
    }

    #[test]
    fn a_failed_image_is_listed_and_a_failed_stylesheet_fails_the_load() {
        let mut events = page(["h2"; 3]);
        events[5] = json!({"type": "event", "method": "network.fetchError", "params": {
            "context": "C", "request": request("3", "https://a.test/hero.svg", "image", 12.0),
            "timestamp": T0 + 20.0, "errorText": "NS_ERROR_NET_RESET"}});
        let failed = loaded(&events, Proto::H2).unwrap().failed;
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].url, "https://a.test/hero.svg");
        assert!(failed[0].why.contains("NS_ERROR_NET_RESET"));
        let mut events = page(["h2"; 3]);
        events.remove(3);
        let err = loaded(&events, Proto::H2).unwrap_err();
        assert_eq!(err, "https://a.test/style.css never finished loading");
    }

    #[test]
    fn a_recorded_error_aborted_by_firefox_is_the_page_as_captured() {
        let mut events = page(["h2"; 3]);
        events[5] = json!({"type": "event", "method": "network.fetchError", "params": {
            "context": "C", "request": request("3", "https://a.test/hero.svg", "image", 12.0),
            "timestamp": T0 + 20.0, "errorText": "NS_BINDING_ABORTED"}});
        let rules = PageRules {
            reachable_hosts: Vec::new(),
            recorded_errors: vec!["https://a.test/hero.svg".to_string()],
        };
        let performance = PagePerformance::default();
        let load = page_load_from_bidi_events(&events, Proto::H2, &performance, &rules).unwrap();
        assert!(load.failed.is_empty(), "{:?}", load.failed);
        assert_eq!(load.resources[2].end_ms, 20.0);
        let unrecorded = loaded(&events, Proto::H2).unwrap();
        assert_eq!(
            unrecorded.failed[0].why,
            "failed to load: NS_BINDING_ABORTED"
        );
    }

    #[test]
    fn no_load_event_or_no_document_fails_the_load() {
        let mut events = page(["h2"; 3]);
        events.pop();
        assert_eq!(
            loaded(&events, Proto::H2).unwrap_err(),
            "the page fired no load event"
        );
        let err = loaded(&events[2..], Proto::H2).unwrap_err();
        assert!(err.contains("no request for the page's document"), "{err}");
    }

    #[test]
    fn another_partys_request_is_skipped_and_a_replay_origin_is_not() {
        let mut events = page(["h2"; 3]);
        events.insert(2, sent("9", "https://tracker.test/t.js", "script", 5.0));
        let with_rules = |rules: &PageRules| {
            let performance = PagePerformance::default();
            page_load_from_bidi_events(&events, Proto::H2, &performance, rules)
        };
        let load = with_rules(&PageRules::default()).unwrap();
        assert_eq!(load.skipped, ["https://tracker.test/t.js"]);
        let rules = PageRules {
            reachable_hosts: vec!["tracker.test".to_string()],
            recorded_errors: Vec::new(),
        };
        let load = with_rules(&rules).unwrap();
        assert!(load.skipped.is_empty());
        assert_eq!(load.failed[0].url, "https://tracker.test/t.js");
        assert_eq!(load.failed[0].why, "never finished loading");
    }
}
