//! QUIC transport figures, read from quinn on each scrape: the live
//! connections' statistics plus the totals of the connections that closed.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, Weak};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use quinn::ConnectionStats;

/// Every QUIC connection the server has set up, live or closed.
#[derive(Debug)]
pub(super) struct QuicConnections {
    /// One lock for both, so a closing connection moves from `live` to
    /// `closed` without a scrape seeing it twice or not at all.
    state: Mutex<State>,
    /// Smoothed RTT and congestion window of each connection when it closed.
    rtt: Histogram,
    cwnd: Histogram,
}

#[derive(Debug, Default)]
struct State {
    live: HashMap<usize, Tracked>,
    closed: Totals,
}

#[derive(Debug)]
struct Tracked {
    connection: quinn::Connection,
    /// Where the connection was last seen from, to count migrations.
    remote: SocketAddr,
    migrations: u64,
}

impl Default for QuicConnections {
    fn default() -> Self {
        Self {
            state: Mutex::default(),
            // 100 µs to about 13 s.
            rtt: Histogram::new(exponential_buckets(1e-4, 2.0, 18)),
            // 1.2 KB to about 80 MB.
            cwnd: Histogram::new(exponential_buckets(1200.0, 2.0, 17)),
        }
    }
}

impl QuicConnections {
    pub(super) fn track(this: &Arc<Self>, connection: &quinn::Connection) -> QuicTrack {
        let id = connection.stable_id();
        let tracked = Tracked {
            connection: connection.clone(),
            remote: connection.remote_address(),
            migrations: 0,
        };
        this.lock().live.insert(id, tracked);
        QuicTrack {
            connections: Arc::downgrade(this),
            id,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The closed connections' totals plus every live connection's figures now.
    fn totals(&self) -> Totals {
        let mut state = self.lock();
        let mut totals = state.closed;
        for tracked in state.live.values_mut() {
            tracked.note_address();
            totals.add(&tracked.connection.stats(), tracked.migrations);
        }
        totals
    }
}

impl Tracked {
    /// quinn does not report migrations; the server sees one as a new
    /// remote address, which it checks on each request and scrape. The
    /// addresses before and after, if it moved.
    fn note_address(&mut self) -> Option<(SocketAddr, SocketAddr)> {
        let remote = self.connection.remote_address();
        if remote == self.remote {
            return None;
        }
        let from = std::mem::replace(&mut self.remote, remote);
        self.migrations += 1;
        Some((from, remote))
    }
}

/// Keeps a connection's figures in the scrape until dropped; then its final
/// figures go into the closed connections' totals.
pub struct QuicTrack {
    connections: Weak<QuicConnections>,
    id: usize,
}

impl QuicTrack {
    /// Notes the connection's current address (a request arrived on it);
    /// the addresses before and after, if it moved.
    pub fn saw_request(&self) -> Option<(SocketAddr, SocketAddr)> {
        let connections = self.connections.upgrade()?;
        let mut state = connections.lock();
        state.live.get_mut(&self.id)?.note_address()
    }
}

impl Drop for QuicTrack {
    fn drop(&mut self) {
        let Some(connections) = self.connections.upgrade() else {
            return;
        };
        let mut state = connections.lock();
        let Some(mut tracked) = state.live.remove(&self.id) else {
            return;
        };
        tracked.note_address();
        let stats = tracked.connection.stats();
        state.closed.add(&stats, tracked.migrations);
        state.closed.connections += 1;
        drop(state);
        connections.rtt.observe(stats.path.rtt.as_secs_f64());
        connections.cwnd.observe(stats.path.cwnd as f64);
    }
}

/// Counters summed over connections.
#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    connections: u64,
    migrations: u64,
    packets_sent: u64,
    packets_lost: u64,
    bytes_lost: u64,
    congestion_events: u64,
    datagrams_sent: u64,
    datagrams_received: u64,
    udp_send_calls: u64,
    udp_bytes_sent: u64,
    udp_bytes_received: u64,
    resets_received: u64,
    stop_sending_received: u64,
    path_challenges_received: u64,
}

impl Totals {
    fn add(&mut self, stats: &ConnectionStats, migrations: u64) {
        self.migrations += migrations;
        self.packets_sent += stats.path.sent_packets;
        self.packets_lost += stats.path.lost_packets;
        self.bytes_lost += stats.path.lost_bytes;
        self.congestion_events += stats.path.congestion_events;
        self.datagrams_sent += stats.udp_tx.datagrams;
        self.datagrams_received += stats.udp_rx.datagrams;
        self.udp_send_calls += stats.udp_tx.ios;
        self.udp_bytes_sent += stats.udp_tx.bytes;
        self.udp_bytes_received += stats.udp_rx.bytes;
        self.resets_received += stats.frame_rx.reset_stream;
        self.stop_sending_received += stats.frame_rx.stop_sending;
        self.path_challenges_received += stats.frame_rx.path_challenge;
    }

    /// `(name, help, value)` of each counter, in scrape order.
    fn counters(&self) -> [(&'static str, &'static str, u64); 13] {
        [
            ("quic_migrations", "Times a QUIC connection was seen from a new client address", self.migrations),
            ("quic_packets_sent", "QUIC packets sent", self.packets_sent),
            ("quic_packets_lost", "QUIC packets declared lost (their frames are sent again; quinn does not count retransmitted packets)", self.packets_lost),
            ("quic_lost_bytes", "Bytes in QUIC packets declared lost", self.bytes_lost),
            ("quic_congestion_events", "QUIC congestion events (window reductions)", self.congestion_events),
            ("quic_datagrams_sent", "UDP datagrams sent (a datagram may carry several QUIC packets)", self.datagrams_sent),
            ("quic_datagrams_received", "UDP datagrams received", self.datagrams_received),
            ("quic_udp_send_calls", "System calls that sent UDP datagrams: with GSO one call sends several", self.udp_send_calls),
            ("quic_udp_sent_bytes", "UDP payload bytes sent", self.udp_bytes_sent),
            ("quic_udp_received_bytes", "UDP payload bytes received", self.udp_bytes_received),
            ("quic_stream_resets_received", "RESET_STREAM frames received (the client abandoned a request body)", self.resets_received),
            ("quic_stop_sending_received", "STOP_SENDING frames received (the client abandoned a response)", self.stop_sending_received),
            ("quic_path_challenges_received", "PATH_CHALLENGE frames received", self.path_challenges_received),
        ]
    }
}

impl Collector for QuicConnections {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let totals = self.totals();
        for (name, help, value) in totals.counters() {
            let counter = ConstCounter::new(value);
            let metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
            counter.encode(metric)?;
        }
        let closed = ConstCounter::new(totals.connections);
        let metric = encoder.encode_descriptor(
            "quic_connections_closed",
            "QUIC connections closed after HTTP/3 set-up; the RTT and window histograms hold one value per closed connection",
            None,
            closed.metric_type(),
        )?;
        closed.encode(metric)?;
        let rtt = encoder.encode_descriptor(
            "quic_rtt_seconds",
            "Smoothed RTT of each QUIC connection when it closed",
            None,
            self.rtt.metric_type(),
        )?;
        self.rtt.encode(rtt)?;
        let cwnd = encoder.encode_descriptor(
            "quic_congestion_window_bytes",
            "Congestion window of each QUIC connection when it closed",
            None,
            self.cwnd.metric_type(),
        )?;
        self.cwnd.encode(cwnd)
    }
}
