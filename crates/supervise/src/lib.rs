//! The one process supervisor of h3lab: every child it starts (servers,
//! clients, the program `h3lab net run` runs) is waited for with a
//! deadline, asked to stop and then killed, always reaped with `wait4` so
//! the CPU time it used is known, and killed when its handle is dropped.
//!
//! It is not a job scheduler or a sandbox: it starts what it is given, where
//! its caller put it (an emulated path's namespace is the caller's doing),
//! and knows nothing of h3lab's protocols.

#![warn(missing_docs)]

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

const POLL: Duration = Duration::from_millis(5);
/// How long the group has to vanish after SIGKILL.
const KILL_PATIENCE: Duration = Duration::from_secs(1);
/// How long an ended child's stderr may stay open for its last line: a
/// process it started and detached (a daemonising server) may hold the
/// pipe for ever.
const STDERR_PATIENCE: Duration = Duration::from_secs(1);

/// Which process group a child joins, which decides how it is signalled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Its own group: a terminal's Ctrl-C reaches only h3lab, which then
    /// stops children in order; signals reach everything the child started
    /// (what a `sh -c` runs). Asked to stop with SIGINT, so it can write
    /// what it gathered.
    Own,
    /// The terminal's group, for a program the user runs interactively:
    /// it keeps its terminal and sees the terminal's Ctrl-C itself. Asked
    /// to stop with SIGTERM.
    Terminal,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exit {
    /// Exit code, or 128 + signal number when a signal ended it.
    pub code: i32,
    /// User + system CPU seconds the child used.
    pub cpu_s: f64,
}

impl Exit {
    /// The code as a shell reports it, for this process's own exit.
    pub fn shell_code(self) -> u8 {
        u8::try_from(self.code).unwrap_or(1)
    }
}

/// A child that is always reaped: dropping it kills and reaps it.
pub struct Supervised {
    child: Child,
    group: Group,
    exit: Option<Exit>,
    /// Drains a piped stderr while the child runs (a full pipe would block
    /// it).
    stderr_tail: Option<StderrTail>,
}

impl Supervised {
    /// Starts `command` in `group`; `what` names it in the error.
    pub fn spawn(mut command: Command, group: Group, what: &str) -> anyhow::Result<Supervised> {
        if group == Group::Own {
            command.process_group(0);
            // A child of its own group is asked to stop with SIGINT, which
            // it must hear: h3lab started as a background job of a script
            // (no job control) ignores SIGINT, and its children would
            // inherit that and be killed only after the grace.
            // SAFETY: signal(2) is async-signal-safe, and this runs in the
            // child between fork and exec.
            unsafe {
                command.pre_exec(|| {
                    libc::signal(libc::SIGINT, libc::SIG_DFL);
                    Ok(())
                });
            }
        }
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start the {what}"))?;
        let stderr_tail = child.stderr.take().map(StderrTail::drain);
        Ok(Supervised {
            child,
            group,
            exit: None,
            stderr_tail,
        })
    }

    /// The child's process id (a `sh -c` command's shell).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// How the child ended, if it has.
    pub fn poll(&mut self) -> Option<Exit> {
        self.try_reap(false)
    }

    /// CPU seconds used so far by the live processes of the child's own
    /// process group (what a `sh -c` started included; processes that
    /// already exited are not counted). `None` for a child in the
    /// terminal's group, or when /proc cannot be read.
    pub fn group_cpu_s(&self) -> Option<f64> {
        // SAFETY: sysconf(3) has no preconditions.
        let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let ticks: u64 = (self.group_processes()?.iter())
            .filter_map(|(_, stat)| cpu_ticks(stat))
            .sum();
        Some(ticks as f64 / ticks_per_s)
    }

    /// Resident memory of the live processes of the child's own process
    /// group now, in bytes (nginx's master and workers, a `sh -c` and
    /// what it started). `None` for a child in the terminal's group, or
    /// when /proc cannot be read.
    pub fn group_rss_bytes(&self) -> Option<u64> {
        let pages: u64 = (self.group_processes()?.iter())
            .filter_map(|(dir, _)| {
                resident_pages(&std::fs::read_to_string(dir.join("statm")).ok()?)
            })
            .sum();
        Some(pages * page_bytes())
    }

    /// The `/proc/PID` directory and `stat` line of every live process in
    /// the child's own process group; `None` for a child in the terminal's
    /// group, or when /proc cannot be read.
    fn group_processes(&self) -> Option<Vec<(std::path::PathBuf, String)>> {
        if self.group != Group::Own {
            return None;
        }
        let group = self.child.id().to_string();
        let processes = std::fs::read_dir("/proc").ok()?.filter_map(|entry| {
            let dir = entry.ok()?.path();
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            in_group(&stat, &group).then_some((dir, stat))
        });
        Some(processes.collect())
    }

    /// The child's piped stdout, for the caller to read.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// Waits until the child exits, or `deadline` passes (`None`). Once
    /// `stop` is set the child is asked to stop (see [`Group`]), and killed
    /// if it still runs `grace` later.
    pub fn wait_until(
        &mut self,
        deadline: Option<Instant>,
        stop: &AtomicBool,
        grace: Duration,
    ) -> Option<Exit> {
        let mut asked: Option<Instant> = None;
        loop {
            if let Some(exit) = self.try_reap(false) {
                return Some(exit);
            }
            match asked {
                None if stop.load(Ordering::Relaxed) => {
                    self.signal(match self.group {
                        Group::Own => Signal::SIGINT,
                        Group::Terminal => Signal::SIGTERM,
                    });
                    asked = Some(Instant::now());
                }
                Some(at) if at.elapsed() >= grace => self.signal(Signal::SIGKILL),
                _ => {}
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return None;
            }
            std::thread::sleep(POLL);
        }
    }

    /// SIGTERM, then SIGKILL after `grace`; returns how the child ended.
    /// For a child of its own group, the rest of the group goes too: a
    /// `sh -c` command's server can outlive the shell that started it, and
    /// would then still hold the port the next start needs.
    pub fn stop(&mut self, grace: Duration) -> Exit {
        let deadline = Instant::now() + grace;
        let mut exit = self.try_reap(false);
        if exit.is_none() || self.group_lives() {
            self.signal(Signal::SIGTERM);
        }
        while Instant::now() < deadline && (exit.is_none() || self.group_lives()) {
            std::thread::sleep(POLL);
            exit = exit.or_else(|| self.try_reap(false));
        }
        if exit.is_none() || self.group_lives() {
            self.signal(Signal::SIGKILL);
            let killed = Instant::now() + KILL_PATIENCE;
            while self.group_lives() && Instant::now() < killed {
                std::thread::sleep(POLL);
            }
        }
        exit.or_else(|| self.try_reap(true)).unwrap_or(Exit {
            code: 137,
            cpu_s: 0.0,
        })
    }

    /// Whether a process of the child's own group, other than a zombie
    /// waiting to be reaped, is still running. Always false for a child in
    /// the terminal's group, which is not h3lab's to end.
    fn group_lives(&self) -> bool {
        if self.group != Group::Own {
            return false;
        }
        let group = self.child.id().to_string();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return false;
        };
        entries
            .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path().join("stat")).ok())
            .any(|stat| running_in_group(&stat, &group))
    }

    /// The last line the child wrote to its piped stderr, as `: line`
    /// (empty when there is none), to append to an error message. Call it
    /// once the child has ended: it waits for the pipe to close, at most
    /// [`STDERR_PATIENCE`], since a process the child detached may hold it.
    pub fn last_stderr_line(&mut self) -> String {
        let line = self.stderr_tail.take().and_then(StderrTail::last_line);
        line.map(|line| format!(": {}", line.trim()))
            .unwrap_or_default()
    }

    /// Signals the child's group when it leads one, else the child.
    fn signal(&self, signal: Signal) {
        let pid = Pid::from_raw(self.child.id() as i32);
        // The child may be gone already; then there is nothing to do.
        let _ = match self.group {
            Group::Own => killpg(pid, signal),
            Group::Terminal => kill(pid, signal),
        };
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

/// The last non-empty line read so far from a child's stderr, and word of
/// the pipe's end.
struct StderrTail {
    last: Arc<Mutex<Option<String>>>,
    closed: Receiver<()>,
}

impl StderrTail {
    fn drain(stderr: std::process::ChildStderr) -> StderrTail {
        let last = Arc::new(Mutex::new(None));
        let (send, closed) = mpsc::sync_channel(1);
        let shared = Arc::clone(&last);
        std::thread::spawn(move || {
            let lines = BufReader::new(stderr).lines().map_while(Result::ok);
            for line in lines.filter(|line| !line.trim().is_empty()) {
                *shared.lock().unwrap_or_else(|e| e.into_inner()) = Some(line);
            }
            let _ = send.send(());
        });
        StderrTail { last, closed }
    }

    /// The last line once the pipe has closed, or the last one so far
    /// after [`STDERR_PATIENCE`].
    fn last_line(self) -> Option<String> {
        let _ = self.closed.recv_timeout(STDERR_PATIENCE);
        self.last.lock().unwrap_or_else(|e| e.into_inner()).take()
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

/// Whether a /proc/PID/stat line is of a process of `group` that has not
/// exited (state Z, zombie, or X, dead).
fn running_in_group(stat: &str, group: &str) -> bool {
    let Some((_, fields)) = stat.rsplit_once(')') else {
        return false;
    };
    let fields: Vec<&str> = fields.split_whitespace().collect();
    fields.get(2) == Some(&group) && !matches!(fields.first(), Some(&"Z" | &"X"))
}

/// User + system clock ticks of a /proc/PID/stat line if its process group
/// is `group`. The fields after the command name (which may hold spaces
/// and parentheses) are: state, ppid, pgrp, ..., utime (12th), stime.
/// User and system CPU ticks of a `/proc/PID/stat` line.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// Whether a `/proc/PID/stat` line is of a process in process group
/// `group` (its fifth field; the name before it may hold spaces).
fn in_group(stat: &str, group: &str) -> bool {
    let fields = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().nth(2));
    fields.flatten() == Some(group)
}

/// The resident pages of a `/proc/PID/statm` line (its second field).
fn resident_pages(statm: &str) -> Option<u64> {
    statm.split_whitespace().nth(1)?.parse().ok()
}

/// The first of `names` that is an executable file in a directory of
/// `PATH` (each name in `PATH`'s order before the next name), as a shell
/// would run it.
pub fn on_path(names: &[&str]) -> Option<PathBuf> {
    let dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    (names.iter())
        .flat_map(|name| dirs.iter().map(move |dir| dir.join(name)))
        .find(|candidate| is_executable(candidate))
}

/// The program the environment variable `env_var` names, when it is set:
/// an executable file, or why it is not one.
pub fn named_by_env(env_var: &str) -> Option<Result<PathBuf, String>> {
    let path = PathBuf::from(std::env::var_os(env_var)?);
    Some(match is_executable(&path) {
        true => Ok(path),
        false => Err(format!(
            "{env_var} is {}, which is no executable file",
            path.display()
        )),
    })
}

/// Whether `path` is a file its owner, group or others may run.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// The bytes of a memory page, the unit of /proc's memory figures
/// (`statm`, `sockstat`).
pub fn page_bytes() -> u64 {
    // SAFETY: sysconf(3) has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOON: Duration = Duration::from_secs(30);

    fn sh(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        command
    }

    fn in_time() -> Option<Instant> {
        Some(Instant::now() + SOON)
    }

    #[test]
    fn exit_code_and_cpu_are_reported() {
        let script = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 3";
        let mut child = Supervised::spawn(sh(script), Group::Own, "loop").unwrap();
        let exit = child
            .wait_until(in_time(), &AtomicBool::new(false), SOON)
            .unwrap();
        assert_eq!(exit.code, 3);
        assert!(exit.cpu_s > 0.0, "a busy loop used no CPU? {exit:?}");
    }

    #[test]
    fn group_cpu_counts_a_busy_grandchild_while_it_lives() {
        // The subshell loops, then sleeps: its CPU is the group's, not the
        // parent shell's (which only waits).
        let script = "(i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; sleep 20) & wait";
        let mut child = Supervised::spawn(sh(script), Group::Own, "loop").unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut used = 0.0;
        while used < 0.05 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            used = child.group_cpu_s().unwrap();
        }
        child.stop(SOON);
        assert!(used >= 0.05, "the group used {used} s");
    }

    #[test]
    fn group_memory_counts_a_grandchild_that_holds_memory() {
        // The shell keeps 64 MiB in a variable in a subshell; the group's
        // resident memory is at least that while it sleeps.
        let script = "(x=$(head -c 67108864 /dev/zero | tr '\\0' a); sleep 20) & wait";
        let mut child = Supervised::spawn(sh(script), Group::Own, "holder").unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut rss = 0;
        while rss < 64 << 20 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            rss = child.group_rss_bytes().unwrap();
        }
        child.stop(SOON);
        assert!(rss >= 64 << 20, "the group holds {rss} B");
        assert_eq!(resident_pages("2900 812 700 1 0 200 0"), Some(812));
    }

    #[test]
    fn stat_lines_of_other_groups_are_not_counted() {
        let stat = "42 (a (b) c) S 1 7 7 0 -1 4194304 100 0 0 0 30 12 0 0 20 0 1 0";
        assert!(in_group(stat, "7"));
        assert!(!in_group(stat, "8"));
        assert_eq!(cpu_ticks(stat), Some(42));
    }

    #[test]
    fn a_chatty_child_is_not_blocked_by_its_stderr_pipe() {
        // 1 MB on stderr: far more than a pipe holds unread.
        let mut command =
            sh("head -c 1000000 /dev/zero | tr '\\0' 'x' >&2; echo >&2; echo last words >&2");
        command.stderr(std::process::Stdio::piped());
        let mut child = Supervised::spawn(command, Group::Own, "chatty").unwrap();
        let exit = child.wait_until(in_time(), &AtomicBool::new(false), SOON);
        assert_eq!(
            exit.map(|e| e.code),
            Some(0),
            "the child finished instead of blocking"
        );
        assert_eq!(child.last_stderr_line(), ": last words");
    }

    #[test]
    fn a_detached_process_holding_stderr_does_not_hold_up_the_last_line() {
        // As a daemonising server does: the shell exits at once, and what
        // it started leaves the group and keeps the stderr pipe open.
        let mut command = sh("setsid sleep 60 > /dev/null & echo $!; echo started >&2");
        command.stdout(std::process::Stdio::piped());
        command.stderr(std::process::Stdio::piped());
        let mut child = Supervised::spawn(command, Group::Own, "daemon").unwrap();
        let mut daemon = String::new();
        std::io::Read::read_to_string(&mut child.take_stdout().unwrap(), &mut daemon).unwrap();
        let exit = child.wait_until(in_time(), &AtomicBool::new(false), SOON);
        assert_eq!(exit.map(|e| e.code), Some(0));
        let asked = Instant::now();
        assert_eq!(child.last_stderr_line(), ": started");
        // The daemon holds the pipe for 60 s.
        assert!(
            asked.elapsed() < Duration::from_secs(10),
            "waited {:?}",
            asked.elapsed()
        );
        kill(
            Pid::from_raw(daemon.trim().parse().unwrap()),
            Signal::SIGKILL,
        )
        .unwrap();
    }

    #[test]
    fn stop_returns_once_the_whole_group_is_gone_not_only_the_shell() {
        // The outer shell dies on SIGTERM at once; the inner one, as a
        // server closing its connections would, takes half a second.
        let script = "sh -c 'trap \"sleep 0.5; exit 0\" TERM; while :; do sleep 0.05; done'; true";
        let mut child = Supervised::spawn(sh(script), Group::Own, "nested").unwrap();
        let group = child.id().to_string();
        std::thread::sleep(Duration::from_millis(200));
        assert!(child.group_lives());
        child.stop(Duration::from_secs(5));
        assert!(
            !child.group_lives(),
            "a process of group {group} outlived stop"
        );
    }

    #[test]
    fn zombies_and_other_groups_do_not_count_as_running() {
        let running = "42 (a (b) c) S 1 7 7 0 -1";
        assert!(running_in_group(running, "7"));
        assert!(!running_in_group(running, "8"));
        assert!(!running_in_group("42 (a) Z 1 7 7 0 -1", "7"));
    }

    #[test]
    fn deadline_passes_and_stop_kills_a_stubborn_child() {
        let command = sh("trap '' TERM; exec sleep 30");
        let mut child = Supervised::spawn(command, Group::Own, "stubborn").unwrap();
        let soon = Some(Instant::now() + Duration::from_millis(50));
        assert!(child
            .wait_until(soon, &AtomicBool::new(false), SOON)
            .is_none());
        let exit = child.stop(Duration::from_millis(100));
        assert_eq!(exit.code, 128 + libc::SIGKILL);
    }

    #[test]
    fn a_stopped_child_of_its_own_group_is_asked_with_sigint() {
        let mut child = Supervised::spawn(sh("exec sleep 30"), Group::Own, "sleeper").unwrap();
        let exit = child
            .wait_until(None, &AtomicBool::new(true), SOON)
            .unwrap();
        assert_eq!(exit.code, 128 + libc::SIGINT);
    }

    #[test]
    fn a_child_of_its_own_group_hears_sigint_even_when_h3lab_ignores_it() {
        let mut command = sh("exec sleep 30");
        // As when h3lab is a background job of a script without job
        // control: SIGINT ignored, and inherited across fork and exec.
        // SAFETY: signal(2) is async-signal-safe; this runs in the child.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                Ok(())
            });
        }
        let mut child = Supervised::spawn(command, Group::Own, "sleeper").unwrap();
        let exit = child
            .wait_until(None, &AtomicBool::new(true), SOON)
            .unwrap();
        assert_eq!(exit.code, 128 + libc::SIGINT);
    }

    #[test]
    fn a_terminal_child_is_asked_with_sigterm_then_killed_after_the_grace() {
        let ready = std::env::temp_dir().join(format!("linkem-deaf-{}", std::process::id()));
        let _ = std::fs::remove_file(&ready);
        let script = format!("trap '' TERM INT; touch {}; exec sleep 30", ready.display());
        let mut child = Supervised::spawn(sh(&script), Group::Terminal, "deaf").unwrap();
        // Signals sent before the traps are set would end it too early.
        while !ready.exists() {
            assert!(child.poll().is_none(), "the script failed");
            std::thread::sleep(Duration::from_millis(5));
        }
        let exit = child
            .wait_until(None, &AtomicBool::new(true), Duration::from_millis(100))
            .unwrap();
        std::fs::remove_file(&ready).unwrap();
        assert_eq!(exit.code, 128 + libc::SIGKILL);
    }
}
