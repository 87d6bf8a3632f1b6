//! End-to-end tests of the emulated path: real TCP and UDP through the
//! namespaces and TUN devices. They need root: without it they skip with a
//! message, and fail in CI. Each uses its own namespaces, so they can
//! run in parallel; transfers are small and at modest rates. A test that
//! measures time (a round trip, a rate) runs alone: see [`alone`].

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use linkem::config::{parse_rate, parse_time, LossDirection};
use linkem::model::{LinkStats, LossModel, QueueLimit, UdpPolicy};
use linkem::run::{Placement, Side};
use linkem::{EmulatedPath, LinkSettings, RateSpec};

fn settings(rtt: &str, down: &str, up: &str) -> LinkSettings {
    LinkSettings {
        rtt: parse_time(rtt).unwrap(),
        down: RateSpec::Fixed {
            bits_per_sec: parse_rate(down).unwrap(),
        },
        up: RateSpec::Fixed {
            bits_per_sec: parse_rate(up).unwrap(),
        },
        ..LinkSettings::default()
    }
}

/// A busy path's forwarder runs at real-time priority and spins near a
/// deadline, and the tests share two cores: a test that measures time
/// (a round trip, a rate) runs alone, as h3lab runs one path at a time.
static CORES: RwLock<()> = RwLock::new(());

/// Held by a test that measures time: no other path runs meanwhile.
fn alone() -> RwLockWriteGuard<'static, ()> {
    CORES.write().unwrap_or_else(PoisonError::into_inner)
}

/// Held by a test that only checks what arrives: others like it may run
/// beside it, a timing test may not.
fn beside_others() -> RwLockReadGuard<'static, ()> {
    CORES.read().unwrap_or_else(PoisonError::into_inner)
}

fn namespaces() -> String {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Median of `rounds` one-byte request/response round trips.
fn median_round_trip(stream: &mut TcpStream, rounds: usize) -> Duration {
    stream.set_nodelay(true).unwrap();
    let mut samples: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            stream.write_all(b"x").unwrap();
            let mut byte = [0u8];
            stream.read_exact(&mut byte).unwrap();
            start.elapsed()
        })
        .collect();
    samples.sort();
    samples[rounds / 2]
}

fn echo_once(listener: TcpListener) {
    let (mut stream, _) = listener.accept().unwrap();
    stream.set_nodelay(true).unwrap();
    let mut byte = [0u8];
    while stream.read_exact(&mut byte).is_ok() {
        if stream.write_all(&byte).is_err() {
            break;
        }
    }
}

/// A TCP listener on an ephemeral port of the server namespace.
fn listener_in_server(path: &EmulatedPath) -> TcpListener {
    let server_ip = path.server_ip();
    path.spawn_in_server(move || TcpListener::bind((server_ip, 0)).unwrap())
        .unwrap()
        .join()
        .unwrap()
}

/// linux/sockios.h: when the kernel received the last datagram read from
/// a socket (CLOCK_REALTIME, as `SystemTime`).
const SIOCGSTAMPNS: libc::c_ulong = 0x8907;

fn received_at(socket: &UdpSocket) -> SystemTime {
    let mut stamp = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid socket and a timespec for the kernel to fill.
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), SIOCGSTAMPNS, &mut stamp) };
    assert_eq!(rc, 0, "SIOCGSTAMPNS: {}", std::io::Error::last_os_error());
    UNIX_EPOCH + Duration::new(stamp.tv_sec as u64, stamp.tv_nsec as u32)
}

/// Answers `rounds` datagrams, each answer saying in nanoseconds how long
/// its request stayed here, from the kernel's receipt to the answer.
fn udp_echo(socket: UdpSocket, rounds: usize) {
    let mut request = [0u8; 64];
    for _ in 0..rounds {
        let (_, from) = socket.recv_from(&mut request).unwrap();
        let held = received_at(&socket).elapsed().unwrap_or_default();
        let answer = (held.as_nanos() as u64).to_le_bytes();
        socket.send_to(&answer, from).unwrap();
    }
}

/// The path's round trip, `rounds` times: from the request's send to the
/// kernel's receipt of the answer, less the time the request stayed at
/// the echo. The endpoints' own wake-ups are not the path's: on a VM,
/// waking a thread that slept through 40 ms costs up to a millisecond.
fn path_round_trips(socket: &UdpSocket, to: SocketAddr, rounds: usize) -> Vec<Duration> {
    let mut answer = [0u8; 8];
    (0..rounds)
        .map(|_| {
            let sent = SystemTime::now();
            socket.send_to(b"x", to).unwrap();
            socket.recv(&mut answer).unwrap();
            let held = Duration::from_nanos(u64::from_le_bytes(answer));
            let answered = received_at(socket).duration_since(sent).unwrap();
            answered - held
        })
        .collect()
}

#[test]
fn the_round_trip_matches_the_configured_rtt() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = alone();
    let rtt = Duration::from_millis(40);
    let rounds = 20;
    let path = EmulatedPath::start(settings("40ms", "50mbit", "10mbit").build()).unwrap();
    let echo = udp_socket_in(&path, true, (path.server_ip(), 0).into());
    let to = echo.local_addr().unwrap();
    let server = std::thread::spawn(move || udp_echo(echo, rounds));
    let client = udp_socket_in(&path, false, (path.client_ip(), 0).into());
    let mut trips = path_round_trips(&client, to, rounds);
    server.join().unwrap();
    trips.sort();
    let median = trips[rounds / 2];
    eprintln!("round trips on a {rtt:?} path: {trips:?}");
    assert!(
        median.abs_diff(rtt) <= Duration::from_millis(1),
        "the median round trip was {median:?} on a {rtt:?} path"
    );
    path.shutdown().unwrap();
}

/// A TCP-level socket option read as `T`, a C integer or struct that any
/// bytes (zeroes first) make a valid value of.
fn tcp_option<T>(stream: &TcpStream, option: libc::c_int) -> T {
    // SAFETY: T is plain old data, as the callers below use it.
    let mut value: T = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: valid out-pointers of the sizes given.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            option,
            (&mut value as *mut T).cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0);
    value
}

fn tcp_max_segment(stream: &TcpStream) -> usize {
    tcp_option::<libc::c_int>(stream, libc::TCP_MAXSEG) as usize
}

/// Bytes received between `from` and `to` after the first byte.
fn receive_window(read: &mut dyn FnMut(&mut [u8]) -> usize, from: Duration, to: Duration) -> u64 {
    let mut buf = vec![0u8; 64 * 1024];
    let mut first = None;
    let mut counted = 0u64;
    loop {
        let n = read(&mut buf);
        let start = *first.get_or_insert_with(Instant::now);
        let t = start.elapsed();
        if n == 0 || t >= to {
            return counted;
        }
        if t >= from {
            counted += n as u64;
        }
    }
}

const WINDOW_FROM: Duration = Duration::from_millis(700);
const WINDOW_TO: Duration = Duration::from_millis(2700);

fn rate_of(bytes: u64) -> f64 {
    bytes as f64 * 8.0 / (WINDOW_TO - WINDOW_FROM).as_secs_f64()
}

/// A TCP download from the server namespace for longer than the window:
/// the bytes received within it, and the connection's MSS.
fn tcp_download(path: &EmulatedPath) -> (u64, usize) {
    let listener = listener_in_server(path);
    let addr = listener.local_addr().unwrap();
    let sender = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let chunk = vec![7u8; 64 * 1024];
        let deadline = Instant::now() + WINDOW_TO + Duration::from_secs(2);
        while Instant::now() < deadline && stream.write_all(&chunk).is_ok() {}
    });
    let received = path
        .spawn_in_client(move || {
            let mut stream = TcpStream::connect(addr).unwrap();
            let mss = tcp_max_segment(&stream);
            let bytes =
                receive_window(&mut |buf| stream.read(buf).unwrap(), WINDOW_FROM, WINDOW_TO);
            (bytes, mss)
        })
        .unwrap()
        .join()
        .unwrap();
    sender.join().unwrap();
    received
}

/// A one-byte request answered with `size` bytes on a new connection: the
/// time from the request to the answer's last byte at the client, and the
/// server's congestion window (segments) as it starts to answer.
fn first_answer(path: &EmulatedPath, size: usize) -> (Duration, u32) {
    let listener = listener_in_server(path);
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream.set_nodelay(true).unwrap();
        let mut request = [0u8];
        stream.read_exact(&mut request).unwrap();
        let window = tcp_option::<libc::tcp_info>(&stream, libc::TCP_INFO).tcpi_snd_cwnd;
        stream.write_all(&vec![1u8; size]).unwrap();
        window
    });
    let elapsed = path
        .spawn_in_client(move || {
            let mut stream = TcpStream::connect(addr).unwrap();
            stream.write_all(b"x").unwrap();
            let start = Instant::now();
            let mut answer = vec![0u8; size];
            stream.read_exact(&mut answer).unwrap();
            start.elapsed()
        })
        .unwrap()
        .join()
        .unwrap();
    (elapsed, server.join().unwrap())
}

#[test]
fn the_tcp_initial_window_is_set_for_both_sides_of_the_path() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = alone();
    let rtt = Duration::from_millis(100);
    // 28 full segments: one round trip at a window of 32 (when the
    // receiver's first window allows it too), two at Linux's 10.
    let size = 28 * 1448;
    let linux = EmulatedPath::start(settings("100ms", "100mbit", "100mbit").build()).unwrap();
    let (two_trips, window) = first_answer(&linux, size);
    assert_eq!(window, 10, "Linux starts TCP at 10 segments");
    linux.shutdown().unwrap();
    let wide = EmulatedPath::start(settings("100ms", "100mbit", "100mbit").build()).unwrap();
    wide.set_tcp_initial_window(32).unwrap();
    let (one_trip, window) = first_answer(&wide, size);
    assert_eq!(window, 32, "the route's initcwnd");
    eprintln!("{size} B answered in {two_trips:?} at 10 segments, {one_trip:?} at 32");
    assert!(
        one_trip < rtt * 3 / 2 && two_trips > rtt * 3 / 2,
        "{size} B took {one_trip:?} at 32 segments and {two_trips:?} at 10, on a {rtt:?} path"
    );
    let err = wide.set_tcp_initial_window(0).unwrap_err();
    assert!(format!("{err:#}").contains("out of range"), "{err:#}");
    wide.shutdown().unwrap();
}

#[test]
fn bulk_tcp_download_reaches_the_configured_rate() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = alone();
    let rate = 40e6;
    let path = EmulatedPath::start(settings("20ms", "40mbit", "10mbit").build()).unwrap();
    let (bytes, mss) = tcp_download(&path);
    // Goodput is the link rate times the payload share of a full packet.
    let expected = rate * mss as f64 / 1500.0;
    let goodput = rate_of(bytes);
    // The link's own account (queue drops, packets released late by a busy
    // machine) goes with the figure, so a miss says which side fell short.
    let stats = path.shutdown().unwrap();
    eprintln!(
        "TCP goodput {:.2} Mbit/s, expected {:.2}; {}",
        goodput / 1e6,
        expected / 1e6,
        stats.summary_line()
    );
    assert!(
        (goodput / expected - 1.0).abs() < 0.05,
        "TCP goodput {:.2} Mbit/s, expected {:.2} Mbit/s (MSS {mss}); {}",
        goodput / 1e6,
        expected / 1e6,
        stats.summary_line()
    );
    // The link, not the sender, set the rate: a packet waited in its queue
    // for at least one full packet's serialisation, at the median.
    let one_packet_ms = 1500.0 * 8.0 / rate * 1e3;
    let median_wait_ms = stats.down.queue_delay.histogram().value_at_quantile(0.5) as f64 / 1e6;
    assert!(
        median_wait_ms >= one_packet_ms,
        "median queue wait {median_wait_ms:.3} ms, under one packet's {one_packet_ms:.3} ms: the link was not the bottleneck"
    );
}

/// Sends `count` full-size datagrams (1472 + 28 header bytes = 1500 on the
/// wire) at `bits_per_sec`, paced, from the current thread.
fn blast(socket: &UdpSocket, to: SocketAddr, count: u64, bits_per_sec: f64) {
    let interval = Duration::from_secs_f64(1500.0 * 8.0 / bits_per_sec);
    let payload = [9u8; 1472];
    let start = Instant::now();
    for i in 0..count {
        let due = start + interval.mul_f64(i as f64);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        socket.send_to(&payload, to).unwrap();
    }
}

/// A UDP receiver on `receiver_side` of the path and a blaster on the
/// other side; returns what `measure` made of the datagrams received.
fn udp_transfer(
    path: &EmulatedPath,
    receiver_side: Side,
    count: u64,
    bits_per_sec: f64,
    measure: impl FnOnce(&UdpSocket) -> u64 + Send + 'static,
) -> u64 {
    let (receiver_ip, sender_ip, sender_side) = match receiver_side {
        Side::Client => (path.client_ip(), path.server_ip(), Side::Server),
        Side::Server => (path.server_ip(), path.client_ip(), Side::Client),
    };
    let receiver = run_at(path, receiver_side, move || {
        UdpSocket::bind((receiver_ip, 0)).unwrap()
    });
    let to = receiver.local_addr().unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let counter = std::thread::spawn(move || measure(&receiver));
    run_at(path, sender_side, move || {
        let socket = UdpSocket::bind((sender_ip, 0)).unwrap();
        blast(&socket, to, count, bits_per_sec);
    });
    counter.join().unwrap()
}

/// Runs `work` on a thread in `side`'s namespace and returns its result.
fn run_at<T: Send + 'static>(
    path: &EmulatedPath,
    side: Side,
    work: impl FnOnce() -> T + Send + 'static,
) -> T {
    let thread = match side {
        Side::Client => path.spawn_in_client(work),
        Side::Server => path.spawn_in_server(work),
    };
    thread.unwrap().join().unwrap()
}

#[test]
fn bulk_udp_download_reaches_the_configured_rate() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = alone();
    let rate = 30e6;
    let path = EmulatedPath::start(settings("20ms", "30mbit", "10mbit").build()).unwrap();
    // Offer 30 % more than the link carries, for longer than the window.
    let duration = WINDOW_TO + Duration::from_millis(500);
    let count = (rate * 1.3 * duration.as_secs_f64() / 12_000.0) as u64;
    let bytes = udp_transfer(&path, Side::Client, count, rate * 1.3, |socket| {
        let mut read = |buf: &mut [u8]| socket.recv(buf).map(|n| n + 28).unwrap_or(0);
        receive_window(&mut read, WINDOW_FROM, WINDOW_TO)
    });
    let delivered = rate_of(bytes);
    eprintln!(
        "UDP delivered {:.2} Mbit/s on a 30 Mbit/s link",
        delivered / 1e6
    );
    assert!(
        (delivered / rate - 1.0).abs() < 0.05,
        "UDP delivered {:.2} Mbit/s on a 30 Mbit/s link",
        delivered / 1e6
    );
    let stats = path.shutdown().unwrap();
    assert!(stats.down.dropped_queue > 0, "the link was not saturated");
}

/// Datagrams `socket` receives until it has waited its read timeout.
fn count_datagrams(socket: &UdpSocket) -> u64 {
    let mut buf = [0u8; 2048];
    let mut count = 0;
    while socket.recv(&mut buf).is_ok() {
        count += 1;
    }
    count
}

#[test]
fn downstream_loss_shows_in_the_link_statistics_and_spares_upstream() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = beside_others();
    let p = 0.05;
    let mut settings = settings("10ms", "50mbit", "50mbit");
    settings.loss = LossModel::Bernoulli { p };
    settings.loss_direction = LossDirection::Down;
    settings.queue = Some(QueueLimit::Packets(10_000));
    settings.seed = 2026;
    let path = EmulatedPath::start(settings.build()).unwrap();
    let sent = 8000;
    let received = udp_transfer(&path, Side::Client, sent, 20e6, count_datagrams);
    let sent_up = 2000;
    let received_up = udp_transfer(&path, Side::Server, sent_up, 20e6, count_datagrams);
    let stats = path.shutdown().unwrap();
    let up = &stats.up;
    assert_eq!(
        up.packets_in, sent_up,
        "every upstream datagram reached the link"
    );
    assert_eq!(
        up.dropped_loss, 0,
        "a downstream loss dropped upstream packets"
    );
    assert_eq!(up.packets_out, sent_up);
    assert_eq!(received_up, sent_up);
    let down = &stats.down;
    assert_eq!(down.packets_in, sent, "every datagram reached the link");
    assert_eq!(down.dropped_queue, 0);
    assert_eq!(
        received, down.packets_out,
        "the receiver got what the link sent"
    );
    assert_eq!(down.packets_out + down.dropped_loss, sent);
    let sigma = (sent as f64 * p * (1.0 - p)).sqrt();
    let lost = down.dropped_loss as f64;
    eprintln!("loss: {lost} of {sent} lost at p = {p}, received {received}");
    assert!(
        (lost - sent as f64 * p).abs() <= 4.0 * sigma,
        "lost {lost} of {sent} at {p}"
    );
}

/// Not a test on its own: the cleanup test runs this in a child process
/// (with LINKEM_HOLD_PATH set) and kills it with SIGKILL.
#[test]
#[ignore = "helper process for killed_run_is_cleaned_up_by_the_next_run"]
fn hold_path_child() {
    if std::env::var_os("LINKEM_HOLD_PATH").is_none() {
        return;
    }
    let mut path = EmulatedPath::start(LinkSettings::default().build()).unwrap();
    path.route_out().unwrap();
    path.set_client_resolver(path.server_ip()).unwrap();
    path.add_origin_leg(LinkSettings::default().build())
        .unwrap();
    let (client, server) = path.namespace_names();
    let origin = path.origin_namespace_name().unwrap();
    println!("namespaces {client} {server} {origin}");
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn killed_run_is_cleaned_up_by_the_next_run() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = beside_others();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "hold_path_child",
            "--include-ignored",
            "--nocapture",
        ])
        .env("LINKEM_HOLD_PATH", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let names: Vec<String> = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("namespaces ").map(str::to_string))
        .expect("the child reports its namespaces")
        .split(' ')
        .map(str::to_string)
        .collect();
    assert_eq!(names.len(), 3, "client, server and origin: {names:?}");
    assert!(names
        .iter()
        .all(|name| namespaces().contains(name.as_str())));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        names
            .iter()
            .all(|name| namespaces().contains(name.as_str())),
        "SIGKILL leaves the namespaces behind"
    );
    let owner = format!("h3lab-gw-{}-", child.id());
    assert!(gateway_rules().contains(&owner), "and the gateway's rules");
    let resolver_dir = Path::new("/etc/netns").join(&names[0]);
    assert!(resolver_dir.exists(), "and the client's resolver file");
    let path = EmulatedPath::start(LinkSettings::default().build()).unwrap();
    let (client, server) = path.namespace_names();
    let (client, server) = (client.to_string(), server.to_string());
    let listed = namespaces();
    assert!(
        names.iter().all(|name| !listed.contains(name.as_str())),
        "{listed}"
    );
    assert!(!gateway_rules().contains(&owner), "{}", gateway_rules());
    assert!(!resolver_dir.exists(), "{}", resolver_dir.display());
    path.shutdown().unwrap();
    let listed = namespaces();
    assert!(
        !listed.contains(&client) && !listed.contains(&server),
        "{listed}"
    );
}

/// The root namespace's iptables rules, NAT and filter tables.
fn gateway_rules() -> String {
    ["nat", "filter"]
        .iter()
        .map(|table| {
            let out = Command::new("iptables")
                .args(["-t", table, "-S"])
                .output()
                .expect("iptables is installed (apt-get install iptables)");
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
        .collect()
}

/// A namespace standing for a server out on the network: a veth pair to
/// the root namespace, `203.0.113.1` there and `203.0.113.2` inside.
struct RemoteHost {
    name: String,
}

impl RemoteHost {
    const ADDRESS: &str = "203.0.113.2";

    fn start() -> RemoteHost {
        let out = Command::new("ip")
            .args(["-4", "-o", "addr", "show"])
            .output()
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("inet 203.0.113."),
            "this machine uses 203.0.113.0/24 (TEST-NET-3) itself, which this test needs"
        );
        let name = format!("h3lab-{}-remote", std::process::id());
        let device = format!("h3rt{}", std::process::id() % 100_000);
        let run = |args: &str| {
            let status = Command::new("ip")
                .args(args.split_whitespace())
                .status()
                .unwrap();
            assert!(status.success(), "ip {args}");
        };
        run(&format!("netns add {name}"));
        run(&format!(
            "link add {device} type veth peer name eth0 netns {name}"
        ));
        run(&format!("addr add 203.0.113.1/24 dev {device}"));
        run(&format!("link set {device} up"));
        run(&format!("-n {name} addr add {}/24 dev eth0", Self::ADDRESS));
        run(&format!("-n {name} link set eth0 up"));
        run(&format!("-n {name} link set lo up"));
        run(&format!("-n {name} route add default via 203.0.113.1"));
        RemoteHost { name }
    }

    /// A TCP listener on `ADDRESS:port` inside the namespace.
    fn listen(&self, port: u16) -> TcpListener {
        let file = std::fs::File::open(format!("/run/netns/{}", self.name)).unwrap();
        let address = format!("{}:{port}", Self::ADDRESS);
        std::thread::spawn(move || {
            nix::sched::setns(file, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            TcpListener::bind(address).unwrap()
        })
        .join()
        .unwrap()
    }
}

impl Drop for RemoteHost {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.name])
            .status();
    }
}

#[test]
fn a_routed_out_path_reaches_a_host_beyond_it_behind_nat_and_leaves_nothing() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = beside_others();
    let remote = RemoteHost::start();
    let listener = remote.listen(7000);
    let echo = std::thread::spawn(move || {
        let (mut stream, peer) = listener.accept().unwrap();
        let mut byte = [0u8];
        while stream.read_exact(&mut byte).is_ok() && stream.write_all(&byte).is_ok() {}
        peer
    });
    let mut path = EmulatedPath::start(settings("40ms", "100mbit", "100mbit").build()).unwrap();
    path.route_out().unwrap();
    let mut stream = path
        .spawn_in_client(|| TcpStream::connect((RemoteHost::ADDRESS, 7000)).unwrap())
        .unwrap()
        .join()
        .unwrap();
    let round_trip = median_round_trip(&mut stream, 9);
    drop(stream);
    let peer = echo.join().unwrap();
    // The remote host sees the machine's own address, not the path's.
    assert_eq!(peer.ip().to_string(), "203.0.113.1");
    assert!(
        round_trip >= Duration::from_millis(40) && round_trip < Duration::from_millis(80),
        "{round_trip:?} over a 40 ms path"
    );
    let owner = format!("h3lab-gw-{}-", std::process::id());
    assert!(gateway_rules().contains(&owner));
    path.shutdown().unwrap();
    assert!(!gateway_rules().contains(&owner), "{}", gateway_rules());
}

/// A UDP socket bound at `bind` inside the client or server namespace; it
/// stays there when used from this thread. Reads give up after 5 s.
fn udp_socket_in(path: &EmulatedPath, server_side: bool, bind: SocketAddr) -> UdpSocket {
    let make = move || UdpSocket::bind(bind).unwrap();
    let socket = match server_side {
        true => path.spawn_in_server(make),
        false => path.spawn_in_client(make),
    };
    let socket = socket.unwrap().join().unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    socket
}

/// Sends `message` and returns it as received, with its sender.
fn carry(from: &UdpSocket, to: &UdpSocket, message: &[u8]) -> (Vec<u8>, SocketAddr) {
    from.send_to(message, to.local_addr().unwrap()).unwrap();
    let mut buffer = [0u8; 64];
    let (len, sender) = to.recv_from(&mut buffer).unwrap();
    (buffer[..len].to_vec(), sender)
}

#[test]
fn a_rebound_nat_gives_the_flow_a_new_port_and_forgets_the_old_one() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = beside_others();
    let path = EmulatedPath::start(settings("10ms", "10mbit", "10mbit").build()).unwrap();
    let server = udp_socket_in(&path, true, (path.server_ip(), 0).into());
    let client = udp_socket_in(&path, false, ([0, 0, 0, 0], 0).into());
    let (_, before) = carry(&client, &server, b"before");
    assert_eq!(before, client_address(&path, &client));
    path.control().unwrap().rebind_nat();
    let (message, after) = carry(&client, &server, b"after");
    assert_eq!(message, b"after");
    assert_eq!(after.ip(), before.ip());
    assert_eq!(
        after.port(),
        before.port() ^ 0x8000,
        "the new external port"
    );
    // The old mapping is gone: of these two in order, only the second,
    // sent to the new external port, reaches the client.
    server.send_to(b"to the old port", before).unwrap();
    server.send_to(b"to the new port", after).unwrap();
    let mut buffer = [0u8; 64];
    let len = client.recv(&mut buffer).unwrap();
    assert_eq!(&buffer[..len], b"to the new port");
}

/// The address and port the client socket's packets leave with.
fn client_address(path: &EmulatedPath, socket: &UdpSocket) -> SocketAddr {
    (path.client_ip(), socket.local_addr().unwrap().port()).into()
}

#[test]
fn a_second_client_address_carries_traffic_after_the_first_is_removed() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = beside_others();
    let path = EmulatedPath::start(settings("10ms", "10mbit", "10mbit").build()).unwrap();
    let second = path.add_client_address().unwrap();
    assert_ne!(second, path.client_ip());
    let server = udp_socket_in(&path, true, (path.server_ip(), 0).into());
    let moved = udp_socket_in(&path, false, (second, 0).into());
    let (_, sender) = carry(&moved, &server, b"from the second address");
    assert_eq!(sender.ip(), second);
    path.control()
        .unwrap()
        .remove_client_address(path.client_ip())
        .unwrap();
    let (_, sender) = carry(&moved, &server, b"after the handoff");
    assert_eq!(sender.ip(), second);
    let (reply, _) = carry(&server, &moved, b"reply");
    assert_eq!(reply, b"reply");
    // New sockets leave from the remaining address: its route survived.
    let fresh = udp_socket_in(&path, false, ([0, 0, 0, 0], 0).into());
    let (_, sender) = carry(&fresh, &server, b"new socket");
    assert_eq!(sender.ip(), second);
}

/// Round trips of one byte over TCP from the client to an echo server:
/// every byte must come back.
fn tcp_echoes(path: &EmulatedPath, rounds: usize) {
    let listener = listener_in_server(path);
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || echo_once(listener));
    path.spawn_in_client(move || {
        let mut stream = TcpStream::connect(addr).unwrap();
        median_round_trip(&mut stream, rounds)
    })
    .unwrap()
    .join()
    .unwrap();
    server.join().unwrap();
}

#[test]
fn blocked_udp_is_dropped_both_ways_while_tcp_passes() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = beside_others();
    let blocked = LinkSettings {
        udp: UdpPolicy::Blocked,
        ..settings("10ms", "20mbit", "20mbit")
    };
    let path = EmulatedPath::start(blocked.build()).unwrap();
    for receiver in [Side::Client, Side::Server] {
        let received = udp_transfer(&path, receiver, 50, 2e6, count_datagrams);
        assert_eq!(received, 0, "UDP reached the {receiver:?} through a block");
    }
    tcp_echoes(&path, 20);
    let stats = path.shutdown().unwrap();
    assert_eq!((stats.up.dropped_udp, stats.down.dropped_udp), (50, 50));
    assert_eq!(stats.up.dropped_loss + stats.down.dropped_loss, 0);
}

#[test]
fn a_udp_policer_holds_udp_to_its_rate_both_ways_while_tcp_fills_the_link() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = alone();
    let (link, policed) = (20e6, 2e6);
    let throttled = LinkSettings {
        udp: UdpPolicy::Throttle {
            bits_per_sec: policed as u64,
        },
        ..settings("10ms", "20mbit", "20mbit")
    };
    let path = EmulatedPath::start(throttled.build()).unwrap();
    // Offer four times the policed rate, for longer than the window.
    let duration = WINDOW_TO + Duration::from_millis(500);
    let count = (policed * 4.0 * duration.as_secs_f64() / 12_000.0) as u64;
    for receiver in [Side::Client, Side::Server] {
        let bytes = udp_transfer(&path, receiver, count, policed * 4.0, |socket| {
            let mut read = |buf: &mut [u8]| socket.recv(buf).map(|n| n + 28).unwrap_or(0);
            receive_window(&mut read, WINDOW_FROM, WINDOW_TO)
        });
        let delivered = rate_of(bytes);
        assert!(
            (delivered / policed - 1.0).abs() < 0.1,
            "UDP to the {receiver:?}: {:.2} Mbit/s through a {:.0} Mbit/s policer",
            delivered / 1e6,
            policed / 1e6
        );
    }
    let (bytes, _) = tcp_download(&path);
    // TCP is not policed: far above the UDP rate (the link's is 20 Mbit/s).
    let tcp = rate_of(bytes);
    assert!(
        tcp > link / 2.0,
        "TCP got {:.2} Mbit/s on a {:.0} Mbit/s link whose UDP is policed",
        tcp / 1e6,
        link / 1e6
    );
    let stats = path.shutdown().unwrap();
    assert!(stats.up.dropped_udp > 0 && stats.down.dropped_udp > 0);
}

#[test]
fn commands_in_the_client_namespace_read_its_resolver_and_the_file_goes_with_the_path() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = beside_others();
    let host_before = std::fs::read_to_string("/etc/resolv.conf").ok();
    let mut path = EmulatedPath::start(LinkSettings::default().build()).unwrap();
    path.set_client_resolver(path.server_ip()).unwrap();
    let resolver_dir = Path::new("/etc/netns").join(path.namespace_names().0);
    let read_in = |side| {
        let output = Placement::Emulated(&path)
            .command(side, "cat")
            .arg("/etc/resolv.conf")
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let client_view = read_in(Side::Client);
    assert!(
        client_view.ends_with("\nnameserver 198.18.0.2\n"),
        "{client_view}"
    );
    let server_view = read_in(Side::Server);
    assert_eq!(
        Some(server_view),
        host_before,
        "only the client's view changes"
    );
    assert_eq!(
        std::fs::read_to_string("/etc/resolv.conf").ok(),
        host_before,
        "this machine's resolver is untouched"
    );
    assert!(resolver_dir.join("resolv.conf").is_file());
    drop(path);
    assert!(!resolver_dir.exists(), "{}", resolver_dir.display());
}

/// Runs `work` on a thread in the origin namespace and returns its result.
fn in_origin<T: Send + 'static>(
    path: &EmulatedPath,
    work: impl FnOnce() -> T + Send + 'static,
) -> T {
    path.spawn_in_origin(work).unwrap().join().unwrap()
}

#[test]
fn an_origin_leg_carries_udp_and_tcp_with_its_own_round_trip() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = alone();
    let rtt = Duration::from_millis(40);
    let rounds = 20;
    let mut path = EmulatedPath::start(settings("10ms", "50mbit", "50mbit").build()).unwrap();
    let origin_ip = path
        .add_origin_leg(settings("40ms", "50mbit", "10mbit").build())
        .unwrap();
    assert_eq!(origin_ip, Ipv4Addr::new(198, 18, 1, 2));
    assert_eq!(path.origin_ip(), Some(origin_ip));
    // UDP from the edge (the server namespace) to an echo at the origin.
    let echo = in_origin(&path, move || UdpSocket::bind((origin_ip, 0)).unwrap());
    let to = echo.local_addr().unwrap();
    let origin = std::thread::spawn(move || udp_echo(echo, rounds));
    let edge = udp_socket_in(&path, true, ([0, 0, 0, 0], 0).into());
    let mut trips = path_round_trips(&edge, to, rounds);
    origin.join().unwrap();
    trips.sort();
    let median = trips[rounds / 2];
    eprintln!("round trips on a {rtt:?} origin leg: {trips:?}");
    assert!(
        median.abs_diff(rtt) <= Duration::from_millis(1),
        "the median round trip was {median:?} on a {rtt:?} origin leg"
    );
    // TCP from the edge to the origin.
    let listener = in_origin(&path, move || TcpListener::bind((origin_ip, 0)).unwrap());
    let addr = listener.local_addr().unwrap();
    let origin = std::thread::spawn(move || echo_once(listener));
    let tcp_trip = path
        .spawn_in_server(move || {
            let mut stream = TcpStream::connect(addr).unwrap();
            median_round_trip(&mut stream, 9)
        })
        .unwrap()
        .join()
        .unwrap();
    origin.join().unwrap();
    eprintln!("TCP echo over the origin leg: median {tcp_trip:?}");
    assert!(
        tcp_trip >= rtt && tcp_trip < rtt * 2,
        "{tcp_trip:?} over a {rtt:?} origin leg"
    );
    // The client cannot reach the origin, even with a default route
    // through the edge's namespace, which then forwards packets: only a
    // proxy there joins the legs.
    path.route_out().unwrap();
    let listener = in_origin(&path, move || TcpListener::bind((origin_ip, 0)).unwrap());
    let socket = in_origin(&path, move || UdpSocket::bind((origin_ip, 0)).unwrap());
    let (tcp_to, udp_to) = (listener.local_addr().unwrap(), socket.local_addr().unwrap());
    let (connected, _) = path
        .spawn_in_client(move || {
            let client = UdpSocket::bind(("0.0.0.0", 0)).unwrap();
            let sent = client.send_to(b"around the edge", udp_to);
            let connected = TcpStream::connect_timeout(&tcp_to, Duration::from_secs(2));
            (connected, sent)
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(
        connected.is_err(),
        "the client connected to the origin at {tcp_to}"
    );
    // A datagram that got through would arrive within 25 ms (the legs'
    // one-way delays); this bound only ends the wait for it.
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buffer = [0u8; 64];
    let arrived = socket.recv(&mut buffer);
    assert!(
        arrived.is_err(),
        "a datagram from the client reached the origin"
    );
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_err(),
        "a connection reached the origin"
    );
    path.shutdown().unwrap();
}

#[test]
fn the_origin_leg_counts_its_own_packets_and_losses() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = beside_others();
    let p = 0.1;
    let mut origin_leg = settings("20ms", "50mbit", "50mbit");
    origin_leg.loss = LossModel::Bernoulli { p };
    origin_leg.loss_direction = LossDirection::Down;
    origin_leg.queue = Some(QueueLimit::Packets(10_000));
    origin_leg.seed = 2027;
    let mut client_leg = settings("10ms", "50mbit", "50mbit");
    client_leg.seed = 1;
    let mut path = EmulatedPath::start(client_leg.build()).unwrap();
    let origin_ip = path.add_origin_leg(origin_leg.build()).unwrap();
    let edge = udp_socket_in(&path, true, ([198, 18, 1, 1], 0).into());
    let to_edge = edge.local_addr().unwrap();
    edge.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    // Down (origin to edge) loses packets; up (edge to origin) does not.
    let (sent, sent_up) = (2000, 500);
    let counter = std::thread::spawn(move || count_datagrams(&edge));
    in_origin(&path, move || {
        let socket = UdpSocket::bind((origin_ip, 0)).unwrap();
        blast(&socket, to_edge, sent, 20e6);
    });
    let received = counter.join().unwrap();
    let at_origin = in_origin(&path, move || UdpSocket::bind((origin_ip, 0)).unwrap());
    let to_origin = at_origin.local_addr().unwrap();
    at_origin
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let counter = std::thread::spawn(move || count_datagrams(&at_origin));
    path.spawn_in_server(move || {
        let socket = UdpSocket::bind(("0.0.0.0", 0)).unwrap();
        blast(&socket, to_origin, sent_up, 20e6);
    })
    .unwrap()
    .join()
    .unwrap();
    let received_up = counter.join().unwrap();
    let so_far = path.origin_stats().expect("the path has an origin leg");
    let stats = path.shutdown_legs().unwrap();
    let origin = stats.origin_leg.expect("the path had an origin leg");
    assert_eq!(so_far.down.packets_in, origin.down.packets_in);
    let down = &origin.down;
    assert_eq!(
        down.packets_in, sent,
        "every datagram reached the origin leg"
    );
    assert_eq!(down.dropped_queue, 0);
    assert_eq!(received, down.packets_out, "the edge got what the leg sent");
    assert_eq!(down.packets_out + down.dropped_loss, sent);
    let sigma = (sent as f64 * p * (1.0 - p)).sqrt();
    let lost = down.dropped_loss as f64;
    eprintln!("origin leg: {lost} of {sent} lost at p = {p}, received {received}");
    assert!(
        (lost - sent as f64 * p).abs() <= 4.0 * sigma,
        "lost {lost} of {sent} at {p}"
    );
    let up = &origin.up;
    assert_eq!((up.packets_in, up.packets_out), (sent_up, sent_up));
    assert_eq!(up.dropped_loss, 0);
    assert_eq!(received_up, sent_up);
    // Its own seed, and none of these packets on the client's path.
    let seed = |stats: &LinkStats| serde_json::to_value(stats).unwrap()["seed"].clone();
    assert_eq!(
        (seed(&origin), seed(&stats.client_leg)),
        (2027.into(), 1.into())
    );
    let client = &stats.client_leg;
    assert_eq!((client.up.packets_in, client.down.packets_in), (0, 0));
}

#[test]
fn an_origin_leg_is_added_once_and_goes_with_the_path() {
    if !h3lab_testenv::root() {
        return;
    }
    let _cores = beside_others();
    let mut path = EmulatedPath::start(LinkSettings::default().build()).unwrap();
    assert_eq!(path.origin_ip(), None);
    let err = Placement::Emulated(&path)
        .origin_command("true")
        .unwrap_err();
    assert!(format!("{err:#}").contains("no origin leg"), "{err:#}");
    assert!(path.spawn_in_origin(|| ()).is_err());
    let zero_rate = LinkSettings {
        down: RateSpec::Fixed { bits_per_sec: 0 },
        ..settings("10ms", "1mbit", "1mbit")
    };
    let err = path.add_origin_leg(zero_rate.build()).unwrap_err();
    assert!(format!("{err:#}").contains("0 bit/s"), "{err:#}");
    assert_eq!(path.origin_namespace_name(), None);
    let origin_ip = path
        .add_origin_leg(settings("10ms", "10mbit", "10mbit").build())
        .unwrap();
    let err = path
        .add_origin_leg(settings("10ms", "10mbit", "10mbit").build())
        .unwrap_err();
    assert!(
        format!("{err:#}").contains("already has an origin leg"),
        "{err:#}"
    );
    // Each namespace holds its end of the origin leg, and every command
    // learns the origin's address.
    let run = |command: std::io::Result<std::process::Output>| {
        let output = command.unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let script = "echo $H3LAB_ORIGIN_IP; ip -4 -o addr show";
    let placement = Placement::Emulated(&path);
    let at_origin = run(placement
        .origin_command("sh")
        .unwrap()
        .args(["-c", script])
        .output());
    let at_edge = run(placement
        .command(Side::Server, "sh")
        .args(["-c", script])
        .output());
    assert!(
        at_origin.starts_with(&format!("{origin_ip}\n")),
        "{at_origin}"
    );
    assert!(at_origin.contains("inet 198.18.1.2/24"), "{at_origin}");
    assert!(!at_origin.contains("198.18.0."), "{at_origin}");
    assert!(at_edge.starts_with(&format!("{origin_ip}\n")), "{at_edge}");
    assert!(
        at_edge
            .lines()
            .any(|line| line.contains(" h3lab1 ") && line.contains("inet 198.18.1.1/24")),
        "{at_edge}"
    );
    let (client, server) = path.namespace_names();
    let names = [client, server, path.origin_namespace_name().unwrap()].map(str::to_string);
    assert!(names[2].ends_with("-o"), "{names:?}");
    let listed = namespaces();
    assert!(
        names.iter().all(|name| listed.contains(name.as_str())),
        "{listed}"
    );
    drop(path);
    let listed = namespaces();
    assert!(
        names.iter().all(|name| !listed.contains(name.as_str())),
        "{listed}"
    );
}
