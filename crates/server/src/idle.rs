//! The header timeout: a connection with no request in flight must deliver a
//! complete request's headers within it, counted from the connection being
//! ready or from its last response finishing. A slowloris client that
//! trickles headers, or opens a connection and sends nothing, never has a
//! request in flight, so it is closed at the timeout.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::{Body, Frame, SizeHint};
use tokio::sync::watch;
use tokio::time::Instant;

/// Requests in flight on one connection, and since when it has had none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Activity {
    in_flight: usize,
    idle_since: Instant,
}

impl Activity {
    fn new(now: Instant) -> Self {
        Self {
            in_flight: 0,
            idle_since: now,
        }
    }

    fn begin(&mut self) {
        self.in_flight += 1;
    }

    fn end(&mut self, now: Instant) {
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
        InFlight(self.clone())
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
}

/// One request in flight; dropping it ends the request.
pub struct InFlight(Arc<RequestWatch>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let now = Instant::now();
        self.0.activity.send_modify(|activity| activity.end(now));
    }
}

/// A response body that keeps its request in flight until it is sent or dropped.
pub struct Watched<B> {
    body: B,
    _in_flight: InFlight,
}

impl<B> Watched<B> {
    pub fn new(body: B, in_flight: InFlight) -> Self {
        Self {
            body,
            _in_flight: in_flight,
        }
    }
}

impl<B: Body + Unpin> Body for Watched<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
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
        activity.end(later);
        assert_eq!(
            activity.deadline(TIMEOUT),
            None,
            "one request still in flight"
        );
        let last = later + Duration::from_secs(1);
        activity.end(last);
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
}
