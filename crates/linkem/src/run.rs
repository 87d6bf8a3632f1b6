//! Running a program behind the emulated path, as `h3lab net run -- CMD`
//! does: the command in the client namespace, an optional server command in
//! the server namespace, signals forwarded, everything stopped at the end.

use std::ffi::OsStr;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::cpus::{self, CpuSplit};
use crate::env;
use crate::EmulatedPath;
use h3lab_supervise::{Exit, Group, Supervised};

/// How long a stopped process gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// Set by SIGINT, SIGTERM or SIGHUP once [`Interrupted::install`] ran; the
/// handlers replace the default "die at once", so cleanup always happens.
#[derive(Clone)]
pub struct Interrupted(Arc<AtomicBool>);

impl Interrupted {
    /// Installs the handlers; the returned flag is shared by all clones.
    pub fn install() -> anyhow::Result<Interrupted> {
        let flag = Arc::new(AtomicBool::new(false));
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            signal_hook::flag::register(signal, flag.clone())
                .context("installing the signal handler")?;
        }
        Ok(Interrupted(flag))
    }

    /// Watches `flag`, which a handler installed elsewhere sets (a bench
    /// run's Ctrl-C).
    pub fn watching(flag: Arc<AtomicBool>) -> Interrupted {
        Interrupted(flag)
    }

    /// True once a signal arrived.
    pub fn is_set(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The flag itself, for waits that watch it.
    pub(crate) fn flag(&self) -> &AtomicBool {
        &self.0
    }
}

/// Where the commands run: inside an emulated path, or plain loopback.
/// Either way a command learns the addresses from `H3LAB_SERVER_IP` and
/// `H3LAB_CLIENT_IP`, and the origin's, when there is one, from
/// `H3LAB_ORIGIN_IP`.
pub enum Placement<'a> {
    /// The client and server namespaces of this path (and its origin
    /// namespace, once it has an origin leg).
    Emulated(&'a EmulatedPath),
    /// This network namespace, every address 127.0.0.1; the server and the
    /// client each on half of the CPUs ([`crate::cpus`]), an origin on the
    /// server's half.
    Loopback,
}

/// Which end of the path a command runs at. The origin behind an edge is
/// not a side: a path may have no origin leg, so a command there comes
/// from [`Placement::origin_command`], which can say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The client namespace.
    Client,
    /// The server namespace.
    Server,
}

impl Placement<'_> {
    /// A command for `program` at `side`.
    pub fn command(&self, side: Side, program: impl AsRef<OsStr>) -> Command {
        match (self, side) {
            (Placement::Emulated(path), Side::Client) => path.client_command(program),
            (Placement::Emulated(path), Side::Server) => path.server_command(program),
            (Placement::Loopback, side) => loopback_command(side, program),
        }
    }

    /// A command for `program` at the origin behind the edge (the server
    /// side): in the origin namespace of an emulated path, which needs
    /// [`EmulatedPath::add_origin_leg`] first (else an error says so); on
    /// loopback, on the server's CPUs.
    pub fn origin_command(&self, program: impl AsRef<OsStr>) -> anyhow::Result<Command> {
        match self {
            Placement::Emulated(path) => path.origin_command(program),
            Placement::Loopback => Ok(loopback_command(Side::Server, program)),
        }
    }

    /// The server's address as clients reach it.
    pub fn server_ip(&self) -> Ipv4Addr {
        match self {
            Placement::Emulated(path) => path.server_ip(),
            Placement::Loopback => Ipv4Addr::LOCALHOST,
        }
    }

    /// The origin's address as the edge reaches it: on an emulated path,
    /// only once it has an origin leg.
    pub fn origin_ip(&self) -> Option<Ipv4Addr> {
        match self {
            Placement::Emulated(path) => path.origin_ip(),
            Placement::Loopback => Some(Ipv4Addr::LOCALHOST),
        }
    }
}

/// A command in this namespace, every address 127.0.0.1, on the CPUs of
/// `side`'s half.
fn loopback_command(side: Side, program: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new(program);
    command
        .env(env::SERVER_IP, "127.0.0.1")
        .env(env::CLIENT_IP, "127.0.0.1")
        .env(env::ORIGIN_IP, "127.0.0.1");
    if let Ok(split) = CpuSplit::of_this_process() {
        let cpus = match side {
            Side::Server => &split.server,
            Side::Client => &split.client,
        };
        cpus::pin(cpus, &mut command);
    }
    command
}

/// Runs `argv` (client side) and, if given, `server_shell` via `sh -c`
/// (server side). Returns the client's exit; stops the server (SIGTERM,
/// then SIGKILL after `GRACE`, 2 s) when the client ends, and both on a signal.
pub fn run_commands(
    placement: &Placement<'_>,
    argv: &[String],
    server_shell: Option<&str>,
    interrupted: &Interrupted,
) -> anyhow::Result<Exit> {
    let (program, args) = argv.split_first().context(
        "missing command: put the program to run after `--`, e.g. `h3lab net run --profile cellular -- curl http://$H3LAB_SERVER_IP/`",
    )?;
    let mut server = match server_shell {
        Some(shell) => {
            let mut command = placement.command(Side::Server, "sh");
            command.args(["-c", shell]);
            let what = format!("server command `{shell}`");
            Some(Supervised::spawn(command, Group::Own, &what)?)
        }
        None => None,
    };
    let mut command = placement.command(Side::Client, program);
    command.args(args);
    let what = format!("command `{program}`; check the command after `--`");
    let client = Supervised::spawn(command, Group::Terminal, &what);
    let exit = client.map(|mut client| {
        client
            .wait_until(None, interrupted.flag(), GRACE)
            .expect("without a deadline, waiting ends only when the child does")
    });
    if let Some(server) = &mut server {
        if let Some(early) = server.poll() {
            tracing::warn!(
                "the server command ended before the client, with exit code {}",
                early.code
            );
        }
        server.stop(GRACE);
    }
    exit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(command: &Command, name: &str) -> Option<String> {
        command
            .get_envs()
            .find(|(key, _)| *key == name)
            .and_then(|(_, value)| Some(value?.to_string_lossy().into_owned()))
    }

    #[test]
    fn on_loopback_the_origin_is_127_0_0_1_for_every_command() {
        let origin = Placement::Loopback.origin_command("true").unwrap();
        let client = Placement::Loopback.command(Side::Client, "true");
        for command in [&origin, &client] {
            assert_eq!(
                env_of(command, env::ORIGIN_IP).as_deref(),
                Some("127.0.0.1")
            );
        }
        assert_eq!(Placement::Loopback.origin_ip(), Some(Ipv4Addr::LOCALHOST));
    }
}
