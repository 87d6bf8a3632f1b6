//! A raw HTTP/3 client for the abuse tests: a quinn connection from the
//! attacker's address on which stream types, frames and QPACK field sections
//! are written byte by byte, so a test can send what no well-behaved HTTP/3
//! stack (h3lab's own client included) would send.

use std::net::SocketAddr;
use std::time::Duration;

use crate::attack_common::{h3_endpoint, ATTACKER};

/// Frame types (RFC 9114 §7.2).
pub const DATA: u64 = 0x0;
pub const HEADERS: u64 = 0x1;
pub const SETTINGS: u64 = 0x4;
pub const GOAWAY: u64 = 0x7;
/// HTTP/2's PING: reserved in HTTP/3, forbidden everywhere (RFC 9114 §7.2.8).
pub const H2_PING: u64 = 0x6;
/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub const CONTROL_STREAM: u64 = 0x00;
pub const ENCODER_STREAM: u64 = 0x02;
/// HTTP/2's SETTINGS_ENABLE_PUSH: reserved in HTTP/3 (RFC 9114 §7.2.4.1).
pub const H2_ENABLE_PUSH: u64 = 0x2;

/// A reserved ("grease") frame or stream type, `0x1f * n + 0x21`: a
/// receiver must ignore it (RFC 9114 §7.2.8, §6.2.3).
pub fn reserved_type(n: u64) -> u64 {
    0x1f * n + 0x21
}

/// How long the server has to answer an attack by closing or resetting.
const ANSWER_LIMIT: Duration = Duration::from_secs(5);

/// A QUIC variable-length integer (RFC 9000 §16).
pub fn varint(value: u64) -> Vec<u8> {
    match value {
        0..=0x3f => vec![value as u8],
        0x40..=0x3fff => (0x4000 | value as u16).to_be_bytes().to_vec(),
        0x4000..=0x3fff_ffff => (0x8000_0000 | value as u32).to_be_bytes().to_vec(),
        _ => (0xc000_0000_0000_0000 | value).to_be_bytes().to_vec(),
    }
}

/// Reads one varint off the front of `bytes`.
fn take_varint(bytes: &mut &[u8]) -> u64 {
    let len = 1 << (bytes[0] >> 6);
    let mut value = u64::from(bytes[0] & 0x3f);
    for byte in &bytes[1..len] {
        value = value << 8 | u64::from(*byte);
    }
    *bytes = &bytes[len..];
    value
}

/// A frame: type, payload length, payload.
pub fn frame(frame_type: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = varint(frame_type);
    out.extend(varint(payload.len() as u64));
    out.extend_from_slice(payload);
    out
}

/// A frame header declaring `len` payload bytes, with none of them.
pub fn frame_header(frame_type: u64, len: u64) -> Vec<u8> {
    let mut out = varint(frame_type);
    out.extend(varint(len));
    out
}

/// An HPACK/QPACK prefixed integer (RFC 7541 §5.1) whose first byte
/// carries `flags` above its `prefix_bits`.
fn prefix_int(flags: u8, prefix_bits: u32, value: usize) -> Vec<u8> {
    let max = (1usize << prefix_bits) - 1;
    if value < max {
        return vec![flags | value as u8];
    }
    let mut out = vec![flags | max as u8];
    let mut rest = value - max;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
    out
}

/// A string literal, not Huffman-coded, behind a 7-bit length prefix.
fn string(value: &str) -> Vec<u8> {
    let mut out = prefix_int(0x00, 7, value.len());
    out.extend_from_slice(value.as_bytes());
    out
}

/// A GET for `path` as a QPACK field section that uses only the static table
/// (RFC 9204 §4.5): prefix 0/0, `:method GET` and `:scheme https` indexed,
/// `:authority` and `:path` as literals with static name references, and
/// `extra` as literals with literal names.
pub fn get(path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    request_head(17, path, extra)
}

/// A POST for `path`, as [`get`] writes a GET.
pub fn post(path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    request_head(20, path, extra)
}

/// A request head whose `:method` is the static table's entry `method`.
fn request_head(method: u8, path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut out = vec![0x00, 0x00, 0xc0 | method, 0xc0 | 23];
    for (index, value) in [(0, "localhost"), (1, path)] {
        out.extend(prefix_int(0x50, 4, index));
        out.extend(string(value));
    }
    out.extend(&literals(extra)[2..]);
    out
}

/// A field section of `fields` as literals with literal names (trailers).
pub fn literals(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = vec![0x00, 0x00];
    for (name, value) in fields {
        out.extend(prefix_int(0x20, 3, name.len()));
        out.extend_from_slice(name.as_bytes());
        out.extend(string(value));
    }
    out
}

/// A field section that needs one dynamic-table insert that never comes:
/// Required Insert Count 1 (encoded as 2), base 0, and a post-base index.
/// With a dynamic table capacity of 0 no insert can ever arrive.
pub fn dynamic_reference() -> Vec<u8> {
    vec![0x02, 0x00, 0x10]
}

/// The `:status` of a response field section that uses only the static
/// table, as h3's stateless encoder writes it: an indexed static field line,
/// or a static name reference to `:status` (index 24) with a plain or
/// Huffman-coded value.
pub fn status(field_section: &[u8]) -> u16 {
    let line = &field_section[2..];
    if line[0] & 0xc0 == 0xc0 {
        // A 6-bit prefix: index 63 and up continue in one more byte (the
        // static table ends at 98).
        let index = match line[0] & 0x3f {
            0x3f => 0x3f + line[1],
            index => index,
        };
        return indexed_status(index);
    }
    assert_eq!(&line[..2], &[0x5f, 24 - 15], "not a :status name reference");
    let (huffman, len) = (line[2] & 0x80 != 0, (line[2] & 0x7f) as usize);
    let value = &line[3..3 + len];
    match huffman {
        true => huffman_digits(value),
        false => std::str::from_utf8(value).unwrap().parse().unwrap(),
    }
}

/// The `:status` entries of the QPACK static table (RFC 9204 Appendix A).
fn indexed_status(index: u8) -> u16 {
    match index {
        24 => 103,
        25 => 200,
        26 => 304,
        27 => 404,
        28 => 503,
        63 => 100,
        64 => 204,
        65 => 206,
        66 => 302,
        67 => 400,
        68 => 403,
        69 => 421,
        70 => 425,
        71 => 500,
        other => panic!("static index {other} is not a :status"),
    }
}

/// Decodes a Huffman-coded run of digits (RFC 7541 Appendix B): '0'..'2'
/// are the 5-bit codes 0..2, '3'..'9' the 6-bit codes 0x19..0x1f; the
/// padding is all ones.
fn huffman_digits(bytes: &[u8]) -> u16 {
    let bits: Vec<u8> = bytes
        .iter()
        .flat_map(|byte| (0..8).rev().map(move |i| byte >> i & 1))
        .collect();
    let (mut value, mut at) = (0u16, 0);
    while at + 5 <= bits.len() && bits[at..at + 5].contains(&0) {
        let five = bits[at..at + 5].iter().fold(0, |code, bit| code << 1 | bit);
        let digit = match five {
            0..=2 => five,
            _ => (five << 1 | bits[at + 5]) - 0x19 + 3,
        };
        at += if five <= 2 { 5 } else { 6 };
        value = value * 10 + u16::from(digit);
    }
    value
}

/// One raw HTTP/3 connection from [`ATTACKER`].
pub struct RawH3 {
    pub connection: quinn::Connection,
}

impl RawH3 {
    pub async fn connect(server: SocketAddr, cert_pem: &str) -> Self {
        let endpoint = h3_endpoint(cert_pem, ATTACKER);
        let connection = endpoint
            .connect(server, "localhost")
            .unwrap()
            .await
            .unwrap();
        Self { connection }
    }

    /// A unidirectional stream of type `stream_type` carrying `bytes`, left open.
    pub async fn uni(&self, stream_type: u64, bytes: &[u8]) -> quinn::SendStream {
        let mut stream = self.connection.open_uni().await.unwrap();
        stream.write_all(&varint(stream_type)).await.unwrap();
        stream.write_all(bytes).await.unwrap();
        stream
    }

    /// The client's control stream with its (empty) SETTINGS, then `more`.
    pub async fn control(&self, more: &[u8]) -> quinn::SendStream {
        let mut first = frame(SETTINGS, &[]);
        first.extend_from_slice(more);
        self.uni(CONTROL_STREAM, &first).await
    }

    /// A request stream carrying `bytes`, finished.
    pub async fn request(&self, bytes: &[u8]) -> quinn::RecvStream {
        let (mut send, recv) = self.connection.open_bi().await.unwrap();
        send.write_all(bytes).await.unwrap();
        send.finish().unwrap();
        recv
    }

    /// The status of the response on `recv`.
    pub async fn response_status(mut recv: quinn::RecvStream) -> u16 {
        let read = tokio::time::timeout(ANSWER_LIMIT, recv.read_to_end(1 << 20));
        let bytes = read.await.expect("a response in time").unwrap();
        let mut rest = bytes.as_slice();
        assert_eq!(
            take_varint(&mut rest),
            HEADERS,
            "a response starts with HEADERS"
        );
        let len = take_varint(&mut rest) as usize;
        status(&rest[..len])
    }

    /// The application error code the server closes the connection with.
    pub async fn closed_with(&self) -> u64 {
        let closed = tokio::time::timeout(ANSWER_LIMIT, self.connection.closed());
        match closed
            .await
            .expect("the server closes the connection in time")
        {
            quinn::ConnectionError::ApplicationClosed(close) => close.error_code.into_inner(),
            other => panic!("expected an HTTP/3 application close, got {other}"),
        }
    }

    /// Whether the connection is still open (the server has not closed it).
    pub fn is_open(&self) -> bool {
        self.connection.close_reason().is_none()
    }
}

/// The code the server stops `stream` with (STOP_SENDING).
pub async fn stopped_with(stream: &quinn::SendStream) -> u64 {
    let stopped = tokio::time::timeout(ANSWER_LIMIT, stream.stopped());
    let code = stopped.await.expect("the server stops the stream in time");
    code.unwrap().expect("stopped, not finished").into_inner()
}
