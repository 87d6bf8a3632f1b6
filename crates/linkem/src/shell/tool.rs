//! The system tools a path is built with (`ip`, `iptables`), each run with
//! a time bound. They answer in milliseconds; one that does not (a wedged
//! netlink, a stuck nftables lock, a broken stub on `PATH`) must end h3lab
//! with an error naming the command, not hang it while it holds a
//! half-made path.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// How long one tool command may take.
pub(crate) const TOOL_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a running tool is looked at.
const POLL: Duration = Duration::from_millis(2);

/// The error of a tool killed at [`TOOL_TIMEOUT`]: unlike a tool that
/// failed, one that hangs may hang again, so callers that shrug off a
/// failure must not shrug off this.
#[derive(Debug)]
pub(crate) struct Hung(String);

impl std::fmt::Display for Hung {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Hung {}

/// A program and the Debian package that installs it.
pub(crate) struct Tool {
    pub(crate) program: &'static str,
    pub(crate) package: &'static str,
}

pub(crate) const IP: Tool = Tool {
    program: "ip",
    package: "iproute2",
};
pub(crate) const IPTABLES: Tool = Tool {
    program: "iptables",
    package: "iptables",
};

impl Tool {
    /// Whether the program is on `PATH`.
    pub(crate) fn installed(&self) -> bool {
        h3lab_supervise::on_path(&[self.program]).is_some()
    }
}

/// Runs `command`, an invocation of `tool` (perhaps through `ip netns
/// exec`), with `stdin` fed to it, and returns its standard output. The
/// command runs in a process group of its own: a Ctrl-C meant for h3lab's
/// group must not kill `ip netns add` after it made the namespace and
/// before h3lab knows it exists (probe migrate's Ctrl-C test found such a
/// namespace left behind); h3lab stops on the signal itself and deletes
/// what it made. Fails, naming the command, when it cannot start, exits
/// non-zero or runs past [`TOOL_TIMEOUT`] (then its group is killed).
pub(crate) fn run(
    tool: &Tool,
    command: &mut Command,
    stdin: Option<&str>,
) -> anyhow::Result<String> {
    let mut child = command
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!(
                "cannot run `{}`: install {} (apt-get install {})",
                tool.program, tool.package, tool.package
            )
        })?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    if let Some(text) = stdin {
        // A tool that exits early closes its end; its status tells why.
        let _ = child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(text.as_bytes());
    }
    drop(child.stdin.take());
    let Some(status) = wait_bounded(&mut child, TOOL_TIMEOUT)? else {
        return Err(Hung(format!(
            "`{}` did not finish within {} s and was killed; `{}` hangs on this machine: \
             run that command by hand to see why",
            describe(command),
            TOOL_TIMEOUT.as_secs(),
            tool.program
        ))
        .into());
    };
    let stderr = stderr.join().unwrap_or_default();
    anyhow::ensure!(
        status.success(),
        "`{}` failed ({status}): {}",
        describe(command),
        String::from_utf8_lossy(&stderr).trim()
    );
    Ok(String::from_utf8_lossy(&stdout.join().unwrap_or_default()).into_owned())
}

/// Reads a pipe to its end on a thread of its own, so that a full pipe
/// never blocks the child.
fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// The child's exit status, or `None` once `limit` passed; then its whole
/// process group has been killed and the child reaped.
fn wait_bounded(child: &mut Child, limit: Duration) -> anyhow::Result<Option<ExitStatus>> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            child.wait()?;
            return Ok(None);
        }
        std::thread::sleep(POLL);
    }
}

/// The command line, to name it in an error.
pub(crate) fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|word| word.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SH: Tool = Tool {
        program: "sh",
        package: "dash",
    };

    #[test]
    fn output_is_returned_and_a_failure_names_the_command_and_its_error() {
        let out = run(
            &SH,
            Command::new("sh").args(["-c", "cat; echo done"]),
            Some("fed\n"),
        )
        .unwrap();
        assert_eq!(out, "fed\ndone\n");
        let err = run(
            &SH,
            Command::new("sh").args(["-c", "echo broken >&2; exit 3"]),
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("`sh -c echo broken >&2; exit 3` failed") && err.ends_with(": broken"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_program_names_its_package() {
        let missing = Tool {
            program: "h3lab-no-such-tool",
            package: "h3lab-no-such-package",
        };
        assert!(!missing.installed());
        assert!(SH.installed());
        let err = run(&missing, &mut Command::new(missing.program), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot run `h3lab-no-such-tool`: install h3lab-no-such-package \
             (apt-get install h3lab-no-such-package)"
        );
    }

    #[test]
    fn a_hanging_tool_is_killed_at_the_bound() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30"])
            .process_group(0)
            .spawn()
            .unwrap();
        let started = Instant::now();
        assert_eq!(
            wait_bounded(&mut child, Duration::from_millis(200)).unwrap(),
            None
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
