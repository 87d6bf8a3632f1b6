//! One headless Firefox: finding the binary, starting it with a profile
//! in its own process group, a WebDriver BiDi session on its one tab, and
//! collecting the events of one navigation.
//!
//! Dropping a [`Browser`] closes the socket, kills Firefox's whole process
//! group and reaps it, then removes the profile. Firefox also dies with
//! the thread that started it (`PR_SET_PDEATHSIG`).

use std::collections::{HashSet, VecDeque};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use h3lab_supervise::{Group, Supervised};
use serde_json::{json, Value};

use crate::json_socket::JsonSocket;

/// Firefox must listen for BiDi by then.
const STARTUP: Duration = Duration::from_secs(20);

/// Any command but a navigation must be answered by then.
const COMMAND: Duration = Duration::from_secs(30);

/// Names tried on PATH, in order, when no binary is given.
const NAMES: &[&str] = &["firefox", "firefox-esr"];

/// Where Firefox writes the address of its BiDi socket in the profile.
const BIDI_SERVER_FILE: &str = "WebDriverBiDiServer.json";

/// The events a load is built from.
const EVENTS: &[&str] = &[
    "network.beforeRequestSent",
    "network.responseCompleted",
    "network.fetchError",
    "browsingContext.domContentLoaded",
    "browsingContext.load",
];

/// The oldest Firefox with all the driver uses: the parent process's
/// scope behind `--remote-allow-system-access` came in 138, and 140 is
/// the ESR after it (checked with 153 ESR).
const OLDEST: u32 = 140;

/// How to install a Firefox.
const INSTALL: &str = "apt-get install firefox-esr (Debian)";

/// The Firefox binary: `given`, else the first of [`NAMES`] on PATH; one
/// that says it is older than [`OLDEST`] is refused.
pub fn find_binary(given: Option<&Path>) -> Result<PathBuf> {
    let binary = crate::visits::find_binary(given, "Firefox", NAMES, "--firefox", INSTALL)?;
    if let Some(major) = major_version(&binary)? {
        anyhow::ensure!(
            major >= OLDEST,
            "{} is Firefox {major}, too old for WebDriver BiDi as h3lab drives it \
             (needs {OLDEST} or newer); install a newer one: {INSTALL}, or pass --firefox PATH",
            binary.display()
        );
    }
    Ok(binary)
}

/// The major version `binary --version` prints ("Mozilla Firefox
/// 153.0esr"); `None` when it prints none (the launch then tells).
fn major_version(binary: &Path) -> Result<Option<u32>> {
    let mut command = Command::new(binary);
    command
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut process = Supervised::spawn(command, Group::Own, "Firefox")
        .with_context(|| format!("running {} --version", binary.display()))?;
    let deadline = Instant::now() + STARTUP;
    let exit = process.wait_until(Some(deadline), &AtomicBool::new(false), Duration::ZERO);
    anyhow::ensure!(
        exit.is_some(),
        "{} --version did not finish within {STARTUP:?}",
        binary.display()
    );
    let mut text = String::new();
    if let Some(mut stdout) = process.take_stdout() {
        std::io::Read::read_to_string(&mut stdout, &mut text)
            .with_context(|| format!("reading {} --version", binary.display()))?;
    }
    Ok(parse_major_version(&text))
}

fn parse_major_version(text: &str) -> Option<u32> {
    let version = text.split("Firefox ").nth(1)?;
    let major: String = version.chars().take_while(char::is_ascii_digit).collect();
    major.parse().ok()
}

/// What a launch writes into the profile and runs before the first load.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// `user.js`.
    pub user_js: String,
    /// `cert_override.txt`, when a certificate is pinned.
    pub cert_overrides: Option<String>,
    /// Authorities trusted in the profile's certificate database.
    pub authorities: Option<Authorities>,
    /// Run in the parent process: host name overrides.
    pub host_names: Option<String>,
    /// Accept any certificate (WebDriver's `acceptInsecureCerts`).
    pub insecure: bool,
}

/// Certificate authorities a launch adds to its profile, and where they
/// came from.
#[derive(Debug, Clone)]
pub struct Authorities {
    /// [`super::profile::authorities_script`]'s script.
    pub script: String,
    /// `--ca`'s file: a certificate Firefox refuses fails the launch. The
    /// system's store (`None`) is Firefox's own roots plus any a user
    /// added; one it refuses it would not have trusted anyway.
    pub ca_file: Option<PathBuf>,
}

/// A WebDriver BiDi connection: commands with ids, events kept in order
/// while a reply is awaited.
struct Bidi {
    socket: JsonSocket,
    next_id: u64,
    backlog: VecDeque<Value>,
}

impl Bidi {
    fn send(&mut self, method: &str, params: Value) -> Result<u64> {
        self.next_id += 1;
        let message = json!({"id": self.next_id, "method": method, "params": params});
        self.socket.send(&message, method)?;
        Ok(self.next_id)
    }

    fn call(&mut self, method: &str, params: Value, deadline: Instant) -> Result<Value> {
        let id = self.send(method, params)?;
        loop {
            let Some(message) = self.socket.read_before(deadline)? else {
                bail!("Firefox did not answer {method} in time");
            };
            if message["id"].as_u64() == Some(id) {
                return reply(method, message);
            }
            if message["type"] == "event" {
                self.backlog.push_back(message);
            }
        }
    }

    fn next_message(&mut self, deadline: Instant) -> Result<Option<Value>> {
        match self.backlog.pop_front() {
            Some(event) => Ok(Some(event)),
            None => self.socket.read_before(deadline),
        }
    }
}

/// A command's result, or its error as Firefox words it.
fn reply(method: &str, message: Value) -> Result<Value> {
    match message["type"].as_str() {
        Some("success") => Ok(message["result"].clone()),
        _ => bail!(
            "Firefox refused {method}: {} ({})",
            message["message"].as_str().unwrap_or(""),
            message["error"].as_str().unwrap_or("no error code")
        ),
    }
}

/// A running Firefox with one tab. Fields drop in order: the socket, the
/// process group, the profile, Firefox's temporary files.
pub struct Browser {
    bidi: Bidi,
    context: String,
    process: Supervised,
    _profile: Option<tempfile::TempDir>,
    _scratch: tempfile::TempDir,
}

impl Browser {
    /// Starts `binary` with `setup` in the profile `dir` (which outlives
    /// it) or, without one, in a new profile of its own.
    pub fn launch(binary: &Path, setup: &Setup, dir: Option<&Path>) -> Result<Browser> {
        let owned = match dir {
            Some(_) => None,
            None => Some(
                tempfile::Builder::new()
                    .prefix("h3lab-firefox-")
                    .tempdir()
                    .context("cannot create a temporary Firefox profile")?,
            ),
        };
        let dir = dir.unwrap_or_else(|| owned.as_ref().map_or(Path::new("."), |p| p.path()));
        write_profile(dir, setup)?;
        let scratch = tempfile::Builder::new()
            .prefix("h3lab-firefox-tmp-")
            .tempdir()
            .context("cannot create a temporary directory for Firefox")?;
        let mut command = Command::new(binary);
        command
            .args(["--headless", "--no-remote", "--remote-debugging-port", "0"])
            .arg("--remote-allow-system-access")
            .arg("--profile")
            .arg(dir)
            .arg("about:blank")
            .env("TMPDIR", scratch.path())
            .env("MOZ_CRASHREPORTER_DISABLE", "1")
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
        let mut process = Supervised::spawn(command, Group::Own, "Firefox")
            .with_context(|| format!("running {}", binary.display()))?;
        let ws_url = bidi_url(&mut process, dir)?;
        let socket = JsonSocket::connect(&ws_url, "Firefox's WebDriver BiDi")?;
        let mut bidi = Bidi {
            socket,
            next_id: 0,
            backlog: VecDeque::new(),
        };
        let deadline = Instant::now() + COMMAND;
        let capabilities = json!({"alwaysMatch": {"acceptInsecureCerts": setup.insecure}});
        bidi.call(
            "session.new",
            json!({"capabilities": capabilities}),
            deadline,
        )?;
        if let Some(authorities) = &setup.authorities {
            trust(&mut bidi, authorities, deadline)?;
        }
        if let Some(script) = &setup.host_names {
            run_in_parent(&mut bidi, script, deadline)
                .context("Firefox could not map the host names")?;
        }
        let tree = bidi.call("browsingContext.getTree", json!({"maxDepth": 0}), deadline)?;
        let context = tree["contexts"][0]["context"]
            .as_str()
            .ok_or_else(|| anyhow!("Firefox has no tab to load the page in"))?
            .to_string();
        let subscribe = json!({"events": EVENTS, "contexts": [context]});
        bidi.call("session.subscribe", subscribe, deadline)?;
        // Every resource crosses the network, as Chromium's setCacheDisabled.
        let bypass = json!({"cacheBehavior": "bypass", "contexts": [context]});
        bidi.call("network.setCacheBehavior", bypass, deadline)?;
        Ok(Browser {
            bidi,
            context,
            process,
            _profile: owned,
            _scratch: scratch,
        })
    }

    /// Closes the browser as a user does, so it writes its profile (the
    /// `Alt-Svc` it learned) before it exits; dropping it kills it.
    pub fn close(mut self) -> Result<()> {
        let deadline = Instant::now() + COMMAND;
        // Firefox may close the socket before it answers.
        let _ = self.bidi.call("browser.close", json!({}), deadline);
        let exit = self
            .process
            .wait_until(Some(deadline), &AtomicBool::new(false), COMMAND);
        anyhow::ensure!(
            exit.is_some(),
            "Firefox did not exit within {COMMAND:?} of browser.close"
        );
        Ok(())
    }

    fn with_state(&mut self, err: anyhow::Error) -> anyhow::Error {
        crate::visits::with_browser_state("Firefox", &mut self.process, err)
    }

    /// Navigates to `url` and returns the tab's events from then until the
    /// load event has fired, every request has finished or failed and
    /// `after_load` (a script, awaited) has run in the page, with the
    /// script's value (null without one). Fails after `timeout`, naming
    /// the requests still open, or when the navigation fails.
    pub fn navigate(
        &mut self,
        url: &str,
        after_load: Option<&str>,
        timeout: Duration,
    ) -> Result<(Vec<Value>, Value)> {
        self.bidi.backlog.clear();
        let deadline = Instant::now() + timeout;
        let navigate = self.bidi.send(
            "browsingContext.navigate",
            json!({"context": self.context, "url": url, "wait": "none"}),
        )?;
        let mut progress = Progress::default();
        let mut script: Option<u64> = None;
        let mut value: Option<Value> = None;
        loop {
            if progress.settled() {
                match (after_load, script, value.take()) {
                    (None, _, _) => return Ok((progress.events, Value::Null)),
                    (Some(_), Some(_), Some(value)) => return Ok((progress.events, value)),
                    (Some(expression), None, _) => script = Some(self.evaluate(expression)?),
                    (Some(_), Some(_), None) => {}
                }
            }
            let next = self.bidi.next_message(deadline);
            let Some(message) = next.map_err(|err| self.with_state(err))? else {
                bail!(
                    "the load of {url} stalled: {} within {timeout:?}",
                    progress.stall()
                );
            };
            let id = message["id"].as_u64();
            if id.is_some() && id == Some(navigate) {
                let result = reply("browsingContext.navigate", message)
                    .map_err(|err| untrusted_hint(err, url))?;
                progress.navigated(result["navigation"].as_str().unwrap_or(""));
            } else if id.is_some() && id == script {
                let result = reply("script.evaluate", message)?;
                if result["type"] == "exception" {
                    let details = &result["exceptionDetails"];
                    bail!("the timing script failed in {url}: {details}");
                }
                value = Some(from_remote_value(&result["result"]));
            } else if message["params"]["context"].as_str() == Some(self.context.as_str()) {
                progress.on_event(message);
            }
        }
    }

    /// Starts `expression` in the page, awaited; returns the command's id.
    fn evaluate(&mut self, expression: &str) -> Result<u64> {
        self.bidi.send(
            "script.evaluate",
            json!({"expression": expression, "awaitPromise": true,
                   "target": {"context": self.context},
                   "serializationOptions": {"maxObjectDepth": 2}}),
        )
    }
}

/// One navigation's events as they arrive: which requests are open, and
/// whether the navigation's own load event has fired (it is known by the
/// id `browsingContext.navigate` answers with, which may come after it).
#[derive(Debug, Default)]
struct Progress {
    events: Vec<Value>,
    /// Each request's id and URL, in the order sent.
    open: Vec<(String, String)>,
    done: HashSet<String>,
    navigation: Option<String>,
    /// The navigations whose load event fired.
    loads: Vec<String>,
}

impl Progress {
    fn navigated(&mut self, navigation: &str) {
        self.navigation = Some(navigation.to_string());
    }

    fn loaded(&self) -> bool {
        (self.navigation.as_ref()).is_some_and(|navigation| self.loads.contains(navigation))
    }

    /// Loaded, and every request finished or failed.
    fn settled(&self) -> bool {
        self.loaded() && self.open.iter().all(|(id, _)| self.done.contains(id))
    }

    fn on_event(&mut self, message: Value) {
        let params = &message["params"];
        let request = params["request"]["request"].as_str().unwrap_or("");
        match message["method"].as_str().unwrap_or("") {
            "network.beforeRequestSent" => {
                let url = params["request"]["url"].as_str().unwrap_or("");
                self.open.push((request.to_string(), url.to_string()));
            }
            "network.responseCompleted" | "network.fetchError" => {
                self.done.insert(request.to_string());
            }
            "browsingContext.load" => {
                let navigation = params["navigation"].as_str().unwrap_or("");
                self.loads.push(navigation.to_string());
            }
            _ => {}
        }
        self.events.push(message);
    }

    /// What a load that did not settle still waited for.
    fn stall(&self) -> String {
        let open: Vec<&str> = (self.open.iter())
            .filter(|(id, _)| !self.done.contains(id))
            .map(|(_, url)| url.as_str())
            .collect();
        let what = match self.loaded() {
            true => "not every request finished",
            false => "no load event",
        };
        format!("{what}; requests still open: [{}]", open.join(", "))
    }
}

/// A failed navigation, with the fix when the certificate was the
/// problem.
fn untrusted_hint(err: anyhow::Error, url: &str) -> anyhow::Error {
    let err = err.context(format!("Firefox could not load {url}"));
    let text = format!("{err:#}");
    match text.contains("MOZILLA_PKIX_ERROR") || text.contains("SEC_ERROR") {
        true => err.context(
            "Firefox does not trust the server's certificate; pass it or its authority \
             with --ca FILE, or --insecure",
        ),
        false => err,
    }
}

/// Writes `setup`'s files into the profile `dir`, and clears the BiDi
/// address a previous launch left there.
fn write_profile(dir: &Path, setup: &Setup) -> Result<()> {
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text)
            .with_context(|| format!("cannot write {name} in the Firefox profile"))
    };
    write("user.js", &setup.user_js)?;
    if let Some(overrides) = &setup.cert_overrides {
        write("cert_override.txt", overrides)?;
    }
    match std::fs::remove_file(dir.join(BIDI_SERVER_FILE)) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(err).context("cannot clear the Firefox profile's WebDriverBiDiServer.json")
        }
        _ => Ok(()),
    }
}

/// Adds `authorities` to the profile's certificate database.
fn trust(bidi: &mut Bidi, authorities: &Authorities, deadline: Instant) -> Result<()> {
    let context = || match &authorities.ca_file {
        Some(path) => format!(
            "Firefox could not trust the certificates of {}",
            path.display()
        ),
        None => "Firefox could not trust the system's certificate authorities".to_string(),
    };
    let refused = run_in_parent(bidi, &authorities.script, deadline).with_context(context)?;
    let refused = from_remote_value(&refused);
    let refused: Vec<&str> = (refused.as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    match &authorities.ca_file {
        Some(path) if !refused.is_empty() => bail!(
            "Firefox refused certificate {} of --ca {}; pass PEM certificates of the server \
             or its authority",
            refused.join(", certificate "),
            path.display()
        ),
        _ => Ok(()),
    }
}

/// Runs `script` in Firefox's parent process, where its network and
/// security services live (`--remote-allow-system-access`), and returns
/// its value as BiDi gives it.
fn run_in_parent(bidi: &mut Bidi, script: &str, deadline: Instant) -> Result<Value> {
    let tree = bidi.call(
        "browsingContext.getTree",
        json!({"maxDepth": 0, "moz:scope": "chrome"}),
        deadline,
    )?;
    let context = tree["contexts"][0]["context"].clone();
    let result = bidi.call(
        "script.evaluate",
        json!({"expression": script, "awaitPromise": false, "target": {"context": context}}),
        deadline,
    )?;
    if result["type"] == "exception" {
        bail!("the script threw {}", result["exceptionDetails"]);
    }
    Ok(result["result"].clone())
}

/// A BiDi remote value (`{"type": "object", "value": [[key, value], …]}`)
/// as plain JSON.
fn from_remote_value(remote: &Value) -> Value {
    match remote["type"].as_str() {
        Some("number" | "string" | "boolean") => remote["value"].clone(),
        Some("object") => {
            let pairs = remote["value"].as_array().cloned().unwrap_or_default();
            let object = pairs.iter().filter_map(|pair| {
                Some((pair[0].as_str()?.to_string(), from_remote_value(&pair[1])))
            });
            Value::Object(object.collect())
        }
        Some("array") => {
            let items = remote["value"].as_array().cloned().unwrap_or_default();
            Value::Array(items.iter().map(from_remote_value).collect())
        }
        _ => Value::Null,
    }
}

/// Firefox writes its BiDi host and port to `WebDriverBiDiServer.json`
/// in the profile once it listens.
fn bidi_url(process: &mut Supervised, profile: &Path) -> Result<String> {
    let file = profile.join(BIDI_SERVER_FILE);
    let deadline = Instant::now() + STARTUP;
    while Instant::now() < deadline {
        if let Some(exit) = process.poll() {
            bail!(
                "{} before it listened for WebDriver BiDi{}",
                crate::visits::ended("Firefox", exit.code),
                process.last_stderr_line()
            );
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if let Ok(server) = serde_json::from_str::<Value>(&text) {
            if let (Some(host), Some(port)) =
                (server["ws_host"].as_str(), server["ws_port"].as_u64())
            {
                return Ok(format!("ws://{host}:{port}/session"));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!("Firefox did not listen for WebDriver BiDi within {STARTUP:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_major_version_is_read_from_what_firefox_prints() {
        assert_eq!(
            parse_major_version("Mozilla Firefox 153.0.1esr\n"),
            Some(153)
        );
        assert_eq!(parse_major_version("Mozilla Firefox 115.9.0esr"), Some(115));
        assert_eq!(parse_major_version("Mozilla Firefox nightly"), None);
        assert_eq!(parse_major_version(""), None);
    }

    #[test]
    fn a_firefox_too_old_for_bidi_is_refused_naming_the_package() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("firefox");
        std::fs::write(&fake, "#!/bin/sh\necho 'Mozilla Firefox 115.9.0esr'\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = find_binary(Some(&fake)).unwrap_err().to_string();
        assert!(err.contains("is Firefox 115, too old"), "{err}");
        assert!(err.contains("apt-get install firefox-esr"), "{err}");
    }

    #[test]
    fn a_remote_object_becomes_plain_json() {
        let remote = json!({"type": "object", "value": [
            ["requestStart", {"type": "number", "value": 12.5}],
            ["lcp", {"type": "null"}],
            ["list", {"type": "array", "value": [{"type": "string", "value": "a"}]}]
        ]});
        assert_eq!(
            from_remote_value(&remote),
            json!({"requestStart": 12.5, "lcp": null, "list": ["a"]})
        );
    }

    #[test]
    fn a_navigation_settles_on_its_own_load_event_once_every_request_is_done() {
        let event = |method: &str, params: Value| json!({"method": method, "params": params});
        let mut progress = Progress::default();
        let request = json!({"request": "1", "url": "https://a.test/"});
        progress.on_event(event(
            "network.beforeRequestSent",
            json!({"request": request}),
        ));
        // The load event may come before the reply that names the navigation.
        progress.on_event(event("browsingContext.load", json!({"navigation": "N"})));
        assert!(!progress.settled());
        progress.navigated("N");
        assert!(!progress.settled());
        assert_eq!(
            progress.stall(),
            "not every request finished; requests still open: [https://a.test/]"
        );
        progress.on_event(event(
            "network.responseCompleted",
            json!({"request": request}),
        ));
        assert!(progress.settled());
        assert_eq!(progress.events.len(), 3);
        let mut other = Progress::default();
        other.navigated("M");
        other.on_event(event("browsingContext.load", json!({"navigation": "N"})));
        assert!(!other.settled(), "another navigation's load event");
        assert_eq!(other.stall(), "no load event; requests still open: []");
    }

    #[test]
    fn a_missing_binary_says_how_to_install_one() {
        let err = find_binary(Some("/no/such/firefox".as_ref())).unwrap_err();
        assert!(err.to_string().contains("--firefox PATH"), "{err}");
    }
}
