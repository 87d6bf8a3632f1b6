//! RFC 9218 priorities on HTTP/2, scheduled above hyper.
//!
//! hyper's h2 sends a connection's streams in turn, a DATA frame each, from
//! whatever their response bodies have yielded into its buffers; it reads
//! no `priority` header and has no API to order streams. So the order is
//! decided where bodies yield: each HTTP/2 response body is a
//! [`ScheduledBody`], which yields its next piece only when its
//! connection's [`Schedule`] gives it the turn. The turn goes as on h3
//! ([`crate::priority`]): the most urgent response first; of one urgency,
//! the non-incremental ones whole in stream order, then the incremental
//! ones in turn, a piece each; a request without the header counts as
//! urgency 3, incremental.
//!
//! What a body yields waits in h2's buffers until the connection writes
//! it, and h2 sends all that waits there in turn. So a connection has at
//! most [`BUDGET`] bytes yielded but not yet written ([`WriteCount`] counts
//! the writes), in pieces of at most [`PIECE`] (one DATA frame): a response
//! that arrives more urgent waits behind that much at most, plus what the
//! kernel's socket buffer holds (`--tcp-notsent-lowat` bounds that).
//!
//! A stream with the turn may be unable to take it: its client has left it
//! no flow-control window, so hyper holds its last piece and stops polling
//! it. Strict priority would then stall every other response for as long
//! as that client likes. So:
//! - a stream that has the turn and does not ask for it within [`PATIENCE`]
//!   is passed over until it asks again, when it has its turn back at once;
//! - bytes yielded but not written within [`PATIENCE`], while the socket
//!   accepts writes, are written off the budget: they wait for a window,
//!   not for the wire.
//!
//! A healthy stream asks again within microseconds (hyper polls its body
//! again as soon as it has handed a piece to h2), and a connection writes
//! within a task wake-up, so the patience only ever runs out on a blocked
//! stream. A client that reads nothing at all blocks every stream, and the
//! send-stall timeout closes its connection ([`crate::idle`]).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use crate::config::StreamOrder;
use crate::priority::Priority;

/// The most a body yields per turn: one DATA frame at h2's default
/// `SETTINGS_MAX_FRAME_SIZE`.
pub(crate) const PIECE: usize = 16 * 1024;
/// Bytes a connection may have yielded but not written. A few pieces keep
/// h2 writing while the next turn's body task wakes; the socket buffer
/// below keeps the path busy.
pub(crate) const BUDGET: u64 = 4 * PIECE as u64;
/// How long a stream may hold the turn without asking for it, and yielded
/// bytes may go unwritten while the socket accepts writes, before the
/// schedule takes it as blocked by flow control (see the module doc).
pub(crate) const PATIENCE: Duration = Duration::from_millis(20);

/// What `--h2-stream-order in-order` gives every request: one urgency, not
/// incremental, so each response goes whole in stream order.
const IN_ORDER: Priority = Priority {
    urgency: 3,
    incremental: false,
};

/// The priority a request's response is scheduled by, or `None` when the
/// connection's responses take turns as hyper's h2 sends them.
pub(crate) fn priority(order: StreamOrder, headers: &HeaderMap) -> Option<Priority> {
    match order {
        StreamOrder::Priority => Some(Priority::of(headers)),
        StreamOrder::InOrder => Some(IN_ORDER),
        StreamOrder::Fair => None,
    }
}

/// A response's place on its connection: its request's rank in stream
/// order (hyper hands requests to the service in the order h2 accepts
/// them, which is stream order).
pub(crate) type Place = u64;

/// Whether a stream may yield its next piece now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    Go,
    /// Not now; ask again when woken, or, when given, at the latest then.
    Wait(Option<Instant>),
}

/// A response being sent.
#[derive(Debug)]
struct Open {
    priority: Priority,
    /// Asked for a turn and was told to wait.
    asking: bool,
    /// Had the turn and did not take it (see [`PATIENCE`]).
    passed_over: bool,
}

/// One connection's turns: which response may yield next, given the open
/// responses' priorities and what has been written. Pure: time comes in as
/// arguments, and each change names the stream to wake, if any.
#[derive(Debug)]
pub(crate) struct Schedule {
    open: BTreeMap<Place, Open>,
    next_place: Place,
    /// Per urgency, the incremental stream that had the last turn.
    last_incremental: [Option<Place>; 8],
    /// Bytes yielded and not yet written.
    unsent: u64,
    /// When bytes were last yielded or written.
    last_progress: Instant,
    /// The last write found the socket full.
    socket_full: bool,
    /// The stream whose turn it is, and since when it has had the turn
    /// without taking it.
    turn: Option<(Place, Instant)>,
    /// The one waiting stream that looks again when the holder may have
    /// gone silent ([`Schedule::silence_deadline`]); the others wait to be
    /// woken. Were they all to look, a client that blocks 200 streams
    /// would wake 200 tasks every [`PATIENCE`] (that alone raised the p99
    /// of every protocol on the server 2.6 times in h2_abuse's zero-window
    /// stall).
    watcher: Option<Place>,
}

/// The streams a change of the schedule gives a reason to ask again.
pub(crate) type Wakes = Vec<Place>;

impl Schedule {
    pub(crate) fn new(now: Instant) -> Self {
        Schedule {
            open: BTreeMap::new(),
            next_place: 0,
            last_incremental: [None; 8],
            unsent: 0,
            last_progress: now,
            socket_full: false,
            turn: None,
            watcher: None,
        }
    }

    /// The place of the connection's next request.
    pub(crate) fn place(&mut self) -> Place {
        self.next_place += 1;
        self.next_place
    }

    /// The stream at `place` has a piece to yield: may it? It is open from
    /// its first question until [`Schedule::close`].
    pub(crate) fn ask(
        &mut self,
        place: Place,
        priority: Priority,
        now: Instant,
    ) -> (Answer, Wakes) {
        let before = self.holder(now);
        let open = self.open.entry(place).or_insert(Open {
            priority,
            asking: false,
            passed_over: false,
        });
        open.passed_over = false;
        open.asking = true;
        self.pass_over_silent_holder(now);
        let holder = self.holder(now);
        let mut wakes: Wakes = self.handed_over(before, holder).into_iter().collect();
        wakes.retain(|next| *next != place);
        if holder != Some(place) {
            return (Answer::Wait(self.watch(place, now)), wakes);
        }
        wakes.extend(self.stop_watching(place));
        self.turn = Some((place, now));
        if self.unsent >= BUDGET && self.budget_stuck(now) {
            self.unsent = 0;
        }
        if self.unsent >= BUDGET {
            return (Answer::Wait(Some(self.budget_deadline(now))), wakes);
        }
        self.stream(place).asking = false;
        (Answer::Go, wakes)
    }

    /// The stream at `place`, told to go, yielded `bytes`.
    pub(crate) fn yielded(&mut self, place: Place, bytes: u64, now: Instant) -> Option<Place> {
        let before = self.holder(now);
        self.unsent += bytes;
        self.last_progress = now;
        self.turn = Some((place, now));
        let open = self.stream(place);
        if open.priority.incremental {
            let urgency = open.priority.urgency;
            self.last_incremental[usize::from(urgency)] = Some(place);
        }
        let holder = self.holder(now);
        self.handed_over(before, holder)
    }

    /// The connection wrote `bytes` (of any frame) to its socket.
    pub(crate) fn written(&mut self, bytes: u64, now: Instant) -> Option<Place> {
        let was_full = self.unsent >= BUDGET;
        self.unsent = self.unsent.saturating_sub(bytes);
        self.last_progress = now;
        self.socket_full = false;
        let holder = self.holder(now)?;
        let asking = self.open.get(&holder).is_some_and(|open| open.asking);
        (was_full && self.unsent < BUDGET && asking).then_some(holder)
    }

    /// The socket took no more: yielded bytes wait for the wire.
    pub(crate) fn write_blocked(&mut self) {
        self.socket_full = true;
    }

    /// The response at `place` is complete or abandoned.
    pub(crate) fn close(&mut self, place: Place, now: Instant) -> Wakes {
        let before = self.holder(now);
        self.open.remove(&place);
        let holder = self.holder(now);
        let mut wakes: Wakes = self.handed_over(before, holder).into_iter().collect();
        wakes.extend(self.stop_watching(place));
        wakes
    }

    /// The deadline of the waiting stream at `place`, when it is to watch
    /// the holder: when no other waiting stream does.
    fn watch(&mut self, place: Place, now: Instant) -> Option<Instant> {
        let other_watches = self
            .watcher
            .is_some_and(|watcher| watcher != place && self.is_asking(watcher));
        if other_watches {
            return None;
        }
        self.watcher = Some(place);
        Some(self.silence_deadline(now))
    }

    /// `place` waits no more: when it was the watcher, another waiting
    /// stream is woken to take over.
    fn stop_watching(&mut self, place: Place) -> Option<Place> {
        if self.watcher != Some(place) {
            return None;
        }
        self.watcher = None;
        let next = self
            .open
            .iter()
            .find(|(other, open)| **other != place && open.asking);
        next.map(|(other, _)| *other)
    }

    fn is_asking(&self, place: Place) -> bool {
        self.open.get(&place).is_some_and(|open| open.asking)
    }

    /// The stream whose turn it is, now.
    fn holder(&mut self, now: Instant) -> Option<Place> {
        let holder = self.best();
        match (holder, self.turn) {
            (None, _) => self.turn = None,
            (Some(place), Some((current, _))) if place == current => {}
            (Some(place), _) => self.turn = Some((place, now)),
        }
        holder
    }

    /// The most urgent stream not passed over; of one urgency, the first
    /// non-incremental one, else the incremental one after the last to go.
    fn best(&self) -> Option<Place> {
        let candidates = || self.open.iter().filter(|(_, open)| !open.passed_over);
        let urgency = candidates().map(|(_, open)| open.priority.urgency).min()?;
        let of_urgency = || {
            candidates()
                .filter(move |(_, open)| open.priority.urgency == urgency)
                .map(|(place, open)| (*place, open.priority.incremental))
        };
        if let Some((place, _)) = of_urgency().find(|(_, incremental)| !incremental) {
            return Some(place);
        }
        let last = self.last_incremental[usize::from(urgency)].unwrap_or(0);
        let next = of_urgency()
            .map(|(place, _)| place)
            .find(|place| *place > last);
        next.or_else(|| of_urgency().map(|(place, _)| place).next())
    }

    /// A holder that has neither asked nor yielded for [`PATIENCE`] is
    /// blocked (see the module doc): the turn passes on until it asks.
    fn pass_over_silent_holder(&mut self, now: Instant) {
        let Some((place, since)) = self.turn else {
            return;
        };
        let open = self.stream(place);
        if !open.asking && now.duration_since(since) >= PATIENCE {
            open.passed_over = true;
            self.turn = None;
        }
    }

    /// When waiting streams look again whether the holder has gone
    /// silent: nobody wakes them when it does.
    fn silence_deadline(&self, now: Instant) -> Instant {
        match self.turn {
            Some((place, since)) if !self.open[&place].asking => since + PATIENCE,
            _ => now + PATIENCE,
        }
    }

    /// Whether the unsent bytes have waited for [`PATIENCE`] while the
    /// socket took writes: they are stuck behind flow control.
    fn budget_stuck(&self, now: Instant) -> bool {
        !self.socket_full && now.duration_since(self.last_progress) >= PATIENCE
    }

    /// When the holder, waiting for bytes to be written, looks again
    /// whether they are stuck (while the socket is full, it cannot tell
    /// when that ends: a write says so but need not cross the budget).
    fn budget_deadline(&self, now: Instant) -> Instant {
        match self.socket_full {
            true => now + PATIENCE,
            false => self.last_progress + PATIENCE,
        }
    }

    /// The new holder to wake, when the turn moved to a stream waiting for it.
    fn handed_over(&self, before: Option<Place>, after: Option<Place>) -> Option<Place> {
        let after = after.filter(|place| Some(*place) != before)?;
        self.is_asking(after).then_some(after)
    }

    fn stream(&mut self, place: Place) -> &mut Open {
        self.open
            .get_mut(&place)
            .expect("a stream asks before it yields or is passed over")
    }
}

/// A connection's [`Schedule`], shared by its response bodies and its
/// socket, with the wakers of the streams waiting for a turn.
#[derive(Debug)]
pub(crate) struct Scheduler {
    state: Mutex<Shared>,
}

#[derive(Debug)]
struct Shared {
    schedule: Schedule,
    waiting: HashMap<Place, Waker>,
}

impl Scheduler {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Scheduler {
            state: Mutex::new(Shared {
                schedule: Schedule::new(Instant::now()),
                waiting: HashMap::new(),
            }),
        })
    }

    /// The turns of the connection's next request's response, when
    /// `priority` schedules it.
    pub(crate) fn enter(self: &Arc<Self>, priority: Option<Priority>) -> Option<Turns> {
        let priority = priority?;
        Some(Turns {
            scheduler: self.clone(),
            place: self.lock().schedule.place(),
            priority,
            rest: Bytes::new(),
            closed: false,
            deadline: None,
        })
    }

    fn ask(&self, place: Place, priority: Priority, waker: &Waker) -> Answer {
        let mut state = self.lock();
        let (answer, wakes) = state.schedule.ask(place, priority, Instant::now());
        match answer {
            Answer::Go => state.waiting.remove(&place),
            Answer::Wait(_) => state.waiting.insert(place, waker.clone()),
        };
        Self::wake(state, wakes);
        answer
    }

    fn yielded(&self, place: Place, bytes: usize) {
        self.change(|schedule, now| schedule.yielded(place, bytes as u64, now));
    }

    fn written(&self, bytes: usize) {
        self.change(|schedule, now| schedule.written(bytes as u64, now));
    }

    fn write_blocked(&self) {
        self.lock().schedule.write_blocked();
    }

    fn close(&self, place: Place) {
        let mut state = self.lock();
        state.waiting.remove(&place);
        let wakes = state.schedule.close(place, Instant::now());
        Self::wake(state, wakes);
    }

    fn change(&self, change: impl FnOnce(&mut Schedule, Instant) -> Option<Place>) {
        let mut state = self.lock();
        let wake = change(&mut state.schedule, Instant::now());
        Self::wake(state, wake.into_iter().collect());
    }

    /// Wakes the tasks of `places` after the lock is released, so that
    /// they can ask at once.
    fn wake(mut state: std::sync::MutexGuard<'_, Shared>, places: Wakes) {
        let wakers: Vec<Waker> = places
            .iter()
            .filter_map(|place| state.waiting.remove(place))
            .collect();
        drop(state);
        wakers.into_iter().for_each(Waker::wake);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        // A panic while holding the lock leaves a consistent schedule: each
        // change is a few assignments.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A response body that yields a piece at a time, each when its
/// connection's [`Scheduler`] gives it the turn; without turns, the body
/// as it is.
pub(crate) struct ScheduledBody<B> {
    body: B,
    turns: Option<Turns>,
}

/// A response's part in its connection's turns, from its request on.
pub(crate) struct Turns {
    scheduler: Arc<Scheduler>,
    place: Place,
    priority: Priority,
    /// What the body yielded beyond the pieces sent so far.
    rest: Bytes,
    /// Closed in the schedule: the body is complete.
    closed: bool,
    /// When to ask again though not woken; kept from one wait to the next.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<B> ScheduledBody<B> {
    /// `body`, yielding by `turns` if given.
    pub(crate) fn new(body: B, turns: Option<Turns>) -> Self {
        ScheduledBody { body, turns }
    }
}

impl Turns {
    fn close(&mut self) {
        if !self.closed {
            self.closed = true;
            self.scheduler.close(self.place);
        }
    }

    /// The next piece of `rest`, when the schedule says go.
    fn next_piece(&mut self, cx: &mut Context<'_>) -> Poll<Bytes> {
        if let Answer::Wait(deadline) = self.scheduler.ask(self.place, self.priority, cx.waker()) {
            match deadline {
                Some(deadline) => self.ask_again_at(deadline, cx),
                None => self.deadline = None,
            }
            return Poll::Pending;
        }
        let piece = self.rest.split_to(self.rest.len().min(PIECE));
        self.scheduler.yielded(self.place, piece.len());
        Poll::Ready(piece)
    }

    fn ask_again_at(&mut self, deadline: Instant, cx: &mut Context<'_>) {
        let sleep = self
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        sleep.as_mut().reset(deadline);
        if sleep.as_mut().poll(cx).is_ready() {
            cx.waker().wake_by_ref();
        }
    }
}

impl Drop for Turns {
    fn drop(&mut self) {
        self.close();
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for ScheduledBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.get_mut();
        let Some(turns) = &mut this.turns else {
            return Pin::new(&mut this.body).poll_frame(cx);
        };
        if turns.rest.is_empty() {
            let frame = std::task::ready!(Pin::new(&mut this.body).poll_frame(cx));
            match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) if !data.is_empty() => turns.rest = data,
                    Ok(empty) => return Poll::Ready(Some(Ok(Frame::data(empty)))),
                    Err(trailers) => return Poll::Ready(Some(Ok(trailers))),
                },
                ended => {
                    turns.close();
                    return Poll::Ready(ended);
                }
            }
        }
        let piece = std::task::ready!(turns.next_piece(cx));
        if turns.rest.is_empty() && this.body.is_end_stream() {
            turns.close();
        }
        Poll::Ready(Some(Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        let rest = self.turns.as_ref().map_or(0, |turns| turns.rest.len());
        rest == 0 && self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let rest = self
            .turns
            .as_ref()
            .map_or(0, |turns| turns.rest.len() as u64);
        let inner = self.body.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + rest);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

/// A connection's socket, telling its [`Scheduler`] what it writes and
/// when it is full; without a scheduler, the socket as it is.
pub(crate) struct WriteCount<S> {
    inner: S,
    scheduler: Option<Arc<Scheduler>>,
}

impl<S> WriteCount<S> {
    pub(crate) fn new(inner: S, scheduler: Option<Arc<Scheduler>>) -> Self {
        WriteCount { inner, scheduler }
    }

    fn count(&self, polled: &Poll<io::Result<usize>>) {
        let Some(scheduler) = &self.scheduler else {
            return;
        };
        match polled {
            Poll::Ready(Ok(written)) => scheduler.written(*written),
            Poll::Pending => scheduler.write_blocked(),
            Poll::Ready(Err(_)) => {}
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteCount<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteCount<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.count(&polled);
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.count(&polled);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URGENT: Priority = Priority {
        urgency: 0,
        incremental: false,
    };
    const BACKGROUND: Priority = Priority {
        urgency: 7,
        incremental: false,
    };
    const INCREMENTAL: Priority = Priority {
        urgency: 3,
        incremental: true,
    };

    /// A schedule and its clock, with `places` requests entered.
    fn schedule(places: u64) -> (Schedule, Instant) {
        let now = Instant::now();
        let mut schedule = Schedule::new(now);
        for _ in 0..places {
            schedule.place();
        }
        (schedule, now)
    }

    fn ask(schedule: &mut Schedule, place: Place, priority: Priority, now: Instant) -> bool {
        schedule.ask(place, priority, now).0 == Answer::Go
    }

    /// Asks, and yields a piece that the socket writes at once.
    fn send_piece(schedule: &mut Schedule, place: Place, priority: Priority, now: Instant) -> bool {
        let go = ask(schedule, place, priority, now);
        if go {
            schedule.yielded(place, PIECE as u64, now);
            schedule.written(PIECE as u64, now);
        }
        go
    }

    #[test]
    fn the_most_urgent_response_goes_first() {
        let (mut schedule, now) = schedule(2);
        assert!(send_piece(&mut schedule, 1, BACKGROUND, now), "alone");
        assert!(send_piece(&mut schedule, 2, URGENT, now), "more urgent");
        assert!(!ask(&mut schedule, 1, BACKGROUND, now));
        assert!(send_piece(&mut schedule, 2, URGENT, now));
    }

    #[test]
    fn non_incremental_responses_go_whole_in_stream_order() {
        let (mut schedule, now) = schedule(3);
        assert!(send_piece(&mut schedule, 3, BACKGROUND, now), "alone");
        assert!(send_piece(&mut schedule, 2, BACKGROUND, now), "earlier");
        assert!(send_piece(&mut schedule, 1, BACKGROUND, now), "first");
        for _ in 0..10 {
            assert!(!ask(&mut schedule, 3, BACKGROUND, now));
            assert!(!ask(&mut schedule, 2, BACKGROUND, now));
            assert!(send_piece(&mut schedule, 1, BACKGROUND, now));
        }
    }

    #[test]
    fn incremental_responses_of_one_urgency_take_turns() {
        let (mut schedule, now) = schedule(3);
        for place in [1, 2, 3] {
            schedule.ask(place, INCREMENTAL, now);
        }
        let mut order = Vec::new();
        for _ in 0..6 {
            let next = (1..=3).find(|place| send_piece(&mut schedule, *place, INCREMENTAL, now));
            order.extend(next);
        }
        assert_eq!(order, [1, 2, 3, 1, 2, 3]);
    }

    #[test]
    fn non_incremental_responses_go_before_incremental_ones_of_their_urgency() {
        let (mut schedule, now) = schedule(2);
        let ordered = Priority {
            incremental: false,
            ..INCREMENTAL
        };
        schedule.ask(1, INCREMENTAL, now);
        assert!(send_piece(&mut schedule, 2, ordered, now));
        assert!(!ask(&mut schedule, 1, INCREMENTAL, now));
    }

    #[test]
    fn a_finished_stream_hands_the_turn_to_the_next_waiting_one() {
        let (mut schedule, now) = schedule(3);
        assert!(send_piece(&mut schedule, 1, URGENT, now));
        assert!(!ask(&mut schedule, 3, BACKGROUND, now));
        assert!(!ask(&mut schedule, 2, BACKGROUND, now));
        assert_eq!(schedule.close(1, now), [2], "woken: next in stream order");
        assert!(send_piece(&mut schedule, 2, BACKGROUND, now));
        assert_eq!(schedule.close(2, now), [3]);
        assert!(schedule.close(3, now).is_empty(), "nobody left");
    }

    #[test]
    fn a_request_without_the_header_takes_turns_at_urgency_3() {
        let unspecified = Priority::of(&HeaderMap::new());
        assert_eq!(unspecified, INCREMENTAL);
        let (mut schedule, now) = schedule(3);
        let more_urgent = Priority {
            urgency: 2,
            incremental: false,
        };
        let less_urgent = Priority {
            urgency: 4,
            incremental: false,
        };
        schedule.ask(1, less_urgent, now);
        schedule.ask(2, unspecified, now);
        assert!(send_piece(&mut schedule, 3, more_urgent, now));
        schedule.close(3, now);
        assert!(!ask(&mut schedule, 1, less_urgent, now));
        assert!(send_piece(&mut schedule, 2, unspecified, now));
    }

    #[test]
    fn the_orders_choose_a_priority_or_none() {
        let mut headers = HeaderMap::new();
        headers.insert("priority", "u=1".parse().unwrap());
        let of = |order| priority(order, &headers);
        assert_eq!(of(StreamOrder::Priority).map(|p| p.urgency), Some(1));
        assert_eq!(of(StreamOrder::InOrder), Some(IN_ORDER));
        assert_eq!(of(StreamOrder::Fair), None);
    }

    #[test]
    fn the_budget_bounds_what_is_yielded_ahead_of_the_socket() {
        let (mut schedule, now) = schedule(1);
        let pieces = BUDGET / PIECE as u64;
        for _ in 0..pieces {
            assert!(ask(&mut schedule, 1, URGENT, now));
            schedule.yielded(1, PIECE as u64, now);
        }
        assert!(!ask(&mut schedule, 1, URGENT, now), "the budget is spent");
        assert_eq!(schedule.written(PIECE as u64, now), Some(1), "woken");
        assert!(ask(&mut schedule, 1, URGENT, now));
    }

    #[test]
    fn a_holder_that_does_not_ask_is_passed_over_until_it_asks_again() {
        let (mut schedule, now) = schedule(2);
        assert!(send_piece(&mut schedule, 1, URGENT, now));
        // 1 asks no more: its client left it no window.
        let (answer, _) = schedule.ask(2, BACKGROUND, now);
        assert_eq!(answer, Answer::Wait(Some(now + PATIENCE)));
        let soon = now + PATIENCE / 2;
        assert!(!ask(&mut schedule, 2, BACKGROUND, soon));
        let later = now + PATIENCE;
        assert!(
            send_piece(&mut schedule, 2, BACKGROUND, later),
            "passed over"
        );
        assert!(send_piece(&mut schedule, 2, BACKGROUND, later));
        assert!(send_piece(&mut schedule, 1, URGENT, later), "back at once");
        assert!(!ask(&mut schedule, 2, BACKGROUND, later));
    }

    /// A schedule whose stream 1 has yielded the budget and ended, none
    /// of it written, and whose stream 2 waits; at `now`.
    fn spent_budget() -> (Schedule, Instant) {
        let (mut schedule, now) = schedule(2);
        while ask(&mut schedule, 1, BACKGROUND, now) {
            schedule.yielded(1, PIECE as u64, now);
        }
        schedule.close(1, now);
        let (answer, _) = schedule.ask(2, BACKGROUND, now);
        assert_eq!(answer, Answer::Wait(Some(now + PATIENCE)));
        (schedule, now)
    }

    #[test]
    fn bytes_left_unwritten_while_the_socket_takes_writes_are_written_off() {
        let (mut schedule, now) = spent_budget();
        assert!(!ask(&mut schedule, 2, BACKGROUND, now + PATIENCE / 2));
        assert!(ask(&mut schedule, 2, BACKGROUND, now + PATIENCE));
    }

    #[test]
    fn bytes_waiting_for_a_full_socket_still_count() {
        let (mut schedule, now) = spent_budget();
        schedule.write_blocked();
        assert!(!ask(&mut schedule, 2, BACKGROUND, now + 10 * PATIENCE));
    }

    #[test]
    fn one_waiting_stream_watches_the_holder_and_hands_the_watch_on() {
        let (mut schedule, now) = schedule(4);
        assert!(send_piece(&mut schedule, 1, URGENT, now));
        let answers: Vec<Answer> = (2..=4)
            .map(|place| schedule.ask(place, BACKGROUND, now).0)
            .collect();
        let deadline = Some(now + PATIENCE);
        assert_eq!(
            answers,
            [
                Answer::Wait(deadline),
                Answer::Wait(None),
                Answer::Wait(None)
            ]
        );
        // 1 is silent: the watcher, 2, finds it passed over and has the
        // turn, so 3 is woken to watch 2 in its place.
        let later = now + PATIENCE;
        assert_eq!(schedule.ask(2, BACKGROUND, later), (Answer::Go, vec![3]));
        let (answer, _) = schedule.ask(3, BACKGROUND, later);
        assert_eq!(answer, Answer::Wait(Some(later + PATIENCE)));
        assert_eq!(schedule.ask(4, BACKGROUND, later).0, Answer::Wait(None));
        assert_eq!(schedule.close(3, later), [4], "the watcher left");
    }
}
