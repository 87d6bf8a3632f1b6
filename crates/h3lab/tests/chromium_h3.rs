//! Real Chromium loads a small page from `h3lab serve` over HTTP/3, many
//! times in a row, each time with a fresh profile (so a full handshake),
//! and the DevTools protocol confirms that every response came over h3.
//! A navigation that stalls fails the test: there are no retries.
//!
//! 30 navigations by default; `H3LAB_CHROMIUM_PAGES=100` runs the long
//! check on demand.

mod common;

use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

use common::Server;
use linkem::supervise::{Group, Supervised};

const DEFAULT_PAGES: usize = 30;

/// A navigation over loopback takes milliseconds; one without its load
/// event by then has stalled.
const NAVIGATION_WINDOW: Duration = Duration::from_secs(10);

/// Any other DevTools call must be answered by then.
const DEVTOOLS_WINDOW: Duration = Duration::from_secs(30);

const PAGE: &str = "<!doctype html><html><head><link rel=stylesheet href=style.css>\
    <title>h3lab</title></head><body><p id=marker>served over h3</p></body></html>";
const STYLE: &str = "#marker { color: rgb(1, 2, 3) }";

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
    let server = Server::start(&["--root".as_ref(), site.path().as_os_str()]);
    let origin = format!("127.0.0.1:{}", server.addr.port());
    let url = format!("https://{origin}/static/index.html");
    let mut times = Vec::with_capacity(pages);
    for page in 1..=pages {
        let profile = tempfile::tempdir().unwrap();
        let mut browser = Browser::launch(&chromium, &origin, &server.spki, profile.path());
        let started = Instant::now();
        let loaded = browser.load(&url).unwrap_or_else(|stall| {
            panic!("navigation {page} of {pages} stalled: {stall}");
        });
        times.push(started.elapsed());
        assert_eq!(
            loaded.protocols,
            vec![
                ("index.html".to_string(), "h3".to_string()),
                ("style.css".to_string(), "h3".to_string())
            ],
            "navigation {page}: every response must come over h3"
        );
        assert_eq!(
            loaded.marker_color, "rgb(1, 2, 3)",
            "navigation {page}: the stylesheet did not apply"
        );
    }
    times.sort();
    eprintln!(
        "{pages} navigations over h3, no stall: load median {:?}, max {:?}",
        times[pages / 2],
        times[pages - 1]
    );
}

/// What one navigation showed.
struct Loaded {
    /// Each response's file name and protocol, in the order they arrived.
    protocols: Vec<(String, String)>,
    /// The computed colour of the page's marker (set by its stylesheet).
    marker_color: String,
}

struct Browser {
    /// Its process group is killed and reaped on drop.
    _process: Supervised,
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    session: String,
    /// Methods of the events and replies read so far, for failure messages.
    seen: Vec<String>,
}

impl Browser {
    fn launch(chromium: &Path, origin: &str, spki: &str, profile: &Path) -> Browser {
        let mut command = Command::new(chromium);
        command
            .args(h3lab_testenv::CHROMIUM_HEADLESS)
            .args(["--enable-quic", "--remote-debugging-port=0"])
            .arg(format!("--origin-to-force-quic-on={origin}"))
            .arg(format!("--ignore-certificate-errors-spki-list={spki}"))
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // Its own process group, so its helper processes die with it.
        let mut process = Supervised::spawn(command, Group::Own, "chromium").unwrap();
        let ws_url = devtools_url(&mut process, profile);
        let (socket, _) = tungstenite::connect(ws_url.as_str()).expect("connect to DevTools");
        if let MaybeTlsStream::Plain(tcp) = socket.get_ref() {
            // Reads wake up to check their deadline instead of blocking forever.
            tcp.set_read_timeout(Some(Duration::from_millis(200)))
                .expect("set a read timeout");
        }
        let mut browser = Browser {
            _process: process,
            socket,
            next_id: 0,
            session: String::new(),
            seen: Vec::new(),
        };
        let target = browser.call(None, "Target.createTarget", json!({"url": "about:blank"}));
        let attached = browser.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("session id")
            .to_string();
        for domain in ["Network.enable", "Page.enable"] {
            browser.call_in_page(domain, json!({}));
        }
        browser
    }

    /// Navigates to `url` and waits for its load event; `Err` describes a
    /// stall: no load event within the navigation window.
    fn load(&mut self, url: &str) -> Result<Loaded, String> {
        self.send(
            Some(&self.session.clone()),
            "Page.navigate",
            json!({"url": url}),
        );
        let window = Instant::now() + NAVIGATION_WINDOW;
        let mut protocols = Vec::new();
        loop {
            let Some(event) = self.read_before(window) else {
                return Err(format!(
                    "no load event within {NAVIGATION_WINDOW:?}; responses so far {protocols:?}; DevTools said {:?}",
                    self.seen
                ));
            };
            match event["method"].as_str() {
                Some("Network.responseReceived") => {
                    let response = &event["params"]["response"];
                    let name = response["url"].as_str().unwrap_or("").rsplit('/').next();
                    let protocol = response["protocol"].as_str().unwrap_or("unknown");
                    protocols.push((name.unwrap_or("").to_string(), protocol.to_string()));
                }
                Some("Network.loadingFailed") => {
                    panic!(
                        "Chromium failed to load a resource of {url}: {}",
                        event["params"]
                    )
                }
                Some("Page.loadEventFired") => break,
                _ => {}
            }
        }
        let color = self.call_in_page(
            "Runtime.evaluate",
            json!({"expression": "getComputedStyle(document.getElementById('marker')).color", "returnByValue": true}),
        );
        Ok(Loaded {
            protocols,
            marker_color: color["result"]["value"].as_str().unwrap_or("").to_string(),
        })
    }

    fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let mut message = json!({"id": self.next_id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .expect("send to DevTools");
        self.next_id
    }

    fn call_in_page(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.call(Some(&session), method, params)
    }

    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.send(session, method, params);
        let deadline = Instant::now() + DEVTOOLS_WINDOW;
        loop {
            let message = self.read_before(deadline).unwrap_or_else(|| {
                panic!(
                    "DevTools did not answer {method} within {DEVTOOLS_WINDOW:?}; read so far: {:?}",
                    self.seen
                )
            });
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method} failed: {message}");
                return message["result"].clone();
            }
        }
    }

    /// The next message, or `None` once `deadline` has passed.
    fn read_before(&mut self, deadline: Instant) -> Option<Value> {
        while Instant::now() < deadline {
            match self.socket.read() {
                Ok(Message::Text(text)) => {
                    let value: Value = serde_json::from_str(&text).expect("DevTools sends JSON");
                    let what = value["method"].as_str().map(str::to_string);
                    self.seen
                        .push(what.unwrap_or_else(|| format!("reply {}", value["id"])));
                    return Some(value);
                }
                Ok(Message::Close(_)) => panic!("DevTools closed the connection"),
                Ok(_) => {}
                Err(tungstenite::Error::Io(err))
                    if matches!(
                        err.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(err) => panic!("reading from DevTools: {err}; read so far: {:?}", self.seen),
            }
        }
        None
    }
}

/// Chromium writes its DevTools port and path to `DevToolsActivePort` in
/// the profile once it listens.
fn devtools_url(process: &mut Supervised, profile: &Path) -> String {
    let file = profile.join("DevToolsActivePort");
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Some(exit) = process.poll() {
            panic!(
                "Chromium exited with code {} before DevTools listened",
                exit.code
            );
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if let [port, path] = text.lines().collect::<Vec<_>>()[..] {
            return format!("ws://127.0.0.1:{port}{path}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("Chromium did not start DevTools within 30s");
}
