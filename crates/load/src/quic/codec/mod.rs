//! HTTP/3 (RFC 9114) and QPACK (RFC 9204) framing for the load client,
//! sans I/O: the bytes a client writes (its control stream's opening, a
//! request's HEADERS frame, DATA frame headers) and incremental parsers of
//! what a server sends back (a request stream's response, the server's
//! unidirectional streams). Callers move the bytes and own the streams.
//!
//! The client announces a QPACK dynamic table capacity of 0 (the SETTINGS
//! default), so every field section it receives decodes statelessly from the
//! static table and literals: a section that needs the dynamic table is the
//! peer's error, and the encoder and decoder streams carry nothing the client
//! must act on. Its own sections use neither the dynamic table nor Huffman
//! coding, which need no state and cost a request only a few bytes.

mod qpack;
mod streams;

use std::fmt;

use http::header::HeaderName;
use http::request::Parts;

use crate::fields::{request_fields, FieldError};

pub(crate) use crate::head::Head;
use qpack::put_field;
pub(crate) use streams::{LastHead, ResponseParser, UniStreamParser};

/// HTTP/3 error codes (RFC 9114 §8.1) and QPACK's (RFC 9204 §6): those
/// these parsers return, and those a client closes or resets with.
pub(crate) mod code {
    /// A graceful close, or a stream no longer wanted.
    pub(crate) const H3_NO_ERROR: u64 = 0x100;
    /// A stream the connection needs (control, QPACK) was closed or reset.
    pub(crate) const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
    /// A frame that is not allowed in this state or on this stream.
    pub(crate) const H3_FRAME_UNEXPECTED: u64 = 0x105;
    /// A frame whose layout is wrong, or cut by its stream's end.
    pub(crate) const H3_FRAME_ERROR: u64 = 0x106;
    /// A stream or push ID used wrongly.
    pub(crate) const H3_ID_ERROR: u64 = 0x108;
    /// A SETTINGS frame's content is wrong.
    pub(crate) const H3_SETTINGS_ERROR: u64 = 0x109;
    /// The control stream does not open with SETTINGS.
    pub(crate) const H3_MISSING_SETTINGS: u64 = 0x10a;
    /// The server refused a request without processing it (safe to retry).
    pub(crate) const H3_REQUEST_REJECTED: u64 = 0x10b;
    /// A request or its response is no longer wanted.
    pub(crate) const H3_REQUEST_CANCELLED: u64 = 0x10c;
    /// A response larger than the client will hold (a stream error here).
    pub(crate) const H3_EXCESSIVE_LOAD: u64 = 0x107;
    /// A malformed message (RFC 9114 §4.1.2): a stream error.
    pub(crate) const H3_MESSAGE_ERROR: u64 = 0x10e;
    /// A field section that cannot be decoded.
    pub(crate) const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;
}

/// A protocol error: the code and a short sentence naming what was wrong.
/// Every code these parsers return is a connection error except
/// [`code::H3_MESSAGE_ERROR`] ([`H3Error::is_stream_error`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct H3Error {
    pub code: u64,
    pub reason: &'static str,
}

impl H3Error {
    /// An error with this code and reason.
    pub(crate) const fn new(code: u64, reason: &'static str) -> Self {
        Self { code, reason }
    }

    /// Whether the stream is aborted and the connection kept: so for a
    /// malformed message (RFC 9114 §4.1.2) and a response head too large
    /// to hold, and no other error here.
    pub(crate) fn is_stream_error(&self) -> bool {
        matches!(self.code, code::H3_MESSAGE_ERROR | code::H3_EXCESSIVE_LOAD)
    }
}

impl fmt::Display for H3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (HTTP/3 error {:#x})", self.reason, self.code)
    }
}

impl std::error::Error for H3Error {}

/// A field section that does not decode is QPACK's error, a malformed
/// one the stream's.
impl From<FieldError> for H3Error {
    fn from(err: FieldError) -> Self {
        match err {
            FieldError::Undecodable(reason) => qpack(reason),
            FieldError::Malformed(reason) => malformed(reason),
        }
    }
}

/// A malformed message (RFC 9114 §4.1.2).
const fn malformed(reason: &'static str) -> H3Error {
    H3Error::new(code::H3_MESSAGE_ERROR, reason)
}

/// A field section that does not decode (RFC 9204 §2.2).
const fn qpack(reason: &'static str) -> H3Error {
    H3Error::new(code::QPACK_DECOMPRESSION_FAILED, reason)
}

/// A frame where the RFC does not allow it (RFC 9114 §7.2).
const fn unexpected(reason: &'static str) -> H3Error {
    H3Error::new(code::H3_FRAME_UNEXPECTED, reason)
}

/// A frame whose payload is cut or overlong (RFC 9114 §7.1).
const fn frame_error(reason: &'static str) -> H3Error {
    H3Error::new(code::H3_FRAME_ERROR, reason)
}

/// Frame types (RFC 9114 §7.2).
mod frame {
    pub(crate) const DATA: u64 = 0x00;
    pub(crate) const HEADERS: u64 = 0x01;
    pub(crate) const CANCEL_PUSH: u64 = 0x03;
    pub(crate) const SETTINGS: u64 = 0x04;
    pub(crate) const PUSH_PROMISE: u64 = 0x05;
    pub(crate) const GOAWAY: u64 = 0x07;
    pub(crate) const MAX_PUSH_ID: u64 = 0x0d;
}

/// HTTP/2's PRIORITY, PING, WINDOW_UPDATE and CONTINUATION, which HTTP/3
/// reserves: receiving one is H3_FRAME_UNEXPECTED on any stream (§7.2.8).
const fn is_http2_frame(ty: u64) -> bool {
    matches!(ty, 0x02 | 0x06 | 0x08 | 0x09)
}

/// A QUIC variable-length integer (RFC 9000 §16) in its shortest form: the
/// bytes and how many of them are used.
fn varint_bytes(value: u64) -> ([u8; 8], usize) {
    debug_assert!(value < 1 << 62, "{value} is past QUIC's 62-bit integers");
    let (tag, len) = match value {
        0..=0x3f => (0x00, 1),
        0x40..=0x3fff => (0x40, 2),
        0x4000..=0x3fff_ffff => (0x80, 4),
        _ => (0xc0, 8),
    };
    let mut bytes = [0; 8];
    bytes[..len].copy_from_slice(&value.to_be_bytes()[8 - len..]);
    bytes[0] |= tag;
    (bytes, len)
}

/// Appends `value` as a QUIC variable-length integer.
fn put_varint(value: u64, out: &mut Vec<u8>) {
    let (bytes, len) = varint_bytes(value);
    out.extend_from_slice(&bytes[..len]);
}

/// The variable-length integer `buf` starts with, and its size; `None`
/// while `buf` holds only part of it.
fn varint(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let size = 1 << (first >> 6);
    let rest = buf.get(1..size)?;
    let value = rest.iter().fold(u64::from(first & 0x3f), |value, &b| {
        (value << 8) | u64::from(b)
    });
    Some((value, size))
}

/// Two variable-length integers back to back, the shape of a frame header
/// (type, length) and of a setting (identifier, value).
fn varint_pair(buf: &[u8]) -> Option<((u64, u64), usize)> {
    let (first, n) = varint(buf)?;
    let (second, m) = varint(&buf[n..])?;
    Some(((first, second), n + m))
}

/// How many of `available` bytes belong to a payload with `left` to go.
fn payload_part(left: u64, available: usize) -> usize {
    usize::try_from(left).map_or(available, |left| left.min(available))
}

/// Takes up to `left` bytes off the front of `input`, returning how many.
fn consume(input: &mut &[u8], left: u64) -> u64 {
    let n = payload_part(left, input.len());
    *input = &input[n..];
    n as u64
}

/// The state a frame payload with `left` bytes to go is in: `going` while
/// bytes remain, else `done` (so that empty payloads need no step).
fn payload<S>(left: u64, going: fn(u64) -> S, done: S) -> S {
    if left == 0 {
        done
    } else {
        going(left)
    }
}

/// The start of an item made of varints (at most 16 bytes) that a feed's
/// end cut in two, kept inline so that a cut costs no allocation.
#[derive(Default)]
struct Split {
    bytes: [u8; 16],
    len: usize,
}

impl Split {
    /// The item `parse` reads from the bytes kept so far followed by
    /// `input`, advancing `input` past the bytes the item took. Without
    /// enough bytes, keeps all of `input` and returns `None`.
    fn read<T>(&mut self, input: &mut &[u8], parse: fn(&[u8]) -> Option<(T, usize)>) -> Option<T> {
        let kept = self.len;
        let added = input.len().min(self.bytes.len() - kept);
        let mut joined = self.bytes;
        joined[kept..kept + added].copy_from_slice(&input[..added]);
        match parse(&joined[..kept + added]) {
            Some((item, size)) => {
                *input = &input[size - kept..];
                self.len = 0;
                Some(item)
            }
            None => {
                self.bytes = joined;
                self.len = kept + added;
                *input = &input[added..];
                None
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The bytes a client's control stream opens with (RFC 9114 §6.2.1): stream
/// type 0x00 and an empty SETTINGS frame. Every setting keeps its default:
/// QPACK_MAX_TABLE_CAPACITY and QPACK_BLOCKED_STREAMS 0, so the server's
/// field sections cannot use a dynamic table; MAX_FIELD_SECTION_SIZE
/// unlimited. (No GREASE setting: the RFC's SHOULD is for exercising peers,
/// which is not a load generator's job.)
pub(crate) fn control_stream_preamble() -> Vec<u8> {
    vec![0x00, frame::SETTINGS as u8, 0x00]
}

/// Appends a DATA frame header (RFC 9114 §7.2.1) for a payload of `len`
/// bytes, which the caller sends after it.
pub(crate) fn encode_data_header(len: u64, out: &mut Vec<u8>) {
    put_varint(frame::DATA, out);
    put_varint(len, out);
}

/// Appends a HEADERS frame (RFC 9114 §7.2.2) carrying `parts` as a QPACK
/// field section (RFC 9204 §4.5) with Required Insert Count 0 and Base 0:
/// the field lines [`request_fields`] lists.
pub(crate) fn encode_request(parts: &Parts, out: &mut Vec<u8>) {
    put_varint(frame::HEADERS, out);
    let start = out.len();
    out.extend_from_slice(&[0x00, 0x00]);
    request_fields(parts, |name, value| put_field(out, name, value));
    // The length goes before the section, whose size is known only now:
    // shifting a request's few dozen bytes once beats encoding it twice.
    let (len, size) = varint_bytes((out.len() - start) as u64);
    out.splice(start..start, len[..size].iter().copied());
}

#[cfg(test)]
mod tests {
    use super::qpack::*;
    use super::streams::*;
    use super::*;
    use crate::fields::testing::{busy_request, head, parts, Lcg};
    use crate::fields::{put_int, put_string, Text, NAME_BUF};
    use http::header::HeaderValue;

    static WANTED: [HeaderName; 1] = [HeaderName::from_static("server-timing")];

    /// A frame of type `ty` around `payload`.
    fn frame(ty: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(ty, &mut out);
        put_varint(payload.len() as u64, &mut out);
        out.extend_from_slice(payload);
        out
    }

    /// A field section of these field lines, encoded as requests are.
    fn section(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut out = vec![0x00, 0x00];
        for (name, value) in fields {
            put_field(&mut out, name, value.as_bytes());
        }
        out
    }

    fn headers(fields: &[(&str, &str)]) -> Vec<u8> {
        frame(frame::HEADERS, &section(fields))
    }

    fn huffman_encode(text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        httlib_huffman::encode(text.as_bytes(), &mut out).unwrap();
        out
    }

    /// A literal field line with a literal name, both Huffman-coded.
    fn huffman_literal(out: &mut Vec<u8>, name: &str, value: &str) {
        let name = huffman_encode(name);
        put_int(out, 0x28, 3, name.len() as u64);
        out.extend_from_slice(&name);
        huffman_value(out, value);
    }

    /// A Huffman-coded value string literal.
    fn huffman_value(out: &mut Vec<u8>, value: &str) {
        let value = huffman_encode(value);
        put_int(out, 0x80, 7, value.len() as u64);
        out.extend_from_slice(&value);
    }

    /// A request's HEADERS frame decoded back into (name, value) strings by
    /// the response side's section walk.
    fn request_fields(bytes: &[u8]) -> Vec<(String, String)> {
        let ((ty, len), size) = varint_pair(bytes).unwrap();
        assert_eq!(ty, frame::HEADERS);
        assert_eq!(len as usize, bytes.len() - size, "the frame length");
        let mut fields = Vec::new();
        decode_section(&bytes[size..], |name, value| {
            fields.push((text(name), text(value)));
            Ok(())
        })
        .unwrap();
        fields
    }

    fn text(text: Text<'_>) -> String {
        let bytes = match text {
            Text::Static(text) => text.as_bytes().to_vec(),
            Text::Plain(text) => text.to_vec(),
            Text::Huffman(_) => panic!("requests are not Huffman-coded"),
        };
        String::from_utf8(bytes).unwrap()
    }

    /// Feeds a whole stream in one piece and ends it.
    fn parse(bytes: &[u8]) -> Result<Progress, H3Error> {
        let mut parser = ResponseParser::new(&WANTED);
        let progress = parser.feed(bytes, &mut LastHead::default())?;
        parser.finish()?;
        Ok(progress)
    }

    fn parse_error(bytes: &[u8]) -> u64 {
        parse(bytes).expect_err("an error").code
    }

    #[test]
    fn static_table_has_the_rfc_entries() {
        assert_eq!(STATIC[0], (":authority", ""));
        assert_eq!(STATIC[1], (":path", "/"));
        assert_eq!(STATIC[17], (":method", "GET"));
        assert_eq!(STATIC[23], (":scheme", "https"));
        assert_eq!(STATIC[25], (":status", "200"));
        assert_eq!(STATIC[31], ("accept-encoding", "gzip, deflate, br"));
        assert_eq!(STATIC[52], ("content-type", "text/html; charset=utf-8"));
        assert_eq!(STATIC[54], ("content-type", "text/plain;charset=utf-8"));
        assert_eq!(STATIC[63], (":status", "100"));
        assert_eq!(STATIC[72], ("accept-language", ""));
        assert_eq!(STATIC[73], ("access-control-allow-credentials", "FALSE"));
        assert_eq!(
            STATIC[85].1,
            "script-src 'none'; object-src 'none'; base-uri 'none'"
        );
        assert_eq!(STATIC[92], ("server", ""));
        assert_eq!(STATIC[98], ("x-frame-options", "sameorigin"));
    }

    #[test]
    fn static_indices_agree_with_the_table() {
        for (index, (name, value)) in STATIC.iter().enumerate() {
            let indices = static_indices(name);
            assert!(indices.contains(&(index as u8)), "{name} at {index}");
            assert!(indices.iter().all(|&i| STATIC[usize::from(i)].0 == *name));
            // Values must be valid as they are handed out unchecked.
            HeaderValue::from_static(value);
        }
    }

    #[test]
    fn varints_match_rfc_9000_examples() {
        for (value, bytes) in [
            (
                151_288_809_941_952_652,
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..],
            ),
            (494_878_333, &[0x9d, 0x7f, 0x3e, 0x7d]),
            (15_293, &[0x7b, 0xbd]),
            (37, &[0x25]),
        ] {
            let mut out = Vec::new();
            put_varint(value, &mut out);
            assert_eq!(out, bytes);
            assert_eq!(varint(bytes), Some((value, bytes.len())));
            assert_eq!(varint(&bytes[..bytes.len() - 1]), None);
        }
    }

    #[test]
    fn preamble_and_data_header() {
        assert_eq!(control_stream_preamble(), [0x00, 0x04, 0x00]);
        let mut out = Vec::new();
        encode_data_header(5, &mut out);
        encode_data_header(100_000, &mut out);
        assert_eq!(out, [0x00, 0x05, 0x00, 0x80, 0x01, 0x86, 0xa0]);
    }

    #[test]
    fn encodes_a_small_request_exactly() {
        let mut out = vec![0xaa];
        encode_request(&parts("GET", "https://a.test/", &[]), &mut out);
        let expected = [
            0xaa, // what `out` held before
            0x01, 0x0d, // HEADERS, 13 bytes
            0x00, 0x00, // Required Insert Count 0, Base 0
            0xd1, // :method GET, static 17
            0xd7, // :scheme https, static 23
            0x50, 0x06, b'a', b'.', b't', b'e', b's', b't', // :authority, static name 0
            0xc1, // :path /, static 1
        ];
        assert_eq!(out, expected);
    }

    #[test]
    fn encodes_every_field_line_kind_exactly() {
        let request = parts(
            "POST",
            "https://a.test/index.html",
            &[
                ("accept-language", "en"),
                ("x-frame-options", "deny"),
                ("x-custom", "v"),
                ("te", "trailers"),
                ("connection", "close"),
                ("host", "b.test"),
            ],
        );
        let mut out = Vec::new();
        encode_request(&request, &mut out);
        let mut expected = vec![0x01, 0x38, 0x00, 0x00, 0xd4, 0xd7];
        expected.extend_from_slice(b"\x50\x06a.test");
        // RFC 9204 Appendix B.1's field line.
        expected.extend_from_slice(b"\x51\x0b/index.html");
        // Name index 72 overflows the 4-bit prefix: 15 + 57.
        expected.extend_from_slice(b"\x5f\x39\x02en");
        // Index 97 overflows the 6-bit prefix: 63 + 34.
        expected.extend_from_slice(b"\xff\x22");
        // Name length 8 overflows the 3-bit prefix: 7 + 1.
        expected.extend_from_slice(b"\x27\x01x-custom\x01v");
        expected.extend_from_slice(b"\x22te\x08trailers");
        assert_eq!(out, expected);
    }

    #[test]
    fn request_round_trips() {
        let (request, expected) = busy_request();
        let mut out = Vec::new();
        encode_request(&request, &mut out);
        assert_eq!(request_fields(&out), expected);
    }

    #[test]
    fn request_authority_and_path_defaults() {
        let mut out = Vec::new();
        encode_request(&parts("GET", "/x?y", &[("host", "h.test")]), &mut out);
        let fields = request_fields(&out);
        assert_eq!(fields[1], (":scheme".into(), "https".into()));
        assert_eq!(fields[2], (":authority".into(), "h.test".into()));
        assert_eq!(fields[3], (":path".into(), "/x?y".into()));
        assert_eq!(fields.len(), 4, "host is not repeated");
        let mut out = Vec::new();
        encode_request(&parts("GET", "https://u:p@a.test/", &[]), &mut out);
        assert_eq!(
            request_fields(&out)[2],
            (":authority".into(), "a.test".into())
        );
        for (uri, path) in [("https://a.test", "/"), ("https://a.test?q=1", "/?q=1")] {
            let mut out = Vec::new();
            encode_request(&parts("GET", uri, &[]), &mut out);
            assert_eq!(
                request_fields(&out)[3],
                (":path".into(), path.into()),
                "{uri}"
            );
        }
    }

    #[test]
    fn parses_a_whole_response_in_place() {
        let mut bytes = headers(&[
            (":status", "200"),
            ("content-type", "text/plain"),
            ("server-timing", "origin;dur=12"),
            ("server", "h3lab"),
        ]);
        bytes.extend(frame(frame::DATA, b"hello"));
        let mut parser = ResponseParser::new(&WANTED);
        let progress = parser.feed(&bytes, &mut LastHead::default()).unwrap();
        assert_eq!(
            progress,
            Progress {
                head: head(200, &[("server-timing", "origin;dur=12")]),
                body_bytes: 5,
            }
        );
        assert_eq!(parser.section.capacity(), 0, "nothing was buffered");
        assert_eq!(parser.finish(), Ok(()));
    }

    /// A connection's responses in turn, sharing one `LastHead`: each head
    /// is what its own bytes say, whether they repeat the last final
    /// head's or not; an interim head is skipped, not kept.
    #[test]
    fn each_head_is_what_its_own_bytes_say_when_the_last_is_kept() {
        let timed = headers(&[(":status", "200"), ("server-timing", "origin;dur=12")]);
        let plain = headers(&[(":status", "404")]);
        let mut early_then_plain = headers(&[(":status", "103"), ("server-timing", "early")]);
        early_then_plain.extend(&plain);
        let mut last = LastHead::default();
        let heads: Vec<_> = [&timed, &timed, &plain, &timed, &early_then_plain, &plain]
            .into_iter()
            .map(|bytes| {
                let mut parser = ResponseParser::new(&WANTED);
                parser.feed(bytes, &mut last).unwrap().head.unwrap()
            })
            .collect();
        let timed = head(200, &[("server-timing", "origin;dur=12")]).unwrap();
        let plain = head(404, &[]).unwrap();
        assert_eq!(
            heads,
            [&timed, &timed, &plain, &timed, &plain, &plain].map(Clone::clone)
        );
        static OTHER: [HeaderName; 1] = [HeaderName::from_static("server")];
        let mut parser = ResponseParser::new(&OTHER);
        let with_server = headers(&[(":status", "404"), ("server", "x")]);
        parser.feed(&with_server, &mut last).unwrap();
        let mut parser = ResponseParser::new(&WANTED);
        let again = parser.feed(&with_server, &mut last).unwrap().head.unwrap();
        assert_eq!(again, plain, "kept for other wanted fields: decoded anew");
    }

    /// A response with most of what a stream can carry: interim heads, a
    /// reserved frame, Huffman-coded names and values, DATA, trailers.
    fn rich_response() -> Vec<u8> {
        let mut bytes = headers(&[(":status", "103"), ("server-timing", "early")]);
        bytes.extend(frame(0x21, b"padding..."));
        bytes.extend(headers(&[(":status", "100")]));
        let mut final_head = vec![0x00, 0x00];
        put_int(&mut final_head, 0x50, 4, 24); // :status, Huffman "200"
        huffman_value(&mut final_head, "200");
        put_field(&mut final_head, "date", b"Mon, 01 Jan 2024 00:00:00 GMT");
        huffman_literal(&mut final_head, "server-timing", "origin;dur=3.5");
        huffman_literal(&mut final_head, "x-other", "skipped");
        put_field(&mut final_head, "server-timing", b"edge;dur=1");
        bytes.extend(frame(frame::HEADERS, &final_head));
        bytes.extend(frame(frame::DATA, &[7; 300]));
        bytes.extend(frame(0x21 + 0x1f * 5, &[]));
        bytes.extend(frame(frame::DATA, &[]));
        bytes.extend(frame(frame::DATA, &[8; 70]));
        bytes.extend(headers(&[("x-checksum", "abc")]));
        bytes
    }

    fn rich_progress() -> Progress {
        Progress {
            head: head(
                200,
                &[
                    ("server-timing", "origin;dur=3.5"),
                    ("server-timing", "edge;dur=1"),
                ],
            ),
            body_bytes: 370,
        }
    }

    #[test]
    fn interim_heads_are_skipped() {
        let mut parser = ResponseParser::new(&WANTED);
        let early = headers(&[(":status", "103"), ("server-timing", "early")]);
        assert_eq!(
            parser.feed(&early, &mut LastHead::default()),
            Ok(Progress::default())
        );
        assert!(parser.finish().is_err(), "no final response yet");
        let progress = parser
            .feed(&headers(&[(":status", "200")]), &mut LastHead::default())
            .unwrap();
        assert_eq!(progress.head, head(200, &[]));
        assert_eq!(parser.finish(), Ok(()));
        assert_eq!(parse(&rich_response()), Ok(rich_progress()));
    }

    /// Adds up what feeds yielded; a head must come once.
    fn feed_all<'a>(
        parser: &mut ResponseParser,
        pieces: impl Iterator<Item = &'a [u8]>,
    ) -> Progress {
        let mut total = Progress::default();
        for piece in pieces {
            let progress = parser.feed(piece, &mut LastHead::default()).unwrap();
            if progress.head.is_some() {
                assert!(total.head.is_none(), "a second head");
                total.head = progress.head;
            }
            total.body_bytes += progress.body_bytes;
        }
        total
    }

    #[test]
    fn any_split_gives_the_same_response() {
        let bytes = rich_response();
        for at in 0..=bytes.len() {
            let mut parser = ResponseParser::new(&WANTED);
            let (first, second) = bytes.split_at(at);
            let total = feed_all(&mut parser, [first, second].into_iter());
            assert_eq!(total, rich_progress(), "split at {at}");
            assert_eq!(parser.finish(), Ok(()), "split at {at}");
        }
        let mut parser = ResponseParser::new(&WANTED);
        let total = feed_all(&mut parser, bytes.chunks(1));
        assert_eq!(total, rich_progress(), "a byte at a time");
        assert_eq!(parser.finish(), Ok(()));
    }

    #[test]
    fn large_unknown_frame_is_skipped_unbuffered() {
        let mut bytes = headers(&[(":status", "200")]);
        bytes.extend(frame(0x21 + 0x1f * 2, &vec![1; 100_000]));
        bytes.extend(frame(frame::DATA, &vec![2; 200_000]));
        let mut parser = ResponseParser::new(&WANTED);
        let total = feed_all(&mut parser, bytes.chunks(1000));
        assert_eq!(
            total,
            Progress {
                head: head(200, &[]),
                body_bytes: 200_000
            }
        );
        assert_eq!(parser.section.capacity(), 0, "nothing was buffered");
        assert_eq!(parser.finish(), Ok(()));
    }

    #[test]
    fn huffman_coded_fields_are_decoded() {
        let mut section = vec![0x00, 0x00, 0xd9]; // :status 200
        huffman_literal(
            &mut section,
            "server-timing",
            "origin;dur=42, cdn-cache;desc=HIT",
        );
        let progress = parse(&frame(frame::HEADERS, &section)).unwrap();
        assert_eq!(
            progress.head,
            head(
                200,
                &[("server-timing", "origin;dur=42, cdn-cache;desc=HIT")]
            )
        );
    }

    #[test]
    fn long_huffman_names_are_checked_but_not_matched() {
        static LONG: [HeaderName; 1] = [HeaderName::from_static(
            "x-wanted-name-exactly-as-long-as-the-stack-buffer-for-huffman-coded-names-\
             so-that-only-its-first-bytes-fit-and-must-not-match-it",
        )];
        assert_eq!(LONG[0].as_str().len(), NAME_BUF);
        let longer = format!("{}-and-more", LONG[0].as_str());
        let mut section = vec![0x00, 0x00, 0xd9];
        huffman_literal(&mut section, &longer, "x");
        huffman_literal(&mut section, LONG[0].as_str(), "y");
        let mut parser = ResponseParser::new(&LONG);
        let progress = parser
            .feed(&frame(frame::HEADERS, &section), &mut LastHead::default())
            .unwrap();
        assert_eq!(
            progress.head.unwrap().fields,
            [(LONG[0].clone(), HeaderValue::from_static("y"))]
        );
        let mut section = vec![0x00, 0x00, 0xd9];
        huffman_literal(&mut section, &format!("{longer}-Upper"), "x");
        assert_eq!(
            parse_error(&frame(frame::HEADERS, &section)),
            code::H3_MESSAGE_ERROR
        );
    }

    /// Checks that each case's bytes fail with `code`.
    fn expect(code: u64, error: fn(&[u8]) -> u64, cases: &[(&str, Vec<u8>)]) {
        for (case, bytes) in cases {
            assert_eq!(error(bytes), code, "{case}");
        }
    }

    #[test]
    fn frames_out_of_place_on_a_request_stream() {
        let ok_head = headers(&[(":status", "200")]);
        let after_head = |frames: &[Vec<u8>]| [&[ok_head.clone()][..], frames].concat().concat();
        let trailers = headers(&[("x-t", "1")]);
        let data = frame(frame::DATA, b"x");
        expect(
            code::H3_FRAME_UNEXPECTED,
            parse_error,
            &[
                ("DATA first", data.clone()),
                (
                    "DATA after 1xx",
                    [headers(&[(":status", "100")]), data.clone()].concat(),
                ),
                ("SETTINGS", after_head(&[frame(frame::SETTINGS, &[])])),
                ("GOAWAY", frame(frame::GOAWAY, &[0])),
                ("MAX_PUSH_ID", frame(frame::MAX_PUSH_ID, &[0])),
                ("CANCEL_PUSH", frame(frame::CANCEL_PUSH, &[0])),
                ("PRIORITY", frame(0x02, &[])),
                ("PING", after_head(&[frame(0x06, &[0; 8])])),
                ("WINDOW_UPDATE", frame(0x08, &[0; 4])),
                ("CONTINUATION", frame(0x09, &[])),
                (
                    "HEADERS after trailers",
                    after_head(&[trailers.clone(), ok_head.clone()]),
                ),
                (
                    "DATA after trailers",
                    after_head(&[data.clone(), trailers, data]),
                ),
            ],
        );
        let push_promise = frame(frame::PUSH_PROMISE, &[0, 0, 0]);
        assert_eq!(parse_error(&push_promise), code::H3_ID_ERROR);
    }

    #[test]
    fn undecodable_sections() {
        // Huffman-coded :status values (name index 24), as only wanted
        // values and :status get decoded.
        let status = |coded: &[u8]| {
            let mut section = vec![0x00, 0x00, 0x5f, 0x09];
            put_int(&mut section, 0x80, 7, coded.len() as u64);
            section.extend_from_slice(coded);
            section
        };
        let long_padding = [&huffman_encode("200")[..], &[0xff]].concat();
        let cases = [
            ("dynamic indexed", vec![0x00, 0x00, 0x80]),
            ("Required Insert Count 2", vec![0x03, 0x81, 0xd9]),
            ("negative Base", vec![0x00, 0x80, 0xd9]),
            ("post-Base indexed", vec![0x00, 0x00, 0x10]),
            ("post-Base name", vec![0x00, 0x00, 0x00, 0x00]),
            ("dynamic name", vec![0x00, 0x00, 0x40, 0x00]),
            ("dynamic name, N set", vec![0x00, 0x00, 0x60, 0x00]),
            ("static index 99", vec![0x00, 0x00, 0xff, 0x24]),
            ("static name 99", vec![0x00, 0x00, 0x5f, 0x54, 0x00]),
            ("string past the end", vec![0x00, 0x00, 0x51, 0x05, b'/']),
            ("name past the end", vec![0x00, 0x00, 0xd9, 0x23, b'a']),
            ("cut integer", vec![0x00, 0x00, 0xff]),
            ("cut prefix", vec![0x00]),
            (
                "past 62 bits",
                [&[0x00, 0x00, 0xff][..], &[0xff; 8], &[0x7f]].concat(),
            ),
            (
                "ten-byte integer",
                [&[0x00, 0x00, 0xff][..], &[0x80; 9], &[0x01]].concat(),
            ),
            ("EOS in a value", status(&[0xff; 4])),
            ("padding past 7 bits", status(&long_padding)),
        ];
        let cases = cases.map(|(case, section)| (case, frame(frame::HEADERS, &section)));
        expect(code::QPACK_DECOMPRESSION_FAILED, parse_error, &cases);
        let empty = frame(frame::HEADERS, &[]);
        assert_eq!(parse_error(&empty), code::QPACK_DECOMPRESSION_FAILED);
    }

    #[test]
    fn malformed_heads() {
        let status = |status: &str| {
            let mut section = vec![0x00, 0x00];
            put_int(&mut section, 0x50, 4, 24);
            put_string(&mut section, 0x00, 7, status.as_bytes(), false);
            frame(frame::HEADERS, &section)
        };
        let ok = |field: (&str, &str)| headers(&[(":status", "200"), field]);
        let huffman = |name: &str, value: &str| {
            let mut section = vec![0x00, 0x00, 0xd9];
            huffman_literal(&mut section, name, value);
            frame(frame::HEADERS, &section)
        };
        let trailers = [ok(("date", "x")), headers(&[(":status", "200")])].concat();
        let cases = [
            ("no fields", frame(frame::HEADERS, &[0x00, 0x00])),
            ("no :status", headers(&[("server", "x")])),
            ("two-digit status", status("20")),
            ("four-digit status", status("2000")),
            ("letters", status("2x0")),
            ("status 600", status("600")),
            ("status 099", status("099")),
            ("status 101", status("101")),
            ("two :status", ok((":status", "200"))),
            (
                "late :status",
                headers(&[(":status", "200"), ("a", "x"), (":status", "204")]),
            ),
            (":path", ok((":path", "/"))),
            (":method", ok((":method", "GET"))),
            ("unknown pseudo", ok((":foo", "x"))),
            ("lone colon", ok((":", "x"))),
            ("uppercase", ok(("Server", "x"))),
            ("uppercase, Huffman", huffman("Server-Timing", "x")),
            ("space in a name", ok(("bad name", "x"))),
            ("colon inside", ok(("a:b", "x"))),
            ("empty name", ok(("", "x"))),
            ("connection", ok(("connection", "close"))),
            ("transfer-encoding", ok(("transfer-encoding", "chunked"))),
            ("te", ok(("te", "trailers"))),
            ("LF in a wanted value", ok(("server-timing", "a\nb"))),
            (
                "CR in a wanted value, Huffman",
                huffman("server-timing", "a\rb"),
            ),
            (":status in trailers", trailers),
        ];
        expect(code::H3_MESSAGE_ERROR, parse_error, &cases);
        assert!(parse(&status("20")).unwrap_err().is_stream_error());
    }

    /// content-length is read whatever the wanted fields (h2's and h3's
    /// engines hold the body to it): one decimal number, repeated only as
    /// itself; in trailers it is not read.
    #[test]
    fn content_length_is_one_decimal_number() {
        let length = |fields: &[(&str, &str)]| {
            let head = parse(&headers(fields)).unwrap().head.unwrap();
            (head.content_length, head.fields)
        };
        let status = (":status", "200");
        assert_eq!(
            length(&[status, ("content-length", "10")]),
            (Some(10), vec![])
        );
        assert_eq!(
            length(&[status, ("content-length", "0")]),
            (Some(0), vec![])
        );
        let twice = [status, ("content-length", "7"), ("content-length", "7")];
        assert_eq!(length(&twice), (Some(7), vec![]));
        assert_eq!(length(&[status]), (None, vec![]));
        let mut huffman = vec![0x00, 0x00, 0xd9];
        huffman_literal(&mut huffman, "content-length", "1234");
        let head = parse(&frame(frame::HEADERS, &huffman)).unwrap().head;
        assert_eq!(head.unwrap().content_length, Some(1234));
        let mut trailed = headers(&[status]);
        trailed.extend(headers(&[("content-length", "x")]));
        assert_eq!(parse(&trailed).unwrap().head.unwrap().content_length, None);
        let bad = |value: &'static str| (value, headers(&[status, ("content-length", value)]));
        let cases = [
            bad(""),
            bad("-1"),
            bad("1,1"),
            bad("1 0"),
            bad("0x10"),
            bad("18446744073709551616"),
            bad("100000000000000000000"),
            (
                "two that differ",
                headers(&[status, ("content-length", "1"), ("content-length", "2")]),
            ),
            (
                "before :status",
                headers(&[("content-length", "1"), status]),
            ),
        ];
        expect(code::H3_MESSAGE_ERROR, parse_error, &cases);
    }

    #[test]
    fn unwanted_values_are_not_checked_or_decoded() {
        // A control character in an unwanted value passes: it is never read.
        let bytes = headers(&[(":status", "204"), ("x-other", "a\nb")]);
        assert_eq!(parse(&bytes).unwrap().head, head(204, &[]));
    }

    #[test]
    fn a_response_head_over_the_limit_is_refused_unbuffered() {
        let mut over = Vec::new();
        put_varint(frame::HEADERS, &mut over);
        put_varint(MAX_FIELD_SECTION + 1, &mut over);
        over.extend_from_slice(&[0x00, 0x00]);
        let mut parser = ResponseParser::new(&WANTED);
        let err = parser
            .feed(&over, &mut LastHead::default())
            .expect_err("too large");
        assert_eq!(err.code, code::H3_EXCESSIVE_LOAD);
        assert!(err.is_stream_error());
        let mut limit = section(&[(":status", "200")]);
        limit.resize(MAX_FIELD_SECTION as usize, b'a');
        assert!(ResponseParser::new(&WANTED)
            .feed(&frame(frame::HEADERS, &limit), &mut LastHead::default())
            .is_err_and(|err| err.code != code::H3_EXCESSIVE_LOAD));
    }

    #[test]
    fn stream_ends() {
        let ok_head = headers(&[(":status", "200")]);
        let mut cut_data = ok_head.clone();
        cut_data.extend_from_slice(&[0x00, 0x0a, 1, 2, 3, 4, 5]);
        let mut cut_header = ok_head.clone();
        cut_header.push(0x00);
        let mut cut_trailers = ok_head.clone();
        cut_trailers.extend_from_slice(&headers(&[("x-t", "1")])[..4]);
        let mut cut_unknown = ok_head.clone();
        cut_unknown.extend_from_slice(&frame(0x21, b"abc")[..3]);
        for (case, bytes) in [
            ("DATA cut after 5 of 10 bytes", cut_data),
            ("a cut frame header", cut_header),
            ("cut trailers", cut_trailers),
            ("a cut unknown frame", cut_unknown),
        ] {
            let mut parser = ResponseParser::new(&WANTED);
            parser.feed(&bytes, &mut LastHead::default()).unwrap();
            assert_eq!(
                parser.finish().unwrap_err().code,
                code::H3_FRAME_ERROR,
                "{case}"
            );
        }
        let interim_only = headers(&[(":status", "103")]);
        for (case, bytes) in [
            ("empty stream", vec![]),
            ("interim head only", interim_only),
        ] {
            assert_eq!(parse_error(&bytes), code::H3_MESSAGE_ERROR, "{case}");
        }
        let mut with_trailers = ok_head.clone();
        with_trailers.extend(headers(&[("x-t", "1")]));
        let mut empty_frames = ok_head.clone();
        empty_frames.extend(frame(0x21, &[]));
        empty_frames.extend(frame(frame::DATA, &[]));
        assert!(parse(&ok_head).is_ok());
        assert!(parse(&with_trailers).is_ok(), "trailers without content");
        assert!(parse(&empty_frames).is_ok(), "empty frames at the end");
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = Lcg(1);
        for _ in 0..3000 {
            let mut bytes = Vec::new();
            for _ in 0..rng.next() % 6 {
                let ty = [0x00, 0x01, 0x04, 0x07, 0x21, rng.next() % 16][(rng.next() % 6) as usize];
                let len = (rng.next() % 24) as usize;
                let mut payload = rng.bytes(len, 256);
                if ty == frame::HEADERS && len > 2 && rng.next() % 2 == 0 {
                    payload[..2].copy_from_slice(&[0, 0]);
                }
                bytes.extend(frame(ty, &payload));
            }
            let cut = (rng.next() as usize) % (bytes.len() + 1);
            let mut response = ResponseParser::new(&WANTED);
            let _ = response
                .feed(&bytes[..cut], &mut LastHead::default())
                .and_then(|_| response.feed(&bytes[cut..], &mut LastHead::default()));
            let _ = response.finish();
            let mut uni = UniStreamParser::new();
            let _ = uni.feed(&[0x00]).and_then(|_| uni.feed(&bytes));
        }
    }

    /// A server control stream: type, SETTINGS, then these frames.
    fn control(frames: &[Vec<u8>]) -> Vec<u8> {
        let mut bytes = vec![0x00];
        bytes.extend(frame(
            frame::SETTINGS,
            &[0x01, 0x00, 0x06, 0x44, 0x00, 0x21, 0x00],
        ));
        frames.iter().for_each(|frame| bytes.extend(frame));
        bytes
    }

    fn uni_error(bytes: &[u8]) -> u64 {
        UniStreamParser::new()
            .feed(bytes)
            .expect_err("an error")
            .code
    }

    #[test]
    fn control_stream_reports_goaway() {
        let bytes = control(&[frame(0x21, b"xx"), frame(frame::GOAWAY, &[0x08])]);
        let mut parser = UniStreamParser::new();
        assert_eq!(parser.feed(&bytes), Ok(Some(8)));
        assert_eq!(parser.kind, Some(UniKind::Control));
        for at in 0..=bytes.len() {
            let mut parser = UniStreamParser::new();
            let (first, second) = bytes.split_at(at);
            let ids = [parser.feed(first).unwrap(), parser.feed(second).unwrap()];
            assert_eq!(
                ids.iter().flatten().collect::<Vec<_>>(),
                [&8],
                "split at {at}"
            );
        }
        let mut parser = UniStreamParser::new();
        let ids: Vec<_> = bytes
            .iter()
            .filter_map(|b| parser.feed(&[*b]).unwrap())
            .collect();
        assert_eq!(ids, [8], "a byte at a time");
        let two = control(&[frame(frame::GOAWAY, &[0x08]), frame(frame::GOAWAY, &[0x04])]);
        assert_eq!(
            UniStreamParser::new().feed(&two),
            Ok(Some(4)),
            "the last GOAWAY"
        );
        let mut parser = UniStreamParser::new();
        parser.feed(&control(&[])).unwrap();
        let error = parser.finish().unwrap_err();
        assert_eq!(error.code, code::H3_CLOSED_CRITICAL_STREAM);
    }

    #[test]
    fn control_stream_errors() {
        // A control stream's type, then these bytes.
        let opened = |bytes: Vec<u8>| [vec![0x00], bytes].concat();
        let goaway = |payload: &[u8]| control(&[frame(frame::GOAWAY, payload)]);
        let first = [
            ("GOAWAY first", opened(frame(frame::GOAWAY, &[0]))),
            ("unknown frame first", opened(frame(0x21, &[]))),
        ];
        expect(code::H3_MISSING_SETTINGS, uni_error, &first);
        let out_of_place = [
            ("second SETTINGS", control(&[frame(frame::SETTINGS, &[])])),
            ("DATA", control(&[frame(frame::DATA, &[])])),
            ("HEADERS", control(&[frame(frame::HEADERS, &[0, 0])])),
            ("PUSH_PROMISE", control(&[frame(frame::PUSH_PROMISE, &[0])])),
            ("MAX_PUSH_ID", control(&[frame(frame::MAX_PUSH_ID, &[0])])),
            ("PING", control(&[frame(0x06, &[])])),
        ];
        expect(code::H3_FRAME_UNEXPECTED, uni_error, &out_of_place);
        let ids = [
            ("CANCEL_PUSH", control(&[frame(frame::CANCEL_PUSH, &[0])])),
            ("GOAWAY 5", goaway(&[5])),
            (
                "GOAWAY growing",
                [goaway(&[4]), frame(frame::GOAWAY, &[8])].concat(),
            ),
            ("push stream", vec![0x01, 0x00]),
        ];
        expect(code::H3_ID_ERROR, uni_error, &ids);
        let layouts = [
            ("GOAWAY, extra byte", goaway(&[4, 0])),
            ("GOAWAY, empty", goaway(&[])),
            ("GOAWAY, cut ID", goaway(&[0x40])),
            (
                "setting cut by the frame",
                opened(frame(frame::SETTINGS, &[0x06])),
            ),
        ];
        expect(code::H3_FRAME_ERROR, uni_error, &layouts);
        let settings = [
            (
                "HTTP/2 setting",
                opened(frame(frame::SETTINGS, &[0x02, 0x00])),
            ),
            ("setting 0", opened(frame(frame::SETTINGS, &[0x00, 0x00]))),
        ];
        expect(code::H3_SETTINGS_ERROR, uni_error, &settings);
    }

    #[test]
    fn other_streams_are_discarded() {
        let mut encoder = UniStreamParser::new();
        assert_eq!(encoder.feed(&[0x02, 0x20, 0xff, 0xff]), Ok(None));
        assert_eq!(encoder.kind, Some(UniKind::QpackEncoder));
        assert_eq!(
            encoder.finish().unwrap_err().code,
            code::H3_CLOSED_CRITICAL_STREAM
        );
        let mut decoder = UniStreamParser::new();
        assert_eq!(decoder.feed(&[0x03]), Ok(None));
        assert_eq!(decoder.kind, Some(UniKind::QpackDecoder));
        let mut grease = UniStreamParser::new();
        assert_eq!(grease.feed(&[0x40]), Ok(None));
        assert_eq!(grease.kind, None, "the type is cut");
        assert_eq!(grease.feed(&[0x40, 0x07, 0x04]), Ok(None));
        assert_eq!(grease.kind, Some(UniKind::Unknown));
        assert_eq!(grease.finish(), Ok(()));
    }
}
