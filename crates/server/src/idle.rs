//! The header timeout: a connection with no request in flight must deliver a
//! complete request's headers within it, counted from the connection being
//! ready or from its last response finishing. A slowloris client that
//! trickles headers, or opens a connection and sends nothing, never has a
//! request in flight, so it is closed at the timeout.
//!
//! The send-stall timeout covers the opposite case: a request is in flight
//! but the client takes none of its response (an HTTP/2 window left at 0, or
//! an h1 socket never read). The header timeout never fires then, so a
//! connection whose response bodies make no progress for the send-stall
//! timeout is closed as well.
//!
//! It also counts requests that end before their response body is complete
//! (the client cancelled them), for the rapid-reset defence in tcp.rs.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::{Body, Frame, SizeHint};
use tokio::sync::watch;
use tokio::time::Instant;

/// Requests in flight on one connection, and since when it has had none;
/// response bodies being sent, and when one last produced data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Activity {
    in_flight: usize,
    idle_since: Instant,
    sending: usize,
    last_progress: Instant,
    /// Requests that ended with their response fully produced, and without
    /// (the client reset the stream first).
    completed: u64,
    cancelled: u64,
}

impl Activity {
    fn new(now: Instant) -> Self {
        Self {
            in_flight: 0,
            idle_since: now,
            sending: 0,
            last_progress: now,
            completed: 0,
            cancelled: 0,
        }
    }

    /// A new response body counts as progress: its stall clock starts now.
    fn start_sending(&mut self, now: Instant) {
        self.sending += 1;
        self.last_progress = now;
    }

    fn stop_sending(&mut self) {
        self.sending -= 1;
    }

    /// When a connection whose bodies make no progress counts as stalled;
    /// `None` while no body is being sent.
    fn stall_deadline(&self, timeout: Duration) -> Option<Instant> {
        (self.sending > 0).then(|| self.last_progress + timeout)
    }

    fn begin(&mut self) {
        self.in_flight += 1;
    }

    fn end(&mut self, now: Instant, completed: bool) {
        match completed {
            true => self.completed += 1,
            false => self.cancelled += 1,
        }
        self.in_flight -= 1;
        if self.in_flight == 0 {
            self.idle_since = now;
        }
    }

    /// When an idle connection times out; `None` while a request is in flight.
    fn deadline(&self, timeout: Duration) -> Option<Instant> {
        (self.in_flight == 0).then(|| self.idle_since + timeout)
    }
}

/// Watches one connection's requests for the header timeout.
pub struct RequestWatch {
    activity: watch::Sender<Activity>,
}

impl RequestWatch {
    /// A connection that is ready for requests now.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            activity: watch::Sender::new(Activity::new(Instant::now())),
        })
    }

    /// A request's headers are complete; it is in flight until the guard drops.
    pub fn begin(self: &Arc<Self>) -> InFlight {
        self.activity.send_modify(Activity::begin);
        InFlight(self.clone(), false)
    }

    /// Completes once the connection has had no request in flight for `timeout`.
    pub async fn idle_for(&self, timeout: Duration) {
        let mut changes = self.activity.subscribe();
        loop {
            let deadline = changes.borrow_and_update().deadline(timeout);
            let sleep = async {
                match deadline {
                    Some(deadline) => tokio::time::sleep_until(deadline).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = sleep => return,
                // The sender lives in `self`, so this never fails while we run.
                _ = changes.changed() => {}
            }
        }
    }

    /// Completes once response bodies are being sent and none has produced
    /// data for `timeout`. Progress is recorded without waking this watcher
    /// (it happens per chunk); the watcher re-reads it when its deadline passes.
    pub async fn stalled_for(&self, timeout: Duration) {
        let mut changes = self.activity.subscribe();
        loop {
            let deadline = changes.borrow_and_update().stall_deadline(timeout);
            if deadline.is_some_and(|deadline| deadline <= Instant::now()) {
                return;
            }
            let sleep = async {
                match deadline {
                    Some(deadline) => tokio::time::sleep_until(deadline).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = sleep => {}
                _ = changes.changed() => {}
            }
        }
    }

    /// Completes once the client has cancelled more than `allowance`
    /// requests beyond those it let complete: rapid reset cancels nearly
    /// all, while a client cancelling as many as it completes costs no more
    /// than one sending requests as fast as it can.
    pub async fn cancelling(&self, allowance: u64) {
        let mut changes = self.activity.subscribe();
        loop {
            let activity = *changes.borrow_and_update();
            if activity.cancelled > activity.completed + allowance {
                return;
            }
            // The sender lives in `self`, so this never fails while we run.
            let _ = changes.changed().await;
        }
    }
}

/// One request in flight; dropping it ends the request, as completed once
/// its response body has been produced to the end.
pub struct InFlight(Arc<RequestWatch>, bool);

impl InFlight {
    /// The response has no body to send (a 204 or a 304): the request
    /// completes with its head, and hyper never polls the body.
    pub fn expect_no_body(&mut self) {
        self.1 = true;
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let (now, completed) = (Instant::now(), self.1);
        self.0
            .activity
            .send_modify(|activity| activity.end(now, completed));
    }
}

/// A response body that keeps its request in flight until it is sent or
/// dropped, and records its progress for the send-stall timeout.
pub struct Watched<B: Body> {
    body: B,
    in_flight: InFlight,
}

impl<B: Body> Watched<B> {
    pub fn new(body: B, in_flight: InFlight) -> Self {
        let now = Instant::now();
        in_flight
            .0
            .activity
            .send_modify(|activity| activity.start_sending(now));
        Self { body, in_flight }
    }

    /// Per chunk, so it notifies nobody: see [`RequestWatch::stalled_for`].
    fn progressed(&self) {
        let now = Instant::now();
        self.in_flight.0.activity.send_if_modified(|activity| {
            activity.last_progress = now;
            false
        });
    }
}

impl<B: Body> Drop for Watched<B> {
    fn drop(&mut self) {
        // hyper stops polling a body of known length at its last byte.
        self.in_flight.1 |= self.body.is_end_stream();
        self.in_flight
            .0
            .activity
            .send_modify(Activity::stop_sending);
    }
}

impl<B: Body + Unpin> Body for Watched<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.get_mut();
        let frame = Pin::new(&mut this.body).poll_frame(cx);
        match frame {
            Poll::Ready(Some(Ok(_))) => this.progressed(),
            Poll::Ready(None) => this.in_flight.1 = true,
            _ => {}
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// An HTTP/3 connection that went idle while its last responses may still
/// be on the wire: quinn took them whole, so "no request in flight" does
/// not mean delivered. Its GOAWAY waits until they are acknowledged, or
/// until the peer has acknowledged nothing for a while.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AckWait {
    /// Since when the peer has acknowledged nothing new.
    since: Instant,
    /// ACK frames received by then.
    acks: u64,
}

impl AckWait {
    pub(crate) fn new(now: Instant, acks: u64) -> Self {
        Self { since: now, acks }
    }

    /// Whether the GOAWAY may go at `now`: everything sent is delivered,
    /// or the peer, having sent `acks` ACK frames in all, sent none new
    /// for `patience`.
    pub(crate) fn over(
        &mut self,
        now: Instant,
        acks: u64,
        delivered: bool,
        patience: Duration,
    ) -> bool {
        if delivered {
            return true;
        }
        if acks != self.acks {
            *self = Self::new(now, acks);
            return false;
        }
        now.duration_since(self.since) >= patience
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(10);

    #[test]
    fn an_idle_connection_times_out_from_when_it_went_idle() {
        let start = Instant::now();
        let mut activity = Activity::new(start);
        assert_eq!(activity.deadline(TIMEOUT), Some(start + TIMEOUT));
        activity.begin();
        activity.begin();
        assert_eq!(activity.deadline(TIMEOUT), None);
        let later = start + Duration::from_secs(30);
        activity.end(later, true);
        assert_eq!(
            activity.deadline(TIMEOUT),
            None,
            "one request still in flight"
        );
        let last = later + Duration::from_secs(1);
        activity.end(last, true);
        assert_eq!(activity.deadline(TIMEOUT), Some(last + TIMEOUT));
    }

    #[tokio::test]
    async fn watch_fires_only_when_no_request_is_in_flight() {
        let watch = RequestWatch::new();
        let in_flight = watch.begin();
        let short = Duration::from_millis(20);
        let fired = tokio::time::timeout(short * 5, watch.idle_for(short)).await;
        assert!(fired.is_err(), "a request was in flight");
        drop(in_flight);
        let fired = tokio::time::timeout(short * 50, watch.idle_for(short)).await;
        assert!(fired.is_ok());
    }

    #[test]
    fn an_idle_connection_waits_while_its_peer_acknowledges_and_not_longer() {
        const PATIENCE: Duration = Duration::from_secs(1);
        let start = Instant::now();
        let mut wait = AckWait::new(start, 10);
        let later = |ms| start + Duration::from_millis(ms);
        assert!(!wait.over(later(900), 10, false, PATIENCE));
        assert!(
            !wait.over(later(950), 11, false, PATIENCE),
            "an ACK: patience again"
        );
        assert!(!wait.over(later(1900), 11, false, PATIENCE));
        assert!(
            wait.over(later(1950), 11, false, PATIENCE),
            "a second with no ACK"
        );
        assert!(
            AckWait::new(start, 10).over(start, 10, true, PATIENCE),
            "all delivered"
        );
    }

    #[test]
    fn a_stall_is_counted_from_the_last_progress_while_a_body_is_sent() {
        let start = Instant::now();
        let mut activity = Activity::new(start);
        assert_eq!(activity.stall_deadline(TIMEOUT), None, "nothing is sent");
        let sent = start + Duration::from_secs(5);
        activity.start_sending(sent);
        assert_eq!(activity.stall_deadline(TIMEOUT), Some(sent + TIMEOUT));
        activity.stop_sending();
        assert_eq!(activity.stall_deadline(TIMEOUT), None);
    }

    #[tokio::test]
    async fn a_body_that_is_not_polled_stalls_its_connection() {
        let watch = RequestWatch::new();
        let short = Duration::from_millis(20);
        let body = Watched::new(
            http_body_util::Full::new(bytes::Bytes::new()),
            watch.begin(),
        );
        let fired = tokio::time::timeout(short * 50, watch.stalled_for(short)).await;
        assert!(fired.is_ok(), "the body was never polled");
        drop(body);
        let fired = tokio::time::timeout(short * 5, watch.stalled_for(short)).await;
        assert!(fired.is_err(), "no body is being sent");
    }
}
