//! Shared by the attack tests: a live server in its own runtime, the
//! legitimate load of every protocol (h3lab's own load generator) and its
//! quiet-versus-attack comparison, and the process's peak memory.
//!
//! Each attack is its own test binary, so the peak memory read from
//! /proc/self/status belongs to that attack alone (server, attacker and load
//! all run in this process).

#![allow(dead_code)] // each attack test binary uses its own subset

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use h3lab_client::{Target, TlsOptions};
use h3lab_load::{CancellationToken, LoadConfig};
use h3lab_results::Proto;
use h3lab_server::{DefenceCounts, Limits, RunningServer, ServerConfig};

pub const PROTOCOLS: [Proto; 3] = [Proto::H1, Proto::H2, Proto::H3];

/// The attacker's source address: another loopback address, so the server
/// sees it as a different peer from the legitimate load on 127.0.0.1.
pub const ATTACKER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

/// Short runs per protocol and phase; the comparison uses their median p99.
const RUNS: usize = 7;
/// Requests per run, over [`LOAD_CONNECTIONS`] connections.
const REQUESTS_PER_RUN: u64 = 1000;
pub const LOAD_CONNECTIONS: usize = 2;

/// The attack tests' timeouts: short, so an attack is seen stopped within seconds.
pub fn attack_limits() -> Limits {
    Limits {
        handshake_timeout: Duration::from_secs(4),
        header_timeout: Duration::from_secs(4),
        ..Limits::default()
    }
}

/// The core attackers run on. The server and the legitimate load run on the
/// other one ([`LEGITIMATE_CPU`]): a real attacker's CPU is not the
/// server's, and on a shared 2-core machine the attacker's own work
/// (building and encrypting its frames) would otherwise queue legitimate
/// requests, when the test is about the server's work for the attack.
pub const ATTACKER_CPU: usize = 1;
const LEGITIMATE_CPU: usize = 0;

/// Keeps the calling thread (and the threads it starts from now on) on `cpu`.
pub fn pin_current_thread(cpu: usize) {
    // The machine's cores, not this thread's (which a pin has narrowed).
    // SAFETY: sysconf only reads a system value.
    let cores = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    assert!(
        cores > cpu,
        "the attack tests need {} cores (server and load on one, the attacker on another); this machine has {cores}",
        cpu + 1
    );
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes inside it,
    // and sched_setaffinity(0, ...) reads it for the calling thread.
    let status = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    assert_eq!(
        status,
        0,
        "cannot pin a thread to CPU {cpu}: {}",
        std::io::Error::last_os_error()
    );
}

/// The server on 127.0.0.1, port 0, in a runtime of its own.
pub struct LiveServer {
    server: Option<RunningServer>,
    runtime: tokio::runtime::Runtime,
    ca: tempfile::NamedTempFile,
}

impl LiveServer {
    pub fn start(limits: Limits) -> Self {
        // The server's and the load's threads start from this one, and
        // inherit its core.
        pin_current_thread(LEGITIMATE_CPU);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let config = ServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            limits,
            ..ServerConfig::default()
        };
        let server = runtime.block_on(h3lab_server::start(config)).unwrap();
        let mut ca = tempfile::NamedTempFile::new().unwrap();
        ca.write_all(server.cert_pem().unwrap().as_bytes()).unwrap();
        Self {
            server: Some(server),
            runtime,
            ca,
        }
    }

    fn server(&self) -> &RunningServer {
        self.server.as_ref().expect("the server runs until drop")
    }

    pub fn addr(&self) -> SocketAddr {
        self.server().local_addr()
    }

    pub fn cert_pem(&self) -> String {
        self.server().cert_pem().unwrap().to_string()
    }

    pub fn defence(&self) -> DefenceCounts {
        self.server().defence()
    }

    /// Open TCP and QUIC connections holding a slot.
    pub fn open_connections(&self) -> (usize, usize) {
        self.server().open_connections()
    }

    fn load_config(&self, proto: Proto) -> LoadConfig {
        let url = format!("https://127.0.0.1:{}/bytes/1000", self.addr().port());
        let mut config = LoadConfig::new(Target::parse(&url).unwrap());
        config.proto = proto;
        config.connections = LOAD_CONNECTIONS;
        config.threads = 1;
        config.requests = Some(REQUESTS_PER_RUN);
        config.tls = TlsOptions {
            insecure: false,
            ca_file: Some(self.ca.path().to_path_buf()),
        };
        config.request_timeout = Duration::from_secs(5);
        config.connect_timeout = Duration::from_secs(5);
        config
    }

    /// One bounded legitimate run; every request must succeed. Its p99 in µs.
    fn legitimate_p99(&self, proto: Proto) -> u64 {
        let report = h3lab_load::run(&self.load_config(proto), CancellationToken::new()).unwrap();
        assert_eq!(
            report.failed, 0,
            "{proto}: legitimate requests failed\n{report}"
        );
        assert_eq!(
            report.status_counts,
            BTreeMap::from([(200, REQUESTS_PER_RUN)]),
            "{proto}: every legitimate request gets 200\n{report}"
        );
        report.latency_us.quantile(0.99)
    }

    /// Rounds ([`RUNS`] unless `rounds` says otherwise), each a quiet run of
    /// every protocol and then, for each of the `attacks` attacks in turn,
    /// `attack_round(attack, measure)`, which starts that attack, calls back
    /// to run every protocol under it, and stops it. Interleaving keeps other
    /// load on a shared machine from landing on one side only. Before each
    /// quiet run the server must have no connection left open, so an attack
    /// that is not stopped fails here. The median p99 per protocol, quiet and
    /// under each attack.
    pub fn quiet_versus_attacks(
        &self,
        rounds: Option<usize>,
        attacks: usize,
        mut attack_round: impl FnMut(usize, &mut dyn FnMut()),
    ) -> Vec<Comparison> {
        for proto in PROTOCOLS {
            self.legitimate_p99(proto);
        }
        let mut quiet = Samples::default();
        let mut attacked = vec![Samples::default(); attacks];
        for round in 0..rounds.unwrap_or(RUNS) {
            self.wait_until_no_connections();
            quiet.run_each(self, round);
            for (attack, samples) in attacked.iter_mut().enumerate() {
                attack_round(attack, &mut || samples.run_each(self, round));
            }
        }
        self.wait_until_no_connections();
        attacked
            .into_iter()
            .map(|attack| Comparison {
                quiet: quiet.clone(),
                attack,
            })
            .collect()
    }

    fn wait_until_no_connections(&self) {
        let began = std::time::Instant::now();
        while self.open_connections() != (0, 0) {
            assert!(
                began.elapsed() < DRAIN_LIMIT,
                "connections still open {DRAIN_LIMIT:?} after the attack: {:?}",
                self.open_connections()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// After an attack stops, the server must have closed every connection by
/// then: the attack tests' timeouts plus the server's close grace and slack.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// p99s per protocol, one per run.
#[derive(Clone, Default)]
struct Samples(BTreeMap<Proto, Vec<u64>>);

impl Samples {
    /// One run of each protocol, starting with a different one each round
    /// so that none always runs first, right after the attack starts.
    fn run_each(&mut self, server: &LiveServer, round: usize) {
        let mut order = PROTOCOLS;
        order.rotate_left(round % PROTOCOLS.len());
        for proto in order {
            let p99 = server.legitimate_p99(proto);
            self.0.entry(proto).or_default().push(p99);
        }
    }

    fn median(&self, proto: Proto) -> u64 {
        let mut runs = self.0[&proto].clone();
        runs.sort_unstable();
        runs[runs.len() / 2]
    }
}

/// How far an attack may raise the legitimate p99 over the quiet one. The
/// defences' goal is 2x, and the worst measured is 1.67x
/// (docs/hardening.md); on a shared 2-core machine the test's bound keeps a
/// wide margin over that, and `scripts/attack-bench.sh` prints the ratios
/// against the 2x goal.
const P99_BOUND: f64 = 3.0;

/// A p99 only overruns when it is also this much over the quiet one. At
/// quiet p99s of a few hundred µs, 3x is under a millisecond, less than one
/// scheduler time slice: on CI's machines the HTTP/3 flood put every
/// protocol's median run over 3 ms (single runs up to 13 ms, quiet ones
/// 0.3 to 0.5 ms) in two runs, while here it stays under 1.5x with clippy
/// building beside it or the process held to 0.2 CPU (not reproduced).
/// The stream defences are checked by the flood's tallies and the closes;
/// this bound catches a server that starves its legitimate clients (one
/// that blocked its runtime 1 ms for each flood request: h3 p99 218 ms
/// under the flood, 0.12 ms quiet).
const P99_ALLOWANCE: Duration = Duration::from_millis(20);

/// Legitimate p99s per protocol and run, in µs, quiet and under attack.
pub struct Comparison {
    quiet: Samples,
    attack: Samples,
}

impl Comparison {
    /// Prints each protocol's median p99, quiet and under attack, and
    /// answers the protocols whose p99 under attack is over
    /// [`P99_BOUND`] times the quiet and [`P99_ALLOWANCE`] over it.
    pub fn p99_overruns(&self) -> Vec<String> {
        let mut over = Vec::new();
        for proto in PROTOCOLS {
            let (quiet, attack) = (self.quiet.median(proto), self.attack.median(proto));
            let runs = (&self.quiet.0[&proto], &self.attack.0[&proto]);
            eprintln!(
                "{proto}: median p99 quiet {quiet} µs, under attack {attack} µs (runs {runs:?})"
            );
            let allowance = P99_ALLOWANCE.as_micros() as u64;
            if attack as f64 > P99_BOUND * quiet as f64 && attack > quiet + allowance {
                over.push(format!(
                    "{proto}: p99 under attack {attack} µs is more than {P99_BOUND} times the quiet {quiet} µs and {allowance} µs over it (runs {runs:?})"
                ));
            }
        }
        over
    }
}

/// The whole process (server, attacker, load generator) stays under this.
pub const PEAK_RSS_BOUND_KIB: u64 = 256 * 1024;

/// Fails the test if a protocol's p99 suffered under the attack, or if the
/// process's peak memory went over [`PEAK_RSS_BOUND_KIB`].
pub fn assert_attack_contained(comparison: &Comparison) {
    assert_no_overruns(&comparison.p99_overruns());
    let peak = peak_rss_kib();
    eprintln!("peak RSS {peak} KiB");
    assert!(
        peak < PEAK_RSS_BOUND_KIB,
        "peak RSS {peak} KiB over {PEAK_RSS_BOUND_KIB} KiB"
    );
}

/// One counter of an attack's tallies, summed over its rounds.
pub fn sum_rounds<T>(rounds: &[std::sync::Arc<T>], count: fn(&T) -> &AtomicU64) -> u64 {
    rounds
        .iter()
        .map(|tally| count(tally).load(Ordering::Relaxed))
        .sum()
}

/// Fails the test listing every p99 over its bound, if any.
pub fn assert_no_overruns(overruns: &[String]) {
    assert!(overruns.is_empty(), "{}", overruns.join("\n"));
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.runtime.block_on(server.shutdown());
        }
    }
}

/// TLS 1.3 client settings that trust the server's certificate and offer
/// `alpn`, for the attackers' own clients.
pub fn client_tls(cert_pem: &str, alpn: &[u8]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut cert_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    config
}

/// A TCP TLS connector for [`client_tls`].
pub fn tls_connector(cert_pem: &str, alpn: &[u8]) -> tokio_rustls::TlsConnector {
    tokio_rustls::TlsConnector::from(std::sync::Arc::new(client_tls(cert_pem, alpn)))
}

/// A QUIC client endpoint on `ip` (any port) speaking h3 with [`client_tls`].
pub fn h3_endpoint(cert_pem: &str, ip: IpAddr) -> quinn::Endpoint {
    let crypto =
        quinn::crypto::rustls::QuicClientConfig::try_from(client_tls(cert_pem, b"h3")).unwrap();
    let mut endpoint = quinn::Endpoint::client(SocketAddr::new(ip, 0)).unwrap();
    endpoint.set_default_client_config(quinn::ClientConfig::new(std::sync::Arc::new(crypto)));
    endpoint
}

/// An attack on a thread and tokio runtime of its own, so it competes with
/// the server as another process would, counting what it does in a tally,
/// until stopped.
pub struct AttackThread<T> {
    pub tally: std::sync::Arc<T>,
    stop: tokio_util::sync::CancellationToken,
    thread: std::thread::JoinHandle<()>,
}

impl<T: Default + Send + Sync + 'static> AttackThread<T> {
    /// Runs `attack(stop, tally)` until it returns.
    pub fn launch<F>(
        attack: impl FnOnce(tokio_util::sync::CancellationToken, std::sync::Arc<T>) -> F
            + Send
            + 'static,
    ) -> Self
    where
        F: std::future::Future<Output = ()>,
    {
        let stop = tokio_util::sync::CancellationToken::new();
        let tally = std::sync::Arc::new(T::default());
        let (stop_in, tally_in) = (stop.clone(), tally.clone());
        let thread = std::thread::Builder::new()
            .name("attacker".into())
            .spawn(move || {
                pin_current_thread(ATTACKER_CPU);
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(attack(stop_in, tally_in));
            })
            .unwrap();
        Self {
            tally,
            stop,
            thread,
        }
    }

    /// Tells the attack to stop and waits for it to finish.
    pub fn stop(self) -> std::sync::Arc<T> {
        self.stop.cancel();
        self.thread.join().expect("the attack thread finishes");
        self.tally
    }
}

/// This process's peak resident memory (VmHWM), in KiB.
pub fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("/proc/self/status has VmHWM")
}

/// Polls `condition` every 20 ms until it holds; fails the test naming
/// `what` if it does not within `limit`.
pub fn wait_for(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let began = Instant::now();
    while !condition() {
        assert!(began.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
