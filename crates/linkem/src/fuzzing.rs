//! The link model without a path: one direction driven in virtual time, as
//! the forwarding thread drives it, for `h3lab-fuzz` (feature `fuzzing`).
//!
//! Not for emulating a link: [`crate::EmulatedPath`] does that. This only
//! exposes the pure model, so a harness can offer any packet sequence and
//! check what leaves, and when.

use crate::config::LinkSettings;
use crate::model::{Direction, DirectionStats, Nanos, Pipe, Transport, Way};

/// One direction of the model a [`LinkSettings`] builds, holding packet ids
/// until their departure time.
pub struct VirtualDirection {
    pipe: Pipe<u64>,
}

impl VirtualDirection {
    /// The client-to-server direction.
    pub fn upstream(settings: &LinkSettings) -> VirtualDirection {
        VirtualDirection::new(settings, Way::Up)
    }

    /// The server-to-client direction.
    pub fn downstream(settings: &LinkSettings) -> VirtualDirection {
        VirtualDirection::new(settings, Way::Down)
    }

    fn new(settings: &LinkSettings, way: Way) -> VirtualDirection {
        let config = settings.build();
        let direction = match way {
            Way::Up => &config.up,
            Way::Down => &config.down,
        };
        VirtualDirection {
            pipe: Pipe::new(Direction::new(direction, config.seed, way)),
        }
    }

    /// Offers packet `id` of `len` bytes arriving at `now` (arrivals in
    /// non-decreasing time order); `false` when the link dropped it.
    pub fn offer(&mut self, id: u64, len: u32, now: Nanos) -> bool {
        self.pipe.push(id, len, Transport::Other, now).is_none()
    }

    /// When the next packet leaves, if any is waiting.
    pub fn next_due(&self) -> Option<Nanos> {
        self.pipe.next_due()
    }

    /// The next packet whose departure time has come by `now`.
    pub fn pop_due(&mut self, now: Nanos) -> Option<u64> {
        self.pipe.pop_due(now)
    }

    /// Packets still waiting to leave.
    pub fn waiting(&self) -> usize {
        self.pipe.len()
    }

    /// Packets sent twice so far.
    pub fn duplicated(&self) -> u64 {
        self.stats().duplicated
    }

    /// What the direction counted so far.
    pub fn stats(&self) -> &DirectionStats {
        self.pipe.direction().stats()
    }
}
