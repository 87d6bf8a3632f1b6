//! The `results.json` schema (`h3lab.results/1`), documented in
//! `docs/results-schema.md`. One record per cell and repetition; the raw
//! histograms are kept so runs can be merged and re-rendered.

use serde::{Deserialize, Serialize};

/// Schema identifier written into every `results.json`.
pub const RESULTS_SCHEMA: &str = "h3lab.results/1";

/// A whole bench run: what was asked, where it ran, and every cell record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    /// Schema identifier, always `h3lab.results/1`.
    pub schema: String,
    /// What was asked: the suite that was run.
    pub suite: SuiteInfo,
    /// The conditions the run ran under.
    pub environment: Environment,
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// When the run ended (RFC 3339, UTC); `None` if it never finished.
    pub finished_at: Option<String>,
    /// True when the run stopped early (Ctrl-C); the cells present are complete.
    pub interrupted: bool,
    /// One record per cell and repetition, in run order.
    pub cells: Vec<CellRecord>,
    /// Published figures of the study a preset reproduces, shown beside ours.
    #[serde(default)]
    pub studies: Vec<StudyClaim>,
}

/// What was asked: the suite's name, matrix, repetitions and baseline.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SuiteInfo {
    /// Suite name.
    pub name: String,
    /// The preset the suite came from, if any.
    pub preset: Option<String>,
    /// What the suite measures, in words.
    pub description: String,
    /// Protocols run (`h1`, `h2`, `h3`), in display order.
    pub protocols: Vec<String>,
    /// Network profiles, in display order.
    pub profiles: Vec<String>,
    /// Workload names, in display order.
    pub workloads: Vec<String>,
    /// Repetitions asked per cell.
    pub repetitions: u32,
    /// Emulator seed: the same seed gives the same loss and jitter decisions for TCP and QUIC.
    pub seed: u64,
    /// Warm-up per repetition in seconds, excluded from the figures.
    pub warmup_s: f64,
    /// Protocol the relative differences are computed against.
    pub baseline: String,
    /// The server under test, in words.
    pub target: String,
}

/// Conditions that decide results (DESIGN.md, measurement rules).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Environment {
    /// Version of the h3lab binary.
    pub h3lab_version: String,
    /// Kernel release.
    pub kernel: String,
    /// CPU model.
    pub cpu_model: String,
    /// Number of logical CPUs.
    pub cpu_count: usize,
    /// `net.core.rmem_max` etc., as read from /proc/sys.
    pub sysctls: std::collections::BTreeMap<String, String>,
    /// The kernel's TCP congestion controller.
    pub tcp_congestion_control: String,
    /// The QUIC stack's congestion controller.
    pub quic_congestion_control: String,
    /// UDP GSO/GRO state.
    pub udp_gso: String,
    /// Versions of the protocol libraries (quinn, h3, hyper, rustls, ...).
    pub library_versions: std::collections::BTreeMap<String, String>,
    /// The built-in server's settings that decide results, as it printed
    /// them at start (`tuning: NAME = VALUE`; docs/tuning.md). `None` for a
    /// server started by `server_cmd`, whose settings h3lab cannot know, and
    /// in runs written before it was recorded.
    #[serde(default)]
    pub server_tuning: Option<std::collections::BTreeMap<String, String>>,
}

/// The swept tunable a [`StudyClaim`] is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimSweep {
    /// The tunable's name, as in `[sweep] tunable`.
    pub tunable: String,
    /// The value every other published value is compared against.
    pub baseline: String,
}

/// A `[sweep]` value a cell's server ran with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweptSetting {
    /// The tunable's name, e.g. `cc` or `quic_initial_window`.
    pub tunable: String,
    /// Its value as the server's flag took it (sizes in bytes).
    pub value: String,
}

/// One cell (profile × workload × protocol [× mode]) and one repetition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellRecord {
    /// Network profile of the cell.
    pub profile: String,
    /// Workload of the cell; a swept workload's name carries its setting,
    /// e.g. `rps-1KB [cc=bbr]`, so that each setting is a row of its own.
    pub workload: String,
    /// The swept tunable and the value this cell's server ran with (`null`
    /// when the workload is not swept; absent in results from before sweeps).
    #[serde(default)]
    pub sweep: Option<SweptSetting>,
    /// `rps`, `download` or `ttfb`.
    pub kind: String,
    /// Protocol of the cell (`h1`, `h2`, `h3`).
    pub protocol: String,
    /// ttfb only: `cold`, `resumed` or `0rtt`.
    pub mode: Option<String>,
    /// 0-based repetition number.
    pub repetition: u32,
    /// Round-trip time the path adds, in ms (0 on loopback); ttfb is also
    /// reported in multiples of it.
    pub path_rtt_ms: f64,
    /// Whether the repetition succeeded; failed records carry no samples.
    pub outcome: Outcome,
    /// The primary figure of this repetition: its samples (one for rps and
    /// download, one per connection for ttfb).
    pub metric: Metric,
    /// Request latency histogram (HdrHistogram V2 + base64, microseconds).
    pub latency_histogram: Option<String>,
    /// Time-to-first-byte histogram (same encoding).
    pub ttfb_histogram: Option<String>,
    /// Requests completed.
    pub requests: u64,
    /// Requests that failed or got an error status.
    pub errors: u64,
    /// Response body bytes received.
    pub bytes: u64,
    /// CPU seconds used by the load generator and the server.
    pub cpu: CpuUse,
    /// The emulated link's statistics for this cell, and under `settings`
    /// the path's settings, loss direction included (absent on loopback;
    /// records written before the settings were added lack `settings`).
    pub link: Option<serde_json::Value>,
    /// The client's full report (`h3lab.load/1` or a ttfb probe record).
    pub client_report: Option<serde_json::Value>,
    /// The built-in server's Prometheus metrics, scraped after the client's
    /// run: each sample as `name{labels}` → value, histogram buckets left
    /// out (docs/metrics.md). `None` for a server started by `server_cmd`,
    /// and in runs written before metrics were recorded.
    #[serde(default)]
    pub server_metrics: Option<std::collections::BTreeMap<String, f64>>,
    /// Wall time of the repetition, in seconds.
    pub elapsed_s: f64,
}

/// How a repetition ended, tagged by `status` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The repetition completed.
    Ok,
    /// The repetition failed; it carries no samples.
    Failed {
        /// What went wrong.
        error: String,
    },
    /// Ctrl-C stopped the run during the repetition; it carries no samples.
    Interrupted,
}

/// A named figure with its samples, unit and which direction is better.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Metric {
    /// e.g. `requests_per_s`, `download_s`, `ttfb_ms`.
    pub name: String,
    /// Unit of the samples, e.g. `req/s`, `s`, `ms`.
    pub unit: String,
    /// Whether a higher value is an improvement.
    pub higher_is_better: bool,
    /// The values: one for rps and download, one per connection for ttfb.
    pub samples: Vec<f64>,
}

/// CPU time used by one repetition, whole and over its measured interval
/// (the client's run), so a saturated CPU can be told from the protocol.
/// The interval figures are `None` when they could not be read, and in
/// runs written before they were recorded.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct CpuUse {
    /// CPU seconds used by the load generator (its whole run).
    pub client_s: f64,
    /// CPU seconds used by the server (from its start to its stop).
    pub server_s: f64,
    /// Wall seconds of the measured interval: from the client's start to
    /// its exit.
    #[serde(default)]
    pub interval_s: Option<f64>,
    /// CPU seconds the server's processes used during the interval.
    #[serde(default)]
    pub server_interval_s: Option<f64>,
    /// CPU seconds the link emulator's forwarding thread used during the
    /// interval; `None` on loopback.
    #[serde(default)]
    pub emulator_interval_s: Option<f64>,
    /// Share of all the machine's cores busy during the interval, 0 to 1,
    /// from /proc/stat.
    #[serde(default)]
    pub machine_busy: Option<f64>,
}

/// A published figure for one protocol in one condition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StudyClaim {
    /// Which study the figure comes from (studies.md).
    pub study: String,
    /// What is compared, in words.
    pub label: String,
    /// Network profile of our cell it is compared with.
    pub profile: String,
    /// Workload of our cell it is compared with.
    pub workload: String,
    /// ttfb mode of our cell it is compared with, if any.
    pub mode: Option<String>,
    /// Unit of the published values.
    pub unit: String,
    /// Whether a higher published value is better.
    pub higher_is_better: bool,
    /// Published value per protocol (`h1`, `h2`, `h3`), or per value of
    /// the swept tunable when `sweep` is set.
    pub published: std::collections::BTreeMap<String, f64>,
    /// For a claim about a swept tunable (e.g. "BBR gives 18 % more RPS
    /// than Cubic"): the tunable, and the value the others are compared
    /// against. Each protocol of ours is then compared across the values,
    /// in the cells `WORKLOAD [TUNABLE=VALUE]`. Absent for protocol claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<ClaimSweep>,
    /// Why our figure may differ, shown when the direction disagrees.
    pub caveat: String,
}
