//! What every probe on an emulated path shares: the root check, the
//! built-in server in the server namespace, the parts of a client that
//! trusts it, and the loop that runs each variant in turn, keeps what it
//! gathered and stops on Ctrl-C or on the first failure.

use std::fmt::Display;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use h3lab_client::{client_tls_config, Target, TlsOptions};
use h3lab_harness::{start_builtin, BuiltinServer};
use h3lab_results::Proto;
use h3lab_server::cli::ServeArgs;
use linkem::run::{Interrupted, Placement};
use linkem::EmulatedPath;

/// Between SIGTERM and SIGKILL for the server.
pub(crate) const SERVER_GRACE: Duration = Duration::from_secs(2);
/// The built-in server's port in the server namespace.
pub(crate) const SERVER_PORT: u16 = 443;

/// Fails with the fix unless the process is root, which the probes on an
/// emulated path need.
pub fn ensure_root() -> anyhow::Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    anyhow::ensure!(
        unsafe { libc::geteuid() } == 0,
        "`h3lab probe migrate`, `probe hol`, `probe fallback` and `probe connections` need root: \
         they create network namespaces (and capture or change addresses inside them); run with sudo"
    );
    Ok(())
}

/// `h3lab serve` with `serve`'s flags in the server namespace, once it
/// listens; its certificate is written to `cert`.
pub(crate) fn start_server(
    path: &EmulatedPath,
    exe: &Path,
    cert: &Path,
    serve: &ServeArgs,
) -> anyhow::Result<BuiltinServer> {
    start_builtin(&Placement::Emulated(path), exe, SERVER_PORT, cert, serve)
}

/// The pieces of a [`h3lab_client::Connector`], which must be built
/// inside the client's runtime.
pub(crate) struct ConnectorParts {
    pub target: Arc<Target>,
    pub addr: SocketAddr,
    pub tls: Arc<rustls::ClientConfig>,
}

/// What a client connecting to `addr` for `/bytes/{body_bytes}` needs,
/// trusting the server's certificate in `cert`.
pub(crate) fn connector_parts(
    addr: SocketAddr,
    proto: Proto,
    body_bytes: u64,
    cert: &Path,
) -> anyhow::Result<ConnectorParts> {
    let target = Target::parse(&format!("https://{addr}/bytes/{body_bytes}"))?;
    let tls = TlsOptions {
        insecure: false,
        ca_file: Some(cert.to_path_buf()),
    };
    Ok(ConnectorParts {
        target: Arc::new(target),
        addr,
        tls: client_tls_config(&tls, proto)?,
    })
}

/// Runs `run` on each variant in turn, calling `on_done` after each.
/// Stops at Ctrl-C or at the first failure; what was gathered until then
/// comes back with the failure beside it, which names the variant
/// (`what(variant)`, e.g. "the h3 run") or, after Ctrl-C, says that the
/// results hold `so_far` (e.g. "the runs made so far").
pub(crate) fn run_each<V: Copy, R>(
    variants: impl IntoIterator<Item = V>,
    interrupted: &Interrupted,
    what: impl Fn(V) -> String,
    so_far: &str,
    mut run: impl FnMut(V) -> anyhow::Result<R>,
    mut on_done: impl FnMut(&R),
) -> (Vec<R>, Option<anyhow::Error>) {
    let mut done = Vec::new();
    for variant in variants {
        if interrupted.is_set() {
            break;
        }
        match run(variant) {
            Ok(result) => {
                on_done(&result);
                done.push(result);
            }
            // A Ctrl-C also reaches the `ip` commands setting up a path:
            // their failure then is the interruption's.
            Err(_) if interrupted.is_set() => break,
            Err(err) => return (done, Some(err.context(format!("{} failed", what(variant))))),
        }
    }
    let failure = interrupted
        .is_set()
        .then(|| anyhow!("interrupted: the report holds {so_far}"));
    (done, failure)
}

/// `what` for a variant that names itself, e.g. a protocol or a policy.
pub(crate) fn the_run_of<V: Display>(variant: V) -> String {
    format!("the {variant} run")
}
