//! The result of a load run: one versioned, mergeable JSON document
//! (`h3lab.load/1`, see docs/load-schema.md) and its text rendering.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use crate::histogram::Micros;
use crate::tally::{ErrorKind, Tally};

pub const SCHEMA: &str = "h3lab.load/1";

/// Everything one run (or several merged runs) measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    pub schema: String,
    pub url: String,
    pub proto: String,
    /// `closed` (connections x streams loop) or `open` (fixed rate).
    pub model: Model,
    pub connections: usize,
    pub streams_per_connection: usize,
    pub threads: usize,
    /// Stopped early by Ctrl-C; the figures cover the time until then.
    pub interrupted: bool,
    /// Measured wall time, warm-up excluded.
    pub duration_s: f64,
    /// Responses received in full, whatever their status.
    pub completed: u64,
    /// Attempts that got no complete response (connect, tls, reset, timeout, protocol).
    pub failed: u64,
    /// Response body bytes received.
    pub body_bytes: u64,
    pub requests_per_sec: f64,
    pub body_bytes_per_sec: f64,
    /// Request start (open model: intended start) to last body byte.
    pub latency_us: Micros,
    /// Request start (open model: intended start) to response head.
    pub ttfb_us: Micros,
    pub tcp_connect_us: Micros,
    /// TLS handshake after TCP, or the whole QUIC handshake.
    pub handshake_us: Micros,
    pub status_counts: BTreeMap<u16, u64>,
    pub errors: ErrorCounts,
    /// The first message seen for each error kind.
    pub first_errors: BTreeMap<String, String>,
    pub connections_opened: u64,
    /// Connections re-opened after the peer closed or broke one.
    pub reconnects: u64,
    /// Requests cut off by the end of a timed run or by Ctrl-C.
    pub aborted_in_flight: u64,
    /// Closed model with -n: requests never attempted because the run was
    /// interrupted or the server stayed unreachable (every connection gave
    /// up after 5 failed connects in a row).
    pub not_attempted: u64,
    pub open_model: Option<OpenModel>,
    pub cpu: Cpu,
    pub warmup: Option<Warmup>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    Closed,
    Open,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounts {
    pub connect: u64,
    pub tls: u64,
    pub reset: u64,
    pub timeout: u64,
    pub protocol: u64,
    /// Responses with status 400 or above (also in `status_counts`).
    pub bad_status: u64,
}

/// Pacing figures of an open-model run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenModel {
    pub target_rate: f64,
    /// Requests sent (measured ones).
    pub sent: u64,
    pub achieved_rate: f64,
    /// Sent more than 1 ms after their intended time.
    pub late: u64,
    /// How late the late ones were.
    pub lag_us: Micros,
    /// Due before the end but never sent.
    pub unsent: u64,
}

/// CPU the load generator's worker threads used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    pub user_s: f64,
    pub sys_s: f64,
    pub requests_per_cpu_s: f64,
}

/// The excluded warm-up phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warmup {
    pub duration_s: f64,
    pub completed: u64,
    pub failed: u64,
    pub latency_us: Micros,
}

/// How a run ended, for the exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Interrupted,
    /// One line naming how many attempts failed, by kind.
    Failed(String),
}

/// The run's shape, fixed before it starts.
pub(crate) struct RunShape {
    pub url: String,
    pub proto: String,
    pub connections: usize,
    pub streams: usize,
    pub threads: usize,
    pub target_rate: Option<f64>,
}

/// What the engine measured besides the per-request tally.
pub(crate) struct RunTotals {
    pub duration_s: f64,
    pub warmup_s: f64,
    pub interrupted: bool,
    pub user_s: f64,
    pub sys_s: f64,
}

impl LoadReport {
    pub(crate) fn build(shape: RunShape, tally: Tally, totals: RunTotals) -> LoadReport {
        let errors = tally.error_counts();
        let status_counts = tally.status_counts();
        let open_model = shape.target_rate.map(|target_rate| OpenModel {
            target_rate,
            sent: tally.sent,
            achieved_rate: 0.0,
            late: tally.late,
            lag_us: tally.lag,
            unsent: tally.unsent,
        });
        let warmup = if totals.warmup_s > 0.0 {
            Some(Warmup {
                duration_s: totals.warmup_s,
                completed: tally.warmup_completed,
                failed: tally.warmup_failed,
                latency_us: tally.warmup_latency,
            })
        } else {
            None
        };
        let mut report = LoadReport {
            schema: SCHEMA.to_string(),
            url: shape.url,
            proto: shape.proto,
            model: if shape.target_rate.is_some() {
                Model::Open
            } else {
                Model::Closed
            },
            connections: shape.connections,
            streams_per_connection: shape.streams,
            threads: shape.threads,
            interrupted: totals.interrupted,
            duration_s: totals.duration_s,
            completed: tally.completed,
            failed: errors.transport_failures(),
            body_bytes: tally.body_bytes,
            requests_per_sec: 0.0,
            body_bytes_per_sec: 0.0,
            latency_us: tally.latency,
            ttfb_us: tally.ttfb,
            tcp_connect_us: tally.tcp_connect,
            handshake_us: tally.handshake,
            status_counts,
            errors,
            first_errors: tally
                .first_errors
                .into_iter()
                .map(|(kind, message)| (kind.name().to_string(), message))
                .collect(),
            connections_opened: tally.connections_opened,
            reconnects: tally.reconnects,
            aborted_in_flight: tally.aborted_in_flight,
            not_attempted: tally.not_attempted,
            open_model,
            cpu: Cpu {
                user_s: totals.user_s,
                sys_s: totals.sys_s,
                requests_per_cpu_s: 0.0,
            },
            warmup,
        };
        report.derive_rates();
        report
    }

    /// Reads a report written with `--json`.
    pub fn from_json(text: &str) -> anyhow::Result<LoadReport> {
        let report: LoadReport = serde_json::from_str(text).context("not an h3lab load report")?;
        if report.schema != SCHEMA {
            bail!(
                "report schema is `{}`, this h3lab reads `{SCHEMA}`",
                report.schema
            );
        }
        Ok(report)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    /// Combines runs that loaded the same target side by side (e.g. from
    /// several machines): counts and histograms add up, the duration is
    /// the longest one, rates are recomputed from the totals.
    pub fn merge(&mut self, other: &LoadReport) -> anyhow::Result<()> {
        if other.schema != self.schema || other.model != self.model || other.proto != self.proto {
            bail!(
                "cannot merge a {} {} report into a {} {} one: merge runs of one protocol and model",
                other.proto,
                other.model,
                self.proto,
                self.model
            );
        }
        self.connections += other.connections;
        self.threads += other.threads;
        self.interrupted |= other.interrupted;
        self.duration_s = self.duration_s.max(other.duration_s);
        self.completed += other.completed;
        self.failed += other.failed;
        self.body_bytes += other.body_bytes;
        self.latency_us.add(&other.latency_us);
        self.ttfb_us.add(&other.ttfb_us);
        self.tcp_connect_us.add(&other.tcp_connect_us);
        self.handshake_us.add(&other.handshake_us);
        for (status, count) in &other.status_counts {
            *self.status_counts.entry(*status).or_default() += count;
        }
        self.errors.add(&other.errors);
        for (kind, message) in &other.first_errors {
            self.first_errors
                .entry(kind.clone())
                .or_insert_with(|| message.clone());
        }
        self.connections_opened += other.connections_opened;
        self.reconnects += other.reconnects;
        self.aborted_in_flight += other.aborted_in_flight;
        self.not_attempted += other.not_attempted;
        if let (Some(mine), Some(theirs)) = (&mut self.open_model, &other.open_model) {
            mine.target_rate += theirs.target_rate;
            mine.sent += theirs.sent;
            mine.late += theirs.late;
            mine.lag_us.add(&theirs.lag_us);
            mine.unsent += theirs.unsent;
        }
        self.cpu.user_s += other.cpu.user_s;
        self.cpu.sys_s += other.cpu.sys_s;
        self.warmup = match (self.warmup.take(), &other.warmup) {
            (Some(mut mine), Some(theirs)) => {
                mine.duration_s = mine.duration_s.max(theirs.duration_s);
                mine.completed += theirs.completed;
                mine.failed += theirs.failed;
                mine.latency_us.add(&theirs.latency_us);
                Some(mine)
            }
            (mine, theirs) => mine.or_else(|| theirs.clone()),
        };
        self.derive_rates();
        Ok(())
    }

    fn derive_rates(&mut self) {
        let per_second = |count: f64| {
            if self.duration_s > 0.0 {
                count / self.duration_s
            } else {
                0.0
            }
        };
        self.requests_per_sec = per_second(self.completed as f64);
        self.body_bytes_per_sec = per_second(self.body_bytes as f64);
        if let Some(open) = &mut self.open_model {
            open.achieved_rate = per_second(open.sent as f64);
        }
        let cpu_s = self.cpu.user_s + self.cpu.sys_s;
        self.cpu.requests_per_cpu_s = if cpu_s > 0.0 {
            self.completed as f64 / cpu_s
        } else {
            0.0
        };
    }

    /// Interrupted beats failed: Ctrl-C is what the user asked for.
    pub fn outcome(&self) -> Outcome {
        if self.interrupted {
            return Outcome::Interrupted;
        }
        if self.failed == 0 {
            return Outcome::Success;
        }
        let attempts = self.completed + self.failed;
        let mut line = format!(
            "{} of {attempts} requests failed ({})",
            self.failed,
            self.errors.transport_breakdown()
        );
        if self.not_attempted > 0 {
            let _ = write!(
                line,
                "; {} more never attempted: the server stayed unreachable",
                self.not_attempted
            );
        }
        if let Some((kind, message)) = self
            .first_errors
            .iter()
            .find(|(kind, _)| *kind != "bad_status")
        {
            let _ = write!(line, "; first {kind} error: {message}");
        }
        Outcome::Failed(line)
    }
}

impl ErrorCounts {
    pub(crate) fn transport_failures(&self) -> u64 {
        self.connect + self.tls + self.reset + self.timeout + self.protocol
    }

    fn add(&mut self, other: &ErrorCounts) {
        self.connect += other.connect;
        self.tls += other.tls;
        self.reset += other.reset;
        self.timeout += other.timeout;
        self.protocol += other.protocol;
        self.bad_status += other.bad_status;
    }

    fn pairs(&self) -> [(ErrorKind, u64); 6] {
        [
            (ErrorKind::Connect, self.connect),
            (ErrorKind::Tls, self.tls),
            (ErrorKind::Reset, self.reset),
            (ErrorKind::Timeout, self.timeout),
            (ErrorKind::Protocol, self.protocol),
            (ErrorKind::BadStatus, self.bad_status),
        ]
    }

    fn transport_breakdown(&self) -> String {
        self.pairs()
            .iter()
            .filter(|(kind, count)| *count > 0 && *kind != ErrorKind::BadStatus)
            .map(|(kind, count)| format!("{} {count}", kind.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Model::Closed => "closed",
            Model::Open => "open",
        })
    }
}

fn ms(micros: u64) -> String {
    format!("{:.2} ms", micros as f64 / 1000.0)
}

fn percentiles(histogram: &Micros) -> String {
    if histogram.count() == 0 {
        return "none".to_string();
    }
    format!(
        "p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        ms(histogram.quantile(0.5)),
        ms(histogram.quantile(0.9)),
        ms(histogram.quantile(0.99)),
        ms(histogram.quantile(0.999)),
        ms(histogram.max())
    )
}

fn bytes_per_sec(rate: f64) -> String {
    match rate {
        r if r >= 1e9 => format!("{:.2} GB/s", r / 1e9),
        r if r >= 1e6 => format!("{:.2} MB/s", r / 1e6),
        r if r >= 1e3 => format!("{:.2} kB/s", r / 1e3),
        r => format!("{r:.0} B/s"),
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let from = match self.model {
            Model::Closed => "closed model: from actual send",
            Model::Open => "open model: from intended send, corrected for coordinated omission",
        };
        writeln!(
            f,
            "{} over {}, {} model, {} connections x {} streams, {} threads{}",
            self.url,
            self.proto,
            self.model,
            self.connections,
            self.streams_per_connection,
            self.threads,
            if self.interrupted {
                " (INTERRUPTED: partial results)"
            } else {
                ""
            }
        )?;
        writeln!(
            f,
            "  requests:  {} completed, {} failed in {:.3} s = {:.1} req/s",
            self.completed, self.failed, self.duration_s, self.requests_per_sec
        )?;
        writeln!(
            f,
            "  body:      {} bytes = {}",
            self.body_bytes,
            bytes_per_sec(self.body_bytes_per_sec)
        )?;
        writeln!(f, "  latency:   {} ({from})", percentiles(&self.latency_us))?;
        writeln!(f, "  ttfb:      {}", percentiles(&self.ttfb_us))?;
        if self.tcp_connect_us.count() > 0 {
            writeln!(f, "  tcp:       {}", percentiles(&self.tcp_connect_us))?;
        }
        writeln!(f, "  handshake: {}", percentiles(&self.handshake_us))?;
        writeln!(
            f,
            "  conns:     {} opened, {} reconnects, {} requests cut off in flight, {} never attempted",
            self.connections_opened, self.reconnects, self.aborted_in_flight, self.not_attempted
        )?;
        let statuses: Vec<String> = self
            .status_counts
            .iter()
            .map(|(status, count)| format!("{status} x{count}"))
            .collect();
        writeln!(
            f,
            "  status:    {}",
            if statuses.is_empty() {
                "none".to_string()
            } else {
                statuses.join(", ")
            }
        )?;
        let errors: Vec<String> = self
            .errors
            .pairs()
            .iter()
            .filter(|(_, count)| *count > 0)
            .map(|(kind, count)| format!("{} {count}", kind.name()))
            .collect();
        writeln!(
            f,
            "  errors:    {}",
            if errors.is_empty() {
                "none".to_string()
            } else {
                errors.join(", ")
            }
        )?;
        for (kind, message) in &self.first_errors {
            writeln!(f, "    first {kind}: {message}")?;
        }
        if let Some(open) = &self.open_model {
            writeln!(
                f,
                "  pacing:    target {:.1} req/s, sent {} = {:.1} req/s, {} late (>1 ms; lag {}), {} never sent",
                open.target_rate,
                open.sent,
                open.achieved_rate,
                open.late,
                percentiles(&open.lag_us),
                open.unsent
            )?;
        }
        writeln!(
            f,
            "  cpu:       user {:.3} s + sys {:.3} s = {:.0} requests per CPU-second",
            self.cpu.user_s, self.cpu.sys_s, self.cpu.requests_per_cpu_s
        )?;
        if let Some(warmup) = &self.warmup {
            writeln!(
                f,
                "  warm-up:   {:.3} s excluded: {} completed, {} failed, latency {}",
                warmup.duration_s,
                warmup.completed,
                warmup.failed,
                percentiles(&warmup.latency_us)
            )?;
        }
        Ok(())
    }
}
