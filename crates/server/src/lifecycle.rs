//! Shutdown signalling shared by the TCP and QUIC shells.

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Every task the server runs, and the two stages of shutdown.
#[derive(Clone, Default)]
pub struct Lifecycle {
    /// Stop accepting; let in-flight requests finish.
    pub graceful: CancellationToken,
    /// The grace period is over: drop whatever is still running.
    pub hard: CancellationToken,
    pub tasks: TaskTracker,
}
