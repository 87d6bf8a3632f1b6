//! A bound on the size of HTTP/3 frames, in front of h3.
//!
//! h3 0.0.8 reads a frame whole before it decodes it: its frame decoder
//! waits until `2 + len` bytes are buffered (`Frame::decode` in
//! src/proto/frame.rs answers `Incomplete(2 + len)`), and only then looks at
//! the type. A frame that declares a huge length therefore makes h3 buffer
//! everything the peer sends, since every byte it reads returns QUIC flow
//! control credit: on a request stream until the header timeout, on the
//! control stream until the connection's header timeout. This wrapper
//! around h3-quinn's connection follows the frame headers as they go by on
//! request and control streams, and closes the connection with
//! H3_EXCESSIVE_LOAD (RFC 9114 §10.5) as soon as a frame other than DATA
//! declares more than the limit. DATA payloads are not limited here: h3
//! hands them on as they arrive instead of buffering them.
//!
//! Following the frames, it also counts the size of each QPACK header block
//! (a HEADERS frame's payload) that requests bring and responses take.

use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes};
use h3::error::Code;
use h3::quic::{self, ConnectionErrorIncoming, StreamErrorIncoming, StreamId, WriteBuf};
use quinn::VarInt;
use tracing::debug;

use crate::header_blocks::BlockCount;
use crate::metrics::Direction;

/// RFC 9114 §7.2.1 and §6.2.1.
const DATA_FRAME: u64 = 0x0;
const HEADERS_FRAME: u64 = 0x1;
const CONTROL_STREAM: u64 = 0x0;

/// h3-quinn's connection or stream opener, watching every frame stream it
/// opens or accepts; one type, so that both open streams the same way.
#[derive(Clone)]
pub struct GuardedStreams<O> {
    inner: O,
    guard: Guard,
}

/// h3-quinn's connection, with every incoming frame stream watched.
pub type GuardedConnection = GuardedStreams<h3_quinn::Connection>;

/// h3-quinn's stream opener, watching the streams it opens.
pub type GuardedOpener = GuardedStreams<h3_quinn::OpenStreams>;

impl GuardedConnection {
    /// Frames other than DATA may declare at most `limit` bytes; header
    /// blocks are counted into `blocks`.
    pub fn new(connection: quinn::Connection, limit: u64, blocks: Arc<BlockCount>) -> Self {
        Self {
            inner: h3_quinn::Connection::new(connection.clone()),
            guard: Guard {
                limit,
                connection,
                blocks,
            },
        }
    }
}

/// The limit, the connection to close when a frame is over it, and the
/// connection's header block counts.
#[derive(Clone)]
struct Guard {
    limit: u64,
    connection: quinn::Connection,
    blocks: Arc<BlockCount>,
}

impl Guard {
    /// Closes the connection, and tells h3 why its stream ended.
    fn refuse(&self, declared: u64) -> StreamErrorIncoming {
        let code = Code::H3_EXCESSIVE_LOAD.value();
        debug!(
            peer = %self.connection.remote_address(),
            declared,
            limit = self.limit,
            "HTTP/3 frame over the size limit; closing the connection"
        );
        self.connection.close(
            VarInt::from_u64(code).unwrap_or_default(),
            b"frame larger than the server accepts",
        );
        StreamErrorIncoming::ConnectionErrorIncoming {
            connection_error: ConnectionErrorIncoming::ApplicationClose { error_code: code },
        }
    }

    /// Counts the header block of a HEADERS frame h3 is about to send.
    fn sending<B: Buf>(&self, data: &WriteBuf<B>) {
        if let Some([HEADERS_FRAME, len]) = varints(data.chunk()) {
            self.blocks.count(Direction::response, len);
        }
    }

    fn watch<S>(&self, inner: S, watch: FrameWatch) -> Guarded<S> {
        Guarded {
            inner,
            watch,
            guard: self.clone(),
        }
    }
}

impl<B: Buf> quic::Connection<B> for GuardedConnection {
    type RecvStream = Guarded<h3_quinn::RecvStream>;
    type OpenStreams = GuardedOpener;

    fn poll_accept_recv(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::RecvStream, ConnectionErrorIncoming>> {
        let stream = ready!(quic::Connection::<B>::poll_accept_recv(&mut self.inner, cx))?;
        Poll::Ready(Ok(self.guard.watch(stream, FrameWatch::unidirectional())))
    }

    fn poll_accept_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::BidiStream, ConnectionErrorIncoming>> {
        let stream = ready!(quic::Connection::<B>::poll_accept_bidi(&mut self.inner, cx))?;
        Poll::Ready(Ok(self.guard.watch(stream, FrameWatch::frames())))
    }

    fn opener(&self) -> GuardedOpener {
        GuardedStreams {
            inner: quic::Connection::<B>::opener(&self.inner),
            guard: self.guard.clone(),
        }
    }
}

impl<B, O> quic::OpenStreams<B> for GuardedStreams<O>
where
    B: Buf,
    O: quic::OpenStreams<
        B,
        BidiStream = h3_quinn::BidiStream<B>,
        SendStream = h3_quinn::SendStream<B>,
    >,
{
    type BidiStream = Guarded<h3_quinn::BidiStream<B>>;
    type SendStream = h3_quinn::SendStream<B>;

    fn poll_open_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::BidiStream, StreamErrorIncoming>> {
        let stream = ready!(quic::OpenStreams::<B>::poll_open_bidi(&mut self.inner, cx))?;
        Poll::Ready(Ok(self.guard.watch(stream, FrameWatch::frames())))
    }

    fn poll_open_send(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::SendStream, StreamErrorIncoming>> {
        quic::OpenStreams::<B>::poll_open_send(&mut self.inner, cx)
    }

    fn close(&mut self, code: Code, reason: &[u8]) {
        quic::OpenStreams::<B>::close(&mut self.inner, code, reason)
    }
}

/// A stream whose incoming frame headers are checked against the limit.
pub struct Guarded<S> {
    inner: S,
    watch: FrameWatch,
    guard: Guard,
}

impl<S: quic::RecvStream<Buf = Bytes>> quic::RecvStream for Guarded<S> {
    type Buf = Bytes;

    fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>> {
        let data = ready!(self.inner.poll_data(cx))?;
        if let Some(chunk) = &data {
            let blocks = &self.guard.blocks;
            let mut block = |len| blocks.count(Direction::request, len);
            if let Err(declared) = self.watch.follow(chunk, self.guard.limit, &mut block) {
                return Poll::Ready(Err(self.guard.refuse(declared)));
            }
        }
        Poll::Ready(Ok(data))
    }

    fn stop_sending(&mut self, error_code: u64) {
        self.inner.stop_sending(error_code)
    }

    fn recv_id(&self) -> StreamId {
        self.inner.recv_id()
    }
}

impl<B: Buf, S: quic::SendStream<B>> quic::SendStream<B> for Guarded<S> {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.inner.poll_ready(cx)
    }

    fn send_data<T: Into<WriteBuf<B>>>(&mut self, data: T) -> Result<(), StreamErrorIncoming> {
        let data = data.into();
        self.guard.sending(&data);
        self.inner.send_data(data)
    }

    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.inner.poll_finish(cx)
    }

    fn reset(&mut self, reset_code: u64) {
        self.inner.reset(reset_code)
    }

    fn send_id(&self) -> StreamId {
        self.inner.send_id()
    }
}

impl<B, S> quic::BidiStream<B> for Guarded<S>
where
    B: Buf,
    S: quic::BidiStream<B> + quic::RecvStream<Buf = Bytes>,
    S::RecvStream: quic::RecvStream<Buf = Bytes>,
{
    type SendStream = Counted<S::SendStream>;
    type RecvStream = Guarded<S::RecvStream>;

    fn split(self) -> (Self::SendStream, Self::RecvStream) {
        let (send, recv) = self.inner.split();
        let send = Counted {
            inner: send,
            guard: self.guard.clone(),
        };
        (send, self.guard.watch(recv, self.watch))
    }
}

/// The sending half of a request stream, its response header blocks counted.
pub struct Counted<S> {
    inner: S,
    guard: Guard,
}

impl<S> Counted<S> {
    /// h3-quinn's stream, e.g. to set its priority.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<B: Buf, S: quic::SendStream<B>> quic::SendStream<B> for Counted<S> {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.inner.poll_ready(cx)
    }

    fn send_data<T: Into<WriteBuf<B>>>(&mut self, data: T) -> Result<(), StreamErrorIncoming> {
        let data = data.into();
        self.guard.sending(&data);
        self.inner.send_data(data)
    }

    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.inner.poll_finish(cx)
    }

    fn reset(&mut self, reset_code: u64) {
        self.inner.reset(reset_code)
    }

    fn send_id(&self) -> StreamId {
        self.inner.send_id()
    }
}

/// Where a stream's incoming bytes are, frame by frame.
#[derive(Debug, PartialEq)]
enum FrameWatch {
    /// A unidirectional stream's type, with its bytes so far.
    StreamType(Vec<u8>),
    /// A frame's type and length, with their bytes so far.
    Header(Vec<u8>),
    /// Inside a frame's payload, with this many bytes left.
    Payload(u64),
    /// Not a stream of frames (QPACK or unknown type): h3 does not buffer it.
    Off,
}

impl FrameWatch {
    fn unidirectional() -> Self {
        Self::StreamType(Vec::new())
    }

    fn frames() -> Self {
        Self::Header(Vec::new())
    }

    /// Follows `bytes`, calling `block` with the length of each HEADERS
    /// frame; fails with the declared length of a frame other than DATA
    /// that is over `limit`.
    fn follow(
        &mut self,
        mut bytes: &[u8],
        limit: u64,
        block: &mut impl FnMut(u64),
    ) -> Result<(), u64> {
        while !bytes.is_empty() {
            match self {
                Self::Off => return Ok(()),
                Self::Payload(left) => {
                    let skipped = (*left).min(bytes.len() as u64);
                    bytes = &bytes[skipped as usize..];
                    *left -= skipped;
                    if *left == 0 {
                        *self = Self::frames();
                    }
                }
                Self::StreamType(seen) => {
                    if let Some([stream_type]) = take_varints::<1>(seen, &mut bytes) {
                        *self = match stream_type {
                            CONTROL_STREAM => Self::frames(),
                            _ => Self::Off,
                        };
                    }
                }
                Self::Header(seen) => {
                    if let Some([frame_type, len]) = take_varints::<2>(seen, &mut bytes) {
                        if frame_type != DATA_FRAME && len > limit {
                            return Err(len);
                        }
                        if frame_type == HEADERS_FRAME {
                            block(len);
                        }
                        *self = match len {
                            0 => Self::frames(),
                            _ => Self::Payload(len),
                        };
                    }
                }
            }
        }
        Ok(())
    }
}

/// Moves bytes from the front of `bytes` to `seen` until `seen` holds `N`
/// whole QUIC varints (RFC 9000 §16); then their values.
fn take_varints<const N: usize>(seen: &mut Vec<u8>, bytes: &mut &[u8]) -> Option<[u64; N]> {
    loop {
        if let Some(values) = varints(seen) {
            return Some(values);
        }
        let (&next, rest) = bytes.split_first()?;
        seen.push(next);
        *bytes = rest;
    }
}

/// The first `N` varints of `bytes`, if they are all there.
fn varints<const N: usize>(mut bytes: &[u8]) -> Option<[u64; N]> {
    let mut values = [0; N];
    for value in &mut values {
        let len = 1usize << (bytes.first()? >> 6);
        let encoded = bytes.get(..len)?;
        *value = encoded[1..]
            .iter()
            .fold(u64::from(encoded[0] & 0x3f), |v, byte| {
                v << 8 | u64::from(*byte)
            });
        bytes = &bytes[len..];
    }
    Some(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: u64 = 1000;

    fn follow(watch: &mut FrameWatch, bytes: &[u8]) -> Result<(), u64> {
        watch.follow(bytes, LIMIT, &mut |_| {})
    }

    #[test]
    fn a_frame_header_split_across_chunks_is_followed() {
        let mut watch = FrameWatch::frames();
        // HEADERS (0x01) declaring 1001 bytes, length as a 2-byte varint.
        assert_eq!(follow(&mut watch, &[0x01, 0x43]), Ok(()));
        assert_eq!(follow(&mut watch, &[0xe9]), Err(1001));
    }

    #[test]
    fn data_payloads_are_skipped_whatever_their_size() {
        let mut watch = FrameWatch::frames();
        let mut bytes = vec![0x00, 0x80, 0x01, 0x00, 0x00]; // DATA, 65536 bytes
        bytes.extend(vec![0; 65536]);
        bytes.extend([0x01, 0x02, 0xaa, 0xbb]); // then a 2-byte HEADERS
        let mut blocks = Vec::new();
        let followed = watch.follow(&bytes, LIMIT, &mut |len| blocks.push(len));
        assert_eq!(followed, Ok(()));
        assert_eq!(blocks, [2], "the HEADERS frame's block, not DATA's");
        assert_eq!(watch, FrameWatch::frames());
        // A reserved frame type (0x21) over the limit is refused too.
        assert_eq!(follow(&mut watch, &[0x21, 0x7f, 0xff]), Err(0x3fff));
    }

    #[test]
    fn only_the_control_stream_is_watched_among_unidirectional_streams() {
        let mut encoder = FrameWatch::unidirectional();
        assert_eq!(follow(&mut encoder, &[0x02, 0x01, 0x7f, 0xff]), Ok(()));
        assert_eq!(encoder, FrameWatch::Off);
        let mut control = FrameWatch::unidirectional();
        assert_eq!(follow(&mut control, &[0x00, 0x04, 0x7f, 0xff]), Err(0x3fff));
    }
}
