//! How a cell starts its processes: at one side of the path, with no
//! stdin, supervised in a process group of their own.

use std::ffi::OsStr;
use std::process::{Command, Stdio};

use h3lab_supervise::{Group, Supervised};
use linkem::run::{Placement, Side};

/// A command for `program` at `side` of `placement`.
pub(crate) fn command(
    placement: &Placement<'_>,
    side: Side,
    program: impl AsRef<OsStr>,
) -> Command {
    let mut command = placement.command(side, program);
    command.stdin(Stdio::null());
    command
}

/// Starts `command` in its own process group, so a terminal's Ctrl-C
/// reaches only h3lab, which then stops children in order.
pub(crate) fn spawn(command: Command, what: &str) -> anyhow::Result<Supervised> {
    Supervised::spawn(command, Group::Own, what)
}
