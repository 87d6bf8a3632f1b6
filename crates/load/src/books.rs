//! A worker's bookkeeping, shared by every engine (tokio's, the QUIC event
//! loop's and the TCP one's): which ticket comes next, and what each attempt, response,
//! failure and connection adds to the tally.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use h3lab_client::ConnectTiming;
use h3lab_results::{ErrorKind, Proto};
use http::StatusCode;

use crate::head::Head;
use crate::plan::Plan;
use crate::schedule::{Schedule, Ticket};
use crate::server_timing;
use crate::tally::Tally;

/// Sent later than intended by more than this counts as late.
const LATE: Duration = Duration::from_millis(1);

/// A response received in full.
pub(crate) struct Exchange {
    pub(crate) status: StatusCode,
    pub(crate) head_at: Instant,
    pub(crate) end_at: Instant,
    pub(crate) body_bytes: u64,
    /// What the edge said it waited for its origin (`Server-Timing`).
    pub(crate) origin_wait: Option<Duration>,
}

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
        /// The server refused it unprocessed (GOAWAY, H3_REQUEST_REJECTED,
        /// REFUSED_STREAM):
        /// safe to send again elsewhere.
        unsent: bool,
    },
}

/// A request on the wire, as the event-loop engines keep it: its ticket,
/// when it left, its final head once that came, and its body bytes.
pub(crate) struct Pending {
    pub(crate) ticket: Ticket,
    pub(crate) sent_at: Instant,
    /// The final head's status, arrival, and the edge's origin time.
    head: Option<(StatusCode, Instant, Option<Duration>)>,
    pub(crate) body_bytes: u64,
    /// The final head's content-length when the response has content:
    /// what its body must add up to (RFC 9113 §8.1.1, RFC 9114 §4.1.2).
    content_length: Option<u64>,
}

impl Pending {
    pub(crate) fn new(ticket: Ticket, sent_at: Instant) -> Pending {
        Pending {
            ticket,
            sent_at,
            head: None,
            body_bytes: 0,
            content_length: None,
        }
    }

    /// When it fails unanswered.
    pub(crate) fn deadline(&self, timeout: Duration) -> Instant {
        self.sent_at + timeout
    }

    pub(crate) fn has_head(&self) -> bool {
        self.head.is_some()
    }

    /// Its final head arrived at `now`. The response to a HEAD request
    /// (`head_request`), a 204 and a 304 have no content, whatever their
    /// content-length says (RFC 9110 §8.6).
    pub(crate) fn set_head(&mut self, head: &Head, now: Instant, head_request: bool) {
        let origin_wait = server_timing::origin_wait_in(head.fields.iter().map(|(_, v)| v));
        self.head = Some((head.status, now, origin_wait));
        let bodiless = head_request
            || matches!(
                head.status,
                StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED
            );
        self.content_length = head.content_length.filter(|_| !bodiless);
    }

    /// It ended whole at `now`: a response, or a malformed one (a protocol
    /// error) if its body does not add up to its content-length; `None`
    /// if no final head came.
    pub(crate) fn response(self, now: Instant) -> Option<Outcome> {
        let (status, head_at, origin_wait) = self.head?;
        if let Some(length) = self
            .content_length
            .filter(|&length| length != self.body_bytes)
        {
            let message = format!(
                "a malformed response: a body of {} bytes under a content-length of {length}",
                self.body_bytes
            );
            return Some(self.failed(ErrorKind::Protocol, message, false));
        }
        Some(Outcome::Response {
            ticket: self.ticket,
            sent_at: self.sent_at,
            exchange: Exchange {
                status,
                head_at,
                end_at: now,
                body_bytes: self.body_bytes,
                origin_wait,
            },
        })
    }

    pub(crate) fn failed(self, kind: ErrorKind, message: String, unsent: bool) -> Outcome {
        Outcome::Failed {
            ticket: self.ticket,
            kind,
            message,
            unsent,
        }
    }
}

/// One worker's schedule and tally; only its own thread touches them.
/// A ticket a request loop waits to send ([`Books::hold`]). Dropped
/// unsent, it goes back as the event loops hand theirs back at the end:
/// due, it counts as never sent; not yet due, as never issued.
pub(crate) struct HeldTicket<'a> {
    books: &'a Books,
    ticket: Option<Ticket>,
}

impl HeldTicket<'_> {
    /// The ticket, now being sent.
    pub(crate) fn send(mut self) -> Ticket {
        self.ticket.take().expect("a held ticket is sent once")
    }
}

impl Drop for HeldTicket<'_> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            let end = self.books.plan.measured_end(Instant::now());
            self.books.hand_back([ticket], end);
        }
    }
}

pub(crate) struct Books {
    pub(crate) plan: Arc<Plan>,
    pub(crate) schedule: RefCell<Schedule>,
    pub(crate) tally: RefCell<Tally>,
    pub(crate) in_flight: Cell<u64>,
    /// Finished measured attempts, for the progress bar only.
    done: Arc<AtomicU64>,
}

impl Books {
    pub(crate) fn new(plan: Arc<Plan>, schedule: Schedule, done: Arc<AtomicU64>) -> Books {
        Books {
            plan,
            schedule: RefCell::new(schedule),
            tally: RefCell::new(Tally::default()),
            in_flight: Cell::new(0),
            done,
        }
    }

    /// The tally with what the schedule never sent, once the run is over.
    pub(crate) fn into_tally(self, end: Instant) -> Tally {
        let mut tally = self.tally.into_inner();
        let schedule = self.schedule.borrow();
        tally.aborted_in_flight = self.in_flight.get() + schedule.refused_at_the_end();
        tally.unsent = schedule.unsent(end);
        tally.not_attempted = schedule.not_attempted();
        tally
    }

    /// The next ticket as of `now`: the caller's clock, read once for a
    /// connection's sends, not once a ticket (a read per request was 1.4 %
    /// of the h3 client).
    pub(crate) fn next_ticket(&self, now: Instant) -> Option<Ticket> {
        self.schedule.borrow_mut().next(now)
    }

    /// Open model: when the next ticket is due.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.schedule.borrow().next_due()
    }

    pub(crate) fn is_done(&self, now: Instant) -> bool {
        self.schedule.borrow().is_done(now)
    }

    /// `ticket`, held by a request loop of the tokio engine until it is
    /// sent: a loop dropped first (the run's end, Ctrl-C) hands it back.
    pub(crate) fn hold(&self, ticket: Ticket) -> HeldTicket<'_> {
        HeldTicket {
            books: self,
            ticket: Some(ticket),
        }
    }

    /// Tickets a connection slot still held when the run ended at `end`:
    /// open-model ones already due count as never sent, later ones as
    /// never issued; closed-model ones as never issued, so that a `-n`
    /// run counts them as never attempted and a `-z` run not at all.
    pub(crate) fn hand_back(&self, held: impl IntoIterator<Item = Ticket>, end: Instant) {
        let mut schedule = self.schedule.borrow_mut();
        for ticket in held {
            if ticket.intended.is_none_or(|due| due >= end) {
                schedule.take_back(ticket);
            } else {
                schedule.retry(ticket);
            }
        }
    }

    /// Hands back a ticket whose request never left: another connection
    /// sends it, uncounted.
    pub(crate) fn retry(&self, ticket: Ticket) {
        self.schedule.borrow_mut().retry(ticket);
    }

    /// Hands back a ticket whose request left and was refused unprocessed:
    /// another connection sends it again, not counted as sent again (nor
    /// its lag, which now holds the refusal's round trip).
    pub(crate) fn retry_refused(&self, ticket: Ticket) {
        self.retry(Ticket {
            resent: true,
            ..ticket
        });
    }

    pub(crate) fn note_first_attempt(&self) {
        self.tally
            .borrow_mut()
            .first_attempt
            .get_or_insert_with(Instant::now);
    }

    pub(crate) fn note_sent(&self, ticket: &Ticket, sent_at: Instant) {
        self.in_flight.set(self.in_flight.get() + 1);
        let (Some(intended), false, false) = (ticket.intended, ticket.warmup, ticket.resent) else {
            return;
        };
        let mut tally = self.tally.borrow_mut();
        tally.sent += 1;
        let lag = sent_at.saturating_duration_since(intended);
        tally.lag.record(lag);
        if lag > LATE {
            tally.late += 1;
        }
    }

    /// The attempt sent at `sent_at` ended, whichever way.
    pub(crate) fn note_ended(&self) {
        self.in_flight.set(self.in_flight.get() - 1);
    }

    pub(crate) fn record_response(&self, ticket: &Ticket, sent_at: Instant, exchange: &Exchange) {
        let origin = ticket.intended.unwrap_or(sent_at);
        let latency = exchange.end_at.saturating_duration_since(origin);
        let mut tally = self.tally.borrow_mut();
        if ticket.warmup {
            tally.warmup_completed += 1;
            tally.warmup_latency.record(latency);
            return;
        }
        tally.record_response(
            self.plan.unix_second(exchange.end_at),
            exchange.status.as_u16(),
            exchange.body_bytes,
            exchange.head_at.saturating_duration_since(origin),
            latency,
            exchange.origin_wait,
        );
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    /// Records how a request of the event-loop engines ended. A request
    /// refused unprocessed goes back, uncounted, only from a connection
    /// that `answered` before (as in `worker.rs`): a server that refuses
    /// every request shows up as errors, not as a run that never ends.
    pub(crate) fn settle(&self, outcome: Outcome, answered: bool) {
        self.note_ended();
        match outcome {
            Outcome::Response {
                ticket,
                sent_at,
                exchange,
            } => self.record_response(&ticket, sent_at, &exchange),
            Outcome::Failed {
                ticket,
                unsent: true,
                ..
            } if answered => self.retry_refused(ticket),
            Outcome::Failed {
                ticket,
                kind,
                message,
                ..
            } => self.record_failure(&ticket, kind, || message),
        }
    }

    pub(crate) fn record_timeout(&self, ticket: &Ticket) {
        let limit = self.plan.request_timeout;
        self.record_failure(ticket, ErrorKind::Timeout, || {
            format!(
                "no complete response within {limit:?}; raise --timeout if the server is just slow"
            )
        });
    }

    pub(crate) fn record_failure(
        &self,
        ticket: &Ticket,
        kind: ErrorKind,
        message: impl FnOnce() -> String,
    ) {
        let mut tally = self.tally.borrow_mut();
        if ticket.warmup {
            tally.warmup_failed += 1;
            return;
        }
        tally.record_failure(self.plan.unix_second(Instant::now()), kind, message);
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_connection(&self, timing: &ConnectTiming, reconnect: bool, proto: Proto) {
        let mut tally = self.tally.borrow_mut();
        tally.connections_opened += 1;
        if self.plan.auto.is_some() {
            *tally.connections_by_protocol.entry(proto).or_default() += 1;
        }
        tally.reconnects += u64::from(reconnect);
        if let Some(tcp) = timing.tcp_connect {
            tally.tcp_connect.record(tcp);
        }
        if let Some(handshake) = timing.handshake {
            tally.handshake.record(handshake);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    use h3lab_client::Target;

    use super::*;
    use crate::config::LoadConfig;

    const MS: Duration = Duration::from_millis(1);

    fn books(schedule: Schedule) -> Books {
        let config = LoadConfig::new(Target::parse("https://127.0.0.1:1/").unwrap());
        let plan = Plan::new(&config, "127.0.0.1:1".parse().unwrap(), None).unwrap();
        Books::new(Arc::new(plan), schedule, Arc::new(AtomicU64::new(0)))
    }

    /// Refused unprocessed (GOAWAY, REFUSED_STREAM, H3_REQUEST_REJECTED).
    fn refused(ticket: Ticket) -> Outcome {
        Outcome::Failed {
            ticket,
            kind: ErrorKind::Reset,
            message: "refused".into(),
            unsent: true,
        }
    }

    fn ok(end_at: Instant) -> Exchange {
        Exchange {
            status: StatusCode::OK,
            head_at: end_at,
            end_at,
            body_bytes: 0,
            origin_wait: None,
        }
    }

    /// A closed-model `-z` run: a ticket a slot still held at the deadline
    /// (an h3 connection out of stream credit) is no request "never
    /// attempted": `not_attempted` is for `-n` runs only.
    #[test]
    fn a_ticket_held_at_the_deadline_of_a_timed_closed_run_is_not_counted() {
        let start = Instant::now();
        let end = start + Duration::from_secs(60);
        let books = books(Schedule::new(start, Some(end), None, None));
        let held = books.next_ticket(start).expect("a ticket");
        books.hand_back([held], end);
        assert_eq!(books.into_tally(end).not_attempted, 0);
    }

    /// The same with `-n`: the ticket held counts as never attempted, once.
    #[test]
    fn a_ticket_held_at_the_end_of_a_counted_closed_run_is_not_attempted_once() {
        let start = Instant::now();
        let books = books(Schedule::new(start, None, Some(5), None));
        let held = books.next_ticket(start).expect("a ticket");
        let _sent = books.next_ticket(start).expect("a ticket");
        books.hand_back([held], start);
        assert_eq!(books.into_tally(start).not_attempted, 4);
    }

    /// Open model: a request refused unprocessed (GOAWAY, REFUSED_STREAM,
    /// H3_REQUEST_REJECTED) on a connection that answered before goes back
    /// and is sent again: one request, sent once in `sent` and `lag_us`,
    /// its latency still from its intended time.
    #[test]
    fn a_refused_request_sent_again_counts_as_sent_once() {
        let start = Instant::now();
        let books = books(Schedule::new(start, None, Some(1), Some((10.0, start))));
        let ticket = books.next_ticket(start).expect("a ticket");
        books.note_sent(&ticket, start);
        books.settle(refused(ticket), true);
        let again = books.next_ticket(start).expect("the refused ticket, back");
        assert_eq!(again.intended, ticket.intended, "not re-timed");
        books.note_sent(&again, start + 5 * MS);
        books.settle(
            Outcome::Response {
                ticket: again,
                sent_at: start + 5 * MS,
                exchange: ok(start + 7 * MS),
            },
            true,
        );
        let tally = books.into_tally(start + 10 * MS);
        assert_eq!(tally.completed, 1);
        assert!(
            (6990..=7010).contains(&tally.latency.max()),
            "from the intended time"
        );
        assert_eq!(
            (tally.sent, tally.lag.count(), tally.late),
            (1, 1, 0),
            "one request sent, on time"
        );
        assert_eq!(tally.unsent, 0);
    }

    /// A request loop dropped (Ctrl-C) while it held a due ticket: never
    /// sent, so one of the `unsent`, not one issued and lost.
    #[test]
    fn a_ticket_dropped_unsent_while_due_counts_as_unsent() {
        let start = Instant::now() - 50 * MS;
        let books = books(Schedule::new(start, None, Some(1), Some((100.0, start))));
        let held = books.hold(books.next_ticket(start).expect("a ticket"));
        drop(held);
        let tally = books.into_tally(Instant::now());
        assert_eq!((tally.sent, tally.unsent), (0, 1));
    }

    /// Refused, then the run ended before it went again: it was sent (and
    /// counted so), so it is not also one of the `unsent`; the end cut it
    /// off, as it does the requests in flight.
    #[test]
    fn a_refused_request_stranded_at_the_end_is_not_also_unsent() {
        let start = Instant::now();
        let books = books(Schedule::new(start, None, Some(1), Some((10.0, start))));
        let ticket = books.next_ticket(start).expect("a ticket");
        books.note_sent(&ticket, start);
        books.settle(refused(ticket), true);
        let tally = books.into_tally(start + 10 * MS);
        assert_eq!(tally.sent + tally.unsent, 1, "due once: sent or unsent");
        assert_eq!((tally.completed, tally.aborted_in_flight), (0, 1));
    }

    /// A closed `-z` run whose refused request is still waiting to go
    /// again at the deadline: no request of a timed run is "never
    /// attempted".
    #[test]
    fn a_timed_closed_run_has_no_request_never_attempted() {
        let start = Instant::now();
        let end = start + Duration::from_secs(60);
        let books = books(Schedule::new(start, Some(end), None, None));
        let ticket = books.next_ticket(start).expect("a ticket");
        books.note_sent(&ticket, start);
        books.settle(refused(ticket), true);
        assert_eq!(books.into_tally(end).not_attempted, 0);
    }
}
