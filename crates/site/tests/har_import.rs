//! `site from-har` on captures in the shapes Chrome, Firefox, Playwright
//! and WebPageTest write (fixtures/har/README.md says where each quirk was
//! confirmed), and on broken HARs.

use std::io::Read;
use std::path::{Path, PathBuf};

use h3lab_site::har::{import, off_size, ImportOptions, ImportSummary};
use h3lab_site::replay::{OutsideLoad, Replay, Think, BODIES};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/har")
        .join(name)
}

fn options() -> ImportOptions {
    ImportOptions {
        think: Think::Recorded,
        page: None,
        keep_first_duplicate: false,
        upgrade_cleartext: false,
    }
}

fn import_fixture(name: &str, out: &Path) -> ImportSummary {
    import(&fixture(name), out, &options()).unwrap()
}

/// The page every fixture captured: URL, status, decoded length.
const PAGE: [(&str, u16, usize); 5] = [
    ("https://www.example.test/", 200, 2934),
    ("https://static.example.test/app.css", 200, 2169),
    ("https://static.example.test/app.js", 200, 2527),
    ("https://img.example.test/hero.png", 200, 1653),
    ("https://img.example.test/missing.png", 404, 158),
];

fn decoded(dir: &Path, body: &str, encoding: Option<&str>) -> Vec<u8> {
    let bytes = std::fs::read(dir.join(BODIES).join(body)).unwrap();
    let mut out = Vec::new();
    match encoding {
        None => return bytes,
        Some("gzip") => flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .unwrap(),
        Some("br") => brotli::Decompressor::new(&bytes[..], 4096)
            .read_to_end(&mut out)
            .unwrap(),
        Some(other) => panic!("unexpected encoding {other}"),
    };
    out
}

#[test]
fn every_tools_capture_imports_as_the_same_three_origin_page() {
    for tool in ["chrome", "firefox", "playwright", "webpagetest"] {
        let out = tempfile::tempdir().unwrap();
        let summary = import_fixture(&format!("{tool}.har"), out.path());
        let replay = Replay::read(out.path()).unwrap();
        assert_eq!(replay.page, "https://www.example.test/", "{tool}");
        let hosts: Vec<_> = replay.origins.iter().map(|o| o.host.as_str()).collect();
        assert_eq!(
            hosts,
            [
                "www.example.test",
                "static.example.test",
                "img.example.test"
            ],
            "{tool}"
        );
        assert_eq!(replay.responses.len(), PAGE.len(), "{tool}: {summary}");
        for (url, status, length) in PAGE {
            let response = replay.responses.iter().find(|r| r.url == url).unwrap();
            assert_eq!(response.status, status, "{tool} {url}");
            let encoding = response
                .headers
                .iter()
                .find(|(name, _)| name == "content-encoding")
                .map(|(_, value)| value.as_str());
            if !response.synthesized {
                let body = decoded(out.path(), &response.body, encoding);
                assert_eq!(body.len(), length, "{tool} {url}");
            }
            assert!(!off_size(response), "{tool} {url}: {summary}");
            let framing = response.headers.iter().any(|(name, _)| {
                name.starts_with(':') || name == "content-length" || name == "alt-svc"
            });
            assert!(!framing, "{tool} {url}: {:?}", response.headers);
        }
    }
}

#[test]
fn compressed_bodies_go_out_in_their_recorded_encoding_at_their_recorded_size() {
    let out = tempfile::tempdir().unwrap();
    import_fixture("firefox.har", out.path());
    let replay = Replay::read(out.path()).unwrap();
    let document = &replay.responses[0];
    assert!(document
        .headers
        .contains(&("content-encoding".into(), "gzip".into())));
    assert_eq!(document.recorded_body_bytes, Some(1354));
    assert!(document.body_bytes.abs_diff(1354) <= 5, "{document:?}");
    let css = replay
        .responses
        .iter()
        .find(|r| r.url.ends_with(".css"))
        .unwrap();
    assert!(css
        .headers
        .contains(&("content-encoding".into(), "br".into())));
    assert!(css.body_bytes.abs_diff(763) <= 5, "{css:?}");
    assert!(css
        .headers
        .contains(&("cache-control".into(), "public, max-age=31536000".into())));
}

#[test]
fn what_cannot_be_replayed_is_listed_with_its_reason() {
    let out = tempfile::tempdir().unwrap();
    let chrome = import_fixture("chrome.har", out.path()).replay;
    let reasons: Vec<_> = chrome.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(
        reasons.iter().any(|r| r.starts_with("a repeat of entry")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("WebSocket")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("ERR_NAME_NOT_RESOLVED")),
        "{reasons:?}"
    );
    let out = tempfile::tempdir().unwrap();
    let firefox = import_fixture("firefox.har", out.path()).replay;
    assert!(firefox
        .skipped
        .iter()
        .any(|s| s.reason.contains("data: URL")));
}

#[test]
fn chromes_initiators_and_recorded_think_times_are_kept() {
    let out = tempfile::tempdir().unwrap();
    let replay = import_fixture("chrome.har", out.path()).replay;
    let css = replay
        .responses
        .iter()
        .find(|r| r.url.ends_with(".css"))
        .unwrap();
    assert_eq!(css.initiator.as_deref(), Some("https://www.example.test/"));
    let document = &replay.responses[0];
    assert!(document.initiator.is_none());
    // ~45 ms wait on a ~40 ms path: about 5 ms of server think time.
    assert!((1.0..15.0).contains(&document.think_ms), "{document:?}");
}

#[test]
fn every_tools_timings_give_the_documents_few_milliseconds_of_think_time() {
    // Each fixture's document waited ~45 ms on a ~40 ms path; Firefox
    // counts TLS apart from `connect`, the others inside it.
    for tool in ["chrome", "firefox", "playwright"] {
        let out = tempfile::tempdir().unwrap();
        let replay = import_fixture(&format!("{tool}.har"), out.path()).replay;
        let think = replay.responses[0].think_ms;
        assert!((1.0..15.0).contains(&think), "{tool}: {think} ms");
    }
}

#[test]
fn a_har_of_several_pages_imports_the_one_asked_for() {
    let out = tempfile::tempdir().unwrap();
    let first = import_fixture("webpagetest.har", out.path());
    assert!(first.page_note.unwrap().contains("--page"));
    let repeat = ImportOptions {
        page: Some("page_1_1_1".into()),
        ..options()
    };
    let replay = import(&fixture("webpagetest.har"), out.path(), &repeat)
        .unwrap()
        .replay;
    assert!(
        replay.responses.len() < PAGE.len(),
        "{:?}",
        replay.responses
    );
    let wrong = ImportOptions {
        page: Some("page_9".into()),
        ..options()
    };
    let err = import(&fixture("webpagetest.har"), out.path(), &wrong).unwrap_err();
    assert!(format!("{err:#}").contains("page_1_0_1"), "{err:#}");
}

#[test]
fn the_page_is_the_url_the_capture_loaded_not_the_first_entry() {
    let out = tempfile::tempdir().unwrap();
    let replay = import_fixture("redirected-page.har", out.path()).replay;
    // Its redirect to /home is recorded, and the loaders follow it.
    assert_eq!(replay.page, "https://www.site.test/");
    assert_eq!(replay.responses[0].url, "https://cdn.site.test/logo.svg");
    assert_eq!(replay.recorded.protocol.as_deref(), Some("http/1.1"));
    // A redirect that leads out of the HAR is no page.
    let mut har: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("redirected-page.har")).unwrap())
            .unwrap();
    har["log"]["entries"][1]["response"]["headers"][1]["value"] = "/elsewhere".into();
    let broken = out.path().join("broken.har");
    std::fs::write(&broken, har.to_string()).unwrap();
    let err = import(&broken, &out.path().join("site"), &options()).unwrap_err();
    assert!(
        format!("{err:#}").contains("leads to https://www.site.test/elsewhere"),
        "{err:#}"
    );
}

#[test]
fn broken_hars_are_refused_naming_the_problem_and_the_fix() {
    let cases = [
        ("bad/not-har.json", "no `log`"),
        ("bad/version-1-0.har", "HAR version 1.0"),
        ("bad/no-response.har", "has no `response`"),
        // Never the logo, the one entry that survives: the page, why not,
        // and the option that replays it.
        (
            "cleartext-page.har",
            "the HAR's page http://news.test/ is not among the responses h3lab can replay: \
             entry 0 was skipped (cleartext http:// (the replay serves https only; \
             --upgrade-cleartext replays it over https))",
        ),
    ];
    for (name, expected) in cases {
        let out = tempfile::tempdir().unwrap();
        let err = import(&fixture(name), out.path(), &options()).unwrap_err();
        assert!(format!("{err:#}").contains(expected), "{name}: {err:#}");
        assert!(!out.path().join("replay.json").exists(), "{name}");
    }
}

#[test]
fn a_request_made_again_keeps_each_recorded_response_in_order() {
    let out = tempfile::tempdir().unwrap();
    let summary = import_fixture("repeated-requests.har", out.path());
    let replay = &summary.replay;
    let answers = |url: &str| -> Vec<(u32, String)> {
        (replay.responses.iter())
            .filter(|r| r.url == url)
            .map(|r| {
                let body = std::fs::read(out.path().join(BODIES).join(&r.body)).unwrap();
                (r.repeat, String::from_utf8(body).unwrap())
            })
            .collect()
    };
    let cart = "https://shop.example.test/cart.json?t=1";
    assert_eq!(
        answers(cart),
        [(0, r#"{"items":0}"#.into()), (1, r#"{"items":1}"#.into())]
    );
    let beacons = (replay.responses.iter()).filter(|r| r.method == "POST");
    assert_eq!(beacons.map(|r| r.repeat).collect::<Vec<_>>(), [0, 1]);
    // The third read came from the memory cache: no request to replay.
    let [cached] = &replay.skipped[..] else {
        panic!("{:?}", replay.skipped)
    };
    assert_eq!((cached.entry, cached.url.as_str()), (6, cart));
    assert!(cached.reason.contains("memory cache"), "{}", cached.reason);
    // The initiator graph names a GET once, however often it was asked
    // for (a browser's cache), and a POST as often as it was sent.
    let initiated = replay.initiated();
    let from_script: Vec<(&str, &str, u32)> = (initiated["https://shop.example.test/app.js"]
        .iter())
    .map(|r| (r.method.as_str(), r.url.as_str(), r.repeat))
    .collect();
    let beacon = "https://shop.example.test/beacon";
    assert_eq!(
        from_script,
        [("GET", cart, 0), ("POST", beacon, 0), ("POST", beacon, 1)]
    );
    let text = summary.to_string();
    assert!(
        text.contains("repeated requests: 2 URLs asked for more than once, 2 later responses"),
        "{text}"
    );

    let keep = ImportOptions {
        keep_first_duplicate: true,
        ..options()
    };
    let out = tempfile::tempdir().unwrap();
    let first_only = import(&fixture("repeated-requests.har"), out.path(), &keep).unwrap();
    let replay = first_only.replay;
    assert!(replay.responses.iter().all(|r| r.repeat == 0));
    assert_eq!(replay.responses.len(), 4, "{:?}", replay.responses);
    assert_eq!(replay.skipped.len(), 3, "{:?}", replay.skipped);
}

#[test]
fn an_import_replaces_an_earlier_replay_but_not_other_files() {
    let out = tempfile::tempdir().unwrap();
    import_fixture("chrome.har", out.path());
    import_fixture("firefox.har", out.path());
    assert!(Replay::read(out.path()).unwrap().source.contains("Firefox"));
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("notes.txt"), "mine").unwrap();
    let err = import(&fixture("chrome.har"), other.path(), &options()).unwrap_err();
    assert!(err.to_string().contains("--out"), "{err}");
}

#[test]
fn a_cleartext_capture_is_replayed_over_https_with_its_urls_upgraded() {
    let out = tempfile::tempdir().unwrap();
    let upgrade = ImportOptions {
        upgrade_cleartext: true,
        ..options()
    };
    let summary = import(&fixture("cleartext-page.har"), out.path(), &upgrade).unwrap();
    let replay = &summary.replay;
    // WebPageTest's first view of run 1, of its four pages.
    let note = summary.page_note.as_deref().unwrap();
    assert!(
        note.contains("imported the first view of the first run, `page_1_0`"),
        "{note}"
    );
    assert_eq!(replay.page, "https://news.test/");
    let body = |url: &str| {
        let response = replay.responses.iter().find(|r| r.url == url).unwrap();
        std::fs::read_to_string(out.path().join(BODIES).join(&response.body)).unwrap()
    };
    let html = body("https://www.news.test/");
    for upgraded in [
        r#"href="https://www.news.test/css/site.css""#,
        r#"src="https://cdn.news.test/logo.svg""#,
        r#"src="https://static.news.test/img/lead.jpg""#,
        // Not in the capture: left as it was.
        r#"href="http://other.example/""#,
    ] {
        assert!(html.contains(upgraded), "{upgraded} in {html}");
    }
    assert!(body("https://www.news.test/css/site.css").contains("url(https://static.news.test/"));
    let first = &replay.responses[0];
    assert!(first
        .headers
        .contains(&("location".into(), "https://www.news.test/".into())));
    // The CDN's http:// logo redirected to its https:// self: moot now.
    let [moot] = &replay.skipped[..] else {
        panic!("{:?}", replay.skipped)
    };
    assert_eq!(moot.url, "http://cdn.news.test/logo.svg");
    let upgraded = replay.upgraded.as_ref().unwrap();
    assert_eq!(
        upgraded.hosts,
        [
            "cdn.news.test",
            "news.test",
            "static.news.test",
            "www.news.test"
        ]
    );
    assert_eq!(
        (
            upgraded.entries,
            upgraded.urls_rewritten,
            upgraded.redirects_dropped
        ),
        (7, 5, 1)
    );
    assert_eq!(replay.responses.len(), 8, "{:?}", replay.responses);
    assert!(replay
        .responses
        .iter()
        .all(|r| r.url.starts_with("https://")));
    let text = summary.to_string();
    assert!(
        text.contains("upgraded: 7 entries captured over http:// are replayed over https"),
        "{text}"
    );
    // The repeat view of the second run, asked for by its id.
    let repeat = ImportOptions {
        page: Some("page_2_1".into()),
        ..upgrade
    };
    let replay = import(&fixture("cleartext-page.har"), out.path(), &repeat)
        .unwrap()
        .replay;
    assert_eq!(replay.responses.len(), 2, "{:?}", replay.responses);
}

/// Requests a page load does not make, as Playwright records them: the
/// tab's icon and a script's fetch after the load event (at 353 ms). They
/// are replayed, marked, counted apart and kept out of the initiator graph.
#[test]
fn requests_outside_the_page_load_are_replayed_but_counted_apart() {
    let mut har: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("playwright.har")).unwrap()).unwrap();
    let entries = har["log"]["entries"].as_array_mut().unwrap();
    let mut favicon = entries[3].clone();
    favicon["request"]["url"] = "https://www.example.test/favicon-8114d1fc.png".into();
    favicon["_resourceType"] = "other".into();
    let mut late = entries[2].clone();
    late["request"]["url"] = "https://static.example.test/later.js".into();
    late["startedDateTime"] = "2026-11-20T09:15:30.600Z".into();
    late["_initiator"] =
        serde_json::json!({"type": "script", "url": "https://static.example.test/app.js"});
    let mut prefetch = entries[2].clone();
    prefetch["request"]["url"] = "https://static.example.test/next-page.js".into();
    prefetch["_resourceType"] = "prefetch".into();
    entries.extend([favicon, late, prefetch]);
    let out = tempfile::tempdir().unwrap();
    let har_path = out.path().join("page.har");
    std::fs::write(&har_path, har.to_string()).unwrap();
    let attachment = "afa44842ff2e55c44439c1db22f2b3a5d42c59b8.png";
    std::fs::copy(fixture(attachment), out.path().join(attachment)).unwrap();
    let summary = import(&har_path, &out.path().join("site"), &options()).unwrap();
    let replay = &summary.replay;
    let outside: Vec<_> = (replay.responses.iter())
        .filter_map(|r| Some((r.url.rsplit('/').next().unwrap(), r.outside_load?)))
        .collect();
    assert_eq!(
        outside,
        [
            ("favicon-8114d1fc.png", OutsideLoad::Favicon),
            ("later.js", OutsideLoad::AfterLoad),
            ("next-page.js", OutsideLoad::Prefetch),
        ]
    );
    assert_eq!(replay.in_load().count(), PAGE.len());
    assert!(replay
        .initiated()
        .values()
        .flatten()
        .all(|request| !request.url.ends_with("later.js")));
    let text = summary.to_string();
    assert!(text.contains("outside the page load: 3"), "{text}");
    assert!(
        text.contains("started after the load event: https://static.example.test/later.js"),
        "{text}"
    );
}

/// A shop page's POST beacons keep their request bodies: the text where
/// the capture kept it, the size alone where it did not (sent as filler
/// of that size); the repeated POST is replayed twice, and the summary
/// counts the requests that are not GETs.
#[test]
fn post_beacons_keep_their_bodies_and_are_counted_by_method() {
    let out = tempfile::tempdir().unwrap();
    let summary = import_fixture("beacons.har", out.path());
    let replay = &summary.replay;
    let posts: Vec<(&str, u32, Option<&str>, u64)> = (replay.responses.iter())
        .filter(|r| r.method == "POST")
        .map(|r| {
            let body = r.request_body.as_ref().unwrap();
            (r.path.as_str(), r.repeat, body.text.as_deref(), body.bytes)
        })
        .collect();
    assert_eq!(
        posts,
        [
            (
                "/j/collect?v=1&t=pageview",
                0,
                Some("v=1&t=pageview&tid=UA-1"),
                23
            ),
            ("/g/collect?v=2", 0, None, 512),
            ("/api/event", 0, Some("a"), 1),
            ("/api/event", 1, Some("bb"), 2),
        ]
    );
    let filler = replay.responses[4].request_body.as_ref().unwrap();
    assert_eq!(
        filler.content_type.as_deref(),
        Some("text/plain;charset=UTF-8")
    );
    assert_eq!(filler.to_send(), vec![b'x'; 512]);
    let beacons = &replay.initiated()["https://static.shop.test/app.js"];
    assert_eq!(beacons.len(), 4, "the repeated POST twice: {beacons:?}");
    assert_eq!(summary.inferred_initiators, 0, "chrome-har names them");
    let text = summary.to_string();
    assert!(
        text.contains("requests other than GET: POST 4 (") && text.contains("; 1 bodies filler"),
        "{text}"
    );
}
