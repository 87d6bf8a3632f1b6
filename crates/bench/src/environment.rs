//! The conditions that decide results (DESIGN.md, measurement rules):
//! kernel, CPU, socket buffer sizes, GSO, congestion controllers, versions.

use std::collections::BTreeMap;

use h3lab_results::bench::Environment;
use h3lab_results::QuicCongestion;

use crate::suite::Suite;

/// sysctls recorded with every run.
const SYSCTLS: &[&str] = &[
    "net/core/rmem_max",
    "net/core/wmem_max",
    "net/core/rmem_default",
    "net/core/wmem_default",
    "net/ipv4/tcp_rmem",
    "net/ipv4/tcp_wmem",
    "net/ipv4/udp_mem",
    "net/ipv4/tcp_congestion_control",
    "net/ipv4/tcp_available_congestion_control",
    "net/core/default_qdisc",
];

/// Reads the environment of this machine now, for a run of `suite`.
pub(crate) fn capture(suite: &Suite) -> Environment {
    let sysctls: BTreeMap<String, String> = SYSCTLS
        .iter()
        .map(|key| {
            (
                key.replace('/', "."),
                read_proc(&format!("/proc/sys/{key}")),
            )
        })
        .collect();
    Environment {
        h3lab_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel: read_proc("/proc/sys/kernel/osrelease"),
        cpu_model: cpu_model(),
        cpu_count: std::thread::available_parallelism().map_or(0, |n| n.get()),
        tcp_congestion_control: sysctls["net.ipv4.tcp_congestion_control"].clone(),
        quic_congestion_control: quic_congestion_control(
            suite,
            &sysctls["net.ipv4.tcp_congestion_control"],
        ),
        udp_gso: udp_gso(),
        sysctls,
        library_versions: library_versions(),
        server_tuning: None,
        loopback_cpus: has_loopback_cells(suite).then(linkem::cpus::loopback_placement),
    }
}

fn has_loopback_cells(suite: &Suite) -> bool {
    suite
        .profiles
        .iter()
        .any(|name| matches!(suite.link_settings(name), Ok(None)))
}

/// The built-in server's QUIC controller, resolving `auto` the way the
/// server does (it runs in a fresh namespace, which inherits this default).
fn quic_congestion_control(suite: &Suite, tcp: &str) -> String {
    if suite.target.server_cmd.is_some() {
        return "set by the custom server".to_string();
    }
    if !suite.target.servers.is_empty() {
        return "per server: quinn's (auto) for builtin, set by each custom server".to_string();
    }
    match suite.target.quic_cc {
        QuicCongestion::Auto => {
            let quic = QuicCongestion::Auto.resolved(tcp);
            format!("{quic} (quinn; auto: same family as TCP's {tcp})")
        }
        chosen => format!("{chosen} (quinn; set by the suite)"),
    }
}

fn read_proc(path: &str) -> String {
    std::fs::read_to_string(path).map_or_else(
        |_| "unknown".to_string(),
        |s| s.split_whitespace().collect::<Vec<_>>().join(" "),
    )
}

fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    info.lines()
        .find_map(|line| {
            line.strip_prefix("model name")
                .and_then(|rest| rest.split(':').nth(1))
        })
        .map_or_else(|| "unknown".to_string(), |name| name.trim().to_string())
}

/// How many segments quinn can hand the kernel per UDP send (1 = no GSO).
fn udp_gso() -> String {
    let Ok(socket) = std::net::UdpSocket::bind("0.0.0.0:0") else {
        return "unknown (no UDP socket)".to_string();
    };
    match quinn::udp::UdpSocketState::new((&socket).into()) {
        Ok(state) => {
            let segments = state.max_gso_segments();
            let gro = state.gro_segments();
            format!("GSO up to {segments} segments per send, GRO up to {gro} per receive")
        }
        Err(err) => format!("unknown ({err})"),
    }
}

/// Versions of the libraries that decide protocol behaviour, from Cargo.lock
/// at build time.
fn library_versions() -> BTreeMap<String, String> {
    let lock = include_str!("../../../Cargo.lock");
    [
        "quinn",
        "quinn-proto",
        "h3",
        "h3-quinn",
        "hyper",
        "rustls",
        "tokio",
    ]
    .iter()
    .filter_map(|name| lock_version(lock, name).map(|v| (name.to_string(), v)))
    .collect()
}

fn lock_version(lock: &str, name: &str) -> Option<String> {
    let header = format!("name = \"{name}\"\nversion = \"");
    let start = lock.find(&header)? + header.len();
    let end = start + lock[start..].find('"')?;
    Some(lock[start..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_come_from_the_lock_file() {
        let versions = library_versions();
        assert!(versions["quinn"].starts_with("0.11."), "{versions:?}");
        assert!(versions["hyper"].starts_with("1."), "{versions:?}");
    }

    #[test]
    fn capture_reads_this_machine() {
        let suite = crate::presets::preset("default").unwrap();
        let env = capture(&suite);
        let tcp = &env.tcp_congestion_control;
        let quic = &env.quic_congestion_control;
        assert!(
            quic.contains(&format!("TCP's {tcp}")),
            "{quic} names the TCP controller it follows"
        );
        assert!(env.cpu_count >= 1);
        assert_ne!(env.kernel, "unknown");
        assert!(env.sysctls.contains_key("net.core.rmem_max"));
    }

    #[test]
    fn only_runs_with_loopback_cells_record_the_cpu_split() {
        let emulated = crate::presets::preset("default").unwrap();
        assert_eq!(capture(&emulated).loopback_cpus, None);
        let loopback = crate::presets::preset("servers").unwrap();
        let cpus = capture(&loopback).loopback_cpus.unwrap();
        assert!(
            cpus.starts_with("server on CPU") || cpus.starts_with("shared ("),
            "{cpus}"
        );
    }
}
