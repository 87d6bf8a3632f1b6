//! Field mode against a "remote" site: a network namespace these tests
//! make, reached from this machine's own network through a veth pair, with
//! a site served by servers h3lab does not start (Caddy: h1, h2 and h3;
//! nginx: h1 and h2) under real-looking host names, and a test certificate
//! authority trusted the way the system's are (`SSL_CERT_FILE`), never
//! through `--ca` or `--insecure`. They need root, Caddy and nginx: they
//! skip with a message without them, and fail in CI.

mod common;

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use common::{failed_cells, fails_promptly, namespaces_left, results, FakePath, EXE};
use h3lab_results::bench::{Outcome, Results};
use h3lab_results::Proto;
use h3lab_supervise::{Group, Supervised};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

/// Caddy's site: h1, h2 and h3.
const SITE: &str = "www.field.test";
/// nginx's: h1 and h2 only (Debian's nginx has no QUIC).
const OLD_SITE: &str = "old.field.test";

static SITES: AtomicU32 = AtomicU32::new(0);

/// Held by each test for its whole run: every test changes this machine's
/// own network (a remote site's veth pair, the gateways of emulated
/// profiles), and Chromium on the real path takes any address change for
/// a network change (`ERR_NETWORK_CHANGED`) and fails its requests.
static ROOT_NETWORK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The remote site: its namespace, its servers, its certificate authority.
struct RemoteSite {
    namespace: String,
    /// The root namespace's end of the veth pair.
    device: String,
    /// Caddy's address (`SITE`); nginx's is the next one (`OLD_SITE`).
    caddy: SocketAddr,
    nginx: SocketAddr,
    /// Each in a process group of its own (nginx's master and workers).
    servers: Vec<Supervised>,
    dir: tempfile::TempDir,
    _network: std::sync::MutexGuard<'static, ()>,
}

impl RemoteSite {
    /// The site in the first /24 from 198.51.100.0 (TEST-NET-2) on that
    /// this machine does not use itself.
    fn start(caddy: &Path, nginx: &Path) -> RemoteSite {
        // A test that failed while holding it leaves it poisoned; the
        // network it guards is still fine.
        let network = ROOT_NETWORK
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let n = SITES.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let subnet = free_subnet();
        let dir = tempfile::tempdir().unwrap();
        let namespace = format!("h3lab-{pid}-site{n}");
        let device = format!("h3s{}-{n}", pid % 100_000);
        ip(&["netns", "add", &namespace]);
        ip(&[
            "link", "add", &device, "type", "veth", "peer", "name", "eth0", "netns", &namespace,
        ]);
        ip(&["addr", "add", &format!("{subnet}.1/24"), "dev", &device]);
        // No IPv6 address detection on this machine's end (see ROOT_NETWORK).
        let _ = std::fs::write(
            format!("/proc/sys/net/ipv6/conf/{device}/disable_ipv6"),
            "1",
        );
        ip(&["link", "set", &device, "up"]);
        for address in [2, 3] {
            ip(&[
                "-n",
                &namespace,
                "addr",
                "add",
                &format!("{subnet}.{address}/24"),
                "dev",
                "eth0",
            ]);
        }
        ip(&["-n", &namespace, "link", "set", "eth0", "up"]);
        ip(&["-n", &namespace, "link", "set", "lo", "up"]);
        ip(&[
            "-n",
            &namespace,
            "route",
            "add",
            "default",
            "via",
            &format!("{subnet}.1"),
        ]);
        let mut site = RemoteSite {
            caddy: format!("{subnet}.2:443").parse().unwrap(),
            nginx: format!("{subnet}.3:443").parse().unwrap(),
            namespace,
            device,
            servers: Vec::new(),
            dir,
            _network: network,
        };
        site.write_certificates();
        h3lab_site::generate(h3lab_site::Shape::Small, 3, &site.root()).unwrap();
        site.start_caddy(caddy);
        site.start_nginx(nginx);
        for addr in [site.caddy, site.nginx] {
            wait_for_tcp(addr);
        }
        site
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("site")
    }

    /// The test authority (`ca.pem`, the system trust store of these
    /// tests) and one leaf for both host names.
    fn write_certificates(&self) {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "h3lab field test CA");
        let ca_key = KeyPair::generate().unwrap();
        let ca = ca_params.self_signed(&ca_key).unwrap();
        std::fs::write(self.dir.path().join("ca.pem"), ca.pem()).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let params = CertificateParams::new(vec![SITE.to_string(), OLD_SITE.to_string()]).unwrap();
        let key = KeyPair::generate().unwrap();
        let leaf = params.signed_by(&key, &issuer).unwrap();
        std::fs::write(self.dir.path().join("leaf.pem"), leaf.pem()).unwrap();
        std::fs::write(self.dir.path().join("leaf.key"), key.serialize_pem()).unwrap();
    }

    fn trust_store(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    fn start_caddy(&mut self, caddy: &Path) {
        let dir = self.dir.path();
        let config = dir.join("Caddyfile");
        std::fs::write(
            &config,
            format!(
                "{{\n\tadmin off\n\tpersist_config off\n\tauto_https off\n\tservers {{\n\t\tprotocols h1 h2 h3\n\t}}\n}}\n\
                 https://{SITE}:443 {{\n\tbind {ip}\n\ttls {cert} {key}\n\troot * {root}\n\tfile_server\n}}\n",
                ip = self.caddy.ip(),
                cert = dir.join("leaf.pem").display(),
                key = dir.join("leaf.key").display(),
                root = self.root().display(),
            ),
        )
        .unwrap();
        let mut command = self.command(caddy);
        command
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(&config)
            .env("XDG_DATA_HOME", dir)
            .env("XDG_CONFIG_HOME", dir);
        self.servers
            .push(Supervised::spawn(command, Group::Own, "caddy").unwrap());
    }

    fn start_nginx(&mut self, nginx: &Path) {
        let dir = self.dir.path();
        // nginx's workers run as nobody when started as root.
        std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let config = dir.join("nginx.conf");
        std::fs::write(
            &config,
            format!(
                "daemon off;\nworker_processes 1;\npid {dir}/nginx.pid;\nerror_log stderr;\nevents {{}}\n\
                 http {{\n  access_log off;\n  client_body_temp_path {dir}/body;\n  \
                 server {{\n    listen {addr} ssl http2;\n    server_name {OLD_SITE};\n    \
                 ssl_certificate {dir}/leaf.pem;\n    ssl_certificate_key {dir}/leaf.key;\n    \
                 root {root};\n  }}\n}}\n",
                dir = dir.display(),
                addr = self.nginx,
                root = self.root().display(),
            ),
        )
        .unwrap();
        let mut command = self.command(nginx);
        command.arg("-c").arg(&config);
        self.servers
            .push(Supervised::spawn(command, Group::Own, "nginx").unwrap());
    }

    /// `program` inside the site's namespace, quiet.
    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", &self.namespace])
            .arg(program)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }

    /// `--resolve` rules for both host names.
    fn pins(&self) -> [String; 2] {
        [
            format!("{SITE}:443:{}", self.caddy.ip()),
            format!("{OLD_SITE}:443:{}", self.nginx.ip()),
        ]
    }

    /// `h3lab ARGS` trusting the test authority as the system's.
    fn h3lab(&self, args: &[&str]) -> Output {
        Command::new(EXE)
            .args(args)
            .env("SSL_CERT_FILE", self.trust_store())
            .env_remove("SSL_CERT_DIR")
            .output()
            .unwrap()
    }

    /// A home whose NSS database (where Chromium on Linux looks for the
    /// system's authorities beside its own) trusts the test authority.
    fn chromium_home(&self, certutil: &Path) -> PathBuf {
        let home = self.dir.path().join("home");
        let db = home.join(".pki/nssdb");
        std::fs::create_dir_all(&db).unwrap();
        let db = format!("sql:{}", db.display());
        let run = |args: &[&str]| {
            let status = Command::new(certutil)
                .args(args)
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "certutil {}", args.join(" "));
        };
        run(&["-d", &db, "-N", "--empty-password"]);
        let ca = self.trust_store();
        run(&[
            "-d",
            &db,
            "-A",
            "-n",
            "h3lab field test CA",
            "-t",
            "C,,",
            "-i",
            ca.to_str().unwrap(),
        ]);
        home
    }

    /// `h3lab bench SUITE --out OUT`, trusting the test authority; also
    /// whether the run left namespaces or gateway rules behind.
    fn bench(&self, suite: &str, out: &Path) -> (Output, bool) {
        self.bench_with_home(suite, out, None)
    }

    fn bench_with_home(&self, suite: &str, out: &Path, home: Option<&Path>) -> (Output, bool) {
        let file = out.with_extension("toml");
        std::fs::write(&file, suite).unwrap();
        let mut command = Command::new(EXE);
        if let Some(home) = home {
            command.env("HOME", home);
        }
        let child = command
            .arg("bench")
            .arg(&file)
            .arg("--out")
            .arg(out)
            .env("SSL_CERT_FILE", self.trust_store())
            .env_remove("SSL_CERT_DIR")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let output = child.wait_with_output().unwrap();
        (output, namespaces_left(pid) || gateway_rules_left(pid))
    }
}

impl Drop for RemoteSite {
    fn drop(&mut self) {
        // `ip netns exec` exec'd Caddy and nginx, each leading a process
        // group of its own: SIGTERM to the group (nginx's master stops its
        // workers), SIGKILL to it after 5 s. A SIGKILL of the master alone
        // left its workers running, reparented to init, in the namespace
        // `ip netns delete` then only unmounts. The veth pair goes with the
        // namespace.
        for server in &mut self.servers {
            server.stop(Duration::from_secs(5));
        }
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.namespace])
            .status();
        let _ = Command::new("ip")
            .args(["link", "delete", &self.device])
            .stderr(Stdio::null())
            .status();
    }
}

/// `198.51.N` for the first N from 100 whose /24 no interface here has.
fn free_subnet() -> String {
    let out = Command::new("ip")
        .args(["-4", "-o", "addr", "show"])
        .output()
        .unwrap();
    let used = String::from_utf8_lossy(&out.stdout).into_owned();
    (100..=199)
        .map(|n| format!("198.51.{n}"))
        .find(|subnet| !used.contains(&format!("inet {subnet}.")))
        .expect("a free /24 in 198.51.100.0 to 198.51.199.0")
}

fn ip(args: &[&str]) {
    let status = Command::new("ip").args(args).status().unwrap();
    assert!(status.success(), "ip {}", args.join(" "));
}

/// Waits until `addr` accepts TCP: the server is up.
fn wait_for_tcp(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < deadline, "no server came up on {addr}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether iptables still holds a gateway rule of the process `pid`.
fn gateway_rules_left(pid: u32) -> bool {
    ["nat", "filter"].iter().any(|table| {
        let out = Command::new("iptables")
            .args(["-t", table, "-S"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).contains(&format!("h3lab-gw-{pid}-"))
    })
}

/// The remote site, or `None` (the test skips, or fails in CI) without
/// root, iptables, Caddy or nginx.
fn remote_site() -> Option<RemoteSite> {
    if !h3lab_testenv::root() || h3lab_testenv::iptables().is_none() {
        return None;
    }
    let (Some(caddy), Some(nginx)) = (h3lab_testenv::caddy(), h3lab_testenv::nginx()) else {
        return None;
    };
    Some(RemoteSite::start(&caddy, &nginx))
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn load_page_and_offer_reach_the_remote_site_through_the_system_trust_store() {
    let Some(site) = remote_site() else { return };
    let [pin, old_pin] = site.pins();
    let url = format!("https://{SITE}/");
    for proto in ["h1", "h2", "h3"] {
        let output = site.h3lab(&["load", &url, "-n", "3", "--proto", proto, "--resolve", &pin]);
        assert!(
            output.status.success(),
            "load over {proto}: {}",
            text(&output)
        );
    }
    // A flood of a server outside this machine is refused before it starts.
    let output = site.h3lab(&["load", &url, "-c", "50", "-z", "20s", "--resolve", &pin]);
    assert!(!output.status.success());
    let said = text(&output);
    assert!(
        said.contains("outside this machine") && said.contains("--allow-heavy"),
        "{said}"
    );
    let output = site.h3lab(&["page", &url, "-n", "1", "--proto", "h3", "--resolve", &pin]);
    assert!(output.status.success(), "page: {}", text(&output));
    let json = site.dir.path().join("offer.json");
    let old_url = format!("https://{OLD_SITE}/");
    let output = site.h3lab(&[
        "probe",
        "offer",
        &url,
        &old_url,
        "--resolve",
        &pin,
        "--resolve",
        &old_pin,
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "offer: {}", text(&output));
    let report: h3lab_results::offer::OfferReport =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let caddy = &report.origins[0];
    assert_eq!(
        (caddy.h1, caddy.h2, caddy.h3),
        (Some(true), Some(true), Some(true))
    );
    assert!(
        caddy.alt_svc.as_deref().is_some_and(|a| a.contains("h3=")),
        "{caddy:?}"
    );
    let nginx = &report.origins[1];
    assert_eq!(
        (nginx.h1, nginx.h2, nginx.h3),
        (Some(true), Some(true), Some(false))
    );
    assert_eq!(nginx.alt_svc, None);
}

/// A suite on the real path and on a 40 ms path emulated on top of it.
fn field_suite(url: &str, pins: &[String], protocols: &str, workloads: &str) -> String {
    let pins: Vec<String> = pins.iter().map(|p| format!("\"{p}\"")).collect();
    format!(
        "name = \"field-test\"\nprotocols = [{protocols}]\nprofiles = [\"real\", \"wan\"]\n\
         repetitions = 1\n\
         [target]\nurl = \"{url}\"\nresolve = [{pins}]\npause = \"0s\"\nplace = \"test namespace\"\n\
         [[profile]]\nname = \"wan\"\nrtt = \"40ms\"\ndown = \"100mbit\"\nup = \"100mbit\"\nloss = \"0%\"\n\
         {workloads}",
        pins = pins.join(", ")
    )
}

fn ok_cells<'a>(
    results: &'a Results,
    profile: &str,
    workload: &str,
) -> Vec<&'a h3lab_results::bench::CellRecord> {
    results
        .cells
        .iter()
        .filter(|c| c.profile == profile && c.workload == workload && c.outcome == Outcome::Ok)
        .collect()
}

fn median(mut values: Vec<f64>) -> f64 {
    h3lab_results::quantile::median(&mut values).expect("values")
}

#[test]
fn a_field_suite_runs_every_protocol_on_the_real_path_and_with_a_profile_on_top() {
    let Some(site) = remote_site() else { return };
    let out = site.dir.path().join("run");
    let suite = field_suite(
        &format!("https://{SITE}/"),
        &site.pins(),
        "\"h1\", \"h2\", \"h3\", \"auto\"",
        "[[workload]]\nkind = \"page\"\nname = \"page\"\nloads = 2\n\
         [[workload]]\nkind = \"ttfb\"\nname = \"first-byte\"\nmodes = [\"cold\"]\nsamples = 3\n",
    );
    let (output, left_behind) = site.bench(&suite, &out);
    assert!(
        output.status.success(),
        "bench failed: {}\n{}",
        failed_cells(&out),
        text(&output)
    );
    assert!(!left_behind, "namespaces or NAT rules left behind");
    let results = results(&out);
    let field = results
        .field
        .as_ref()
        .expect("a field run records its target");
    assert_eq!(field.urls, [format!("https://{SITE}/")]);
    assert_eq!(field.pinned, [site.pins()[0].clone()]);
    assert_eq!(field.origins[0].offered(), "h1, h2, h3");
    assert_eq!(field.place.as_deref(), Some("test namespace"));
    // 2 loads × 4 protocols + 3 samples × 3 protocols, on each profile.
    assert_eq!(results.cells.len(), 2 * (2 * 4 + 3 * 3));
    assert!(
        results.cells.iter().all(|c| c.outcome == Outcome::Ok),
        "{:?}",
        results.cells.iter().map(|c| &c.outcome).collect::<Vec<_>>()
    );
    // The protocols take turns load by load.
    let first: Vec<Proto> = results.cells[..4].iter().map(|c| c.protocol).collect();
    assert_eq!(first, [Proto::H1, Proto::H2, Proto::H3, Proto::Auto]);
    // Each forced row used its protocol for every response; auto's first
    // visit starts on TCP.
    for cell in ok_cells(&results, "real path + wan", "page") {
        assert_used_its_protocol(cell);
    }
    // The emulated round trip adds to the real path's, as measured by the
    // connections themselves: real + 40 ms, within 10 %.
    let rtt = |profile: &str| {
        median(
            ok_cells(&results, profile, "first-byte")
                .iter()
                .filter_map(|c| c.measured_rtt_ms)
                .collect(),
        )
    };
    let (real, on_top) = (rtt("real path"), rtt("real path + wan"));
    eprintln!("measured round trip: real path {real:.2} ms, real path + 40 ms: {on_top:.2} ms");
    let expected = real + 40.0;
    assert!(
        (on_top - expected).abs() <= 0.1 * expected,
        "real {real} ms, on top {on_top} ms"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for shown in [
        "Field run",
        "real path + wan",
        "What each load used",
        "drift",
        SITE,
    ] {
        assert!(html.contains(shown), "the report shows {shown}");
    }
}

#[test]
fn chromium_loads_the_remote_site_trusting_the_system_store_on_both_paths() {
    let Some(site) = remote_site() else { return };
    let (Some(_), Some(certutil)) = (h3lab_testenv::chromium(), h3lab_testenv::certutil()) else {
        return;
    };
    let home = site.chromium_home(&certutil);
    browser_loads_the_remote_site(&site, "chromium", Some(&home));
}

/// Firefox does not read the system's store on Linux: h3lab adds the
/// store its own clients read (`SSL_CERT_FILE` here) to each profile.
#[test]
fn firefox_loads_the_remote_site_trusting_the_system_store_on_both_paths() {
    let Some(site) = remote_site() else { return };
    if h3lab_testenv::firefox().is_none() {
        return;
    }
    browser_loads_the_remote_site(&site, "firefox", None);
}

/// A field suite of one page load by `loader` over h2, h3 and auto, on
/// the real path and an emulated one, with `home` as `HOME`: every cell
/// ok over its protocol, nothing left behind.
fn browser_loads_the_remote_site(site: &RemoteSite, loader: &str, home: Option<&Path>) {
    let out = site.dir.path().join("run");
    let suite = field_suite(
        &format!("https://{SITE}/"),
        &site.pins(),
        "\"h2\", \"h3\", \"auto\"",
        &format!(
            "[[workload]]\nkind = \"page\"\nname = \"page\"\nloader = \"{loader}\"\nloads = 1\n"
        ),
    );
    let (output, left_behind) = site.bench_with_home(&suite, &out, home);
    assert!(
        output.status.success(),
        "{loader}: bench failed: {}",
        failed_cells(&out)
    );
    assert!(!left_behind, "namespaces or NAT rules left behind");
    let results = results(&out);
    assert_eq!(results.cells.len(), 2 * 3);
    for cell in &results.cells {
        assert_used_its_protocol(cell);
    }
}

/// A page cell's responses all came over its forced protocol (as the
/// clients name it: `http/1.1` for h1); auto's first visit starts on h2.
fn assert_used_its_protocol(cell: &h3lab_results::bench::CellRecord) {
    let report = common::page_report(cell);
    let used: Vec<&str> = report.loads[0]
        .resources
        .iter()
        .map(|r| r.protocol.as_deref().unwrap_or("?"))
        .collect();
    let label = format!("{} {}", cell.profile, cell.protocol);
    match cell.protocol {
        Proto::Auto => assert_eq!(used[0], "h2", "{label}: {used:?}"),
        Proto::H1 => assert!(used.iter().all(|u| *u == "http/1.1"), "{label}: {used:?}"),
        forced => assert!(
            used.iter().all(|u| *u == forced.name()),
            "{label}: {used:?}"
        ),
    }
}

#[test]
fn a_forced_protocol_the_origin_does_not_offer_fails_naming_the_origin() {
    let Some(site) = remote_site() else { return };
    let out = site.dir.path().join("run");
    let suite = field_suite(
        &format!("https://{OLD_SITE}/"),
        &site.pins(),
        "\"h2\", \"h3\", \"auto\"",
        "[[workload]]\nkind = \"page\"\nname = \"page\"\nloads = 1\n",
    );
    let (output, left_behind) = site.bench(&suite, &out);
    assert!(
        !output.status.success(),
        "the h3 row failed: {}",
        text(&output)
    );
    assert!(!left_behind);
    let results = results(&out);
    for cell in &results.cells {
        match (cell.protocol, &cell.outcome) {
            (Proto::H3, Outcome::Failed { error }) => assert!(
                error.contains(&format!("https://{OLD_SITE}:443 does not offer h3")),
                "{error}"
            ),
            (Proto::H3, other) => panic!("h3 against nginx: {other:?}"),
            (_, outcome) => assert_eq!(*outcome, Outcome::Ok, "{}", cell.protocol),
        }
    }
}

#[test]
fn an_unreachable_host_a_bad_certificate_and_a_refused_connection_are_named() {
    let Some(site) = remote_site() else { return };
    let unused = format!("{}", site.caddy.ip())
        .rsplit_once('.')
        .unwrap()
        .0
        .to_string()
        + ".9";
    let cases = [
        (format!("{SITE}:443:{unused}"), true, "offers no protocol"),
        (site.pins()[0].clone(), false, "no trusted root"),
        (
            format!("{SITE}:8443:{}", site.caddy.ip()),
            true,
            "Connection refused",
        ),
    ];
    for (pin, trusted, expected) in cases {
        let port = pin.split(':').nth(1).unwrap();
        let url = format!("https://{SITE}:{port}/");
        let mut command = Command::new(EXE);
        command.args(["bench", "--url", &url, "--resolve", &pin, "--dry-run"]);
        let dry = command.output().unwrap();
        assert!(dry.status.success(), "{}", text(&dry));
        let mut command = Command::new(EXE);
        command
            .args(["bench", "--url", &url, "--resolve", &pin, "--out"])
            .arg(site.dir.path().join("refused"))
            .env_remove("SSL_CERT_DIR");
        match trusted {
            true => command.env("SSL_CERT_FILE", site.trust_store()),
            false => command.env("SSL_CERT_FILE", "/dev/null"),
        };
        let output = command.output().unwrap();
        let said = text(&output);
        assert!(!output.status.success(), "{pin}: {said}");
        assert!(
            said.contains(expected),
            "{pin}: expected `{expected}` in {said}"
        );
        assert!(!said.contains("panicked"), "{said}");
    }
}

#[test]
fn rps_at_a_polite_rate_and_a_download_of_a_named_url_run_against_the_remote_site() {
    let Some(site) = remote_site() else { return };
    let out = site.dir.path().join("run");
    let suite = field_suite(
        &format!("https://{SITE}/"),
        &site.pins(),
        "\"h2\", \"h3\"",
        &format!(
            "[[workload]]\nkind = \"rps\"\nname = \"latency\"\nmetric = \"p50\"\nrate = 20\n\
             connections = 2\nduration = \"2s\"\n\
             [[workload]]\nkind = \"download\"\nname = \"hero\"\nurl = \"https://{SITE}/img/hero.png\"\n"
        ),
    );
    let (output, left_behind) = site.bench(&suite, &out);
    assert!(
        output.status.success(),
        "bench failed: {}\n{}",
        failed_cells(&out),
        text(&output)
    );
    assert!(!left_behind);
    let results = results(&out);
    let hero = std::fs::metadata(site.root().join("img/hero.png"))
        .unwrap()
        .len();
    for cell in &results.cells {
        match cell.workload.as_str() {
            // An open model at 20 requests per second for 2 s.
            "latency" => assert!(
                (30..=41).contains(&cell.requests),
                "{} requests",
                cell.requests
            ),
            _ => assert_eq!(cell.bytes, hero, "the whole file, once"),
        }
    }
    // More than the caps is refused unless the suite owns up to it.
    let heavy = suite.replace("rate = 20", "rate = 500");
    let (output, _) = site.bench(&heavy, &site.dir.path().join("heavy"));
    assert!(!output.status.success());
    assert!(
        text(&output).contains("over the field cap"),
        "{}",
        text(&output)
    );
}

#[test]
fn ctrl_c_keeps_the_cells_so_far_and_leaves_no_namespace_rule_or_forwarding_behind() {
    let Some(site) = remote_site() else { return };
    let forwarding = || std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward").unwrap();
    let before = forwarding();
    let out = site.dir.path().join("run");
    let suite = field_suite(
        &format!("https://{SITE}/"),
        &site.pins(),
        "\"h2\", \"h3\"",
        "[[workload]]\nkind = \"page\"\nname = \"page\"\nloads = 50\nprofiles = [\"wan\"]\n",
    );
    let file = out.with_extension("toml");
    std::fs::write(&file, suite).unwrap();
    let mut child = Command::new(EXE)
        .arg("bench")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .env("SSL_CERT_FILE", site.trust_store())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status = ctrl_c_after_cells(&mut child, &out, 2, None);
    assert_eq!(status.code(), Some(130), "Ctrl-C exit code");
    let results = results(&out);
    assert!(results.interrupted && results.cells.len() >= 2 && results.cells.len() < 100);
    assert!(results.field.is_some());
    assert!(!namespaces_left(child.id()), "namespaces left behind");
    assert!(!gateway_rules_left(child.id()), "NAT rules left behind");
    assert_eq!(forwarding(), before, "ip_forward as it was");
}

/// Sends Ctrl-C to a running `h3lab bench` once `out`'s results hold
/// `cells` cells, and waits for it to end. Fails the test, with the run's
/// `stderr` file if it has one, when the run ends first or the cells do not
/// come within 90 s.
fn ctrl_c_after_cells(
    child: &mut std::process::Child,
    out: &Path,
    cells: usize,
    stderr: Option<&Path>,
) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(90);
    let printed = || stderr.and_then(|file| std::fs::read_to_string(file).ok());
    while std::fs::read_to_string(out.join("results.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Results>(&text).ok())
        .is_none_or(|results| results.cells.len() < cells)
    {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "h3lab bench ended ({status}) before {cells} cells: {:?}",
                printed()
            );
        }
        assert!(
            Instant::now() < deadline,
            "not {cells} cells within 90 s: {:?}",
            printed()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    child.wait().unwrap()
}

/// A newcomer's first run, `h3lab bench --url`, as a user who cannot
/// emulate (no root, so no NAT out of an emulated path): it runs the real
/// path alone, says what it left out and how to get it, and says how long
/// it will take. Stopped (Ctrl-C) once it has real-path cells: on the real
/// path alone the preset is 115 cells, about 8 minutes.
#[test]
fn bench_url_without_root_runs_the_real_path_alone_and_says_what_it_left_out() {
    let Some(site) = remote_site() else { return };
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let nobody = nix::unistd::Uid::from_raw(65534);
    std::fs::set_permissions(site.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // A copy the user can reach: the build's own may sit under a directory
    // only root may enter (a checkout under /root).
    let exe = site.dir.path().join("h3lab");
    std::fs::copy(EXE, &exe).unwrap();
    let url = format!("https://{SITE}/");
    let newcomer = |args: &[&str]| {
        let mut command = Command::new(&exe);
        command.args(["bench", "--url", &url, "--resolve", &site.pins()[0]]);
        command.args(args).uid(nobody.as_raw()).gid(65534);
        command.env("SSL_CERT_FILE", site.trust_store());
        command.env_remove("SSL_CERT_DIR");
        command
    };
    // The dry run lists what the run will have, not the emulated cells.
    let dry = newcomer(&["--dry-run"]).output().unwrap();
    let listed = String::from_utf8_lossy(&dry.stdout);
    let notice = String::from_utf8_lossy(&dry.stderr);
    assert!(dry.status.success(), "{notice}");
    assert!(notice.contains("left out mobile-lossy"), "{notice}");
    let cells: Vec<&str> = listed.lines().filter(|l| l.contains(" #")).collect();
    assert!(
        !cells.is_empty() && cells.iter().all(|cell| cell.starts_with("real ")),
        "{listed}"
    );
    let out = site.dir.path().join("newcomer");
    std::fs::create_dir(&out).unwrap();
    nix::unistd::chown(&out, Some(nobody), None).unwrap();
    let stderr_file = site.dir.path().join("newcomer.stderr");
    let mut child = newcomer(&["--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_file).unwrap())
        .spawn()
        .unwrap();
    let status = ctrl_c_after_cells(&mut child, &out, 1, Some(&stderr_file));
    let stderr = std::fs::read_to_string(&stderr_file).unwrap();
    eprintln!("{stderr}");
    assert_eq!(status.code(), Some(130), "Ctrl-C exit code:\n{stderr}");
    assert!(
        stderr.contains("the real path alone; left out mobile-lossy, since ")
            && stderr.contains("run as root"),
        "{stderr}"
    );
    assert!(stderr.contains(" cells, about "), "{stderr}");
    let results = results(&out);
    assert!(
        results.cells.iter().all(|cell| cell.profile == "real path"),
        "{:?}",
        (results.cells.iter())
            .map(|cell| &cell.profile)
            .collect::<Vec<_>>()
    );
    assert!(
        (results.cells.iter()).any(|cell| cell.outcome == Outcome::Ok),
        "{}",
        failed_cells(&out)
    );
    assert!(!namespaces_left(child.id()), "namespaces left behind");
}

/// Field mode puts an emulated profile on top of the real path by NAT,
/// which needs iptables. Without it, the run fails before measuring
/// anything (it checks that each profile can be built first), naming the
/// profile and the package, within 30 s, leaving no namespace, veth or
/// rule behind, and the lock gateways share is free for the next run. (A
/// gateway whose set-up failed once waited on that lock, held by its own
/// process, for ever.)
#[test]
fn without_iptables_an_emulated_profile_names_the_package_and_leaves_nothing() {
    let Some(site) = remote_site() else { return };
    let fake = FakePath::new(&["iptables"], &[]);
    let out = site.dir.path().join("no-iptables");
    let suite = field_suite(
        &format!("https://{SITE}/"),
        &site.pins(),
        "\"h2\"",
        "[[workload]]\nkind = \"ttfb\"\nname = \"hs\"\nmodes = [\"cold\"]\nsamples = 1\n",
    );
    let file = out.with_extension("toml");
    std::fs::write(&file, suite).unwrap();
    let mut command = Command::new(EXE);
    command
        .arg("bench")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .env("PATH", fake.path())
        .env("SSL_CERT_FILE", site.trust_store())
        .env_remove("SSL_CERT_DIR");
    let failed = fails_promptly(command, "field mode without iptables");
    assert!(
        failed
            .error
            .contains("cannot take profile `wan` out to the real path")
            && failed.error.contains("apt-get install iptables"),
        "{}",
        failed.error
    );
    // The lock is free: an emulated path starts at once.
    let output = Command::new(EXE)
        .args(["net", "run", "--rtt", "10ms", "--", "true"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
}
