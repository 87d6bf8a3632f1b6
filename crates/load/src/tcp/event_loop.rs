//! The h1 and h2 worker: one thread, one epoll (mio) and one loop over its
//! TCP connections. No async runtime, no task or waker per request: each
//! turn reads what the sockets that woke hold, decrypts it with rustls'
//! sans-I/O client, lets each connection read its responses and queue its
//! next requests, writes what they queued, and sleeps until a socket is
//! ready or the next timer (a request's deadline, a connect's, an
//! open-model send) is due, on a timerfd, so to the microsecond.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use h3lab_client::{
    no_h2_in_alpn, tcp_connect_error, tcp_connect_timeout, tcp_rtt, tls_failure,
    tls_handshake_timeout, ClientError, ConnectTiming, Scheme,
};
use h3lab_results::load::Batching;
use h3lab_results::{ErrorKind, Proto};
use http::request::Parts;
use http::Method;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use rustls::pki_types::ServerName;
use rustls::ClientConnection;
use tokio_util::sync::CancellationToken;

use super::arrival::{stamp_reads, ArrivalClock};
use super::h1::H1Conn;
use super::h2::H2Conn;
use super::h2codec::code;
use super::http::{Failure, Http, RequestHead};
use super::timer::Timer;
use super::transport::{ReadEnd, Transport, TransportError, SOCKET_READ};
use crate::books::{Books, Outcome};
use crate::cpu::CpuTime;
use crate::plan::{Plan, Share};
use crate::slot::{Next, Slot};
use crate::worker::WorkerResult;

/// The longest sleep: how soon Ctrl-C is seen.
const CANCEL_CHECK: Duration = Duration::from_millis(50);
// A hold (`--linger`) is one sleep: it must fit in one.
const _: () = assert!(CANCEL_CHECK.as_nanos() >= crate::config::MAX_LINGER.as_nanos());
/// The timerfd's token; connections' are their slot's index.
const TIMER: Token = Token(usize::MAX);

/// Runs one worker's share of an h1 or h2 load on this thread.
pub(crate) fn run_worker(
    plan: Arc<Plan>,
    share: Share,
    cancel: CancellationToken,
    done: Arc<AtomicU64>,
) -> anyhow::Result<WorkerResult> {
    let cpu_before = CpuTime::of_this_thread();
    let mut engine = Engine::new(plan, share, done)?;
    let end = engine.run(&cancel);
    let mut tally = engine.books.into_tally(end);
    tally.batching = engine.linger.as_ref().map(|linger| Batching {
        linger_us: linger.hold.as_micros() as u64,
        timestamped_reads: linger.arrivals.timed,
        untimed_reads: linger.arrivals.untimed,
    });
    Ok(WorkerResult {
        tally,
        cpu: CpuTime::of_this_thread().since(cpu_before),
        end,
    })
}

/// Where a connection is in its set-up.
enum Phase {
    /// The TCP handshake is under way.
    Connecting,
    /// TLS's, after TCP's, which took this long.
    Handshaking { tcp: Duration, since: Instant },
    /// Boxed: an h2 connection's state is much larger than the others.
    Open(Box<Http>),
}

struct TcpConn {
    transport: Transport,
    phase: Phase,
    started: Instant,
    /// Plaintext read and not yet used (a frame still arriving).
    inbox: Vec<u8>,
    /// Plaintext queued for the socket.
    out: Vec<u8>,
    /// When the loop must run it next without a socket event.
    wake: Option<Instant>,
    /// Bytes may wait in the socket that the last read left (it stops
    /// after a few reads): it runs again next turn.
    unread: bool,
    /// Whether epoll reports it writable: only while a connect is under
    /// way or bytes wait for room, since each freed send buffer would
    /// otherwise wake the loop for nothing.
    writable_interest: bool,
}

/// The bytes of every request, when every request has the same: h2's
/// header block, or h1's whole request.
struct Request {
    /// h1: the whole request, when every request is the same.
    h1: Option<Bytes>,
    /// h2: the request's fields, when every request has the same.
    parts: Option<Parts>,
    body: Bytes,
}

struct Engine {
    books: Books,
    poll: Poll,
    events: Events,
    timer: Timer,
    slots: Vec<Slot<TcpConn>>,
    request: Request,
    server_name: ServerName<'static>,
    tls: bool,
    spin: Duration,
    scratch: Box<[u8]>,
    outcomes: Vec<Outcome>,
    /// Slots with a socket event this turn, and whether it said readable.
    woken: Vec<(usize, bool)>,
    /// `--linger`.
    linger: Option<Linger>,
}

/// `--linger`: how long to hold out before a wait while responses are
/// due, so that one wake-up reads many; and when each read's bytes
/// arrived, by the kernel, since the loop reads them later.
struct Linger {
    hold: Duration,
    arrivals: ArrivalClock,
}

impl Engine {
    fn new(plan: Arc<Plan>, share: Share, done: Arc<AtomicU64>) -> anyhow::Result<Engine> {
        let poll = Poll::new().context("creating the worker's epoll")?;
        let timer = Timer::new().context("creating the worker's timerfd")?;
        timer.register(poll.registry(), TIMER)?;
        let server_name = ServerName::try_from(plan.target.host().to_string())
            .context("the target's host is no valid TLS server name")?;
        let tls = plan.proto == Proto::H2 || plan.target.scheme() == Scheme::Https;
        let spin = share
            .schedule
            .interval()
            .map_or(Duration::ZERO, crate::pacer::spin_for);
        let linger = plan.linger.map(|hold| {
            // The hold is a sleep, which would otherwise end up to 50 µs late.
            crate::pacer::precise_timers();
            Linger {
                hold,
                arrivals: ArrivalClock::new(),
            }
        });
        let request = Request {
            h1: (!plan.template.varies()).then(|| encode_h1_request(&plan)),
            parts: (!plan.template.varies()).then(|| plan.template.multiplexed().into_parts().0),
            body: plan.template.body().clone(),
        };
        Ok(Engine {
            slots: (0..share.connections).map(|_| Slot::new()).collect(),
            books: Books::new(plan, share.schedule, done),
            poll,
            events: Events::with_capacity(1024),
            timer,
            request,
            server_name,
            tls,
            spin,
            scratch: vec![0; SOCKET_READ].into_boxed_slice(),
            outcomes: Vec::new(),
            woken: Vec::new(),
            linger,
        })
    }

    /// Turns until every slot is done, the deadline, or Ctrl-C; returns
    /// when the measured phase ended for this worker. An epoll that fails
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
            if let Err(err) = self.wait() {
                eprintln!(
                    "warning: the h1/h2 worker's epoll failed ({err}); this worker stopped \
                     early and reports what it measured"
                );
                break;
            }
            // What a wait past the deadline woke to is after the measured
            // phase: in flight at its end, not completed or sent in it.
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                break;
            }
            self.turn();
        }
        let now = Instant::now();
        self.close_all();
        let end = self.books.plan.measured_end(now);
        let held = self
            .slots
            .iter_mut()
            .flat_map(|slot| slot.waiting.drain(..));
        self.books.hand_back(held, end);
        end
    }

    /// Sleeps until a socket is ready or the next timer is due, and notes
    /// which slots woke.
    fn wait(&mut self) -> std::io::Result<()> {
        let now = Instant::now();
        let wake = self.next_wake(now);
        let timeout = if wake <= now {
            Some(Duration::ZERO)
        } else {
            self.hold(wake - now);
            self.timer.arm(wake)?;
            None
        };
        if let Err(err) = self.poll.poll(&mut self.events, timeout) {
            // A signal (Ctrl-C's handler runs on some thread): a turn with
            // no events; the loop then looks at the cancel flag.
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(err);
            }
            self.events.clear();
        }
        self.woken.clear();
        for event in self.events.iter() {
            if event.token() == TIMER {
                self.timer.fired();
            } else {
                let readable = event.is_readable() || event.is_read_closed() || event.is_error();
                self.woken.push((event.token().0, readable));
            }
        }
        Ok(())
    }

    /// With `--linger`, while responses are due: sleeps for the linger,
    /// letting responses gather so that the wait after it reads many at
    /// once. They are timed by their arrival, not by this. The hold ends
    /// by `until_due` (the next timer) and by the next open-model send,
    /// even one waiting for a stream (a response held back would keep it
    /// waiting), so sends keep their schedule. There is none while a
    /// connection sets up (its handshake would be timed late) or waits for
    /// room to write, nor within a linger of the deadline (the loop ends
    /// there without reading what the hold let gather).
    fn hold(&self, until_due: Duration) {
        let Some(linger) = &self.linger else {
            return;
        };
        let mut awaiting = false;
        for slot in &self.slots {
            match &slot.conn {
                Some(TcpConn {
                    phase: Phase::Open(http),
                    writable_interest: false,
                    ..
                }) => awaiting |= http.in_flight() > 0,
                None => {}
                Some(_) => return,
            }
        }
        let now = Instant::now();
        let hold = linger.hold.min(until_due);
        if !awaiting || (self.books.plan.deadline).is_some_and(|end| now + hold >= end) {
            return;
        }
        let sends = (self.slots.iter().map(Slot::next_due))
            .chain([self.books.next_due()])
            .flatten()
            .map(|due| (due - self.spin).saturating_duration_since(now));
        let hold = sends.fold(hold, Duration::min);
        if !hold.is_zero() {
            std::thread::sleep(hold);
        }
    }

    /// Runs the slots that woke, then those whose timer is due.
    fn turn(&mut self) {
        let woken = std::mem::take(&mut self.woken);
        for &(index, readable) in &woken {
            self.drive(index, readable);
        }
        self.woken = woken;
        let now = Instant::now();
        for index in 0..self.slots.len() {
            let Some(conn) = &self.slots[index].conn else {
                continue;
            };
            let unread = conn.unread;
            if unread || conn.wake.is_some_and(|wake| wake <= now) {
                self.drive(index, unread);
            }
        }
    }

    /// Opens a connection for each slot that has none and is due to.
    fn connect_slots(&mut self, now: Instant) {
        for index in 0..self.slots.len() {
            if !self.slots[index].should_connect(&self.books, now) {
                continue;
            }
            self.books.note_first_attempt();
            let addr = self.books.plan.addr;
            // Each connect's own clock: many at the start take a while.
            let now = Instant::now();
            let opened = TcpStream::connect(addr).and_then(|mut stream| {
                self.poll.registry().register(
                    &mut stream,
                    Token(index),
                    Interest::READABLE | Interest::WRITABLE,
                )?;
                Ok(stream)
            });
            match opened {
                Ok(stream) => {
                    if self.linger.is_some() {
                        // Refused, its reads go untimed, and are counted so.
                        let _ = stamp_reads(&stream);
                    }
                    self.slots[index].conn = Some(TcpConn {
                        transport: Transport::new(stream, None),
                        phase: Phase::Connecting,
                        started: now,
                        inbox: Vec::new(),
                        out: Vec::new(),
                        wake: Some(now + self.books.plan.connect_timeout),
                        writable_interest: true,
                        unread: false,
                    });
                }
                Err(err) => self.set_up_failed(index, now, tcp_connect_error(addr, &err)),
            }
        }
    }

    /// Moves slot `index`'s connection on: its set-up, or, once open, its
    /// responses, timeouts and next requests; then writes what it queued.
    fn drive(&mut self, index: usize, woken: bool) {
        let now = Instant::now();
        let Some(conn) = self.slots[index].conn.as_mut() else {
            return;
        };
        let result = match conn.phase {
            Phase::Connecting => self.connecting(index, now),
            Phase::Handshaking { .. } => self.handshaking(index, now),
            Phase::Open(_) => self.exchange(index, now, woken),
        };
        let result = result.and_then(|()| self.flush(index));
        if let Err(failure) = result {
            self.lost(index, now, failure);
        }
        self.plan_wake(index);
    }

    /// The TCP handshake: done once the socket is connected; failed with
    /// its error, or after the connect timeout.
    fn connecting(&mut self, index: usize, now: Instant) -> Result<(), Failure> {
        let plan = &self.books.plan;
        let conn = self.slots[index].conn.as_mut().expect("a connection");
        let stream = &conn.transport.stream;
        if let Ok(Some(err)) | Err(err) = stream.take_error() {
            return Err(Failure::SetUp(tcp_connect_error(plan.addr, &err)));
        }
        if stream.peer_addr().is_err() {
            if now >= conn.started + plan.connect_timeout {
                return Err(Failure::SetUp(tcp_connect_timeout(
                    plan.addr,
                    plan.connect_timeout,
                )));
            }
            return Ok(());
        }
        let tcp = now - conn.started;
        let _ = stream.set_nodelay(true);
        if !self.tls {
            let timing = ConnectTiming::tcp(tcp, None, tcp_rtt(stream));
            return self.open(index, now, timing);
        }
        let tls = ClientConnection::new(plan.tls.clone(), self.server_name.clone())
            .map_err(|err| Failure::SetUp(tls_failure(plan.addr, &err.to_string())))?;
        conn.transport.start_tls(tls);
        conn.phase = Phase::Handshaking { tcp, since: now };
        conn.wake = Some(now + plan.connect_timeout);
        Ok(())
    }

    /// The TLS handshake: on until rustls is done, failed with its alert,
    /// or after the connect timeout.
    fn handshaking(&mut self, index: usize, now: Instant) -> Result<(), Failure> {
        let addr = self.books.plan.addr;
        let limit = self.books.plan.connect_timeout;
        let conn = self.slots[index].conn.as_mut().expect("a connection");
        let Phase::Handshaking { tcp, since } = conn.phase else {
            unreachable!("handshaking() runs in the handshake")
        };
        let inbox = &mut conn.inbox;
        let end = conn
            .transport
            .read(&mut self.scratch, None, now, &mut |plain, _| {
                inbox.extend_from_slice(plain)
            })
            .map(|(end, _)| end)
            .map_err(|err| Failure::SetUp(tls_failure(addr, &transport_error(&err))))?;
        conn.unread = end == ReadEnd::More;
        let closed = end == ReadEnd::Closed;
        if conn.transport.is_handshaking() {
            if closed {
                return Err(Failure::SetUp(tls_failure(addr, "tls handshake eof")));
            }
            if now >= since + limit {
                return Err(Failure::SetUp(tls_handshake_timeout(addr, limit)));
            }
            return Ok(());
        }
        if self.books.plan.proto == Proto::H2 && conn.transport.alpn() != Some(b"h2") {
            return Err(Failure::SetUp(no_h2_in_alpn(addr)));
        }
        let tls = conn
            .transport
            .resumed()
            .map(|resumed| (now - since, resumed));
        let timing = ConnectTiming::tcp(tcp, tls, tcp_rtt(&conn.transport.stream));
        self.open(index, now, timing)
    }

    /// The connection is up: counted, and its protocol starts.
    fn open(&mut self, index: usize, now: Instant, timing: ConnectTiming) -> Result<(), Failure> {
        let proto = self.books.plan.proto;
        let slot = &mut self.slots[index];
        slot.connected(&self.books, &timing, proto);
        let conn = slot.conn.as_mut().expect("a connection");
        let http = match proto {
            Proto::H2 => Http::H2(H2Conn::new(&mut conn.out)),
            _ => Http::H1(H1Conn::new(
                self.books.plan.template.method() == Method::HEAD,
            )),
        };
        conn.phase = Phase::Open(Box::new(http));
        // What came with the handshake's last flight (h2's SETTINGS) waits
        // in the inbox, and more may wait in the socket.
        self.exchange(index, now, true)
    }

    /// An open connection's turn: what it read, its timeouts, its next
    /// requests, and its close once it has nothing left to do.
    fn exchange(&mut self, index: usize, now: Instant, woken: bool) -> Result<(), Failure> {
        if woken {
            self.read(index, now)?;
        }
        self.expire(index, now);
        self.send_requests(index, now);
        Ok(())
    }

    /// Reads what the socket holds and hands it to the protocol.
    fn read(&mut self, index: usize, now: Instant) -> Result<(), Failure> {
        let Engine {
            slots,
            scratch,
            outcomes,
            books,
            linger,
            ..
        } = self;
        let conn = slots[index].conn.as_mut().expect("a connection");
        let Phase::Open(http) = &mut conn.phase else {
            return Ok(());
        };
        let answered = http.answered();
        let (inbox, out) = (&mut conn.inbox, &mut conn.out);
        // What the inbox held (the handshake's last flight) goes first.
        let mut result = feed(http, inbox, &[], now, outcomes, out);
        let read = conn.transport.read(
            scratch,
            linger.as_mut().map(|linger| &mut linger.arrivals),
            now,
            &mut |plain, arrived| {
                if result.is_ok() {
                    result = feed(http, inbox, plain, arrived, outcomes, out);
                }
            },
        );
        conn.unread = read.as_ref().is_ok_and(|(end, _)| *end == ReadEnd::More);
        let result = match read {
            Err(err) => Err(Failure::Lost(ErrorKind::Reset, transport_error(&err))),
            Ok((ReadEnd::Closed, ended)) => {
                result.and_then(|()| http.end_of_input(ended, outcomes))
            }
            Ok(_) => result,
        };
        let answered = answered || http.answered();
        for outcome in outcomes.drain(..) {
            books.settle(outcome, answered);
        }
        result
    }

    /// Requests past the timeout fail.
    fn expire(&mut self, index: usize, now: Instant) {
        let timeout = self.books.plan.request_timeout;
        let conn = self.slots[index].conn.as_mut().expect("a connection");
        let Phase::Open(http) = &mut conn.phase else {
            return;
        };
        for ticket in http.expire(now, timeout, &mut conn.out) {
            self.books.note_ended();
            self.books.record_timeout(&ticket);
        }
    }

    /// Fills the connection's free streams with tickets and sends those
    /// that are due; closes it once the slot has nothing left to send or
    /// it is draining and empty.
    fn send_requests(&mut self, index: usize, now: Instant) {
        let slot = &mut self.slots[index];
        let mut conn = slot.conn.take().expect("a connection");
        let Phase::Open(http) = &mut conn.phase else {
            slot.conn = Some(conn);
            return;
        };
        let streams = self.books.plan.streams;
        let mut done = false;
        // The requests of one turn leave in one write: one clock reading.
        let sent_at = Instant::now();
        while !http.draining() {
            let limit = http.stream_limit(streams);
            let ticket = match slot.next(&self.books, http.in_flight(), limit, now) {
                Next::Send(ticket) => ticket,
                Next::Wait => break,
                Next::Exhausted => {
                    done = true;
                    break;
                }
            };
            let plan = &self.books.plan;
            let (h1_bytes, varying_parts);
            let head = match (&**http, &self.request) {
                (
                    Http::H1(_),
                    Request {
                        h1: Some(bytes), ..
                    },
                ) => RequestHead::H1(bytes),
                (Http::H1(_), _) => {
                    h1_bytes = encode_h1_request(plan);
                    RequestHead::H1(&h1_bytes)
                }
                (
                    Http::H2(_),
                    Request {
                        parts: Some(parts), ..
                    },
                ) => RequestHead::H2 { parts, fixed: true },
                (Http::H2(_), _) => {
                    varying_parts = plan.template.multiplexed().into_parts().0;
                    RequestHead::H2 {
                        parts: &varying_parts,
                        fixed: false,
                    }
                }
            };
            http.send(ticket, sent_at, head, &self.request.body, &mut conn.out);
            self.books.note_sent(&ticket, sent_at);
        }
        if http.in_flight() > 0 || !(done || http.draining()) {
            slot.conn = Some(conn);
            return;
        }
        let unused = (http.draining() && http.sent() == 0).then(|| http.unused_because());
        if let Http::H2(h2) = &mut **http {
            h2.close(code::NO_ERROR, &mut conn.out);
        }
        let _ = conn.transport.write(&mut conn.out);
        conn.transport.close();
        slot.release(&self.books, now, done, unused);
    }

    /// Writes what the connection queued, as far as the socket takes it;
    /// the rest goes when epoll says there is room.
    fn flush(&mut self, index: usize) -> Result<(), Failure> {
        let Some(conn) = self.slots[index].conn.as_mut() else {
            return Ok(());
        };
        if conn.out.is_empty() && !conn.transport.has_unsent() {
            return Ok(());
        }
        let all_out = conn
            .transport
            .write(&mut conn.out)
            .map_err(|err| Failure::Lost(ErrorKind::Reset, err.to_string()))?;
        if all_out == conn.writable_interest {
            let interest = if all_out {
                Interest::READABLE
            } else {
                Interest::READABLE | Interest::WRITABLE
            };
            self.poll
                .registry()
                .reregister(&mut conn.transport.stream, Token(index), interest)
                .map_err(|err| Failure::Lost(ErrorKind::Reset, err.to_string()))?;
            conn.writable_interest = !all_out;
        }
        Ok(())
    }

    /// The connection failed: in set-up, one ticket carries the error and
    /// the slot backs off; once open, its requests fail and it reconnects.
    fn lost(&mut self, index: usize, now: Instant, failure: Failure) {
        let slot = &mut self.slots[index];
        let Some(mut conn) = slot.conn.take() else {
            return;
        };
        // TLS's alert, if rustls queued one, goes out before the close.
        let _ = conn.transport.write(&mut Vec::new());
        let Phase::Open(http) = &mut conn.phase else {
            // Whatever ended a connection in its set-up is a failed attempt.
            let err = match failure {
                Failure::SetUp(err) => err,
                Failure::Protocol(_, message, _) | Failure::Lost(_, message) => {
                    tls_failure(self.books.plan.addr, &message)
                }
            };
            return self.set_up_failed(index, now, err);
        };
        let (kind, message) = match failure {
            Failure::Protocol(kind, message, close_code) => {
                if let Http::H2(h2) = &mut **http {
                    h2.close(close_code, &mut conn.out);
                    let _ = conn.transport.write(&mut conn.out);
                }
                (kind, message)
            }
            Failure::Lost(kind, message) => (kind, message),
            Failure::SetUp(err) => (err.kind(), err.to_string()),
        };
        let answered = http.answered();
        http.fail_all(kind, &message, &mut self.outcomes);
        for outcome in self.outcomes.drain(..) {
            self.books.settle(outcome, answered);
        }
    }

    fn set_up_failed(&mut self, index: usize, now: Instant, err: ClientError) {
        self.slots[index].connect_failed(&self.books, now, err.kind(), err.to_string());
    }

    /// When slot `index`'s connection must run next without an event.
    fn plan_wake(&mut self, index: usize) {
        let plan = &self.books.plan;
        let slot = &mut self.slots[index];
        let next_due = slot.next_due();
        let Some(conn) = slot.conn.as_mut() else {
            return;
        };
        conn.wake = match &conn.phase {
            Phase::Connecting => Some(conn.started + plan.connect_timeout),
            Phase::Handshaking { since, .. } => Some(*since + plan.connect_timeout),
            Phase::Open(http) => {
                // Due sends wait for a free stream (an h2 server's limit).
                let free = http.in_flight() < http.stream_limit(plan.streams);
                let send = next_due
                    .filter(|_| free && !http.draining())
                    .map(|due| due - self.spin);
                [http.next_expiry(plan.request_timeout), send]
                    .into_iter()
                    .flatten()
                    .min()
            }
        };
    }

    fn next_wake(&self, now: Instant) -> Instant {
        let mut wake = now + CANCEL_CHECK;
        if let Some(deadline) = self.books.plan.deadline {
            wake = wake.min(deadline);
        }
        for slot in &self.slots {
            let at = match &slot.conn {
                Some(conn) if conn.unread => Some(now),
                Some(conn) => conn.wake,
                None => slot.reconnect_at(now),
            };
            if let Some(at) = at {
                wake = wake.min(at);
            }
        }
        wake
    }

    /// Closes every connection (GOAWAY for h2, close_notify for TLS).
    fn close_all(&mut self) {
        for slot in &mut self.slots {
            let Some(mut conn) = slot.conn.take() else {
                continue;
            };
            if let Phase::Open(http) = &mut conn.phase {
                if let Http::H2(h2) = &mut **http {
                    h2.close(code::NO_ERROR, &mut conn.out);
                }
            }
            let _ = conn.transport.write(&mut conn.out);
            conn.transport.close();
        }
    }
}

/// The smallest share of a new piece of plaintext that completes what an
/// earlier one left cut in two.
const TOP_UP: usize = 64;

/// Hands `plain` to the protocol where it lies. Bytes an earlier piece left
/// (a frame or head cut in two) are completed first, a growing share of
/// `plain` at a time, so that a download's bytes are counted in rustls'
/// buffer and not copied into the inbox.
fn feed(
    http: &mut Http,
    inbox: &mut Vec<u8>,
    mut plain: &[u8],
    now: Instant,
    outcomes: &mut Vec<Outcome>,
    out: &mut Vec<u8>,
) -> Result<(), Failure> {
    while !inbox.is_empty() {
        let take = plain.len().min(inbox.len().max(TOP_UP));
        inbox.extend_from_slice(&plain[..take]);
        plain = &plain[take..];
        let used = http.receive(inbox, now, outcomes, out)?;
        inbox.drain(..used);
        if plain.is_empty() {
            return Ok(());
        }
    }
    let used = http.receive(plain, now, outcomes, out)?;
    inbox.extend_from_slice(&plain[used..]);
    Ok(())
}

fn transport_error(err: &TransportError) -> String {
    match err {
        TransportError::Io(err) => err.to_string(),
        TransportError::Tls(err) => err.to_string(),
    }
}

/// h1's whole request, body included.
fn encode_h1_request(plan: &Plan) -> Bytes {
    let template = &plan.template;
    let (parts, ()) = template.h1_head().into_parts();
    let mut out = Vec::new();
    super::h1codec::encode_request(&parts, template.body().len(), &mut out);
    out.extend_from_slice(template.body());
    Bytes::from(out)
}
