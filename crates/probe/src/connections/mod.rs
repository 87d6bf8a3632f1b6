//! `probe connections`: what a connection costs the server in memory, per
//! protocol. N connections are opened to `h3lab serve` (or a server a
//! command starts: Caddy, nginx) and held idle, then, on `h3lab serve`,
//! given one open request each; at each step the server's resident memory
//! and, for TCP, the kernel's socket memory in the server's namespace are
//! read. The cost of a connection is the slope over the steps.
//!
//! This module is the report (`h3lab.connections/1`) and its pure
//! figures; `run` is the shell.

mod run;

use std::fmt;

use h3lab_results::Proto;
use serde::Serialize;

pub use run::run_connections;

/// The report's schema name.
pub const CONNECTIONS_SCHEMA: &str = "h3lab.connections/1";

/// What `probe connections` runs.
#[derive(Debug, Clone)]
pub struct ConnectionsOptions {
    /// Protocols, each against a fresh server on a fresh path.
    pub protocols: Vec<Proto>,
    /// Connections held at each step, ascending.
    pub counts: Vec<u32>,
    /// Opened at once while growing to a step.
    pub concurrency: u32,
    /// How long a step waits before it reads memory, so that buffers the
    /// handshakes used are freed and counts settle.
    pub settle: std::time::Duration,
    /// The `h3lab` binary, started as `h3lab serve`.
    pub exe: std::path::PathBuf,
    /// A server command to measure instead (`--server-cmd`, placeholders
    /// as in a suite's `server_cmd`); only idle connections are measured,
    /// since only h3lab's server has an answer that waits (`/delay/`).
    pub server_cmd: Option<String>,
}

/// Most connections a step may hold: every one is a socket at each end.
pub const MAX_CONNECTIONS: u32 = 20_000;

/// The header line: the steps, the protocols and the server.
impl fmt::Display for ConnectionsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let states = match self.server_cmd {
            None => "idle then with a request open each",
            Some(_) => "idle",
        };
        let counts: Vec<String> = self.counts.iter().map(u32::to_string).collect();
        let protocols: Vec<String> = self.protocols.iter().map(Proto::to_string).collect();
        write!(
            f,
            "probe connections: {} connections per protocol ({}), {states}, against {}",
            counts.join(", then "),
            protocols.join(", "),
            self.server_name()
        )
    }
}

impl ConnectionsOptions {
    /// The server measured, in words.
    pub fn server_name(&self) -> String {
        match &self.server_cmd {
            None => "h3lab serve (built-in)".into(),
            Some(shell) => format!("server command `{shell}`"),
        }
    }

    /// Connections the server must accept: the last step's, and some.
    fn most_connections(&self) -> u32 {
        self.counts.last().copied().unwrap_or_default() + 64
    }

    /// Refuses counts that are empty, not ascending or too many.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.counts.is_empty(),
            "--counts needs at least one number of connections, e.g. 100,1000"
        );
        anyhow::ensure!(
            self.counts.windows(2).all(|pair| pair[0] < pair[1]) && self.counts[0] > 0,
            "--counts must grow step by step from at least 1 (e.g. 100,1000), not {:?}",
            self.counts
        );
        let most = *self.counts.last().expect("not empty");
        anyhow::ensure!(
            most <= MAX_CONNECTIONS,
            "--counts goes up to {most}; at most {MAX_CONNECTIONS} connections are held"
        );
        anyhow::ensure!(
            !self.protocols.contains(&Proto::Auto),
            "--protocols takes h1, h2 and h3; auto is a client's choice between them"
        );
        anyhow::ensure!(self.concurrency > 0, "--concurrency must be at least 1");
        Ok(())
    }
}

/// Whether the connections were idle or each had a request open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Handshake done, no request.
    Idle,
    /// One request each, waiting for its response (`/delay/`).
    Active,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            State::Idle => "idle",
            State::Active => "active",
        })
    }
}

/// The server's memory at one step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Reading {
    /// Connections held (0: the server alone).
    pub connections: u32,
    /// The server's resident memory (its process group), bytes.
    pub rss_bytes: u64,
    /// The kernel's TCP socket memory in the server's namespace, bytes
    /// (`/proc/net/sockstat`'s `TCP: mem`, in pages).
    pub tcp_bytes: u64,
    /// The same for UDP (`UDP: mem`).
    pub udp_bytes: u64,
    /// TCP sockets in use in the server's namespace.
    pub tcp_sockets: u64,
    /// Connections open at the server: as `h3lab serve` counts them
    /// (`h3lab_connections_open`), or for another server's TCP the sockets
    /// in its namespace beyond those it had alone; `null` for another
    /// server's QUIC. A server may have closed idle connections the client
    /// still counts (nginx after 60 s without a request).
    pub server_connections: Option<u64>,
}

/// What one more connection costs: least-squares slopes over readings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PerConnection {
    /// Server resident memory per connection, bytes.
    pub rss_bytes: f64,
    /// Kernel socket memory (TCP and UDP) per connection, bytes.
    pub socket_bytes: f64,
}

/// One protocol's run.
#[derive(Debug, Clone, Serialize)]
pub struct ProtocolResult {
    /// The protocol.
    pub protocol: Proto,
    /// The server alone, before any connection.
    pub baseline: Reading,
    /// Each step's reading while the connections were idle.
    pub idle: Vec<Reading>,
    /// Each step's reading with a request open on every connection.
    pub active: Vec<Reading>,
    /// The slope over the baseline and the idle readings.
    pub idle_per_connection: Option<PerConnection>,
    /// The slope over the baseline and the active readings.
    pub active_per_connection: Option<PerConnection>,
    /// The kernel objects each connection holds on the server beside its
    /// buffers: a TCP socket and its inode (`/proc/slabinfo`'s `TCP` and
    /// `sock_inode_cache` object sizes); 0 for QUIC, whose connections
    /// share the server's UDP socket. `None` when slabinfo cannot be read.
    pub kernel_object_bytes: Option<u64>,
}

impl ProtocolResult {
    /// The result of these readings, with their slopes.
    pub fn new(
        protocol: Proto,
        baseline: Reading,
        idle: Vec<Reading>,
        active: Vec<Reading>,
        kernel_object_bytes: Option<u64>,
    ) -> Self {
        ProtocolResult {
            protocol,
            kernel_object_bytes,
            idle_per_connection: per_connection(&baseline, &idle),
            active_per_connection: per_connection(&baseline, &active),
            baseline,
            idle,
            active,
        }
    }
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct ConnectionsReport {
    /// Always [`CONNECTIONS_SCHEMA`].
    pub schema: &'static str,
    /// The server measured.
    pub server: String,
    /// Each protocol run, in order.
    pub protocols: Vec<ProtocolResult>,
}

impl Reading {
    /// The connections the memory is for: those the server holds where it
    /// is known, else those the client holds.
    fn held(&self) -> f64 {
        self.server_connections
            .map_or(f64::from(self.connections), |open| open as f64)
    }
}

/// The least-squares slope of memory against connections over the
/// baseline and `readings`; `None` with no reading beyond the baseline.
fn per_connection(baseline: &Reading, readings: &[Reading]) -> Option<PerConnection> {
    if readings.is_empty() {
        return None;
    }
    let points: Vec<&Reading> = std::iter::once(baseline).chain(readings).collect();
    let slope = |value: fn(&Reading) -> f64| -> f64 {
        let n = points.len() as f64;
        let mean_x = points.iter().map(|r| r.held()).sum::<f64>() / n;
        let mean_y = points.iter().map(|r| value(r)).sum::<f64>() / n;
        let (mut covariance, mut variance) = (0.0, 0.0);
        for point in &points {
            let dx = point.held() - mean_x;
            covariance += dx * (value(point) - mean_y);
            variance += dx * dx;
        }
        covariance / variance
    };
    Some(PerConnection {
        rss_bytes: slope(|r| r.rss_bytes as f64),
        socket_bytes: slope(|r| (r.tcp_bytes + r.udp_bytes) as f64),
    })
}

/// Kilobytes with one decimal (1 KB = 1,000 B).
fn kb(bytes: f64) -> String {
    format!("{:.1} KB", bytes / 1e3)
}

impl fmt::Display for ProtocolResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let base = &self.baseline;
        writeln!(
            f,
            "{}: server alone {:.1} MB resident",
            self.protocol,
            base.rss_bytes as f64 / 1e6
        )?;
        for (state, readings) in [(State::Idle, &self.idle), (State::Active, &self.active)] {
            for reading in readings {
                let open = reading.server_connections.map_or(String::new(), |open| {
                    format!(" ({open} open at the server)")
                });
                writeln!(
                    f,
                    "  {:>6} {state:<6} connections{open}: {:>7.1} MB resident, kernel socket buffers {} (TCP sockets {})",
                    reading.connections,
                    reading.rss_bytes as f64 / 1e6,
                    kb((reading.tcp_bytes + reading.udp_bytes) as f64),
                    reading.tcp_sockets,
                )?;
            }
        }
        for (state, slope) in [
            (State::Idle, self.idle_per_connection),
            (State::Active, self.active_per_connection),
        ] {
            if let Some(slope) = slope {
                writeln!(
                    f,
                    "  per {state} connection: {} resident, {} kernel socket buffers",
                    kb(slope.rss_bytes),
                    kb(slope.socket_bytes)
                )?;
            }
        }
        match self.kernel_object_bytes {
            Some(0) => writeln!(
                f,
                "  kernel socket objects: none per connection (one UDP socket for all)"
            ),
            Some(bytes) => writeln!(
                f,
                "  kernel socket objects: {} per connection (a TCP socket and its inode, slabinfo)",
                kb(bytes as f64)
            ),
            None => Ok(()),
        }
    }
}

impl fmt::Display for ConnectionsReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "server memory per connection ({}):", self.server)?;
        for protocol in &self.protocols {
            let objects = protocol.kernel_object_bytes.map(|bytes| bytes as f64);
            let figure = |slope: Option<PerConnection>| match (slope, objects) {
                (Some(s), Some(objects)) => format!(
                    "{} + {}",
                    kb(s.rss_bytes),
                    kb(s.socket_bytes.max(0.0) + objects)
                ),
                _ => "unknown".to_string(),
            };
            writeln!(
                f,
                "  {}: idle {}, active {} (resident + kernel: socket buffers and objects)",
                protocol.protocol,
                figure(protocol.idle_per_connection),
                figure(protocol.active_per_connection)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(connections: u32, rss_bytes: u64, tcp_bytes: u64) -> Reading {
        Reading {
            connections,
            rss_bytes,
            tcp_bytes,
            udp_bytes: 4096,
            tcp_sockets: u64::from(connections),
            server_connections: Some(u64::from(connections)),
        }
    }

    #[test]
    fn the_cost_of_a_connection_is_the_slope_over_the_steps() {
        let baseline = reading(0, 10_000_000, 0);
        // 30 KB resident and 8 KB of sockets each, with a little noise.
        let idle = vec![
            reading(100, 13_000_000 + 700, 800_000),
            reading(1000, 40_000_000 - 700, 8_000_000),
        ];
        let result = ProtocolResult::new(Proto::H2, baseline, idle.clone(), Vec::new(), Some(3200));
        let slope = result.idle_per_connection.unwrap();
        // Where the server holds fewer than the client counts, the slope
        // is over the server's.
        let mut closed = idle.clone();
        closed[1].server_connections = Some(900);
        closed[1].rss_bytes = 13_000_000 + 800 * 30_000;
        let fewer = ProtocolResult::new(
            Proto::H2,
            reading(0, 10_000_000, 0),
            closed,
            Vec::new(),
            None,
        );
        let rss = fewer.idle_per_connection.unwrap().rss_bytes;
        assert!((rss - 30_000.0).abs() < 5.0, "{rss}");
        assert!((slope.rss_bytes - 30_000.0).abs() < 5.0, "{slope:?}");
        assert!((slope.socket_bytes - 8_000.0).abs() < 1e-6, "{slope:?}");
        assert_eq!(result.active_per_connection, None);
        let text = ConnectionsReport {
            schema: CONNECTIONS_SCHEMA,
            server: "h3lab serve".into(),
            protocols: vec![result],
        }
        .to_string();
        assert!(
            text.contains("h2: idle 30.0 KB + 11.2 KB, active unknown"),
            "{text}"
        );
    }

    #[test]
    fn counts_must_grow_and_stay_bounded() {
        let options = |counts: Vec<u32>| ConnectionsOptions {
            protocols: vec![Proto::H2],
            counts,
            concurrency: 50,
            settle: std::time::Duration::from_millis(500),
            exe: "h3lab".into(),
            server_cmd: None,
        };
        assert!(options(vec![100, 1000]).validate().is_ok());
        for (counts, says) in [
            (vec![], "at least one"),
            (vec![1000, 100], "grow"),
            (vec![0, 10], "grow"),
            (vec![100, 50_000], "at most 20000"),
        ] {
            let err = options(counts.clone()).validate().unwrap_err().to_string();
            assert!(err.contains(says), "{counts:?}: {err}");
        }
    }
}
