//! Receive offload as a NIC gives its host (GRO): consecutive packets of one
//! TCP or UDP flow that leave the link in the same instant reach the
//! receiving kernel as one large packet, so its stack and its sockets
//! handle a batch at a time instead of every packet. Without it, a QUIC
//! receiver pays one system call and one checksum per datagram where any
//! real network card would have coalesced them.
//!
//! The merged packet is a GSO packet behind a virtio-net header, which a
//! TUN device opened with `IFF_VNET_HDR` takes. The rules are those of
//! Linux's own GRO (`tcp_gro_receive`, `udp_gro_receive_segment`), the same
//! for both protocols: one flow and the same IP header fields, equal-sized
//! segments but the last, at most 64 segments and 64 KB; for TCP also
//! contiguous sequence numbers, one ACK number, one window and identical
//! options, and PSH or FIN only on the last segment. Anything else goes on
//! as it came. IPv4 without IP options only, as the emulated path is.

/// Bytes of the virtio-net header before every packet on a TUN device
/// opened with `IFF_VNET_HDR` (`struct virtio_net_hdr`).
pub const VNET_HEADER_LEN: usize = 10;

/// The header of a packet that is not a merged one: no GSO, checksum
/// already complete.
pub const PLAIN_HEADER: [u8; VNET_HEADER_LEN] = [0; VNET_HEADER_LEN];

/// The largest IP packet a GSO packet may be.
const MAX_MERGED_BYTES: usize = 65_535;
/// Linux's limit on the segments of one GSO packet (`UDP_MAX_SEGMENTS`,
/// also what TCP's GRO stops at).
const MAX_SEGMENTS: usize = 64;

const IP_HEADER_LEN: usize = 20;
const TCP: u8 = 6;
const UDP: u8 = 17;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_ACK: u8 = 0x10;

/// virtio-net header fields (linux/virtio_net.h).
const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;
const VIRTIO_NET_HDR_GSO_TCPV4: u8 = 1;
const VIRTIO_NET_HDR_GSO_UDP_L4: u8 = 5;

/// The fields of a TCP or UDP packet that decide whether it merges.
#[derive(Clone, Copy)]
struct Segment<'a> {
    ip_header: &'a [u8],
    protocol: u8,
    transport_header: &'a [u8],
    payload: &'a [u8],
}

impl<'a> Segment<'a> {
    /// An unfragmented IPv4 TCP or UDP packet without IP options that
    /// carries data; `None` for anything else.
    fn parse(packet: &'a [u8]) -> Option<Segment<'a>> {
        let ip_header = packet.get(..IP_HEADER_LEN)?;
        let total_len = usize::from(u16::from_be_bytes([ip_header[2], ip_header[3]]));
        let fragmented = u16::from_be_bytes([ip_header[6], ip_header[7]]) & 0x3fff != 0;
        if ip_header[0] != 0x45 || fragmented || total_len != packet.len() {
            return None;
        }
        let protocol = ip_header[9];
        let rest = &packet[IP_HEADER_LEN..];
        let transport_len = match protocol {
            TCP => usize::from(rest.get(12)? >> 4) * 4,
            UDP => 8,
            _ => return None,
        };
        if transport_len < 8 || rest.len() <= transport_len {
            return None;
        }
        if protocol == UDP && usize::from(u16::from_be_bytes([rest[4], rest[5]])) != rest.len() {
            return None;
        }
        Some(Segment {
            ip_header,
            protocol,
            transport_header: &rest[..transport_len],
            payload: &rest[transport_len..],
        })
    }

    fn tcp_flags(&self) -> u8 {
        self.transport_header[13]
    }

    fn tcp_sequence(&self) -> u32 {
        let h = self.transport_header;
        u32::from_be_bytes([h[4], h[5], h[6], h[7]])
    }

    /// Whether `next`, coming right after `self`, continues the batch
    /// that `first` starts.
    fn continued_by(&self, first: &Segment, next: &Segment) -> bool {
        let same_ip = next.ip_header[..2] == first.ip_header[..2]
            && next.ip_header[6..10] == first.ip_header[6..10]
            && next.ip_header[12..] == first.ip_header[12..];
        let full_sized =
            self.payload.len() == first.payload.len() && next.payload.len() <= first.payload.len();
        if !same_ip || !full_sized || next.protocol != first.protocol {
            return false;
        }
        let (a, b) = (first.transport_header, next.transport_header);
        if a[..4] != b[..4] {
            return false; // another flow
        }
        match first.protocol {
            UDP => true,
            _ => {
                self.tcp_flags() == TCP_ACK
                    && next.tcp_flags() & !(TCP_PSH | TCP_FIN) == TCP_ACK
                    && a[8..12] == b[8..12] // acknowledgement number
                    && a[12] == b[12] // header length
                    && a[14..16] == b[14..16] // window
                    && a[20..] == b[20..] // options
                    && next.tcp_sequence()
                        == self.tcp_sequence().wrapping_add(self.payload.len() as u32)
            }
        }
    }
}

/// How many packets from the start of `packets` merge into one (at least
/// one, when `packets` is not empty).
pub fn run_length<P: AsRef<[u8]>>(packets: &[P]) -> usize {
    let Some(first) = packets.first().and_then(|p| Segment::parse(p.as_ref())) else {
        return packets.len().min(1);
    };
    if first.protocol == TCP && first.tcp_flags() != TCP_ACK {
        return 1;
    }
    let headers = IP_HEADER_LEN + first.transport_header.len();
    let mut bytes = headers + first.payload.len();
    let mut previous = first;
    let mut count = 1;
    for packet in &packets[1..] {
        let Some(next) = Segment::parse(packet.as_ref()) else {
            break;
        };
        if count == MAX_SEGMENTS
            || bytes + next.payload.len() > MAX_MERGED_BYTES
            || !previous.continued_by(&first, &next)
        {
            break;
        }
        bytes += next.payload.len();
        count += 1;
        previous = next;
    }
    count
}

/// Writes into `out` the virtio-net header and GSO packet that carry
/// `packets`, a run [`run_length`] accepted (of at least two).
pub fn merge<P: AsRef<[u8]>>(packets: &[P], out: &mut Vec<u8>) {
    let first = Segment::parse(packets[0].as_ref()).expect("a run starts with a segment");
    let last = Segment::parse(packets[packets.len() - 1].as_ref()).expect("and ends with one");
    let transport_len = first.transport_header.len();
    let payload_len: usize = packets
        .iter()
        .map(|p| p.as_ref().len() - IP_HEADER_LEN - transport_len)
        .sum();
    let ip_len = IP_HEADER_LEN + transport_len + payload_len;
    let gso_type = match first.protocol {
        TCP => VIRTIO_NET_HDR_GSO_TCPV4,
        _ => VIRTIO_NET_HDR_GSO_UDP_L4,
    };
    let checksum_at = checksum_offset(first.protocol);

    out.clear();
    out.push(VIRTIO_NET_HDR_F_NEEDS_CSUM);
    out.push(gso_type);
    for field in [
        (IP_HEADER_LEN + transport_len) as u16, // hdr_len
        first.payload.len() as u16,             // gso_size
        IP_HEADER_LEN as u16,                   // csum_start
        checksum_at as u16,                     // csum_offset
    ] {
        out.extend_from_slice(&field.to_le_bytes());
    }

    let ip_start = out.len();
    out.extend_from_slice(first.ip_header);
    finish_ip_header(&mut out[ip_start..], ip_len);

    let transport_start = out.len();
    out.extend_from_slice(first.transport_header);
    let transport = &mut out[transport_start..];
    if first.protocol == TCP {
        transport[13] |= last.tcp_flags() & (TCP_PSH | TCP_FIN);
    } else {
        transport[4..6].copy_from_slice(&((ip_len - IP_HEADER_LEN) as u16).to_be_bytes());
    }
    // A partial checksum, as a sending stack leaves it for the card: the
    // pseudo-header's sum, which the kernel completes if it segments.
    let pseudo = pseudo_header_sum(first.ip_header, ip_len - IP_HEADER_LEN);
    transport[checksum_at..checksum_at + 2].copy_from_slice(&fold(pseudo).to_be_bytes());

    for packet in packets {
        out.extend_from_slice(&packet.as_ref()[IP_HEADER_LEN + transport_len..]);
    }
}

/// The packets a GSO packet stands for, as the kernel cuts it when it must:
/// `vnet_packet` is a virtio-net header and a packet (as [`merge`] writes
/// and a packet socket with `PACKET_VNET_HDR` reads). Each piece gets its
/// own lengths, sequence number and checksums, and TCP's PSH and FIN stay
/// on the last. `None` when the header is too short; a packet that is not
/// a GSO one comes back whole.
pub fn segment(vnet_packet: &[u8]) -> Option<Vec<Vec<u8>>> {
    let (header, packet) = vnet_packet.split_at_checked(VNET_HEADER_LEN)?;
    let gso_type = header[1];
    let gso_size = usize::from(u16::from_le_bytes([header[4], header[5]]));
    let protocol = *packet.get(9)?;
    let gso = matches!(
        (gso_type, protocol),
        (VIRTIO_NET_HDR_GSO_TCPV4, TCP) | (VIRTIO_NET_HDR_GSO_UDP_L4, UDP)
    );
    // Not the header's hdr_len: a packet socket puts the skb's linear
    // length there.
    let (headers_len, mut sequence) = match Segment::parse(packet) {
        Some(segment) if gso && gso_size > 0 => (
            IP_HEADER_LEN + segment.transport_header.len(),
            segment.tcp_sequence(),
        ),
        _ => return Some(vec![packet.to_vec()]),
    };
    let pieces: Vec<&[u8]> = packet[headers_len..].chunks(gso_size).collect();
    let mut out = Vec::with_capacity(pieces.len());
    for (i, payload) in pieces.iter().enumerate() {
        let mut piece = packet[..headers_len].to_vec();
        piece.extend_from_slice(payload);
        let total = piece.len();
        finish_ip_header(&mut piece[..IP_HEADER_LEN], total);
        if protocol == UDP {
            piece[24..26].copy_from_slice(&((total - IP_HEADER_LEN) as u16).to_be_bytes());
        } else {
            piece[24..28].copy_from_slice(&sequence.to_be_bytes());
            sequence = sequence.wrapping_add(payload.len() as u32);
            if i + 1 < pieces.len() {
                piece[33] &= !(TCP_PSH | TCP_FIN);
            }
        }
        set_transport_checksum(&mut piece);
        out.push(piece);
    }
    Some(out)
}

/// Where the checksum sits in a TCP or UDP header.
fn checksum_offset(protocol: u8) -> usize {
    match protocol {
        TCP => 16,
        _ => 6,
    }
}

/// The one's-complement sum of the pseudo-header of an IPv4 packet whose
/// TCP or UDP part is `transport_len` bytes.
fn pseudo_header_sum(ip_header: &[u8], transport_len: usize) -> u32 {
    ones_sum(&ip_header[12..20], 0) + u32::from(ip_header[9]) + transport_len as u32
}

/// Gives an IPv4 header (without options) its total length and checksum.
fn finish_ip_header(ip_header: &mut [u8], total_len: usize) {
    ip_header[2..4].copy_from_slice(&(total_len as u16).to_be_bytes());
    ip_header[10..12].fill(0);
    let checksum = !fold(ones_sum(&ip_header[..IP_HEADER_LEN], 0));
    ip_header[10..12].copy_from_slice(&checksum.to_be_bytes());
}

/// Computes and stores the full TCP or UDP checksum of an IPv4 `packet`.
fn set_transport_checksum(packet: &mut [u8]) {
    let at = IP_HEADER_LEN + checksum_offset(packet[9]);
    packet[at..at + 2].fill(0);
    let pseudo = pseudo_header_sum(&packet[..IP_HEADER_LEN], packet.len() - IP_HEADER_LEN);
    let checksum = !fold(ones_sum(&packet[IP_HEADER_LEN..], pseudo));
    packet[at..at + 2].copy_from_slice(&checksum.to_be_bytes());
}

fn ones_sum(bytes: &[u8], mut sum: u32) -> u32 {
    for pair in bytes.chunks(2) {
        sum += u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
    }
    sum
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT: [u8; 4] = [198, 18, 0, 1];
    const SERVER: [u8; 4] = [198, 18, 0, 2];

    fn ip_packet(protocol: u8, transport: &[u8], payload: &[u8]) -> Vec<u8> {
        let total = IP_HEADER_LEN + transport.len() + payload.len();
        let mut packet = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, protocol, 0, 0];
        packet[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        packet.extend_from_slice(&SERVER);
        packet.extend_from_slice(&CLIENT);
        packet.extend_from_slice(transport);
        packet.extend_from_slice(payload);
        packet
    }

    fn udp(source_port: u16, payload: &[u8]) -> Vec<u8> {
        let mut header = Vec::new();
        header.extend_from_slice(&source_port.to_be_bytes());
        header.extend_from_slice(&40_000u16.to_be_bytes());
        header.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        header.extend_from_slice(&[0x12, 0x34]);
        ip_packet(UDP, &header, payload)
    }

    fn tcp(sequence: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
        let mut header = Vec::new();
        header.extend_from_slice(&443u16.to_be_bytes());
        header.extend_from_slice(&40_000u16.to_be_bytes());
        header.extend_from_slice(&sequence.to_be_bytes());
        header.extend_from_slice(&7u32.to_be_bytes()); // ACK number
        header.extend_from_slice(&[0x80, flags, 0x01, 0xf5, 0, 0, 0, 0]);
        header.extend_from_slice(&[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 3]); // timestamps
        ip_packet(TCP, &header, payload)
    }

    fn tcp_run(count: usize, size: usize) -> Vec<Vec<u8>> {
        (0..count)
            .map(|i| tcp(1000 + (i * size) as u32, TCP_ACK, &vec![i as u8; size]))
            .collect()
    }

    #[test]
    fn equal_datagrams_of_one_flow_merge_and_a_shorter_one_ends_the_run() {
        let run = [
            udp(443, &[1; 1200]),
            udp(443, &[2; 1200]),
            udp(443, &[3; 700]),
        ];
        assert_eq!(run_length(&run), 3);
        let longer_after_shorter = [
            udp(443, &[1; 1200]),
            udp(443, &[2; 700]),
            udp(443, &[3; 700]),
        ];
        assert_eq!(run_length(&longer_after_shorter), 2);
        let larger_second = [udp(443, &[1; 700]), udp(443, &[2; 1200])];
        assert_eq!(run_length(&larger_second), 1);
    }

    #[test]
    fn another_flow_or_protocol_ends_a_run() {
        let flows = [
            udp(443, &[1; 1200]),
            udp(443, &[2; 1200]),
            udp(444, &[3; 1200]),
        ];
        assert_eq!(run_length(&flows), 2);
        let mixed = [udp(443, &[1; 1200]), tcp(1, TCP_ACK, &[2; 1200])];
        assert_eq!(run_length(&mixed), 1);
        let mut other_ttl = udp(443, &[2; 1200]);
        other_ttl[8] = 63;
        assert_eq!(run_length(&[udp(443, &[1; 1200]), other_ttl]), 1);
    }

    #[test]
    fn a_run_stops_at_64_segments_and_at_64_kb() {
        let small: Vec<_> = (0..70).map(|_| udp(443, &[0; 100])).collect();
        assert_eq!(run_length(&small), MAX_SEGMENTS);
        let large: Vec<_> = (0..70).map(|_| udp(443, &[0; 1472])).collect();
        assert_eq!(run_length(&large), (MAX_MERGED_BYTES - 28) / 1472);
    }

    #[test]
    fn tcp_merges_only_contiguous_pure_data_segments() {
        assert_eq!(run_length(&tcp_run(5, 1448)), 5);
        let mut gap = tcp_run(3, 1448);
        gap[2] = tcp(1000 + 3 * 1448, TCP_ACK, &[2; 1448]);
        assert_eq!(run_length(&gap), 2);
        let mut pushed = tcp_run(3, 1448);
        pushed[1] = tcp(1000 + 1448, TCP_ACK | TCP_PSH, &[1; 1448]);
        assert_eq!(run_length(&pushed), 2, "PSH ends a run after its segment");
        let mut syn = tcp_run(2, 1448);
        syn[0] = tcp(1000, 0x02 | TCP_ACK, &[0; 1448]);
        assert_eq!(run_length(&syn), 1);
        let mut other_options = tcp_run(2, 1448);
        let at = other_options[1].len() - 1448 - 1;
        other_options[1][at] = 4; // a later timestamp echo
        assert_eq!(run_length(&other_options), 1);
        let pure_acks = [tcp(1000, TCP_ACK, &[]), tcp(1000, TCP_ACK, &[])];
        assert_eq!(run_length(&pure_acks), 1);
    }

    #[test]
    fn a_plain_packet_segments_into_itself() {
        let mut vnet_packet = PLAIN_HEADER.to_vec();
        vnet_packet.extend_from_slice(&udp(443, &[5; 300]));
        assert_eq!(segment(&vnet_packet), Some(vec![udp(443, &[5; 300])]));
        assert_eq!(segment(&[0; 4]), None);
    }

    #[test]
    fn other_packets_go_alone() {
        let icmp = ip_packet(1, &[8, 0, 0, 0, 0, 0, 0, 0], &[0; 56]);
        assert_eq!(run_length(&[icmp.clone(), icmp]), 1);
        assert_eq!(run_length::<Vec<u8>>(&[]), 0);
        let mut fragment = udp(443, &[0; 1200]);
        fragment[6] = 0x20; // more fragments
        assert_eq!(run_length(&[fragment, udp(443, &[0; 1200])]), 1);
    }

    /// The packets as their sender's stack would have checksummed them.
    fn checksummed(mut packets: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        // Computed here, not with the module's helpers, so the tests check
        // them against an independent reckoning.
        for packet in &mut packets {
            let ip_checksum = !fold(ones_sum(&packet[..20], 0));
            packet[10..12].copy_from_slice(&ip_checksum.to_be_bytes());
            let at = if packet[9] == TCP { 36 } else { 26 };
            packet[at..at + 2].fill(0);
            let pseudo =
                ones_sum(&packet[12..20], 0) + u32::from(packet[9]) + (packet.len() - 20) as u32;
            let checksum = !fold(ones_sum(&packet[20..], pseudo));
            packet[at..at + 2].copy_from_slice(&checksum.to_be_bytes());
        }
        packets
    }

    #[test]
    fn a_merged_udp_run_segments_back_into_the_original_datagrams() {
        let run = checksummed(vec![
            udp(443, &[1; 120]),
            udp(443, &[2; 120]),
            udp(443, &[3; 9]),
        ]);
        let mut merged = Vec::new();
        merge(&run, &mut merged);
        assert_eq!(merged[1], VIRTIO_NET_HDR_GSO_UDP_L4);
        assert_eq!(merged.len(), VNET_HEADER_LEN + 28 + 249);
        assert_eq!(segment(&merged).as_ref(), Some(&run));
        // A packet socket reports the skb's linear length as hdr_len.
        merged[2..4].copy_from_slice(&999u16.to_le_bytes());
        assert_eq!(segment(&merged), Some(run));
    }

    #[test]
    fn the_partial_checksum_completes_to_the_merged_packets_own() {
        let run = [udp(443, &[1; 1200]), udp(443, &[2; 77])];
        let mut merged = Vec::new();
        merge(&run, &mut merged);
        let packet = &mut merged[VNET_HEADER_LEN..];
        // What the kernel does with CHECKSUM_PARTIAL: sum from csum_start
        // over the partial value and the data, complement, store.
        let completed = !fold(ones_sum(&packet[20..], 0));
        let udp_len = packet.len() - 20;
        packet[26..28].fill(0);
        let pseudo = ones_sum(&packet[12..20], 0) + u32::from(UDP) + udp_len as u32;
        assert_eq!(completed, !fold(ones_sum(&packet[20..], pseudo)));
    }

    #[test]
    fn a_merged_tcp_run_keeps_its_last_push_and_segments_back() {
        let mut run = tcp_run(3, 100);
        run[2] = tcp(1000 + 2 * 100, TCP_ACK | TCP_PSH, &[9; 30]);
        let run = checksummed(run);
        assert_eq!(run_length(&run), 3);
        let mut merged = Vec::new();
        merge(&run, &mut merged);
        assert_eq!(merged[1], VIRTIO_NET_HDR_GSO_TCPV4);
        assert_eq!(merged[VNET_HEADER_LEN + 33] & TCP_PSH, TCP_PSH);
        assert_eq!(segment(&merged), Some(run));
    }
}
