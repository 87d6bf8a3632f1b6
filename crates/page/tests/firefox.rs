//! Real headless Firefox loads a small page (a stylesheet, a script, an
//! image) from in-process `h3lab-server`s over h3, h2 and h1, and the
//! waterfall it reports is checked against the files served: every
//! resource over the protocol asked for, with the file's bytes. Trust is
//! a pin of the server's certificate, which a different certificate fails,
//! or a test authority that signed it.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

use h3lab_page::chromium::Trust;
use h3lab_page::firefox::{load_page, FirefoxOptions};
use h3lab_results::page::PageReport;
use h3lab_results::{Proto, ResourceKind, Visit};
use h3lab_server::{RunningServer, ServerConfig};

mod common;

const STYLE: &str = "body { font: 16px sans-serif } #hero { color: rgb(1, 2, 3) }\n";
const SCRIPT: &str = "document.getElementById('hero').dataset.ran = 'yes';\n";
const IMAGE: &str = "<svg xmlns='http://www.w3.org/2000/svg' width='320' height='160'>\
    <rect width='320' height='160' fill='#369'/></svg>\n";

/// Two servers with the same certificate on two ports, serving one site;
/// they drop (and stop) before their runtime.
struct Fixture {
    main: RunningServer,
    other: RunningServer,
    _runtime: tokio::runtime::Runtime,
    cert: PathBuf,
    firefox: PathBuf,
    dir: tempfile::TempDir,
}

impl Fixture {
    fn start(firefox: PathBuf) -> Fixture {
        Fixture::start_with(firefox, common::server_config)
    }

    /// With `config` making the servers' configuration and the
    /// certificate `--ca` passes.
    fn start_with(firefox: PathBuf, config: fn(&Path) -> (ServerConfig, PathBuf)) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let (config, cert) = config(dir.path());
        let site = dir.path().join("site");
        std::fs::create_dir(&site).unwrap();
        std::fs::write(site.join("style.css"), STYLE).unwrap();
        std::fs::write(site.join("app.js"), SCRIPT).unwrap();
        std::fs::write(site.join("hero.svg"), IMAGE).unwrap();
        std::fs::write(site.join("index.html"), page("hero.svg")).unwrap();
        let runtime = common::runtime();
        // Served at / (`serve --site`), whose text types carry their
        // charset: without one Firefox fetches a stylesheet twice, the
        // preload scanner's fetch and the parser's, which does not match
        // it (seen with /static/'s bare `text/css`).
        let config = ServerConfig {
            site: Some(site.clone()),
            ..config
        };
        let main = runtime
            .block_on(h3lab_server::start(config.clone()))
            .unwrap();
        let other = runtime.block_on(h3lab_server::start(config)).unwrap();
        // A page on a name, whose image is on another origin.
        let image = format!("https://localhost:{}/hero.svg", other.local_addr().port());
        std::fs::write(site.join("two-origins.html"), page(&image)).unwrap();
        Fixture {
            main,
            other,
            _runtime: runtime,
            cert,
            firefox,
            dir,
        }
    }

    fn url(&self, page: &str) -> String {
        format!("https://{}/{page}", self.main.local_addr())
    }

    fn options(&self, proto: Proto, visit: Visit, loads: u32) -> FirefoxOptions {
        FirefoxOptions {
            binary: Some(self.firefox.clone()),
            proto,
            trust: Trust::CaFile(self.cert.clone()),
            visit,
            loads,
            navigation_timeout: Duration::from_secs(30),
            resolve: Vec::new(),
            dns_origins: Vec::new(),
            recorded_errors: Vec::new(),
        }
    }

    fn load(&self, url: &str, options: &FirefoxOptions) -> PageReport {
        load_page(url, options, &mut |_| ControlFlow::Continue(()))
            .unwrap_or_else(|err| panic!("{url} over {}: {err:#}", options.proto))
    }

    fn file_size(&self, url: &str) -> u64 {
        let name = url.rsplit('/').next().unwrap();
        let site = self.dir.path().join("site");
        std::fs::metadata(Path::new(&site).join(name))
            .unwrap()
            .len()
    }

    /// Every load has the page's four resources, all over `protocol`,
    /// with the files' sizes, in time order within `load_ms`.
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
                assert_eq!(resource.connection, None, "BiDi names no connection");
            }
            assert_eq!(load.resources[0].start_ms, 0.0);
            assert!(load.resources[1].render_blocking, "{:?}", load.resources[1]);
            let browser = load.browser.as_ref().expect("browser timings");
            let dcl = browser.dom_content_loaded_ms.expect("DOMContentLoaded");
            assert!(0.0 < dcl && dcl <= browser.load_event_ms, "{browser:?}");
            // The page's own responseStart, moved onto the waterfall's
            // clock, falls within the document's response.
            let response_start = browser.response_start_ms.expect("responseStart");
            let document = &load.resources[0];
            assert!(
                (response_start - document.ttfb_ms).abs() < 1.0,
                "{browser:?} {document:?}"
            );
            assert!(browser.largest_contentful_paint_ms.expect("an LCP") > 0.0);
        }
    }
}

fn page(image: &str) -> String {
    format!(
        "<!doctype html><html><head><title>h3lab</title>\
         <link rel=stylesheet href=style.css><script src=app.js></script></head>\
         <body><p id=hero>A page for Firefox.</p><img src=\"{image}\" width=320 height=160>\
         </body></html>\n"
    )
}

fn fixture() -> Option<Fixture> {
    h3lab_testenv::firefox().map(Fixture::start)
}

#[test]
fn cold_loads_speak_the_protocol_asked_for_with_the_files_bytes() {
    let Some(fixture) = fixture() else { return };
    let url = fixture.url("index.html");
    for (proto, loads, alpn) in [
        (Proto::H3, 2, "h3"),
        (Proto::H2, 1, "h2"),
        (Proto::H1, 1, "http/1.1"),
    ] {
        let report = fixture.load(&url, &fixture.options(proto, Visit::Cold, loads));
        assert_eq!(report.loads.len(), loads as usize);
        fixture.check(&report, alpn);
    }
}

#[test]
fn warm_loads_reuse_one_browser_and_a_repeat_visit_finds_h3_by_alt_svc() {
    let Some(fixture) = fixture() else { return };
    let url = fixture.url("index.html");
    let warm = fixture.load(&url, &fixture.options(Proto::H3, Visit::Warm, 2));
    fixture.check(&warm, "h3");
    // A first visit under auto starts on TCP; the repeat visits' new
    // launches find the Alt-Svc the profile kept and start on QUIC.
    let repeat = fixture.load(&url, &fixture.options(Proto::Auto, Visit::Repeat, 2));
    for load in &repeat.loads {
        assert_eq!(
            load.resources[0].protocol.as_deref(),
            Some("h3"),
            "{load:#?}"
        );
    }
}

#[test]
fn two_origins_mapped_by_name_both_come_over_h3() {
    let Some(fixture) = fixture() else { return };
    let url = format!(
        "https://{}:{}/two-origins.html",
        common::SITE_HOST,
        fixture.main.local_addr().port()
    );
    let mut options = fixture.options(Proto::H3, Visit::Cold, 1);
    let rules = [
        format!(
            "{}:{}:127.0.0.1",
            common::SITE_HOST,
            fixture.main.local_addr().port()
        ),
        format!("localhost:{}:127.0.0.1", fixture.other.local_addr().port()),
    ];
    options.resolve = rules.iter().map(|rule| rule.parse().unwrap()).collect();
    let report = fixture.load(&url, &options);
    let load = &report.loads[0];
    let image = load
        .resources
        .iter()
        .find(|r| r.kind == ResourceKind::Image);
    let image = image.expect("the image from the other origin");
    assert!(image.url.starts_with("https://localhost:"), "{image:?}");
    for resource in &load.resources {
        assert_eq!(resource.protocol.as_deref(), Some("h3"), "{resource:?}");
    }
}

#[test]
fn a_private_authority_passed_with_ca_is_trusted_over_tcp_and_quic() {
    let Some(firefox) = h3lab_testenv::firefox() else {
        return;
    };
    let fixture = Fixture::start_with(firefox, common::server_config_under_authority);
    let url = fixture.url("index.html");
    for (proto, alpn) in [(Proto::H3, "h3"), (Proto::H2, "h2")] {
        fixture.check(
            &fixture.load(&url, &fixture.options(proto, Visit::Cold, 1)),
            alpn,
        );
    }
}

#[test]
fn another_certificate_than_the_pinned_one_fails_and_insecure_accepts_any() {
    let Some(fixture) = fixture() else { return };
    let url = fixture.url("index.html");
    let elsewhere = tempfile::tempdir().unwrap();
    let (_, other_cert) = common::server_config(elsewhere.path());
    let mut options = fixture.options(Proto::H3, Visit::Cold, 1);
    options.trust = Trust::CaFile(other_cert);
    let err = load_page(&url, &options, &mut |_| ControlFlow::Continue(())).unwrap_err();
    let err = format!("{err:#}");
    // NSS's own code (MOZILLA_PKIX_ERROR_..., or SEC_ERROR_CA_CERT_INVALID
    // when the pinned certificate, also trusted as an authority, shares
    // the server's issuer name) with the fix.
    assert!(
        err.contains("does not trust the server's certificate"),
        "{err}"
    );
    assert!(err.contains("_ERROR_") && err.contains("--ca"), "{err}");
    options.trust = Trust::Insecure;
    fixture.check(&fixture.load(&url, &options), "h3");
}

/// Firefox's main process dies (SIGSEGV) while an image it asked for is
/// still on its way (from a listener that never answers): the load fails
/// naming the crash, and neither a process nor the profile is left.
#[test]
fn a_crash_mid_load_is_named_and_leaves_no_process_or_profile() {
    use std::os::unix::fs::PermissionsExt;
    let Some(fixture) = fixture() else { return };
    let stalled = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let image = format!(
        "https://127.0.0.1:{}/never.svg",
        stalled.local_addr().unwrap().port()
    );
    let site = fixture.dir.path().join("site");
    std::fs::write(site.join("stalls.html"), page(&image)).unwrap();
    // A wrapper that says Firefox's process id; `exec` keeps it.
    let pid_file = fixture.dir.path().join("firefox.pid");
    let wrapper = fixture.dir.path().join("firefox-wrapper");
    let script = format!(
        "#!/bin/sh\necho $$ > '{}'\nexec '{}' \"$@\"\n",
        pid_file.display(),
        fixture.firefox.display()
    );
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut options = fixture.options(Proto::H2, Visit::Cold, 1);
    options.binary = Some(wrapper);
    let url = fixture.url("stalls.html");
    let load = std::thread::spawn(move || {
        load_page(&url, &options, &mut |_| ControlFlow::Continue(())).map(|_| ())
    });
    let _image_connection = accept_within(stalled, Duration::from_secs(60));
    let pid: i32 = (std::fs::read_to_string(&pid_file).unwrap().trim())
        .parse()
        .unwrap();
    let profile = profile_of(pid);
    // SAFETY: kill(2) with a live child's id.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSEGV) }, 0);
    let err = format!("{:#}", load.join().unwrap().unwrap_err());
    assert!(
        err.contains("Firefox crashed (signal 11, SIGSEGV)"),
        "{err}"
    );
    assert!(!profile.exists(), "{} left behind", profile.display());
    assert_eq!(processes_in_group(pid), Vec::<String>::new());
}

/// The first connection to `listener`; the test fails after `limit`.
fn accept_within(listener: std::net::TcpListener, limit: Duration) -> std::net::TcpStream {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(listener.accept().map(|(stream, _)| stream)));
    match receiver.recv_timeout(limit) {
        Ok(stream) => stream.unwrap(),
        Err(_) => panic!("Firefox did not ask for the image within {limit:?}"),
    }
}

/// The `--profile` directory of process `pid`.
fn profile_of(pid: i32) -> PathBuf {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let args: Vec<&[u8]> = cmdline.split(|&byte| byte == 0).collect();
    let at = args.iter().position(|arg| *arg == b"--profile").unwrap();
    PathBuf::from(String::from_utf8(args[at + 1].to_vec()).unwrap())
}

/// Live processes in process group `group` (Firefox leads its own); a
/// zombie is dead, waiting for whoever adopted it to reap it.
fn processes_in_group(group: i32) -> Vec<String> {
    let group = group.to_string();
    (std::fs::read_dir("/proc").unwrap().flatten())
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter(|stat| {
            // pid (comm) state ppid pgrp ...; comm may hold spaces.
            let after_comm = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            let fields: Vec<&str> = after_comm.split_whitespace().collect();
            fields.len() > 2 && fields[0] != "Z" && fields[2] == group
        })
        .collect()
}
