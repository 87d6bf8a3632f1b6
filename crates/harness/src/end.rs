//! Which end of the path a server runs at: the server end, or the origin
//! behind an edge there (`EmulatedPath::add_origin_leg`).

use std::ffi::OsStr;
use std::net::Ipv4Addr;
use std::process::Command;
use std::thread::JoinHandle;

use linkem::run::{Placement, Side};

/// Where a server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The server end of the path, which clients reach.
    Server,
    /// The origin behind the edge, which only the server end reaches.
    Origin,
}

impl End {
    /// A command for `program` at this end.
    pub fn command(
        self,
        placement: &Placement<'_>,
        program: impl AsRef<OsStr>,
    ) -> anyhow::Result<Command> {
        match self {
            End::Server => Ok(placement.command(Side::Server, program)),
            End::Origin => placement.origin_command(program),
        }
    }

    /// This end's address.
    pub fn ip(self, placement: &Placement<'_>) -> anyhow::Result<Ipv4Addr> {
        match self {
            End::Server => Ok(placement.server_ip()),
            End::Origin => placement.origin_ip().ok_or_else(|| {
                anyhow::anyhow!("the path has no origin leg for a server behind an edge")
            }),
        }
    }

    /// Runs `work` where this end's peers are: the client namespace for
    /// the server end, the server namespace (the edge) for the origin.
    pub(crate) fn run_beside<T, F>(self, placement: &Placement<'_>, work: F) -> anyhow::Result<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let peers = match self {
            End::Server => Thread::Client,
            End::Origin => Thread::Server,
        };
        run_in(placement, peers, work)
    }

    /// Runs `work` at this end itself (its own loopback).
    pub(crate) fn run_at<T, F>(self, placement: &Placement<'_>, work: F) -> anyhow::Result<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let here = match self {
            End::Server => Thread::Server,
            End::Origin => Thread::Origin,
        };
        run_in(placement, here, work)
    }
}

/// The namespace a thread of ours enters.
enum Thread {
    Client,
    Server,
    Origin,
}

/// Runs `work` on a thread in `namespace` of an emulated path (here, on
/// loopback) and waits for it.
fn run_in<T, F>(placement: &Placement<'_>, namespace: Thread, work: F) -> anyhow::Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let Placement::Emulated(path) = placement else {
        return Ok(work());
    };
    let thread: JoinHandle<T> = match namespace {
        Thread::Client => path.spawn_in_client(work)?,
        Thread::Server => path.spawn_in_server(work)?,
        Thread::Origin => path.spawn_in_origin(work)?,
    };
    thread
        .join()
        .map_err(|_| anyhow::anyhow!("a thread in the path's namespace panicked"))
}
