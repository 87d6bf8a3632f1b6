//! Real Chromium loads `/health` from `h3lab serve` over HTTP/3, and the
//! DevTools protocol confirms the protocol it used.

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

use common::{chromium_or_skip, Server};

#[test]
fn chromium_loads_health_over_h3() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let server = Server::start();
    let origin = format!("127.0.0.1:{}", server.addr.port());
    let profile = tempfile::tempdir().unwrap();
    let mut browser = Browser::launch(&chromium, &origin, &server.spki, profile.path());
    let url = format!("https://{origin}/health");
    let (protocol, body) = browser.load(&url);
    assert_eq!(protocol, "h3", "Chromium used {protocol} for {url}");
    let health: Value =
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("/health body {body:?}: {e}"));
    assert_eq!(health["status"], "ok");
    assert_eq!(health["protocol"], "h3", "the server saw {health}");
}

struct Browser {
    child: Child,
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    session: String,
    /// The whole conversation with DevTools must end by then.
    deadline: Instant,
    /// Methods of the events and replies read so far, for failure messages.
    seen: Vec<String>,
}

const DEVTOOLS_BUDGET: Duration = Duration::from_secs(60);

/// About one navigation in ten here stalls: quinn receives Chromium's
/// request stream but h3lab serve's h3 accept never yields it. Until that
/// is found, a stalled navigation is retried once; two stalls fail.
const NAVIGATION_WINDOW: Duration = Duration::from_secs(10);

impl Browser {
    fn launch(chromium: &str, origin: &str, spki: &str, profile: &std::path::Path) -> Browser {
        // Its own process group, so Drop can stop its helper processes too.
        let mut child = Command::new(chromium)
            .process_group(0)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--enable-quic",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--origin-to-force-quic-on={origin}"))
            .arg(format!("--ignore-certificate-errors-spki-list={spki}"))
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        let ws_url = devtools_url(&mut child);
        let (socket, _) = tungstenite::connect(ws_url.as_str()).expect("connect to DevTools");
        if let MaybeTlsStream::Plain(tcp) = socket.get_ref() {
            // Reads wake up to check the deadline instead of blocking forever.
            tcp.set_read_timeout(Some(Duration::from_millis(500)))
                .expect("set a read timeout");
        }
        let mut browser = Browser {
            child,
            socket,
            next_id: 0,
            session: String::new(),
            deadline: Instant::now() + DEVTOOLS_BUDGET,
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
        browser
    }

    /// Navigates to `url`; returns the protocol of its response and the
    /// page's text. A navigation that gets no response within 10 s is
    /// tried once more (see the note in `NAVIGATION_WINDOW`).
    fn load(&mut self, url: &str) -> (String, String) {
        let session = self.session.clone();
        self.call(Some(&session), "Network.enable", json!({}));
        let protocol = (1..=2)
            .find_map(|attempt| {
                let protocol = self.navigate(&session, url);
                if protocol.is_none() {
                    eprintln!(
                        "attempt {attempt}: no response for {url} within {NAVIGATION_WINDOW:?}"
                    );
                }
                protocol
            })
            .unwrap_or_else(|| {
                panic!(
                    "no response for {url} in two navigations; read: {:?}",
                    self.seen
                )
            });
        std::thread::sleep(Duration::from_millis(300));
        let text = self.call(
            Some(&session),
            "Runtime.evaluate",
            json!({"expression": "document.body ? document.body.innerText : ''", "returnByValue": true}),
        );
        (
            protocol,
            text["result"]["value"].as_str().unwrap_or("").to_string(),
        )
    }

    /// One navigation: the protocol of `url`'s response, or `None` when
    /// none came within the window.
    fn navigate(&mut self, session: &str, url: &str) -> Option<String> {
        self.send(Some(session), "Page.navigate", json!({"url": url}));
        let window = Instant::now() + NAVIGATION_WINDOW;
        while let Some(event) = self.read_before(window) {
            if event["method"] == "Network.responseReceived"
                && event["params"]["response"]["url"] == url
            {
                return Some(
                    event["params"]["response"]["protocol"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                );
            }
            if event["method"] == "Network.loadingFailed" {
                panic!("Chromium failed to load {url}: {}", event["params"]);
            }
        }
        None
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

    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.send(session, method, params);
        loop {
            let message = self.read();
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method} failed: {message}");
                return message["result"].clone();
            }
        }
    }

    fn read(&mut self) -> Value {
        let deadline = self.deadline;
        self.read_before(deadline).unwrap_or_else(|| {
            panic!(
                "DevTools went quiet: no answer within {DEVTOOLS_BUDGET:?}; read so far: {:?}",
                self.seen
            )
        })
    }

    /// The next message, or `None` once `deadline` has passed.
    fn read_before(&mut self, deadline: Instant) -> Option<Value> {
        loop {
            if Instant::now() >= deadline.min(self.deadline) {
                return None;
            }
            match self.socket.read() {
                Ok(Message::Text(text)) => {
                    let value: Value = serde_json::from_str(&text).expect("DevTools sends JSON");
                    let what = value["method"].as_str().map(str::to_string);
                    self.seen
                        .push(what.unwrap_or_else(|| format!("reply {}", value["id"])));
                    return Some(value);
                }
                Ok(Message::Close(_)) => panic!("DevTools closed the connection"),
                Ok(_) => continue,
                Err(tungstenite::Error::Io(err))
                    if matches!(
                        err.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    continue
                }
                Err(err) => panic!("reading from DevTools: {err}; read so far: {:?}", self.seen),
            }
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Chromium prints `DevTools listening on ws://...` on stderr once ready.
fn devtools_url(child: &mut Child) -> String {
    let stderr = child.stderr.take().expect("piped stderr");
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("DevTools listening on ") {
                let _ = sender.send(url.trim().to_string());
            }
        }
    });
    receiver
        .recv_timeout(Duration::from_secs(30))
        .expect("Chromium did not start DevTools within 30s")
}
