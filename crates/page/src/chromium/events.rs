//! The sans-I/O part of the Chromium loader: the DevTools events of one
//! navigation, in the order Chromium sent them, become one [`PageLoad`].
//! No browser, no clock, no socket: the unit tests feed it hand-written
//! event JSON.
//!
//! Times: every DevTools `timestamp` is the browser's monotonic clock in
//! seconds. The document's `Network.requestWillBeSent.timestamp` is zero;
//! every other time is milliseconds after it. Times the page itself
//! reports (Navigation Timing, Largest Contentful Paint) are relative to
//! the page's `timeOrigin`; they are moved onto the same zero through the
//! one moment both clocks record: the document's request was sent
//! (DevTools `response.timing.requestTime + sendStart`, Navigation
//! Timing's `requestStart`, both from the network stack's load timing).

use std::collections::HashMap;

use h3lab_results::page::{BrowserTimings, FailedResource, PageLoad, ResourceTiming};
use h3lab_results::{Proto, ResourceKind};
use serde::Deserialize;
use serde_json::Value;

pub use crate::rules::PageRules;
use crate::rules::{
    allowed_protocols, host_of, response_problems, sort_problems, unfinished, Problem, Reason,
};

/// What the page reported about itself after its load event (see
/// [`super::PERFORMANCE_SCRIPT`]), all in milliseconds since its
/// `timeOrigin`; any of them may be null.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PagePerformance {
    /// Navigation Timing's `requestStart`.
    pub request_start: Option<f64>,
    /// Navigation Timing's `responseStart`.
    pub response_start: Option<f64>,
    /// The last `largest-contentful-paint` entry's `startTime`.
    pub largest_contentful_paint: Option<f64>,
}

impl PagePerformance {
    /// Reads the object the performance script returns.
    pub fn from_json(value: &Value) -> PagePerformance {
        let number = |key: &str| value[key].as_f64().filter(|v| v.is_finite() && *v >= 0.0);
        PagePerformance {
            request_start: number("requestStart").filter(|v| *v > 0.0),
            response_start: number("responseStart").filter(|v| *v > 0.0),
            largest_contentful_paint: number("lcp").filter(|v| *v > 0.0),
        }
    }
}

/// Turns the DevTools events of one navigation into a [`PageLoad`].
///
/// `events` are every `Network.*` and `Page.*` event of the page's session
/// from `Page.navigate` on; other events are ignored, and so is an event
/// that lacks what this reads of it. `requested` is the protocol every
/// response must have come over. `performance` is what the page reported
/// after its load event.
///
/// Fails, naming every offending URL, when a response came over another
/// protocol, a request failed (`Network.loadingFailed`), a response had a
/// status of 400 or more, a request never finished, or the load event is
/// missing; a status the captured page recorded for that URL
/// (`rules.recorded_errors`, a replay's 404s) is no problem. Requests on
/// hosts other than the page's and `rules.reachable_hosts` are listed as
/// skipped. Requests for other schemes than http(s) (`data:`, `blob:`)
/// are not network resources and are left out, and so is the browser's
/// own favicon request.
pub fn page_load_from_events(
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

/// The DevTools events the waterfall is built from, as Chromium sends
/// them: `{"method": "Network.dataReceived", "params": {…}}`. Only the
/// fields read are named; times are seconds on the DevTools clock.
#[derive(Debug, Deserialize)]
#[serde(tag = "method", content = "params")]
enum Event {
    #[serde(rename = "Network.requestWillBeSent")]
    RequestWillBeSent(RequestWillBeSent),
    #[serde(rename = "Network.responseReceived")]
    ResponseReceived(ResponseReceived),
    #[serde(rename = "Network.dataReceived")]
    DataReceived(DataReceived),
    #[serde(rename = "Network.loadingFinished")]
    LoadingFinished(LoadingFinished),
    #[serde(rename = "Network.loadingFailed")]
    LoadingFailed(LoadingFailed),
    #[serde(rename = "Page.loadEventFired")]
    LoadEventFired(PageEvent),
    #[serde(rename = "Page.domContentEventFired")]
    DomContentEventFired(PageEvent),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestWillBeSent {
    request_id: String,
    request: Request,
    timestamp: f64,
    /// Seconds since the Unix epoch.
    wall_time: Option<f64>,
    /// A `Network.ResourceType`: `Document`, `Stylesheet`, …
    #[serde(rename = "type")]
    resource_type: Option<String>,
    initiator: Option<Initiator>,
    /// Set when this continues a request the response redirected.
    redirect_response: Option<Response>,
    render_blocking_behavior: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    url: String,
    method: Option<String>,
    render_blocking_behavior: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Initiator {
    #[serde(rename = "type")]
    initiator_type: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResponseReceived {
    request_id: String,
    timestamp: Option<f64>,
    #[serde(rename = "type")]
    resource_type: Option<String>,
    #[serde(default)]
    response: Response,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    status: Option<u64>,
    /// The ALPN name: `http/1.1`, `h2`, `h3`.
    protocol: Option<String>,
    connection_id: Option<f64>,
    timing: Option<LoadTiming>,
}

/// The network stack's load timing of a response: `request_time` in
/// seconds on the DevTools clock, the others in milliseconds after it
/// (-1 when the step did not happen).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoadTiming {
    request_time: Option<f64>,
    send_start: Option<f64>,
    receive_headers_end: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DataReceived {
    request_id: String,
    data_length: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoadingFinished {
    request_id: String,
    timestamp: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoadingFailed {
    request_id: String,
    timestamp: Option<f64>,
    error_text: Option<String>,
    blocked_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct PageEvent {
    timestamp: Option<f64>,
}

impl RequestWillBeSent {
    /// A request the browser made for itself, not for the page: the
    /// favicon (type `Other`, initiator `other`). It is no resource of the
    /// page; a 404 for it must not fail the load.
    fn is_the_browsers_own(&self) -> bool {
        self.resource_type.as_deref() == Some("Other")
            && self
                .initiator
                .as_ref()
                .and_then(|i| i.initiator_type.as_deref())
                == Some("other")
    }

    fn render_blocking(&self) -> bool {
        [
            &self.request.render_blocking_behavior,
            &self.render_blocking_behavior,
        ]
        .into_iter()
        .any(|behavior| behavior.as_deref() == Some("Blocking"))
    }
}

/// One resource while its events arrive.
#[derive(Debug)]
struct Row {
    url: String,
    method: String,
    kind: ResourceKind,
    render_blocking: bool,
    /// Seconds on the DevTools clock.
    start: f64,
    /// `wallTime` of the request: seconds since the Unix epoch.
    wall_time: Option<f64>,
    status: Option<u16>,
    protocol: Option<String>,
    /// Milliseconds on the DevTools clock.
    ttfb_ms: Option<f64>,
    /// Seconds on the DevTools clock.
    end: Option<f64>,
    bytes: u64,
    connection: Option<u64>,
    /// `response.timing.requestTime` (s) and `sendStart` (ms), for the
    /// document's clock alignment.
    request_time: Option<f64>,
    send_start_ms: Option<f64>,
}

impl Row {
    fn new(sent: &RequestWillBeSent, kind: Option<ResourceKind>) -> Row {
        Row {
            url: sent.request.url.clone(),
            method: (sent.request.method.clone()).unwrap_or_else(|| "GET".to_string()),
            kind: kind.unwrap_or(ResourceKind::Other),
            render_blocking: sent.render_blocking(),
            start: sent.timestamp,
            wall_time: sent.wall_time,
            status: None,
            protocol: None,
            ttfb_ms: None,
            end: None,
            bytes: 0,
            connection: None,
            request_time: None,
            send_start_ms: None,
        }
    }

    fn record_response(&mut self, received: ResponseReceived) {
        if let Some(resource_type) = &received.resource_type {
            self.kind = resource_kind(resource_type);
        }
        let response = received.response;
        self.status = response.status.map(|s| s as u16);
        self.protocol = response.protocol;
        self.connection = response.connection_id.map(|c| c as u64);
        let timing = response.timing;
        let timing = timing.as_ref();
        self.request_time = timing.and_then(|t| t.request_time);
        self.send_start_ms = timing.and_then(|t| t.send_start).filter(|v| *v >= 0.0);
        let headers_end = timing
            .and_then(|t| t.receive_headers_end)
            .filter(|v| *v >= 0.0);
        self.ttfb_ms = match (self.request_time, headers_end) {
            (Some(request_time), Some(headers_end)) => Some(request_time * 1000.0 + headers_end),
            _ => received.timestamp.map(|t| t * 1000.0),
        };
    }
}

/// One navigation's resources as their events arrive, in the order
/// their requests were sent, and the problems seen on the way.
struct Waterfall<'a> {
    /// The ALPN names a response may come over.
    allowed: Vec<&'static str>,
    rules: &'a PageRules,
    rows: Vec<Row>,
    /// Each DevTools `requestId`'s row.
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
            Event::RequestWillBeSent(sent) => self.on_request(sent),
            Event::ResponseReceived(received) => self.on_response(received),
            Event::DataReceived(data) => {
                if let Some(row) = self.row(&data.request_id) {
                    row.bytes += data.data_length.unwrap_or(0);
                }
            }
            Event::LoadingFinished(finished) => {
                if let Some(row) = self.row(&finished.request_id) {
                    row.end = finished.timestamp;
                }
            }
            Event::LoadingFailed(failed) => self.on_failed(failed),
            Event::LoadEventFired(page) => self.load_event = self.load_event.or(page.timestamp),
            Event::DomContentEventFired(page) => {
                self.dom_content_loaded = self.dom_content_loaded.or(page.timestamp)
            }
        }
    }

    fn row(&mut self, request_id: &str) -> Option<&mut Row> {
        let index = *self.by_id.get(request_id)?;
        Some(&mut self.rows[index])
    }

    fn on_request(&mut self, sent: RequestWillBeSent) {
        let url = &sent.request.url;
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return;
        }
        if let Some(&index) = self.by_id.get(&sent.request_id) {
            // A redirect: the same request continues at a new URL.
            if let Some(response) = &sent.redirect_response {
                let problems = self.response_problems(&self.rows[index].url, response);
                self.problems.extend(problems);
            }
            self.rows[index].url = sent.request.url;
            return;
        }
        let kind = sent.resource_type.as_deref().map(resource_kind);
        if self.document.is_some() && sent.is_the_browsers_own() {
            return;
        }
        let host = host_of(url);
        if self.document.is_none() && kind == Some(ResourceKind::Document) {
            self.document = Some(self.rows.len());
            self.page_host = host;
        } else if host != self.page_host && !self.rules.reaches(host) {
            // Never fetched: the host resolver rules send it nowhere.
            self.skipped.push(sent.request.url);
            return;
        }
        self.rows.push(Row::new(&sent, kind));
        self.by_id.insert(sent.request_id, self.rows.len() - 1);
    }

    fn on_response(&mut self, received: ResponseReceived) {
        let Some(&index) = self.by_id.get(&received.request_id) else {
            return;
        };
        let problems = self.response_problems(&self.rows[index].url, &received.response);
        self.problems.extend(problems);
        self.rows[index].record_response(received);
    }

    /// What is wrong with a response for `url`: its protocol, its status.
    fn response_problems(&self, url: &str, response: &Response) -> Vec<Problem> {
        let protocol = response.protocol.as_deref();
        response_problems(&self.allowed, self.rules, url, protocol, response.status)
    }

    fn on_failed(&mut self, failed: LoadingFailed) {
        let Some(&index) = self.by_id.get(&failed.request_id) else {
            return;
        };
        let row = &mut self.rows[index];
        let error = failed.error_text.as_deref().unwrap_or("unknown error");
        // A recorded error answered, then blocked (a 404 page for an
        // image meets Opaque Response Blocking, before DevTools sees its
        // status): the page is as captured.
        let recorded = self.rules.recorded_error(&row.url);
        let answered =
            row.status.is_some_and(|status| status >= 400) || error == "net::ERR_BLOCKED_BY_ORB";
        // Answered, then dropped by the page before the body's end (a
        // script that sends a POST and never reads the answer): the
        // server did its part, and the page chose not to wait.
        let dropped = row.status.is_some() && error == "net::ERR_ABORTED";
        if (recorded && answered) || dropped {
            row.end = failed.timestamp;
            return;
        }
        let why = match &failed.blocked_reason {
            Some(reason) => format!("{error}, blocked: {reason}"),
            None => error.to_string(),
        };
        self.problems.push(Problem {
            url: row.url.clone(),
            reason: Reason::Failed(why),
        });
    }

    /// The load, once every event is in; or every problem it had.
    fn finish(mut self, performance: &PagePerformance) -> Result<PageLoad, String> {
        let Some(document) = self.document else {
            return Err("Chromium reported no request for the page's document".to_string());
        };
        self.note_unfinished();
        let (mut problems, failed) = self.sort_problems();
        let Some(load_event) = self.load_event else {
            problems.push("the page fired no load event".to_string());
            return Err(problems.join("; "));
        };
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        let document = &self.rows[document];
        let zero_ms = document.start * 1000.0;
        let since = |seconds: f64| seconds * 1000.0 - zero_ms;
        let resources = self.resource_timings(zero_ms);
        let load_event_ms = since(load_event);
        let load_ms = resources
            .iter()
            .map(|r| r.end_ms)
            .fold(load_event_ms, f64::max);
        let origin_ms = time_origin_ms(document, performance, zero_ms);
        let page_time = |t: Option<f64>| Some(origin_ms? + t?);
        Ok(PageLoad {
            path_rtt_ms: None,
            started_at: started_at(document)?,
            load_ms,
            resources,
            browser: Some(BrowserTimings {
                load_event_ms,
                dom_content_loaded_ms: self.dom_content_loaded.map(since),
                response_start_ms: page_time(performance.response_start),
                largest_contentful_paint_ms: page_time(performance.largest_contentful_paint),
            }),
            skipped: self.skipped,
            failed,
        })
    }

    /// The problems the page cannot be shown with (a response over
    /// another protocol, a failed document or render-blocking resource),
    /// and the resources it went on without, as a browser does.
    fn sort_problems(&mut self) -> (Vec<String>, Vec<FailedResource>) {
        let problems = std::mem::take(&mut self.problems);
        sort_problems(problems, |url| {
            let row = self.rows.iter().find(|row| row.url == url)?;
            Some((row.method.clone(), row.kind, row.render_blocking))
        })
    }

    /// A problem for each request that neither finished nor had one.
    fn note_unfinished(&mut self) {
        let requests = (self.rows.iter()).map(|row| (row.url.as_str(), row.end.is_some()));
        let unfinished = unfinished(requests, &self.problems);
        self.problems.extend(unfinished);
    }

    /// Each resource's timing, in milliseconds after `zero_ms`, with
    /// connections numbered from 1 in the order they were first used.
    fn resource_timings(&self, zero_ms: f64) -> Vec<ResourceTiming> {
        let since = |seconds: f64| seconds * 1000.0 - zero_ms;
        let mut connections: Vec<u64> = Vec::new();
        let mut number = |raw: u64| {
            let index = connections
                .iter()
                .position(|c| *c == raw)
                .unwrap_or_else(|| {
                    connections.push(raw);
                    connections.len() - 1
                });
            index as u64 + 1
        };
        // A resource the load went on without may never have finished.
        (self.rows.iter())
            .filter_map(|row| Some((row, row.end?)))
            .map(|(row, end)| ResourceTiming {
                url: row.url.clone(),
                method: row.method.clone(),
                kind: row.kind,
                render_blocking: row.render_blocking,
                status: row.status.unwrap_or(0),
                protocol: row.protocol.clone(),
                start_ms: since(row.start),
                ttfb_ms: row.ttfb_ms.map_or(since(end), |ms| ms - zero_ms),
                end_ms: since(end),
                bytes: row.bytes,
                connection: row.connection.map(&mut number),
                stream: None,
            })
            .collect()
    }
}

/// The page's `timeOrigin` on the DevTools clock, in ms after `zero_ms`:
/// found through the document's request, sent at a time both clocks
/// record.
fn time_origin_ms(document: &Row, performance: &PagePerformance, zero_ms: f64) -> Option<f64> {
    let request_time = document.request_time?;
    let send_start = document.send_start_ms?;
    let request_start = performance.request_start?;
    Some(request_time * 1000.0 + send_start - request_start - zero_ms)
}

/// When the document's request was sent, as RFC 3339 with milliseconds.
fn started_at(document: &Row) -> Result<String, String> {
    match document.wall_time {
        Some(seconds) if seconds > 0.0 => Ok(humantime::format_rfc3339_millis(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(seconds),
        )
        .to_string()),
        _ => Err("Chromium gave no wall-clock time for the document's request".to_string()),
    }
}

/// The DevTools `Network.ResourceType` as a [`ResourceKind`].
fn resource_kind(devtools_type: &str) -> ResourceKind {
    match devtools_type {
        "Document" => ResourceKind::Document,
        "Stylesheet" => ResourceKind::Stylesheet,
        "Script" => ResourceKind::Script,
        "Font" => ResourceKind::Font,
        "Image" => ResourceKind::Image,
        _ => ResourceKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The load of `events`, with no page figures and no replay rules.
    fn load_from(events: &[Value], requested: Proto) -> Result<PageLoad, String> {
        page_load_from_events(
            events,
            requested,
            &PagePerformance::default(),
            &PageRules::default(),
        )
    }
    use serde_json::json;

    const T0: f64 = 1000.0;

    fn sent(id: &str, url: &str, kind: &str, at: f64, blocking: Option<&str>) -> Value {
        let mut request = json!({"url": url, "method": "GET"});
        if let Some(blocking) = blocking {
            request["renderBlockingBehavior"] = json!(blocking);
        }
        json!({"method": "Network.requestWillBeSent", "params": {
            "requestId": id, "loaderId": "L", "timestamp": T0 + at, "wallTime": 1.8e9 + at,
            "type": kind, "request": request
        }})
    }

    fn received(
        id: &str,
        kind: &str,
        at: f64,
        protocol: &str,
        connection: u64,
        status: u64,
    ) -> Value {
        json!({"method": "Network.responseReceived", "params": {
            "requestId": id, "timestamp": T0 + at + 0.002, "type": kind,
            "response": {
                "url": "ignored", "status": status, "protocol": protocol, "connectionId": connection,
                "timing": {"requestTime": T0 + at, "sendStart": 0.5, "receiveHeadersEnd": 1.5}
            }
        }})
    }

    fn data(id: &str, length: u64) -> Value {
        json!({"method": "Network.dataReceived", "params": {
            "requestId": id, "timestamp": T0, "dataLength": length, "encodedDataLength": 0
        }})
    }

    fn finished(id: &str, at: f64) -> Value {
        json!({"method": "Network.loadingFinished", "params": {
            "requestId": id, "timestamp": T0 + at, "encodedDataLength": 123
        }})
    }

    fn page(method: &str, at: f64) -> Value {
        json!({"method": method, "params": {"timestamp": T0 + at}})
    }

    /// A page with a stylesheet and an image, all over `protocol`.
    fn page_events(protocol: &str) -> Vec<Value> {
        vec![
            sent("D", "https://a.test/", "Document", 0.0, Some("NonBlocking")),
            received("D", "Document", 0.001, protocol, 7, 200),
            data("D", 300),
            data("D", 100),
            finished("D", 0.010),
            sent(
                "S",
                "https://a.test/s.css",
                "Stylesheet",
                0.011,
                Some("Blocking"),
            ),
            sent("I", "https://a.test/i.png", "Image", 0.012, None),
            sent("X", "data:image/png;base64,AAAA", "Image", 0.012, None),
            received("S", "Stylesheet", 0.011, protocol, 7, 200),
            received("I", "Image", 0.012, protocol, 42, 200),
            data("S", 50),
            data("I", 1000),
            finished("S", 0.020),
            page("Page.domContentEventFired", 0.021),
            page("Page.loadEventFired", 0.030),
            finished("I", 0.040),
        ]
    }

    #[test]
    fn times_are_relative_to_the_documents_request_and_connections_renumbered() {
        let performance = PagePerformance {
            request_start: Some(5.0),
            response_start: Some(7.0),
            largest_contentful_paint: Some(25.0),
        };
        let load = page_load_from_events(
            &page_events("h3"),
            Proto::H3,
            &performance,
            &PageRules::default(),
        )
        .unwrap();
        let urls: Vec<&str> = load.resources.iter().map(|r| r.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "https://a.test/",
                "https://a.test/s.css",
                "https://a.test/i.png"
            ]
        );
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert_eq!(load.started_at, "2027-01-15T08:00:00.000Z");
        let document = &load.resources[0];
        assert_eq!(document.kind, ResourceKind::Document);
        assert!(close(document.start_ms, 0.0));
        // requestTime = T0 + 1 ms, receiveHeadersEnd 1.5 ms after it.
        assert!(close(document.ttfb_ms, 2.5), "{}", document.ttfb_ms);
        assert!(close(document.end_ms, 10.0));
        assert_eq!(document.bytes, 400);
        assert_eq!(document.protocol.as_deref(), Some("h3"));
        assert_eq!(document.stream, None);
        let style = &load.resources[1];
        assert!(style.render_blocking && !document.render_blocking);
        assert_eq!(style.kind, ResourceKind::Stylesheet);
        assert!(close(style.start_ms, 11.0) && close(style.end_ms, 20.0));
        let image = &load.resources[2];
        assert_eq!(image.kind, ResourceKind::Image);
        assert!(!image.render_blocking);
        assert_eq!(image.bytes, 1000);
        let connections: Vec<_> = load.resources.iter().map(|r| r.connection).collect();
        assert_eq!(connections, [Some(1), Some(1), Some(2)]);
        assert_eq!(load.connections(), Some(2));
        // The image finished after the load event: the load ends with it.
        assert!(close(load.load_ms, 40.0), "{}", load.load_ms);
        let browser = load.browser.unwrap();
        assert!(close(browser.load_event_ms, 30.0));
        assert!(close(browser.dom_content_loaded_ms.unwrap(), 21.0));
        // The request was sent at 1 + 0.5 ms on our clock and at 5 ms on the
        // page's: its timeOrigin is at -3.5 ms.
        assert!(close(browser.response_start_ms.unwrap(), 3.5));
        assert!(close(browser.largest_contentful_paint_ms.unwrap(), 21.5));
    }

    #[test]
    fn page_times_are_null_when_the_page_did_not_report_them() {
        let load = load_from(&page_events("h2"), Proto::H2).unwrap();
        let browser = load.browser.unwrap();
        assert_eq!(browser.response_start_ms, None);
        assert_eq!(browser.largest_contentful_paint_ms, None);
        let performance = PagePerformance::from_json(&json!({
            "requestStart": 3.0, "responseStart": 4.0, "lcp": null
        }));
        assert_eq!(performance.largest_contentful_paint, None);
        assert_eq!(performance.response_start, Some(4.0));
    }

    #[test]
    fn a_response_over_another_protocol_is_named_with_its_url() {
        let mut events = page_events("h3");
        events[9] = received("I", "Image", 0.012, "h2", 42, 200);
        let err = load_from(&events, Proto::H3).unwrap_err();
        assert_eq!(err, "https://a.test/i.png came over h2, not h3");
        let err = load_from(&page_events("h2"), Proto::H1).unwrap_err();
        assert!(
            err.contains("https://a.test/s.css came over h2, not http/1.1"),
            "{err}"
        );
    }

    /// A browser shows the page without an image that failed, but not
    /// without its document or a render-blocking stylesheet.
    #[test]
    fn a_failed_image_is_listed_and_a_failed_blocking_resource_fails_the_load() {
        let mut events = page_events("h3");
        events[15] = json!({"method": "Network.loadingFailed", "params": {
            "requestId": "I", "timestamp": T0 + 0.04, "type": "Image",
            "errorText": "net::ERR_QUIC_PROTOCOL_ERROR", "canceled": false
        }});
        let load = load_from(&events, Proto::H3).unwrap();
        assert_eq!(
            load.failed,
            [FailedResource {
                method: "GET".into(),
                url: "https://a.test/i.png".into(),
                why: "failed to load: net::ERR_QUIC_PROTOCOL_ERROR".into(),
            }]
        );
        assert_eq!(load.resources.len(), 2, "the image never finished");
        let mut events = page_events("h3");
        events[8] = received("S", "Stylesheet", 0.011, "h3", 7, 404);
        let err = load_from(&events, Proto::H3).unwrap_err();
        assert_eq!(err, "https://a.test/s.css answered status 404");
    }

    #[test]
    fn an_unfinished_request_is_listed_and_a_missing_load_event_fails_the_load() {
        let mut events = page_events("h3");
        events.pop();
        let load = load_from(&events, Proto::H3).unwrap();
        assert_eq!(load.failed[0].why, "never finished loading");
        let mut events = page_events("h3");
        events.remove(14);
        let err = load_from(&events, Proto::H3).unwrap_err();
        assert_eq!(err, "the page fired no load event");
        let err = load_from(&events[4..], Proto::H3).unwrap_err();
        assert_eq!(err, "Chromium reported no request for the page's document");
    }

    /// A script that POSTs and never reads the answer: Chromium reports
    /// the request aborted after its response came. The server answered,
    /// so the load has it, not a failure.
    #[test]
    fn a_request_answered_then_dropped_by_the_page_is_complete() {
        let mut events = page_events("h3");
        events[15] = json!({"method": "Network.loadingFailed", "params": {
            "requestId": "I", "timestamp": T0 + 0.04, "errorText": "net::ERR_ABORTED"
        }});
        let load = load_from(&events, Proto::H3).unwrap();
        assert!(load.failed.is_empty(), "{:?}", load.failed);
        assert_eq!(load.resources.len(), 3);
        // Aborted before any answer, it failed.
        events.remove(9);
        let load = load_from(&events, Proto::H3).unwrap();
        assert_eq!(load.failed[0].why, "failed to load: net::ERR_ABORTED");
    }

    #[test]
    fn an_unfinished_document_is_named_even_when_a_url_under_it_failed() {
        let mut events = page_events("h3");
        events[9] = received("I", "Image", 0.012, "h3", 42, 404);
        events.remove(4);
        let err = load_from(&events, Proto::H3).unwrap_err();
        assert_eq!(err, "https://a.test/ never finished loading");
    }

    #[test]
    fn events_of_other_methods_or_shapes_are_passed_over() {
        let with_session = |mut event: Value| {
            event["sessionId"] = json!("S1");
            event
        };
        let mut events: Vec<Value> = page_events("h3").into_iter().map(with_session).collect();
        events.insert(
            4,
            json!({"method": "Network.requestServedFromCache", "params": {"requestId": "D"}}),
        );
        events.insert(
            4,
            json!({"method": "Network.dataReceived", "params": {"dataLength": 5}}),
        );
        events.insert(4, json!({"id": 3, "result": {}}));
        let load = load_from(&events, Proto::H3).unwrap();
        assert_eq!(load, load_from(&page_events("h3"), Proto::H3).unwrap());
    }

    #[test]
    fn the_browsers_favicon_request_is_no_resource_of_the_page() {
        let mut events = page_events("h3");
        let mut favicon = sent("F", "https://a.test/favicon.ico", "Other", 0.031, None);
        favicon["params"]["initiator"] = json!({"type": "other"});
        events.push(favicon);
        events.push(received("F", "Other", 0.031, "h3", 7, 404));
        events.push(finished("F", 0.050));
        let load = load_from(&events, Proto::H3).unwrap();
        assert_eq!(load.resources.len(), 3);
        assert!((load.load_ms - 40.0).abs() < 1e-6);
    }

    #[test]
    fn a_redirect_continues_the_same_resource() {
        let mut events = page_events("h3");
        let mut redirect = sent("S", "https://a.test/s2.css", "Stylesheet", 0.0115, None);
        redirect["params"]["redirectResponse"] = json!({"status": 301, "protocol": "h3"});
        events.insert(6, redirect);
        let load = load_from(&events, Proto::H3).unwrap();
        assert_eq!(load.resources.len(), 3);
        assert_eq!(load.resources[1].url, "https://a.test/s2.css");
        assert!((load.resources[1].start_ms - 11.0).abs() < 1e-6);
    }
    #[test]
    fn a_replays_reachable_hosts_are_fetched_and_its_recorded_errors_pass() {
        let mut events = page_events("h3");
        events.push(sent("B", "https://badge.test/b.svg", "Image", 0.013, None));
        events.push(json!({"method": "Network.loadingFailed", "params": {
            "requestId": "B", "timestamp": T0 + 0.014, "errorText": "net::ERR_BLOCKED_BY_ORB"
        }}));
        let mut rules = PageRules {
            reachable_hosts: vec!["badge.test".into()],
            recorded_errors: Vec::new(),
        };
        let load =
            page_load_from_events(&events, Proto::H3, &PagePerformance::default(), &rules).unwrap();
        assert_eq!(
            load.failed[0].to_string(),
            "GET https://badge.test/b.svg: failed to load: net::ERR_BLOCKED_BY_ORB"
        );
        rules.recorded_errors = vec!["https://badge.test/b.svg".into()];
        let load =
            page_load_from_events(&events, Proto::H3, &PagePerformance::default(), &rules).unwrap();
        assert_eq!(load.resources.len(), 4);
        assert!(load.skipped.is_empty() && load.failed.is_empty());
        assert_eq!(
            load.resources[3].status, 0,
            "blocked before DevTools saw it"
        );
    }

    #[test]
    fn resources_on_other_hosts_are_listed_as_skipped_and_their_failure_ignored() {
        let mut events = page_events("h3");
        events.push(sent("B", "https://badge.test/b.svg", "Image", 0.013, None));
        events.push(json!({"method": "Network.loadingFailed", "params": {
            "requestId": "B", "timestamp": T0 + 0.014, "errorText": "net::ERR_NAME_NOT_RESOLVED"
        }}));
        let load = load_from(&events, Proto::H3).unwrap();
        assert_eq!(load.resources.len(), 3);
        assert_eq!(load.skipped, ["https://badge.test/b.svg"]);
    }
}
