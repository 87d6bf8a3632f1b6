//! CPU time of the calling thread, so the load generator can report what
//! its own workers cost (not the in-process server of a test).

use std::time::Duration;

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CpuTime {
    pub user: Duration,
    pub sys: Duration,
}

impl CpuTime {
    /// User and system time this thread has used so far.
    pub fn of_this_thread() -> CpuTime {
        // SAFETY: getrusage only writes into the zeroed struct we pass.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_THREAD, &mut usage);
            usage
        };
        let to_duration = |tv: libc::timeval| {
            Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64)
        };
        CpuTime {
            user: to_duration(usage.ru_utime),
            sys: to_duration(usage.ru_stime),
        }
    }

    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            sys: self.sys.saturating_sub(earlier.sys),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_on_this_thread_shows_up() {
        let before = CpuTime::of_this_thread();
        let mut x = 1u64;
        for i in 0..50_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        let used = CpuTime::of_this_thread().since(before);
        assert!(used.user + used.sys > Duration::ZERO, "{used:?}");
    }
}
