//! One HTTP/3 client connection over a quinn-proto connection, sans I/O:
//! it opens the control stream, sends requests as prepared bytes, reads
//! the server's streams through `codec`, and hands back each request's
//! outcome. The event loop moves its datagrams and calls it with the time.

use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use h3lab_results::ErrorKind;
use http::{HeaderName, StatusCode};
use quinn_proto::{
    Chunks, Connection, ConnectionError, Dir, Event, ReadError, StreamEvent, StreamId, VarInt,
};
use rustc_hash::FxHashMap;

use super::codec::{self, H3Error, ResponseParser, UniStreamParser};
use crate::books::Exchange;
use crate::schedule::Ticket;
use crate::server_timing;

/// The response fields the load report reads.
static WANTED: [HeaderName; 1] = [HeaderName::from_static("server-timing")];

/// A request on the wire.
struct InFlight {
    ticket: Ticket,
    sent_at: Instant,
    parser: ResponseParser,
    head: Option<(StatusCode, Instant, Option<Duration>)>,
    body_bytes: u64,
    /// The request's bytes flow control has not let out yet.
    unsent: Pieces,
}

/// A request's bytes: its HEADERS frame, then, with a body, a DATA frame's
/// header and the body. Empty pieces stand for absent ones, so a request
/// costs no allocation of its own.
pub(crate) struct Pieces(pub(crate) [Bytes; 3]);

/// How a request ended.
pub(crate) enum Outcome {
    Response {
        ticket: Ticket,
        sent_at: Instant,
        exchange: Exchange,
    },
    Failed {
        ticket: Ticket,
        kind: ErrorKind,
        message: String,
        /// The server refused it unprocessed (GOAWAY, H3_REQUEST_REJECTED):
        /// safe to send again elsewhere.
        unsent: bool,
    },
}

/// What the connection as a whole did.
#[derive(Debug, PartialEq)]
pub(crate) enum Change {
    Connected,
    Lost(ConnectionError),
}

pub(crate) struct H3Conn {
    pub(crate) quic: Connection,
    pub(crate) started: Instant,
    pub(crate) connected: bool,
    /// No new requests: the server sent GOAWAY, or a request timed out.
    pub(crate) draining: bool,
    /// Datagrams arrived for it since the loop last ran it.
    pub(crate) dirty: bool,
    /// When the loop must run it next without a datagram: its QUIC timer,
    /// a request's deadline, an open-model send (`None`: nothing due).
    pub(crate) wake: Option<Instant>,
    requests: FxHashMap<StreamId, InFlight>,
    uni: FxHashMap<StreamId, UniStreamParser>,
    /// The server's GOAWAY: requests on this stream and later went
    /// unprocessed.
    goaway: Option<u64>,
}

impl H3Conn {
    pub(crate) fn new(quic: Connection, started: Instant) -> H3Conn {
        H3Conn {
            quic,
            started,
            connected: false,
            draining: false,
            dirty: true,
            wake: None,
            requests: FxHashMap::default(),
            uni: FxHashMap::default(),
            goaway: None,
        }
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.requests.len()
    }

    /// Sends one request made of `pieces`. Gives the ticket back when the
    /// server's stream limit is reached for now.
    pub(crate) fn send(
        &mut self,
        ticket: Ticket,
        now: Instant,
        pieces: Pieces,
    ) -> Result<(), Ticket> {
        let Some(id) = self.quic.streams().open(Dir::Bi) else {
            return Err(ticket);
        };
        self.requests.insert(
            id,
            InFlight {
                ticket,
                sent_at: now,
                parser: ResponseParser::new(&WANTED),
                head: None,
                body_bytes: 0,
                unsent: pieces,
            },
        );
        self.write(id);
        Ok(())
    }

    /// Writes what flow control allows of a request, and its end.
    fn write(&mut self, id: StreamId) {
        let Some(request) = self.requests.get_mut(&id) else {
            return;
        };
        let mut stream = self.quic.send_stream(id);
        for piece in request
            .unsent
            .0
            .iter_mut()
            .filter(|piece| !piece.is_empty())
        {
            match stream.write(piece) {
                Ok(written) => piece.advance(written),
                // Blocked, or stopped (the read side reports the reset).
                Err(_) => return,
            }
            if !piece.is_empty() {
                return;
            }
        }
        let _ = stream.finish();
    }

    /// Handles quinn-proto's application events: responses read, streams
    /// opened by the server, the handshake's end or the connection's loss.
    pub(crate) fn poll_events(
        &mut self,
        now: Instant,
        outcomes: &mut Vec<Outcome>,
    ) -> Option<Change> {
        let mut change = None;
        while let Some(event) = self.quic.poll() {
            match event {
                Event::Connected => {
                    self.connected = true;
                    self.open_control_stream();
                    change = Some(Change::Connected);
                }
                Event::ConnectionLost { reason } => return Some(Change::Lost(reason)),
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => self.accept_uni(),
                Event::Stream(StreamEvent::Readable { id }) => self.read(id, now, outcomes),
                Event::Stream(StreamEvent::Writable { id }) => self.write(id),
                _ => {}
            }
        }
        change
    }

    fn open_control_stream(&mut self) {
        if let Some(id) = self.quic.streams().open(Dir::Uni) {
            let preamble = codec::control_stream_preamble();
            let _ = self.quic.send_stream(id).write(&preamble);
        }
    }

    fn accept_uni(&mut self) {
        while let Some(id) = self.quic.streams().accept(Dir::Uni) {
            self.uni.insert(id, UniStreamParser::new());
        }
    }

    fn read(&mut self, id: StreamId, now: Instant, outcomes: &mut Vec<Outcome>) {
        if self.uni.contains_key(&id) {
            return self.read_uni(id);
        }
        let Some(request) = self.requests.get_mut(&id) else {
            return;
        };
        let mut recv = self.quic.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return;
        };
        let end = read_response(&mut chunks, request, now);
        let _ = chunks.finalize();
        if let Some(end) = end {
            if let Err(Ending::Protocol(err)) = &end {
                if !err.is_stream_error() {
                    self.close(now, err);
                }
            }
            let request = self
                .requests
                .remove(&id)
                .expect("read from a request in flight");
            outcomes.push(conclude(request, end, now));
        }
    }

    fn read_uni(&mut self, id: StreamId) {
        let parser = self
            .uni
            .get_mut(&id)
            .expect("a known unidirectional stream");
        let mut recv = self.quic.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return;
        };
        let mut goaway = None;
        let mut failed = None;
        while failed.is_none() {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => match parser.feed(&chunk.bytes) {
                    Ok(Some(id)) => goaway = Some(id),
                    Ok(None) => {}
                    Err(err) => failed = Some(err),
                },
                Ok(None) => {
                    failed = parser.finish().err();
                    break;
                }
                Err(_) => break,
            }
        }
        let _ = chunks.finalize();
        if let Some(err) = failed {
            self.close(Instant::now(), &err);
        } else if goaway.is_some() {
            self.draining = true;
            self.goaway = goaway;
        }
    }

    /// Closes the connection for the server's protocol error `err`.
    fn close(&mut self, now: Instant, err: &H3Error) {
        let code = VarInt::from_u64(err.code).expect("HTTP/3 codes fit a varint");
        self.quic
            .close(now, code, Bytes::from_static(err.reason.as_bytes()));
    }

    /// Requests past their deadline, taken out; the connection takes no
    /// more (a stuck response, or a dead peer whose connection looks open
    /// until its idle timeout).
    pub(crate) fn expire(&mut self, now: Instant, timeout: Duration) -> Vec<Ticket> {
        let expired: Vec<StreamId> = self
            .requests
            .iter()
            .filter(|(_, request)| now >= request.sent_at + timeout)
            .map(|(id, _)| *id)
            .collect();
        if !expired.is_empty() {
            self.draining = true;
        }
        expired
            .into_iter()
            .map(|id| {
                let cancelled = VarInt::from_u64(codec::code::H3_REQUEST_CANCELLED);
                let _ = self
                    .quic
                    .recv_stream(id)
                    .stop(cancelled.expect("a small code"));
                self.requests.remove(&id).expect("expired request").ticket
            })
            .collect()
    }

    /// The earliest deadline of a request in flight.
    pub(crate) fn next_expiry(&self, timeout: Duration) -> Option<Instant> {
        self.requests
            .values()
            .map(|request| request.sent_at + timeout)
            .min()
    }

    /// Every request still in flight, failed with the connection's end.
    pub(crate) fn fail_all(&mut self, reason: &ConnectionError, outcomes: &mut Vec<Outcome>) {
        let kind = match reason {
            ConnectionError::TimedOut => ErrorKind::Timeout,
            _ => ErrorKind::Reset,
        };
        let goaway = self.goaway;
        for (id, request) in self.requests.drain() {
            let unsent = goaway.is_some_and(|first| u64::from(VarInt::from(id)) >= first);
            outcomes.push(Outcome::Failed {
                ticket: request.ticket,
                kind,
                message: format!("HTTP/3: the QUIC connection ended: {reason}"),
                unsent,
            });
        }
    }
}

/// Feeds what the stream has to the parser; `Some` when the stream ended
/// (its FIN, a reset, or a protocol error).
fn read_response(
    chunks: &mut Chunks,
    request: &mut InFlight,
    now: Instant,
) -> Option<Result<(), Ending>> {
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(chunk)) => match request.parser.feed(&chunk.bytes) {
                Ok(progress) => {
                    request.body_bytes += progress.body_bytes;
                    if let Some(head) = progress.head {
                        let origin_wait = server_timing::origin_wait_in(
                            head.fields.iter().map(|(_, value)| value),
                        );
                        request.head = Some((head.status, now, origin_wait));
                    }
                }
                Err(err) => return Some(Err(Ending::Protocol(err))),
            },
            Ok(None) => return Some(request.parser.finish().map_err(Ending::Protocol)),
            Err(ReadError::Blocked) => return None,
            Err(ReadError::Reset(code)) => return Some(Err(Ending::Reset(code.into_inner()))),
        }
    }
}

/// Why a response did not arrive whole.
enum Ending {
    Protocol(H3Error),
    Reset(u64),
}

fn conclude(request: InFlight, end: Result<(), Ending>, now: Instant) -> Outcome {
    let InFlight {
        ticket,
        sent_at,
        head,
        body_bytes,
        ..
    } = request;
    match (end, head) {
        (Ok(()), Some((status, head_at, origin_wait))) => Outcome::Response {
            ticket,
            sent_at,
            exchange: Exchange {
                status,
                head_at,
                end_at: now,
                body_bytes,
                origin_wait,
            },
        },
        (Ok(()), None) => Outcome::Failed {
            ticket,
            kind: ErrorKind::Protocol,
            message: "HTTP/3: the response stream ended without a final response head".into(),
            unsent: false,
        },
        (Err(Ending::Reset(code)), _) => Outcome::Failed {
            ticket,
            kind: ErrorKind::Reset,
            message: format!("HTTP/3: the server reset the request stream with code {code:#x}"),
            unsent: code == codec::code::H3_REQUEST_REJECTED,
        },
        (Err(Ending::Protocol(err)), _) => Outcome::Failed {
            ticket,
            kind: ErrorKind::Protocol,
            message: format!("HTTP/3: {} (code {:#x})", err.reason, err.code),
            unsent: false,
        },
    }
}
