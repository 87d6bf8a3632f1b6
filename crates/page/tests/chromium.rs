//! Real headless Chromium loads a small page (a stylesheet, a script, an
//! image) from an in-process `h3lab-server` over h3, h2 and h1, and the
//! waterfall it reports is checked against the files served. A page that
//! pulls a resource from an origin not forced onto QUIC must fail an h3
//! run, naming that resource.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

use h3lab_page::chromium::{load_page, spki_sha256_base64, ChromiumOptions, Trust};
use h3lab_results::page::PageReport;
use h3lab_results::{Loader, Proto, ResourceKind, Visit};
use h3lab_server::{RunningServer, ServerConfig};

mod common;

const STYLE: &str = "body { font: 16px sans-serif } #hero { color: rgb(1, 2, 3) }\n";
const SCRIPT: &str = "document.getElementById('hero').dataset.ran = 'yes';\n";
const IMAGE: &str = "<svg xmlns='http://www.w3.org/2000/svg' width='320' height='160'>\
    <rect width='320' height='160' fill='#369'/></svg>\n";

/// Two servers with the same certificate on two ports, serving one site.
/// The servers drop (and stop) before their runtime.
struct Fixture {
    main: RunningServer,
    other: RunningServer,
    _runtime: tokio::runtime::Runtime,
    cert: PathBuf,
    chromium: PathBuf,
    _dir: tempfile::TempDir,
}

impl Fixture {
    fn start(chromium: PathBuf) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let (config, cert) = common::server_config(dir.path());
        let site = dir.path().join("site");
        std::fs::create_dir(&site).unwrap();
        std::fs::write(site.join("style.css"), STYLE).unwrap();
        std::fs::write(site.join("app.js"), SCRIPT).unwrap();
        std::fs::write(site.join("hero.svg"), IMAGE).unwrap();
        std::fs::write(site.join("index.html"), page("hero.svg")).unwrap();
        std::fs::write(site.join("broken.html"), page("missing.svg")).unwrap();

        let runtime = common::runtime();
        let config = ServerConfig {
            root: Some(site.clone()),
            ..config
        };
        let main = runtime
            .block_on(h3lab_server::start(config.clone()))
            .unwrap();
        let other = runtime.block_on(h3lab_server::start(config)).unwrap();
        // A page whose image is on the other origin (another port).
        let foreign = format!("https://{}/static/hero.svg", other.local_addr());
        std::fs::write(site.join("foreign.html"), page(&foreign)).unwrap();
        Fixture {
            _runtime: runtime,
            main,
            other,
            cert,
            chromium,
            _dir: dir,
        }
    }

    fn url(&self, page: &str) -> String {
        format!("https://{}/static/{page}", self.main.local_addr())
    }

    fn options(&self, proto: Proto, visit: Visit, loads: u32) -> ChromiumOptions {
        ChromiumOptions {
            binary: Some(self.chromium.clone()),
            proto,
            trust: Trust::CaFile(self.cert.clone()),
            visit,
            loads,
            navigation_timeout: Duration::from_secs(20),
            resolve: Vec::new(),
            dns_origins: Vec::new(),
            recorded_errors: Vec::new(),
        }
    }

    /// One cold load of `url` by the built-in loader.
    fn builtin_load(&self, url: &str, proto: Proto) -> PageReport {
        let options = h3lab_page::loader::LoaderOptions {
            proto,
            tls: h3lab_client::TlsOptions {
                insecure: false,
                ca_file: Some(self.cert.clone()),
            },
            visit: Visit::Cold,
            loads: 1,
            connect_timeout: Duration::from_secs(10),
            load_timeout: Duration::from_secs(20),
            h3_discovery: None,
            resolve: Vec::new(),
            name_server: h3lab_client::NameServer::System,
            recorded_errors: Vec::new(),
            recorded: None,
            browser_headers: false,
        };
        h3lab_page::loader::load_page(url, &options, &mut |_| ControlFlow::Continue(())).unwrap()
    }

    /// A server on another port with the same certificate, serving `dir`
    /// at `/` (`serve --site`).
    fn serve_site(&self, dir: &Path) -> RunningServer {
        let (config, _) = common::server_config(self._dir.path());
        let config = ServerConfig {
            site: Some(dir.to_path_buf()),
            ..config
        };
        self._runtime.block_on(h3lab_server::start(config)).unwrap()
    }

    fn file_size(&self, url: &str) -> u64 {
        let name = url.rsplit('/').next().unwrap();
        let site = self._dir.path().join("site");
        std::fs::metadata(Path::new(&site).join(name))
            .unwrap()
            .len()
    }

    /// Every load has the page's four resources, all over `protocol`,
    /// with the files' sizes, complete within `load_ms`.
    fn check(&self, report: &PageReport, protocol: &str) {
        for (n, load) in report.loads.iter().enumerate() {
            let kinds: Vec<ResourceKind> = load.resources.iter().map(|r| r.kind).collect();
            assert_eq!(
                kinds,
                [
                    ResourceKind::Document,
                    ResourceKind::Stylesheet,
                    ResourceKind::Script,
                    ResourceKind::Image
                ],
                "load {n}: {:#?}",
                load.resources
            );
            assert!(load.load_ms > 0.0, "load {n}: {}", load.load_ms);
            for resource in &load.resources {
                assert_eq!(resource.protocol.as_deref(), Some(protocol), "{resource:?}");
                assert_eq!(resource.status, 200, "{resource:?}");
                assert_eq!(
                    resource.bytes,
                    self.file_size(&resource.url),
                    "{resource:?}"
                );
                assert!(
                    0.0 <= resource.start_ms
                        && resource.start_ms <= resource.ttfb_ms
                        && resource.ttfb_ms <= resource.end_ms
                        && resource.end_ms <= load.load_ms,
                    "times out of order in load {n}: {resource:?}, load_ms {}",
                    load.load_ms
                );
                assert!(resource.connection.is_some() && resource.stream.is_none());
            }
            assert_eq!(load.resources[0].start_ms, 0.0);
            assert!(load.resources[1].render_blocking, "{:?}", load.resources[1]);
            let browser = load.browser.as_ref().expect("browser timings");
            assert!(browser.load_event_ms > 0.0 && browser.load_event_ms <= load.load_ms);
            let dcl = browser.dom_content_loaded_ms.expect("DOMContentLoaded");
            assert!(dcl <= browser.load_event_ms);
            let response_start = browser.response_start_ms.expect("responseStart");
            assert!(
                response_start > 0.0 && response_start <= load.resources[0].end_ms,
                "{browser:?} {:?}",
                load.resources[0]
            );
            let lcp = browser.largest_contentful_paint_ms.expect("an LCP");
            assert!(lcp > 0.0, "{browser:?}");
        }
    }
}

fn page(image: &str) -> String {
    format!(
        "<!doctype html><html><head><title>h3lab</title>\
         <link rel=stylesheet href=style.css><script src=app.js></script></head>\
         <body><p id=hero>A page for Chromium.</p><img src=\"{image}\" width=320 height=160>\
         </body></html>\n"
    )
}

fn fixture() -> Option<Fixture> {
    h3lab_testenv::chromium().map(Fixture::start)
}

#[test]
fn h3_cold_loads_come_over_h3_with_the_files_bytes() {
    let Some(fixture) = fixture() else { return };
    let mut seen = 0;
    let options = fixture.options(Proto::H3, Visit::Cold, 2);
    let report = load_page(&fixture.url("index.html"), &options, &mut |_| {
        seen += 1;
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(seen, 2);
    assert_eq!(report.loads.len(), 2);
    assert_eq!(
        (report.loader, report.proto, report.visit),
        (Loader::Chromium, Proto::H3, Visit::Cold)
    );
    fixture.check(&report, "h3");
    // One QUIC connection carries the whole page.
    for load in &report.loads {
        assert_eq!(load.connections(), Some(1), "{:#?}", load.resources);
    }
    eprintln!(
        "h3 cold: load_ms {:?}",
        report.loads.iter().map(|l| l.load_ms).collect::<Vec<_>>()
    );
}

#[test]
fn h2_and_h1_runs_speak_the_protocol_asked_for() {
    let Some(fixture) = fixture() else { return };
    for (proto, protocol) in [(Proto::H2, "h2"), (Proto::H1, "http/1.1")] {
        let options = fixture.options(proto, Visit::Cold, 1);
        let report = load_page(&fixture.url("index.html"), &options, &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
        fixture.check(&report, protocol);
        eprintln!("{protocol} cold: load_ms {}", report.loads[0].load_ms);
    }
    // Chromium may also ask for /favicon.ico outside the page (not a
    // resource of the load), hence "at least".
    let served = fixture.main.requests_served();
    assert!(
        served.h1 >= 4 && served.h2 >= 4 && served.h3 == 0,
        "{served}"
    );
}

#[test]
fn warm_loads_reuse_one_primed_browser() {
    let Some(fixture) = fixture() else { return };
    let options = fixture.options(Proto::H3, Visit::Warm, 2);
    let report = load_page(&fixture.url("index.html"), &options, &mut |_| {
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(report.loads.len(), 2);
    fixture.check(&report, "h3");
    // The priming load and both measured loads reached the server.
    // (and perhaps /favicon.ico).
    let served = fixture.main.requests_served();
    assert!(served.h3 >= 12 && served.h1 + served.h2 == 0, "{served}");
    eprintln!(
        "h3 warm: load_ms {:?}",
        report.loads.iter().map(|l| l.load_ms).collect::<Vec<_>>()
    );
}

#[test]
fn a_resource_not_over_h3_fails_an_h3_run_and_is_named() {
    let Some(fixture) = fixture() else { return };
    let options = fixture.options(Proto::H3, Visit::Cold, 1);
    let err = load_page(&fixture.url("foreign.html"), &options, &mut |_| {
        panic!("the load must fail")
    })
    .unwrap_err();
    let message = format!("{err:#}");
    let foreign = format!("https://{}/static/hero.svg", fixture.other.local_addr());
    assert!(
        message.contains(&format!("{foreign} came over h2, not h3")),
        "{message}"
    );
    // It did come, over TCP: the run failed on the protocol, not the fetch.
    assert_eq!(fixture.other.requests_served().h2, 1);
}

/// A missing image does not stop a browser showing the page: the load
/// goes on and lists it, as the built-in loader's does.
#[test]
fn a_missing_image_is_listed_with_the_load() {
    let Some(fixture) = fixture() else { return };
    let options = fixture.options(Proto::H2, Visit::Cold, 1);
    let report = load_page(&fixture.url("broken.html"), &options, &mut |_| {
        ControlFlow::Continue(())
    })
    .unwrap();
    let failed = &report.loads[0].failed;
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].url.ends_with("/static/missing.svg"), "{failed:?}");
    assert_eq!(failed[0].why, "answered status 404");
}

/// `--ignore-certificate-errors` covers TCP but not QUIC in Chromium: an
/// h2 run works with it, an h3 run fails and says what to pass instead.
#[test]
fn insecure_trust_works_over_tcp_and_an_h3_run_says_to_pin_the_certificate() {
    let Some(fixture) = fixture() else { return };
    let mut options = fixture.options(Proto::H2, Visit::Cold, 1);
    options.trust = Trust::Insecure;
    let report = load_page(&fixture.url("index.html"), &options, &mut |_| {
        ControlFlow::Continue(())
    })
    .unwrap();
    fixture.check(&report, "h2");
    options.proto = Proto::H3;
    let err = load_page(&fixture.url("index.html"), &options, &mut |_| {
        ControlFlow::Continue(())
    })
    .unwrap_err();
    let message = format!("{err:#}");
    assert!(
        message.contains("does not apply --ignore-certificate-errors to QUIC")
            && message.contains("--ca FILE")
            && message.contains("ERR_QUIC_PROTOCOL_ERROR"),
        "{message}"
    );
}

/// The SPKI pin computed from a certificate file is the one the server
/// prints for its key (no browser needed).
#[test]
fn a_certificate_file_pins_the_servers_key() {
    let fixture = Fixture::start(PathBuf::from("chromium-not-needed"));
    let pem = std::fs::read(&fixture.cert).unwrap();
    let banner = fixture.main.banner();
    let printed = banner
        .iter()
        .find_map(|line| line.strip_prefix("spki-sha256: "))
        .expect("the banner prints the SPKI pin");
    assert_eq!(spki_sha256_base64(&pem).unwrap(), printed);
}

/// A page whose CSS declares a font no text uses, offers a used one in two
/// formats, and links a disabled stylesheet; a `style` attribute uses a
/// third font. Chromium and the built-in loader must fetch the same
/// files: the used faces once each, in their first format, and nothing
/// else. Real fonts (the documentation site's Fira Sans) are needed: a
/// face that fails to decode makes Chromium fetch the next source.
#[test]
fn both_loaders_fetch_only_the_fonts_text_uses() {
    let Some(fixture) = fixture() else { return };
    let Some(docs) = h3lab_testenv::doc_site() else {
        return;
    };
    let site = fixture._dir.path().join("site");
    let font = std::fs::read(docs.join("FiraSans-Regular.woff2")).unwrap();
    for name in ["used.woff2", "used.woff", "unused.woff2", "inline.woff2"] {
        std::fs::write(site.join(name), &font).unwrap();
    }
    std::fs::write(
        site.join("fonts.css"),
        r#"@font-face { font-family: "Used Face"; src: url(used.woff2) format("woff2"), url(used.woff) format("woff"); }
@font-face { font-family: Unused; src: url(unused.woff2) format("woff2"); }
@font-face { font-family: Inline; src: url(inline.woff2); }
body { font-family: "Used Face", sans-serif; }
"#,
    )
    .unwrap();
    std::fs::write(site.join("off.css"), "body { color: red }\n").unwrap();
    std::fs::write(
        site.join("fonts.html"),
        "<!doctype html><html><head><link rel=stylesheet href=fonts.css>\
         <link rel=stylesheet href=off.css disabled></head>\
         <body><p>Hello fonts</p><p style=\"font-family: Inline\">inline</p></body></html>\n",
    )
    .unwrap();
    let url = fixture.url("fonts.html");
    let files = |report: PageReport| -> Vec<String> {
        let mut names: Vec<String> = report.loads[0]
            .resources
            .iter()
            .map(|r| r.url.rsplit('/').next().unwrap().to_string())
            .collect();
        names.sort();
        names
    };
    let chromium = load_page(
        &url,
        &fixture.options(Proto::H2, Visit::Cold, 1),
        &mut |_| ControlFlow::Continue(()),
    )
    .unwrap();
    let builtin = fixture.builtin_load(&url, Proto::H2);
    let expected = ["fonts.css", "fonts.html", "inline.woff2", "used.woff2"];
    assert_eq!(files(chromium), expected, "Chromium");
    assert_eq!(files(builtin), expected, "the built-in loader");
}

/// Real pages no one here wrote (rustdoc output: web fonts in several
/// styles and weights, images of rules for elements a script adds, a
/// collapsible section): Chromium and the built-in loader load them
/// directly, with no recording to follow, and must fetch the same files
/// with the same bytes (the issue allows 5 %).
#[test]
fn both_loaders_fetch_the_same_files_of_real_documentation_pages() {
    let Some(fixture) = fixture() else { return };
    let Some(docs) = h3lab_testenv::doc_site() else {
        return;
    };
    let server = fixture.serve_site(&docs);
    let files = |report: &PageReport| -> Vec<(String, u64)> {
        let mut files: Vec<(String, u64)> = (report.loads[0].resources.iter())
            .map(|r| (r.url.clone(), r.bytes))
            .collect();
        files.sort();
        files
    };
    for page in [
        "/syn/index.html",
        "/syn/enum.Expr.html",
        "/quote/index.html",
    ] {
        let url = format!("https://{}{page}", server.local_addr());
        let options = fixture.options(Proto::H2, Visit::Cold, 1);
        let chromium = load_page(&url, &options, &mut |_| ControlFlow::Continue(())).unwrap();
        let builtin = fixture.builtin_load(&url, Proto::H2);
        let (chromium, builtin) = (files(&chromium), files(&builtin));
        let urls =
            |files: &[(String, u64)]| files.iter().map(|(u, _)| u.clone()).collect::<Vec<_>>();
        assert_eq!(urls(&builtin), urls(&chromium), "{page}: the same files");
        let bytes = |files: &[(String, u64)]| files.iter().map(|(_, b)| b).sum::<u64>() as f64;
        let ratio = bytes(&builtin) / bytes(&chromium);
        assert!(
            (0.95..=1.05).contains(&ratio),
            "{page}: bytes {ratio:.3} of Chromium's"
        );
    }
}
