//! NAT rebinding: the path's NAT forgets its mappings and gives every
//! client flow a new external port, as a home router that rebooted or a
//! carrier NAT whose mapping timed out does (RFC 9000 section 9.3).
//!
//! The mapping is a fixed bijection, so no table is kept: an internal
//! (ephemeral, >= 32768 on Linux) client port `p` leaves as `p ^ 0x8000`
//! (below 32768). Packets from the server to a port below 32768 are
//! translated back; packets to an old (>= 32768) port have no mapping any
//! more and are dropped, as the NAT would. IPv4 TCP and UDP only; other
//! packets pass untouched.

use super::Way;

/// The bit that separates internal ports (set) from external ones (clear).
const EXTERNAL_BIT: u16 = 0x8000;
const TCP: u8 = 6;
const UDP: u8 = 17;

/// What the NAT does with one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NatVerdict {
    /// Forward it (possibly rewritten).
    Forward,
    /// No mapping for its port: drop it.
    Drop,
}

/// Rewrites the client port of an IPv4 TCP/UDP `packet` crossing `way`
/// after a rebinding, fixing the transport checksum.
pub(crate) fn translate(packet: &mut [u8], way: Way) -> NatVerdict {
    let Some((port_at, checksum_at)) = client_port_offsets(packet, way) else {
        return NatVerdict::Forward;
    };
    let port = u16::from_be_bytes([packet[port_at], packet[port_at + 1]]);
    let internal = port & EXTERNAL_BIT != 0;
    if way == Way::Down && internal {
        return NatVerdict::Drop;
    }
    if way == Way::Up && !internal {
        return NatVerdict::Forward; // not an ephemeral port: no mapping
    }
    let new_port = port ^ EXTERNAL_BIT;
    packet[port_at..port_at + 2].copy_from_slice(&new_port.to_be_bytes());
    adjust_checksum(packet, checksum_at, port, new_port);
    NatVerdict::Forward
}

/// Offsets of the client's port (source going up, destination going down)
/// and of the transport checksum, for an unfragmented IPv4 TCP/UDP packet.
fn client_port_offsets(packet: &[u8], way: Way) -> Option<(usize, usize)> {
    let version = packet.first()? >> 4;
    let header_len = usize::from(packet.first()? & 0x0f) * 4;
    let fragment = u16::from_be_bytes([*packet.get(6)?, *packet.get(7)?]) & 0x1fff;
    if version != 4 || header_len < 20 || fragment != 0 {
        return None;
    }
    let checksum_at = match *packet.get(9)? {
        TCP => header_len + 16,
        UDP => header_len + 6,
        _ => return None,
    };
    let port_at = match way {
        Way::Up => header_len,
        Way::Down => header_len + 2,
    };
    (packet.len() >= checksum_at + 2).then_some((port_at, checksum_at))
}

/// RFC 1624 incremental update: HC' = ~(~HC + ~m + m'). A UDP checksum of
/// zero means "none" and stays zero; a computed zero is sent as 0xffff.
fn adjust_checksum(packet: &mut [u8], at: usize, old: u16, new: u16) {
    let checksum = u16::from_be_bytes([packet[at], packet[at + 1]]);
    let is_udp = packet[9] == UDP;
    if is_udp && checksum == 0 {
        return;
    }
    let mut sum = u32::from(!checksum) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let mut updated = !(sum as u16);
    if is_udp && updated == 0 {
        updated = 0xffff;
    }
    packet[at..at + 2].copy_from_slice(&updated.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT: [u8; 4] = [198, 18, 0, 1];
    const SERVER: [u8; 4] = [198, 18, 0, 2];

    /// One's-complement sum of 16-bit words.
    fn ones_sum(bytes: &[u8], mut sum: u32) -> u32 {
        for pair in bytes.chunks(2) {
            let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
            sum += u32::from(word);
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum
    }

    /// The transport checksum over the pseudo-header and segment, computed
    /// from scratch (0 when the packet's checksum is right).
    fn verify(packet: &[u8]) -> u16 {
        let segment = &packet[20..];
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&packet[12..20]);
        pseudo.extend_from_slice(&[0, packet[9]]);
        pseudo.extend_from_slice(&(segment.len() as u16).to_be_bytes());
        !(ones_sum(segment, ones_sum(&pseudo, 0)) as u16)
    }

    /// An IPv4 packet with a correct transport checksum.
    fn packet(protocol: u8, source: ([u8; 4], u16), dest: ([u8; 4], u16)) -> Vec<u8> {
        let transport_len = if protocol == TCP { 20 } else { 8 };
        let payload = b"hello, rebinding";
        let mut bytes = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, protocol, 0, 0];
        bytes.extend_from_slice(&source.0);
        bytes.extend_from_slice(&dest.0);
        let mut transport = vec![0u8; transport_len];
        transport[..2].copy_from_slice(&source.1.to_be_bytes());
        transport[2..4].copy_from_slice(&dest.1.to_be_bytes());
        if protocol == UDP {
            let len = (transport_len + payload.len()) as u16;
            transport[4..6].copy_from_slice(&len.to_be_bytes());
        } else {
            transport[12] = 5 << 4;
        }
        bytes.extend_from_slice(&transport);
        bytes.extend_from_slice(payload);
        let total = bytes.len() as u16;
        bytes[2..4].copy_from_slice(&total.to_be_bytes());
        let at = if protocol == TCP { 36 } else { 26 };
        let checksum = verify(&bytes);
        bytes[at..at + 2].copy_from_slice(&checksum.to_be_bytes());
        assert_eq!(verify(&bytes), 0);
        bytes
    }

    fn port(packet: &[u8], at: usize) -> u16 {
        u16::from_be_bytes([packet[at], packet[at + 1]])
    }

    #[test]
    fn outgoing_ephemeral_ports_get_a_new_external_port_with_a_valid_checksum() {
        for protocol in [TCP, UDP] {
            let mut up = packet(protocol, (CLIENT, 40_000), (SERVER, 443));
            assert_eq!(translate(&mut up, Way::Up), NatVerdict::Forward);
            assert_eq!(port(&up, 20), 40_000 ^ 0x8000);
            assert_eq!(port(&up, 22), 443);
            assert_eq!(verify(&up), 0, "protocol {protocol}");
        }
    }

    #[test]
    fn replies_to_the_new_port_reach_the_old_one_and_replies_to_the_old_port_are_dropped() {
        for protocol in [TCP, UDP] {
            let mut reply = packet(protocol, (SERVER, 443), (CLIENT, 40_000 ^ 0x8000));
            assert_eq!(translate(&mut reply, Way::Down), NatVerdict::Forward);
            assert_eq!(port(&reply, 22), 40_000);
            assert_eq!(verify(&reply), 0, "protocol {protocol}");
            let mut stale = packet(protocol, (SERVER, 443), (CLIENT, 40_000));
            assert_eq!(translate(&mut stale, Way::Down), NatVerdict::Drop);
        }
    }

    #[test]
    fn a_round_trip_through_the_nat_restores_the_packet() {
        let original = packet(TCP, (CLIENT, 51_234), (SERVER, 443));
        let mut outgoing = original.clone();
        translate(&mut outgoing, Way::Up);
        // Mirror it as the server's answer: swap addresses and ports.
        let mut answer = packet(TCP, (SERVER, 443), (CLIENT, port(&outgoing, 20)));
        translate(&mut answer, Way::Down);
        assert_eq!(port(&answer, 22), 51_234);
        assert_eq!(verify(&answer), 0);
    }

    #[test]
    fn other_packets_pass_untouched() {
        let low_port = packet(UDP, (CLIENT, 5_000), (SERVER, 443));
        let mut copy = low_port.clone();
        assert_eq!(translate(&mut copy, Way::Up), NatVerdict::Forward);
        assert_eq!(copy, low_port);
        let mut icmp = packet(UDP, (CLIENT, 40_000), (SERVER, 443));
        icmp[9] = 1;
        let before = icmp.clone();
        assert_eq!(translate(&mut icmp, Way::Up), NatVerdict::Forward);
        assert_eq!(icmp, before);
        let mut ipv6 = vec![0x60; 60];
        assert_eq!(translate(&mut ipv6, Way::Down), NatVerdict::Forward);
        assert_eq!(translate(&mut [], Way::Down), NatVerdict::Forward);
    }

    #[test]
    fn a_zero_udp_checksum_means_none_and_stays_zero() {
        let mut up = packet(UDP, (CLIENT, 40_000), (SERVER, 443));
        up[26..28].copy_from_slice(&[0, 0]);
        translate(&mut up, Way::Up);
        assert_eq!(port(&up, 26), 0);
    }
}
