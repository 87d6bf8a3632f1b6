//! Connection admission: TCP and QUIC each have their own limit and a
//! per-peer-address share of it, and unvalidated QUIC handshakes are counted
//! so that, past a threshold, new ones must prove their address (Retry).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::Limits;

/// Over-limit TCP connections answered with 503 at the same time; beyond this they are closed.
pub(crate) const BUSY_CONNECTIONS: usize = 64;

/// Why [`PeerSlots::take`] said no, or that it said yes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Admit,
    /// Every slot of the transport is taken.
    OverLimit,
    /// This peer address already holds its share.
    OverShare,
}

/// Open connections of one transport, in total and per peer address.
#[derive(Debug)]
pub(crate) struct PeerSlots {
    limit: usize,
    per_peer: usize,
    open: usize,
    by_peer: HashMap<IpAddr, usize>,
}

impl PeerSlots {
    pub(crate) fn new(limit: usize, per_peer: usize) -> Self {
        Self {
            limit,
            per_peer,
            open: 0,
            by_peer: HashMap::new(),
        }
    }

    /// Takes a slot for `peer` unless the transport or the peer's share is full.
    pub(crate) fn take(&mut self, peer: IpAddr) -> Verdict {
        if self.open >= self.limit {
            return Verdict::OverLimit;
        }
        let held = self.by_peer.entry(peer).or_default();
        if *held >= self.per_peer {
            return Verdict::OverShare;
        }
        *held += 1;
        self.open += 1;
        Verdict::Admit
    }

    /// Frees a slot [`PeerSlots::take`] gave `peer`.
    pub(crate) fn release(&mut self, peer: IpAddr) {
        let Some(held) = self.by_peer.get_mut(&peer) else {
            return;
        };
        *held -= 1;
        if *held == 0 {
            self.by_peer.remove(&peer);
        }
        self.open -= 1;
    }

    pub(crate) fn open(&self) -> usize {
        self.open
    }
}

type SharedSlots = Arc<Mutex<PeerSlots>>;

fn lock(slots: &SharedSlots) -> MutexGuard<'_, PeerSlots> {
    // The accounting stays consistent even if a holder panicked mid-way:
    // every method finishes its update before it can panic.
    slots
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A connection's slot in a [`PeerSlots`]; dropping it frees the slot.
pub struct Slot {
    slots: SharedSlots,
    peer: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.slots).release(self.peer);
    }
}

/// A TCP connection's place; dropping it frees it.
pub struct TcpTicket {
    /// Over the limit or the peer's share: every request gets 503 and the
    /// connection closes soon.
    pub busy: bool,
    _slot: Option<Slot>,
    _busy_slot: Option<OwnedSemaphorePermit>,
}

/// What happens to an incoming QUIC connection.
pub enum QuicAdmission {
    Accept(QuicTicket),
    /// Too many unvalidated handshakes: make the client prove its address.
    Retry,
    /// Over the limit or the peer's share: CONNECTION_REFUSED.
    Refuse,
}

/// A QUIC connection's slot, and while its address is unproven, its place
/// among the unvalidated handshakes.
pub struct QuicTicket {
    _slot: Slot,
    pub unvalidated: Option<Unvalidated>,
}

/// One unvalidated QUIC handshake in progress; drop it once the handshake
/// completes (the client has then proved its address) or fails.
pub struct Unvalidated(Arc<AtomicUsize>);

impl Drop for Unvalidated {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What the server did to connections that overstepped a limit, since start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefenceCounts {
    /// TCP connections over the limit or their peer's share, answered 503.
    pub tcp_busy: u64,
    /// TCP connections closed at once because the 503 slots were full too.
    pub tcp_closed: u64,
    /// QUIC connections refused (over the limit or their peer's share).
    pub quic_refused: u64,
    /// QUIC Initials answered with Retry.
    pub quic_retries: u64,
    /// Connections closed for not finishing the TLS or QUIC handshake in time.
    pub handshake_timeouts: u64,
    /// Connections closed for sending no complete request headers in time.
    pub header_timeouts: u64,
    /// TCP connections closed because their responses made no progress in time.
    pub send_stalls: u64,
    /// TCP connections closed because the client cancelled far more
    /// requests than it let complete (rapid reset).
    pub cancel_floods: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    tcp_busy: AtomicU64,
    tcp_closed: AtomicU64,
    quic_refused: AtomicU64,
    quic_retries: AtomicU64,
    pub(crate) handshake_timeouts: AtomicU64,
    pub(crate) header_timeouts: AtomicU64,
    pub(crate) send_stalls: AtomicU64,
    pub(crate) cancel_floods: AtomicU64,
}

impl Counters {
    pub(crate) fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> DefenceCounts {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        DefenceCounts {
            tcp_busy: read(&self.tcp_busy),
            tcp_closed: read(&self.tcp_closed),
            quic_refused: read(&self.quic_refused),
            quic_retries: read(&self.quic_retries),
            handshake_timeouts: read(&self.handshake_timeouts),
            header_timeouts: read(&self.header_timeouts),
            send_stalls: read(&self.send_stalls),
            cancel_floods: read(&self.cancel_floods),
        }
    }
}

/// Decides which connections are served, for both shells.
#[derive(Clone)]
pub struct Admission {
    tcp: SharedSlots,
    quic: SharedSlots,
    busy: Arc<Semaphore>,
    unvalidated: Arc<AtomicUsize>,
    retry_threshold: usize,
    pub(crate) counters: Arc<Counters>,
}

impl Admission {
    pub fn new(limits: &Limits) -> Self {
        Self {
            tcp: shared(
                limits.max_tcp_connections,
                limits.max_tcp_connections_per_peer,
            ),
            quic: shared(
                limits.max_quic_connections,
                limits.max_quic_connections_per_peer,
            ),
            busy: Arc::new(Semaphore::new(BUSY_CONNECTIONS)),
            unvalidated: Arc::default(),
            retry_threshold: limits.quic_retry_threshold,
            counters: Arc::default(),
        }
    }

    /// `None`: even the 503 slots are full, so close the connection at once.
    pub fn admit_tcp(&self, peer: IpAddr) -> Option<TcpTicket> {
        let peer = peer.to_canonical();
        if lock(&self.tcp).take(peer) == Verdict::Admit {
            return Some(TcpTicket {
                busy: false,
                _slot: Some(self.slot(&self.tcp, peer)),
                _busy_slot: None,
            });
        }
        let Ok(permit) = self.busy.clone().try_acquire_owned() else {
            Counters::count(&self.counters.tcp_closed);
            return None;
        };
        Counters::count(&self.counters.tcp_busy);
        Some(TcpTicket {
            busy: true,
            _slot: None,
            _busy_slot: Some(permit),
        })
    }

    /// Retry comes first: it is stateless, so an unproven address costs no slot.
    pub fn admit_quic(&self, peer: IpAddr, validated: bool) -> QuicAdmission {
        let peer = peer.to_canonical();
        if !validated && self.unvalidated.load(Ordering::Relaxed) >= self.retry_threshold {
            Counters::count(&self.counters.quic_retries);
            return QuicAdmission::Retry;
        }
        if lock(&self.quic).take(peer) != Verdict::Admit {
            Counters::count(&self.counters.quic_refused);
            return QuicAdmission::Refuse;
        }
        let unvalidated = (!validated).then(|| {
            self.unvalidated.fetch_add(1, Ordering::Relaxed);
            Unvalidated(self.unvalidated.clone())
        });
        QuicAdmission::Accept(QuicTicket {
            _slot: self.slot(&self.quic, peer),
            unvalidated,
        })
    }

    /// The slot [`PeerSlots::take`] just gave `peer`, freed on drop.
    fn slot(&self, slots: &SharedSlots, peer: IpAddr) -> Slot {
        Slot {
            slots: slots.clone(),
            peer,
        }
    }

    /// Open TCP and QUIC connections (503 ones not included).
    pub fn open(&self) -> (usize, usize) {
        (lock(&self.tcp).open(), lock(&self.quic).open())
    }
}

fn shared(limit: usize, per_peer: usize) -> SharedSlots {
    Arc::new(Mutex::new(PeerSlots::new(limit, per_peer)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));

    #[test]
    fn a_peer_is_held_to_its_share_and_others_get_the_rest() {
        let mut slots = PeerSlots::new(4, 2);
        assert_eq!(slots.take(A), Verdict::Admit);
        assert_eq!(slots.take(A), Verdict::Admit);
        assert_eq!(slots.take(A), Verdict::OverShare);
        assert_eq!(slots.take(B), Verdict::Admit);
        assert_eq!(slots.take(B), Verdict::Admit);
        assert_eq!(slots.take(B), Verdict::OverLimit);
        slots.release(A);
        assert_eq!((slots.open(), slots.by_peer[&A]), (3, 1));
        assert_eq!(slots.take(A), Verdict::Admit);
    }

    #[test]
    fn released_peers_are_forgotten() {
        let mut slots = PeerSlots::new(4, 4);
        slots.take(A);
        slots.release(A);
        assert!(slots.by_peer.is_empty());
        assert_eq!(slots.open(), 0);
    }

    #[test]
    fn default_share_lets_one_address_use_half_of_each_limit() {
        let limits = Limits::default();
        let mut slots = PeerSlots::new(
            limits.max_tcp_connections,
            limits.max_tcp_connections_per_peer,
        );
        let admitted = (0..limits.max_tcp_connections)
            .take_while(|_| slots.take(A) == Verdict::Admit)
            .count();
        assert_eq!(admitted, limits.max_tcp_connections / 2);
        assert_eq!(slots.take(B), Verdict::Admit);
    }

    fn tcp_only(limit: usize, per_peer: usize) -> Admission {
        Admission::new(&Limits {
            max_tcp_connections: limit,
            max_tcp_connections_per_peer: per_peer,
            ..Limits::default()
        })
    }

    #[test]
    fn tcp_beyond_the_limit_or_share_is_busy_then_closed() {
        let admission = tcp_only(2, 1);
        let first = admission.admit_tcp(A);
        assert!(first.as_ref().is_some_and(|t| !t.busy));
        let busy: Vec<_> = (0..BUSY_CONNECTIONS)
            .map(|_| admission.admit_tcp(A))
            .collect();
        assert!(busy.iter().all(|t| t.as_ref().is_some_and(|t| t.busy)));
        assert!(admission.admit_tcp(A).is_none());
        assert!(admission.admit_tcp(B).is_some_and(|t| !t.busy));
        let counts = admission.counters.snapshot();
        assert_eq!((counts.tcp_busy, counts.tcp_closed), (64, 1));
        drop(first);
        assert!(admission.admit_tcp(A).is_some_and(|t| !t.busy));
    }

    #[test]
    fn tcp_and_quic_limits_are_separate() {
        let admission = tcp_only(1, 1);
        let _tcp = admission.admit_tcp(A);
        let quic = admission.admit_quic(A, true);
        assert!(matches!(quic, QuicAdmission::Accept(_)));
        assert_eq!(admission.open(), (1, 1));
    }

    #[test]
    fn unvalidated_quic_past_the_threshold_is_retried_until_one_finishes() {
        let admission = Admission::new(&Limits {
            quic_retry_threshold: 1,
            ..Limits::default()
        });
        let QuicAdmission::Accept(first) = admission.admit_quic(A, false) else {
            panic!("the first unvalidated handshake is accepted");
        };
        assert!(first.unvalidated.is_some());
        assert!(matches!(
            admission.admit_quic(B, false),
            QuicAdmission::Retry
        ));
        let validated = admission.admit_quic(B, true);
        assert!(matches!(
            validated,
            QuicAdmission::Accept(QuicTicket {
                unvalidated: None,
                ..
            })
        ));
        drop(first);
        assert!(matches!(
            admission.admit_quic(B, false),
            QuicAdmission::Accept(_)
        ));
        assert_eq!(admission.counters.snapshot().quic_retries, 1);
    }

    #[test]
    fn quic_over_the_share_is_refused_and_counted() {
        let admission = Admission::new(&Limits {
            max_quic_connections_per_peer: 1,
            ..Limits::default()
        });
        let _first = admission.admit_quic(A, true);
        assert!(matches!(
            admission.admit_quic(A, true),
            QuicAdmission::Refuse
        ));
        assert_eq!(admission.counters.snapshot().quic_refused, 1);
    }

    #[test]
    fn zero_threshold_retries_every_unvalidated_handshake() {
        let admission = Admission::new(&Limits {
            quic_retry_threshold: 0,
            ..Limits::default()
        });
        assert!(matches!(
            admission.admit_quic(A, false),
            QuicAdmission::Retry
        ));
    }
}
