//! Made-up captures for the readers' tests: IPv4 and TCP packets, HTTP/2
//! frames and sealed TLS records, built as the server would send them.

use std::net::SocketAddrV4;

use super::keys::TrafficKeys;
use super::packets::Captured;
use super::timeline::Nanos;

/// The server's address in the made-up captures.
pub const SERVER: &str = "10.0.0.2:443";

pub fn server() -> SocketAddrV4 {
    SERVER.parse().expect("a socket address")
}

/// A TCP segment from the server, captured at `at`.
pub fn tcp(seq: u32, flags: u8, payload: &[u8], at: Nanos) -> Captured {
    let mut segment = vec![0u8; 20];
    segment[..2].copy_from_slice(&server().port().to_be_bytes());
    segment[4..8].copy_from_slice(&seq.to_be_bytes());
    segment[12] = 5 << 4;
    segment[13] = flags;
    segment.extend(payload);
    let mut packet = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 6, 0, 0];
    packet.extend(server().ip().octets());
    packet.extend([10, 0, 0, 1]);
    packet.extend(segment);
    let len = packet.len() as u16;
    packet[2..4].copy_from_slice(&len.to_be_bytes());
    Captured { at, bytes: packet }
}

/// An HTTP/2 frame.
pub fn h2_frame(kind: u8, flags: u8, id: u32, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut bytes = vec![len[1], len[2], len[3], kind, flags];
    bytes.extend(id.to_be_bytes());
    bytes.extend(payload);
    bytes
}

/// A TLS 1.3 record carrying `content` of inner type `inner`, sealed
/// with `keys` as record `sequence`.
pub fn tls_record(keys: &TrafficKeys, sequence: u64, inner: u8, content: &[u8]) -> Vec<u8> {
    let mut plain = content.to_vec();
    plain.push(inner);
    let len = (plain.len() + 16) as u16;
    let mut record = vec![23, 3, 3];
    record.extend(len.to_be_bytes());
    let sealed = keys.seal(sequence, &record, &plain);
    record.extend(sealed);
    record
}

/// A UDP datagram from the server, captured at `at`.
pub fn udp(payload: &[u8], at: Nanos) -> Captured {
    let mut datagram = vec![0u8; 8];
    datagram[..2].copy_from_slice(&server().port().to_be_bytes());
    datagram.extend(payload);
    let mut packet = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0];
    packet.extend(server().ip().octets());
    packet.extend([10, 0, 0, 1]);
    packet.extend(datagram);
    let len = packet.len() as u16;
    packet[2..4].copy_from_slice(&len.to_be_bytes());
    Captured { at, bytes: packet }
}

/// A QUIC Initial packet to the client's connection ID `cid`, with an
/// opaque payload (the reader only skips it).
pub fn quic_initial(cid: &[u8]) -> Vec<u8> {
    let mut packet = vec![0xc0, 0, 0, 0, 1, cid.len() as u8];
    packet.extend(cid);
    packet.extend([0, 0, 20]); // no source CID, no token, 20 bytes follow
    packet.extend([0u8; 20]);
    packet
}

/// A 1-RTT packet to `cid` with a 2-byte packet number, sealed with
/// `keys` (the key phase `phase`) and header-protected with `header`.
pub fn quic_short(
    header: &TrafficKeys,
    keys: &TrafficKeys,
    phase: bool,
    cid: &[u8],
    number: u64,
    frames: &[u8],
) -> Vec<u8> {
    let first = 0x40 | if phase { 0x04 } else { 0 } | 0x01;
    let mut packet = vec![first];
    packet.extend(cid);
    packet.extend((number as u16).to_be_bytes());
    let sealed = keys.seal(number, &packet, frames);
    let pn_offset = 1 + cid.len();
    packet.extend(sealed);
    let mask = header
        .mask(&packet[pn_offset + 4..pn_offset + 20])
        .expect("QUIC keys");
    packet[0] ^= mask[0] & 0x1f;
    packet[pn_offset] ^= mask[1];
    packet[pn_offset + 1] ^= mask[2];
    packet
}
