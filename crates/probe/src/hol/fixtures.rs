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
