//! Shared pieces of the binary's end-to-end tests: a running `h3lab serve`,
//! `h3lab bench` runs with their results, and runs that must fail promptly
//! with a piece of the machine taken away (`FakePath`, `fails_promptly`).

#![allow(dead_code)] // each test binary uses its own subset

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use h3lab_results::bench::{CellRecord, ClientReport, Outcome, Results};
use h3lab_results::load::LoadReport;
use h3lab_results::page::PageReport;
use h3lab_supervise::{Group, Supervised};

pub const EXE: &str = env!("CARGO_BIN_EXE_h3lab");

/// `h3lab serve` on an ephemeral loopback port; stopped on drop.
pub struct Server {
    /// Killed and reaped on drop.
    _process: Supervised,
    pub addr: SocketAddr,
    pub spki: String,
    pub cert: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    /// `h3lab serve` with `args` added to its defaults.
    pub fn start(args: &[&OsStr]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("cert.pem");
        let mut command = Command::new(EXE);
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--write-cert"])
            .arg(&cert)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut process = Supervised::spawn(command, Group::Own, "h3lab serve").unwrap();
        let mut lines = BufReader::new(process.take_stdout().unwrap()).lines();
        // The banner's `tuning:` lines come first.
        let mut field = |prefix: &str| -> String {
            let line = lines
                .by_ref()
                .map(|line| line.unwrap())
                .find(|line| !line.starts_with("tuning:"))
                .expect("server banner");
            line.strip_prefix(prefix)
                .unwrap_or_else(|| panic!("banner line {line:?}"))
                .trim()
                .to_string()
        };
        let listening = field("listening:");
        let spki = field("spki-sha256:");
        let addr = listening
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        // Keep draining stdout so the server never writes into a closed pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Server {
            _process: process,
            addr,
            spki,
            cert,
            _dir: dir,
        }
    }
}

/// Runs `h3lab bench` on `suite`; also says whether it left namespaces.
pub fn bench(suite: &str, out: &Path) -> (Output, bool) {
    bench_with(suite, out, &[])
}

/// Runs `h3lab bench` on `suite` and asserts that it succeeded (naming its
/// failed cells and its errors if not) and left no namespace behind.
#[allow(dead_code)]
pub fn bench_ok(suite: &str, out: &Path) -> Output {
    let (output, left_behind) = bench(suite, out);
    assert!(
        output.status.success(),
        "bench failed: {}\nfailed cells:\n{}\n{}",
        String::from_utf8_lossy(&output.stderr),
        failed_cells(out),
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(!left_behind, "namespaces left behind");
    output
}

/// [`bench`] with more flags of `h3lab bench`, such as `--aa`.
pub fn bench_with(suite: &str, out: &Path, flags: &[&str]) -> (Output, bool) {
    let file = out.with_extension("toml");
    std::fs::write(&file, suite).unwrap();
    let child = Command::new(EXE)
        .arg("bench")
        .arg(&file)
        .args(flags)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run h3lab bench");
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    (output, namespaces_left(pid))
}

pub fn results(out: &Path) -> Results {
    let text = std::fs::read_to_string(out.join("results.json")).expect("results.json written");
    serde_json::from_str(&text).expect("results.json is h3lab.results/1")
}

/// A load cell's client report.
#[allow(dead_code)]
pub fn load_report(cell: &CellRecord) -> &LoadReport {
    let report = cell.client_report.as_ref();
    report
        .and_then(ClientReport::load)
        .unwrap_or_else(|| panic!("no load report: {cell:?}"))
}

/// A page cell's client report.
#[allow(dead_code)]
pub fn page_report(cell: &CellRecord) -> &PageReport {
    let report = cell.client_report.as_ref();
    report
        .and_then(ClientReport::page)
        .unwrap_or_else(|| panic!("no page report: {cell:?}"))
}

/// The failed cells of the run in `out`, a line each, for an assertion's
/// message.
#[allow(dead_code)]
pub fn failed_cells(out: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(out.join("results.json")) else {
        return "no results.json".to_string();
    };
    let results: Results = serde_json::from_str(&text).unwrap();
    let failed: Vec<String> = results
        .cells
        .iter()
        .filter_map(|c| match &c.outcome {
            Outcome::Failed { error } => Some(format!(
                "{} {} {}: {error}",
                c.profile, c.workload, c.protocol
            )),
            _ => None,
        })
        .collect();
    failed.join("\n")
}

/// Whether the (finished) h3lab process `pid` left namespaces behind;
/// other tests' runs, going on in parallel, have other pids.
pub fn namespaces_left(pid: u32) -> bool {
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let prefix = format!("h3lab-{pid}-");
    String::from_utf8_lossy(&list.stdout)
        .lines()
        .any(|line| line.starts_with(&prefix))
}

/// What a probe run printed, and its process id (which names the
/// namespaces it made, see [`namespaces_left`]).
pub struct Probed {
    pub printed: String,
    pub pid: u32,
}

/// Runs an `h3lab probe` command whose stdout goes to `output`, under the
/// supervisor, for at most `limit`. Panics with what it printed when it
/// fails or overruns.
pub fn run_probe(
    mut command: Command,
    what: &str,
    output: &Path,
    limit: std::time::Duration,
) -> Probed {
    command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(output).unwrap())
        .stderr(Stdio::piped());
    let mut process = Supervised::spawn(command, Group::Own, what).unwrap();
    let exit = process.wait_until(
        Some(std::time::Instant::now() + limit),
        &std::sync::atomic::AtomicBool::new(false),
        std::time::Duration::from_secs(2),
    );
    let printed = std::fs::read_to_string(output).unwrap();
    let Some(exit) = exit else {
        process.stop(std::time::Duration::from_secs(5));
        panic!("{what} ran past {limit:?}:\n{printed}");
    };
    assert_eq!(
        exit.code,
        0,
        "{what} failed{}:\n{printed}",
        process.last_stderr_line()
    );
    Probed {
        printed,
        pid: process.id(),
    }
}

/// Asks `process`, started in a group of its own, to stop with SIGINT as
/// a terminal's Ctrl-C would, waits at most `limit` for it, and checks
/// that it failed and said it was interrupted.
#[allow(dead_code)]
pub fn interrupt(process: &mut Supervised, limit: std::time::Duration) {
    let exit = process
        .wait_until(
            Some(std::time::Instant::now() + limit),
            &std::sync::atomic::AtomicBool::new(true),
            std::time::Duration::from_secs(20),
        )
        .expect("the run ended after SIGINT");
    assert_ne!(exit.code, 0, "an interrupted run is not a success");
    let error = process.last_stderr_line();
    assert!(error.contains("interrupted"), "{error}");
}

/// Each `(flags, expected)` case of `h3lab SUBCOMMAND... FLAGS` must be
/// refused with a non-zero exit, an error naming `expected`, and no panic.
pub fn assert_refused(subcommand: &[&str], cases: &[(&[&str], &str)]) {
    for (flags, expected) in cases {
        let output = Command::new(EXE)
            .args(subcommand)
            .args(*flags)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{flags:?} was accepted");
        assert!(stderr.contains(expected), "{flags:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{flags:?}: {stderr}");
    }
}

/// The bound every failure must end within.
pub const PROMPT: Duration = Duration::from_secs(30);
/// How long a run may take before the test stops it as hung.
const HUNG: Duration = Duration::from_secs(90);

/// A directory to put on `PATH` in place of the system's: a link to every
/// program on the system's `PATH` (and in the sbin directories), but none
/// for `missing`, and a shell script for each stub. A stub marks itself
/// and what it runs with `H3LAB_STUB=<the directory>` in their
/// environment, which is how [`assert_no_stub_runs`] finds them.
pub struct FakePath {
    dir: tempfile::TempDir,
}

impl FakePath {
    pub fn new(missing: &[&str], stubs: &[(&str, &str)]) -> FakePath {
        let dir = tempfile::tempdir().unwrap();
        let path = std::env::var("PATH").unwrap_or_default();
        let dirs = path
            .split(':')
            .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"])
            .map(PathBuf::from);
        for system_dir in dirs {
            let Ok(entries) = std::fs::read_dir(&system_dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name_text = name.to_string_lossy();
                let link = dir.path().join(&name);
                let stubbed = stubs.iter().any(|(stub, _)| *stub == name_text);
                if missing.contains(&&*name_text) || stubbed || link.exists() {
                    continue;
                }
                std::os::unix::fs::symlink(entry.path(), link).unwrap();
            }
        }
        for (name, script) in stubs {
            let stub = dir.path().join(name);
            let marker = dir.path().display();
            std::fs::write(
                &stub,
                format!("#!/bin/sh\nexport H3LAB_STUB={marker}\n{script}\n"),
            )
            .unwrap();
            std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        FakePath { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// How an h3lab run that was meant to fail ended.
pub struct Failed {
    pub error: String,
    pub took: Duration,
}

/// Runs `command` (an h3lab run) to its end, at most [`HUNG`], and checks
/// that it failed within [`PROMPT`], without a panic, leaving nothing
/// behind. Returns its standard error.
pub fn fails_promptly(mut command: Command, what: &str) -> Failed {
    let dir = tempfile::tempdir().unwrap();
    let stderr_path = dir.path().join("stderr");
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap());
    let started = Instant::now();
    let mut run = Supervised::spawn(command, Group::Own, what).unwrap();
    let pid = run.id();
    let exit = run.wait_until(Some(started + HUNG), &AtomicBool::new(false), PROMPT);
    let took = started.elapsed();
    let exit = exit.unwrap_or_else(|| {
        run.stop(Duration::from_secs(2));
        panic!(
            "{what}: still running after {HUNG:?}: {}",
            std::fs::read_to_string(&stderr_path).unwrap_or_default()
        )
    });
    let error = std::fs::read_to_string(&stderr_path).unwrap();
    assert_ne!(exit.code, 0, "{what} succeeded: {error}");
    assert!(!error.contains("panicked"), "{what}: {error}");
    assert!(took < PROMPT, "{what} took {took:?} to fail: {error}");
    assert!(!namespaces_left(pid), "{what} left namespaces behind");
    assert_nothing_of_the_gateway_left(pid, what);
    Failed { error, took }
}

/// No veth end (`h3g<pid>-`) or iptables rule (`h3lab-gw-<pid>-`) of a
/// gateway of `pid` is left in the root namespace.
fn assert_nothing_of_the_gateway_left(pid: u32, what: &str) {
    let links = Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .unwrap();
    let links = String::from_utf8_lossy(&links.stdout);
    assert!(
        !links.contains(&format!("h3g{pid}-")),
        "{what} left its veth: {links}"
    );
    let Some(iptables) = h3lab_testenv::iptables() else {
        return;
    };
    for table in ["nat", "filter"] {
        let rules = Command::new(&iptables)
            .args(["-t", table, "-S"])
            .output()
            .unwrap();
        let rules = String::from_utf8_lossy(&rules.stdout);
        assert!(
            !rules.contains(&format!("h3lab-gw-{pid}-")),
            "{what} left a rule: {rules}"
        );
    }
}

/// No process a stub of `fake` started (itself included) runs any more.
pub fn assert_no_stub_runs(fake: &FakePath) {
    let marker = format!("H3LAB_STUB={}", fake.path().display());
    let entries = std::fs::read_dir("/proc").unwrap();
    for entry in entries.flatten() {
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let environ = String::from_utf8_lossy(&environ);
        if environ.split('\0').any(|var| var == marker) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            panic!(
                "a stub still runs: pid {} {}",
                entry.file_name().to_string_lossy(),
                String::from_utf8_lossy(&cmdline).replace('\0', " ")
            );
        }
    }
}
