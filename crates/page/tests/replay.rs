//! A captured page replayed: `site from-har` on a Chrome HAR of three
//! origins, an in-process `h3lab-server` answering for each origin on an
//! address of its own (127.0.0.10-12, the server on 0.0.0.0), and the
//! built-in loader reaching them through `--resolve` rules over h1, h2 and
//! h3, and real Chromium through its host resolver rules over h2 and h3.
//! Every replayed response arrives with the HAR's URL and status (and, on
//! the built-in loader, its recorded size on the wire), over the
//! connections a browser would open: one per origin for h2 and h3.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

use h3lab_client::{NameServer, ResolveRule, TlsOptions};
use h3lab_page::chromium::{self, ChromiumOptions, Trust};
use h3lab_page::loader::{load_page, LoaderOptions, RecordedPage};
use h3lab_results::{Proto, Visit};
use h3lab_server::{RunningServer, ServerConfig, TlsSource};
use h3lab_site::har::{import, ImportOptions};
use h3lab_site::replay::{Replay, Think};

/// The runtime the servers run on; a test keeps it until its servers drop.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// A server with a self-signed certificate for `site` on `ip`, port 0.
fn serve(runtime: &tokio::runtime::Runtime, ip: [u8; 4], site: &Path) -> RunningServer {
    let config = ServerConfig {
        listen: SocketAddr::from((ip, 0)),
        tls: TlsSource::SelfSigned,
        site: Some(site.to_path_buf()),
        ..ServerConfig::default()
    };
    runtime.block_on(h3lab_server::start(config)).unwrap()
}

/// Real Chromium recording HARs through Playwright (`tests/har-recorder`).
struct Recording<'a> {
    recorder: &'a Path,
    chromium: &'a Path,
    runtime: &'a tokio::runtime::Runtime,
    /// The recorder's `TMPDIR`, removed with the test.
    scratch: tempfile::TempDir,
}

impl Recording<'_> {
    /// Serves `site` on loopback as www.example.test and records a HAR of
    /// `url` into `har`.
    fn record(&self, site: &Path, url: &str, har: &Path) {
        self.record_hosts(site, url, har, &["www.example.test"]);
    }

    /// Serves `site` on loopback as each of `hosts` (one server, so one
    /// origin's files are every origin's) and records a HAR of `url`.
    fn record_hosts(&self, site: &Path, url: &str, har: &Path, hosts: &[&str]) {
        let server = serve(self.runtime, [127, 0, 0, 1], site);
        let rules = (hosts.iter()).flat_map(|host| {
            [
                "--resolve".to_string(),
                format!("{host}:443:{}", server.local_addr()),
            ]
        });
        let output = std::process::Command::new("node")
            .arg(self.recorder)
            .arg(url)
            .arg(har)
            .args(rules)
            .env("CHROMIUM", self.chromium)
            // Playwright's and Chromium's temporary files go with the test.
            .env("TMPDIR", self.scratch.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
    }
}

fn chrome_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../site/tests/fixtures/har/chrome.har")
}

/// A HAR imported without think time, served on 0.0.0.0, and the rules
/// that send each of its origins to an address of its own (127.0.0.10
/// on). The server drops before its runtime.
struct Replayed {
    server: RunningServer,
    _runtime: tokio::runtime::Runtime,
    replay: Replay,
    resolve: Vec<ResolveRule>,
    ca: PathBuf,
    site: PathBuf,
    _dirs: tempfile::TempDir,
}

impl Replayed {
    fn chrome_fixture() -> Replayed {
        Replayed::from_har(&chrome_fixture())
    }

    fn from_har(har: &Path) -> Replayed {
        let options = ImportOptions {
            think: Think::None,
            page: None,
            keep_first_duplicate: false,
            upgrade_cleartext: false,
        };
        Replayed::imported(har, &options)
    }

    fn imported(har: &Path, options: &ImportOptions) -> Replayed {
        let dirs = tempfile::tempdir().unwrap();
        let site = dirs.path().join("site");
        let replay = import(har, &site, options).unwrap().replay;
        let runtime = runtime();
        let server = serve(&runtime, [0, 0, 0, 0], &site);
        let ca = dirs.path().join("cert.pem");
        std::fs::write(&ca, server.cert_pem().unwrap()).unwrap();
        let port = server.local_addr().port();
        let resolve = (replay.origins.iter().enumerate())
            .map(|(i, origin)| {
                let rule = format!("{}:443:127.0.0.{}:{port}", origin.host, 10 + i);
                rule.parse().unwrap()
            })
            .collect();
        Replayed {
            server,
            _runtime: runtime,
            replay,
            resolve,
            ca,
            site,
            _dirs: dirs,
        }
    }

    /// One cold load over `proto` with the built-in loader, discovering
    /// from bodies alone (set `recorded` to follow the capture).
    fn builtin(&self, proto: Proto) -> LoaderOptions {
        LoaderOptions {
            proto,
            tls: TlsOptions {
                insecure: false,
                ca_file: Some(self.ca.clone()),
            },
            visit: Visit::Cold,
            loads: 1,
            connect_timeout: Duration::from_secs(10),
            load_timeout: Duration::from_secs(60),
            h3_discovery: None,
            resolve: self.resolve.clone(),
            name_server: NameServer::System,
            recorded_errors: self.replay.recorded_errors(),
            recorded: None,
            browser_headers: false,
        }
    }

    /// What the capture recorded, which bounds a replayed load.
    fn recorded_page(&self) -> RecordedPage {
        RecordedPage {
            urls: self
                .replay
                .responses
                .iter()
                .map(|r| r.url.clone())
                .collect(),
            initiated: self.replay.initiated(),
        }
    }

    /// One cold load over `proto` in the Chromium at `binary`.
    fn chromium(&self, binary: &Path, proto: Proto) -> ChromiumOptions {
        ChromiumOptions {
            binary: Some(binary.to_path_buf()),
            proto,
            trust: Trust::CaFile(self.ca.clone()),
            visit: Visit::Cold,
            loads: 1,
            navigation_timeout: Duration::from_secs(20),
            resolve: self.resolve.clone(),
            dns_origins: Vec::new(),
            recorded_errors: self.replay.recorded_errors(),
        }
    }

    /// Every replayed response, with the HAR's URL and status, over
    /// `proto`; `wire_bytes` says whether the loader counts bytes on the
    /// wire (built-in) or decoded (Chromium).
    fn check(&self, load: &h3lab_results::page::PageLoad, proto: Proto, wire_bytes: bool) {
        let fetched: BTreeMap<(&str, &str), _> = (load.resources.iter())
            .map(|r| ((r.method.as_str(), r.url.as_str()), r))
            .collect();
        let requests: BTreeSet<(&str, &str)> = (self.replay.in_load())
            .map(|r| (r.method.as_str(), r.url.as_str()))
            .collect();
        assert_eq!(
            fetched.keys().copied().collect::<BTreeSet<_>>(),
            requests,
            "{proto}"
        );
        for recorded in self.replay.in_load() {
            let row = fetched[&(recorded.method.as_str(), recorded.url.as_str())];
            if !wire_bytes && row.status == 0 {
                // Chromium blocked the recorded 404 page of an image
                // (Opaque Response Blocking) before DevTools saw it.
                assert!(recorded.status >= 400, "{proto} {}", recorded.url);
                continue;
            }
            assert_eq!(row.status, recorded.status, "{proto} {}", recorded.url);
            assert_eq!(row.protocol.as_deref(), Some(proto.alpn_name()), "{proto}");
            if !wire_bytes {
                continue;
            }
            assert_eq!(row.bytes, recorded.body_bytes, "{proto} {}", recorded.url);
            if let Some(on_the_wire) = recorded.recorded_body_bytes {
                let off = row.bytes.abs_diff(on_the_wire) as f64 / on_the_wire as f64;
                assert!(
                    off <= 0.05,
                    "{proto} {}: {} B against {on_the_wire} B",
                    recorded.url,
                    row.bytes
                );
            }
        }
    }
}

/// Connection ids by host; no connection serves two hosts.
fn connections_by_host(load: &h3lab_results::page::PageLoad) -> BTreeMap<String, BTreeSet<u64>> {
    let mut connections: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for row in &load.resources {
        let host = url::Url::parse(&row.url)
            .unwrap()
            .host_str()
            .unwrap()
            .to_string();
        connections.entry(host).or_default().extend(row.connection);
    }
    let distinct = connections
        .values()
        .flatten()
        .collect::<BTreeSet<_>>()
        .len();
    assert_eq!(
        distinct,
        connections.values().map(BTreeSet::len).sum::<usize>(),
        "{connections:?}"
    );
    connections
}

#[test]
fn a_replayed_har_loads_every_origin_from_its_own_address_over_each_protocol() {
    let replayed = Replayed::chrome_fixture();
    let recorded_errors = replayed.replay.recorded_errors();
    assert_eq!(recorded_errors, ["https://img.example.test/missing.png"]);
    for proto in [Proto::H1, Proto::H2, Proto::H3] {
        let options = replayed.builtin(proto);
        let page = &replayed.replay.page;
        let report = load_page(page, &options, &mut |_| ControlFlow::Continue(())).unwrap();
        let load = &report.loads[0];
        replayed.check(load, proto, true);
        let connections = connections_by_host(load);
        assert_eq!(connections.len(), 3, "{proto}: {connections:?}");
        for (host, ids) in &connections {
            match proto {
                Proto::H1 => assert!((1..=6).contains(&ids.len()), "{proto} {host}: {ids:?}"),
                _ => assert_eq!(ids.len(), 1, "{proto} {host}: {ids:?}"),
            }
        }
    }
    let served = replayed.server.requests_served();
    assert!(
        served.total() >= 3 * replayed.replay.responses.len() as u64,
        "{served:?}"
    );
}

#[test]
fn chromium_replays_every_origin_of_the_har_over_h2_and_h3() {
    let Some(chromium) = h3lab_testenv::chromium() else {
        return;
    };
    let replayed = Replayed::chrome_fixture();
    for proto in [Proto::H2, Proto::H3] {
        let options = replayed.chromium(&chromium, proto);
        let page = &replayed.replay.page;
        let report =
            chromium::load_page(page, &options, &mut |_| ControlFlow::Continue(())).unwrap();
        let load = &report.loads[0];
        replayed.check(load, proto, false);
        let connections = connections_by_host(load);
        assert_eq!(connections.len(), 3, "{proto}: {connections:?}");
        for (host, ids) in &connections {
            assert_eq!(ids.len(), 1, "{proto} {host}: {ids:?}");
        }
    }
}

/// The POST requests a replay site answered, and their body bytes, from
/// the server's metrics.
fn posts_answered(server: &RunningServer) -> (u64, u64) {
    let text = server.metrics_text();
    let value = |name: &str| {
        (text.lines())
            .find(|line| line.starts_with(name) && line.contains("method=\"POST\""))
            .and_then(|line| line.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0)
    };
    (
        value("h3lab_replay_requests_total"),
        value("h3lab_replay_request_body_bytes_total"),
    )
}

/// Each method's requests in a load, as `METHOD count`.
fn by_method(load: &h3lab_results::page::PageLoad) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for row in &load.resources {
        *counts.entry(row.method.clone()).or_default() += 1;
    }
    counts
}

/// A shop page whose script sends analytics beacons (one recorded with
/// its text, one with only its size, answered 200 and 204), the same event
/// POST twice, and whose image was recorded missing (404): both loaders,
/// over each protocol, load it whole. Every beacon reaches the server as a
/// POST with its recorded body size, and nothing fails.
#[test]
fn a_page_with_post_beacons_replays_whole_with_both_loaders() {
    let har = chrome_fixture().with_file_name("beacons.har");
    let replayed = Replayed::from_har(&har);
    let posts = replayed.replay.other_methods();
    assert_eq!(posts.into_iter().collect::<Vec<_>>(), [("POST".into(), 4)]);
    // The recorded text (23 and 1 and 2 bytes) and 512 bytes of filler.
    let body_bytes = 23 + 512 + 1 + 2;
    let expected: BTreeMap<String, usize> = [("GET".into(), 3), ("POST".into(), 4)].into();
    let mut answered = posts_answered(&replayed.server);
    for proto in [Proto::H1, Proto::H2, Proto::H3] {
        let options = LoaderOptions {
            recorded: Some(replayed.recorded_page()),
            ..replayed.builtin(proto)
        };
        let page = &replayed.replay.page;
        let report = load_page(page, &options, &mut |_| ControlFlow::Continue(())).unwrap();
        let load = &report.loads[0];
        assert!(load.failed.is_empty(), "{proto}: {:?}", load.failed);
        assert_eq!(by_method(load), expected, "{proto}");
        replayed.check(load, proto, true);
        let now = posts_answered(&replayed.server);
        assert_eq!(
            (now.0 - answered.0, now.1 - answered.1),
            (4, body_bytes),
            "{proto}: POSTs and their body bytes at the server"
        );
        answered = now;
        eprintln!("builtin {proto}: {load} {:?}", by_method(load));
    }
    let Some(chromium) = h3lab_testenv::chromium() else {
        return;
    };
    for proto in [Proto::H1, Proto::H2, Proto::H3] {
        let options = replayed.chromium(&chromium, proto);
        let page = &replayed.replay.page;
        let report =
            chromium::load_page(page, &options, &mut |_| ControlFlow::Continue(())).unwrap();
        let load = &report.loads[0];
        assert!(
            load.failed.is_empty(),
            "chromium {proto}: {:?}",
            load.failed
        );
        assert_eq!(by_method(load), expected, "chromium {proto}");
        let now = posts_answered(&replayed.server);
        assert_eq!(
            (now.0 - answered.0, now.1 - answered.1),
            (4, body_bytes),
            "chromium {proto}: POSTs and their body bytes at the server"
        );
        answered = now;
        eprintln!("chromium {proto}: {load} {:?}", by_method(load));
    }
}

/// A page of three origins written here, whose script sends a beacon to
/// a third party and POSTs to its own origin, recorded by real Chromium
/// (through Playwright), replays whole with both loaders over h2: the same
/// requests with the same methods, nothing failed, and the POSTs reach the
/// replay as POSTs.
#[test]
fn a_recorded_page_with_a_post_beacon_replays_whole() {
    let (Some(chromium), Some(recorder)) =
        (h3lab_testenv::chromium(), h3lab_testenv::har_recorder())
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(
        site.join("index.html"),
        "<!doctype html><html><head><title>Shop</title>\
         <script src=\"https://static.example.test/app.js\"></script></head>\
         <body><h1>Shop</h1></body></html>",
    )
    .unwrap();
    std::fs::write(
        site.join("app.js"),
        "navigator.sendBeacon('https://collect.example.test/echo', 'v=1&t=pageview');\n\
         fetch('https://www.example.test/echo', {method: 'POST', body: 'x'.repeat(300)})\n\
           .then((answer) => answer.text());\n",
    )
    .unwrap();
    let runtime = runtime();
    let recording = Recording {
        recorder: &recorder,
        chromium: &chromium,
        runtime: &runtime,
        scratch: tempfile::tempdir().unwrap(),
    };
    let har = dir.path().join("page.har");
    let hosts = [
        "www.example.test",
        "static.example.test",
        "collect.example.test",
    ];
    recording.record_hosts(&site, "https://www.example.test/", &har, &hosts);
    let replayed = Replayed::from_har(&har);
    let posts = replayed.replay.other_methods();
    assert_eq!(
        posts.get("POST"),
        Some(&2),
        "{:?}",
        replayed.replay.responses
    );
    let requests = |load: &h3lab_results::page::PageLoad| -> BTreeSet<(String, String)> {
        (load.resources.iter())
            .map(|r| (r.method.clone(), r.url.clone()))
            .collect()
    };
    let options = LoaderOptions {
        recorded: Some(replayed.recorded_page()),
        ..replayed.builtin(Proto::H2)
    };
    let page = &replayed.replay.page;
    let before = posts_answered(&replayed.server);
    let ours = load_page(page, &options, &mut |_| ControlFlow::Continue(())).unwrap();
    let after = posts_answered(&replayed.server);
    assert_eq!((after.0 - before.0, after.1 - before.1), (2, 14 + 300));
    let browser = replayed.chromium(&chromium, Proto::H2);
    let theirs = chromium::load_page(page, &browser, &mut |_| ControlFlow::Continue(())).unwrap();
    let (ours, theirs) = (&ours.loads[0], &theirs.loads[0]);
    assert!(
        ours.failed.is_empty() && theirs.failed.is_empty(),
        "{ours:?} {theirs:?}"
    );
    assert_eq!(requests(ours), requests(theirs));
    assert_eq!(by_method(ours).get("POST"), Some(&2), "{ours:?}");
    assert_eq!(posts_answered(&replayed.server).0 - after.0, 2);
}

/// A HAR recorded by real Chromium (through Playwright) during the test,
/// of a generated CMS page served as `www.example.test`, imports and
/// replays: the built-in loader fetches every recorded response, with its
/// recorded status and size.
#[test]
fn a_har_chromium_records_now_replays_with_its_recorded_responses() {
    let (Some(chromium), Some(recorder)) =
        (h3lab_testenv::chromium(), h3lab_testenv::har_recorder())
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("original");
    h3lab_site::generate(h3lab_site::Shape::Cms, 1, &original).unwrap();
    let runtime = runtime();
    let har = dir.path().join("page.har");
    let recording = Recording {
        recorder: &recorder,
        chromium: &chromium,
        runtime: &runtime,
        scratch: tempfile::tempdir().unwrap(),
    };
    recording.record(&original, "https://www.example.test/index.html", &har);

    let replayed = Replayed::from_har(&har);
    let replay = &replayed.replay;
    assert!(replay.source.contains("Playwright"), "{}", replay.source);
    assert_eq!(replay.page, "https://www.example.test/index.html");
    assert!(
        replay.responses.iter().all(|r| !r.synthesized),
        "{:?}",
        replay.responses
    );
    for recorded in &replay.responses {
        let path = original.join(recorded.path.trim_start_matches('/'));
        let file = std::fs::read(&path).unwrap();
        let body = std::fs::read(replayed.site.join("bodies").join(&recorded.body)).unwrap();
        assert_eq!(body, file, "{}", recorded.url);
    }
    let options = replayed.builtin(Proto::H2);
    let report = load_page(&replay.page, &options, &mut |_| ControlFlow::Continue(())).unwrap();
    let fetched: BTreeMap<&str, u64> = (report.loads[0].resources.iter())
        .map(|r| (r.url.as_str(), r.bytes))
        .collect();
    let recorded: BTreeMap<&str, u64> = (replay.responses.iter())
        .map(|r| (r.url.as_str(), r.body_bytes))
        .collect();
    assert_eq!(fetched, recorded);
}

/// The Chrome fixture with a request only a script makes (`data.json`,
/// initiated by `app.js`) and a reference the browser did not follow (a
/// lazy image below the fold), replayed with and without the HAR's
/// initiator graph.
#[test]
fn the_initiator_graph_adds_what_bodies_do_not_show_and_bounds_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut har: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(chrome_fixture()).unwrap()).unwrap();
    let entries = har["log"]["entries"].as_array_mut().unwrap();
    let document = &mut entries[0]["response"]["content"]["text"];
    let text = document.as_str().unwrap().replace(
        "</footer>",
        "<img src=\"https://img.example.test/below-fold.png\" loading=\"lazy\"></footer>",
    );
    *document = text.into();
    let mut data = entries[2].clone();
    assert_eq!(data["request"]["url"], "https://static.example.test/app.js");
    data["request"]["url"] = "https://static.example.test/data.json".into();
    data["response"]["content"] = serde_json::json!({"size": 17, "mimeType": "application/json", "text": "{\"items\": [1, 2]}"});
    data["response"]["headers"] =
        serde_json::json!([{"name": "content-type", "value": "application/json"}]);
    data["_initiator"] = serde_json::json!({"type": "script", "stack": {"callFrames": [
        {"functionName": "load", "url": "https://static.example.test/app.js", "lineNumber": 3, "columnNumber": 2}
    ]}});
    data["_resourceType"] = "fetch".into();
    entries.push(data);
    let har_path = dir.path().join("page.har");
    std::fs::write(&har_path, har.to_string()).unwrap();
    let replayed = Replayed::from_har(&har_path);
    let replay = &replayed.replay;
    let initiated = &replay.initiated()["https://static.example.test/app.js"];
    let found: Vec<_> = (initiated.iter())
        .map(|r| (r.url.as_str(), r.kind, r.method.as_str()))
        .collect();
    assert_eq!(
        found,
        [(
            "https://static.example.test/data.json",
            h3lab_results::ResourceKind::Other,
            "GET"
        )]
    );
    let load = |recorded: Option<RecordedPage>| {
        let options = LoaderOptions {
            recorded,
            ..replayed.builtin(Proto::H2)
        };
        load_page(&replay.page, &options, &mut |_| ControlFlow::Continue(()))
    };
    let recorded = replayed.recorded_page();
    let report = load(Some(recorded)).unwrap();
    let rows = &report.loads[0].resources;
    let urls: BTreeSet<&str> = rows.iter().map(|r| r.url.as_str()).collect();
    let recorded: BTreeSet<&str> = replay.responses.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(urls, recorded);
    assert_eq!(
        report.loads[0].skipped,
        ["https://img.example.test/below-fold.png"]
    );
    let row = |suffix: &str| rows.iter().find(|r| r.url.ends_with(suffix)).unwrap();
    assert!(row("data.json").start_ms >= row("app.js").end_ms);

    // From bodies alone, the script's fetch is missed and the lazy image,
    // which the replay never recorded, is answered 404: the load goes on
    // without it, as a browser's would, and lists it.
    let unbounded = load(None).unwrap();
    let failed: Vec<String> = (unbounded.loads[0].failed.iter())
        .map(|f| f.to_string())
        .collect();
    assert_eq!(
        failed,
        ["GET https://img.example.test/below-fold.png: answered 404"]
    );
}

/// Records `url` of the static site `docs` with Chromium through
/// Playwright, replays it, and loads it once with each loader over
/// `proto`: both fetch the same resources, the page load's own (none of
/// the requests the capture made outside it), with byte counts within 5 %
/// of each other.
fn both_loaders_fetch_the_same_resources(docs: &Path, url: &str, proto: Proto) -> Replayed {
    let (Some(chromium), Some(recorder)) =
        (h3lab_testenv::chromium(), h3lab_testenv::har_recorder())
    else {
        panic!("checked by the caller");
    };
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime();
    let har = dir.path().join("page.har");
    let recording = Recording {
        recorder: &recorder,
        chromium: &chromium,
        runtime: &runtime,
        scratch: tempfile::tempdir().unwrap(),
    };
    recording.record(docs, url, &har);
    let replayed = Replayed::from_har(&har);
    let replay = &replayed.replay;
    let builtin = LoaderOptions {
        recorded: Some(replayed.recorded_page()),
        browser_headers: false,
        ..replayed.builtin(proto)
    };
    let browser = replayed.chromium(&chromium, proto);
    let page = &replay.page;
    let ours = load_page(page, &builtin, &mut |_| ControlFlow::Continue(())).unwrap();
    let theirs = chromium::load_page(page, &browser, &mut |_| ControlFlow::Continue(())).unwrap();
    let fetched = |load: &h3lab_results::page::PageLoad| -> BTreeMap<String, u64> {
        load.resources
            .iter()
            .map(|r| (r.url.clone(), r.bytes))
            .collect()
    };
    let (ours, theirs) = (fetched(&ours.loads[0]), fetched(&theirs.loads[0]));
    assert!(ours.len() > 10, "{ours:?}");
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    let in_load: BTreeSet<&str> = replay.in_load().map(|r| r.url.as_str()).collect();
    assert_eq!(
        ours.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        in_load
    );
    let (a, b) = (
        ours.values().sum::<u64>() as f64,
        theirs.values().sum::<u64>() as f64,
    );
    assert!((a - b).abs() <= 0.05 * b, "{a} B against Chromium's {b} B");
    replayed
}

/// A real page no one here wrote (rustdoc's `syn` index, from Debian's
/// cargo-doc), over h2.
#[test]
fn both_loaders_fetch_the_same_resources_of_a_recorded_real_page() {
    let (Some(_), Some(_), Some(docs)) = (
        h3lab_testenv::chromium(),
        h3lab_testenv::har_recorder(),
        h3lab_testenv::doc_site(),
    ) else {
        return;
    };
    both_loaders_fetch_the_same_resources(
        &docs,
        "https://www.example.test/syn/index.html",
        Proto::H2,
    );
}

/// The Rust book's first page (mdBook: 12 stylesheets, 8 scripts, two web
/// fonts, one of them the code face set through `var(--mono-font)`), over
/// h3. Chromium asks for the tab's icon as the load ends: the import marks
/// it, and neither loader counts it.
#[test]
fn both_loaders_fetch_the_same_resources_of_the_rust_book() {
    let (Some(_), Some(_), Some(book)) = (
        h3lab_testenv::chromium(),
        h3lab_testenv::har_recorder(),
        h3lab_testenv::rust_book(),
    ) else {
        return;
    };
    let replayed = both_loaders_fetch_the_same_resources(
        &book,
        "https://www.example.test/index.html",
        Proto::H3,
    );
    let replay = &replayed.replay;
    let fonts = (replay.in_load())
        .filter(|r| r.kind == h3lab_results::ResourceKind::Font)
        .count();
    assert!(fonts >= 2, "{:?}", replay.responses);
    let favicon = |url: &str| url.rsplit('/').next().unwrap().starts_with("favicon");
    let replayed_icon = (replay.responses.iter()).any(|r| favicon(&r.url));
    let skipped_icon = replay.skipped.iter().any(|s| favicon(&s.url));
    assert!(replayed_icon || skipped_icon, "{:?}", replay.skipped);
    assert!(replay.in_load().all(|r| !favicon(&r.url)));
    assert!(
        (replay.skipped.iter())
            .filter(|s| favicon(&s.url))
            .all(|s| s.reason.contains("a favicon, outside the page load")),
        "{:?}",
        replay.skipped
    );
}

/// A capture that starts with a redirect (`https://example.test/` moved
/// to `https://www.example.test/`, as many sites do): the built-in loader
/// follows it as a browser does, and loads the page it leads to.
#[test]
fn a_replay_that_starts_with_a_redirect_follows_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut har: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(chrome_fixture()).unwrap()).unwrap();
    let entries = har["log"]["entries"].as_array_mut().unwrap();
    let mut moved = entries[0].clone();
    moved["request"]["url"] = "https://example.test/".into();
    moved["response"]["status"] = 301.into();
    moved["response"]["headers"] = serde_json::json!([
        {"name": "location", "value": "https://www.example.test/"},
        {"name": "content-type", "value": "text/html"}
    ]);
    moved["response"]["content"] =
        serde_json::json!({"size": 0, "mimeType": "text/html", "text": ""});
    moved["response"]["bodySize"] = 0.into();
    entries.insert(0, moved);
    let har_path = dir.path().join("page.har");
    std::fs::write(&har_path, har.to_string()).unwrap();
    let replayed = Replayed::from_har(&har_path);
    let replay = &replayed.replay;
    assert_eq!(replay.page, "https://example.test/");
    assert_eq!(replay.origins.len(), 4);
    let options = LoaderOptions {
        recorded: Some(replayed.recorded_page()),
        browser_headers: false,
        ..replayed.builtin(Proto::H3)
    };
    let report = load_page(&replay.page, &options, &mut |_| ControlFlow::Continue(())).unwrap();
    let rows = &report.loads[0].resources;
    let urls: Vec<&str> = rows.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(rows.len(), replay.responses.len(), "{urls:?}");
    assert_eq!((urls[0], rows[0].status), ("https://example.test/", 301));
    assert_eq!(urls[1], "https://www.example.test/");
    assert!(rows[1].start_ms >= rows[0].end_ms);
}

/// A page captured over cleartext http:// (WebPageTest, 2015), replayed
/// over https with `--upgrade-cleartext`: the loader follows the upgraded
/// redirect and fetches every recorded resource from the upgraded URLs in
/// the HTML and CSS, over each protocol.
#[test]
fn a_cleartext_capture_upgraded_to_https_loads_whole_over_each_protocol() {
    let har =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../site/tests/fixtures/har/cleartext-page.har");
    let options = ImportOptions {
        think: Think::None,
        page: None,
        keep_first_duplicate: false,
        upgrade_cleartext: true,
    };
    let replayed = Replayed::imported(&har, &options);
    let replay = &replayed.replay;
    assert_eq!(replay.page, "https://news.test/");
    for proto in [Proto::H1, Proto::H2, Proto::H3] {
        let options = LoaderOptions {
            recorded: Some(replayed.recorded_page()),
            browser_headers: false,
            ..replayed.builtin(proto)
        };
        let report = load_page(&replay.page, &options, &mut |_| ControlFlow::Continue(())).unwrap();
        let load = &report.loads[0];
        replayed.check(load, proto, true);
        assert!(load.skipped.is_empty(), "{proto}: {:?}", load.skipped);
    }
}
