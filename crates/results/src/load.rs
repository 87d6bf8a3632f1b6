//! The result of a load run: one versioned, mergeable JSON document
//! (`h3lab.load/1`, see docs/load-schema.md) and its text rendering.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use crate::histogram::Micros;
use crate::vocab::{ErrorKind, Proto};

mod workers;

pub use workers::{merge_workers, Clock, Shard, Timeline, Worker, WorkerRow};

/// Open-model sends later than this at the median, in µs, put the
/// generator's own delay into the latencies (see [`LoadReport::pacing_warning`]).
pub const LAG_P50_BOUND_US: u64 = 20;
/// The same bound at the 99th percentile, in µs.
pub const LAG_P99_BOUND_US: u64 = 100;
/// A generator whose threads were busy this share of the run had no CPU to spare.
const BUSY_GENERATOR: f64 = 0.8;

/// Schema identifier of a [`LoadReport`].
pub const LOAD_SCHEMA: &str = "h3lab.load/1";

/// Everything one run (or several merged runs) measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// Schema identifier, always `h3lab.load/1`.
    pub schema: String,
    /// The target URL.
    pub url: String,
    /// The protocol used.
    pub proto: Proto,
    /// `closed` (connections x streams loop) or `open` (fixed rate).
    pub model: Model,
    /// Number of connections.
    pub connections: usize,
    /// Streams per connection.
    pub streams_per_connection: usize,
    /// Worker threads actually used.
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
    /// Completed responses per second (`completed` / `duration_s`).
    pub requests_per_sec: f64,
    /// Body bytes per second (`body_bytes` / `duration_s`).
    pub body_bytes_per_sec: f64,
    /// Request start (open model: intended start) to last body byte.
    pub latency_us: Micros,
    /// Request start (open model: intended start) to response head.
    pub ttfb_us: Micros,
    /// The origin's share of each response, where the server (an edge)
    /// said how long it waited for its origin; absent when no response did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_leg: Option<OriginLeg>,
    /// TCP handshake of each connection opened, in µs (empty for h3).
    pub tcp_connect_us: Micros,
    /// TLS handshake after TCP, or the whole QUIC handshake.
    pub handshake_us: Micros,
    /// Number of responses per HTTP status code.
    pub status_counts: BTreeMap<u16, u64>,
    /// Failed attempts and error statuses, counted by kind.
    pub errors: ErrorCounts,
    /// The first message seen for each error kind.
    pub first_errors: BTreeMap<String, String>,
    /// Connections made, warm-up ones included.
    pub connections_opened: u64,
    /// Under `--proto auto`: those connections by the protocol each ended
    /// on (`h2`, `h3`); absent otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub connections_by_protocol: BTreeMap<String, u64>,
    /// Under `--proto auto`: the first call, the one request sent before
    /// the run; absent otherwise, and in a merged report whose runs'
    /// first calls differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_call: Option<FirstCall>,
    /// Connections re-opened after the peer closed or broke one.
    pub reconnects: u64,
    /// Requests cut off by the end of a timed run or by Ctrl-C.
    pub aborted_in_flight: u64,
    /// Closed model with -n: requests never attempted because the run was
    /// interrupted or the server stayed unreachable (every connection gave
    /// up after 5 failed connects in a row).
    pub not_attempted: u64,
    /// Pacing figures; `None` in the closed model.
    pub open_model: Option<OpenModel>,
    /// CPU time of the load generator's worker threads.
    pub cpu: Cpu,
    /// With `--linger`: how long the client held out before each wait,
    /// and how its reads were timed; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batching: Option<Batching>,
    /// The excluded warm-up phase; `None` without `--warmup`.
    pub warmup: Option<Warmup>,
    /// Where the run ran and, for a split test, which shard it was;
    /// absent in a merged report (see `workers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<Worker>,
    /// The measured phase second by second, on wall-clock seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// A merged report: one row per merged run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<WorkerRow>,
    /// A merged report with `--allow-partial`: the shards it lacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_shards: Vec<u32>,
}

/// A request's time split between the two legs of an edge, from the
/// `Server-Timing: origin;dur=MS` the edge sent with each response: how
/// long it waited for the origin's response head.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OriginLeg {
    /// Completed responses that carried the edge's origin time.
    pub responses: u64,
    /// The edge's wait for the origin, per response.
    pub origin_wait_us: Micros,
    /// Each of those responses' latency without that wait: the client
    /// leg and the edge's own work.
    pub client_leg_us: Micros,
}

impl OriginLeg {
    /// Adds another run's responses.
    pub fn add(&mut self, other: &OriginLeg) {
        self.responses += other.responses;
        self.origin_wait_us.add(&other.origin_wait_us);
        self.client_leg_us.add(&other.client_leg_us);
    }
}

/// `auto`'s first call: the protocol it went over (h2, unless the target's
/// DNS `HTTPS` record lists h3 and QUIC won the race), and that record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstCall {
    /// The protocol of its response.
    pub protocol: Proto,
    /// The ALPN ids of the target's `HTTPS` record; `None` when DNS gave
    /// none (or was not asked: an IP address, `localhost`, `--resolve`).
    pub https_record_alpn: Option<Vec<String>>,
}

/// How requests are issued: closed loops or a fixed rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    /// Connections x streams loops, each sending its next request when the previous one finished.
    Closed,
    /// Requests due at a fixed rate, latency measured from the intended send time.
    Open,
}

/// Failed attempts and error statuses, counted by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounts {
    /// Connect failures (refused, unreachable, no QUIC answer).
    pub connect: u64,
    /// TLS handshake failures (e.g. untrusted certificate).
    pub tls: u64,
    /// Peer closed or reset the connection or stream (GOAWAY in flight).
    pub reset: u64,
    /// No complete response within `--timeout`.
    pub timeout: u64,
    /// Malformed responses.
    pub protocol: u64,
    /// Responses with status 400 or above (also in `status_counts`).
    pub bad_status: u64,
}

/// Pacing figures of an open-model run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenModel {
    /// Target rate (`--rate`), in requests per second.
    pub target_rate: f64,
    /// Requests sent (measured ones).
    pub sent: u64,
    /// Achieved rate in requests per second (`sent` / `duration_s`).
    pub achieved_rate: f64,
    /// Sent more than 1 ms after their intended time.
    pub late: u64,
    /// How late every measured request left: the generator's own delay,
    /// which the open model's latency includes.
    pub lag_us: Micros,
    /// Due before the end but never sent.
    pub unsent: u64,
}

/// CPU the load generator's worker threads used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    /// User CPU time, in seconds.
    pub user_s: f64,
    /// System CPU time, in seconds.
    pub sys_s: f64,
    /// Completed requests per CPU-second (`completed` / (`user_s` + `sys_s`)).
    pub requests_per_cpu_s: f64,
    /// What drove the connections, since it decides this CPU: `quic`
    /// (quinn-proto on an event loop of h3lab's), `tcp` (epoll and
    /// rustls' sans-I/O client, h1 and h2) or `tokio` (h3lab-client's
    /// connections, `auto` and h3 with `--qlog`). Absent from reports
    /// written before it was recorded, and from a merge of runs that differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
}

/// `--linger`: before each wait, while responses were due, the client
/// held out so that one wake-up read many (as shb batches completions),
/// at less CPU per request; each read was then timed by the kernel's
/// receive stamp (its last segment's arrival), not by when the client got
/// to it: exact for a response whose end ends a read, an upper bound
/// within the linger for what a read holds before its end (several h2
/// responses; a first byte read with the rest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Batching {
    /// The longest hold before a wait, in µs.
    pub linger_us: u64,
    /// Socket reads timed by their receive stamp.
    pub timestamped_reads: u64,
    /// Socket reads the kernel gave no stamp (or one a clock step made
    /// unbelievable): timed when read, so their responses' times include
    /// the hold.
    pub untimed_reads: u64,
}

impl Batching {
    /// Two runs' (shards', workers') batching as one; their lingers are
    /// the same (a merge refuses runs whose lingers differ).
    pub fn add(&mut self, other: &Batching) {
        self.timestamped_reads += other.timestamped_reads;
        self.untimed_reads += other.untimed_reads;
    }
}

/// The excluded warm-up phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warmup {
    /// Wall time of the warm-up, in seconds.
    pub duration_s: f64,
    /// Responses received in full during warm-up.
    pub completed: u64,
    /// Attempts that got no complete response during warm-up.
    pub failed: u64,
    /// Request start to last body byte during warm-up, in µs.
    pub latency_us: Micros,
}

/// How a run ended, for the exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every attempt got a complete response.
    Success,
    /// Stopped early by Ctrl-C.
    Interrupted,
    /// One line naming how many attempts failed, by kind.
    Failed(String),
}

impl LoadReport {
    /// Reads a report written with `--json`.
    pub fn from_json(text: &str) -> anyhow::Result<LoadReport> {
        let report: LoadReport = serde_json::from_str(text).context("not an h3lab load report")?;
        if report.schema != LOAD_SCHEMA {
            bail!(
                "report schema is `{}`, this h3lab reads `{LOAD_SCHEMA}`",
                report.schema
            );
        }
        Ok(report)
    }

    /// Serializes the report as one line of JSON, which a log keeps whole.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).expect("a report always serializes")
    }

    /// Serializes the report as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    /// Combines runs that loaded the same target side by side (e.g. from
    /// several machines): counts and histograms add up, the duration is
    /// the longest one, rates are recomputed from the totals.
    pub fn merge(&mut self, other: &LoadReport) -> anyhow::Result<()> {
        if other.url != self.url {
            bail!(
                "cannot merge a report on {} into one on {}: merge runs against one URL",
                other.url,
                self.url
            );
        }
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
        if let Some(theirs) = &other.origin_leg {
            self.origin_leg.get_or_insert_default().add(theirs);
        }
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
        for (proto, count) in &other.connections_by_protocol {
            *self
                .connections_by_protocol
                .entry(proto.clone())
                .or_default() += count;
        }
        if self.first_call != other.first_call {
            self.first_call = None;
        }
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
        if self.cpu.engine != other.cpu.engine {
            self.cpu.engine = None;
        }
        self.batching = add_optional(self.batching.take(), &other.batching, Batching::add);
        self.warmup = add_optional(self.warmup.take(), &other.warmup, |mine, theirs| {
            mine.duration_s = mine.duration_s.max(theirs.duration_s);
            mine.completed += theirs.completed;
            mine.failed += theirs.failed;
            mine.latency_us.add(&theirs.latency_us);
        });
        self.timeline = add_optional(self.timeline.take(), &other.timeline, Timeline::add);
        self.worker = None;
        self.derive_rates();
        Ok(())
    }

    /// Recomputes the per-second and per-CPU-second rates from the totals.
    pub fn derive_rates(&mut self) {
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

    /// A warning when open-model sends left later than the pacing bounds
    /// ([`LAG_P50_BOUND_US`], [`LAG_P99_BOUND_US`]): the latencies then
    /// include the generator's own delay. It names the likely cause.
    pub fn pacing_warning(&self) -> Option<String> {
        let open = self.open_model.as_ref()?;
        let (p50, p99) = (open.lag_us.quantile(0.5), open.lag_us.quantile(0.99));
        if open.lag_us.count() == 0 || (p50 <= LAG_P50_BOUND_US && p99 <= LAG_P99_BOUND_US) {
            return None;
        }
        let busy = self.busy_share();
        let cause = if busy >= BUSY_GENERATOR {
            format!(
                "its {} threads were busy {:.0} % of the time: no CPU was left to send on \
                 time; lower the rate, or run the generator where it has cores to spare",
                self.threads,
                busy * 100.0
            )
        } else {
            format!(
                "it had CPU to spare, so sends waited for a free stream: all {} connections \
                 x {} streams were busy (a slow or stalled server, or too few of them; raise \
                 -c or -m), or they waited behind the other connections of their thread \
                 ({} per thread; raise --threads)",
                self.connections,
                self.streams_per_connection,
                self.connections.div_ceil(self.threads.max(1))
            )
        };
        Some(format!(
            "warning: requests left {p50} µs (p50) and {p99} µs (p99) after their intended \
             time, beyond the {LAG_P50_BOUND_US} and {LAG_P99_BOUND_US} µs the generator keeps \
             when it can; latency, measured from the intended time, includes that delay. \
             The generator: {cause}"
        ))
    }

    /// Share of the worker threads' wall time they spent on the CPU (0..1).
    pub fn busy_share(&self) -> f64 {
        let thread_seconds = self.duration_s * self.threads as f64;
        (self.cpu.user_s + self.cpu.sys_s) / thread_seconds.max(f64::MIN_POSITIVE)
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
    /// Attempts that got no complete response (every kind but `bad_status`).
    pub fn transport_failures(&self) -> u64 {
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

/// `mine` with `theirs` added, or whichever of the two exists.
fn add_optional<T: Clone>(
    mine: Option<T>,
    theirs: &Option<T>,
    add: impl FnOnce(&mut T, &T),
) -> Option<T> {
    match (mine, theirs) {
        (Some(mut mine), Some(theirs)) => {
            add(&mut mine, theirs);
            Some(mine)
        }
        (mine, theirs) => mine.or_else(|| theirs.clone()),
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

/// `items` joined by commas, or `none`.
fn list_or_none(items: &[String]) -> String {
    match items.is_empty() {
        true => "none".to_string(),
        false => items.join(", "),
    }
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
        self.fmt_connections(f)?;
        self.fmt_outcomes(f)?;
        self.fmt_sending(f)
    }
}

impl LoadReport {
    /// The edge's origin leg, connection set-up and what connections did.
    fn fmt_connections(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(leg) = &self.origin_leg {
            writeln!(
                f,
                "  origin:    {} (the edge's wait, by Server-Timing, {} responses)",
                percentiles(&leg.origin_wait_us),
                leg.responses
            )?;
            writeln!(f, "  rest:      {}", percentiles(&leg.client_leg_us))?;
        }
        if self.tcp_connect_us.count() > 0 {
            writeln!(f, "  tcp:       {}", percentiles(&self.tcp_connect_us))?;
        }
        writeln!(f, "  handshake: {}", percentiles(&self.handshake_us))?;
        writeln!(
            f,
            "  conns:     {} opened, {} reconnects, {} requests cut off in flight, {} never attempted",
            self.connections_opened, self.reconnects, self.aborted_in_flight, self.not_attempted
        )?;
        if !self.connections_by_protocol.is_empty() {
            let by_protocol: Vec<String> = self
                .connections_by_protocol
                .iter()
                .map(|(proto, count)| format!("{proto} x{count}"))
                .collect();
            writeln!(
                f,
                "  auto:      connections over {}",
                by_protocol.join(", ")
            )?;
        }
        if let Some(first) = &self.first_call {
            let record = match &first.https_record_alpn {
                Some(alpn) => format!("DNS HTTPS record alpn={}", alpn.join(",")),
                None => "no DNS HTTPS record".to_string(),
            };
            writeln!(
                f,
                "  auto:      first call over {} ({record})",
                first.protocol
            )?;
        }
        Ok(())
    }

    /// The responses' statuses and the errors, with the first of each kind.
    fn fmt_outcomes(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let statuses: Vec<String> = self
            .status_counts
            .iter()
            .map(|(status, count)| format!("{status} x{count}"))
            .collect();
        writeln!(f, "  status:    {}", list_or_none(&statuses))?;
        let errors: Vec<String> = self
            .errors
            .pairs()
            .iter()
            .filter(|(_, count)| *count > 0)
            .map(|(kind, count)| format!("{} {count}", kind.name()))
            .collect();
        writeln!(f, "  errors:    {}", list_or_none(&errors))?;
        for (kind, message) in &self.first_errors {
            writeln!(f, "    first {kind}: {message}")?;
        }
        Ok(())
    }

    /// The open model's pacing, the client's CPU, the rate over time, the
    /// workers and the warm-up left out.
    fn fmt_sending(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(open) = &self.open_model {
            writeln!(
                f,
                "  pacing:    target {:.1} req/s, sent {} = {:.1} req/s, {} never sent",
                open.target_rate, open.sent, open.achieved_rate, open.unsent
            )?;
            writeln!(
                f,
                "  send lag:  p50 {} µs  p99 {} µs  max {} µs, {} sent more than 1 ms late",
                open.lag_us.quantile(0.5),
                open.lag_us.quantile(0.99),
                open.lag_us.max(),
                open.late
            )?;
        }
        writeln!(
            f,
            "  cpu:       user {:.3} s + sys {:.3} s = {:.0} requests per CPU-second",
            self.cpu.user_s, self.cpu.sys_s, self.cpu.requests_per_cpu_s
        )?;
        if let Some(engine) = &self.cpu.engine {
            writeln!(f, "  engine:    {engine}")?;
        }
        if let Some(batching) = &self.batching {
            let reads = batching.timestamped_reads + batching.untimed_reads;
            writeln!(
                f,
                "  linger:    held out up to {} µs before each wait; {} of {} reads timed by \
                 the kernel's receive stamp{}",
                batching.linger_us,
                batching.timestamped_reads,
                reads,
                if batching.untimed_reads > 0 {
                    " (the others' responses were timed when read, the hold included)"
                } else {
                    ""
                }
            )?;
        }
        if let Some((min, median, max)) = self.timeline.as_ref().and_then(Timeline::full_seconds) {
            writeln!(
                f,
                "  per second: {min} min, {median} median, {max} max completed (whole seconds)"
            )?;
        }
        if !self.workers.is_empty() {
            write!(f, "{}", workers::WorkerTable(self))?;
        }
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
