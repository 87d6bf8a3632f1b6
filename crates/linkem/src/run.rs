//! Running a program behind the emulated path, as `h3lab net run -- CMD`
//! does: the command in the client namespace, an optional server command in
//! the server namespace, signals forwarded, everything stopped at the end.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::EmulatedPath;

/// How long a stopped process gets between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(10);

/// Set by SIGINT, SIGTERM or SIGHUP once [`Interrupted::install`] ran; the
/// handlers replace the default "die at once", so cleanup always happens.
#[derive(Clone)]
pub struct Interrupted(Arc<AtomicBool>);

impl Interrupted {
    pub fn install() -> anyhow::Result<Interrupted> {
        let flag = Arc::new(AtomicBool::new(false));
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            signal_hook::flag::register(signal, flag.clone())
                .context("installing the signal handler")?;
        }
        Ok(Interrupted(flag))
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Where the commands run: inside an emulated path, or plain loopback.
pub enum Placement<'a> {
    Emulated(&'a EmulatedPath),
    Loopback,
}

impl Placement<'_> {
    fn client(&self, program: &str) -> Command {
        match self {
            Placement::Emulated(path) => path.client_command(program),
            Placement::Loopback => loopback_command(program),
        }
    }

    fn server(&self, program: &str) -> Command {
        match self {
            Placement::Emulated(path) => path.server_command(program),
            Placement::Loopback => loopback_command(program),
        }
    }
}

fn loopback_command(program: &str) -> Command {
    let mut command = Command::new(program);
    command
        .env("H3LAB_SERVER_IP", "127.0.0.1")
        .env("H3LAB_CLIENT_IP", "127.0.0.1");
    command
}

/// Runs `argv` (client side) and, if given, `server_shell` via `sh -c`
/// (server side). Returns the client's exit status; stops the server
/// (SIGTERM, then SIGKILL after [`GRACE`]) when the client ends or on a
/// signal.
pub fn run_commands(
    placement: &Placement<'_>,
    argv: &[String],
    server_shell: Option<&str>,
    interrupted: &Interrupted,
) -> anyhow::Result<ExitStatus> {
    let (program, args) = argv.split_first().context(
        "missing command: put the program to run after `--`, e.g. `h3lab net run --profile cellular -- curl http://$H3LAB_SERVER_IP/`",
    )?;
    let mut server = match server_shell {
        Some(shell) => {
            // Its own process group: a terminal's Ctrl-C does not reach it,
            // and stopping the group also stops what `sh -c` started.
            let child = placement
                .server("sh")
                .args(["-c", shell])
                .process_group(0)
                .spawn()
                .with_context(|| format!("cannot start server command `{shell}`"))?;
            Some(child)
        }
        None => None,
    };
    let client = placement
        .client(program)
        .args(args)
        .spawn()
        .with_context(|| format!("cannot run `{program}`; check the command after `--`"));
    let status = client.and_then(|mut child| wait_or_stop(&mut child, interrupted, false));
    if let Some(server) = &mut server {
        if let Ok(Some(early)) = server.try_wait() {
            tracing::warn!("the server command ended before the client, with {early}");
        }
        wait_or_stop(server, interrupted, true)?;
    }
    status
}

/// Waits for `child`; on a signal (or at once when `stop_now`) sends it
/// SIGTERM, then SIGKILL after the grace period.
fn wait_or_stop(
    child: &mut Child,
    interrupted: &Interrupted,
    stop_now: bool,
) -> anyhow::Result<ExitStatus> {
    let mut term_sent: Option<Instant> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        let should_stop = stop_now || interrupted.is_set();
        match term_sent {
            None if should_stop => {
                signal_group_or_child(child.id(), stop_now, Signal::SIGTERM);
                term_sent = Some(Instant::now());
            }
            Some(at) if at.elapsed() >= GRACE => {
                signal_group_or_child(child.id(), stop_now, Signal::SIGKILL);
            }
            _ => {}
        }
        std::thread::sleep(POLL);
    }
}

fn signal_group_or_child(pid: u32, group: bool, signal: Signal) {
    let pid = Pid::from_raw(pid as i32);
    let _ = if group {
        killpg(pid, signal)
    } else {
        nix::sys::signal::kill(pid, signal)
    };
}

/// The exit code a shell would report: the code, or 128 + the signal.
pub fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => 128u8.saturating_add(signal as u8),
        (None, None) => 1,
    }
}
