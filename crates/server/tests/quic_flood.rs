//! A flood of QUIC Initial packets from one address: each is a real
//! ClientHello with its own connection ID, so every one the server accepts
//! is a half-open handshake the attacker never continues. Past the Retry
//! threshold the server must answer with Retry instead of taking a slot, so
//! the flood holds a bounded number of QUIC slots while h1, h2 and h3
//! legitimate loads from another address are served as fast as when quiet.

mod attack_common;

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use attack_common::{
    assert_attack_contained, attack_limits, h3_endpoint, sum_rounds, wait_for, AttackThread,
    LiveServer, ATTACKER, LOAD_CONNECTIONS,
};
use tokio::net::UdpSocket;
use tokio_util::sync::CancellationToken;

/// Distinct Initials captured, then sent round after round.
const INITIALS: usize = 1000;
/// Initials sent per second, in batches every [`BATCH_EVERY`].
const BATCH: usize = 25;
const BATCH_EVERY: Duration = Duration::from_millis(50);
/// Sockets (source ports) the flood is sent from, all on [`ATTACKER`].
const SOCKETS: usize = 16;
/// Bounds on the whole flood.
const MAX_PACKETS: u64 = 60_000;
const MAX_ATTACK_TIME: Duration = Duration::from_secs(120);
/// Retry engages within this of the flood starting.
const RAMP_LIMIT: Duration = Duration::from_secs(10);

/// QUIC v1 long-header packet types, from the first byte.
const LONG_HEADER: u8 = 0x80;
const TYPE_MASK: u8 = 0x30;
const RETRY: u8 = 0x30;

/// What the attacker sent and got back.
#[derive(Default)]
struct Tally {
    sent: AtomicU64,
    retries_received: AtomicU64,
    other_received: AtomicU64,
}

/// Captures [`INITIALS`] client Initial datagrams, each of a different
/// connection, by pointing a quinn client at a socket that never answers.
fn capture_initials(cert_pem: &str) -> Vec<Vec<u8>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(capture(cert_pem))
}

async fn capture(cert_pem: &str) -> Vec<Vec<u8>> {
    let sink = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let sink_addr = sink.local_addr().unwrap();
    let endpoint = h3_endpoint(cert_pem, IpAddr::V4(Ipv4Addr::LOCALHOST));
    let mut pending = Vec::with_capacity(INITIALS);
    let mut initials = Vec::with_capacity(INITIALS);
    let mut seen = HashSet::new();
    let mut buf = vec![0u8; 65536];
    let deadline = Instant::now() + Duration::from_secs(30);
    while initials.len() < INITIALS {
        assert!(
            Instant::now() < deadline,
            "captured only {} Initials",
            initials.len()
        );
        if pending.len() < INITIALS && pending.len() < initials.len() + 50 {
            pending.push(endpoint.connect(sink_addr, "localhost").unwrap());
            continue;
        }
        let len = sink.recv(&mut buf).await.unwrap();
        let datagram = &buf[..len];
        if seen.insert(destination_cid(datagram).to_vec()) {
            initials.push(datagram.to_vec());
        }
    }
    endpoint.close(0u32.into(), b"captured");
    initials
}

/// A long header's destination connection ID: after the first byte and the
/// four-byte version comes its length, then the ID.
fn destination_cid(datagram: &[u8]) -> &[u8] {
    let len = datagram[5] as usize;
    &datagram[6..6 + len]
}

/// The Initial flood, until stopped.
fn launch_flood(server: &LiveServer, initials: Arc<Vec<Vec<u8>>>) -> AttackThread<Tally> {
    let target = server.addr();
    AttackThread::launch(
        move |stop, tally| async move { flood(target, &initials, stop, tally).await },
    )
}

async fn flood(
    target: SocketAddr,
    initials: &[Vec<u8>],
    stop: CancellationToken,
    tally: Arc<Tally>,
) {
    let mut sockets = Vec::with_capacity(SOCKETS);
    for _ in 0..SOCKETS {
        let socket = Arc::new(UdpSocket::bind((ATTACKER, 0)).await.unwrap());
        tokio::spawn(count_replies(socket.clone(), tally.clone()));
        sockets.push(socket);
    }
    let began = Instant::now();
    let mut next = 0usize;
    let mut ticker = tokio::time::interval(BATCH_EVERY);
    // Late batches are not made up for in a burst (tokio's default).
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !stop.is_cancelled()
        && began.elapsed() < MAX_ATTACK_TIME
        && tally.sent.load(Ordering::Relaxed) < MAX_PACKETS
    {
        ticker.tick().await;
        for _ in 0..BATCH {
            let socket = &sockets[next % SOCKETS];
            if socket
                .send_to(&initials[next % initials.len()], target)
                .await
                .is_ok()
            {
                tally.sent.fetch_add(1, Ordering::Relaxed);
            }
            next += 1;
        }
    }
}

async fn count_replies(socket: Arc<UdpSocket>, tally: Arc<Tally>) {
    let mut buf = vec![0u8; 65536];
    while let Ok(len) = socket.recv(&mut buf).await {
        let first = buf[..len].first().copied().unwrap_or(0);
        let counter = match first & LONG_HEADER != 0 && first & TYPE_MASK == RETRY {
            true => &tally.retries_received,
            false => &tally.other_received,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Samples the server's open QUIC connections until stopped; the largest seen.
fn sample_quic_slots(server: &LiveServer, stop: &AtomicUsize) -> usize {
    let mut most = 0;
    while stop.load(Ordering::Relaxed) == 0 {
        most = most.max(server.open_connections().1);
        std::thread::sleep(Duration::from_millis(10));
    }
    most
}

#[test]
fn initial_flood_meets_retry_while_every_protocol_is_served() {
    let limits = attack_limits();
    let threshold = limits.quic_retry_threshold;
    let server = LiveServer::start(limits);
    let initials = Arc::new(capture_initials(&server.cert_pem()));

    let sampling_done = AtomicUsize::new(0);
    let mut tallies = Vec::new();
    let (comparison, most_slots) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| sample_quic_slots(&server, &sampling_done));
        let mut comparisons = server.quiet_versus_attacks(None, 1, |_, measure| {
            let retries_before = server.defence().quic_retries;
            let flood = launch_flood(&server, initials.clone());
            wait_for("Retry engages", RAMP_LIMIT, || {
                server.defence().quic_retries > retries_before
            });
            measure();
            tallies.push(flood.stop());
        });
        sampling_done.store(1, Ordering::Relaxed);
        (
            comparisons.pop().expect("one attack"),
            sampler.join().unwrap(),
        )
    });

    let sum = |count: fn(&Tally) -> &AtomicU64| sum_rounds(&tallies, count);
    let sent = sum(|t| &t.sent);
    let retries_seen = sum(|t| &t.retries_received);
    let defence = server.defence();
    eprintln!(
        "flood: {sent} Initials sent, {retries_seen} Retry packets back, {} other packets back; \
         most QUIC slots held {most_slots}; server: {defence:?}",
        sum(|t| &t.other_received)
    );
    assert!(
        most_slots <= threshold + LOAD_CONNECTIONS,
        "the flood held {most_slots} QUIC slots, over the Retry threshold {threshold}"
    );
    assert!(retries_seen > 0, "{defence:?}");
    assert!(
        defence.handshake_timeouts + defence.header_timeouts >= threshold as u64,
        "half-open handshakes are closed: {defence:?}"
    );

    assert_attack_contained(&comparison);
}
