//! What the capture saw, as the server's TCP byte stream or its UDP
//! datagrams to the client, each byte or datagram with its arrival time.

use std::net::SocketAddrV4;

use super::timeline::{first_arrivals, Arrival, Nanos};

/// One IP packet as the client's interface received it.
#[derive(Debug, Clone)]
pub struct Captured {
    /// Kernel receive time.
    pub at: Nanos,
    /// The IPv4 packet.
    pub bytes: Vec<u8>,
}

/// The server-to-client TCP byte stream: its bytes, in stream order from
/// the first after the SYN, and when each first arrived.
#[derive(Debug, Clone, Default)]
pub struct TcpStream {
    /// Stream bytes; bytes never seen are zero and absent from `arrived`.
    pub bytes: Vec<u8>,
    /// First arrival of each byte range seen, disjoint, in offset order.
    pub arrived: Vec<Arrival>,
}

/// A transport header's ports and payload.
struct Segment<'a> {
    from: SocketAddrV4,
    seq: u32,
    syn: bool,
    payload: &'a [u8],
}

const TCP: u8 = 6;
const UDP: u8 = 17;

/// The server's TCP stream on the one connection from `server`.
pub fn tcp_stream(captured: &[Captured], server: SocketAddrV4) -> anyhow::Result<TcpStream> {
    let segments: Vec<(Nanos, Segment)> = captured
        .iter()
        .filter_map(|packet| Some((packet.at, tcp_segment(&packet.bytes)?)))
        .filter(|(_, segment)| segment.from == server)
        .collect();
    let isn = segments
        .iter()
        .find(|(_, segment)| segment.syn)
        .map(|(_, segment)| segment.seq)
        .ok_or_else(|| anyhow::anyhow!("the capture has no SYN-ACK from {server}"))?;
    let mut bytes = Vec::new();
    let mut arrivals = Vec::new();
    for (at, segment) in segments.iter().filter(|(_, s)| !s.payload.is_empty()) {
        let start = u64::from(segment.seq.wrapping_sub(isn).wrapping_sub(1));
        let end = start + segment.payload.len() as u64;
        if bytes.len() < end as usize {
            bytes.resize(end as usize, 0);
        }
        bytes[start as usize..end as usize].copy_from_slice(segment.payload);
        arrivals.push(Arrival {
            range: start..end,
            at: *at,
        });
    }
    Ok(TcpStream {
        bytes,
        arrived: first_arrivals(&arrivals),
    })
}

/// The payloads of UDP datagrams from `server`, with their arrival times.
pub fn udp_datagrams(captured: &[Captured], server: SocketAddrV4) -> Vec<(Nanos, &[u8])> {
    captured
        .iter()
        .filter_map(|packet| {
            let (from, payload) = udp_payload(&packet.bytes)?;
            (from == server).then_some((packet.at, payload))
        })
        .collect()
}

/// The source address, protocol and payload of an IPv4 packet.
fn ipv4(packet: &[u8]) -> Option<(std::net::Ipv4Addr, u8, &[u8])> {
    let version_ihl = *packet.first()?;
    if version_ihl >> 4 != 4 {
        return None;
    }
    let header_len = usize::from(version_ihl & 0x0f) * 4;
    let total_len = usize::from(u16::from_be_bytes([*packet.get(2)?, *packet.get(3)?]));
    let source: [u8; 4] = packet.get(12..16)?.try_into().ok()?;
    let protocol = *packet.get(9)?;
    Some((
        source.into(),
        protocol,
        packet.get(header_len..total_len.min(packet.len()))?,
    ))
}

fn tcp_segment(packet: &[u8]) -> Option<Segment<'_>> {
    let (source, protocol, tcp) = ipv4(packet)?;
    if protocol != TCP {
        return None;
    }
    let port = u16::from_be_bytes([*tcp.first()?, *tcp.get(1)?]);
    let seq = u32::from_be_bytes(tcp.get(4..8)?.try_into().ok()?);
    let header_len = usize::from(tcp.get(12)? >> 4) * 4;
    const SYN: u8 = 0x02;
    Some(Segment {
        from: SocketAddrV4::new(source, port),
        seq,
        syn: tcp.get(13)? & SYN != 0,
        payload: tcp.get(header_len..)?,
    })
}

fn udp_payload(packet: &[u8]) -> Option<(SocketAddrV4, &[u8])> {
    let (source, protocol, udp) = ipv4(packet)?;
    if protocol != UDP {
        return None;
    }
    let port = u16::from_be_bytes([*udp.first()?, *udp.get(1)?]);
    Some((SocketAddrV4::new(source, port), udp.get(8..)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hol::fixtures::{server, tcp, SERVER};

    #[test]
    fn tcp_stream_is_placed_from_the_isn_and_a_retransmission_keeps_the_first_time() {
        let isn = u32::MAX - 2; // wraps within the stream
        let packets = vec![
            tcp(isn, 0x12, b"", 0),
            tcp(isn.wrapping_add(1), 0x10, b"abc", 10),
            tcp(isn.wrapping_add(7), 0x10, b"ghi", 20),
            tcp(isn.wrapping_add(4), 0x10, b"def", 30),
            tcp(isn.wrapping_add(7), 0x10, b"ghi", 40),
        ];
        let stream = tcp_stream(&packets, server()).unwrap();
        assert_eq!(stream.bytes, b"abcdefghi");
        let times: Vec<(u64, Nanos)> = stream
            .arrived
            .iter()
            .map(|a| (a.range.start, a.at))
            .collect();
        assert_eq!(times, vec![(0, 10), (3, 30), (6, 20)]);
    }

    #[test]
    fn no_syn_ack_is_an_error_naming_the_server() {
        let packets = vec![tcp(5, 0x10, b"abc", 0)];
        let err = tcp_stream(&packets, server()).unwrap_err();
        assert!(err.to_string().contains(SERVER), "{err}");
    }
}
