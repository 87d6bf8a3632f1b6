//! Child processes of a cell (server and client): waited for with a
//! deadline, stopped with SIGTERM then SIGKILL, and reaped with `wait4` so
//! the CPU time each used is known.

use std::io::{BufRead, BufReader};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

const POLL: Duration = Duration::from_millis(5);

/// How a child ended.
#[derive(Debug, Clone, Copy)]
pub struct Exit {
    /// Exit code, or 128 + signal number when a signal ended it.
    pub code: i32,
    /// User + system CPU seconds the child used.
    pub cpu_s: f64,
}

/// A child that is always reaped: dropping it kills and reaps it.
pub struct Supervised {
    child: Child,
    exit: Option<Exit>,
    /// Drains a piped stderr while the child runs (a full pipe would block
    /// it) and yields the last line.
    stderr_tail: Option<JoinHandle<Option<String>>>,
}

impl Supervised {
    pub fn new(mut child: Child) -> Supervised {
        let stderr_tail = child.stderr.take().map(|stderr| {
            std::thread::spawn(move || {
                BufReader::new(stderr)
                    .lines()
                    .map_while(Result::ok)
                    .filter(|line| !line.trim().is_empty())
                    .last()
            })
        });
        Supervised {
            child,
            exit: None,
            stderr_tail,
        }
    }

    /// How the child ended, if it has.
    pub fn poll(&mut self) -> Option<Exit> {
        self.try_reap(false)
    }

    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Waits until the child exits, `deadline` passes (`None`), or `stop` is
    /// set, in which case the child gets SIGINT (it then writes partial
    /// results) and is waited for as usual.
    pub fn wait_until(&mut self, deadline: Instant, stop: &AtomicBool) -> Option<Exit> {
        let mut interrupted = false;
        loop {
            if let Some(exit) = self.try_reap(false) {
                return Some(exit);
            }
            if stop.load(Ordering::Relaxed) && !interrupted {
                self.signal(Signal::SIGINT);
                interrupted = true;
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(POLL);
        }
    }

    /// SIGTERM, then SIGKILL after `grace`; returns how it ended.
    pub fn stop(&mut self, grace: Duration) -> Exit {
        if let Some(exit) = self.try_reap(false) {
            return exit;
        }
        self.signal(Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(exit) = self.try_reap(false) {
                return exit;
            }
            std::thread::sleep(POLL);
        }
        self.signal(Signal::SIGKILL);
        self.try_reap(true).unwrap_or(Exit {
            code: 137,
            cpu_s: 0.0,
        })
    }

    /// The last line the child wrote to its piped stderr, as `: line`
    /// (empty when there is none), to append to an error message. Call it
    /// once the child has ended: it waits for the pipe to close.
    pub fn last_stderr_line(&mut self) -> String {
        let line = self
            .stderr_tail
            .take()
            .and_then(|tail| tail.join().ok().flatten());
        line.map(|line| format!(": {}", line.trim()))
            .unwrap_or_default()
    }

    /// Signals the child's process group: children are spawned as group
    /// leaders, so whatever a `sh -c` started is reached too.
    fn signal(&self, signal: Signal) {
        // The group may be gone already; then there is nothing to do.
        let _ = killpg(Pid::from_raw(self.child.id() as i32), signal);
    }

    fn try_reap(&mut self, block: bool) -> Option<Exit> {
        if self.exit.is_some() {
            return self.exit;
        }
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let flags = if block { 0 } else { libc::WNOHANG };
        // SAFETY: plain wait4(2) on our own child with valid out-pointers.
        let pid = unsafe { libc::wait4(self.child.id() as i32, &mut status, flags, &mut usage) };
        if pid <= 0 {
            return None;
        }
        let code = if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            128 + libc::WTERMSIG(status)
        };
        self.exit = Some(Exit {
            code,
            cpu_s: seconds(usage.ru_utime) + seconds(usage.ru_stime),
        });
        self.exit
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        if self.exit.is_none() {
            self.signal(Signal::SIGKILL);
            self.try_reap(true);
        }
    }
}

fn seconds(time: libc::timeval) -> f64 {
    time.tv_sec as f64 + time.tv_usec as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    #[test]
    fn exit_code_and_cpu_are_reported() {
        let child = Command::new("sh")
            .process_group(0)
            .args([
                "-c",
                "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 3",
            ])
            .spawn()
            .unwrap();
        let exit = Supervised::new(child)
            .wait_until(
                Instant::now() + Duration::from_secs(30),
                &AtomicBool::new(false),
            )
            .unwrap();
        assert_eq!(exit.code, 3);
        assert!(exit.cpu_s > 0.0, "a busy loop used no CPU? {exit:?}");
    }

    #[test]
    fn a_chatty_child_is_not_blocked_by_its_stderr_pipe() {
        // 1 MB on stderr: far more than a pipe holds unread.
        let child = Command::new("sh")
            .process_group(0)
            .args([
                "-c",
                "head -c 1000000 /dev/zero | tr '\\0' 'x' >&2; echo >&2; echo last words >&2",
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut supervised = Supervised::new(child);
        let exit = supervised.wait_until(
            Instant::now() + Duration::from_secs(30),
            &AtomicBool::new(false),
        );
        assert_eq!(
            exit.map(|e| e.code),
            Some(0),
            "the child finished instead of blocking"
        );
        assert_eq!(supervised.last_stderr_line(), ": last words");
    }

    #[test]
    fn deadline_passes_and_stop_kills_a_stubborn_child() {
        let child = Command::new("sh")
            .process_group(0)
            .args(["-c", "trap '' TERM; exec sleep 30"])
            .spawn()
            .unwrap();
        let mut supervised = Supervised::new(child);
        assert!(supervised
            .wait_until(
                Instant::now() + Duration::from_millis(50),
                &AtomicBool::new(false)
            )
            .is_none());
        let exit = supervised.stop(Duration::from_millis(100));
        assert_eq!(exit.code, 128 + libc::SIGKILL);
    }
}
