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
}

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
        let mut browser = Browser {
            child,
            socket,
            next_id: 0,
            session: String::new(),
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
    /// page's text.
    fn load(&mut self, url: &str) -> (String, String) {
        let session = self.session.clone();
        self.call(Some(&session), "Network.enable", json!({}));
        self.send(Some(&session), "Page.navigate", json!({"url": url}));
        let deadline = Instant::now() + Duration::from_secs(20);
        let protocol = loop {
            assert!(
                Instant::now() < deadline,
                "no response for {url} within 20s"
            );
            let event = self.read();
            if event["method"] == "Network.responseReceived"
                && event["params"]["response"]["url"] == url
            {
                break event["params"]["response"]["protocol"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
            }
            if event["method"] == "Network.loadingFailed" {
                panic!("Chromium failed to load {url}: {}", event["params"]);
            }
        };
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
        loop {
            match self.socket.read().expect("read from DevTools") {
                Message::Text(text) => {
                    return serde_json::from_str(&text).expect("DevTools sends JSON")
                }
                Message::Close(_) => panic!("DevTools closed the connection"),
                _ => continue,
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
