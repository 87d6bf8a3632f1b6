//! Every outside piece h3lab needs, taken away (docs/hardening.md,
//! "What h3lab needs from the machine"): a program left off `PATH`, a stub
//! in its place that fails or never answers, a device or directory hidden
//! in a mount namespace of the test's own, a port taken. Each run must end
//! within 30 s, non-zero, with an error that names the missing piece and
//! its fix, and leave no namespace, veth, rule or process behind. Most need
//! root: without it they skip with a message, and fail in CI.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{assert_no_stub_runs, fails_promptly, FakePath, EXE};

/// `h3lab ARGS` with `PATH` set to `fake`.
fn h3lab(fake: &FakePath, args: &[&str]) -> Command {
    let mut command = Command::new(EXE);
    command.args(args).env("PATH", fake.path());
    command
}

/// A path as root needs `ip` at every turn: `net run`, a bench on an
/// emulated profile and a probe each say to install iproute2.
#[test]
fn without_ip_the_path_commands_name_iproute2() {
    if !h3lab_testenv::root() {
        return;
    }
    let fake = FakePath::new(&["ip"], &[]);
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.toml");
    std::fs::write(
        &suite,
        "name = \"no-ip\"\nprotocols = [\"h2\"]\nprofiles = [\"broadband\"]\nrepetitions = 1\n\
         [[workload]]\nkind = \"ttfb\"\nname = \"hs\"\nmodes = [\"cold\"]\nsamples = 1\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let runs: [(&str, Vec<&str>); 3] = [
        (
            "net run",
            vec!["net", "run", "--profile", "broadband", "--", "true"],
        ),
        (
            "bench",
            vec![
                "bench",
                suite.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        ),
        (
            "probe hol",
            vec!["probe", "hol", "--repetitions", "1", "--rtt", "20ms"],
        ),
    ];
    for (what, args) in runs {
        let failed = fails_promptly(h3lab(&fake, &args), what);
        assert!(
            failed.error.contains("install iproute2"),
            "{what}: {}",
            failed.error
        );
    }
}

#[test]
fn a_failing_ip_is_named_with_what_it_said() {
    if !h3lab_testenv::root() {
        return;
    }
    let said = "RTNETLINK answers: Operation not permitted";
    let fake = FakePath::new(&[], &[("ip", &format!("echo '{said}' >&2; exit 2"))]);
    let args = ["net", "run", "--profile", "broadband", "--", "true"];
    let failed = fails_promptly(h3lab(&fake, &args), "net run");
    assert!(
        failed.error.contains("`ip netns add") && failed.error.contains(said),
        "{}",
        failed.error
    );
}

/// An `ip` that never answers is killed at its bound (10 s), with what it
/// started, and the run ends naming the command.
#[test]
fn a_hanging_ip_ends_the_run_at_its_bound() {
    if !h3lab_testenv::root() {
        return;
    }
    let fake = FakePath::new(&[], &[("ip", "sleep 600")]);
    let args = ["net", "run", "--profile", "broadband", "--", "true"];
    let failed = fails_promptly(h3lab(&fake, &args), "net run");
    assert!(
        failed.error.contains("`ip netns add")
            && failed.error.contains("did not finish within 10 s"),
        "{}",
        failed.error
    );
    assert!(failed.took >= Duration::from_secs(10), "{:?}", failed.took);
    assert_no_stub_runs(&fake);
}

/// `iptables -S` runs at every path's start (to remove what a killed h3lab
/// left); hanging, it ends the run instead of holding it for ever.
#[test]
fn a_hanging_iptables_ends_the_run_at_its_bound() {
    if !h3lab_testenv::root() {
        return;
    }
    let fake = FakePath::new(&[], &[("iptables", "sleep 600")]);
    let args = ["net", "run", "--profile", "broadband", "--", "true"];
    let failed = fails_promptly(h3lab(&fake, &args), "net run");
    assert!(
        failed
            .error
            .contains("`iptables -t nat -S` did not finish within 10 s"),
        "{}",
        failed.error
    );
    assert_no_stub_runs(&fake);
}

/// Runs `h3lab ARGS` in a mount namespace of its own after `setup` (shell
/// commands, as root) changed what that namespace sees.
fn in_own_mounts(setup: &str, args: &[&str]) -> Command {
    let mut command = Command::new("unshare");
    command
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(format!("{setup} && exec \"$0\" \"$@\""))
        .arg(EXE)
        .args(args);
    command
}

#[test]
fn without_the_tun_device_the_error_says_to_load_the_module() {
    if !h3lab_testenv::root() {
        return;
    }
    let command = in_own_mounts(
        "mount -t tmpfs tmpfs /dev/net",
        &["net", "run", "--profile", "broadband", "--", "true"],
    );
    let failed = fails_promptly(command, "net run without /dev/net/tun");
    assert!(
        failed.error.contains("TUN device") && failed.error.contains("modprobe tun"),
        "{}",
        failed.error
    );
}

#[test]
fn a_read_only_run_directory_is_named() {
    if !h3lab_testenv::root() {
        return;
    }
    let command = in_own_mounts(
        "mount --bind /run /run && mount -o remount,bind,ro /run",
        &["net", "run", "--profile", "broadband", "--", "true"],
    );
    let failed = fails_promptly(command, "net run with a read-only /run");
    assert!(
        failed.error.contains("/run") && failed.error.contains("writable /run"),
        "{}",
        failed.error
    );
}

#[test]
fn without_chromium_the_page_command_says_how_to_install_it() {
    let fake = FakePath::new(&["chromium", "chromium-browser", "google-chrome"], &[]);
    let args = [
        "page",
        "https://127.0.0.1:9/",
        "--browser",
        "chromium",
        "--insecure",
    ];
    let failed = fails_promptly(h3lab(&fake, &args), "page --browser chromium");
    assert!(
        failed.error.contains("no Chromium found")
            && failed.error.contains("apt-get install chromium")
            && failed.error.contains("--chromium PATH"),
        "{}",
        failed.error
    );
}

/// A Chromium that never opens DevTools ends the load at the start-up
/// bound, and is killed with everything it started.
#[test]
fn a_chromium_that_never_answers_ends_the_page_load() {
    let fake = FakePath::new(&[], &[("chromium", "sleep 600")]);
    let args = [
        "page",
        "https://127.0.0.1:9/",
        "--browser",
        "chromium",
        "--insecure",
    ];
    let failed = fails_promptly(h3lab(&fake, &args), "page --browser chromium");
    assert!(failed.error.contains("DevTools"), "{}", failed.error);
    assert_no_stub_runs(&fake);
}

#[test]
fn without_firefox_the_page_command_says_how_to_install_it() {
    let fake = FakePath::new(&["firefox", "firefox-esr"], &[]);
    let args = ["page", "https://127.0.0.1:9/", "--browser", "firefox"];
    let failed = fails_promptly(h3lab(&fake, &args), "page --browser firefox");
    assert!(
        failed.error.contains("no Firefox found")
            && failed.error.contains("apt-get install firefox-esr")
            && failed.error.contains("--firefox PATH"),
        "{}",
        failed.error
    );
}

/// A Firefox that says its version and never opens WebDriver BiDi ends
/// the load at the start-up bound, and is killed with everything it
/// started.
#[test]
fn a_firefox_that_never_answers_ends_the_page_load() {
    let stub = "case \"$1\" in --version) echo 'Mozilla Firefox 153.0esr' ;; *) sleep 600 ;; esac";
    let fake = FakePath::new(&["firefox-esr"], &[("firefox", stub)]);
    let args = ["page", "https://127.0.0.1:9/", "--browser", "firefox"];
    let failed = fails_promptly(h3lab(&fake, &args), "page --browser firefox");
    assert!(failed.error.contains("WebDriver BiDi"), "{}", failed.error);
    assert_no_stub_runs(&fake);
}

#[test]
fn a_taken_port_is_named_by_serve() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let listen = taken.local_addr().unwrap().to_string();
    let mut command = Command::new(EXE);
    command.args(["serve", "--listen", &listen]);
    let failed = fails_promptly(command, "serve on a taken port");
    assert!(
        failed.error.contains(&listen) && failed.error.contains("in use"),
        "{}",
        failed.error
    );
}

/// An edge whose server is not installed fails its cell at once, naming
/// where it looked and how to install it; the run still writes its
/// results.
#[test]
fn an_edge_server_that_is_not_installed_is_named_with_its_fix() {
    if !h3lab_testenv::root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.toml");
    std::fs::write(
        &suite,
        "name = \"no-nginx\"\nprotocols = [\"h2\"]\nprofiles = [\"broadband\"]\nrepetitions = 1\n\
         [target]\nport = 8443\n[target.edges.nginx]\nserver = \"nginx\"\norigin_protocol = \"h1\"\n\
         origin_rtt = \"10ms\"\n[sweep]\ntunable = \"edge\"\nvalues = [\"direct\", \"nginx\"]\n\
         [[workload]]\nkind = \"ttfb\"\nname = \"hs\"\nmodes = [\"cold\"]\nsamples = 1\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let mut command = Command::new(EXE);
    command
        .args([
            "bench",
            suite.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .env("H3LAB_NGINX_H3", "/nonexistent/nginx");
    let failed = fails_promptly(command, "bench with a missing edge server");
    let results = std::fs::read_to_string(out.join("results.json")).unwrap();
    assert!(
        results.contains("/nonexistent/nginx") && results.contains("trixie-servers.sh"),
        "{results}\n{}",
        failed.error
    );
}
