//! The size of every header block the server receives and sends, as the
//! connection carries it: an HTTP/1.1 message head (text), an HTTP/2 HPACK
//! block, an HTTP/3 QPACK block. Header compression pays off only once a
//! dynamic table holds what earlier requests sent, so the first block of a
//! connection in each direction is counted apart from later ones.
//!
//! The followers here are pure: they read one direction of a connection's
//! plaintext and name each block's size. [`HeaderTap`] runs them on a TCP
//! connection under hyper (after TLS); HTTP/3's blocks are taken where
//! `frame_guard` already follows the frames of each stream.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::metrics::{ConnectionKind, Direction, Metrics, Position};

/// One connection's header blocks, counted into the server's metrics.
#[derive(Debug)]
pub struct BlockCount {
    metrics: Arc<Metrics>,
    protocol: ConnectionKind,
    /// Whether a request block, and a response block, has been counted.
    seen: [AtomicBool; 2],
}

impl BlockCount {
    pub fn new(metrics: Arc<Metrics>, protocol: ConnectionKind) -> Arc<Self> {
        Arc::new(BlockCount {
            metrics,
            protocol,
            seen: Default::default(),
        })
    }

    /// Counts a block of `bytes` that `direction`'s side sent.
    pub fn count(&self, direction: Direction, bytes: u64) {
        let position = match self.seen[direction as usize].swap(true, Ordering::Relaxed) {
            false => Position::first,
            true => Position::later,
        };
        self.metrics
            .header_block(self.protocol, direction, position, bytes);
    }
}

/// RFC 9113 §3.4: what an HTTP/2 client sends before its first frame.
const H2_PREFACE: usize = 24;
const H2_FRAME_HEADER: usize = 9;
const H2_HEADERS: u8 = 0x1;
const H2_CONTINUATION: u8 = 0x9;
const H2_END_HEADERS: u8 = 0x4;
const H2_PADDED: u8 = 0x8;
const H2_PRIORITY: u8 = 0x20;
/// A HEADERS frame's priority fields: stream dependency and weight.
const H2_PRIORITY_FIELDS: u64 = 5;

/// Follows one direction of an HTTP/2 connection frame by frame. A header
/// block is the fragments of a HEADERS frame and its CONTINUATION frames,
/// without padding or priority fields (RFC 9113 §6.2, §6.10).
#[derive(Debug)]
pub struct H2Frames {
    state: H2State,
    /// The block being gathered, in bytes so far.
    block: u64,
}

#[derive(Debug, PartialEq)]
enum H2State {
    /// The client's preface, with this many bytes left.
    Preface(usize),
    /// A frame header, with its bytes so far.
    Header(Vec<u8>),
    /// A padded HEADERS frame, whose first byte is its padding's length.
    PadLength { len: u64, flags: u8 },
    /// Inside a payload, with this many bytes left.
    Payload(u64),
}

impl H2Frames {
    /// The client's side, which opens with the preface.
    pub fn requests() -> Self {
        H2Frames {
            state: H2State::Preface(H2_PREFACE),
            block: 0,
        }
    }

    /// The server's side.
    pub fn responses() -> Self {
        H2Frames {
            state: H2State::Header(Vec::new()),
            block: 0,
        }
    }

    /// Follows `bytes`, calling `block` with the size of each block that ends.
    pub fn follow(&mut self, mut bytes: &[u8], block: &mut impl FnMut(u64)) {
        while let Some((&next, rest)) = bytes.split_first() {
            match &mut self.state {
                H2State::Preface(left) => {
                    let skipped = (*left).min(bytes.len());
                    bytes = &bytes[skipped..];
                    *left -= skipped;
                    if *left == 0 {
                        self.state = H2State::Header(Vec::new());
                    }
                }
                H2State::Payload(left) => {
                    let skipped = (*left).min(bytes.len() as u64);
                    bytes = &bytes[skipped as usize..];
                    *left -= skipped;
                    if *left == 0 {
                        self.state = H2State::Header(Vec::new());
                    }
                }
                H2State::Header(seen) => {
                    seen.push(next);
                    bytes = rest;
                    if seen.len() == H2_FRAME_HEADER {
                        let header: [u8; H2_FRAME_HEADER] = seen[..].try_into().unwrap();
                        self.frame(header, block);
                    }
                }
                H2State::PadLength { len, flags } => {
                    let (len, flags) = (*len, *flags);
                    bytes = rest;
                    let fields = 1 + u64::from(next) + priority_fields(flags);
                    self.fragment(len.saturating_sub(fields), flags, block);
                    self.skip(len - 1);
                }
            }
        }
    }

    fn frame(&mut self, header: [u8; H2_FRAME_HEADER], block: &mut impl FnMut(u64)) {
        let len = u64::from(u32::from_be_bytes([0, header[0], header[1], header[2]]));
        let (kind, flags) = (header[3], header[4]);
        match kind {
            H2_HEADERS if flags & H2_PADDED != 0 && len > 0 => {
                self.state = H2State::PadLength { len, flags };
                return;
            }
            H2_HEADERS => {
                let fragment = len.saturating_sub(priority_fields(flags));
                self.fragment(fragment, flags, block);
            }
            H2_CONTINUATION => self.fragment(len, flags, block),
            _ => {}
        }
        self.skip(len);
    }

    fn fragment(&mut self, bytes: u64, flags: u8, block: &mut impl FnMut(u64)) {
        self.block += bytes;
        if flags & H2_END_HEADERS != 0 {
            block(std::mem::take(&mut self.block));
        }
    }

    fn skip(&mut self, len: u64) {
        self.state = match len {
            0 => H2State::Header(Vec::new()),
            _ => H2State::Payload(len),
        };
    }
}

fn priority_fields(flags: u8) -> u64 {
    match flags & H2_PRIORITY {
        0 => 0,
        _ => H2_PRIORITY_FIELDS,
    }
}

/// A message head larger than this is not followed (hyper refuses far
/// smaller ones): the connection's blocks stop being counted.
const H1_HEAD_LIMIT: usize = 64 * 1024;
const H1_MAX_HEADERS: usize = 128;

/// Follows both directions of an HTTP/1.1 connection, message by message.
/// A header block is a message's head: start line, header lines and the
/// empty line, as sent. A response's body is known from its request's
/// method, its status and its framing (RFC 9112 §6.3); where it cannot be
/// (a malformed or oversized head), the connection is no longer counted.
#[derive(Debug)]
pub struct H1Messages {
    requests: H1State,
    responses: H1State,
    /// Whether each request still unanswered was a HEAD.
    heads: VecDeque<bool>,
}

#[derive(Debug, PartialEq)]
enum H1State {
    /// A head, with its bytes so far.
    Head(Vec<u8>),
    /// A body of known length, with this many bytes left.
    Fixed(u64),
    /// A chunked body: a chunk-size line, with its bytes so far.
    ChunkSize(Vec<u8>),
    /// Chunk data and its CRLF, with this many bytes left.
    ChunkData(u64),
    /// The trailer section after the last chunk, with its bytes so far.
    Trailers(Vec<u8>),
    /// A response delimited by the connection's close: the rest is body.
    UntilClose,
    /// Something this follower does not understand: nothing more is counted.
    Lost,
}

/// How a message's body is delimited.
enum Framing {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

impl Default for H1Messages {
    fn default() -> Self {
        H1Messages {
            requests: H1State::Head(Vec::new()),
            responses: H1State::Head(Vec::new()),
            heads: VecDeque::new(),
        }
    }
}

impl H1Messages {
    /// Follows bytes the client sent.
    pub fn follow_requests(&mut self, bytes: &[u8], block: &mut impl FnMut(u64)) {
        let heads = &mut self.heads;
        follow_h1(&mut self.requests, bytes, block, &mut |head| {
            let mut headers = [httparse::EMPTY_HEADER; H1_MAX_HEADERS];
            let mut request = httparse::Request::new(&mut headers);
            let len = complete(request.parse(head))?;
            heads.push_back(request.method == Some("HEAD"));
            let framing = body_framing(request.headers, Framing::None)?;
            Ok((len, framing))
        });
    }

    /// Follows bytes the server sent.
    pub fn follow_responses(&mut self, bytes: &[u8], block: &mut impl FnMut(u64)) {
        let heads = &mut self.heads;
        follow_h1(&mut self.responses, bytes, block, &mut |head| {
            let mut headers = [httparse::EMPTY_HEADER; H1_MAX_HEADERS];
            let mut response = httparse::Response::new(&mut headers);
            let len = complete(response.parse(head))?;
            let status = response.code.unwrap_or_default();
            // An interim response (1xx) precedes its request's final one.
            if (100..200).contains(&status) {
                return Ok((len, Framing::None));
            }
            let to_head = heads.pop_front().unwrap_or(false);
            let framing = match status {
                204 | 304 => Framing::None,
                _ if to_head => Framing::None,
                _ => body_framing(response.headers, Framing::UntilClose)?,
            };
            Ok((len, framing))
        });
    }
}

/// A parsed head's length, `None` while incomplete.
fn complete(status: httparse::Result<usize>) -> Result<usize, ()> {
    match status {
        Ok(httparse::Status::Complete(len)) => Ok(len),
        Ok(httparse::Status::Partial) => Err(()),
        Err(_) => Err(()),
    }
}

/// The body framing `headers` declare; `otherwise` without either header.
fn body_framing(headers: &[httparse::Header], otherwise: Framing) -> Result<Framing, ()> {
    let value = |name: &str| {
        headers
            .iter()
            .find(|header| header.name.eq_ignore_ascii_case(name))
            .map(|header| {
                String::from_utf8_lossy(header.value)
                    .trim()
                    .to_ascii_lowercase()
            })
    };
    if let Some(coding) = value("transfer-encoding") {
        return match coding.ends_with("chunked") {
            true => Ok(Framing::Chunked),
            false => Ok(Framing::UntilClose),
        };
    }
    match value("content-length") {
        Some(len) => len.parse().map(Framing::Length).map_err(|_| ()),
        None => Ok(otherwise),
    }
}

/// A head parser: the head's length and its body's framing; `Err` while
/// the head is incomplete or malformed (the caller tells them apart by
/// whether the head's end has arrived).
type HeadParser<'a> = dyn FnMut(&[u8]) -> Result<(usize, Framing), ()> + 'a;

fn follow_h1(
    state: &mut H1State,
    mut bytes: &[u8],
    block: &mut impl FnMut(u64),
    parse: &mut HeadParser,
) {
    while !bytes.is_empty() {
        match state {
            H1State::Lost | H1State::UntilClose => return,
            H1State::Head(seen) => {
                let before = seen.len();
                seen.extend_from_slice(bytes);
                let end_of_head = seen.windows(4).any(|window| window == b"\r\n\r\n");
                let parsed = match end_of_head {
                    true => parse(seen),
                    false => Err(()),
                };
                match parsed {
                    Ok((len, framing)) => {
                        block(len as u64);
                        bytes = &bytes[len - before..];
                        *state = body_state(framing);
                    }
                    Err(()) if end_of_head || seen.len() > H1_HEAD_LIMIT => {
                        *state = H1State::Lost;
                    }
                    Err(()) => return,
                }
            }
            H1State::Fixed(left) | H1State::ChunkData(left) => {
                let skipped = (*left).min(bytes.len() as u64);
                bytes = &bytes[skipped as usize..];
                *left -= skipped;
                if *left == 0 {
                    *state = match state {
                        H1State::ChunkData(_) => H1State::ChunkSize(Vec::new()),
                        _ => H1State::Head(Vec::new()),
                    };
                }
            }
            H1State::ChunkSize(seen) => {
                let before = seen.len();
                seen.extend_from_slice(bytes);
                match httparse::parse_chunk_size(seen) {
                    Ok(httparse::Status::Complete((len, 0))) => {
                        bytes = &bytes[len - before..];
                        *state = H1State::Trailers(Vec::new());
                    }
                    Ok(httparse::Status::Complete((len, size))) => {
                        bytes = &bytes[len - before..];
                        // The chunk's data, then its CRLF.
                        *state = H1State::ChunkData(size + 2);
                    }
                    Ok(httparse::Status::Partial) if seen.len() < H1_HEAD_LIMIT => return,
                    _ => *state = H1State::Lost,
                }
            }
            H1State::Trailers(seen) => {
                let (&next, rest) = bytes.split_first().expect("not empty");
                seen.push(next);
                bytes = rest;
                if seen[..] == *b"\r\n" || seen.ends_with(b"\r\n\r\n") {
                    *state = H1State::Head(Vec::new());
                } else if seen.len() > H1_HEAD_LIMIT {
                    *state = H1State::Lost;
                }
            }
        }
    }
}

fn body_state(framing: Framing) -> H1State {
    match framing {
        Framing::None | Framing::Length(0) => H1State::Head(Vec::new()),
        Framing::Length(len) => H1State::Fixed(len),
        Framing::Chunked => H1State::ChunkSize(Vec::new()),
        Framing::UntilClose => H1State::UntilClose,
    }
}

/// How a TCP connection's plaintext is followed.
#[derive(Debug)]
enum Follower {
    H1(H1Messages),
    H2 {
        requests: H2Frames,
        responses: H2Frames,
    },
}

/// A TCP connection's plaintext, under hyper, with its header blocks
/// counted as they pass.
pub struct HeaderTap<S> {
    inner: S,
    follower: Follower,
    count: Arc<BlockCount>,
}

impl<S> HeaderTap<S> {
    /// `h2`: whether ALPN chose HTTP/2 (else HTTP/1.1).
    pub fn new(inner: S, h2: bool, count: Arc<BlockCount>) -> Self {
        let follower = match h2 {
            true => Follower::H2 {
                requests: H2Frames::requests(),
                responses: H2Frames::responses(),
            },
            false => Follower::H1(H1Messages::default()),
        };
        HeaderTap {
            inner,
            follower,
            count,
        }
    }

    fn read(&mut self, bytes: &[u8]) {
        let count = &self.count;
        let mut block = |len| count.count(Direction::request, len);
        match &mut self.follower {
            Follower::H1(messages) => messages.follow_requests(bytes, &mut block),
            Follower::H2 { requests, .. } => requests.follow(bytes, &mut block),
        }
    }

    fn written(&mut self, bytes: &[u8]) {
        let count = &self.count;
        let mut block = |len| count.count(Direction::response, len);
        match &mut self.follower {
            Follower::H1(messages) => messages.follow_responses(bytes, &mut block),
            Follower::H2 { responses, .. } => responses.follow(bytes, &mut block),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for HeaderTap<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            this.read(&buf.filled()[before..]);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for HeaderTap<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(written)) = polled {
            this.written(&buf[..written]);
        }
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(mut written)) = polled {
            for buf in bufs {
                let taken = written.min(buf.len());
                this.written(&buf[..taken]);
                written -= taken;
            }
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h2_blocks(frames: &H2Frames, bytes: &[u8], chunk: usize) -> Vec<u64> {
        let mut follower = H2Frames {
            state: match frames.state {
                H2State::Preface(_) => H2State::Preface(H2_PREFACE),
                _ => H2State::Header(Vec::new()),
            },
            block: 0,
        };
        let mut blocks = Vec::new();
        for piece in bytes.chunks(chunk) {
            follower.follow(piece, &mut |len| blocks.push(len));
        }
        blocks
    }

    fn h2_frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let len = (payload.len() as u32).to_be_bytes();
        let mut frame = vec![len[1], len[2], len[3], kind, flags, 0, 0, 0, 1];
        frame.extend_from_slice(payload);
        frame
    }

    #[test]
    fn h2_blocks_leave_out_padding_and_priority_and_join_continuations() {
        let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        bytes.extend(h2_frame(0x4, 0, &[0; 12])); // SETTINGS
        bytes.extend(h2_frame(H2_HEADERS, H2_END_HEADERS, &[7; 30]));
        // Padded (3 bytes of padding) with priority: 40 - 1 - 3 - 5 = 31.
        let mut padded = vec![3];
        padded.extend([0; 39]);
        let flags = H2_END_HEADERS | H2_PADDED | H2_PRIORITY;
        bytes.extend(h2_frame(H2_HEADERS, flags, &padded));
        bytes.extend(h2_frame(0x0, 0, &[1; 100])); // DATA
        bytes.extend(h2_frame(H2_HEADERS, 0, &[9; 20]));
        bytes.extend(h2_frame(H2_CONTINUATION, H2_END_HEADERS, &[9; 5]));
        for chunk in [1, 2, 7, 1000] {
            assert_eq!(
                h2_blocks(&H2Frames::requests(), &bytes, chunk),
                [30, 31, 25],
                "fed {chunk} bytes at a time"
            );
        }
    }

    fn h1_blocks(requests: &[u8], responses: &[u8], chunk: usize) -> (Vec<u64>, Vec<u64>) {
        let mut messages = H1Messages::default();
        let (mut sent, mut answered) = (Vec::new(), Vec::new());
        for piece in requests.chunks(chunk) {
            messages.follow_requests(piece, &mut |len| sent.push(len));
        }
        for piece in responses.chunks(chunk) {
            messages.follow_responses(piece, &mut |len| answered.push(len));
        }
        (sent, answered)
    }

    #[test]
    fn h1_heads_are_told_from_bodies_of_every_framing() {
        let get = "GET /a HTTP/1.1\r\nhost: x\r\n\r\n";
        let post = "POST /b HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhello";
        let head = "HEAD /c HTTP/1.1\r\nhost: x\r\n\r\n";
        let requests = [get, post, head, get].concat();
        let ok_fixed = "HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc";
        let interim = "HTTP/1.1 100 Continue\r\n\r\n";
        let chunked =
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nx-t: 1\r\n\r\n";
        let to_head = "HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n";
        let last = "HTTP/1.1 204 No Content\r\n\r\n";
        let responses = [ok_fixed, interim, chunked, to_head, last].concat();
        let head_len = |message: &str| message.find("\r\n\r\n").unwrap() as u64 + 4;
        for chunk in [1, 3, 1000] {
            let (sent, answered) = h1_blocks(requests.as_bytes(), responses.as_bytes(), chunk);
            let expected: Vec<u64> = [get, post, head, get].map(head_len).to_vec();
            assert_eq!(sent, expected, "fed {chunk} bytes at a time");
            let expected: Vec<u64> = [ok_fixed, interim, chunked, to_head, last]
                .map(head_len)
                .to_vec();
            assert_eq!(answered, expected, "fed {chunk} bytes at a time");
        }
    }

    #[test]
    fn h1_stops_counting_at_what_it_cannot_follow() {
        let bad = b"GET / HTTP/1.1\r\nbad header line\r\n\r\nGET / HTTP/1.1\r\n\r\n";
        let (sent, _) = h1_blocks(bad, b"", 1000);
        assert_eq!(sent, Vec::<u64>::new());
        // A response without a length runs to the connection's close.
        let (_, answered) = h1_blocks(
            b"GET / HTTP/1.1\r\n\r\n",
            b"HTTP/1.0 200 OK\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
            1000,
        );
        assert_eq!(answered, [19]);
    }
}
