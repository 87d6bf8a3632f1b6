//! The worker's one precise timer: a timerfd in its epoll. epoll's own
//! timeout has millisecond steps, which an open-model send would carry as
//! lag; a timerfd is a kernel hrtimer and wakes the loop at the due time.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

pub(crate) struct Timer {
    fd: OwnedFd,
    /// The time it is set for, until it fires.
    armed: Option<Instant>,
}

impl Timer {
    pub(crate) fn new() -> io::Result<Timer> {
        Ok(Timer {
            fd: crate::pacer::timerfd()?,
            armed: None,
        })
    }

    pub(crate) fn register(&self, registry: &Registry, token: Token) -> io::Result<()> {
        registry.register(
            &mut SourceFd(&self.fd.as_raw_fd()),
            token,
            Interest::READABLE,
        )
    }

    /// Sets it for `at`, unless it is set for earlier already (waking
    /// early costs a turn; re-arming on every turn would cost a syscall).
    pub(crate) fn arm(&mut self, at: Instant) -> io::Result<()> {
        if self
            .armed
            .is_some_and(|armed| armed <= at && armed > Instant::now())
        {
            return Ok(());
        }
        crate::pacer::set_timerfd(&self.fd, at)?;
        self.armed = Some(at);
        Ok(())
    }

    /// It went off: the next `arm` sets it anew.
    pub(crate) fn fired(&mut self) {
        // A failed read leaves it readable: the next turn comes at once.
        let _ = crate::pacer::read_expirations(&self.fd);
        self.armed = None;
    }
}
