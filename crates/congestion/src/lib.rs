//! Congestion control for h3lab's QUIC endpoints, behind quinn's
//! controller interface.
//!
//! One controller lives here: [`Bbr`], BBR's model applied through the
//! window, because quinn 0.11 paces by the window and ignores a
//! controller's pacing rate (see [`bbr`]). It is what `--quic-cc bbr` and,
//! on a kernel whose TCP runs BBR, `--quic-cc auto` build, in the server
//! and the clients alike. quinn's own Cubic and NewReno are used as they
//! are.
//!
//! Not here: choosing a controller (the server's configuration does) or any
//! I/O. The controller is a state machine; its tests run in virtual time.

pub mod bbr;
#[cfg(test)]
mod path;

use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

use quinn_proto::congestion::{Controller, ControllerFactory};
use quinn_proto::RttEstimator;

pub use bbr::{Bbr, INITIAL_WINDOW};

/// Builds a [`Bbr`] for each new connection.
#[derive(Debug, Clone)]
pub struct BbrConfig {
    initial_window: u64,
}

impl BbrConfig {
    /// Starting from `initial_window` bytes ([`INITIAL_WINDOW`] by default).
    pub fn with_initial_window(initial_window: u64) -> BbrConfig {
        BbrConfig { initial_window }
    }
}

impl Default for BbrConfig {
    fn default() -> BbrConfig {
        BbrConfig::with_initial_window(INITIAL_WINDOW)
    }
}

impl ControllerFactory for BbrConfig {
    fn build(self: Arc<Self>, _now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(QuinnBbr(Bbr::new(self.initial_window, current_mtu)))
    }
}

/// [`Bbr`] behind quinn's [`Controller`] trait.
#[derive(Debug, Clone)]
struct QuinnBbr(Bbr);

impl Controller for QuinnBbr {
    fn on_sent(&mut self, now: Instant, _bytes: u64, _last_packet_number: u64) {
        self.0.on_sent(now);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        self.0
            .on_ack(now, sent, bytes, app_limited, rtt.min(), rtt.get());
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        _largest_packet_num_acked: Option<u64>,
    ) {
        self.0.on_end_acks(now, in_flight, app_limited);
    }

    fn on_congestion_event(
        &mut self,
        _now: Instant,
        _sent: Instant,
        is_persistent_congestion: bool,
        _lost_bytes: u64,
    ) {
        self.0.on_congestion_event(is_persistent_congestion);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.0.on_mtu_update(new_mtu);
    }

    fn window(&self) -> u64 {
        self.0.window()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.0.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
