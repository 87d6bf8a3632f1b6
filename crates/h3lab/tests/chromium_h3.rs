//! Real Chromium loads a small page from `h3lab serve` over HTTP/3, many
//! times in a row, each time with a fresh profile (so a full handshake),
//! through h3lab's Chromium loader: the DevTools protocol confirms that
//! every response came over h3. A navigation that stalls fails the test:
//! there are no retries.
//!
//! 30 navigations by default; `H3LAB_CHROMIUM_PAGES=100` runs the long
//! check on demand.

mod common;

use std::ops::ControlFlow;
use std::time::Duration;

use h3lab_page::chromium::{load_page, ChromiumOptions, Trust};
use h3lab_results::{Proto, ResourceKind, Visit};

use common::Server;

const DEFAULT_PAGES: u32 = 30;

/// A navigation over loopback takes milliseconds; one without its load
/// event by then has stalled.
const NAVIGATION_WINDOW: Duration = Duration::from_secs(10);

/// The stylesheet gives the marker a background image: Chromium fetches
/// `mark.svg` only when the stylesheet was loaded and applied to it.
const PAGE: &str = "<!doctype html><html><head><link rel=stylesheet href=style.css>\
    <title>h3lab</title></head><body><p id=marker>served over h3</p></body></html>";
const STYLE: &str = "#marker { color: rgb(1, 2, 3); background-image: url(mark.svg) }";
const MARK: &str = "<svg xmlns='http://www.w3.org/2000/svg' width='8' height='8'/>";

#[test]
fn chromium_loads_a_page_over_h3_every_time_with_fresh_profiles() {
    let Some(chromium) = h3lab_testenv::chromium() else {
        return;
    };
    let pages = std::env::var("H3LAB_CHROMIUM_PAGES")
        .map(|n| n.parse().expect("H3LAB_CHROMIUM_PAGES is a count of pages"))
        .unwrap_or(DEFAULT_PAGES);
    let site = tempfile::tempdir().unwrap();
    std::fs::write(site.path().join("index.html"), PAGE).unwrap();
    std::fs::write(site.path().join("style.css"), STYLE).unwrap();
    std::fs::write(site.path().join("mark.svg"), MARK).unwrap();
    let server = Server::start(&["--root".as_ref(), site.path().as_os_str()]);
    let url = format!("https://127.0.0.1:{}/static/index.html", server.addr.port());
    let options = ChromiumOptions {
        binary: Some(chromium),
        proto: Proto::H3,
        trust: Trust::SpkiSha256Base64(server.spki.clone()),
        visit: Visit::Cold,
        loads: pages,
        navigation_timeout: NAVIGATION_WINDOW,
        resolve: Vec::new(),
        dns_origins: Vec::new(),
        recorded_errors: Vec::new(),
    };
    let mut done = 0;
    // A stall, a failed request or a response not over h3 ends the run
    // with an error naming it; nothing is retried.
    let report = load_page(&url, &options, &mut |_| {
        done += 1;
        ControlFlow::Continue(())
    })
    .unwrap_or_else(|err| panic!("after {done} of {pages} navigations: {err:#}"));
    assert_eq!(report.loads.len(), pages as usize);
    for (n, load) in report.loads.iter().enumerate() {
        let seen: Vec<(&str, ResourceKind, Option<&str>)> = load
            .resources
            .iter()
            .map(|r| {
                let name = r.url.rsplit('/').next().unwrap_or("");
                (name, r.kind, r.protocol.as_deref())
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("index.html", ResourceKind::Document, Some("h3")),
                ("style.css", ResourceKind::Stylesheet, Some("h3")),
                // Only requested once the stylesheet applied to the marker.
                ("mark.svg", ResourceKind::Image, Some("h3")),
            ],
            "navigation {}: every response over h3, the stylesheet applied",
            n + 1
        );
    }
    let mut times: Vec<f64> = report.loads.iter().map(|l| l.load_ms).collect();
    times.sort_by(f64::total_cmp);
    eprintln!(
        "{pages} navigations over h3, no stall: load median {:.1} ms, max {:.1} ms",
        times[times.len() / 2],
        times[times.len() - 1]
    );
}
