//! One headless Chromium: finding the binary, its flags, starting it with
//! a fresh profile in its own process group, attaching to a page over
//! DevTools, and collecting the events of one navigation.
//!
//! Dropping a [`Browser`] closes DevTools, kills Chromium's whole process
//! group and reaps it, then removes the profile. Chromium also dies with
//! the thread that started it (`PR_SET_PDEATHSIG`), so a killed h3lab
//! leaves no browser behind.

use std::collections::HashSet;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use h3lab_results::Proto;
use h3lab_supervise::{Group, Supervised};
use serde_json::{json, Value};

use super::devtools::DevTools;

/// Chromium must listen for DevTools by then: it takes a second or two, and
/// a run must end within 30 s when it never does (docs/hardening.md).
const STARTUP: Duration = Duration::from_secs(20);

/// Any DevTools command but a navigation must be answered by then.
const COMMAND: Duration = Duration::from_secs(30);

/// Names tried on PATH, in order, when no binary is given.
const NAMES: &[&str] = &["chromium", "chromium-browser", "google-chrome"];

/// Flags of every run: headless, no GPU, no traffic of its own (updates,
/// sync, first-run pages), DevTools on an ephemeral loopback port.
const BASE_FLAGS: &[&str] = &[
    "--headless",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--remote-debugging-port=0",
];

/// The Chromium binary: `given`, else the first of [`NAMES`] on PATH.
pub fn find_binary(given: Option<&Path>) -> Result<PathBuf> {
    let install = "apt-get install chromium (Debian), apt-get install chromium-browser (Ubuntu)";
    crate::visits::find_binary(given, "Chromium", NAMES, "--chromium", install)
}

/// The flags that choose the protocol, for the page's origin and any
/// others it uses (`HOST:PORT` each, the page's first).
///
/// - h3: `--enable-quic --origin-to-force-quic-on=HOST:PORT,...`: QUIC
///   from the first request, with no Alt-Svc discovery.
/// - auto: `--enable-quic --origin-to-force-quic-on=HOST:9,...`: QUIC only
///   where `Alt-Svc` sends it. Forcing a port nothing serves is what lets
///   a discovered alternative pass certificate verification (DESIGN.md,
///   seen with Chromium 156); the origins' own ports are left to discovery.
/// - h2: `--disable-quic`: TCP + TLS, ALPN offers h2 and http/1.1.
/// - h1: `--disable-quic --disable-http2`: ALPN offers only http/1.1.
pub fn protocol_flags(proto: Proto, quic_origins: &[String]) -> Vec<String> {
    let unserved = |origin: &String| {
        let host = origin
            .rsplit_once(':')
            .map_or(origin.as_str(), |(host, _)| host);
        format!("{host}:{UNSERVED_PORT}")
    };
    match proto {
        Proto::H3 => vec![
            "--enable-quic".to_string(),
            format!("--origin-to-force-quic-on={}", quic_origins.join(",")),
        ],
        Proto::Auto => {
            let forced: Vec<String> = quic_origins.iter().map(unserved).collect();
            vec![
                "--enable-quic".to_string(),
                format!("--origin-to-force-quic-on={}", forced.join(",")),
            ]
        }
        Proto::H2 => vec!["--disable-quic".to_string()],
        Proto::H1 => vec!["--disable-quic".to_string(), "--disable-http2".to_string()],
    }
}

/// Where Chromium writes the port and path of its DevTools socket.
const DEVTOOLS_PORT_FILE: &str = "DevToolsActivePort";

/// The discard port: nothing serves it, so forcing QUIC there changes no
/// connection the page makes.
const UNSERVED_PORT: u16 = 9;

/// A running Chromium with one page attached. Fields drop in order:
/// DevTools, then the process group, then the profile.
pub struct Browser {
    devtools: DevTools,
    session: String,
    process: Supervised,
    /// The profile when it is the browser's own, removed with it.
    _profile: Option<tempfile::TempDir>,
    /// Chromium's own temporary files (`TMPDIR`), removed with it: left
    /// to itself it leaves an `org.chromium.Chromium.*` directory in /tmp
    /// at every launch. Last, so it goes after the process has stopped.
    _scratch: tempfile::TempDir,
}

impl Browser {
    /// Starts `binary` with `flags` (besides the base ones) and a fresh
    /// profile, opens a blank page and enables the Network and Page
    /// domains with the HTTP cache disabled.
    pub fn launch(binary: &Path, flags: &[String]) -> Result<Browser> {
        let profile = tempfile::Builder::new()
            .prefix("h3lab-chromium-")
            .tempdir()
            .context("cannot create a temporary Chromium profile")?;
        let dir = profile.path().to_path_buf();
        Browser::launch_with(binary, flags, &dir, Some(profile))
    }

    /// [`Browser::launch`] with the profile in `dir`, which outlives the
    /// browser: what it remembers (such as `Alt-Svc`) reaches the next
    /// launch, as for a user who comes back.
    pub fn launch_in(binary: &Path, flags: &[String], dir: &Path) -> Result<Browser> {
        Browser::launch_with(binary, flags, dir, None)
    }

    fn launch_with(
        binary: &Path,
        flags: &[String],
        dir: &Path,
        owned: Option<tempfile::TempDir>,
    ) -> Result<Browser> {
        // A profile used before still holds its last launch's port, which
        // the new one must not be mistaken for.
        match std::fs::remove_file(dir.join(DEVTOOLS_PORT_FILE)) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                return Err(err).context("cannot clear the Chromium profile's DevToolsActivePort")
            }
            _ => {}
        }
        let scratch = tempfile::Builder::new()
            .prefix("h3lab-chromium-tmp-")
            .tempdir()
            .context("cannot create a temporary directory for Chromium")?;
        let mut command = Command::new(binary);
        command
            .args(BASE_FLAGS)
            .args(flags)
            .env("TMPDIR", scratch.path());
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            // Chromium refuses to run as root with its sandbox on.
            command.arg("--no-sandbox");
        }
        command
            .arg(format!("--user-data-dir={}", dir.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: prctl is async-signal-safe; nothing else runs in the child.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        // Its own process group, so its helper processes die with it.
        let mut process = Supervised::spawn(command, Group::Own, "Chromium")
            .with_context(|| format!("running {}", binary.display()))?;
        let ws_url = devtools_url(&mut process, dir)?;
        let mut devtools = DevTools::connect(&ws_url)?;
        let deadline = Instant::now() + COMMAND;
        let target = devtools.call(
            None,
            "Target.createTarget",
            json!({"url": "about:blank"}),
            deadline,
        )?;
        let attached = devtools.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
            deadline,
        )?;
        let session = attached["sessionId"]
            .as_str()
            .ok_or_else(|| anyhow!("Chromium attached to the page without a session id"))?
            .to_string();
        let mut browser = Browser {
            devtools,
            session,
            process,
            _profile: owned,
            _scratch: scratch,
        };
        browser.call("Network.enable", json!({}))?;
        browser.call("Network.setCacheDisabled", json!({"cacheDisabled": true}))?;
        browser.call("Page.enable", json!({}))?;
        Ok(browser)
    }

    /// Closes the browser as a user does, so that it writes its profile
    /// (its `Network Persistent State`, with the `Alt-Svc` it learned)
    /// before it exits; dropping it kills it instead.
    pub fn close(mut self) -> Result<()> {
        let deadline = Instant::now() + COMMAND;
        self.devtools
            .send(None, "Browser.close", json!({}))
            .context("asking Chromium to close")?;
        let exit = self.process.wait_until(
            Some(deadline),
            &std::sync::atomic::AtomicBool::new(false),
            COMMAND,
        );
        anyhow::ensure!(
            exit.is_some(),
            "Chromium did not exit within {COMMAND:?} of Browser.close"
        );
        Ok(())
    }

    /// `err` with what became of Chromium: a lost DevTools connection is
    /// most often a browser that exited, and its last words say why.
    fn with_state(&mut self, err: anyhow::Error) -> anyhow::Error {
        crate::visits::with_browser_state("Chromium", &mut self.process, err)
    }

    /// Calls `method` in the page's session.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        self.devtools.call(
            Some(&self.session),
            method,
            params,
            Instant::now() + COMMAND,
        )
    }

    /// Navigates to `url` and returns the page's `Network.*` and `Page.*`
    /// events from then until the load event has fired, `after_load` (a
    /// script, awaited) has run in the page, and every request has
    /// finished or failed; with the script's value (null without one).
    /// The script runs once the page has settled after its load event;
    /// requests that rendering starts meanwhile (a CSS background image
    /// laid out after the load event) are waited for too.
    ///
    /// Fails when that takes longer than `timeout` (a stalled load), naming
    /// the requests still open, or when the navigation itself fails (e.g.
    /// `net::ERR_QUIC_PROTOCOL_ERROR`).
    pub fn navigate(
        &mut self,
        url: &str,
        after_load: Option<&str>,
        timeout: Duration,
    ) -> Result<(Vec<Value>, Value)> {
        self.devtools.forget_events();
        let deadline = Instant::now() + timeout;
        let session = self.session.clone();
        let navigate = self
            .devtools
            .send(Some(&session), "Page.navigate", json!({"url": url}))?;
        let mut events = Vec::new();
        let mut open: Vec<(String, String)> = Vec::new();
        let mut done: HashSet<String> = HashSet::new();
        let mut loaded = false;
        let mut script: Option<u64> = None;
        let mut value: Option<Value> = None;
        loop {
            let settled = loaded && open.iter().all(|(id, _)| done.contains(id));
            if settled {
                match (after_load, script, value.take()) {
                    (None, _, _) => return Ok((events, Value::Null)),
                    (Some(_), Some(_), Some(value)) => return Ok((events, value)),
                    (Some(expression), None, _) => {
                        script = Some(self.devtools.send(
                            Some(&session),
                            "Runtime.evaluate",
                            json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
                        )?);
                    }
                    (Some(_), Some(_), None) => {}
                }
            }
            let next = self.devtools.next_message(deadline);
            let Some(message) = next.map_err(|err| self.with_state(err))? else {
                let open: Vec<&str> = (open.iter())
                    .filter(|(id, _)| !done.contains(id))
                    .map(|(_, url)| url.as_str())
                    .collect();
                return Err(stalled(url, timeout, loaded, script.is_some(), &open));
            };
            let id = message["id"].as_u64();
            if id.is_some() && id == Some(navigate) {
                if let Some(error) = message.get("error") {
                    bail!("Chromium could not navigate to {url}: {error}");
                }
                if let Some(error) = message["result"]["errorText"].as_str() {
                    bail!("Chromium could not load {url}: {error}");
                }
                continue;
            }
            if id.is_some() && id == script {
                value = Some(script_value(&message, url)?);
                continue;
            }
            if message["sessionId"].as_str() != Some(session.as_str()) {
                continue;
            }
            let method = message["method"].as_str().unwrap_or("");
            let request = message["params"]["requestId"].as_str().unwrap_or("");
            match method {
                "Network.requestWillBeSent" => {
                    let request_url = message["params"]["request"]["url"].as_str();
                    open.push((request.to_string(), request_url.unwrap_or("").to_string()));
                }
                "Network.loadingFinished" | "Network.loadingFailed" => {
                    done.insert(request.to_string());
                }
                "Page.loadEventFired" => loaded = true,
                _ => {}
            }
            if method.starts_with("Network.") || method.starts_with("Page.") {
                events.push(message);
            }
        }
    }
}

/// Why a load that did not settle within `timeout` stalled, with the
/// requests still `open`.
fn stalled(
    url: &str,
    timeout: Duration,
    loaded: bool,
    script_sent: bool,
    open: &[&str],
) -> anyhow::Error {
    let why = match (loaded, script_sent) {
        (false, _) => "no load event",
        (true, true) if open.is_empty() => "the page's timings did not come",
        (true, _) => "not every request finished",
    };
    anyhow::anyhow!(
        "the load of {url} stalled: {why} within {timeout:?}; requests still open: [{}]",
        open.join(", ")
    )
}

/// The value the timing script's `Runtime.evaluate` answer carries, or
/// why it has none.
fn script_value(message: &Value, url: &str) -> Result<Value> {
    if let Some(error) = message.get("error") {
        bail!("Chromium could not run the timing script in {url}: {error}");
    }
    if let Some(exception) = message["result"].get("exceptionDetails") {
        bail!("the timing script failed in {url}: {exception}");
    }
    Ok(message["result"]["result"]["value"].clone())
}

/// Chromium writes its DevTools port and path to `DevToolsActivePort` in
/// the profile once it listens.
fn devtools_url(process: &mut Supervised, profile: &Path) -> Result<String> {
    let file = profile.join(DEVTOOLS_PORT_FILE);
    let deadline = Instant::now() + STARTUP;
    while Instant::now() < deadline {
        if let Some(exit) = process.poll() {
            bail!(
                "{} before it listened for DevTools{}",
                crate::visits::ended("Chromium", exit.code),
                process.last_stderr_line()
            );
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if let [port, path] = text.lines().collect::<Vec<_>>()[..] {
            return Ok(format!("ws://127.0.0.1:{port}{path}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!("Chromium did not listen for DevTools within {STARTUP:?}")
}
