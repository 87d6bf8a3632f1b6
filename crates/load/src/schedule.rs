//! Which request a worker sends next and when: a pure state machine over
//! instants handed in by the caller, so pacing is tested in virtual time.

use std::time::{Duration, Instant};

/// Permission to send one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket {
    /// Open model: when the request is due; latency is measured from here.
    pub intended: Option<Instant>,
    /// Issued before the measured phase: reported apart.
    pub warmup: bool,
    /// Sent before and refused unprocessed: already counted as sent.
    pub resent: bool,
}

/// Open-model timetable: request `k` is due at `first + k / rate`.
#[derive(Debug, Clone, Copy)]
struct Pacing {
    first: Instant,
    rate: f64,
    next: u64,
}

impl Pacing {
    fn due(&self, k: u64) -> Instant {
        self.first + Duration::from_secs_f64(k as f64 / self.rate)
    }

    /// How many requests are due strictly before `t`.
    fn due_before(&self, t: Instant) -> u64 {
        let span = t.saturating_duration_since(self.first).as_secs_f64();
        (span * self.rate).ceil() as u64
    }
}

#[derive(Debug)]
pub(crate) struct Schedule {
    measure_start: Instant,
    deadline: Option<Instant>,
    /// Measured tickets still allowed (`None`: bounded by time only).
    remaining: Option<u64>,
    limit: Option<u64>,
    pacing: Option<Pacing>,
    /// Tickets handed back for another connection: never sent (their
    /// connection closed first), or sent and refused unprocessed (`resent`).
    retry: Vec<Ticket>,
    issued_measured: u64,
}

impl Schedule {
    /// `rate` (per second) with `first` due time selects the open model.
    pub fn new(
        measure_start: Instant,
        deadline: Option<Instant>,
        limit: Option<u64>,
        rate: Option<(f64, Instant)>,
    ) -> Schedule {
        Schedule {
            measure_start,
            deadline,
            remaining: limit,
            limit,
            pacing: rate.map(|(rate, first)| Pacing {
                first,
                rate,
                next: 0,
            }),
            retry: Vec::new(),
            issued_measured: 0,
        }
    }

    /// Open model: the time between this worker's sends.
    pub fn interval(&self) -> Option<Duration> {
        self.pacing
            .as_ref()
            .map(|pacing| Duration::from_secs_f64(1.0 / pacing.rate))
    }

    /// The next ticket, or `None` when this worker has issued all it may.
    pub fn next(&mut self, now: Instant) -> Option<Ticket> {
        if let Some(ticket) = self.retry.pop() {
            return Some(ticket);
        }
        let ticket = self.peek(now)?;
        if !ticket.warmup {
            self.remaining = self.remaining.map(|left| left - 1);
            self.issued_measured += 1;
        }
        if let Some(pacing) = &mut self.pacing {
            pacing.next += 1;
        }
        Some(ticket)
    }

    /// Open model: when the next ticket would be due, whether or not the
    /// deadline or the count lets `next` give it (`None` in the closed
    /// model).
    pub fn next_due(&self) -> Option<Instant> {
        match self.retry.last() {
            Some(ticket) => ticket.intended,
            None => self.pacing.as_ref().map(|pacing| pacing.due(pacing.next)),
        }
    }

    /// True when `next` would return `None`.
    pub fn is_done(&self, now: Instant) -> bool {
        self.retry.is_empty() && self.peek(now).is_none()
    }

    /// Takes back a ticket issued ahead of its due time and never used,
    /// as if it had not been issued: the run ended before it was due.
    pub fn take_back(&mut self, ticket: Ticket) {
        if !ticket.warmup {
            self.issued_measured -= 1;
            self.remaining = self.remaining.map(|left| left + 1);
        }
    }

    /// Gives back a ticket for another connection to send.
    pub fn retry(&mut self, ticket: Ticket) {
        self.retry.push(ticket);
    }

    fn peek(&self, now: Instant) -> Option<Ticket> {
        let (when, intended) = match &self.pacing {
            Some(pacing) => {
                let due = pacing.due(pacing.next);
                (due, Some(due))
            }
            None => (now, None),
        };
        if self.deadline.is_some_and(|deadline| when >= deadline) {
            return None;
        }
        let warmup = when < self.measure_start;
        if !warmup && self.remaining == Some(0) {
            return None;
        }
        Some(Ticket {
            intended,
            warmup,
            resent: false,
        })
    }

    /// Closed model: measured requests of a counted run never attempted
    /// (the run was interrupted or every connection gave up).
    pub fn not_attempted(&self) -> u64 {
        if self.pacing.is_some() || self.limit.is_none() {
            return 0;
        }
        let stranded = self.retry.iter().filter(|ticket| !ticket.warmup).count() as u64;
        self.remaining.unwrap_or(0) + stranded
    }

    /// Open model: measured requests sent, refused unprocessed and still
    /// waiting to go again when the run ended: cut off by its end, as the
    /// requests in flight are.
    pub fn refused_at_the_end(&self) -> u64 {
        if self.pacing.is_none() {
            return 0;
        }
        let refused = self
            .retry
            .iter()
            .filter(|ticket| !ticket.warmup && ticket.resent);
        refused.count() as u64
    }

    /// Open model: measured requests due before `end` that were never sent.
    pub fn unsent(&self, end: Instant) -> u64 {
        let Some(pacing) = &self.pacing else {
            return 0;
        };
        let end = self.deadline.map_or(end, |deadline| deadline.min(end));
        let mut due = pacing
            .due_before(end)
            .saturating_sub(pacing.due_before(self.measure_start));
        if let Some(limit) = self.limit {
            due = due.min(limit);
        }
        let stranded = self
            .retry
            .iter()
            .filter(|ticket| !ticket.warmup && !ticket.resent)
            .count() as u64;
        due.saturating_sub(self.issued_measured) + stranded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn tickets_held_at_the_end_count_as_unsent_only_once_due() {
        let t0 = Instant::now();
        let mut schedule = Schedule::new(t0, None, None, Some((1000.0, t0)));
        let tickets: Vec<_> = (0..5).map(|_| schedule.next(t0).unwrap()).collect();
        // The run ends at 2.5 ms: tickets due at 0, 1 and 2 ms were held
        // unsent, those at 3 and 4 ms were taken ahead of time.
        let end = t0 + MS * 5 / 2;
        for ticket in tickets {
            if ticket.intended.unwrap() < end {
                schedule.retry(ticket);
            } else {
                schedule.take_back(ticket);
            }
        }
        assert_eq!(schedule.unsent(end), 3);
    }

    #[test]
    fn closed_model_issues_exactly_the_limit() {
        let t0 = Instant::now();
        let mut schedule = Schedule::new(t0, None, Some(3), None);
        let tickets: Vec<_> = std::iter::from_fn(|| schedule.next(t0)).collect();
        assert_eq!(tickets.len(), 3);
        assert!(tickets.iter().all(|t| t.intended.is_none() && !t.warmup));
        assert!(schedule.is_done(t0));
        assert_eq!(schedule.not_attempted(), 0);
    }

    #[test]
    fn closed_model_reports_what_it_never_attempted() {
        let t0 = Instant::now();
        let mut schedule = Schedule::new(t0, None, Some(5), None);
        let first = schedule.next(t0).unwrap();
        schedule.next(t0);
        schedule.retry(first);
        assert_eq!(schedule.not_attempted(), 4);
    }

    #[test]
    fn warmup_tickets_do_not_use_the_limit() {
        let t0 = Instant::now();
        let mut schedule = Schedule::new(t0 + 100 * MS, None, Some(1), None);
        for _ in 0..5 {
            assert!(schedule.next(t0).unwrap().warmup);
        }
        assert!(!schedule.next(t0 + 100 * MS).unwrap().warmup);
        assert_eq!(schedule.next(t0 + 100 * MS), None);
    }

    #[test]
    fn deadline_ends_a_timed_run() {
        let t0 = Instant::now();
        let mut schedule = Schedule::new(t0, Some(t0 + 10 * MS), None, None);
        assert!(schedule.next(t0 + 9 * MS).is_some());
        assert!(schedule.next(t0 + 10 * MS).is_none());
    }

    #[test]
    fn open_model_spaces_requests_at_the_rate() {
        let t0 = Instant::now();
        let mut schedule = Schedule::new(
            t0,
            Some(t0 + Duration::from_secs(1)),
            None,
            Some((200.0, t0)),
        );
        let due: Vec<Instant> = std::iter::from_fn(|| schedule.next(t0))
            .map(|ticket| ticket.intended.unwrap())
            .collect();
        assert_eq!(due.len(), 200);
        assert_eq!(due[1] - due[0], 5 * MS);
        assert_eq!(due[199] - due[0], 199 * 5 * MS);
        assert_eq!(schedule.unsent(t0 + Duration::from_secs(5)), 0);
    }

    #[test]
    fn the_next_due_time_is_the_next_tickets_and_the_closed_model_has_none() {
        let start = Instant::now();
        let mut closed = Schedule::new(start, None, Some(3), None);
        assert_eq!(closed.next_due(), None);
        closed.next(start);
        assert_eq!(closed.next_due(), None);
        let mut open = Schedule::new(start, None, None, Some((100.0, start)));
        assert_eq!(open.next_due(), Some(start));
        let first = open.next(start).unwrap();
        assert_eq!(open.next_due(), Some(start + Duration::from_millis(10)));
        open.retry(first);
        assert_eq!(open.next_due(), Some(start));
        assert_eq!(open.next(start), Some(first));
    }

    #[test]
    fn open_model_counts_requests_never_sent() {
        let t0 = Instant::now();
        let mut schedule = Schedule::new(
            t0,
            Some(t0 + Duration::from_secs(1)),
            None,
            Some((100.0, t0)),
        );
        for _ in 0..30 {
            schedule.next(t0);
        }
        assert_eq!(schedule.unsent(t0 + Duration::from_secs(1)), 70);
        assert_eq!(schedule.unsent(t0 + 500 * MS), 20);
    }

    #[test]
    fn retried_ticket_keeps_its_intended_time() {
        let t0 = Instant::now();
        let mut schedule = Schedule::new(t0, None, Some(2), Some((10.0, t0)));
        let first = schedule.next(t0).unwrap();
        schedule.retry(first);
        assert_eq!(schedule.next(t0), Some(first));
        assert_eq!(schedule.next(t0).unwrap().intended, Some(t0 + 100 * MS));
        assert!(schedule.is_done(t0));
    }
}
