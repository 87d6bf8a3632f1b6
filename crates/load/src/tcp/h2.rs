//! One HTTP/2 client connection, sans I/O: the event loop hands it the
//! plaintext it read and takes the bytes it queued. It sends requests as
//! prepared header blocks, keeps both directions' flow control, reads
//! responses through `h2codec` (HPACK with the server's dynamic table),
//! and hands back each request's outcome.

use std::time::{Duration, Instant};

use bytes::Bytes;
use h3lab_results::ErrorKind;
use http::{HeaderName, Method};
use rustc_hash::FxHashMap;

use http::request::Parts;

use super::h2codec::{
    self as codec, code, flag, frame, setting, FrameHeader, H2Error, HpackDecoder, HpackEncoder,
};
use crate::books::{Outcome, Pending};
use crate::schedule::Ticket;

/// The response fields the load report reads.
static WANTED: [HeaderName; 1] = [HeaderName::from_static("server-timing")];

/// Receive windows, as the tokio engine's (hyper's client defaults): large
/// enough that a download is not paced by WINDOW_UPDATE round trips.
pub(crate) const STREAM_WINDOW: u32 = 2 * 1024 * 1024;
pub(crate) const CONNECTION_WINDOW: u32 = 5 * 1024 * 1024;
/// RFC 9113 §6.5.2's initial values, until the server's SETTINGS say more.
const DEFAULT_WINDOW: i64 = 65_535;
const DEFAULT_MAX_FRAME: u32 = 16_384;
/// The largest frame this client takes (it announces no larger).
const MAX_FRAME_RECEIVED: u32 = DEFAULT_MAX_FRAME;
/// The largest header block a response may make it hold.
const MAX_HEADER_BLOCK: usize = 64 * 1024;
/// Stream identifiers end at 2^31 - 1.
const LAST_STREAM_ID: u32 = (1 << 31) - 1;

/// A request on the wire.
struct InFlight {
    pending: Pending,
    /// Response bytes read since the stream's window was last raised.
    unacked: u32,
    /// What flow control lets this stream send.
    send_window: i64,
    /// The request body flow control has not let out yet.
    unsent: Bytes,
    /// A HEAD request: its response has no content, whatever its
    /// content-length says.
    head_request: bool,
}

/// A DATA frame being received: its payload is counted as it arrives, so
/// a download's bytes are never gathered into whole frames.
struct Data {
    /// `None`: a stream the client is done with; the bytes are dropped.
    stream: Option<u32>,
    content_left: u32,
    padding_left: u32,
    end_stream: bool,
}

/// A header block being received across HEADERS and CONTINUATION frames.
struct Block {
    stream: u32,
    end_stream: bool,
    bytes: Vec<u8>,
}

pub(crate) struct H2Conn {
    decoder: HpackDecoder,
    encoder: HpackEncoder,
    /// The header block of a request that is the same every time, once
    /// encoding it no longer changes the table: sent as it is.
    steady: Option<Vec<u8>>,
    /// Where a request's header block is encoded.
    block_buf: Vec<u8>,
    requests: FxHashMap<u32, InFlight>,
    next_stream: u32,
    /// The server's limits (RFC 9113 §6.5.2).
    max_concurrent: usize,
    initial_window: i64,
    max_frame: u32,
    send_window: i64,
    /// Response bytes read since the connection's window was last raised.
    unacked: u32,
    block: Option<Block>,
    /// A DATA frame whose payload is still arriving.
    data: Option<Data>,
    /// The server's GOAWAY: streams above this one went unprocessed.
    goaway: Option<u32>,
    /// No new requests: GOAWAY, a refused or timed-out request, or the
    /// stream identifiers ran out.
    pub(crate) draining: bool,
    /// Whether it delivered a response: a request it then refuses
    /// unprocessed is sent again elsewhere, uncounted.
    pub(crate) answered: bool,
    /// Requests sent on it.
    pub(crate) sent: u64,
}

impl H2Conn {
    /// A connection whose preface, SETTINGS and connection window are
    /// queued in `out`.
    pub(crate) fn new(out: &mut Vec<u8>) -> H2Conn {
        codec::encode_preface(
            &[
                (setting::ENABLE_PUSH, 0),
                (setting::INITIAL_WINDOW_SIZE, STREAM_WINDOW),
            ],
            out,
        );
        codec::encode_window_update(0, CONNECTION_WINDOW - DEFAULT_WINDOW as u32, out);
        H2Conn {
            decoder: HpackDecoder::new(),
            encoder: HpackEncoder::new(),
            steady: None,
            block_buf: Vec::new(),
            requests: FxHashMap::default(),
            next_stream: 1,
            max_concurrent: usize::MAX,
            initial_window: DEFAULT_WINDOW,
            max_frame: DEFAULT_MAX_FRAME,
            send_window: DEFAULT_WINDOW,
            unacked: 0,
            block: None,
            data: None,
            goaway: None,
            draining: false,
            answered: false,
            sent: 0,
        }
    }

    /// Whether the server sent GOAWAY.
    pub(crate) fn goaway_seen(&self) -> bool {
        self.goaway.is_some()
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.requests.len()
    }

    /// How many requests it may carry at once: `streams`, unless the
    /// server allows fewer.
    pub(crate) fn stream_limit(&self, streams: usize) -> usize {
        streams.min(self.max_concurrent)
    }

    /// Queues the request in `parts` with `body`, its header block from
    /// this connection's encoder; `same_every_time` lets a block that no
    /// longer changes the table be kept and sent again as it is.
    pub(crate) fn send_request(
        &mut self,
        ticket: Ticket,
        now: Instant,
        parts: &Parts,
        same_every_time: bool,
        body: &Bytes,
        out: &mut Vec<u8>,
    ) {
        let head_request = parts.method == Method::HEAD;
        if let (Some(steady), true) = (self.steady.take(), same_every_time) {
            self.send(ticket, now, &steady, head_request, body, out);
            self.steady = Some(steady);
            return;
        }
        let mut block = std::mem::take(&mut self.block_buf);
        block.clear();
        let changed = self.encoder.encode_request(parts, &mut block);
        self.send(ticket, now, &block, head_request, body, out);
        if same_every_time && !changed {
            self.steady = Some(block.clone());
        }
        self.block_buf = block;
    }

    /// Queues one request: its header block `head` (a HEAD request's if
    /// `head_request`) and `body`.
    fn send(
        &mut self,
        ticket: Ticket,
        now: Instant,
        head: &[u8],
        head_request: bool,
        body: &Bytes,
        out: &mut Vec<u8>,
    ) {
        let id = self.next_stream;
        self.next_stream += 2;
        if self.next_stream > LAST_STREAM_ID {
            self.draining = true;
        }
        codec::encode_headers(id, head, body.is_empty(), self.max_frame, out);
        self.requests.insert(
            id,
            InFlight {
                pending: Pending::new(ticket, now),
                unacked: 0,
                send_window: self.initial_window,
                unsent: body.clone(),
                head_request,
            },
        );
        self.sent += 1;
        self.write_body(id, out);
    }

    /// Sends what flow control allows of a request's body, ending the
    /// stream with its last byte.
    fn write_body(&mut self, id: u32, out: &mut Vec<u8>) {
        let Some(request) = self.requests.get_mut(&id) else {
            return;
        };
        while !request.unsent.is_empty() {
            let allowed = self
                .send_window
                .min(request.send_window)
                .min(i64::from(self.max_frame));
            if allowed <= 0 {
                return;
            }
            let len = (allowed as usize).min(request.unsent.len());
            let chunk = request.unsent.split_to(len);
            codec::encode_data_header(id, len as u32, request.unsent.is_empty(), out);
            out.extend_from_slice(&chunk);
            self.send_window -= len as i64;
            request.send_window -= len as i64;
        }
    }

    /// Reads the whole frames at the start of `input`, queueing what they
    /// call for (acknowledgements, window updates) in `out`. Returns how
    /// many bytes it used; the rest is a frame still arriving. An error is
    /// the connection's: the caller sends GOAWAY with its code and closes.
    pub(crate) fn receive(
        &mut self,
        input: &[u8],
        now: Instant,
        outcomes: &mut Vec<Outcome>,
        out: &mut Vec<u8>,
    ) -> Result<usize, H2Error> {
        let mut used = 0;
        loop {
            if self.data.is_some() {
                used += self.data_payload(&input[used..], now, outcomes, out);
                if self.data.is_some() {
                    break;
                }
            }
            let Some(header) = FrameHeader::parse(&input[used..]) else {
                break;
            };
            if header.len > MAX_FRAME_RECEIVED {
                return Err(H2Error::connection(
                    code::FRAME_SIZE_ERROR,
                    "a frame larger than the client's SETTINGS_MAX_FRAME_SIZE",
                ));
            }
            let payload_at = used + FrameHeader::LEN;
            if header.kind == frame::DATA && self.block.is_none() {
                match self.data_start(&header, &input[payload_at..], outcomes, out)? {
                    Some(taken) => used = payload_at + taken,
                    None => break,
                }
                continue;
            }
            let end = payload_at + header.len as usize;
            if input.len() < end {
                break;
            }
            self.frame(&header, &input[payload_at..end], now, outcomes, out)?;
            used = end;
        }
        if self.unacked >= CONNECTION_WINDOW / 2 {
            codec::encode_window_update(0, self.unacked, out);
            self.unacked = 0;
        }
        Ok(used)
    }

    fn frame(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        now: Instant,
        outcomes: &mut Vec<Outcome>,
        out: &mut Vec<u8>,
    ) -> Result<(), H2Error> {
        if self.block.is_some() && header.kind != frame::CONTINUATION {
            return Err(H2Error::connection(
                code::PROTOCOL_ERROR,
                "a header block interrupted by another frame",
            ));
        }
        match header.kind {
            frame::HEADERS => self.headers(header, payload, now, outcomes, out),
            frame::CONTINUATION => self.continuation(header, payload, now, outcomes, out),
            frame::RST_STREAM => self.reset(header, payload, outcomes),
            frame::SETTINGS => self.settings(header, payload, out),
            frame::PING => ping(header, payload, out),
            frame::GOAWAY => self.goaway(header, payload, outcomes),
            frame::WINDOW_UPDATE => self.window_update(header, payload, outcomes, out),
            frame::PUSH_PROMISE => Err(H2Error::connection(
                code::PROTOCOL_ERROR,
                "PUSH_PROMISE although the client disabled push",
            )),
            // PRIORITY is deprecated (RFC 9113 §5.3.2), unknown types are
            // ignored (§5.5).
            frame::PRIORITY => Ok(()),
            _ => Ok(()),
        }
    }

    /// Checks a frame on a stream: the client opens only odd streams, so
    /// one it has not opened yet is the server's error (§5.1.1). `None`:
    /// a stream this connection is done with, whose frames are dropped.
    fn known_stream(&self, stream: u32) -> Result<Option<u32>, H2Error> {
        if stream == 0 || stream % 2 == 0 || stream >= self.next_stream {
            return Err(H2Error::connection(
                code::PROTOCOL_ERROR,
                "a frame on a stream the client never opened",
            ));
        }
        Ok(self.requests.contains_key(&stream).then_some(stream))
    }

    /// Starts a DATA frame (§6.1) whose payload begins with `payload`:
    /// returns the bytes it took (the Pad Length), or `None` until that
    /// byte has arrived.
    fn data_start(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        outcomes: &mut Vec<Outcome>,
        out: &mut Vec<u8>,
    ) -> Result<Option<usize>, H2Error> {
        let padding = if header.has(flag::PADDED) {
            // An empty payload has no Pad Length: the byte after it is the
            // next frame's (§4.2).
            if header.len == 0 {
                return Err(H2Error::connection(
                    code::FRAME_SIZE_ERROR,
                    "a PADDED DATA frame too short for its Pad Length",
                ));
            }
            let Some(&pad_length) = payload.first() else {
                return Ok(None);
            };
            u32::from(pad_length)
        } else {
            0
        };
        let fields = u32::from(header.has(flag::PADDED));
        let content_left = header
            .len
            .checked_sub(fields + padding)
            .ok_or(H2Error::connection(
                code::PROTOCOL_ERROR,
                "padding as long as the frame payload or longer",
            ))?;
        // Flow control counts the whole payload, padding too (§6.9.1).
        self.unacked += header.len;
        let mut stream = self.known_stream(header.stream)?;
        if let Some(id) = stream {
            let request = self.requests.get_mut(&id).expect("a known stream");
            if !request.pending.has_head() {
                let err = malformed("DATA before the response head");
                self.fail_stream(id, err, outcomes, out)?;
                stream = None;
            } else {
                request.unacked += header.len;
            }
        }
        self.data = Some(Data {
            stream,
            content_left,
            padding_left: padding,
            end_stream: header.has(flag::END_STREAM),
        });
        Ok(Some(fields as usize))
    }

    /// Counts what `input` holds of the DATA frame in progress; returns the
    /// bytes it took. The frame's end may end the response.
    fn data_payload(
        &mut self,
        input: &[u8],
        now: Instant,
        outcomes: &mut Vec<Outcome>,
        out: &mut Vec<u8>,
    ) -> usize {
        let data = self.data.as_mut().expect("a DATA frame in progress");
        let content = data.content_left.min(input.len() as u32);
        data.content_left -= content;
        let padding = data.padding_left.min(input.len() as u32 - content);
        data.padding_left -= padding;
        let stream = data
            .stream
            .and_then(|id| self.requests.get_mut(&id).map(|r| (id, r)));
        if let Some((_, request)) = stream {
            request.pending.body_bytes += u64::from(content);
        }
        if data.content_left + data.padding_left > 0 {
            return (content + padding) as usize;
        }
        let Data {
            stream, end_stream, ..
        } = self.data.take().expect("a DATA frame in progress");
        if let Some(id) = stream.filter(|id| self.requests.contains_key(id)) {
            if end_stream {
                self.complete(id, now, outcomes, out);
            } else {
                let request = self.requests.get_mut(&id).expect("a request in flight");
                if request.unacked >= STREAM_WINDOW / 2 {
                    codec::encode_window_update(id, request.unacked, out);
                    request.unacked = 0;
                }
            }
        }
        (content + padding) as usize
    }

    fn headers(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        now: Instant,
        outcomes: &mut Vec<Outcome>,
        out: &mut Vec<u8>,
    ) -> Result<(), H2Error> {
        self.known_stream(header.stream)?;
        let fragment = codec::strip_padding(header, payload)?;
        let end_stream = header.flags & flag::END_STREAM != 0;
        if header.flags & flag::END_HEADERS != 0 {
            return self.header_block(header.stream, end_stream, fragment, now, outcomes, out);
        }
        self.block = Some(Block {
            stream: header.stream,
            end_stream,
            bytes: fragment.to_vec(),
        });
        Ok(())
    }

    fn continuation(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        now: Instant,
        outcomes: &mut Vec<Outcome>,
        out: &mut Vec<u8>,
    ) -> Result<(), H2Error> {
        let Some(mut block) = self.block.take() else {
            return Err(H2Error::connection(
                code::PROTOCOL_ERROR,
                "CONTINUATION without a header block to continue",
            ));
        };
        if block.stream != header.stream {
            return Err(H2Error::connection(
                code::PROTOCOL_ERROR,
                "CONTINUATION on another stream than its header block's",
            ));
        }
        if block.bytes.len() + payload.len() > MAX_HEADER_BLOCK {
            return Err(H2Error::connection(
                code::ENHANCE_YOUR_CALM,
                "a response header block over 64 KiB",
            ));
        }
        block.bytes.extend_from_slice(payload);
        if header.flags & flag::END_HEADERS != 0 {
            let Block {
                stream,
                end_stream,
                bytes,
            } = block;
            return self.header_block(stream, end_stream, &bytes, now, outcomes, out);
        }
        self.block = Some(block);
        Ok(())
    }

    /// A whole header block: a response head (interim or final), or
    /// trailers. Every block is decoded, even a dropped stream's, because
    /// it may change the HPACK table the next one refers to.
    fn header_block(
        &mut self,
        id: u32,
        end_stream: bool,
        block: &[u8],
        now: Instant,
        outcomes: &mut Vec<Outcome>,
        out: &mut Vec<u8>,
    ) -> Result<(), H2Error> {
        let Some(request) = self.requests.get_mut(&id) else {
            return self.decoder.discard(block);
        };
        let decoded = if request.pending.has_head() {
            self.decoder.decode_trailers(block).map(|()| None)
        } else {
            self.decoder.decode_head(block, &WANTED)
        };
        let head = match decoded {
            Err(err) if err.connection => return Err(err),
            Err(err) => return self.fail_stream(id, err, outcomes, out),
            Ok(head) => head,
        };
        if let Some(head) = head {
            request.pending.set_head(&head, now, request.head_request);
        } else if request.pending.has_head() && !end_stream {
            return self.fail_stream(id, malformed("trailers without END_STREAM"), outcomes, out);
        }
        if end_stream {
            if !request.pending.has_head() {
                let err = malformed("the stream ended without a final response head");
                return self.fail_stream(id, err, outcomes, out);
            }
            self.complete(id, now, outcomes, out);
        }
        Ok(())
    }

    /// The response ended whole. A request body not yet sent whole (the
    /// server answered early) is cancelled, or its stream would stay open
    /// on the server and count against its limit (§8.1).
    fn complete(&mut self, id: u32, now: Instant, outcomes: &mut Vec<Outcome>, out: &mut Vec<u8>) {
        let request = self.requests.remove(&id).expect("a request in flight");
        if !request.unsent.is_empty() {
            codec::encode_rst_stream(id, code::CANCEL, out);
        }
        let outcome = request.pending.response(now);
        let outcome = outcome.expect("a final head before the end");
        self.answered |= matches!(outcome, Outcome::Response { .. });
        outcomes.push(outcome);
    }

    /// A malformed response: the stream is reset and its request fails.
    fn fail_stream(
        &mut self,
        id: u32,
        err: H2Error,
        outcomes: &mut Vec<Outcome>,
        out: &mut Vec<u8>,
    ) -> Result<(), H2Error> {
        codec::encode_rst_stream(id, err.code, out);
        let request = self.requests.remove(&id).expect("a request in flight");
        let message = format!("HTTP/2: {err}");
        outcomes.push(request.pending.failed(ErrorKind::Protocol, message, false));
        Ok(())
    }

    fn reset(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        outcomes: &mut Vec<Outcome>,
    ) -> Result<(), H2Error> {
        let reason = codec::u32_payload(header, payload)?;
        let Some(id) = self.known_stream(header.stream)? else {
            return Ok(());
        };
        let request = self.requests.remove(&id).expect("a known stream");
        // Refused unprocessed (§8.7): safe to send again, on a new
        // connection, so this one takes no more.
        let unsent = reason == code::REFUSED_STREAM;
        self.draining |= unsent;
        let message = format!(
            "HTTP/2: the server reset the stream with {}",
            codec::code_name(reason)
        );
        outcomes.push(request.pending.failed(ErrorKind::Reset, message, unsent));
        Ok(())
    }

    fn settings(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), H2Error> {
        if header.flags & flag::ACK != 0 {
            if !payload.is_empty() {
                return Err(H2Error::connection(
                    code::FRAME_SIZE_ERROR,
                    "a SETTINGS acknowledgement with a payload",
                ));
            }
            return Ok(());
        }
        for (id, value) in codec::parse_settings(header, payload)? {
            match id {
                setting::MAX_CONCURRENT_STREAMS => self.max_concurrent = value as usize,
                setting::INITIAL_WINDOW_SIZE => self.set_initial_window(value)?,
                setting::MAX_FRAME_SIZE => self.max_frame = value,
                setting::HEADER_TABLE_SIZE => {
                    self.encoder.set_max_size(value);
                    // The next block announces the new size.
                    self.steady = None;
                }
                _ => {}
            }
        }
        codec::encode_settings_ack(out);
        // A larger window lets waiting bodies go on.
        let waiting: Vec<u32> = self.requests.keys().copied().collect();
        for id in waiting {
            self.write_body(id, out);
        }
        Ok(())
    }

    /// A new initial window changes every open stream's by the difference
    /// (§6.9.2).
    fn set_initial_window(&mut self, value: u32) -> Result<(), H2Error> {
        let delta = i64::from(value) - self.initial_window;
        self.initial_window = i64::from(value);
        for request in self.requests.values_mut() {
            request.send_window += delta;
            if request.send_window > i64::from(LAST_STREAM_ID) {
                return Err(H2Error::connection(
                    code::FLOW_CONTROL_ERROR,
                    "SETTINGS_INITIAL_WINDOW_SIZE took a stream's window past 2^31 - 1",
                ));
            }
        }
        Ok(())
    }

    fn goaway(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        outcomes: &mut Vec<Outcome>,
    ) -> Result<(), H2Error> {
        let (last, reason) = codec::parse_goaway(header, payload)?;
        self.draining = true;
        self.goaway = Some(last);
        let unprocessed: Vec<u32> = self
            .requests
            .keys()
            .copied()
            .filter(|&id| id > last)
            .collect();
        for id in unprocessed {
            let request = self.requests.remove(&id).expect("a request in flight");
            let message = format!(
                "HTTP/2: the server sent GOAWAY ({}) before processing the request",
                codec::code_name(reason)
            );
            outcomes.push(request.pending.failed(ErrorKind::Reset, message, true));
        }
        Ok(())
    }

    /// A window raised (RFC 9113 §6.9): an increment of 0, or a window
    /// past 2^31 - 1 (§6.9.1), is an error of the stream it names, or of
    /// the connection on stream 0.
    fn window_update(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        outcomes: &mut Vec<Outcome>,
        out: &mut Vec<u8>,
    ) -> Result<(), H2Error> {
        const ZERO: &str = "a WINDOW_UPDATE of 0";
        const OVERFLOW: &str = "a WINDOW_UPDATE past 2^31 - 1";
        let increment = i64::from(codec::u32_payload(header, payload)? & LAST_STREAM_ID);
        if header.stream == 0 {
            if increment == 0 {
                return Err(H2Error::connection(code::PROTOCOL_ERROR, ZERO));
            }
            self.send_window += increment;
            if self.send_window > i64::from(LAST_STREAM_ID) {
                return Err(H2Error::connection(code::FLOW_CONTROL_ERROR, OVERFLOW));
            }
            let waiting: Vec<u32> = self.requests.keys().copied().collect();
            for id in waiting {
                self.write_body(id, out);
            }
            return Ok(());
        }
        if let Some(id) = self.known_stream(header.stream)? {
            let request = self.requests.get_mut(&id).expect("a known stream");
            if increment == 0 {
                return self.fail_stream(id, malformed(ZERO), outcomes, out);
            }
            request.send_window += increment;
            if request.send_window > i64::from(LAST_STREAM_ID) {
                let err = H2Error::stream(code::FLOW_CONTROL_ERROR, OVERFLOW);
                return self.fail_stream(id, err, outcomes, out);
            }
            self.write_body(id, out);
        }
        Ok(())
    }

    /// Requests past their deadline, cancelled (RST_STREAM) and taken out;
    /// the connection takes no more, as the other engines do.
    pub(crate) fn expire(
        &mut self,
        now: Instant,
        timeout: Duration,
        out: &mut Vec<u8>,
    ) -> Vec<Ticket> {
        let expired: Vec<u32> = self
            .requests
            .iter()
            .filter(|(_, request)| now >= request.pending.deadline(timeout))
            .map(|(id, _)| *id)
            .collect();
        self.draining |= !expired.is_empty();
        expired
            .into_iter()
            .map(|id| {
                codec::encode_rst_stream(id, code::CANCEL, out);
                let request = self.requests.remove(&id);
                request.expect("an expired request").pending.ticket
            })
            .collect()
    }

    /// The earliest deadline of a request in flight.
    pub(crate) fn next_expiry(&self, timeout: Duration) -> Option<Instant> {
        self.requests
            .values()
            .map(|request| request.pending.deadline(timeout))
            .min()
    }

    /// Every request still in flight, failed with the connection's end.
    pub(crate) fn fail_all(&mut self, kind: ErrorKind, message: &str, outcomes: &mut Vec<Outcome>) {
        for (_, request) in self.requests.drain() {
            outcomes.push(request.pending.failed(kind, message.to_string(), false));
        }
    }

    /// Queues a GOAWAY that closes the connection with `code`.
    pub(crate) fn close(&mut self, code: u32, out: &mut Vec<u8>) {
        codec::encode_goaway(0, code, out);
    }
}

fn ping(header: &FrameHeader, payload: &[u8], out: &mut Vec<u8>) -> Result<(), H2Error> {
    if header.stream != 0 {
        return Err(H2Error::connection(
            code::PROTOCOL_ERROR,
            "a PING on a stream",
        ));
    }
    if payload.len() != 8 {
        return Err(H2Error::connection(
            code::FRAME_SIZE_ERROR,
            "a PING that is not 8 bytes",
        ));
    }
    if header.flags & flag::ACK == 0 {
        codec::encode_ping_ack(payload, out);
    }
    Ok(())
}

fn malformed(reason: &'static str) -> H2Error {
    H2Error::stream(code::PROTOCOL_ERROR, reason)
}

#[cfg(test)]
mod tests {
    //! `H2Conn` against the `h2` crate's server over an in-memory pipe, on
    //! tokio's paused clock: a real peer's framing, flow control, resets
    //! and GOAWAY, without sockets.

    use bytes::Bytes;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    use super::*;

    /// What the test server does with each request.
    #[derive(Clone, Copy)]
    enum Reply {
        /// 200 with this many body bytes.
        Bytes(usize),
        /// 200 whose body says how many request body bytes came.
        CountBody,
        /// 200, one body byte, then trailers.
        Trailers,
        /// Reset the stream with this code.
        Reset(u32),
    }

    async fn serve(io: DuplexStream, reply: Reply, max_streams: u32, goaway_after: Option<usize>) {
        let mut conn = h2::server::Builder::new()
            .max_concurrent_streams(max_streams)
            .handshake::<_, Bytes>(io)
            .await
            .unwrap();
        let mut served = 0;
        while let Some(Ok((request, mut respond))) = conn.accept().await {
            served += 1;
            if goaway_after == Some(served) {
                conn.graceful_shutdown();
            }
            tokio::spawn(async move {
                let mut body = request.into_body();
                let mut received = 0;
                while let Some(Ok(chunk)) = body.data().await {
                    received += chunk.len();
                    let _ = body.flow_control().release_capacity(chunk.len());
                }
                let bytes = match reply {
                    Reply::Reset(code) => return respond.send_reset(h2::Reason::from(code)),
                    Reply::Bytes(n) => vec![b'x'; n],
                    Reply::CountBody => received.to_string().into_bytes(),
                    Reply::Trailers => vec![b'x'],
                };
                let response = http::Response::builder().status(200).body(()).unwrap();
                let mut send = respond.send_response(response, false).unwrap();
                let trailers = matches!(reply, Reply::Trailers);
                send.reserve_capacity(bytes.len());
                send.send_data(Bytes::from(bytes), !trailers).unwrap();
                if trailers {
                    let mut fields = http::HeaderMap::new();
                    fields.insert("x-check", "1".parse().unwrap());
                    send.send_trailers(fields).unwrap();
                }
            });
        }
    }

    /// A client connection and the pipe to the server.
    struct Client {
        conn: H2Conn,
        io: DuplexStream,
        out: Vec<u8>,
        inbox: Vec<u8>,
        outcomes: Vec<Outcome>,
        ticket_no: u64,
    }

    impl Client {
        fn start(reply: Reply, max_streams: u32, goaway_after: Option<usize>) -> Client {
            let (io, server) = tokio::io::duplex(1 << 20);
            tokio::spawn(serve(server, reply, max_streams, goaway_after));
            let mut out = Vec::new();
            let conn = H2Conn::new(&mut out);
            Client {
                conn,
                io,
                out,
                inbox: Vec::new(),
                outcomes: Vec::new(),
                ticket_no: 0,
            }
        }

        fn send(&mut self, head: &[u8], body: &Bytes) {
            self.ticket_no += 1;
            let ticket = Ticket {
                intended: None,
                warmup: false,
                resent: false,
            };
            self.conn
                .send(ticket, Instant::now(), head, false, body, &mut self.out);
        }

        /// Moves bytes both ways until `outcomes` requests ended or the
        /// connection has been quiet for a (virtual) second.
        async fn run_until(&mut self, outcomes: usize) -> Result<(), H2Error> {
            let mut buf = vec![0; 64 * 1024];
            while self.outcomes.len() < outcomes {
                self.io.write_all(&self.out).await.unwrap();
                self.out.clear();
                let read = tokio::time::timeout(Duration::from_secs(1), self.io.read(&mut buf));
                let Ok(Ok(read)) = read.await else {
                    return Ok(());
                };
                if read == 0 {
                    return Ok(());
                }
                self.inbox.extend_from_slice(&buf[..read]);
                let used = self.conn.receive(
                    &self.inbox,
                    Instant::now(),
                    &mut self.outcomes,
                    &mut self.out,
                )?;
                self.inbox.drain(..used);
            }
            self.io.write_all(&self.out).await.unwrap();
            self.out.clear();
            Ok(())
        }

        fn responses(&self) -> Vec<(u16, u64)> {
            self.outcomes
                .iter()
                .filter_map(|outcome| match outcome {
                    Outcome::Response { exchange, .. } => {
                        Some((exchange.status.as_u16(), exchange.body_bytes))
                    }
                    Outcome::Failed { .. } => None,
                })
                .collect()
        }

        fn failures(&self) -> Vec<(ErrorKind, String, bool)> {
            self.outcomes
                .iter()
                .filter_map(|outcome| match outcome {
                    Outcome::Failed {
                        kind,
                        message,
                        unsent,
                        ..
                    } => Some((*kind, message.clone(), *unsent)),
                    Outcome::Response { .. } => None,
                })
                .collect()
        }
    }

    /// A response head on stream 1: HEADERS with `:status 200` (HPACK's
    /// static index 8), END_HEADERS.
    fn status_200_head(wire: &mut Vec<u8>) {
        FrameHeader {
            len: 1,
            kind: frame::HEADERS,
            flags: flag::END_HEADERS,
            stream: 1,
        }
        .put(wire);
        wire.push(0x88);
    }

    /// A connection that sent one request (stream 1), and its bytes.
    fn one_request(method: &str, body: Bytes) -> (H2Conn, Vec<u8>) {
        let mut out = Vec::new();
        let mut conn = H2Conn::new(&mut out);
        let ticket = Ticket {
            intended: None,
            warmup: false,
            resent: false,
        };
        conn.send_request(
            ticket,
            Instant::now(),
            &parts(method),
            false,
            &body,
            &mut out,
        );
        (conn, out)
    }

    fn parts(method: &str) -> Parts {
        let request = http::Request::builder()
            .method(method)
            .uri("https://example.test/load")
            .body(())
            .unwrap();
        request.into_parts().0
    }

    fn head(method: &str) -> Vec<u8> {
        let mut out = Vec::new();
        HpackEncoder::new().encode_request(&parts(method), &mut out);
        out
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
    }

    #[test]
    fn responses_arrive_whole_on_many_streams() {
        runtime().block_on(async {
            let mut client = Client::start(Reply::Bytes(1000), 100, None);
            let head = head("GET");
            for _ in 0..10 {
                client.send(&head, &Bytes::new());
            }
            client.run_until(10).await.unwrap();
            assert_eq!(client.responses(), vec![(200, 1000); 10]);
            assert_eq!(client.conn.in_flight(), 0);
            assert!(client.conn.answered);
        });
    }

    #[test]
    fn a_download_larger_than_both_windows_completes() {
        runtime().block_on(async {
            let size = 6 * 1024 * 1024;
            let mut client = Client::start(Reply::Bytes(size), 100, None);
            client.send(&head("GET"), &Bytes::new());
            client.run_until(1).await.unwrap();
            assert_eq!(client.responses(), vec![(200, size as u64)]);
        });
    }

    #[test]
    fn a_body_larger_than_the_servers_window_is_sent_whole() {
        runtime().block_on(async {
            let mut client = Client::start(Reply::CountBody, 100, None);
            client.send(&head("POST"), &Bytes::from(vec![7u8; 200_000]));
            client.run_until(1).await.unwrap();
            // The body of the reply is "200000": six bytes.
            assert_eq!(client.responses(), vec![(200, 6)]);
        });
    }

    #[test]
    fn trailers_end_a_response() {
        runtime().block_on(async {
            let mut client = Client::start(Reply::Trailers, 100, None);
            client.send(&head("GET"), &Bytes::new());
            client.run_until(1).await.unwrap();
            assert_eq!(client.responses(), vec![(200, 1)]);
        });
    }

    #[test]
    fn a_refused_stream_goes_back_unsent_and_drains_the_connection() {
        runtime().block_on(async {
            let mut client = Client::start(Reply::Reset(code::REFUSED_STREAM), 100, None);
            client.send(&head("GET"), &Bytes::new());
            client.run_until(1).await.unwrap();
            let failures = client.failures();
            assert_eq!(failures.len(), 1);
            assert!(failures[0].2, "refused: unsent");
            assert!(
                failures[0].1.contains("REFUSED_STREAM"),
                "{}",
                failures[0].1
            );
            assert!(client.conn.draining);
        });
    }

    #[test]
    fn another_reset_fails_the_request() {
        runtime().block_on(async {
            let mut client = Client::start(Reply::Reset(0x2 /* INTERNAL_ERROR */), 100, None);
            client.send(&head("GET"), &Bytes::new());
            client.run_until(1).await.unwrap();
            let failures = client.failures();
            assert_eq!(failures[0].0, ErrorKind::Reset);
            assert!(!failures[0].2);
            assert!(
                failures[0].1.contains("INTERNAL_ERROR (0x2)"),
                "{}",
                failures[0].1
            );
        });
    }

    #[test]
    fn the_servers_stream_limit_caps_the_streams() {
        runtime().block_on(async {
            let mut client = Client::start(Reply::Bytes(10), 2, None);
            // Until quiet: the server's SETTINGS come with its first bytes.
            client.run_until(usize::MAX).await.unwrap();
            client.send(&head("GET"), &Bytes::new());
            client.run_until(1).await.unwrap();
            assert_eq!(client.conn.stream_limit(8), 2);
        });
    }

    #[test]
    fn goaway_drains_and_requests_after_it_go_back_unsent() {
        runtime().block_on(async {
            let mut client = Client::start(Reply::Bytes(10), 100, Some(1));
            let head = head("GET");
            client.send(&head, &Bytes::new());
            client.run_until(1).await.unwrap();
            assert!(client.conn.draining, "GOAWAY seen");
            client.send(&head, &Bytes::new());
            client.run_until(2).await.unwrap();
            let failures = client.failures();
            assert_eq!(failures.len(), 1, "{failures:?}");
            assert!(failures[0].2, "after GOAWAY's last stream: unsent");
        });
    }

    #[test]
    fn data_before_the_head_fails_the_stream_and_a_frame_on_an_unopened_stream_the_connection() {
        let (mut conn, mut out) = one_request("GET", Bytes::new());
        let mut outcomes = Vec::new();
        let mut frame = Vec::new();
        codec::encode_data_header(1, 3, true, &mut frame);
        frame.extend_from_slice(b"abc");
        let used = conn
            .receive(&frame, Instant::now(), &mut outcomes, &mut out)
            .unwrap();
        assert_eq!(used, frame.len());
        assert!(matches!(
            &outcomes[..],
            [Outcome::Failed {
                kind: ErrorKind::Protocol,
                ..
            }]
        ));
        let mut frame = Vec::new();
        codec::encode_data_header(3, 0, true, &mut frame);
        let err = conn
            .receive(&frame, Instant::now(), &mut outcomes, &mut out)
            .unwrap_err();
        assert!(err.connection);
        assert_eq!(err.code, code::PROTOCOL_ERROR);
    }

    #[test]
    fn a_padded_data_frame_without_room_for_its_pad_length_is_a_frame_size_error() {
        let (mut conn, mut out) = one_request("GET", Bytes::new());
        let mut wire = Vec::new();
        status_200_head(&mut wire);
        FrameHeader {
            len: 0,
            kind: frame::DATA,
            flags: flag::PADDED,
            stream: 1,
        }
        .put(&mut wire);
        // A well-formed frame after it, whose first byte is no Pad Length.
        FrameHeader {
            len: 1,
            kind: frame::DATA,
            flags: flag::END_STREAM,
            stream: 1,
        }
        .put(&mut wire);
        wire.push(b'a');
        let mut outcomes = Vec::new();
        let err = conn
            .receive(&wire, Instant::now(), &mut outcomes, &mut out)
            .unwrap_err();
        assert!(err.connection);
        assert_eq!(err.code, code::FRAME_SIZE_ERROR);
    }

    #[test]
    fn a_padded_response_fed_a_byte_at_a_time_arrives_whole() {
        let (mut conn, mut out) = one_request("GET", Bytes::new());
        let mut wire = Vec::new();
        status_200_head(&mut wire);
        // DATA: Pad Length 3, five bytes, three of padding, END_STREAM.
        FrameHeader {
            len: 9,
            kind: frame::DATA,
            flags: flag::PADDED | flag::END_STREAM,
            stream: 1,
        }
        .put(&mut wire);
        wire.extend_from_slice(&[3, b'a', b'b', b'c', b'd', b'e', 0, 0, 0]);
        let mut outcomes = Vec::new();
        let mut inbox = Vec::new();
        for &byte in &wire {
            inbox.push(byte);
            let used = conn
                .receive(&inbox, Instant::now(), &mut outcomes, &mut out)
                .unwrap();
            inbox.drain(..used);
        }
        assert!(inbox.is_empty(), "every byte used");
        let [Outcome::Response { exchange, .. }] = &outcomes[..] else {
            panic!("one response, not {} outcomes", outcomes.len());
        };
        assert_eq!((exchange.status.as_u16(), exchange.body_bytes), (200, 5));
        assert_eq!(conn.unacked, 9, "padding counts for flow control");
    }

    #[test]
    fn an_early_answer_cancels_the_rest_of_the_body() {
        // 100 KB against the initial 65,535-byte window: some stays unsent.
        let (mut conn, mut out) = one_request("POST", Bytes::from(vec![0u8; 100_000]));
        let mut wire = Vec::new();
        FrameHeader {
            len: 1,
            kind: frame::HEADERS,
            flags: flag::END_HEADERS | flag::END_STREAM,
            stream: 1,
        }
        .put(&mut wire);
        wire.push(0x88);
        out.clear();
        let mut outcomes = Vec::new();
        conn.receive(&wire, Instant::now(), &mut outcomes, &mut out)
            .unwrap();
        assert_eq!(outcomes.len(), 1);
        let mut cancel = Vec::new();
        codec::encode_rst_stream(1, code::CANCEL, &mut cancel);
        assert_eq!(out, cancel);
    }

    /// A HEADERS frame carrying `block` whole on stream 1.
    fn headers_frame(block: &[u8], end_stream: bool, wire: &mut Vec<u8>) {
        let end = if end_stream { flag::END_STREAM } else { 0 };
        FrameHeader {
            len: block.len() as u32,
            kind: frame::HEADERS,
            flags: flag::END_HEADERS | end,
            stream: 1,
        }
        .put(wire);
        wire.extend_from_slice(block);
    }

    /// `:status` (a static index) and `content-length: 10` (a literal
    /// with the static name, index 28, not indexed).
    fn head_with_length_10(status_index: u8) -> Vec<u8> {
        vec![0x80 | status_index, 0x0f, 0x0d, 0x02, b'1', b'0']
    }

    /// A `method` request answered with `:status` (static index
    /// `status_index`) and `content-length: 10`, then `body` in one DATA
    /// frame that ends the stream, or with no DATA at all.
    fn answered_with_length_10(
        method: &str,
        status_index: u8,
        body: Option<&[u8]>,
    ) -> (H2Conn, Vec<Outcome>) {
        let (mut conn, mut out) = one_request(method, Bytes::new());
        let mut wire = Vec::new();
        headers_frame(
            &head_with_length_10(status_index),
            body.is_none(),
            &mut wire,
        );
        if let Some(body) = body {
            codec::encode_data_header(1, body.len() as u32, true, &mut wire);
            wire.extend_from_slice(body);
        }
        let mut outcomes = Vec::new();
        conn.receive(&wire, Instant::now(), &mut outcomes, &mut out)
            .unwrap();
        (conn, outcomes)
    }

    #[test]
    fn a_body_shorter_than_its_content_length_is_malformed() {
        let (conn, outcomes) = answered_with_length_10("GET", 8, Some(b"12345"));
        assert!(
            matches!(
                &outcomes[..],
                [Outcome::Failed {
                    kind: ErrorKind::Protocol,
                    ..
                }]
            ),
            "RFC 9113 §8.1.1: content-length 10, 5 bytes of DATA"
        );
        assert!(!conn.answered);
    }

    #[test]
    fn content_length_is_not_held_against_head_204_or_304() {
        // HEAD (200), then GET with 304 (static index 11) and 204 (9): no
        // content, whatever content-length says.
        for (method, status) in [("HEAD", 8), ("GET", 11), ("GET", 9)] {
            let (_, outcomes) = answered_with_length_10(method, status, None);
            assert!(
                matches!(&outcomes[..], [Outcome::Response { .. }]),
                "{method} {status}"
            );
        }
        // And a body as long as it says is whole.
        let (_, outcomes) = answered_with_length_10("GET", 8, Some(b"0123456789"));
        let [Outcome::Response { exchange, .. }] = &outcomes[..] else {
            panic!("one response");
        };
        assert_eq!(exchange.body_bytes, 10);
    }

    #[test]
    fn a_bad_window_update_on_a_stream_fails_that_stream_only() {
        // RFC 9113 §6.9: an increment of 0 on a stream, or one that takes
        // its window past 2^31 - 1 (§6.9.1), is a stream error.
        for increment in [0, LAST_STREAM_ID] {
            // The stream's window is 65,535: the second overflows it.
            let (mut conn, mut out) = one_request("GET", Bytes::new());
            let mut wire = Vec::new();
            FrameHeader {
                len: 4,
                kind: frame::WINDOW_UPDATE,
                flags: 0,
                stream: 1,
            }
            .put(&mut wire);
            wire.extend_from_slice(&increment.to_be_bytes());
            out.clear();
            let mut outcomes = Vec::new();
            let result = conn.receive(&wire, Instant::now(), &mut outcomes, &mut out);
            assert_eq!(result, Ok(wire.len()), "increment {increment}");
            assert!(matches!(
                &outcomes[..],
                [Outcome::Failed {
                    kind: ErrorKind::Protocol,
                    ..
                }]
            ));
            assert_eq!(conn.in_flight(), 0);
            assert!(!out.is_empty(), "a RST_STREAM");
        }
        // On the connection, past 2^31 - 1: FLOW_CONTROL_ERROR for it.
        let (mut conn, mut out) = one_request("GET", Bytes::new());
        let mut wire = Vec::new();
        codec::encode_window_update(0, LAST_STREAM_ID, &mut wire);
        let err = conn
            .receive(&wire, Instant::now(), &mut Vec::new(), &mut out)
            .unwrap_err();
        assert_eq!((err.code, err.connection), (code::FLOW_CONTROL_ERROR, true));
    }

    #[test]
    fn a_frame_cut_short_waits_for_the_rest() {
        let mut out = Vec::new();
        let mut conn = H2Conn::new(&mut out);
        let mut frame = Vec::new();
        codec::encode_settings_ack(&mut frame);
        codec::encode_ping_ack(&[0; 8], &mut frame);
        let cut = frame.len() - 3;
        let used = conn
            .receive(&frame[..cut], Instant::now(), &mut Vec::new(), &mut out)
            .unwrap();
        assert_eq!(used, FrameHeader::LEN, "the SETTINGS ack only");
    }
}
