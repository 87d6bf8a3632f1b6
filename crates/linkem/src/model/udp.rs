//! Networks that treat UDP apart from TCP: enterprise firewalls that block
//! it, middleboxes that let a UDP flow start and then cut it, and policers
//! that hold it to a rate. TCP passes as configured in every case, so a
//! path can ask what HTTP/3 costs users behind such a network. So does DNS
//! (UDP to or from port 53): such a network still resolves its users'
//! names, and a browser behind it still meets a site's `HTTPS` record.
//!
//! The policy applies to each direction on its own, after random loss (so
//! the loss draws, and with them the loss pattern of a seed, stay the same
//! whatever the policy) and before the bottleneck (a dropped datagram takes
//! no capacity).

use super::{Nanos, MILLI};

/// What the path does to UDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UdpPolicy {
    /// UDP passes as TCP does.
    #[default]
    Open,
    /// Every UDP packet is dropped.
    Blocked,
    /// The first `packets` UDP packets of each direction pass, the rest
    /// are dropped: a middlebox that lets a handshake through, then cuts
    /// the flow.
    BlockedAfter {
        /// Packets let through, per direction.
        packets: u64,
    },
    /// UDP beyond a rate is dropped, by a token bucket that holds
    /// [`POLICER_BURST`] of the rate (at least [`POLICER_MIN_BYTES`]).
    Throttle {
        /// The rate, in bits/s.
        bits_per_sec: u64,
    },
}

/// How much of its rate the policer lets through at once.
pub const POLICER_BURST: Nanos = 10 * MILLI;
/// The policer's smallest bucket: three full-sized packets.
pub const POLICER_MIN_BYTES: u64 = 3 * 1500;

impl UdpPolicy {
    /// Whether UDP passes as TCP does.
    pub fn is_open(&self) -> bool {
        *self == UdpPolicy::Open
    }
}

/// Which transport a packet carries, as far as the policy cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    /// UDP, which the policy applies to.
    Udp,
    /// Anything else, DNS over UDP included, which it leaves alone.
    Other,
}

/// DNS's port: UDP to or from it is not held to the policy.
const DNS_PORT: u16 = 53;

impl Transport {
    /// The transport of an IP packet (IPv4; anything else counts as other).
    pub fn of(packet: &[u8]) -> Transport {
        const UDP: u8 = 17;
        match (packet.first(), packet.get(9)) {
            (Some(&first), Some(&UDP)) if first >> 4 == 4 => {
                let header = usize::from(first & 0x0f) * 4;
                let port = |at: usize| {
                    let bytes = packet.get(header + at..header + at + 2)?;
                    Some(u16::from_be_bytes([bytes[0], bytes[1]]))
                };
                match (port(0), port(2)) {
                    (Some(DNS_PORT), _) | (_, Some(DNS_PORT)) => Transport::Other,
                    _ => Transport::Udp,
                }
            }
            _ => Transport::Other,
        }
    }
}

/// One direction's enforcement of a [`UdpPolicy`].
pub(crate) struct UdpGate {
    policy: UdpPolicy,
    /// UDP packets offered so far.
    seen: u64,
    /// The policer's bucket size, in bytes.
    capacity: f64,
    /// The policer's bucket, in bytes, as of `filled_at`.
    tokens: f64,
    filled_at: Nanos,
}

impl UdpGate {
    pub fn new(policy: UdpPolicy) -> UdpGate {
        let capacity = bucket_bytes(policy);
        UdpGate {
            policy,
            seen: 0,
            capacity,
            tokens: capacity,
            filled_at: 0,
        }
    }

    /// Whether a UDP packet of `len` bytes arriving at `at` passes.
    pub fn admit(&mut self, len: u32, at: Nanos) -> bool {
        self.seen += 1;
        match self.policy {
            UdpPolicy::Open => true,
            UdpPolicy::Blocked => false,
            UdpPolicy::BlockedAfter { packets } => self.seen <= packets,
            UdpPolicy::Throttle { bits_per_sec } => {
                let elapsed = at.saturating_sub(self.filled_at) as f64 / 1e9;
                self.tokens =
                    (self.tokens + elapsed * bits_per_sec as f64 / 8.0).min(self.capacity);
                self.filled_at = at;
                let passes = self.tokens >= f64::from(len);
                if passes {
                    self.tokens -= f64::from(len);
                }
                passes
            }
        }
    }
}

fn bucket_bytes(policy: UdpPolicy) -> f64 {
    match policy {
        UdpPolicy::Throttle { bits_per_sec } => {
            let burst = bits_per_sec as f64 / 8.0 * (POLICER_BURST as f64 / 1e9);
            burst.max(POLICER_MIN_BYTES as f64)
        }
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_to_or_from_port_53_is_not_held_to_the_policy() {
        // IPv4 with a 24-byte header (one option word), then UDP's ports.
        let mut packet = vec![0; 32];
        packet[0] = 0x46;
        packet[9] = 17;
        let with_ports = |source: u16, destination: u16| {
            let mut packet = packet.clone();
            packet[24..26].copy_from_slice(&source.to_be_bytes());
            packet[26..28].copy_from_slice(&destination.to_be_bytes());
            Transport::of(&packet)
        };
        assert_eq!(with_ports(40000, 53), Transport::Other);
        assert_eq!(with_ports(53, 40000), Transport::Other);
        assert_eq!(with_ports(40000, 443), Transport::Udp);
        // Ports read after the options: 53 inside the options is not DNS.
        let mut in_options = packet.clone();
        in_options[20..22].copy_from_slice(&53u16.to_be_bytes());
        assert_eq!(Transport::of(&in_options), Transport::Udp);
    }

    #[test]
    fn only_udp_over_ipv4_counts_as_udp() {
        let mut packet = vec![0x45; 20];
        packet[9] = 17;
        assert_eq!(Transport::of(&packet), Transport::Udp);
        packet[9] = 6;
        assert_eq!(Transport::of(&packet), Transport::Other);
        assert_eq!(Transport::of(&[]), Transport::Other);
    }

    #[test]
    fn blocked_after_lets_the_first_packets_through() {
        let mut gate = UdpGate::new(UdpPolicy::BlockedAfter { packets: 3 });
        let passed: Vec<bool> = (0..5).map(|i| gate.admit(1200, i * MILLI)).collect();
        assert_eq!(passed, [true, true, true, false, false]);
        let mut blocked = UdpGate::new(UdpPolicy::Blocked);
        assert!(!blocked.admit(100, 0));
        assert!(UdpGate::new(UdpPolicy::Open).admit(1500, 0));
    }

    #[test]
    fn the_policer_holds_udp_to_its_rate_after_one_burst() {
        let bits_per_sec = 8_000_000; // 1 MB/s
        let mut gate = UdpGate::new(UdpPolicy::Throttle { bits_per_sec });
        // Offered at 10 MB/s for 2 s: 1000-byte datagrams every 100 us.
        let offered = 20_000;
        let passed = (0..offered)
            .filter(|i| gate.admit(1000, i * 100_000))
            .count();
        // 2 s at 1 MB/s plus the bucket (10 ms of the rate: 10 kB).
        let expected = (2_000_000 + 10_000) / 1000;
        assert!(
            (passed as i64 - expected).abs() <= 2,
            "{passed} of {offered} passed, expected about {expected}"
        );
    }
}
