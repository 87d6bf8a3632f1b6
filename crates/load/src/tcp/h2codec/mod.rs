//! HTTP/2 (RFC 9113) framing and HPACK (RFC 7541) for the load client,
//! sans I/O: the bytes a client writes (the preface, its SETTINGS, a
//! request's HEADERS and CONTINUATION frames, DATA frame headers, the
//! control frames it answers with), readers of the server's frame headers
//! and control payloads, and the HPACK decoder a connection's responses go
//! through ([`HpackDecoder`]). The connection's state machine (streams,
//! flow control, CONTINUATION assembly) is the caller's.
//!
//! The client's header blocks are stateless: they never insert into the
//! HPACK dynamic table, so the same request encodes to the same bytes on
//! every connection and the server's table size never matters. The server's
//! blocks may use a dynamic table as large as the default
//! SETTINGS_HEADER_TABLE_SIZE (4096), which the client keeps.

mod hpack;
mod table;

use std::fmt;

use crate::fields::FieldError;
pub(crate) use hpack::{HpackDecoder, HpackEncoder};

/// The client connection preface (RFC 9113 §3.4), which a SETTINGS frame
/// follows.
pub(crate) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame types (RFC 9113 §6).
pub(crate) mod frame {
    pub(crate) const DATA: u8 = 0x0;
    pub(crate) const HEADERS: u8 = 0x1;
    pub(crate) const PRIORITY: u8 = 0x2;
    pub(crate) const RST_STREAM: u8 = 0x3;
    pub(crate) const SETTINGS: u8 = 0x4;
    pub(crate) const PUSH_PROMISE: u8 = 0x5;
    pub(crate) const PING: u8 = 0x6;
    pub(crate) const GOAWAY: u8 = 0x7;
    pub(crate) const WINDOW_UPDATE: u8 = 0x8;
    pub(crate) const CONTINUATION: u8 = 0x9;
}

/// Frame flags (RFC 9113 §6); each means something only on some types.
pub(crate) mod flag {
    /// DATA, HEADERS: the sender's last frame on the stream.
    pub(crate) const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: an acknowledgement.
    pub(crate) const ACK: u8 = 0x1;
    /// HEADERS, CONTINUATION: the header block ends in this frame.
    pub(crate) const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS: a Pad Length byte starts the payload.
    pub(crate) const PADDED: u8 = 0x8;
    /// HEADERS: the (deprecated) priority fields follow Pad Length.
    pub(crate) const PRIORITY: u8 = 0x20;
}

/// The error codes this client sends or acts on (RFC 9113 §7; every
/// code is named in messages, `CODE_NAMES`).
pub(crate) mod code {
    pub(crate) const NO_ERROR: u32 = 0x0;
    pub(crate) const PROTOCOL_ERROR: u32 = 0x1;
    pub(crate) const FLOW_CONTROL_ERROR: u32 = 0x3;
    pub(crate) const FRAME_SIZE_ERROR: u32 = 0x6;
    pub(crate) const REFUSED_STREAM: u32 = 0x7;
    pub(crate) const CANCEL: u32 = 0x8;
    pub(crate) const COMPRESSION_ERROR: u32 = 0x9;
    pub(crate) const ENHANCE_YOUR_CALM: u32 = 0xb;
}

/// The RFC's names of the error codes, by value.
const CODE_NAMES: [&str; 14] = [
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
];

/// The SETTINGS parameters this client sends or acts on (RFC 9113 §6.5.2).
pub(crate) mod setting {
    pub(crate) const HEADER_TABLE_SIZE: u16 = 0x1;
    pub(crate) const ENABLE_PUSH: u16 = 0x2;
    pub(crate) const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub(crate) const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub(crate) const MAX_FRAME_SIZE: u16 = 0x5;
}

/// An error code as RFC 9113 §7 names it, `PROTOCOL_ERROR (0x1)`, or in
/// hex when it has no name (an extension's code): for messages, without
/// allocating until written.
pub(crate) fn code_name(code: u32) -> impl fmt::Display {
    struct Named(u32);
    impl fmt::Display for Named {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match usize::try_from(self.0).ok().and_then(|i| CODE_NAMES.get(i)) {
                Some(name) => write!(f, "{name} ({:#x})", self.0),
                None => write!(f, "{:#x}", self.0),
            }
        }
    }
    Named(code)
}

/// A protocol error: its code, a short sentence naming what was wrong, and
/// whether it ends the connection (GOAWAY) or only the stream (RST_STREAM,
/// RFC 9113 §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct H2Error {
    pub code: u32,
    pub reason: &'static str,
    pub connection: bool,
}

impl H2Error {
    /// A connection error (RFC 9113 §5.4.1).
    pub(crate) const fn connection(code: u32, reason: &'static str) -> Self {
        Self {
            code,
            reason,
            connection: true,
        }
    }

    /// A stream error (RFC 9113 §5.4.2).
    pub(crate) const fn stream(code: u32, reason: &'static str) -> Self {
        Self {
            code,
            reason,
            connection: false,
        }
    }
}

impl fmt::Display for H2Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", code_name(self.code), self.reason)
    }
}

impl std::error::Error for H2Error {}

/// A header block that does not decode breaks the connection's HPACK state:
/// COMPRESSION_ERROR for the connection (RFC 9113 §4.3). A malformed
/// message is the stream's PROTOCOL_ERROR (§8.1.1).
impl From<FieldError> for H2Error {
    fn from(err: FieldError) -> Self {
        match err {
            FieldError::Undecodable(reason) => Self::connection(code::COMPRESSION_ERROR, reason),
            FieldError::Malformed(reason) => Self::stream(code::PROTOCOL_ERROR, reason),
        }
    }
}

/// A frame's fixed 9-byte header (RFC 9113 §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameHeader {
    /// The payload's length (24 bits).
    pub len: u32,
    /// The frame type ([`frame`]).
    pub kind: u8,
    pub flags: u8,
    /// The stream identifier, without the reserved bit.
    pub stream: u32,
}

impl FrameHeader {
    /// A frame header's size.
    pub(crate) const LEN: usize = 9;

    /// The header `buf` starts with, or `None` while it holds less than 9
    /// bytes. The reserved bit is ignored, as the RFC says receivers must.
    pub(crate) fn parse(buf: &[u8]) -> Option<FrameHeader> {
        let bytes: &[u8; Self::LEN] = buf.get(..Self::LEN)?.try_into().ok()?;
        let [l0, l1, l2, kind, flags, s0, s1, s2, s3] = *bytes;
        Some(FrameHeader {
            len: u32::from_be_bytes([0, l0, l1, l2]),
            kind,
            flags,
            stream: u32::from_be_bytes([s0, s1, s2, s3]) & STREAM_ID_MASK,
        })
    }

    /// Appends the header, with the reserved bit 0.
    pub(crate) fn put(self, out: &mut Vec<u8>) {
        debug_assert!(self.len < 1 << 24, "a frame of {} bytes", self.len);
        out.extend_from_slice(&self.len.to_be_bytes()[1..]);
        out.extend_from_slice(&[self.kind, self.flags]);
        out.extend_from_slice(&(self.stream & STREAM_ID_MASK).to_be_bytes());
    }

    /// Whether `flag` is set.
    pub(crate) const fn has(self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// The 31 bits of a stream identifier, a window increment or a last
/// stream ID: the 32nd is reserved.
const STREAM_ID_MASK: u32 = (1 << 31) - 1;

/// Appends a whole frame with a small payload.
fn put_frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = payload.len() as u32;
    FrameHeader {
        len,
        kind,
        flags,
        stream,
    }
    .put(out);
    out.extend_from_slice(payload);
}

/// Appends the connection preface and a SETTINGS frame with these
/// parameters (RFC 9113 §3.4, §6.5), what a client sends first.
pub(crate) fn encode_preface(settings: &[(u16, u32)], out: &mut Vec<u8>) {
    out.extend_from_slice(PREFACE);
    FrameHeader {
        len: (settings.len() * 6) as u32,
        kind: frame::SETTINGS,
        flags: 0,
        stream: 0,
    }
    .put(out);
    for &(id, value) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

/// Appends a SETTINGS acknowledgement (RFC 9113 §6.5.3).
pub(crate) fn encode_settings_ack(out: &mut Vec<u8>) {
    put_frame(out, frame::SETTINGS, flag::ACK, 0, &[]);
}

/// Appends a WINDOW_UPDATE (RFC 9113 §6.9) for `stream`, 0 meaning the
/// connection; `increment` from 1 to 2^31 - 1.
pub(crate) fn encode_window_update(stream: u32, increment: u32, out: &mut Vec<u8>) {
    debug_assert!(
        (1..=STREAM_ID_MASK).contains(&increment),
        "a window increment of {increment}"
    );
    put_frame(
        out,
        frame::WINDOW_UPDATE,
        0,
        stream,
        &increment.to_be_bytes(),
    );
}

/// Appends the acknowledgement of a PING (RFC 9113 §6.7), echoing its 8
/// bytes.
pub(crate) fn encode_ping_ack(opaque: &[u8], out: &mut Vec<u8>) {
    debug_assert_eq!(opaque.len(), 8, "a PING carries 8 bytes");
    put_frame(out, frame::PING, flag::ACK, 0, opaque);
}

/// Appends a RST_STREAM (RFC 9113 §6.4) ending `stream` with `code`.
pub(crate) fn encode_rst_stream(stream: u32, code: u32, out: &mut Vec<u8>) {
    put_frame(out, frame::RST_STREAM, 0, stream, &code.to_be_bytes());
}

/// Appends a GOAWAY (RFC 9113 §6.8) naming the last stream the client
/// processed (0: it processes none, as it accepts no push) and `code`,
/// without debug data.
pub(crate) fn encode_goaway(last_stream: u32, code: u32, out: &mut Vec<u8>) {
    let mut payload = [0; 8];
    payload[..4].copy_from_slice(&(last_stream & STREAM_ID_MASK).to_be_bytes());
    payload[4..].copy_from_slice(&code.to_be_bytes());
    put_frame(out, frame::GOAWAY, 0, 0, &payload);
}

/// Appends a header block as a HEADERS frame (RFC 9113 §6.2), followed by
/// CONTINUATION frames (§6.10) when it exceeds the peer's
/// SETTINGS_MAX_FRAME_SIZE, `max_frame`. END_STREAM, when the request has
/// no body, goes on the HEADERS frame; END_HEADERS on the last frame.
pub(crate) fn encode_headers(
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame: u32,
    out: &mut Vec<u8>,
) {
    let max = (max_frame as usize).max(1);
    let frames = block.len().div_ceil(max).max(1);
    out.reserve(block.len() + frames * FrameHeader::LEN);
    let (mut kind, mut flags) = (
        frame::HEADERS,
        if end_stream { flag::END_STREAM } else { 0 },
    );
    let mut rest = block;
    loop {
        let (fragment, tail) = rest.split_at(rest.len().min(max));
        if tail.is_empty() {
            flags |= flag::END_HEADERS;
        }
        put_frame(out, kind, flags, stream, fragment);
        if tail.is_empty() {
            return;
        }
        (kind, flags, rest) = (frame::CONTINUATION, 0, tail);
    }
}

/// Appends a DATA frame header (RFC 9113 §6.1) for `len` bytes of content,
/// which the caller sends after it, unpadded.
pub(crate) fn encode_data_header(stream: u32, len: u32, end_stream: bool, out: &mut Vec<u8>) {
    FrameHeader {
        len,
        kind: frame::DATA,
        flags: if end_stream { flag::END_STREAM } else { 0 },
        stream,
    }
    .put(out);
}

/// The content of a DATA or HEADERS payload (the data, or the header block
/// fragment): without the padding (PADDED, RFC 9113 §6.1, §6.2) and, on
/// HEADERS, the deprecated priority fields (PRIORITY, §5.3.2), which are
/// ignored. Other types' payloads are returned whole. Padding as long as
/// the rest of the payload or longer is PROTOCOL_ERROR; a payload too
/// short for the Pad Length or priority fields is FRAME_SIZE_ERROR (§4.2);
/// both end the connection. Flow control counts the whole payload (§6.9).
pub(crate) fn strip_padding<'a>(
    header: &FrameHeader,
    payload: &'a [u8],
) -> Result<&'a [u8], H2Error> {
    const SHORT: H2Error = H2Error::connection(
        code::FRAME_SIZE_ERROR,
        "a DATA or HEADERS frame too short for its padding or priority fields",
    );
    let (padded, priority) = match header.kind {
        frame::DATA => (header.has(flag::PADDED), false),
        frame::HEADERS => (header.has(flag::PADDED), header.has(flag::PRIORITY)),
        _ => return Ok(payload),
    };
    let mut rest = payload;
    let mut pad = 0;
    if padded {
        let (&pad_len, tail) = rest.split_first().ok_or(SHORT)?;
        (pad, rest) = (usize::from(pad_len), tail);
    }
    if priority {
        // Stream Dependency (with E) and Weight: 5 bytes.
        rest = rest.get(5..).ok_or(SHORT)?;
    }
    let content_len = rest.len().checked_sub(pad).ok_or(H2Error::connection(
        code::PROTOCOL_ERROR,
        "padding as long as the frame payload or longer",
    ))?;
    Ok(&rest[..content_len])
}

/// The 4-byte payload of RST_STREAM (its error code) or WINDOW_UPDATE (its
/// increment, reserved bit included); another length is FRAME_SIZE_ERROR
/// for the connection (RFC 9113 §6.4, §6.9).
pub(crate) fn u32_payload(header: &FrameHeader, payload: &[u8]) -> Result<u32, H2Error> {
    let bytes: [u8; 4] = payload.try_into().map_err(|_| {
        H2Error::connection(
            code::FRAME_SIZE_ERROR,
            "a RST_STREAM or WINDOW_UPDATE payload that is not 4 bytes",
        )
    })?;
    if header.kind == frame::RST_STREAM && header.stream == 0 {
        return Err(H2Error::connection(
            code::PROTOCOL_ERROR,
            "a RST_STREAM on stream 0",
        ));
    }
    Ok(u32::from_be_bytes(bytes))
}

/// A SETTINGS frame's parameters (RFC 9113 §6.5), every one checked before
/// any is returned, so that a frame is applied whole or not at all: on
/// stream 0 (else PROTOCOL_ERROR), a multiple of 6 bytes (else
/// FRAME_SIZE_ERROR), and the values §6.5.2 bounds within their bounds:
/// ENABLE_PUSH 0 (a server may not enable it), INITIAL_WINDOW_SIZE at most
/// 2^31 - 1 (else FLOW_CONTROL_ERROR), MAX_FRAME_SIZE from 2^14 to
/// 2^24 - 1. Unknown parameters are returned too, for the caller to ignore
/// (§6.5.2). For a frame without ACK: an acknowledgement has no parameters.
pub(crate) fn parse_settings<'a>(
    header: &FrameHeader,
    payload: &'a [u8],
) -> Result<impl Iterator<Item = (u16, u32)> + 'a, H2Error> {
    if header.stream != 0 {
        return Err(H2Error::connection(
            code::PROTOCOL_ERROR,
            "SETTINGS on a stream",
        ));
    }
    if payload.len() % 6 != 0 {
        return Err(H2Error::connection(
            code::FRAME_SIZE_ERROR,
            "a SETTINGS payload that is not a multiple of 6 bytes",
        ));
    }
    let settings = payload.chunks_exact(6).map(|chunk| {
        let id = u16::from_be_bytes([chunk[0], chunk[1]]);
        (
            id,
            u32::from_be_bytes([chunk[2], chunk[3], chunk[4], chunk[5]]),
        )
    });
    for (id, value) in settings.clone() {
        check_setting(id, value)?;
    }
    Ok(settings)
}

/// Checks a server's setting against RFC 9113 §6.5.2.
fn check_setting(id: u16, value: u32) -> Result<(), H2Error> {
    match (id, value) {
        (setting::ENABLE_PUSH, 1..) => Err(H2Error::connection(
            code::PROTOCOL_ERROR,
            "a server's SETTINGS_ENABLE_PUSH that is not 0",
        )),
        (setting::INITIAL_WINDOW_SIZE, 0x8000_0000..) => Err(H2Error::connection(
            code::FLOW_CONTROL_ERROR,
            "SETTINGS_INITIAL_WINDOW_SIZE above 2^31 - 1",
        )),
        (setting::MAX_FRAME_SIZE, ..0x4000 | 0x100_0000..) => Err(H2Error::connection(
            code::PROTOCOL_ERROR,
            "SETTINGS_MAX_FRAME_SIZE outside 2^14 to 2^24 - 1",
        )),
        _ => Ok(()),
    }
}

/// A GOAWAY's last stream ID (without the reserved bit) and error code
/// (RFC 9113 §6.8); its debug data is skipped. On a stream, PROTOCOL_ERROR;
/// shorter than 8 bytes, FRAME_SIZE_ERROR.
pub(crate) fn parse_goaway(header: &FrameHeader, payload: &[u8]) -> Result<(u32, u32), H2Error> {
    if header.stream != 0 {
        return Err(H2Error::connection(
            code::PROTOCOL_ERROR,
            "GOAWAY on a stream",
        ));
    }
    let Some((fields, _debug)) = payload.split_first_chunk::<8>() else {
        return Err(H2Error::connection(
            code::FRAME_SIZE_ERROR,
            "a GOAWAY shorter than 8 bytes",
        ));
    };
    let [s0, s1, s2, s3, c0, c1, c2, c3] = *fields;
    let last = u32::from_be_bytes([s0, s1, s2, s3]) & STREAM_ID_MASK;
    Ok((last, u32::from_be_bytes([c0, c1, c2, c3])))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frames `bytes` holds, as (header, payload); they must be whole.
    fn frames(mut bytes: &[u8]) -> Vec<(FrameHeader, Vec<u8>)> {
        let mut frames = Vec::new();
        while !bytes.is_empty() {
            let header = FrameHeader::parse(bytes).expect("a whole frame header");
            let end = FrameHeader::LEN + header.len as usize;
            frames.push((header, bytes[FrameHeader::LEN..end].to_vec()));
            bytes = &bytes[end..];
        }
        frames
    }

    /// The payloads of `frames` end to end.
    fn payloads(frames: &[(FrameHeader, Vec<u8>)]) -> Vec<u8> {
        frames
            .iter()
            .flat_map(|(_, payload)| payload.clone())
            .collect()
    }

    fn header(len: u32, kind: u8, flags: u8, stream: u32) -> FrameHeader {
        FrameHeader {
            len,
            kind,
            flags,
            stream,
        }
    }

    #[test]
    fn frame_headers_parse_and_round_trip() {
        let bytes = [0x01, 0x02, 0x03, 0x01, 0x25, 0x80, 0x00, 0x00, 0x05, 0xaa];
        let parsed = FrameHeader::parse(&bytes).unwrap();
        assert_eq!(
            parsed,
            header(0x010203, frame::HEADERS, 0x25, 5),
            "R masked"
        );
        assert!(parsed.has(flag::PRIORITY) && parsed.has(flag::END_STREAM));
        assert!(!parsed.has(flag::PADDED));
        assert_eq!(FrameHeader::parse(&bytes[..8]), None, "8 bytes");
        assert_eq!(FrameHeader::parse(&[]), None);
        let mut out = Vec::new();
        parsed.put(&mut out);
        assert_eq!(out, [0x01, 0x02, 0x03, 0x01, 0x25, 0x00, 0x00, 0x00, 0x05]);
        let largest = header((1 << 24) - 1, 0xff, 0xff, (1 << 31) - 1);
        let mut out = Vec::new();
        largest.put(&mut out);
        assert_eq!(FrameHeader::parse(&out), Some(largest));
    }

    #[test]
    fn preface_and_control_frames_are_exact() {
        let mut out = Vec::new();
        encode_preface(
            &[
                (setting::ENABLE_PUSH, 0),
                (setting::INITIAL_WINDOW_SIZE, 0x20_0000),
            ],
            &mut out,
        );
        let mut expected = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        expected.extend_from_slice(&[0, 0, 12, 0x04, 0x00, 0, 0, 0, 0]);
        expected.extend_from_slice(&[0, 2, 0, 0, 0, 0, 0, 4, 0, 0x20, 0, 0]);
        assert_eq!(out, expected);
        type Encode = fn(&mut Vec<u8>);
        let cases: [(Encode, &[u8]); 6] = [
            (encode_settings_ack, &[0, 0, 0, 4, 1, 0, 0, 0, 0]),
            (
                |out| encode_window_update(3, 0x7fff_ffff, out),
                &[0, 0, 4, 8, 0, 0, 0, 0, 3, 0x7f, 0xff, 0xff, 0xff],
            ),
            (
                |out| encode_ping_ack(&[1, 2, 3, 4, 5, 6, 7, 8], out),
                &[0, 0, 8, 6, 1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8],
            ),
            (
                |out| encode_rst_stream(7, code::CANCEL, out),
                &[0, 0, 4, 3, 0, 0, 0, 0, 7, 0, 0, 0, 8],
            ),
            (
                |out| encode_goaway(0x8000_0009, code::ENHANCE_YOUR_CALM, out),
                &[0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0x0b],
            ),
            (
                |out| encode_data_header(1, 70_000, true, out),
                &[0x01, 0x11, 0x70, 0, 1, 0, 0, 0, 1],
            ),
        ];
        for (encode, bytes) in cases {
            let mut out = vec![0xee];
            encode(&mut out);
            assert_eq!(out[1..], *bytes);
        }
    }

    #[test]
    fn a_header_block_is_split_into_continuation_frames() {
        let block: Vec<u8> = (0..25).collect();
        let mut out = Vec::new();
        encode_headers(5, &block, true, 10, &mut out);
        let sent = frames(&out);
        let shape: Vec<_> = sent.iter().map(|(h, _)| (h.kind, h.flags, h.len)).collect();
        assert_eq!(
            shape,
            [
                (frame::HEADERS, flag::END_STREAM, 10),
                (frame::CONTINUATION, 0, 10),
                (frame::CONTINUATION, flag::END_HEADERS, 5),
            ]
        );
        assert!(sent.iter().all(|(h, _)| h.stream == 5));
        assert_eq!(payloads(&sent), block);
        for (len, max, count) in [(20, 10, 2), (10, 10, 1), (0, 10, 1), (3, 16_384, 1)] {
            let mut out = Vec::new();
            encode_headers(1, &block[..len], false, max, &mut out);
            let sent = frames(&out);
            assert_eq!(sent.len(), count, "{len} bytes in frames of {max}");
            let (first, last) = (sent[0].0, sent[count - 1].0);
            assert_eq!(first.kind, frame::HEADERS);
            assert!(!first.has(flag::END_STREAM), "the request has a body");
            assert_eq!(
                last.flags,
                flag::END_HEADERS,
                "{len} bytes in frames of {max}"
            );
            assert_eq!(payloads(&sent), &block[..len]);
        }
    }

    #[test]
    fn padding_and_priority_are_stripped() {
        let data = |flags| header(0, frame::DATA, flags, 1);
        let headers = |flags| header(0, frame::HEADERS, flags, 1);
        let padded = [3, b'a', b'b', 0, 0, 0];
        let with_priority = [2, 0x80, 0, 0, 3, 15, b'x', 0, 0];
        let ok =
            |header: FrameHeader, payload: &[u8]| strip_padding(&header, payload).unwrap().to_vec();
        assert_eq!(ok(data(0), b"abc"), b"abc");
        assert_eq!(ok(data(flag::PADDED), &padded), b"ab");
        assert_eq!(ok(data(flag::PADDED), &[2, 0, 0]), b"", "all padding");
        assert_eq!(ok(data(flag::PADDED), &[0, b'z']), b"z", "no padding");
        assert_eq!(ok(data(flag::PADDED | flag::PRIORITY), &padded), b"ab");
        assert_eq!(
            ok(headers(flag::PADDED | flag::PRIORITY), &with_priority),
            b"x"
        );
        assert_eq!(ok(headers(flag::PRIORITY), &with_priority[1..7]), b"x");
        assert_eq!(ok(headers(flag::END_HEADERS), b"\x82"), b"\x82");
        let settings = header(0, frame::SETTINGS, flag::PADDED, 0);
        assert_eq!(ok(settings, &[9]), [9], "not a padded type");
        let err =
            |header: FrameHeader, payload: &[u8]| strip_padding(&header, payload).unwrap_err();
        let past = err(data(flag::PADDED), &[3, 0, 0]);
        assert_eq!((past.code, past.connection), (code::PROTOCOL_ERROR, true));
        assert_eq!(err(data(flag::PADDED), &[255]).code, code::PROTOCOL_ERROR);
        let past_priority = err(
            headers(flag::PADDED | flag::PRIORITY),
            &[2, 0, 0, 0, 1, 15, 0],
        );
        assert_eq!(past_priority.code, code::PROTOCOL_ERROR);
        for (case, header, payload) in [
            ("no Pad Length", data(flag::PADDED), &[][..]),
            ("cut priority", headers(flag::PRIORITY), &[0, 0, 0, 1][..]),
            (
                "cut priority, padded",
                headers(flag::PADDED | flag::PRIORITY),
                &[0, 0, 0][..],
            ),
        ] {
            let short = err(header, payload);
            assert_eq!(
                (short.code, short.connection),
                (code::FRAME_SIZE_ERROR, true),
                "{case}"
            );
        }
    }

    #[test]
    fn control_payloads_are_read_and_checked() {
        let rst = header(4, frame::RST_STREAM, 0, 3);
        assert_eq!(u32_payload(&rst, &[0, 0, 0, 7]), Ok(code::REFUSED_STREAM));
        assert_eq!(
            u32_payload(&rst, &[0, 0, 7]).unwrap_err().code,
            code::FRAME_SIZE_ERROR
        );
        let rst_0 = header(4, frame::RST_STREAM, 0, 0);
        assert_eq!(
            u32_payload(&rst_0, &[0; 4]).unwrap_err().code,
            code::PROTOCOL_ERROR
        );
        let window = header(4, frame::WINDOW_UPDATE, 0, 0);
        assert_eq!(u32_payload(&window, &[0x80, 0, 0, 1]), Ok(0x8000_0001));
        let goaway = header(0, frame::GOAWAY, 0, 0);
        let payload = [0x80, 0, 0, 5, 0, 0, 0, 2, b'd', b'b', b'g'];
        assert_eq!(parse_goaway(&goaway, &payload), Ok((5, 0x2)));
        assert_eq!(
            parse_goaway(&goaway, &payload[..7]).unwrap_err().code,
            code::FRAME_SIZE_ERROR
        );
        let on_stream = header(0, frame::GOAWAY, 0, 1);
        assert_eq!(
            parse_goaway(&on_stream, &payload).unwrap_err().code,
            code::PROTOCOL_ERROR
        );
    }

    /// A SETTINGS payload of these parameters.
    fn settings(params: &[(u16, u32)]) -> Vec<u8> {
        params
            .iter()
            .flat_map(|(id, value)| [&id.to_be_bytes()[..], &value.to_be_bytes()].concat())
            .collect()
    }

    #[test]
    fn settings_are_read_whole_and_checked() {
        let frame_header = header(0, frame::SETTINGS, 0, 0);
        let read = |params: &[(u16, u32)]| {
            parse_settings(&frame_header, &settings(params))
                .map(|params| params.collect::<Vec<_>>())
        };
        let good = [
            (setting::MAX_CONCURRENT_STREAMS, 100),
            (setting::ENABLE_PUSH, 0),
            (setting::INITIAL_WINDOW_SIZE, 0x7fff_ffff),
            (setting::MAX_FRAME_SIZE, 16_384),
            (setting::MAX_FRAME_SIZE, (1 << 24) - 1),
            (0x4242, 7),
        ];
        assert_eq!(read(&good), Ok(good.to_vec()));
        assert_eq!(read(&[]), Ok(vec![]));
        for (params, code) in [
            ([(setting::ENABLE_PUSH, 1)], code::PROTOCOL_ERROR),
            (
                [(setting::INITIAL_WINDOW_SIZE, 0x8000_0000)],
                code::FLOW_CONTROL_ERROR,
            ),
            ([(setting::MAX_FRAME_SIZE, 16_383)], code::PROTOCOL_ERROR),
            ([(setting::MAX_FRAME_SIZE, 1 << 24)], code::PROTOCOL_ERROR),
        ] {
            let with_good = [&good[..], &params].concat();
            let err = read(&with_good).unwrap_err();
            assert_eq!((err.code, err.connection), (code, true), "{params:?}");
        }
        let cut = settings(&good);
        let err = parse_settings(&frame_header, &cut[..cut.len() - 1])
            .err()
            .unwrap();
        assert_eq!(err.code, code::FRAME_SIZE_ERROR);
        let on_stream = header(0, frame::SETTINGS, 0, 1);
        let err = parse_settings(&on_stream, &[]).err().unwrap();
        assert_eq!(err.code, code::PROTOCOL_ERROR);
    }

    #[test]
    fn errors_name_their_codes_as_the_rfc_does() {
        assert_eq!(code_name(code::NO_ERROR).to_string(), "NO_ERROR (0x0)");
        assert_eq!(
            code_name(code::PROTOCOL_ERROR).to_string(),
            "PROTOCOL_ERROR (0x1)"
        );
        assert_eq!(code_name(0xd).to_string(), "HTTP_1_1_REQUIRED (0xd)");
        assert_eq!(code_name(0xe).to_string(), "0xe");
        assert_eq!(code_name(u32::MAX).to_string(), "0xffffffff");
        for (value, name) in CODE_NAMES.iter().enumerate() {
            assert!(code_name(value as u32).to_string().starts_with(name));
        }
        let err = H2Error::stream(code::PROTOCOL_ERROR, "a second :status");
        assert_eq!(err.to_string(), "PROTOCOL_ERROR (0x1): a second :status");
        assert!(!err.connection);
        let undecodable = H2Error::from(FieldError::Undecodable("x"));
        assert_eq!(
            undecodable,
            H2Error::connection(code::COMPRESSION_ERROR, "x")
        );
        let malformed = H2Error::from(FieldError::Malformed("y"));
        assert_eq!(malformed, H2Error::stream(code::PROTOCOL_ERROR, "y"));
    }
}
