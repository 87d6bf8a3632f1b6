//! The HTTP/3 worker: one thread, one UDP socket and one loop that drives
//! quinn-proto's endpoint and connections directly. No async runtime, no
//! task or waker per request, no lock per connection: each turn receives a
//! batch of datagrams, lets every connection read its responses and send
//! its next requests, transmits what they wrote, and sleeps until the
//! socket is readable or the next timer (QUIC's, a request's deadline, an
//! open-model send) is due.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use h3lab_client::{no_quic_answer, quic_client_config, quic_connect_error, ConnectTiming};
use h3lab_results::{ErrorKind, Proto};
use http::Method;
use quinn_proto::{
    ClientConfig, ConnectionError, ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig,
    VarInt,
};
use quinn_udp::BATCH_SIZE;
use rustc_hash::FxHashMap;
use tokio_util::sync::CancellationToken;

use super::codec;
use super::conn::{h3_code, Change, H3Conn, Pieces};
use super::socket::{Received, Socket};
use crate::books::{Books, Outcome};
use crate::cpu::CpuTime;
use crate::plan::{Plan, Share};
use crate::slot::{Next, Slot};
use crate::worker::WorkerResult;

/// Datagrams one connection sends per turn, as the vendored quinn's
/// driver does per wake-up, so that one busy connection does not starve
/// the others' acknowledgements.
const MAX_TRANSMIT_DATAGRAMS: usize = 80;
/// Receive batches per turn before the connections run.
const RECEIVE_BATCHES: usize = 8;
/// The longest sleep: how soon Ctrl-C is seen.
const CANCEL_CHECK: Duration = Duration::from_millis(50);

/// Runs one worker's share of an HTTP/3 load on this thread.
pub(crate) fn run_worker(
    plan: Arc<Plan>,
    share: Share,
    cancel: CancellationToken,
    done: Arc<AtomicU64>,
) -> anyhow::Result<WorkerResult> {
    let cpu_before = CpuTime::of_this_thread();
    crate::pacer::precise_timers();
    let mut engine = Engine::new(plan, share, done)?;
    let end = engine.run(&cancel);
    Ok(WorkerResult {
        tally: engine.books.into_tally(end),
        cpu: CpuTime::of_this_thread().since(cpu_before),
        end,
    })
}

struct Engine {
    books: Books,
    socket: Socket,
    endpoint: Endpoint,
    config: ClientConfig,
    conns: FxHashMap<ConnectionHandle, H3Conn>,
    owner: FxHashMap<ConnectionHandle, usize>,
    /// The live connections' handles, gathered each turn.
    handles: Vec<ConnectionHandle>,
    slots: Vec<Slot<ConnectionHandle>>,
    /// The request's HEADERS frame, when every request has the same.
    head: Option<Bytes>,
    /// DATA frame header and body, for a request with a body.
    body: Option<(Bytes, Bytes)>,
    spin: Duration,
    /// A send the socket's full buffer refused: sent first next turn.
    blocked: Option<(quinn_proto::Transmit, Vec<u8>)>,
    received: Vec<Received>,
    /// Whether the last wait ended with datagrams waiting.
    readable: bool,
    outcomes: Vec<Outcome>,
    buffer: Vec<u8>,
}

impl Engine {
    fn new(plan: Arc<Plan>, share: Share, done: Arc<AtomicU64>) -> anyhow::Result<Engine> {
        let socket = Socket::bind(plan.addr)
            .with_context(|| format!("opening a UDP socket for HTTP/3 to {}", plan.addr))?;
        let endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None);
        let config = quic_client_config(&plan.tls)?;
        let template = &plan.template;
        let head = (!template.varies()).then(|| encode_head(template));
        let body = (!template.body().is_empty()).then(|| {
            let mut header = Vec::new();
            codec::encode_data_header(template.body().len() as u64, &mut header);
            // A copy per worker: quinn-proto clones and drops its slices per
            // packet, and the plan's is shared by every worker thread.
            (Bytes::from(header), Bytes::copy_from_slice(template.body()))
        });
        // An open-model send wakes the loop early, and it polls until the
        // due time (`pacer.rs` says why).
        let spin = share
            .schedule
            .interval()
            .map_or(Duration::ZERO, crate::pacer::spin_for);
        let slots = (0..share.connections).map(|_| Slot::new()).collect();
        Ok(Engine {
            books: Books::new(plan, share.schedule, done),
            socket,
            endpoint,
            config,
            conns: FxHashMap::default(),
            owner: FxHashMap::default(),
            handles: Vec::new(),
            slots,
            head,
            body,
            spin,
            blocked: None,
            received: Vec::new(),
            readable: true,
            outcomes: Vec::new(),
            buffer: Vec::new(),
        })
    }

    /// Turns until every slot is done, the deadline, or Ctrl-C; returns
    /// when the measured phase ended for this worker. A socket that fails
    /// ends the run early, as Ctrl-C does, keeping what was measured.
    fn run(&mut self, cancel: &CancellationToken) -> Instant {
        let deadline = self.books.plan.deadline;
        loop {
            let now = Instant::now();
            if cancel.is_cancelled() || deadline.is_some_and(|deadline| now >= deadline) {
                break;
            }
            self.connect_slots(now);
            if self.slots.iter().all(|slot| slot.finished) {
                break;
            }
            if let Err(err) = self.turn().and_then(|()| self.sleep()) {
                eprintln!(
                    "warning: the HTTP/3 worker's UDP socket failed ({err}); this worker \
                     stopped early and reports what it measured"
                );
                break;
            }
        }
        let now = Instant::now();
        self.close_all(now);
        let end = self.books.plan.measured_end(now);
        let held = self
            .slots
            .iter_mut()
            .flat_map(|slot| slot.waiting.drain(..));
        self.books.hand_back(held, end);
        end
    }

    /// Receives (if the last wait said datagrams wait) and runs the
    /// connections that have work.
    fn turn(&mut self) -> std::io::Result<()> {
        if self.readable {
            self.receive()?;
        }
        self.service(Instant::now());
        Ok(())
    }

    /// Opens a connection for each slot that has none and is due to.
    fn connect_slots(&mut self, now: Instant) {
        for index in 0..self.slots.len() {
            if !self.slots[index].should_connect(&self.books, now) {
                continue;
            }
            self.books.note_first_attempt();
            let plan = &self.books.plan;
            match self
                .endpoint
                .connect(now, self.config.clone(), plan.addr, plan.target.host())
            {
                Ok((handle, quic)) => {
                    let head_requests = plan.template.method() == Method::HEAD;
                    self.conns
                        .insert(handle, H3Conn::new(quic, now, head_requests));
                    self.owner.insert(handle, index);
                    self.slots[index].conn = Some(handle);
                }
                Err(err) => {
                    let message = format!("QUIC connect to {}: {err}", plan.addr);
                    self.slots[index].connect_failed(&self.books, now, ErrorKind::Connect, message);
                }
            }
        }
    }

    /// Receives what the socket holds (a few batches at most) and hands
    /// each datagram to its connection. A batch short of full emptied the
    /// socket: asking again would cost a call that finds nothing (what
    /// arrives meanwhile, the wait sees at once).
    fn receive(&mut self) -> std::io::Result<()> {
        for _ in 0..RECEIVE_BATCHES {
            let count = self.socket.receive(&mut self.received)?;
            let now = Instant::now();
            let mut received = std::mem::take(&mut self.received);
            for mut message in received.drain(..) {
                // A stride of 0 (never from the kernel) would split forever.
                let stride = if message.stride == 0 {
                    message.data.len()
                } else {
                    message.stride
                };
                while message.data.len() > stride {
                    let datagram = message.data.split_to(stride);
                    self.handle_datagram(now, &message, datagram);
                }
                // The last (often the only) datagram: what is left of the
                // message, taken as it is; a split would add a reference
                // to the receive buffer only to drop this one.
                let datagram = std::mem::take(&mut message.data);
                if !datagram.is_empty() {
                    self.handle_datagram(now, &message, datagram);
                }
            }
            self.received = received;
            if count < BATCH_SIZE {
                break;
            }
        }
        Ok(())
    }

    fn handle_datagram(&mut self, now: Instant, message: &Received, datagram: bytes::BytesMut) {
        self.buffer.clear();
        let event = self.endpoint.handle(
            now,
            message.from,
            message.local_ip,
            message.ecn,
            datagram,
            &mut self.buffer,
        );
        match event {
            Some(DatagramEvent::ConnectionEvent(handle, event)) => {
                if let Some(conn) = self.conns.get_mut(&handle) {
                    conn.quic.handle_event(event);
                    conn.dirty = true;
                }
            }
            Some(DatagramEvent::Response(transmit)) => {
                let _ = self.socket.send(&transmit, &self.buffer[..transmit.size]);
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                self.endpoint.ignore(incoming);
            }
            None => {}
        }
    }

    /// Runs the connections that have something to do (datagrams came, or
    /// a timer of theirs is due): their timers, the endpoint's bookkeeping,
    /// responses read, requests timed out, new requests sent, and what
    /// they then have to transmit. Idle ones cost a comparison, so a run
    /// of many connections spends its turns on the busy few.
    fn service(&mut self, now: Instant) {
        self.retry_blocked();
        let mut handles = std::mem::take(&mut self.handles);
        handles.clear();
        handles.extend(
            self.conns
                .iter()
                .filter(|(_, conn)| conn.dirty || conn.wake.is_some_and(|at| at <= now))
                .map(|(handle, _)| *handle),
        );
        for &handle in &handles {
            self.service_one(handle, now);
            self.transmit(handle, now);
            self.plan_wake(handle);
        }
        self.handles = handles;
    }

    fn service_one(&mut self, handle: ConnectionHandle, now: Instant) {
        let conn = self.conns.get_mut(&handle).expect("a live connection");
        if conn.quic.poll_timeout().is_some_and(|at| at <= now) {
            conn.quic.handle_timeout(now);
        }
        let mut drained = false;
        while let Some(event) = conn.quic.poll_endpoint_events() {
            drained |= event.is_drained();
            if let Some(event) = self.endpoint.handle_event(handle, event) {
                conn.quic.handle_event(event);
            }
        }
        let change = conn.poll_events(now, &mut self.outcomes);
        let answered = conn.answered;
        let slot = self.owner.get(&handle).copied();
        match change {
            Some(Change::Connected) => self.connected(handle, slot, now),
            Some(Change::Lost(reason)) => self.lost(handle, slot, &reason, now),
            None => {}
        }
        self.settle_outcomes(answered);
        // A connection lost this turn has left its slot already.
        if let Some(index) = self.owner.get(&handle).copied() {
            self.expire(handle, index, now);
            self.send_requests(handle, index);
        }
        if drained {
            self.conns.remove(&handle);
            self.owner.remove(&handle);
        }
    }

    fn connected(&mut self, handle: ConnectionHandle, slot: Option<usize>, now: Instant) {
        let conn = &self.conns[&handle];
        let Some(index) = slot else {
            return;
        };
        let timing = ConnectTiming::quic(now - conn.started, conn.quic.rtt());
        self.slots[index].connected(&self.books, &timing, Proto::H3);
    }

    /// The connection ended: its requests fail (or go back, if refused
    /// unprocessed), and its slot connects again.
    fn lost(
        &mut self,
        handle: ConnectionHandle,
        slot: Option<usize>,
        reason: &ConnectionError,
        now: Instant,
    ) {
        let conn = self.conns.get_mut(&handle).expect("a live connection");
        conn.fail_all(reason, &mut self.outcomes);
        let connected = conn.connected;
        let Some(index) = slot else {
            return;
        };
        self.owner.remove(&handle);
        self.slots[index].conn = None;
        if connected {
            return;
        }
        let plan = &self.books.plan;
        let err = match reason {
            ConnectionError::TimedOut => no_quic_answer(plan.addr, plan.connect_timeout),
            other => quic_connect_error(other.clone(), plan.addr),
        };
        self.slots[index].connect_failed(&self.books, now, err.kind(), err.to_string());
    }

    /// Records what the connection's requests came to.
    fn settle_outcomes(&mut self, answered: bool) {
        for outcome in self.outcomes.drain(..) {
            self.books.settle(outcome, answered);
        }
    }

    /// Requests past the timeout fail; a connection that never finished
    /// its handshake within the connect timeout is given up.
    fn expire(&mut self, handle: ConnectionHandle, index: usize, now: Instant) {
        let plan = &self.books.plan;
        let conn = self.conns.get_mut(&handle).expect("a live connection");
        for ticket in conn.expire(now, plan.request_timeout) {
            self.books.note_ended();
            self.books.record_timeout(&ticket);
        }
        if !conn.connected && now >= conn.started + plan.connect_timeout {
            conn.quic
                .close(now, no_error(), Bytes::from_static(b"connect timeout"));
            self.owner.remove(&handle);
            self.slots[index].conn = None;
            let err = no_quic_answer(plan.addr, plan.connect_timeout);
            self.slots[index].connect_failed(&self.books, now, err.kind(), err.to_string());
        }
    }

    /// Fills the connection's free streams with tickets and sends those
    /// that are due; closes it once the slot has nothing left to send or
    /// it is draining and empty.
    fn send_requests(&mut self, handle: ConnectionHandle, index: usize) {
        // The clock read here, not the turn's: a `-z` deadline and the end
        // of the warmup are judged by it, and the connections before this
        // one may have taken a while.
        let now = Instant::now();
        let Some(conn) = self.conns.get_mut(&handle) else {
            return;
        };
        let slot = &mut self.slots[index];
        if slot.conn != Some(handle) || !conn.connected {
            return;
        }
        let streams = self.books.plan.streams;
        let mut done = false;
        while !conn.draining {
            let ticket = match slot.next(&self.books, conn.in_flight(), streams, now) {
                Next::Send(ticket) => ticket,
                Next::Wait => break,
                Next::Exhausted => {
                    done = true;
                    break;
                }
            };
            let sent_at = Instant::now();
            let pieces = request_pieces(&self.head, &self.body, &self.books.plan.template);
            match conn.send(ticket, sent_at, pieces) {
                Ok(()) => self.books.note_sent(&ticket, sent_at),
                Err(ticket) => {
                    slot.waiting.push_front(ticket);
                    break;
                }
            }
        }
        // Tickets still waiting (open model) go to the slot's next
        // connection when this one drains.
        if conn.in_flight() == 0 && (done || conn.draining) {
            conn.quic
                .close(now, no_error(), Bytes::from_static(b"done"));
            self.owner.remove(&handle);
            let unused = (conn.draining && conn.sent == 0)
                .then(|| "HTTP/3: the server sent GOAWAY before any request".to_string());
            slot.release(&self.books, now, done, unused);
        }
    }

    /// Sends what one connection has to send, a bounded share, so that one
    /// busy connection does not hold up the others' acknowledgements; a
    /// connection with more left stays dirty for the next turn.
    fn transmit(&mut self, handle: ConnectionHandle, now: Instant) {
        let Some(conn) = self.conns.get_mut(&handle) else {
            return;
        };
        conn.dirty = self.blocked.is_some();
        if conn.dirty {
            return;
        }
        let max_segments = self.socket.max_segments();
        let mut datagrams = 0;
        while datagrams < MAX_TRANSMIT_DATAGRAMS {
            self.buffer.clear();
            let Some(transmit) = conn.quic.poll_transmit(now, max_segments, &mut self.buffer)
            else {
                return;
            };
            datagrams += transmit
                .segment_size
                .map_or(1, |size| transmit.size.div_ceil(size));
            let contents = &self.buffer[..transmit.size];
            match self.socket.send(&transmit, contents) {
                Ok(true) => {}
                Ok(false) => {
                    self.blocked = Some((transmit, contents.to_vec()));
                    break;
                }
                // Like a loss: QUIC sends it again (quinn does the same).
                Err(_) => {}
            }
        }
        conn.dirty = true;
    }

    /// Sends the datagram the socket's full buffer refused, if it now can.
    fn retry_blocked(&mut self) {
        if let Some((transmit, contents)) = self.blocked.take() {
            if matches!(self.socket.send(&transmit, &contents), Ok(false)) {
                self.blocked = Some((transmit, contents));
            }
        }
    }

    /// When connection `handle` must run next if no datagram comes first.
    fn plan_wake(&mut self, handle: ConnectionHandle) {
        let plan = &self.books.plan;
        let Some(conn) = self.conns.get_mut(&handle) else {
            return;
        };
        let waiting = self
            .owner
            .get(&handle)
            .and_then(|&index| self.slots[index].next_due())
            .filter(|_| conn.connected && !conn.draining && !conn.stream_blocked);
        // Once given up (`expire`), its handshake deadline is no timer.
        let owned = self.owner.contains_key(&handle);
        let handshake = (owned && !conn.connected).then(|| conn.started + plan.connect_timeout);
        conn.wake = [
            conn.quic.poll_timeout(),
            conn.next_expiry(plan.request_timeout),
            handshake,
            waiting.map(|due| due - self.spin),
        ]
        .into_iter()
        .flatten()
        .min();
    }

    /// Sleeps until the socket has datagrams (or room, if a send waits) or
    /// the next timer is due; notes whether datagrams wait.
    fn sleep(&mut self) -> std::io::Result<()> {
        let now = Instant::now();
        let left = self.next_wake(now).saturating_duration_since(now);
        self.readable = self.socket.wait(left, self.blocked.is_some())?;
        Ok(())
    }

    fn next_wake(&self, now: Instant) -> Instant {
        let mut wake = now + CANCEL_CHECK;
        if let Some(deadline) = self.books.plan.deadline {
            wake = wake.min(deadline);
        }
        for conn in self.conns.values() {
            // With a send refused, dirty connections wait for room.
            if conn.dirty && self.blocked.is_none() {
                return now;
            }
            if let Some(at) = conn.wake {
                wake = wake.min(at);
            }
        }
        for slot in &self.slots {
            if let Some(at) = slot.reconnect_at(now) {
                wake = wake.min(at);
            }
        }
        wake
    }

    /// Closes every connection (H3_NO_ERROR) and sends the closes.
    fn close_all(&mut self, now: Instant) {
        let handles: Vec<ConnectionHandle> = self.conns.keys().copied().collect();
        for handle in handles {
            if let Some(conn) = self.conns.get_mut(&handle) {
                conn.quic
                    .close(now, no_error(), Bytes::from_static(b"done"));
            }
            self.transmit(handle, now);
        }
    }
}

/// The bytes of one request: its HEADERS frame (encoded once, unless each
/// request's headers differ), then its body as one DATA frame.
fn request_pieces(
    head: &Option<Bytes>,
    body: &Option<(Bytes, Bytes)>,
    template: &h3lab_client::RequestTemplate,
) -> Pieces {
    let head = head.clone().unwrap_or_else(|| encode_head(template));
    let (header, body) = body.clone().unwrap_or_default();
    Pieces([head, header, body])
}

fn encode_head(template: &h3lab_client::RequestTemplate) -> Bytes {
    let (parts, ()) = template.multiplexed().into_parts();
    let mut frame = Vec::new();
    codec::encode_request(&parts, &mut frame);
    Bytes::from(frame)
}

/// HTTP/3's code for a graceful close.
fn no_error() -> VarInt {
    h3_code(codec::code::H3_NO_ERROR)
}
