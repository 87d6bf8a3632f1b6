//! The I/O shell of `probe connections`: per protocol, a fresh clean path
//! (so that the server's namespace holds only the server's sockets), the
//! built-in server or a server command in the server namespace, and a
//! client thread in the client namespace that holds the connections while
//! this thread reads the server's memory.

use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use bytes::Bytes;
use h3lab_client::{Connector, RequestTemplate, Sender};
use h3lab_harness::custom::{self, Custom};
use h3lab_harness::{scrape, start_builtin};
use h3lab_results::Proto;
use h3lab_server::cli::ServeArgs;
use h3lab_supervise::{page_bytes, Supervised};
use http::{HeaderMap, Method};
use linkem::run::{Interrupted, Placement};
use linkem::{EmulatedPath, LinkSettings};
use tokio::sync::mpsc as async_mpsc;

use super::{ConnectionsOptions, ConnectionsReport, ProtocolResult, Reading, CONNECTIONS_SCHEMA};
use crate::shell::{connector_parts, run_each, the_run_of, SERVER_GRACE, SERVER_PORT};

/// An open request's response comes this much later: after the step.
const ACTIVE_DELAY_MS: u64 = 50_000;
/// A handshake on the clean path takes a few ms; this bounds a stuck one.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Below QUIC's 30 s idle timeout.
const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// Runs every protocol in turn, calling `on_result` after each. Stops
/// early when interrupted or when a protocol's run fails; the report then
/// holds the protocols done so far, and the failure comes beside it.
pub fn run_connections(
    options: &ConnectionsOptions,
    interrupted: &Interrupted,
    mut on_result: impl FnMut(&ProtocolResult),
) -> anyhow::Result<(ConnectionsReport, Option<anyhow::Error>)> {
    options.validate()?;
    crate::ensure_root()?;
    allow_open_files(*options.counts.last().expect("validated"))?;
    let (protocols, failure) = run_each(
        options.protocols.iter().copied(),
        interrupted,
        the_run_of,
        "the protocols measured so far",
        |protocol| run_protocol(options, protocol, interrupted),
        &mut on_result,
    );
    let report = ConnectionsReport {
        schema: CONNECTIONS_SCHEMA,
        server: options.server_name(),
        protocols,
    };
    Ok((report, failure))
}

/// Each end holds a socket per TCP connection (QUIC shares one): the
/// soft limit on open files goes up to what the steps need, within the
/// hard limit; the server started after inherits it.
fn allow_open_files(connections: u32) -> anyhow::Result<()> {
    let needed = u64::from(connections) + 1024;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills a plain struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        bail!(
            "cannot read the limit on open files: {}",
            std::io::Error::last_os_error()
        );
    }
    if limit.rlim_cur >= needed {
        return Ok(());
    }
    if limit.rlim_max < needed {
        bail!(
            "{connections} connections need {needed} open files but the hard limit is {}; \
             raise it (ulimit -Hn) or ask for fewer with --counts",
            limit.rlim_max
        );
    }
    limit.rlim_cur = needed;
    // SAFETY: setrlimit reads the struct it is given.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        bail!(
            "cannot raise the limit on open files: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// One protocol on its own path; the path, server and connections go
/// away at the end, whatever happened.
fn run_protocol(
    options: &ConnectionsOptions,
    protocol: Proto,
    interrupted: &Interrupted,
) -> anyhow::Result<ProtocolResult> {
    // No delay, loss or rate limit: the path only keeps the server's
    // sockets in a namespace of their own.
    let path = EmulatedPath::start(LinkSettings::default().build())?;
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let placement = Placement::Emulated(&path);
    let mut server = match &options.server_cmd {
        None => ProbedServer::builtin(&placement, options, scratch.path())?,
        Some(shell) => ProbedServer::command(&placement, options, shell, protocol, scratch.path())?,
    };
    let measured = measure(options, protocol, &path, &server, interrupted);
    server.process.stop(SERVER_GRACE);
    measured
}

/// The server under measurement: its process group, where clients reach
/// it, the certificate they trust, and its metrics if it has h3lab's.
struct ProbedServer {
    process: Supervised,
    addr: std::net::SocketAddr,
    cert: std::path::PathBuf,
    metrics: Option<std::net::SocketAddr>,
}

impl ProbedServer {
    /// `h3lab serve`, its limits raised to the connections the steps hold.
    fn builtin(
        placement: &Placement<'_>,
        options: &ConnectionsOptions,
        scratch: &Path,
    ) -> anyhow::Result<ProbedServer> {
        let cert = scratch.join("server-cert.pem");
        let most = options.most_connections();
        let most = most as usize;
        let serve = ServeArgs {
            max_tcp_connections: most,
            max_tcp_connections_per_peer: most,
            max_quic_connections: most,
            max_quic_connections_per_peer: most,
            // Held connections send nothing for as long as the steps take.
            header_timeout: Duration::from_secs(3600),
            ..ServeArgs::new()
        };
        let server = start_builtin(placement, &options.exe, SERVER_PORT, &cert, &serve)?;
        Ok(ProbedServer {
            process: server.process,
            addr: server.addr,
            cert,
            metrics: server.start.metrics,
        })
    }

    /// A server command (`--server-cmd`), told in `H3LAB_PEER_CONNECTIONS`
    /// how many connections it is to hold (scripts/peer-server.sh raises
    /// nginx's `worker_connections` to it).
    fn command(
        placement: &Placement<'_>,
        options: &ConnectionsOptions,
        shell: &str,
        protocol: Proto,
        scratch: &Path,
    ) -> anyhow::Result<ProbedServer> {
        let site = scratch.join("site");
        std::fs::create_dir_all(&site)?;
        std::fs::write(site.join("index.html"), "h3lab probe connections\n")?;
        let shell = format!(
            "export H3LAB_PEER_CONNECTIONS={}; {shell}",
            options.most_connections()
        );
        let addr = std::net::SocketAddr::new(placement.server_ip().into(), SERVER_PORT);
        let started = custom::start(
            placement,
            &Custom {
                shell: &shell,
                addr,
                site: Some(&site),
                body_size: None,
                run_scratch: scratch,
                cell_scratch: scratch,
                protocol,
                end: h3lab_harness::End::Server,
            },
        )?;
        let Some(cert) = started.cert else {
            let mut process = started.process;
            process.stop(SERVER_GRACE);
            bail!(
                "the server command must take {{cert}} and {{key}}, the certificate the probe's \
                 client trusts, e.g. scripts/peer-server.sh caddy {{ip}} {{port}} {{site}} {{cert}} {{key}}"
            );
        };
        Ok(ProbedServer {
            process: started.process,
            addr,
            cert,
            metrics: None,
        })
    }
}

/// What the client thread is asked to do next.
enum Step {
    /// Hold this many connections.
    Grow(u32),
    /// Open one request on every connection held.
    Activate,
}

fn measure(
    options: &ConnectionsOptions,
    protocol: Proto,
    path: &EmulatedPath,
    server: &ProbedServer,
    interrupted: &Interrupted,
) -> anyhow::Result<ProtocolResult> {
    let parts = connector_parts(server.addr, protocol, 0, &server.cert)?;
    let (steps, step_receiver) = async_mpsc::unbounded_channel();
    let (done_sender, done) = mpsc::channel();
    let concurrency = options.concurrency;
    let client = path
        .spawn_in_client(move || hold(parts, protocol, concurrency, step_receiver, done_sender))?;
    let read = |connections: u32| -> anyhow::Result<Reading> {
        std::thread::sleep(options.settle);
        read_server(path, server, connections)
    };
    let run = || -> anyhow::Result<ProtocolResult> {
        let baseline = read(0)?;
        let mut idle = Vec::new();
        for &count in &options.counts {
            if interrupted.is_set() {
                break;
            }
            steps.send(Step::Grow(count)).ok();
            let held = answer(&done)?;
            idle.push(read(held)?);
        }
        let mut active = Vec::new();
        // Only h3lab's server has `/delay/`, an answer that waits.
        if !interrupted.is_set() && server.metrics.is_some() {
            steps.send(Step::Activate).ok();
            let held = answer(&done)?;
            active.push(read(held)?);
        }
        if server.metrics.is_none() && protocol != Proto::H3 {
            for reading in idle.iter_mut().chain(&mut active) {
                let beyond = reading.tcp_sockets.saturating_sub(baseline.tcp_sockets);
                reading.server_connections = Some(beyond);
            }
        }
        let objects = kernel_objects_per_connection(protocol);
        Ok(ProtocolResult::new(
            protocol, baseline, idle, active, objects,
        ))
    };
    let result = run();
    // Closing the channel ends the client thread, which closes its
    // connections.
    drop(steps);
    let joined = client
        .join()
        .map_err(|_| anyhow!("the client thread panicked"));
    let result = result?;
    joined??;
    Ok(result)
}

/// The client thread's answer to a step: the connections it holds.
fn answer(done: &mpsc::Receiver<anyhow::Result<u32>>) -> anyhow::Result<u32> {
    done.recv()
        .map_err(|_| anyhow!("the client thread stopped"))?
}

/// The server's memory now, with `connections` held.
fn read_server(
    path: &EmulatedPath,
    server: &ProbedServer,
    connections: u32,
) -> anyhow::Result<Reading> {
    let rss_bytes = server
        .process
        .group_rss_bytes()
        .context("cannot read the server's memory in /proc")?;
    // A dual-stack listener (Go's, on `:443`) accepts IPv4 clients on
    // IPv6 sockets, which sockstat6 counts; IPv6 may be off, without it.
    let sockstat = path
        .spawn_in_server(|| {
            let sockstat = std::fs::read_to_string("/proc/thread-self/net/sockstat")?;
            let sockstat6 =
                std::fs::read_to_string("/proc/thread-self/net/sockstat6").unwrap_or_default();
            Ok::<_, std::io::Error>(sockstat + &sockstat6)
        })?
        .join()
        .map_err(|_| anyhow!("reading sockstat panicked"))?
        .context("cannot read /proc/net/sockstat in the server's namespace")?;
    let counts = Sockstat::parse(&sockstat)?;
    let open = match server.metrics {
        Some(metrics) => {
            let samples = scrape(&Placement::Emulated(path), metrics)?;
            let open = (samples.iter())
                .filter(|(name, _)| name.starts_with("h3lab_connections_open{"))
                .map(|(_, value)| *value as u64)
                .sum();
            Some(open)
        }
        None => None,
    };
    Ok(Reading {
        connections,
        rss_bytes,
        tcp_bytes: counts.tcp_pages * page_bytes(),
        udp_bytes: counts.udp_pages * page_bytes(),
        tcp_sockets: counts.tcp_inuse,
        server_connections: open,
    })
}

/// The kernel objects a server-side connection of `protocol` holds: a TCP
/// socket and its inode for h1 and h2, none for h3.
fn kernel_objects_per_connection(protocol: Proto) -> Option<u64> {
    if protocol == Proto::H3 {
        return Some(0);
    }
    let slabinfo = std::fs::read_to_string("/proc/slabinfo").ok()?;
    Some(object_size(&slabinfo, "TCP")? + object_size(&slabinfo, "sock_inode_cache")?)
}

/// A cache's object size in `/proc/slabinfo` (its fourth column).
fn object_size(slabinfo: &str, cache: &str) -> Option<u64> {
    let line = (slabinfo.lines()).find(|line| line.split_whitespace().next() == Some(cache))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// The figures of `/proc/net/sockstat` (and `sockstat6`) this probe
/// reads: TCP sockets of both families, and the memory of each protocol,
/// which IPv4 and IPv6 sockets share.
#[derive(Debug, PartialEq, Eq)]
struct Sockstat {
    tcp_inuse: u64,
    tcp_pages: u64,
    udp_pages: u64,
}

impl Sockstat {
    /// From lines such as `TCP: inuse 5 orphan 0 tw 0 alloc 7 mem 1` and
    /// `TCP6: inuse 3`.
    fn parse(text: &str) -> anyhow::Result<Sockstat> {
        let field = |line: &str, name: &str| -> Option<u64> {
            let (_, rest) = text
                .lines()
                .find(|l| l.starts_with(line))?
                .split_once(':')?;
            let words: Vec<&str> = rest.split_whitespace().collect();
            let at = words.iter().position(|w| *w == name)?;
            words.get(at + 1)?.parse().ok()
        };
        let found = (|| {
            Some(Sockstat {
                tcp_inuse: field("TCP:", "inuse")? + field("TCP6:", "inuse").unwrap_or(0),
                tcp_pages: field("TCP:", "mem")?,
                udp_pages: field("UDP:", "mem")?,
            })
        })();
        found.with_context(|| format!("/proc/net/sockstat has no TCP or UDP `mem`: {text}"))
    }
}

/// The client thread: holds connections as the steps ask, until the step
/// channel closes.
fn hold(
    parts: crate::shell::ConnectorParts,
    protocol: Proto,
    concurrency: u32,
    mut steps: async_mpsc::UnboundedReceiver<Step>,
    done: mpsc::Sender<anyhow::Result<u32>>,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    runtime.block_on(async move {
        let mut connector = Connector::new(
            parts.target.clone(),
            parts.addr,
            protocol,
            parts.tls.clone(),
            CONNECT_TIMEOUT,
        )?;
        connector.keep_quic_alive(KEEP_ALIVE);
        let template = Arc::new(RequestTemplate::new(
            &h3lab_client::Target::parse(&format!(
                "https://{}/delay/{ACTIVE_DELAY_MS}",
                parts.addr
            ))?,
            Method::GET,
            HeaderMap::new(),
            Bytes::new(),
        ));
        let mut held: Vec<Sender> = Vec::new();
        let mut open_requests = tokio::task::JoinSet::new();
        while let Some(step) = steps.recv().await {
            let outcome = match step {
                Step::Grow(count) => grow(&connector, &mut held, count, concurrency).await,
                Step::Activate => {
                    // Each request's task holds its connection; the
                    // requests leave while this thread's reader settles.
                    let active = held.len() as u32;
                    for mut sender in held.drain(..) {
                        let template = template.clone();
                        open_requests.spawn(async move {
                            let response = sender.send(&template).await;
                            (sender, response.map(drop))
                        });
                    }
                    Ok(active)
                }
            };
            let failed = outcome.is_err();
            if done.send(outcome).is_err() || failed {
                break;
            }
        }
        open_requests.abort_all();
        drop(held);
        connector.close().await;
        Ok(())
    })
}

/// Opens connections, `concurrency` at a time, until `count` are held.
async fn grow(
    connector: &Connector,
    held: &mut Vec<Sender>,
    count: u32,
    concurrency: u32,
) -> anyhow::Result<u32> {
    while (held.len() as u32) < count {
        let batch = concurrency.min(count - held.len() as u32);
        let opened = futures::future::join_all((0..batch).map(|_| connector.connect())).await;
        for connection in opened {
            let connection = connection
                .map_err(|err| anyhow!("connection {} of {count} failed: {err}", held.len() + 1))?;
            held.push(connection.sender);
        }
    }
    Ok(held.len() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slabinfo_gives_an_object_size_by_its_cache_name() {
        let slabinfo = "slabinfo - version: 2.1\n\
            # name <active_objs> <num_objs> <objsize> ...\n\
            tw_sock_TCP 176 240 256 16 1 : tunables 0 0 0 : slabdata 15 15 0\n\
            TCP 60 117 2368 13 8 : tunables 0 0 0 : slabdata 9 9 0\n";
        assert_eq!(object_size(slabinfo, "TCP"), Some(2368));
        assert_eq!(object_size(slabinfo, "UDP"), None);
    }

    #[test]
    fn sockstat_gives_tcp_sockets_and_both_memories() {
        let text = "sockets: used 131\nTCP: inuse 1004 orphan 0 tw 2 alloc 1006 mem 250\n\
                    UDP: inuse 1 mem 3\nUDPLITE: inuse 0\nRAW: inuse 0\nFRAG: inuse 0 memory 0\n\
                    TCP6: inuse 20\nUDP6: inuse 1\nUDPLITE6: inuse 0\nRAW6: inuse 0\n";
        assert_eq!(
            Sockstat::parse(text).unwrap(),
            Sockstat {
                tcp_inuse: 1024,
                tcp_pages: 250,
                udp_pages: 3
            }
        );
        let err = Sockstat::parse("sockets: used 1\n").unwrap_err();
        assert!(err.to_string().contains("no TCP or UDP `mem`"), "{err}");
    }
}
