//! One HTTP/3 client connection over a quinn-proto connection, sans I/O:
//! it opens the control stream, sends requests as prepared bytes, reads
//! the server's streams through `codec`, and hands back each request's
//! outcome. The event loop moves its datagrams and calls it with the time.

use std::time::{Duration, Instant};

use bytes::Bytes;
use h3lab_client::h3_code_name;
use h3lab_results::ErrorKind;
use http::HeaderName;
use quinn_proto::{
    Chunks, Connection, ConnectionError, Dir, Event, ReadError, StreamEvent, StreamId, VarInt,
};
use rustc_hash::FxHashMap;

use super::codec::{self, H3Error, LastHead, ResponseParser, UniStreamParser};
use crate::books::{Outcome, Pending};
use crate::schedule::Ticket;

/// The response fields the load report reads.
static WANTED: [HeaderName; 1] = [HeaderName::from_static("server-timing")];

/// A request on the wire.
struct InFlight {
    pending: Pending,
    parser: ResponseParser,
    /// The request's bytes flow control has not let out yet.
    unsent: Pieces,
}

/// A request's bytes: its HEADERS frame, then, with a body, a DATA frame's
/// header and the body. Empty pieces stand for absent ones, so a request
/// costs no allocation of its own.
pub(crate) struct Pieces(pub(crate) [Bytes; 3]);

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
    /// Its end was reported (`Change::Lost`).
    ended: bool,
    /// The server's stream limit is reached until it raises it.
    pub(crate) stream_blocked: bool,
    /// Whether it delivered a response: a request it then refuses
    /// unprocessed is sent again elsewhere, uncounted.
    pub(crate) answered: bool,
    /// Requests sent on it.
    pub(crate) sent: u64,
    last_head: LastHead,
    /// Its requests are HEADs, whose responses have no content.
    head_requests: bool,
}

impl H3Conn {
    pub(crate) fn new(quic: Connection, started: Instant, head_requests: bool) -> H3Conn {
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
            ended: false,
            stream_blocked: false,
            answered: false,
            sent: 0,
            last_head: LastHead::default(),
            head_requests,
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
            self.stream_blocked = true;
            return Err(ticket);
        };
        self.requests.insert(
            id,
            InFlight {
                pending: Pending::new(ticket, now),
                parser: ResponseParser::new(&WANTED),
                unsent: pieces,
            },
        );
        self.sent += 1;
        self.write(id);
        Ok(())
    }

    /// Writes what flow control allows of a request, and its end.
    fn write(&mut self, id: StreamId) {
        let Some(request) = self.requests.get_mut(&id) else {
            return;
        };
        let mut stream = self.quic.send_stream(id);
        // Written until done or refused: quinn-proto signals `Writable`
        // only after a write that returned `Blocked`, not after a short one
        // (the connection's credit ran out). The pieces are handed over as
        // they are: `write` would copy each into a buffer of its own.
        while request.unsent.0.iter().any(|piece| !piece.is_empty()) {
            // Blocked, or stopped (the read side reports the reset).
            if stream.write_chunks(&mut request.unsent.0).is_err() {
                return;
            }
        }
        let _ = stream.finish();
    }

    /// Handles quinn-proto's application events: responses read, streams
    /// opened by the server, the handshake's end or the connection's loss.
    /// quinn-proto reports no loss for a close of our own (a protocol
    /// error of the server's), so that is reported here, once.
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
                Event::ConnectionLost { reason } => {
                    self.ended = true;
                    return Some(Change::Lost(reason));
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => self.accept_uni(),
                Event::Stream(StreamEvent::Readable { id }) => self.read(id, now, outcomes),
                Event::Stream(StreamEvent::Writable { id }) => self.write(id),
                // RFC 9000 §3.5: STOP_SENDING calls for RESET_STREAM, which
                // quinn-proto leaves to its user; without it the server
                // never frees the stream.
                Event::Stream(StreamEvent::Stopped { id, error_code }) => {
                    let _ = self.quic.send_stream(id).reset(error_code);
                }
                Event::Stream(StreamEvent::Available { dir: Dir::Bi }) => {
                    self.stream_blocked = false;
                }
                _ => {}
            }
        }
        self.refuse_past_goaway(outcomes);
        if !self.ended && self.quic.is_closed() {
            self.ended = true;
            return Some(Change::Lost(ConnectionError::LocallyClosed));
        }
        change
    }

    /// Requests at or past the server's GOAWAY ID, which it will not
    /// process (RFC 9114 §5.2): given back now, not when it closes.
    fn refuse_past_goaway(&mut self, outcomes: &mut Vec<Outcome>) {
        let Some(first) = self.goaway else {
            return;
        };
        let refused: Vec<StreamId> = self
            .requests
            .keys()
            .filter(|&&id| past_goaway(id, first))
            .copied()
            .collect();
        for id in refused {
            let request = self.requests.remove(&id).expect("a request in flight");
            self.cancel(id);
            let message = "HTTP/3: the server's GOAWAY left the request unprocessed".into();
            outcomes.push(request.pending.failed(ErrorKind::Reset, message, true));
        }
    }

    /// Gives up a request's stream both ways (RFC 9114 §4.1.1): the
    /// server stops sending the response and frees the stream even when
    /// part of the body was never sent.
    fn cancel(&mut self, id: StreamId) {
        let cancelled = h3_code(codec::code::H3_REQUEST_CANCELLED);
        let _ = self.quic.recv_stream(id).stop(cancelled);
        let _ = self.quic.send_stream(id).reset(cancelled);
    }

    fn open_control_stream(&mut self) {
        if let Some(id) = self.quic.streams().open(Dir::Uni) {
            let preamble = codec::control_stream_preamble();
            let _ = self.quic.send_stream(id).write(&preamble);
        }
    }

    /// Takes the server's new unidirectional streams and reads what came
    /// with them: quinn-proto signals a stream's first bytes only through
    /// its opening, not as `Readable`.
    fn accept_uni(&mut self) {
        while let Some(id) = self.quic.streams().accept(Dir::Uni) {
            self.uni.insert(id, UniStreamParser::new());
            self.read_uni(id);
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
        let end = read_response(
            &mut chunks,
            request,
            &mut self.last_head,
            self.head_requests,
            now,
        );
        let _ = chunks.finalize();
        if let Some(end) = end {
            match &end {
                Err(Ending::Protocol(err)) if err.is_stream_error() => {
                    let code = h3_code(err.code);
                    let _ = self.quic.recv_stream(id).stop(code);
                }
                Err(Ending::Protocol(err)) => self.close(now, err),
                Err(Ending::Reset(_)) | Ok(()) => {}
            }
            let request = self
                .requests
                .remove(&id)
                .expect("read from a request in flight");
            if request.unsent.0.iter().any(|piece| !piece.is_empty()) {
                // Its body is no longer sent (`write` finds no request):
                // without a reset, the stream is never done with.
                let _ = self
                    .quic
                    .send_stream(id)
                    .reset(h3_code(codec::code::H3_REQUEST_CANCELLED));
            }
            let outcome = conclude(request, end, now);
            self.answered |= matches!(outcome, Outcome::Response { .. });
            if matches!(outcome, Outcome::Failed { unsent: true, .. }) {
                // Refused unprocessed: no more requests on this connection,
                // so that a retry costs a new connection, as a GOAWAY does.
                self.draining = true;
            }
            outcomes.push(outcome);
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
                // Its end, FIN or reset (RFC 9114 §6.2.1).
                Ok(None) | Err(ReadError::Reset(_)) => {
                    failed = parser.finish().err();
                    break;
                }
                Err(ReadError::Blocked) => break,
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
        let code = h3_code(err.code);
        self.quic
            .close(now, code, Bytes::from_static(err.reason.as_bytes()));
    }

    /// Requests past their deadline, taken out; the connection takes no
    /// more (a stuck response, or a dead peer whose connection looks open
    /// until its idle timeout).
    pub(crate) fn expire(&mut self, now: Instant, timeout: Duration) -> Vec<Ticket> {
        // Whether the oldest is due (a comparison of send times) before
        // computing each request's deadline: this runs for every
        // connection each turn it has work.
        if self.next_expiry(timeout).is_none_or(|at| now < at) {
            return Vec::new();
        }
        let expired: Vec<StreamId> = self
            .requests
            .iter()
            .filter(|(_, request)| now >= request.pending.deadline(timeout))
            .map(|(id, _)| *id)
            .collect();
        if !expired.is_empty() {
            self.draining = true;
        }
        expired
            .into_iter()
            .map(|id| {
                self.cancel(id);
                let request = self.requests.remove(&id).expect("expired request");
                request.pending.ticket
            })
            .collect()
    }

    /// The earliest deadline of a request in flight.
    pub(crate) fn next_expiry(&self, timeout: Duration) -> Option<Instant> {
        let oldest = self
            .requests
            .values()
            .min_by_key(|request| request.pending.sent_at)?;
        Some(oldest.pending.deadline(timeout))
    }

    /// Every request still in flight, failed with the connection's end.
    pub(crate) fn fail_all(&mut self, reason: &ConnectionError, outcomes: &mut Vec<Outcome>) {
        let kind = match reason {
            ConnectionError::TimedOut => ErrorKind::Timeout,
            _ => ErrorKind::Reset,
        };
        let goaway = self.goaway;
        for (id, request) in self.requests.drain() {
            let unsent = goaway.is_some_and(|first| past_goaway(id, first));
            let message = connection_ended(reason);
            outcomes.push(request.pending.failed(kind, message, unsent));
        }
    }
}

/// Whether request stream `id` is at or past a GOAWAY's `first` refused
/// ID: the server will not process it (RFC 9114 §5.2).
fn past_goaway(id: StreamId, first: u64) -> bool {
    u64::from(VarInt::from(id)) >= first
}

/// An HTTP/3 error code as QUIC carries it.
pub(super) fn h3_code(code: u64) -> VarInt {
    VarInt::from_u64(code).expect("HTTP/3 codes fit a varint")
}

/// Why a request failed with its connection, naming the server's HTTP/3
/// code when it closed the connection with one.
fn connection_ended(reason: &ConnectionError) -> String {
    match reason {
        ConnectionError::ApplicationClosed(close) => format!(
            "HTTP/3: the server closed the connection with {}",
            h3_code_name(close.error_code.into_inner())
        ),
        other => format!("HTTP/3: the QUIC connection ended: {other}"),
    }
}

/// Feeds what the stream has to the parser; `Some` when the stream ended
/// (its FIN, a reset, or a protocol error).
fn read_response(
    chunks: &mut Chunks,
    request: &mut InFlight,
    last_head: &mut LastHead,
    head_request: bool,
    now: Instant,
) -> Option<Result<(), Ending>> {
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(chunk)) => match request.parser.feed(&chunk.bytes, last_head) {
                Ok(progress) => {
                    request.pending.body_bytes += progress.body_bytes;
                    if let Some(head) = progress.head {
                        request.pending.set_head(&head, now, head_request);
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
    let pending = request.pending;
    match end {
        Ok(()) if pending.has_head() => pending.response(now).expect("a final head"),
        Ok(()) => {
            let message = "HTTP/3: the response stream ended without a final response head";
            pending.failed(ErrorKind::Protocol, message.into(), false)
        }
        Err(Ending::Reset(code)) => {
            let message = format!(
                "HTTP/3: the server reset the request stream with {}",
                h3_code_name(code)
            );
            let unsent = code == codec::code::H3_REQUEST_REJECTED;
            pending.failed(ErrorKind::Reset, message, unsent)
        }
        Err(Ending::Protocol(err)) => {
            let message = format!("HTTP/3: {} ({})", err.reason, h3_code_name(err.code));
            pending.failed(ErrorKind::Protocol, message, false)
        }
    }
}

#[cfg(test)]
mod tests {
    //! `H3Conn` against a quinn-proto server in memory, in virtual time:
    //! the test plays the HTTP/3 server with hand-built frames.

    use std::net::SocketAddr;
    use std::sync::Arc;

    use bytes::BytesMut;
    use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
    use quinn_proto::{
        ClientConfig, ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig, ServerConfig,
    };

    use super::*;

    const CLIENT: &str = "127.0.0.1:40000";
    const SERVER: &str = "127.0.0.1:443";
    /// A field section of one line, `:status 200` (static index 25).
    const STATUS_200: [u8; 3] = [0x00, 0x00, 0xc0 | 25];

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    /// A frame of type `ty` (all fit one varint byte here) around `payload`.
    fn frame(ty: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![ty];
        assert!(payload.len() < 64, "one-byte length");
        out.push(payload.len() as u8);
        out.extend_from_slice(payload);
        out
    }

    /// A client `H3Conn` and the server's end, joined by memory.
    struct Pair {
        now: Instant,
        client: Endpoint,
        server: Endpoint,
        h3: H3Conn,
        client_handle: ConnectionHandle,
        server_conn: Option<(ConnectionHandle, Connection)>,
        outcomes: Vec<Outcome>,
        changes: Vec<Change>,
        /// Streams the server reads as bytes come, and what it has read
        /// (and whether to the end).
        reading: Vec<(StreamId, usize, bool)>,
    }

    impl Pair {
        fn connected() -> Pair {
            Pair::with_stream_limit(100)
        }

        /// A pair whose server lets `streams` requests be open at once.
        fn with_stream_limit(streams: u32) -> Pair {
            let mut transport = quinn_proto::TransportConfig::default();
            transport.max_concurrent_bidi_streams(streams.into());
            Pair::with_transport(transport)
        }

        /// A pair whose server runs with `transport`.
        fn with_transport(transport: quinn_proto::TransportConfig) -> Pair {
            let generated = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
            let cert = generated.cert.der().clone();
            let key = rustls::pki_types::PrivateKeyDer::Pkcs8(
                generated.signing_key.serialize_der().into(),
            );
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut server_tls = rustls::ServerConfig::builder_with_provider(provider.clone())
                .with_protocol_versions(&[&rustls::version::TLS13])
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![cert.clone()], key)
                .unwrap();
            server_tls.alpn_protocols = vec![b"h3".to_vec()];
            let mut roots = rustls::RootCertStore::empty();
            roots.add(cert).unwrap();
            let mut client_tls = rustls::ClientConfig::builder_with_provider(provider)
                .with_protocol_versions(&[&rustls::version::TLS13])
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
            client_tls.alpn_protocols = vec![b"h3".to_vec()];
            let mut server_config = ServerConfig::with_crypto(Arc::new(
                QuicServerConfig::try_from(server_tls).unwrap(),
            ));
            server_config.transport_config(Arc::new(transport));
            let client_config =
                ClientConfig::new(Arc::new(QuicClientConfig::try_from(client_tls).unwrap()));
            let endpoint_config = Arc::new(EndpointConfig::default());
            let server = Endpoint::new(
                endpoint_config.clone(),
                Some(Arc::new(server_config)),
                true,
                Some([1; 32]),
            );
            let mut client = Endpoint::new(endpoint_config, None, true, Some([2; 32]));
            let now = Instant::now();
            let (client_handle, quic) = client
                .connect(now, client_config, addr(SERVER), "localhost")
                .unwrap();
            let mut pair = Pair {
                now,
                client,
                server,
                h3: H3Conn::new(quic, now, false),
                client_handle,
                server_conn: None,
                outcomes: Vec::new(),
                changes: Vec::new(),
                reading: Vec::new(),
            };
            pair.run();
            assert!(pair.h3.connected, "the handshake completes");
            pair
        }

        fn server(&mut self) -> &mut Connection {
            &mut self.server_conn.as_mut().expect("the server accepted").1
        }

        /// Moves datagrams both ways, a millisecond of virtual time per
        /// round, and jumps to the next timer due within 200 ms (a delayed
        /// acknowledgement, say) when neither side has anything to send.
        fn run(&mut self) {
            for _ in 0..500 {
                let sent = self.client_turn() | self.server_turn();
                if sent {
                    self.now += Duration::from_millis(1);
                    continue;
                }
                let server_timer = self
                    .server_conn
                    .as_mut()
                    .and_then(|(_, conn)| conn.poll_timeout());
                let next = [self.h3.quic.poll_timeout(), server_timer]
                    .into_iter()
                    .flatten()
                    .min();
                match next {
                    Some(at) if at <= self.now + Duration::from_millis(200) => {
                        self.now = self.now.max(at)
                    }
                    _ => return,
                }
            }
            panic!("the connection never went quiet");
        }

        fn client_turn(&mut self) -> bool {
            let now = self.now;
            if self.h3.quic.poll_timeout().is_some_and(|at| at <= now) {
                self.h3.quic.handle_timeout(now);
            }
            while let Some(event) = self.h3.quic.poll_endpoint_events() {
                if let Some(event) = self.client.handle_event(self.client_handle, event) {
                    self.h3.quic.handle_event(event);
                }
            }
            self.changes
                .extend(self.h3.poll_events(now, &mut self.outcomes));
            let mut datagrams = Vec::new();
            let mut buf = Vec::new();
            while let Some(transmit) = self.h3.quic.poll_transmit(now, 1, &mut buf) {
                datagrams.push(buf[..transmit.size].to_vec());
                buf.clear();
            }
            for datagram in &datagrams {
                self.deliver_to_server(datagram);
            }
            !datagrams.is_empty()
        }

        fn deliver_to_server(&mut self, datagram: &[u8]) {
            let mut buf = Vec::new();
            let data = BytesMut::from(datagram);
            match self
                .server
                .handle(self.now, addr(CLIENT), None, None, data, &mut buf)
            {
                Some(DatagramEvent::NewConnection(incoming)) => {
                    let accepted = self.server.accept(incoming, self.now, &mut buf, None);
                    self.server_conn = Some(accepted.unwrap());
                }
                Some(DatagramEvent::ConnectionEvent(_, event)) => self.server().handle_event(event),
                _ => {}
            }
        }

        fn server_turn(&mut self) -> bool {
            let now = self.now;
            let Some((handle, conn)) = self.server_conn.as_mut() else {
                return false;
            };
            if conn.poll_timeout().is_some_and(|at| at <= now) {
                conn.handle_timeout(now);
            }
            while let Some(event) = conn.poll_endpoint_events() {
                if let Some(event) = self.server.handle_event(*handle, event) {
                    conn.handle_event(event);
                }
            }
            while conn.poll().is_some() {}
            for (id, read, finished) in &mut self.reading {
                let mut recv = conn.recv_stream(*id);
                let Ok(mut chunks) = recv.read(true) else {
                    continue;
                };
                loop {
                    match chunks.next(usize::MAX) {
                        Ok(Some(chunk)) => *read += chunk.bytes.len(),
                        Ok(None) => {
                            *finished = true;
                            break;
                        }
                        Err(_) => break,
                    }
                }
                let _ = chunks.finalize();
            }
            let mut datagrams = Vec::new();
            let mut buf = Vec::new();
            while let Some(transmit) = conn.poll_transmit(now, 1, &mut buf) {
                datagrams.push(buf[..transmit.size].to_vec());
                buf.clear();
            }
            for datagram in &datagrams {
                let data = BytesMut::from(&datagram[..]);
                let mut response = Vec::new();
                let event = self
                    .client
                    .handle(now, addr(SERVER), None, None, data, &mut response);
                if let Some(DatagramEvent::ConnectionEvent(_, event)) = event {
                    self.h3.quic.handle_event(event);
                }
            }
            !datagrams.is_empty()
        }

        /// Sends one GET (`GET https://.../`); gives the ticket back if
        /// no stream is free.
        fn send(&mut self) -> Result<(), Ticket> {
            let ticket = Ticket {
                intended: None,
                warmup: false,
                resent: false,
            };
            let head = Bytes::from(frame(0x01, &[0x00, 0x00, 0xd1, 0xd7, 0xc1]));
            self.h3
                .send(ticket, self.now, Pieces([head, Bytes::new(), Bytes::new()]))
        }

        /// Sends one GET and lets the server take its stream.
        fn request(&mut self) -> StreamId {
            assert!(self.send().is_ok(), "a stream is free");
            self.run();
            let id = self.server().streams().accept(Dir::Bi);
            let id = id.expect("the request stream");
            // Read to its end, as a server does: only a stream done both
            // ways frees the client a new one.
            let mut recv = self.server().recv_stream(id);
            let mut chunks = recv.read(true).unwrap();
            while let Ok(Some(_)) = chunks.next(usize::MAX) {}
            let _ = chunks.finalize();
            id
        }

        /// The server writes `bytes` on `id`, then its end if `fin`.
        fn respond(&mut self, id: StreamId, bytes: &[u8], fin: bool) {
            self.server().send_stream(id).write(bytes).unwrap();
            if fin {
                self.server().send_stream(id).finish().unwrap();
            }
            self.run();
        }
    }

    #[test]
    fn a_response_arrives_whole_with_its_status_and_body() {
        let mut pair = Pair::connected();
        let id = pair.request();
        let mut response = frame(0x01, &STATUS_200);
        response.extend(frame(0x00, &[7; 40]));
        response.extend(frame(0x00, &[7; 2]));
        pair.respond(id, &response, true);
        assert_eq!(pair.outcomes.len(), 1);
        match &pair.outcomes[0] {
            Outcome::Response { exchange, .. } => {
                assert_eq!(exchange.status, http::StatusCode::OK);
                assert_eq!(exchange.body_bytes, 42);
                assert!(exchange.head_at <= exchange.end_at);
            }
            Outcome::Failed { message, .. } => panic!("failed: {message}"),
        }
        assert_eq!(pair.h3.in_flight(), 0);
        assert!(pair.h3.answered);
    }

    #[test]
    fn a_response_still_open_is_not_an_outcome() {
        let mut pair = Pair::connected();
        let id = pair.request();
        pair.respond(id, &frame(0x01, &STATUS_200), false);
        assert!(pair.outcomes.is_empty(), "no FIN yet");
        assert_eq!(pair.h3.in_flight(), 1);
    }

    fn failure(pair: &Pair) -> (ErrorKind, bool) {
        match pair.outcomes.as_slice() {
            [Outcome::Failed { kind, unsent, .. }] => (*kind, *unsent),
            _ => panic!("expected one failure"),
        }
    }

    /// RFC 9114 §4.1.2: DATA that does not add up to the content-length
    /// is a malformed response, not an answer; a HEAD's response has no
    /// content, whatever its content-length says.
    #[test]
    fn a_body_must_add_up_to_its_content_length_unless_there_is_none() {
        // `:status 200`, then `content-length: 10` (static name 4).
        let head = frame(0x01, &[0x00, 0x00, 0xc0 | 25, 0x54, 0x02, b'1', b'0']);
        let mut short = head.clone();
        short.extend(frame(0x00, b"12345"));
        let mut pair = Pair::connected();
        let id = pair.request();
        pair.respond(id, &short, true);
        assert_eq!(failure(&pair), (ErrorKind::Protocol, false));
        assert!(!pair.h3.answered);
        let mut whole = head.clone();
        whole.extend(frame(0x00, b"0123456789"));
        let mut pair = Pair::connected();
        let id = pair.request();
        pair.respond(id, &whole, true);
        assert!(matches!(pair.outcomes[..], [Outcome::Response { .. }]));
        assert!(pair.h3.answered);
        let mut pair = Pair::connected();
        pair.h3.head_requests = true;
        let id = pair.request();
        pair.respond(id, &head, true);
        assert!(matches!(pair.outcomes[..], [Outcome::Response { .. }]));
    }

    #[test]
    fn a_request_the_server_rejected_may_be_sent_again() {
        let mut pair = Pair::connected();
        let id = pair.request();
        let rejected = VarInt::from_u64(codec::code::H3_REQUEST_REJECTED).unwrap();
        pair.server().send_stream(id).reset(rejected).unwrap();
        pair.run();
        assert_eq!(failure(&pair), (ErrorKind::Reset, true));
        assert!(pair.h3.draining, "a retry costs a new connection");
        assert!(!pair.h3.answered, "so the loop counts it instead");
    }

    #[test]
    fn a_stream_reset_otherwise_is_a_counted_reset() {
        let mut pair = Pair::connected();
        let id = pair.request();
        pair.server()
            .send_stream(id)
            .reset(VarInt::from_u32(0x102))
            .unwrap();
        pair.run();
        assert_eq!(failure(&pair), (ErrorKind::Reset, false));
    }

    #[test]
    fn data_before_headers_is_a_protocol_error_that_closes_the_connection() {
        let mut pair = Pair::connected();
        let id = pair.request();
        pair.respond(id, &frame(0x00, b"early"), true);
        assert_eq!(failure(&pair), (ErrorKind::Protocol, false));
        assert!(
            pair.h3.quic.is_closed(),
            "H3_FRAME_UNEXPECTED is a connection error"
        );
        assert_eq!(
            pair.changes,
            [
                Change::Connected,
                Change::Lost(ConnectionError::LocallyClosed)
            ],
            "the loop hears of the close, so the slot connects again"
        );
    }

    /// RFC 9114 §5.2: requests at or past GOAWAY's ID were not processed
    /// and go back at once, whether or not the server resets them.
    #[test]
    fn goaway_stops_new_requests_and_refused_ones_go_back_at_once() {
        let mut pair = Pair::connected();
        let id = pair.request();
        let control = pair.server().streams().open(Dir::Uni).unwrap();
        let mut bytes = vec![0x00];
        bytes.extend(frame(0x04, &[]));
        bytes.extend(frame(0x07, &[0x00]));
        pair.server().send_stream(control).write(&bytes).unwrap();
        pair.run();
        assert!(pair.h3.draining, "GOAWAY(0) takes no more requests");
        assert_eq!(u64::from(VarInt::from(id)), 0);
        assert_eq!(
            failure(&pair),
            (ErrorKind::Reset, true),
            "stream 0 >= GOAWAY 0"
        );
        assert_eq!(pair.h3.in_flight(), 0);
    }

    #[test]
    fn a_request_past_its_deadline_is_taken_out_and_the_connection_drains() {
        let mut pair = Pair::connected();
        let sent_at = pair.now;
        pair.request();
        let timeout = Duration::from_secs(1);
        assert_eq!(pair.h3.next_expiry(timeout), Some(sent_at + timeout));
        assert!(pair.h3.expire(pair.now, timeout).is_empty());
        let expired = pair.h3.expire(sent_at + timeout, timeout);
        assert_eq!(expired.len(), 1);
        assert_eq!(pair.h3.in_flight(), 0);
        assert!(pair.h3.draining);
    }

    #[test]
    fn at_the_servers_stream_limit_the_ticket_comes_back_until_it_is_raised() {
        let mut pair = Pair::with_stream_limit(1);
        let id = pair.request();
        assert!(pair.send().is_err(), "the one stream is taken");
        assert!(pair.h3.stream_blocked);
        let mut response = frame(0x01, &STATUS_200);
        response.extend(frame(0x00, b"ok"));
        pair.respond(id, &response, true);
        assert!(
            !pair.h3.stream_blocked,
            "the server's MAX_STREAMS frees one"
        );
        assert!(pair.send().is_ok());
    }

    /// A POST whose body is larger than the server's window, on a
    /// connection with one stream; the server then answers at once.
    fn early_answer_pair() -> (Pair, StreamId) {
        let mut transport = quinn_proto::TransportConfig::default();
        transport.max_concurrent_bidi_streams(1u32.into());
        transport.receive_window(20_000u32.into());
        transport.stream_receive_window(20_000u32.into());
        let mut pair = Pair::with_transport(transport);
        let (id, _) = post_100k(&mut pair);
        (pair, id)
    }

    /// Sends a POST of 100,000 bytes; returns the server's side of its
    /// stream and the request's size in HTTP/3 frames.
    fn post_100k(pair: &mut Pair) -> (StreamId, usize) {
        let head = Bytes::from(frame(0x01, &[0x00, 0x00, 0xd1, 0xd7, 0xc1]));
        let body = Bytes::from(vec![7u8; 100_000]);
        let mut data_header = Vec::new();
        codec::encode_data_header(body.len() as u64, &mut data_header);
        let total = head.len() + data_header.len() + body.len();
        let ticket = Ticket {
            intended: None,
            warmup: false,
            resent: false,
        };
        let pieces = Pieces([head, Bytes::from(data_header), body]);
        assert!(pair.h3.send(ticket, pair.now, pieces).is_ok());
        pair.run();
        (pair.server().streams().accept(Dir::Bi).unwrap(), total)
    }

    /// RFC 9114 §4.1.1: the server stops reading, answers whole; RFC 9000
    /// §3.5: the client must then reset its sending part.
    #[test]
    fn an_answer_before_the_whole_body_with_stop_sending_frees_the_stream() {
        let (mut pair, id) = early_answer_pair();
        pair.server()
            .recv_stream(id)
            .stop(VarInt::from_u32(0x100))
            .unwrap();
        pair.respond(id, &frame(0x01, &STATUS_200), true);
        assert!(matches!(pair.outcomes[..], [Outcome::Response { .. }]));
        assert!(pair.send().is_ok(), "the one stream is free again");
    }

    /// The server answers whole before the body and goes on reading it.
    #[test]
    fn an_answer_before_the_whole_body_frees_the_stream() {
        let (mut pair, id) = early_answer_pair();
        pair.reading.push((id, 0, false));
        pair.respond(id, &frame(0x01, &STATUS_200), true);
        assert!(matches!(pair.outcomes[..], [Outcome::Response { .. }]));
        pair.run();
        assert!(pair.send().is_ok(), "the one stream is free again");
    }

    /// A request that times out with its body still held back by flow
    /// control is cancelled both ways: the server reads a reset, not a
    /// body that never ends.
    #[test]
    fn a_request_timed_out_before_its_whole_body_is_reset() {
        let (mut pair, id) = early_answer_pair();
        let timeout = Duration::from_secs(1);
        assert_eq!(pair.h3.expire(pair.now + timeout, timeout).len(), 1);
        pair.run();
        let mut recv = pair.server().recv_stream(id);
        let mut chunks = recv.read(true).unwrap();
        let end = loop {
            match chunks.next(usize::MAX) {
                Ok(Some(_)) => continue,
                other => break other,
            }
        };
        let _ = chunks.finalize();
        let cancelled = h3_code(codec::code::H3_REQUEST_CANCELLED);
        assert!(
            matches!(end, Err(ReadError::Reset(code)) if code == cancelled),
            "{end:?}"
        );
    }

    /// RFC 9114 §6.2.1: a control stream closed at any point, reset
    /// included, is H3_CLOSED_CRITICAL_STREAM.
    #[test]
    fn a_reset_control_stream_closes_the_connection() {
        let mut pair = Pair::connected();
        let control = pair.server().streams().open(Dir::Uni).unwrap();
        pair.server()
            .send_stream(control)
            .write(&[0x00, 0x04, 0x00])
            .unwrap();
        pair.run();
        assert!(!pair.h3.quic.is_closed());
        pair.server()
            .send_stream(control)
            .reset(VarInt::from_u32(0x100))
            .unwrap();
        pair.run();
        assert!(pair.h3.quic.is_closed(), "a critical stream was reset");
    }

    #[test]
    fn a_body_larger_than_the_servers_window_goes_out_whole_as_credit_returns() {
        let mut transport = quinn_proto::TransportConfig::default();
        transport.receive_window(20_000u32.into());
        let mut pair = Pair::with_transport(transport);
        let (id, total) = post_100k(&mut pair);
        pair.reading.push((id, 0, false));
        pair.run();
        assert_eq!(
            pair.reading,
            [(id, total, true)],
            "every byte, then the end"
        );
    }
}
