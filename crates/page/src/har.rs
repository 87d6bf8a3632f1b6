//! HAR 1.2 export of page loads (one HAR page per load), so a waterfall
//! opens in a browser's DevTools, WebPageTest or any HAR viewer.
//!
//! What a loader does not measure is written as HAR's "not available":
//! `-1` for DNS, connect, TLS and header sizes, and `x-unknown` for a MIME
//! type. `send` is 0: a GET without a body is sent at once.

use std::time::Duration;

use anyhow::Context;
use h3lab_results::page::{PageLoad, PageReport, ResourceTiming};
use serde_json::{json, Value};

/// The HAR document for every load of `report`.
pub fn to_har(report: &PageReport) -> anyhow::Result<Value> {
    let mut pages = Vec::new();
    let mut entries = Vec::new();
    for (n, load) in report.loads.iter().enumerate() {
        let id = format!("load_{}", n + 1);
        pages.push(page(report, load, &id));
        for resource in &load.resources {
            entries.push(entry(load, resource, &id)?);
        }
    }
    Ok(json!({
        "log": {
            "version": "1.2",
            "creator": {"name": "h3lab", "version": env!("CARGO_PKG_VERSION")},
            "browser": {"name": report.loader.name(), "version": ""},
            "pages": pages,
            "entries": entries,
            "comment": format!("{} {} load(s) of {} over {}", report.visit, report.loads.len(), report.url, report.proto),
        }
    }))
}

/// Writes the HAR document of `report` to `path`.
pub fn write_har(report: &PageReport, path: &std::path::Path) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(&to_har(report)?)?;
    std::fs::write(path, text).with_context(|| format!("writing the HAR file {}", path.display()))
}

fn page(report: &PageReport, load: &PageLoad, id: &str) -> Value {
    let on_content_load = load
        .browser
        .as_ref()
        .and_then(|b| b.dom_content_loaded_ms)
        .unwrap_or(-1.0);
    let on_load = load
        .browser
        .as_ref()
        .map_or(load.load_ms, |b| b.load_event_ms);
    json!({
        "startedDateTime": load.started_at,
        "id": id,
        "title": report.url,
        "pageTimings": {"onContentLoad": on_content_load, "onLoad": on_load},
    })
}

fn entry(load: &PageLoad, resource: &ResourceTiming, page: &str) -> anyhow::Result<Value> {
    let http_version = resource.protocol.clone().unwrap_or_default();
    let wait = (resource.ttfb_ms - resource.start_ms).max(0.0);
    let receive = (resource.end_ms - resource.ttfb_ms).max(0.0);
    let mut value = json!({
        "pageref": page,
        "startedDateTime": offset(&load.started_at, resource.start_ms)?,
        "time": wait + receive,
        "request": {
            "method": "GET",
            "url": resource.url,
            "httpVersion": http_version,
            "cookies": [],
            "headers": [],
            "queryString": [],
            "headersSize": -1,
            "bodySize": 0,
        },
        "response": {
            "status": resource.status,
            "statusText": "",
            "httpVersion": http_version,
            "cookies": [],
            "headers": [],
            "content": {"size": resource.bytes, "mimeType": "x-unknown"},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": resource.bytes,
        },
        "cache": {},
        "timings": {
            "blocked": -1, "dns": -1, "connect": -1, "ssl": -1,
            "send": 0, "wait": wait, "receive": receive,
        },
        "_resourceType": resource.kind.name(),
        "_renderBlocking": resource.render_blocking,
    });
    if let Some(connection) = resource.connection {
        value["connection"] = json!(connection.to_string());
    }
    if let Some(stream) = resource.stream {
        value["_stream"] = json!(stream);
    }
    Ok(value)
}

/// `started_at` plus `ms`, as RFC 3339 with milliseconds.
fn offset(started_at: &str, ms: f64) -> anyhow::Result<String> {
    let start = humantime::parse_rfc3339(started_at)
        .with_context(|| format!("the load's start `{started_at}` is not RFC 3339"))?;
    let at = start + Duration::from_secs_f64(ms.max(0.0) / 1e3);
    Ok(humantime::format_rfc3339_millis(at).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use h3lab_results::page::BrowserTimings;
    use h3lab_results::{Loader, Proto, ResourceKind, Visit};

    fn row(url: &str, start: f64, ttfb: f64, end: f64) -> ResourceTiming {
        ResourceTiming {
            method: "GET".to_string(),
            url: url.into(),
            kind: ResourceKind::Image,
            render_blocking: false,
            status: 200,
            protocol: Some("h3".into()),
            start_ms: start,
            ttfb_ms: ttfb,
            end_ms: end,
            bytes: 1234,
            connection: Some(1),
            stream: Some(4),
        }
    }

    fn report() -> PageReport {
        let mut report =
            PageReport::new("https://a.test/", Proto::H3, Loader::Builtin, Visit::Cold);
        report.loads.push(PageLoad {
            failed: Vec::new(),
            path_rtt_ms: None,
            started_at: "2026-11-23T08:00:00.000Z".into(),
            load_ms: 60.0,
            resources: vec![
                row("https://a.test/", 0.0, 20.0, 25.0),
                row("https://a.test/a.png", 1500.5, 1530.0, 1560.0),
            ],
            browser: None,
            skipped: Vec::new(),
        });
        let mut second = report.loads[0].clone();
        second.browser = Some(BrowserTimings {
            load_event_ms: 70.0,
            dom_content_loaded_ms: Some(30.0),
            response_start_ms: Some(20.0),
            largest_contentful_paint_ms: None,
        });
        report.loads.push(second);
        report
    }

    #[test]
    fn the_har_reads_back_as_har_1_2() {
        let text = serde_json::to_string(&to_har(&report()).unwrap()).unwrap();
        let har = har::from_reader(text.as_bytes()).expect("valid HAR");
        let har::Spec::V1_2(log) = har.log else {
            panic!("not HAR 1.2");
        };
        assert_eq!(log.entries.len(), 4);
        let pages = log.pages.unwrap();
        assert_eq!(pages.len(), 2);
        assert_eq!(pages[1].page_timings.on_load, Some(70.0));
        assert_eq!(pages[1].page_timings.on_content_load, Some(30.0));
        assert_eq!(pages[0].page_timings.on_content_load, Some(-1.0));
        let second = &log.entries[1];
        assert_eq!(second.started_date_time, "2026-11-23T08:00:01.500Z");
        assert_eq!(second.pageref.as_deref(), Some("load_1"));
        assert_eq!(second.response.body_size, 1234);
        assert_eq!(second.request.http_version, "h3");
    }

    #[test]
    fn each_entry_time_is_the_sum_of_its_known_timings() {
        let value = to_har(&report()).unwrap();
        for entry in value["log"]["entries"].as_array().unwrap() {
            let timings = entry["timings"].as_object().unwrap();
            let known: f64 = timings
                .values()
                .map(|v| v.as_f64().unwrap())
                .filter(|v| *v >= 0.0)
                .sum();
            assert!((entry["time"].as_f64().unwrap() - known).abs() < 1e-9);
        }
    }
}
