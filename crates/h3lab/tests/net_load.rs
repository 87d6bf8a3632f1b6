//! End-to-end: `h3lab load` against `h3lab serve` across `h3lab net run`,
//! the way a user runs them. HTTP/2 (TCP) and HTTP/3 (QUIC) cross the same
//! emulated path; bulk downloads must fill the configured rate, and small
//! requests must complete through every built-in profile, and `probe offer`
//! reads the server's initial window in the first round trip. Needs root for
//! the namespaces; skips with a message otherwise (CI runs as root).

mod common;

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use common::EXE;
use serde_json::Value;

/// The tests of this file run side by side on the machine's cores, each
/// with a server, a client and a link emulator of its own. One that reads
/// a rate runs alone ([`timed`]): beside another it reads the CPU they
/// share (in CI a bulk download beside the other filled 83 % of its
/// link). The others share ([`untimed`]).
static CPU: RwLock<()> = RwLock::new(());

fn timed() -> RwLockWriteGuard<'static, ()> {
    CPU.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn untimed() -> RwLockReadGuard<'static, ()> {
    CPU.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One `h3lab load` run inside the client namespace.
struct LoadRun {
    proto: &'static str,
    url_path: String,
    requests: u64,
}

/// What one `h3lab net run` left behind.
struct Outcome {
    /// Link statistics (`--stats`).
    link: Value,
    /// One `h3lab.load/1` report per load run, in the order given.
    loads: Vec<Value>,
    /// What [`Extras::after_loads`] printed.
    after_loads: String,
}

/// Shell added to a run: before the server starts (in its namespace, the
/// shell's `$$` becoming the server's pid), arguments of `h3lab serve`, and
/// after the loads (in the client's namespace, `$server` the server's pid).
#[derive(Default)]
struct Extras<'a> {
    before_server: &'a str,
    serve_args: &'a str,
    after_loads: &'a str,
}

/// Runs `h3lab serve` in the server namespace and the loads (side by side)
/// in the client namespace of `h3lab net run LINK_ARGS`, all as `user`
/// (a uid) when given. The client waits for the server's banner, so no
/// request races the server's start.
fn net_run(user: Option<u32>, link_args: &[&str], loads: &[LoadRun], timeouts: &[&str]) -> Outcome {
    net_run_with(user, link_args, loads, timeouts, &Extras::default())
}

fn net_run_with(
    user: Option<u32>,
    link_args: &[&str],
    loads: &[LoadRun],
    timeouts: &[&str],
    extras: &Extras,
) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    if let Some(uid) = user {
        std::os::unix::fs::chown(dir.path(), Some(uid), None).unwrap();
    }
    let file = |name: &str| dir.path().join(name);
    let (banner, cert, stats) = (file("banner"), file("cert.pem"), file("link.json"));
    let (server_pid, after) = (file("server.pid"), file("after"));
    let server = format!(
        "echo $$ > {pid}; {before} exec {EXE} serve --listen $H3LAB_SERVER_IP:0 \
         --san $H3LAB_SERVER_IP --write-cert {cert} {args} > {banner}",
        pid = server_pid.display(),
        before = extras.before_server,
        cert = cert.display(),
        args = extras.serve_args,
        banner = banner.display()
    );
    let load_commands: Vec<String> = loads
        .iter()
        .enumerate()
        .map(|(i, load)| {
            format!(
                "{EXE} load https://$addr{} --proto {} -n {} -c 1 -m 1 --ca {} --json {} -q {} & \
                 pids=\"$pids $!\"",
                load.url_path,
                load.proto,
                load.requests,
                cert.display(),
                file(&format!("load{i}.json")).display(),
                timeouts.join(" ")
            )
        })
        .collect();
    let client = format!(
        "i=0; until grep -q '^listening' {banner} 2>/dev/null; do \
           i=$((i+1)); [ $i -gt 400 ] && {{ echo 'the server never listened' >&2; exit 97; }}; \
           sleep 0.025; done
         addr=$(awk '/^listening/ {{print $3}}' {banner})
         pids=''
         {loads}
         status=0; for pid in $pids; do wait $pid || status=1; done
         server=$(cat {server_pid})
         {after_loads} > {after}
         exit $status",
        banner = banner.display(),
        loads = load_commands.join("\n"),
        server_pid = server_pid.display(),
        after_loads = if extras.after_loads.is_empty() {
            "true"
        } else {
            extras.after_loads
        },
        after = after.display(),
    );
    let mut command = Command::new(EXE);
    if let Some(uid) = user {
        command.uid(uid).gid(uid);
    }
    let output = command
        .args(["net", "run"])
        .args(link_args)
        .arg("--stats")
        .arg(&stats)
        .args(["--server-cmd", &server, "--", "sh", "-c", &client])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "h3lab net run {link_args:?} failed: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let loads = (0..loads.len())
        .map(|i| read_json(&file(&format!("load{i}.json"))))
        .collect();
    let link = if stats.metadata().map(|m| m.len() > 0).unwrap_or(false) {
        read_json(&stats)
    } else {
        Value::Null // plain loopback: no link, no statistics
    };
    let after_loads = std::fs::read_to_string(&after).unwrap_or_default();
    Outcome {
        link,
        loads,
        after_loads,
    }
}

fn read_json(path: &PathBuf) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|err| panic!("reading {}: {err}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn number(value: &Value, field: &str) -> f64 {
    value[field]
        .as_f64()
        .unwrap_or_else(|| panic!("no number `{field}` in {value}"))
}

/// Every request completed with the exact body, none failed.
fn assert_complete(report: &Value, requests: u64, body_bytes: u64, context: &str) {
    let summary = format!(
        "{context}: completed {} failed {} body {} errors {}",
        report["completed"], report["failed"], report["body_bytes"], report["first_errors"]
    );
    assert_eq!(report["completed"].as_u64(), Some(requests), "{summary}");
    assert_eq!(report["failed"].as_u64(), Some(0), "{summary}");
    assert_eq!(
        report["status_counts"]["200"].as_u64(),
        Some(requests),
        "{summary}"
    );
    assert_eq!(
        report["body_bytes"].as_u64(),
        Some(requests * body_bytes),
        "{summary}"
    );
}

const BULK_RATE: f64 = 20e6;
/// About 4.8 s at 20 Mbit/s: long enough that connection set-up and the
/// ramp-up cost well under 5 %. The ramp-up includes recovering from the
/// queue drops of BBR's start-up overshoot (60-100 drops on this path's
/// 64 KB queue with quinn's BBR), which cost h3 up to 150 ms.
const BULK_BYTES: u64 = 12_000_000;
/// Bounds on the bytes a bulk download puts on the link beyond its body.
/// Headers alone are 2-4 % of a full packet (IPv4 and TCP with timestamps:
/// 52 B of 1500; QUIC short header, UDP and IPv4: about 50 B).
const OVERHEAD_LOW: f64 = 0.02;
const OVERHEAD_HIGH: f64 = 0.10;

/// Downloads [`BULK_BYTES`] over `proto` through a 20 Mbit/s, 10 ms path
/// and checks the link-level delivered rate: every byte the down direction
/// put on the wire (IP packets: payload, TLS/QUIC and TCP/UDP/IP headers,
/// retransmissions) divided by the load run's wall time (connection
/// set-up to the last body byte). Set-up and ramp-up are in the
/// denominator, so this can only understate the steady rate; the link
/// never sends faster than configured, so it cannot exceed it either.
fn bulk_download_fills_the_link(proto: &'static str) {
    let load = LoadRun {
        proto,
        url_path: format!("/bytes/{BULK_BYTES}"),
        requests: 1,
    };
    let outcome = net_run(
        None,
        &[
            "--rtt", "10ms", "--down", "20mbit", "--up", "20mbit", "--loss", "0%",
        ],
        &[load],
        &["--timeout", "30s"],
    );
    let report = &outcome.loads[0];
    assert_complete(report, 1, BULK_BYTES, proto);
    let seconds = number(report, "duration_s");
    let down = &outcome.link["down"];
    let link_rate = number(down, "bytes_out") * 8.0 / seconds;
    let goodput = BULK_BYTES as f64 * 8.0 / seconds;
    eprintln!(
        "{proto}: link delivered {:.2} Mbit/s of {:.0} configured (goodput {:.2} Mbit/s, {:.2} s)",
        link_rate / 1e6,
        BULK_RATE / 1e6,
        goodput / 1e6,
        seconds
    );
    assert!(
        (link_rate / BULK_RATE - 1.0).abs() < 0.05,
        "{proto}: link delivered {:.2} Mbit/s on a {:.0} Mbit/s link",
        link_rate / 1e6,
        BULK_RATE / 1e6
    );
    // The link carried the body plus its headers (TCP/IP or QUIC/UDP/IP,
    // TLS records or QUIC frames) and any retransmission: a few per cent
    // more than the body. Less would mean bytes uncounted; much more,
    // bytes wasted.
    let overhead = link_rate / goodput - 1.0;
    assert!(
        (OVERHEAD_LOW..OVERHEAD_HIGH).contains(&overhead),
        "{proto}: the link carried {:.1} % more than the body",
        overhead * 100.0
    );
}

#[test]
fn bulk_h3_download_fills_the_configured_rate() {
    let _cpu = timed();
    if h3lab_testenv::root() {
        bulk_download_fills_the_link("h3");
    }
}

#[test]
fn bulk_h2_download_fills_the_configured_rate() {
    let _cpu = timed();
    if h3lab_testenv::root() {
        bulk_download_fills_the_link("h2");
    }
}

const SMALL_REQUESTS: u64 = 3;
/// Several packets per response, so lossy profiles exercise recovery.
const SMALL_BYTES: u64 = 20_000;
/// Profiles run this many at a time (2 cores; the longest ones first).
const PARALLEL_PROFILES: usize = 4;

#[test]
fn h2_and_h3_requests_complete_through_every_profile() {
    let _cpu = untimed();
    if !h3lab_testenv::root() {
        return;
    }
    let mut profiles: Vec<linkem::Profile> = linkem::profiles();
    // Workers pop from the end: longest round trips first, so they overlap
    // with the short ones.
    profiles.sort_by_key(|p| p.settings.as_ref().map(|s| s.rtt));
    let queue = Mutex::new(profiles);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL_PROFILES {
            scope.spawn(|| loop {
                let Some(profile) = queue.lock().unwrap().pop() else {
                    return;
                };
                let run = std::panic::catch_unwind(|| requests_complete_through(&profile));
                if let Err(panic) = run {
                    let message = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .unwrap_or_else(|| "panicked".into());
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("{}: {message}", profile.name));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn requests_complete_through(profile: &linkem::Profile) {
    let loads = ["h2", "h3"].map(|proto| LoadRun {
        proto,
        url_path: format!("/bytes/{SMALL_BYTES}"),
        requests: SMALL_REQUESTS,
    });
    // Lossy long paths (satellite: 500 ms, 5 %; lte-poor: 15 %) need
    // several retransmission timeouts; the limits keep the run bounded.
    let started = std::time::Instant::now();
    let outcome = net_run(
        None,
        &["--profile", profile.name],
        &loads,
        &["--timeout", "60s", "--connect-timeout", "60s"],
    );
    for (load, report) in loads.iter().zip(&outcome.loads) {
        let context = format!("{} over {}", load.proto, profile.name);
        assert_complete(report, SMALL_REQUESTS, SMALL_BYTES, &context);
    }
    match &profile.settings {
        None => assert!(outcome.link.is_null(), "loopback wrote link statistics"),
        Some(_) => {
            // Both protocols really crossed the emulated link.
            let down = number(&outcome.link["down"], "bytes_out");
            let least = (2 * SMALL_REQUESTS * SMALL_BYTES) as f64;
            assert!(
                down >= least,
                "{}: only {down} bytes crossed the link",
                profile.name
            );
        }
    }
    eprintln!(
        "{}: {SMALL_REQUESTS} h2 + {SMALL_REQUESTS} h3 requests in {:.1} s",
        profile.name,
        started.elapsed().as_secs_f64()
    );
}

/// Sends that found the UDP send buffer full (`SndbufErrors` of the `Udp:`
/// lines of /proc/net/snmp).
fn udp_sndbuf_errors(snmp: &str) -> u64 {
    let mut lines = snmp.lines().filter(|line| line.starts_with("Udp:"));
    let (names, values) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(name, _)| *name == "SndbufErrors")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or_else(|| panic!("no Udp: SndbufErrors in\n{snmp}"))
}

/// quinn's socket is registered with the runtime for reading only (see
/// vendor/README.md); when a send finds the buffer full, it must wait for
/// room and go on. A token bucket on the server's device holds sent
/// datagrams (charged to the socket until they leave), and a small send
/// buffer fills behind it: the download must complete all the same.
#[test]
fn an_h3_download_goes_on_after_its_udp_send_buffer_fills() {
    let _cpu = untimed();
    if !h3lab_testenv::root() {
        return;
    }
    const BYTES: u64 = 3_000_000;
    let load = LoadRun {
        proto: "h3",
        url_path: format!("/bytes/{BYTES}"),
        requests: 1,
    };
    let extras = Extras {
        before_server: "tc qdisc add dev h3lab0 root tbf rate 20mbit burst 16kb latency 500ms &&",
        serve_args: "--udp-buffer 4096",
        after_loads: "nsenter --net=/proc/$server/ns/net cat /proc/net/snmp",
    };
    let outcome = net_run_with(
        None,
        &["--rtt", "10ms"],
        &[load],
        &["--timeout", "30s"],
        &extras,
    );
    assert_complete(&outcome.loads[0], 1, BYTES, "h3 behind a full send buffer");
    let full = udp_sndbuf_errors(&outcome.after_loads);
    assert!(
        full > 0,
        "the send buffer never filled, so the test proves nothing"
    );
}

/// A response that takes longer to cross the path than the server's
/// header timeout: the server hands the whole body to QUIC at once, so the
/// connection looks idle while the body is still on the wire. Its GOAWAY
/// and close must wait until the body is acknowledged; closing at once
/// discarded the tail, and the client waited for it until its timeout.
#[test]
fn an_h3_response_slower_than_the_header_timeout_arrives_whole() {
    let _cpu = untimed();
    if !h3lab_testenv::root() {
        return;
    }
    const BYTES: u64 = 500_000;
    let load = LoadRun {
        proto: "h3",
        url_path: format!("/bytes/{BYTES}"),
        requests: 1,
    };
    let extras = Extras {
        serve_args: "--header-timeout 1s",
        ..Extras::default()
    };
    // 500 kB through a 2 Mbit/s UDP policer: about 3 s, three header timeouts.
    let outcome = net_run_with(
        None,
        &["--rtt", "20ms", "--udp", "throttle:2mbit"],
        &[load],
        &["--timeout", "30s"],
        &extras,
    );
    assert_complete(
        &outcome.loads[0],
        1,
        BYTES,
        "h3 slower than the header timeout",
    );
}

/// `load --proto auto` learns the server's Alt-Svc with its first call
/// over h2, then its connection races QUIC against TCP. At 80 ms of RTT
/// QUIC's one-round-trip handshake wins by a round trip when UDP passes;
/// with UDP blocked, TCP wins and no request fails.
#[test]
fn auto_load_ends_on_h3_when_udp_passes_and_on_h2_when_it_is_blocked() {
    let _cpu = untimed();
    if !h3lab_testenv::root() {
        return;
    }
    for (udp, expected) in [("open", "h3"), ("blocked", "h2")] {
        let load = LoadRun {
            proto: "auto",
            url_path: format!("/bytes/{SMALL_BYTES}"),
            requests: 20,
        };
        let outcome = net_run(None, &["--rtt", "80ms", "--udp", udp], &[load], &[]);
        let report = &outcome.loads[0];
        assert_complete(report, 20, SMALL_BYTES, udp);
        assert_eq!(
            report["connections_by_protocol"],
            serde_json::json!({ expected: 1 }),
            "UDP {udp}: {report:#}"
        );
    }
}

/// `nobody`'s uid (and, on Debian, its group `nogroup`'s gid).
const NOBODY: u32 = 65534;

#[test]
fn without_root_the_path_lives_in_user_namespaces() {
    let _cpu = untimed();
    // Root is needed to become another user.
    if !h3lab_testenv::root() || !h3lab_testenv::unprivileged_namespaces() {
        return;
    }
    let loads = ["h2", "h3"].map(|proto| LoadRun {
        proto,
        url_path: format!("/bytes/{SMALL_BYTES}"),
        requests: SMALL_REQUESTS,
    });
    let outcome = net_run(
        Some(NOBODY),
        &["--rtt", "20ms", "--down", "20mbit", "--up", "5mbit"],
        &loads,
        &["--timeout", "30s"],
    );
    for (load, report) in loads.iter().zip(&outcome.loads) {
        assert_complete(report, SMALL_REQUESTS, SMALL_BYTES, load.proto);
    }
    let down = number(&outcome.link["down"], "bytes_out");
    let least = (2 * SMALL_REQUESTS * SMALL_BYTES) as f64;
    assert!(down >= least, "only {down} bytes crossed the link");
}

/// `probe offer` counts what an h3 server sends of a response before it
/// hears back from the client (which goes silent for it): over a 40 ms
/// path, the server's initial congestion window, less what of the
/// handshake is still unacknowledged and QUIC's and HTTP/3's framing
/// (11.6 KB of body for a 14,720-byte window when written). Two windows
/// four times apart must read so, on a busy machine too: the count ends at
/// the server's silence, not at a time.
/// What `probe offer` read of the h3 of `h3lab serve SERVE_ARGS` over a
/// 40 ms path, on a 2 MB response.
fn probe_offer_over_40ms(serve_args: &str) -> Value {
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("offer.json");
    let probe = format!(
        "{EXE} probe offer https://$addr/bytes/2000000 --insecure --json {}",
        json.display()
    );
    let extras = Extras {
        serve_args,
        after_loads: &probe,
        ..Extras::default()
    };
    net_run_with(None, &["--rtt", "40ms"], &[], &[], &extras);
    read_json(&json)["origins"][0]["h3_features"].take()
}

#[test]
fn probe_offer_reads_the_initial_window_the_server_starts_with() {
    let _cpu = untimed();
    if !h3lab_testenv::root() {
        return;
    }
    let mut measured = Vec::new();
    for window in [14_720u64, 58_880] {
        let features = &probe_offer_over_40ms(&format!("--quic-initial-window {window}"));
        let bytes = features["first_round_trip_bytes"]
            .as_u64()
            .unwrap_or_else(|| panic!("no first round trip: {features:#}"));
        let low = window as f64 * 0.7;
        let high = window as f64;
        assert!(
            (low..=high).contains(&(bytes as f64)),
            "initial window {window} B: {bytes} B in the first round trip ({features:#})"
        );
        measured.push(bytes);
    }
    assert!(measured[1] >= 3 * measured[0], "{measured:?}");
}

/// `probe offer` reads a server's window where the client drops one
/// datagram of a large response, and after the server knew of that loss:
/// each of `h3lab serve`'s three controllers must read as its own family
/// (NewReno halves its window, CUBIC keeps 0.7 of it, our BBR all of it).
#[test]
fn probe_offer_reads_the_family_of_the_congestion_controller_from_one_loss() {
    use h3lab_results::offer::{CongestionFamily, H3Features};
    let _cpu = untimed();
    if !h3lab_testenv::root() {
        return;
    }
    for (controller, family) in [
        ("newreno", CongestionFamily::Reno),
        ("cubic", CongestionFamily::Cubic),
        ("bbr", CongestionFamily::Bbr),
    ] {
        let features = probe_offer_over_40ms(&format!("--quic-cc {controller}"));
        let features: H3Features = serde_json::from_value(features).unwrap();
        eprintln!("--quic-cc {controller}: {:?}", features.loss_windows);
        assert_eq!(
            features.congestion_family(),
            Some(family),
            "--quic-cc {controller}: {:?} (notes {:?})",
            features.loss_windows,
            features.notes
        );
    }
}
