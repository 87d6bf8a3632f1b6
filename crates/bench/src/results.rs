//! The `results.json` schema (`h3lab.results/1`), documented in
//! `docs/results-schema.md`. One record per cell and repetition; the raw
//! histograms are kept so runs can be merged and re-rendered.

use serde::{Deserialize, Serialize};

/// Schema identifier written into every `results.json`.
pub const RESULTS_SCHEMA: &str = "h3lab.results/1";

/// A whole bench run: what was asked, where it ran, and every cell record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    pub schema: String,
    pub suite: SuiteInfo,
    pub environment: Environment,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// True when the run stopped early (Ctrl-C); the cells present are complete.
    pub interrupted: bool,
    pub cells: Vec<CellRecord>,
    /// Published figures of the study a preset reproduces, shown beside ours.
    #[serde(default)]
    pub studies: Vec<StudyClaim>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SuiteInfo {
    pub name: String,
    pub preset: Option<String>,
    pub description: String,
    pub protocols: Vec<String>,
    pub profiles: Vec<String>,
    pub workloads: Vec<String>,
    pub repetitions: u32,
    pub seed: u64,
    pub warmup_s: f64,
    /// Protocol the relative differences are computed against.
    pub baseline: String,
    pub target: String,
}

/// Conditions that decide results (DESIGN.md, measurement rules).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Environment {
    pub h3lab_version: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cpu_count: usize,
    /// `net.core.rmem_max` etc., as read from /proc/sys.
    pub sysctls: std::collections::BTreeMap<String, String>,
    pub tcp_congestion_control: String,
    pub quic_congestion_control: String,
    pub udp_gso: String,
    pub library_versions: std::collections::BTreeMap<String, String>,
}

/// One cell (profile × workload × protocol [× mode]) and one repetition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellRecord {
    pub profile: String,
    pub workload: String,
    /// `rps`, `download` or `ttfb`.
    pub kind: String,
    pub protocol: String,
    /// ttfb only: `cold`, `resumed` or `0rtt`.
    pub mode: Option<String>,
    pub repetition: u32,
    /// Round-trip time the path adds, in ms (0 on loopback); ttfb is also
    /// reported in multiples of it.
    pub path_rtt_ms: f64,
    pub outcome: Outcome,
    /// The primary figure of this repetition: its samples (one for rps and
    /// download, one per connection for ttfb).
    pub metric: Metric,
    /// Request latency histogram (HdrHistogram V2 + base64, microseconds).
    pub latency_histogram: Option<String>,
    /// Time-to-first-byte histogram (same encoding).
    pub ttfb_histogram: Option<String>,
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
    pub cpu: CpuUse,
    /// The emulated link's statistics for this cell (absent on loopback).
    pub link: Option<serde_json::Value>,
    /// The client's full report (`h3lab.load/1` or a ttfb probe record).
    pub client_report: Option<serde_json::Value>,
    pub elapsed_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    Failed { error: String },
}

/// A named figure with its samples, unit and which direction is better.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Metric {
    /// e.g. `requests_per_s`, `download_s`, `ttfb_ms`.
    pub name: String,
    pub unit: String,
    pub higher_is_better: bool,
    pub samples: Vec<f64>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct CpuUse {
    pub client_s: f64,
    pub server_s: f64,
}

/// A published figure for one protocol in one condition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StudyClaim {
    pub study: String,
    /// What is compared, in words.
    pub label: String,
    pub profile: String,
    pub workload: String,
    pub mode: Option<String>,
    pub unit: String,
    pub higher_is_better: bool,
    /// Published value per protocol (`h1`, `h2`, `h3`).
    pub published: std::collections::BTreeMap<String, f64>,
    /// Why our figure may differ, shown when the direction disagrees.
    pub caveat: String,
}
