//! A connection slot of the event-loop engines (`quic`, `tcp`): one
//! connection at a time, up to `streams` requests on it, reconnects with a
//! backoff, and the open model's tickets waiting for their due time. The
//! engines own the connections; a slot decides which ticket goes next and
//! what a failed connect costs, the same way for both.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use h3lab_client::ConnectTiming;
use h3lab_results::{ErrorKind, Proto};

use crate::books::Books;
use crate::schedule::Ticket;
use crate::worker::{BACKOFF_MAX, BACKOFF_MIN, CONNECT_ATTEMPTS};

/// One connection slot; `C` is the engine's handle of its connection.
pub(crate) struct Slot<C> {
    pub(crate) conn: Option<C>,
    /// When to connect next (`None`: now).
    retry_at: Option<Instant>,
    failures: u32,
    backoff: Duration,
    opened: u64,
    /// Open model: tickets taken, waiting for their due time.
    pub(crate) waiting: VecDeque<Ticket>,
    pub(crate) finished: bool,
}

/// What a slot's connection should do next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Send this ticket's request now.
    Send(Ticket),
    /// Nothing due yet (or no room): wait.
    Wait,
    /// The schedule has no more tickets and none wait.
    Exhausted,
}

impl<C> Slot<C> {
    pub(crate) fn new() -> Slot<C> {
        Slot {
            conn: None,
            retry_at: None,
            failures: 0,
            backoff: BACKOFF_MIN,
            opened: 0,
            waiting: VecDeque::new(),
            finished: false,
        }
    }

    /// Whether the slot should open a connection now; marks it finished
    /// when the schedule is done and nothing waits.
    pub(crate) fn should_connect(&mut self, books: &Books, now: Instant) -> bool {
        if self.finished || self.conn.is_some() || self.retry_at.is_some_and(|at| now < at) {
            return false;
        }
        if self.waiting.is_empty() && books.is_done(now) {
            self.finished = true;
            return false;
        }
        true
    }

    /// When a slot without a connection connects again.
    pub(crate) fn reconnect_at(&self, now: Instant) -> Option<Instant> {
        (!self.finished && self.conn.is_none()).then(|| self.retry_at.unwrap_or(now))
    }

    /// The slot's connection is up: counted, and the backoff starts over.
    pub(crate) fn connected(&mut self, books: &Books, timing: &ConnectTiming, proto: Proto) {
        books.record_connection(timing, self.opened > 0, proto);
        self.opened += 1;
        self.failures = 0;
        self.backoff = BACKOFF_MIN;
    }

    /// A connection never came up: one ticket carries the error (so a dead
    /// server still ends a counted run), then a backoff; after
    /// `CONNECT_ATTEMPTS` in a row the slot gives up.
    pub(crate) fn connect_failed(
        &mut self,
        books: &Books,
        now: Instant,
        kind: ErrorKind,
        message: String,
    ) {
        self.conn = None;
        let Some(ticket) = self.waiting.pop_front().or_else(|| books.next_ticket(now)) else {
            self.finished = true;
            return;
        };
        books.record_failure(&ticket, kind, || message);
        self.failures += 1;
        if self.failures == CONNECT_ATTEMPTS {
            self.finished = true;
            for ticket in self.waiting.drain(..) {
                books.retry(ticket);
            }
            return;
        }
        self.retry_at = Some(now + self.backoff);
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
    }

    /// The next request for a connection with `in_flight` requests of
    /// `streams`: tickets are taken while there is room, and the first is
    /// sent once due and while a stream is free (an h2 server's limit may
    /// fall below what was taken).
    pub(crate) fn next(
        &mut self,
        books: &Books,
        in_flight: usize,
        streams: usize,
        now: Instant,
    ) -> Next {
        let mut exhausted = false;
        while in_flight + self.waiting.len() < streams {
            match books.next_ticket(now) {
                // A ticket handed back (its request refused) may be due
                // before those waiting: it goes first.
                Some(ticket) if ticket.intended < self.waiting.front().and_then(|t| t.intended) => {
                    self.waiting.push_front(ticket);
                }
                Some(ticket) => self.waiting.push_back(ticket),
                None => {
                    exhausted = true;
                    break;
                }
            }
        }
        match self.waiting.front() {
            None if exhausted => Next::Exhausted,
            Some(ticket) if in_flight < streams && ticket.intended.is_none_or(|due| due <= now) => {
                Next::Send(self.waiting.pop_front().expect("a waiting ticket"))
            }
            _ => Next::Wait,
        }
    }

    /// The slot's connection is done with: it had nothing left to send
    /// (`done`), or it drained. `unused` says why, when it drained before
    /// carrying a single request: that counts as a failed attempt, with its
    /// backoff, or a server that does it every time would have the slot
    /// reconnect without end.
    pub(crate) fn release(
        &mut self,
        books: &Books,
        now: Instant,
        done: bool,
        unused: Option<String>,
    ) {
        self.conn = None;
        self.finished = done;
        if let Some(message) = unused {
            self.connect_failed(books, now, ErrorKind::Reset, message);
        }
    }

    /// When the first waiting ticket is due (open model).
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.waiting.front().and_then(|ticket| ticket.intended)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    use h3lab_client::Target;

    use super::*;
    use crate::config::LoadConfig;
    use crate::plan::Plan;
    use crate::schedule::Schedule;

    fn books(limit: u64, rate: Option<f64>, start: Instant) -> Books {
        let config = LoadConfig::new(Target::parse("https://127.0.0.1:1/").unwrap());
        let plan = Plan::new(&config, "127.0.0.1:1".parse().unwrap(), None).unwrap();
        let schedule = Schedule::new(start, None, Some(limit), rate.map(|rate| (rate, start)));
        Books::new(Arc::new(plan), schedule, Arc::new(AtomicU64::new(0)))
    }

    #[test]
    fn a_closed_model_slot_fills_its_streams_then_runs_dry() {
        let now = Instant::now();
        let books = books(3, None, now);
        let mut slot: Slot<()> = Slot::new();
        assert!(matches!(slot.next(&books, 0, 2, now), Next::Send(_)));
        assert!(matches!(slot.next(&books, 1, 2, now), Next::Send(_)));
        assert_eq!(slot.next(&books, 2, 2, now), Next::Wait);
        assert!(matches!(slot.next(&books, 1, 2, now), Next::Send(_)));
        assert_eq!(slot.next(&books, 0, 2, now), Next::Exhausted);
    }

    #[test]
    fn an_open_model_ticket_waits_for_its_due_time() {
        let now = Instant::now();
        let books = books(2, Some(10.0), now);
        let mut slot: Slot<()> = Slot::new();
        assert!(matches!(slot.next(&books, 0, 2, now), Next::Send(_)));
        assert_eq!(slot.next(&books, 1, 2, now), Next::Wait);
        let due = slot.next_due().expect("the second ticket waits");
        assert_eq!(due - now, Duration::from_millis(100));
        assert!(matches!(slot.next(&books, 1, 2, due), Next::Send(_)));
    }

    #[test]
    fn a_due_ticket_waits_while_every_stream_is_taken() {
        let now = Instant::now();
        let books = books(3, None, now);
        let mut slot: Slot<()> = Slot::new();
        assert!(matches!(slot.next(&books, 0, 4, now), Next::Send(_)));
        // The server's limit fell to 2, with 3 requests in flight.
        assert_eq!(slot.next(&books, 3, 2, now), Next::Wait);
        assert!(matches!(slot.next(&books, 1, 2, now), Next::Send(_)));
    }

    #[test]
    fn a_connection_unused_before_it_drained_is_a_failed_attempt() {
        let now = Instant::now();
        let books = books(10, None, now);
        let mut slot = Slot::new();
        slot.conn = Some(());
        slot.release(&books, now, false, Some("GOAWAY before any request".into()));
        assert!(slot.conn.is_none() && !slot.finished);
        assert_eq!(books.tally.borrow().error_counts().reset, 1);
        assert!(
            slot.reconnect_at(now).is_some_and(|at| at > now),
            "a backoff"
        );
        slot.conn = Some(());
        slot.release(&books, now, true, None);
        assert!(slot.finished);
    }

    #[test]
    fn failed_connects_back_off_and_give_up() {
        let now = Instant::now();
        let books = books(100, None, now);
        let mut slot: Slot<()> = Slot::new();
        let mut at = now;
        for attempt in 1..=CONNECT_ATTEMPTS {
            assert!(slot.should_connect(&books, at), "attempt {attempt}");
            slot.connect_failed(&books, at, ErrorKind::Connect, "refused".into());
            if let Some(retry) = slot.reconnect_at(at) {
                assert!(!slot.should_connect(&books, at));
                at = retry;
            }
        }
        assert!(slot.finished);
        assert_eq!(
            books.tally.borrow().error_counts().connect,
            u64::from(CONNECT_ATTEMPTS)
        );
    }
}
