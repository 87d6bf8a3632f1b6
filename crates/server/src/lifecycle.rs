//! Shutdown signalling and connection admission shared by the TCP and QUIC shells.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Over-limit TCP connections answered with 503 at the same time; beyond this they are closed.
const BUSY_CONNECTIONS: usize = 64;

/// Every task the server runs, and the two stages of shutdown.
#[derive(Clone, Default)]
pub struct Lifecycle {
    /// Stop accepting; let in-flight requests finish.
    pub graceful: CancellationToken,
    /// The grace period is over: drop whatever is still running.
    pub hard: CancellationToken,
    pub tasks: TaskTracker,
}

/// Bounds open connections, TCP and QUIC together.
#[derive(Clone)]
pub struct Admission {
    open: Arc<Semaphore>,
    busy: Arc<Semaphore>,
}

/// A TCP connection's slot; dropping it frees the slot.
pub struct TcpTicket {
    /// Over the limit: every request gets 503 and the connection closes soon.
    pub busy: bool,
    _slot: OwnedSemaphorePermit,
}

impl Admission {
    pub fn new(max_connections: usize) -> Self {
        Self {
            open: Arc::new(Semaphore::new(max_connections)),
            busy: Arc::new(Semaphore::new(BUSY_CONNECTIONS)),
        }
    }

    /// `None`: even the 503 slots are full, so close the connection at once.
    pub fn admit_tcp(&self) -> Option<TcpTicket> {
        if let Ok(slot) = self.open.clone().try_acquire_owned() {
            return Some(TcpTicket {
                busy: false,
                _slot: slot,
            });
        }
        let slot = self.busy.clone().try_acquire_owned().ok()?;
        Some(TcpTicket {
            busy: true,
            _slot: slot,
        })
    }

    /// `None`: refuse the QUIC connection (CONNECTION_REFUSED).
    pub fn admit_quic(&self) -> Option<OwnedSemaphorePermit> {
        self.open.clone().try_acquire_owned().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_beyond_the_limit_are_busy_then_refused() {
        let admission = Admission::new(1);
        let first = admission.admit_tcp();
        assert!(first.as_ref().is_some_and(|t| !t.busy));
        assert!(admission.admit_quic().is_none());
        let busy: Vec<_> = (0..BUSY_CONNECTIONS)
            .map(|_| admission.admit_tcp())
            .collect();
        assert!(busy.iter().all(|t| t.as_ref().is_some_and(|t| t.busy)));
        assert!(admission.admit_tcp().is_none());
        drop(first);
        assert!(admission.admit_quic().is_some());
    }
}
