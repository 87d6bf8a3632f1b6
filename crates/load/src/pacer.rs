//! Sending on time, to the microsecond. tokio's timer fires on millisecond
//! ticks, so an open-model send due at `t` left at `t` + 0..2 ms (1.2 ms
//! late at the median), and the open model, which measures from `t`,
//! charged that lag to the server. A timerfd is a kernel hrtimer: it wakes
//! the worker's epoll at the due time itself.
//!
//! Sends due later than [`COARSE_MARGIN`] first wait on tokio's timer wheel,
//! which is cheap for many waiters; only the last stretch waits on the
//! worker's one timerfd, so few waiters share it.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// Longer than tokio's timer can overshoot (a 1 ms tick plus epoll's
/// millisecond timeout), so the coarse wait always ends before the due time.
const COARSE_MARGIN: Duration = Duration::from_millis(3);

/// How long before a due time the timerfd wakes the worker, which then
/// yields until the due time: a sixteenth of the time between its sends,
/// within these bounds. Waking an idle thread takes this VM's kernel tens of
/// microseconds, and a thread that slept runs its first request slower
/// (caches, CPU idle states); a yield loop is awake within a microsecond
/// and warms the path. It costs the CPU it waits with, hence the sixteenth.
const MIN_SPIN: Duration = Duration::from_micros(2);
const MAX_SPIN: Duration = Duration::from_micros(60);

/// How early to wake for sends `interval` apart (see [`MIN_SPIN`]); the
/// HTTP/3 event loop wakes as early for the same reason.
pub(crate) fn spin_for(interval: Duration) -> Duration {
    (interval / 16).clamp(MIN_SPIN, MAX_SPIN)
}

/// A worker's precise timer. Several request loops may wait on it at once:
/// it is armed for the earliest of their due times, and each woken loop
/// re-arms it for its own if that is still ahead.
pub(crate) struct Pacer {
    timer: AsyncFd<OwnedFd>,
    /// The due time the timerfd is set for, if it has not fired since.
    armed: Cell<Option<Instant>>,
    /// How early to wake before a due time.
    spin: Duration,
}

impl Pacer {
    /// A timerfd on the monotonic clock (the one `Instant` reads), for the
    /// current thread's tokio runtime, for sends `interval` apart.
    pub(crate) fn new(interval: Duration) -> io::Result<Pacer> {
        let fd = timerfd()?;
        // SAFETY: an OwnedFd keeps its descriptor open and unchanged until
        // the AsyncFd that owns it is dropped.
        let timer = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
            .map_err(io::Error::from)?;
        Ok(Pacer {
            timer,
            armed: Cell::new(None),
            spin: spin_for(interval),
        })
    }

    /// Returns at `due`, within the kernel's wake-up latency.
    pub(crate) async fn sleep_until(&self, due: Instant) {
        if let Some(coarse) = due.checked_sub(COARSE_MARGIN) {
            if coarse > Instant::now() {
                tokio::time::sleep_until(coarse.into()).await;
            }
        }
        let wake = due.checked_sub(self.spin).unwrap_or(due);
        loop {
            let now = Instant::now();
            if now >= wake {
                break;
            }
            if self.arm(wake, now).is_err() {
                return tokio::time::sleep_until(due.into()).await;
            }
            let Ok(mut ready) = self.timer.readable().await else {
                return tokio::time::sleep_until(due.into()).await;
            };
            // The first loop to read the expiration disarms the timer; for
            // the others the read would block, which clears the readiness.
            match ready.try_io(|timer| read_expirations(timer.get_ref())) {
                Ok(Ok(())) => self.armed.set(None),
                Ok(Err(_)) => return tokio::time::sleep_until(due.into()).await,
                Err(_would_block) => {}
            }
        }
        while Instant::now() < due {
            tokio::task::yield_now().await;
        }
    }

    /// Sets the timer for `due` unless it already fires between now and then.
    fn arm(&self, due: Instant, now: Instant) -> io::Result<()> {
        if self.armed.get().is_some_and(|at| at > now && at <= due) {
            return Ok(());
        }
        set_timerfd(self.timer.get_ref(), due)?;
        self.armed.set(Some(due));
        Ok(())
    }
}

/// Timer slack of 1 ns for this thread: the kernel otherwise lets a wait
/// end up to 50 µs late, which an open-model send would carry as lag.
pub(crate) fn precise_timers() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only
    // this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// A non-blocking timerfd on the monotonic clock (the one `Instant` reads).
pub(crate) fn timerfd() -> io::Result<OwnedFd> {
    // SAFETY: plain timerfd_create(2); the result is checked.
    let fd = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sets `timer` to fire once at `due` (at once if it is past).
pub(crate) fn set_timerfd(timer: &OwnedFd, due: Instant) -> io::Result<()> {
    let wait = due.saturating_duration_since(Instant::now());
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: wait.as_secs() as libc::time_t,
            // A zero it_value would disarm the timer instead of firing.
            tv_nsec: i64::from(wait.subsec_nanos().max(1)) as libc::c_long,
        },
    };
    // SAFETY: a valid timerfd and a fully initialised itimerspec.
    let set = unsafe { libc::timerfd_settime(timer.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
    if set < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads (and so resets) the timer's expiration count.
pub(crate) fn read_expirations(timer: &OwnedFd) -> io::Result<()> {
    let mut count = [0u8; 8];
    // SAFETY: reads at most 8 bytes into an 8-byte buffer.
    let read = unsafe { libc::read(timer.as_raw_fd(), count.as_mut_ptr().cast(), count.len()) };
    if read < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn it_never_returns_early() {
        runtime().block_on(async {
            let pacer = Pacer::new(Duration::from_millis(1)).unwrap();
            for wait_us in [0, 50, 700, 2_500, 4_000] {
                let due = Instant::now() + Duration::from_micros(wait_us);
                pacer.sleep_until(due).await;
                assert!(
                    Instant::now() >= due,
                    "returned before a {wait_us} µs due time"
                );
            }
        });
    }

    #[test]
    fn loops_waiting_together_each_wake_at_or_after_their_own_time() {
        runtime().block_on(async {
            let pacer = Pacer::new(Duration::from_millis(1)).unwrap();
            let start = Instant::now();
            // Out of order, and closer together than tokio's 1 ms tick.
            let offsets_us = [900u64, 300, 600, 3_500, 100, 5_000];
            let waits = offsets_us.map(|us| {
                let due = start + Duration::from_micros(us);
                let pacer = &pacer;
                async move {
                    pacer.sleep_until(due).await;
                    (due, Instant::now())
                }
            });
            for (due, woke) in futures::future::join_all(waits).await {
                assert!(woke >= due, "woke {:?} early", due - woke);
            }
        });
    }
}
