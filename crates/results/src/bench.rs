//! The `results.json` schema (`h3lab.results/1`), documented in
//! `docs/results-schema.md`. One record per cell and repetition; the raw
//! histograms are kept so runs can be merged and re-rendered.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::handoff::HandoffRecord;
pub use crate::outcome::Outcome;
use crate::{Proto, TtfbMode, WorkloadKind};

mod client_report;
mod link;
mod wire;

pub use client_report::ClientReport;
pub use link::{
    DirectionRecord, Jitter, JitterShape, LinkRecord, Loss, LossDirection, PathSettings,
    QueueDelay, QueueLimit, Rate, Reorder,
};
pub use wire::{BlockTally, HeaderBlocks, WireCost};

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
    /// Captured pages (HAR) the page workloads replay, with the figures
    /// the capture itself recorded, shown beside ours.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captures: Vec<CapturedPage>,
    /// A field run's target: a server h3lab did not start, over the real
    /// path. Absent for lab runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<FieldRun>,
    /// The network handoffs of a population's mobile groups, run after
    /// the cells.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handoffs: Vec<HandoffRecord>,
}

/// `field`: what a field run measured against, and from where; with the
/// suite as run, so `h3lab bench results.json` runs it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldRun {
    /// The pages and URLs the workloads request.
    pub urls: Vec<String>,
    /// Every host the run talks to, `host:port`, with the addresses it
    /// resolved to (once, before the first cell) or the suite pinned.
    pub resolved: BTreeMap<String, Vec<String>>,
    /// The one address per `host:port` every cell used, as
    /// `host:port:address` (curl's `--resolve`).
    pub pinned: Vec<String>,
    /// What each origin offered, checked before the first cell over the
    /// real path.
    pub origins: Vec<crate::offer::OriginOffer>,
    /// Where the run ran: the suite's `place`, if given, and this
    /// machine's host name.
    pub place: Option<String>,
    /// This machine's host name; null if the kernel did not say.
    pub hostname: Option<String>,
    /// The pause between two cells, in seconds.
    pub pause_s: f64,
    /// The suite file as run (TOML).
    pub suite_toml: String,
}

/// A page workload's HAR and what it recorded on the network it was
/// captured on; null where the HAR does not say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapturedPage {
    /// The workload that replays it.
    pub workload: String,
    /// The HAR file.
    pub har: String,
    /// The tool that wrote it.
    pub tool: String,
    /// The page's URL.
    pub page: String,
    /// Origins, each a host of its own in the replay.
    pub origins: usize,
    /// Responses replayed.
    pub responses: usize,
    /// Of those, the ones the captured page load did not make (its icon, a
    /// prefetch, requests after the load event): not resources of a load.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outside_load: usize,
    /// The protocol the document came over when captured.
    pub protocol: Option<String>,
    /// The recorded load event, ms after the page's start.
    pub on_load_ms: Option<f64>,
    /// The recorded DOMContentLoaded, ms after the page's start.
    pub on_content_load_ms: Option<f64>,
    /// Captured over `http://` and replayed over https, its URLs upgraded
    /// (`upgrade_cleartext`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub upgraded_from_cleartext: bool,
    /// Replayed with every response sent at once, not after its recorded
    /// server think time (`think = "none"`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub without_think_time: bool,
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
    /// An A/A run (`h3lab bench --aa`): every cell ran twice, as replicas
    /// A and B of the same protocol, and every verdict compares B with A.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aa: bool,
    /// The rows of a `server` sweep (`[target.servers]` and `builtin`), in
    /// the sweep's order; empty without one, and left out of the file then.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ServerRow>,
    /// The users a `[population]` suite stands for: its groups, each run
    /// on a profile of its own name; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub population: Option<crate::population::Population>,
    /// What each page workload loads, by workload name (`site small`,
    /// `site DIR`, `har FILE`, `deployed`): page workloads of one site with
    /// different loaders are the same page, whatever their URL. Empty in
    /// files from before it, and without page workloads.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub pages: std::collections::BTreeMap<String, String>,
}

/// A row of a `server` sweep: the server, the QUIC stack under it, and the
/// protocols it offers. A cell of a protocol it does not offer is not run,
/// and the report says "not offered" there, which is not a failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerRow {
    /// The sweep value, as in `[sweep] values`.
    pub name: String,
    /// The QUIC stack it serves h3 with, as the suite names it (`stack =`);
    /// `null` where the suite does not say, or for a server without h3.
    pub stack: Option<String>,
    /// The protocols it offers.
    pub offers: Vec<Proto>,
}

impl ServerRow {
    /// Its stack for a report: the name given, or why there is none.
    pub fn stack_text(&self) -> &str {
        match (&self.stack, self.offers.contains(&Proto::H3)) {
            (Some(stack), _) => stack,
            (None, true) => "not given",
            (None, false) => "none",
        }
    }
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
    /// Where the two ends of plain-loopback cells ran ("server on CPU 0,
    /// client on CPU 1", or "shared (...)" when the CPUs cannot be split).
    /// `None` without loopback cells, and in runs written before it was
    /// recorded; left out of the file then, so older files read and write
    /// back unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loopback_cpus: Option<String>,
}

/// The swept tunable a [`StudyClaim`] is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimSweep {
    /// The tunable's name, as in `[sweep] tunable`.
    pub tunable: String,
    /// The value every other published value is compared against.
    pub baseline: String,
}

/// The topology of a cell with an edge: the edge, how it reached the
/// origin, and the origin's leg.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EdgeRecord {
    /// The edge's name in the suite (`[target.edges.NAME]`).
    pub name: String,
    /// Which server it was: `h3lab`, `nginx`, `haproxy` or `caddy`.
    pub server: String,
    /// Its version, where h3lab can read it; `null` when it cannot.
    pub version: Option<String>,
    /// The protocol from the edge to the origin (`h1` or `h2`).
    pub origin_protocol: Proto,
    /// Which requests it forwarded: `all` or `documents`.
    pub forward: String,
    /// The built-in edge's `tuning:` lines (upstream settings included);
    /// empty for the other servers, whose settings docs/edge.md lists.
    #[serde(default)]
    pub settings: std::collections::BTreeMap<String, String>,
    /// The edge–origin link: its statistics and settings (up is edge to
    /// origin).
    pub origin_link: Option<LinkRecord>,
    /// The built-in origin's Prometheus metrics (as `server_metrics`);
    /// `None` for an origin a command started.
    #[serde(default)]
    pub origin_metrics: Option<std::collections::BTreeMap<String, f64>>,
}

/// A `[sweep]` value a cell's server ran with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweptSetting {
    /// The tunable's name, e.g. `cc` or `quic_initial_window`.
    pub tunable: String,
    /// Its value as the server's flag took it (sizes in bytes).
    pub value: String,
}

impl SweptSetting {
    /// The row's workload name, `rps-1KB [cc=bbr]`: each value of a swept
    /// workload is a row of its own in results and reports.
    pub fn row_label(&self, workload: &str) -> String {
        format!("{workload} [{}={}]", self.tunable, self.value)
    }
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
    /// What the workload measures.
    pub kind: WorkloadKind,
    /// Protocol of the cell.
    pub protocol: Proto,
    /// ttfb only: how each connection starts.
    pub mode: Option<TtfbMode>,
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
    pub link: Option<LinkRecord>,
    /// The client's full report (`h3lab.load/1`, `h3lab.ttfb/2` or
    /// `h3lab.page/1`); `null` when the client wrote none, or wrote one
    /// this version cannot read.
    pub client_report: Option<ClientReport>,
    /// The built-in server's Prometheus metrics, scraped after the client's
    /// run: each sample as `name{labels}` → value, histogram buckets left
    /// out (docs/metrics.md). `None` for a server started by `server_cmd`,
    /// and in runs written before metrics were recorded.
    #[serde(default)]
    pub server_metrics: Option<std::collections::BTreeMap<String, f64>>,
    /// Wall time of the repetition, in seconds.
    pub elapsed_s: f64,
    /// The initial congestion windows the cell's connections started
    /// with, as far as h3lab knows them (absent in results from before
    /// they were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_windows: Option<InitialWindows>,
    /// Page cells: how many connections each load used, in load order;
    /// absent when the loader did not say for every resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_per_load: Option<Vec<u32>>,
    /// What the path's DNS server published for the site: `a` (its
    /// address alone) or `https:IDS` (an `HTTPS` record with those ALPN
    /// ids too). Absent without a DNS server: clients used the address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<String>,
    /// The path's round trip as the cell's own connections measured it
    /// (the median of TCP_INFO's or QUIC's estimate just after each
    /// handshake): on a real path, what it was during this cell. Absent
    /// when the client could not tell (Chromium, load runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_rtt_ms: Option<f64>,
    /// What the cell's traffic cost on the emulated link; absent where a
    /// count it needs is unknown (loopback, field runs, a server without
    /// h3lab's metrics) and in older runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<WireCost>,
    /// The header blocks the server received and sent; absent without
    /// h3lab's server metrics, and in older runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_blocks: Option<HeaderBlocks>,
    /// In an A/A run (`h3lab bench --aa`), which of the cell's two
    /// identical runs this is; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<Replica>,
    /// The edge the client reached, in front of the target (the origin),
    /// in a cell of an `edge` sweep; absent when the client reached the
    /// target itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge: Option<EdgeRecord>,
    /// What the server's h3 does, as `h3lab probe offer` found it before
    /// the first h3 cell of each row of a `server` sweep (docs/servers.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h3_features: Option<crate::offer::H3Features>,
}

/// One of the two identical runs of a cell in an A/A run: same protocol,
/// server, path and seed, run back to back, so any verdict between them
/// is a false one (docs/statistics.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replica {
    /// The first run: the reference.
    A,
    /// The second run, compared with the first.
    B,
}

impl Replica {
    /// How the report names a protocol's side: `h2` for A, `h2 again`
    /// for B.
    pub fn label(self, protocol: &str) -> String {
        match self {
            Replica::A => protocol.to_string(),
            Replica::B => format!("{protocol} again"),
        }
    }
}

/// `cells[].initial_windows`: what each transport's connections started
/// with. Short transfers (a page, a first byte) depend on them more than
/// on the protocol, so a verdict must say which it ran with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitialWindows {
    /// TCP (h1, h2), in segments: the emulated path's route `initcwnd`
    /// when the suite set one, else Linux's 10 (`TCP_INIT_CWND`); `null`
    /// on loopback, whose routes h3lab does not own.
    pub tcp_segments: Option<u32>,
    /// Whether the suite set `tcp_segments` (`[target] initial_window` or
    /// an `initial_window` sweep) rather than leaving the kernel's.
    pub tcp_set: bool,
    /// QUIC (h3), in bytes, as the built-in server printed it; `null` for a
    /// server command, which does not say (docs/tuning.md lists the
    /// common stacks' own).
    pub quic_bytes: Option<u64>,
}

impl InitialWindows {
    /// The QUIC datagram an initial window in packets is counted in: a
    /// full-sized one on a 1,500-byte MTU path (1,500 − 20 IP − 8 UDP), as
    /// RFC 9002's 10 datagrams of 1,472 B give its 14,720 B.
    pub const QUIC_PACKET_BYTES: u64 = 1472;
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
    /// For a claim about what a cell costs: the cost compared instead of
    /// the workload's own figure (lower is better).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure: Option<crate::CostMeasure>,
    /// Why our figure may differ, shown when the direction disagrees.
    pub caveat: String,
}

/// Server CPU below which a per-unit figure is not given: /proc counts CPU
/// in clock ticks of 10 ms, so 50 ms is known to ±20 %.
pub const SERVER_CPU_RESOLVED_S: f64 = 0.05;

impl crate::CostMeasure {
    /// This cost in one repetition, where its counts are known.
    pub fn of(self, record: &CellRecord) -> Option<f64> {
        use crate::CostMeasure::*;
        let wire = record.wire;
        let per_mb = |bytes: u64| {
            let body = wire?.body_bytes;
            (body > 0).then(|| bytes as f64 * 1e6 / body as f64)
        };
        match self {
            RequestHeaderBytes => record.header_blocks?.request_later.mean(),
            OverheadPerRequest => wire?.overhead_per_request(),
            WireBytesPerMb => per_mb(wire?.total_bytes()),
            ResentPerMb => wire?.resent_per_mb(),
            ServerCpuPerRequest => {
                let cpu = record.cpu.server_interval_s?;
                let resolved = cpu.is_finite() && cpu >= SERVER_CPU_RESOLVED_S;
                (resolved && record.requests > 0).then(|| cpu * 1e6 / record.requests as f64)
            }
        }
    }
}

fn is_zero<N: Default + PartialEq>(n: &N) -> bool {
    *n == N::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `results.json` as `h3lab bench` wrote it before these types were
    /// typed: every workload kind and ttfb mode, a failed record, a swept
    /// setting, loopback and emulated cells, Bernoulli and Gilbert loss,
    /// jitter and a queue limit. Its client reports are real ones, of each
    /// cell's kind and protocol, from a run of the `default` preset.
    const WRITTEN: &str = include_str!("../tests/data/results-written.json");

    #[test]
    fn a_written_results_file_reads_and_writes_back_byte_for_byte() {
        let results: Results = serde_json::from_str(WRITTEN).unwrap();
        let mut again = serde_json::to_string_pretty(&results).unwrap();
        again.push('\n');
        assert!(again == WRITTEN, "results.json changed on a round trip");
    }

    #[test]
    fn the_typed_fields_read_what_was_written() {
        let results: Results = serde_json::from_str(WRITTEN).unwrap();
        let ttfb = results
            .cells
            .iter()
            .find(|c| c.mode == Some(TtfbMode::ZeroRtt))
            .unwrap();
        assert_eq!((ttfb.kind, ttfb.protocol), (WorkloadKind::Ttfb, Proto::H3));
        let bursty = results
            .cells
            .iter()
            .find(|c| c.profile == "bursty")
            .unwrap();
        let settings = bursty.link.as_ref().unwrap().settings.as_ref().unwrap();
        assert_eq!(settings.loss_direction, LossDirection::Both);
        assert!(matches!(settings.loss, Loss::Gilbert { r, .. } if r == 0.3));
        assert_eq!(settings.queue, Some(QueueLimit::Packets(100)));
        assert_eq!(
            settings.jitter,
            Some(Jitter {
                amount_ns: 3_000_000,
                shape: JitterShape::Normal
            })
        );
        let cellular = results
            .cells
            .iter()
            .find(|c| c.profile == "cellular")
            .unwrap();
        let settings = cellular.link.as_ref().unwrap().settings.as_ref().unwrap();
        assert_eq!(settings.loss, Loss::Bernoulli { p: 0.01 });
        assert_eq!(
            settings.down,
            Rate::Fixed {
                bits_per_sec: 50_000_000
            }
        );
        assert!(results.cells.iter().any(|c| c.kind == WorkloadKind::Page));
    }

    #[test]
    fn client_reports_are_read_as_the_type_their_schema_names() {
        let results: Results = serde_json::from_str(WRITTEN).unwrap();
        let mut kinds = std::collections::BTreeSet::new();
        for cell in &results.cells {
            let Some(report) = &cell.client_report else {
                continue;
            };
            let kind = match report {
                ClientReport::Load(load) => {
                    assert!(load.completed > 0);
                    WorkloadKind::Rps
                }
                ClientReport::Ttfb(ttfb) => {
                    assert_eq!(ttfb.proto, cell.protocol);
                    WorkloadKind::Ttfb
                }
                ClientReport::Page(page) => {
                    assert_eq!(page.loads.len(), 1, "the median load is kept");
                    WorkloadKind::Page
                }
                ClientReport::Conformance(report) => {
                    assert!(report.is_complete());
                    WorkloadKind::Conformance
                }
                ClientReport::Unreadable(why) => panic!("{why}"),
            };
            let expected = match cell.kind {
                WorkloadKind::Download => WorkloadKind::Rps,
                kind => kind,
            };
            assert_eq!(kind, expected, "{:?} {:?}", cell.kind, cell.protocol);
            kinds.insert(kind);
        }
        assert_eq!(kinds.len(), 3, "{kinds:?}");
    }

    /// A report of another schema, or of one this version reads but in a
    /// shape it does not, leaves the file readable; the report is unknown,
    /// so it is said why and written back as null, not guessed at.
    #[test]
    fn a_client_report_this_version_cannot_read_is_kept_as_why() {
        let mut value: serde_json::Value = serde_json::from_str(WRITTEN).unwrap();
        let cells = value["cells"].as_array_mut().unwrap();
        cells[0]["client_report"] = serde_json::json!({"schema": "h3lab.load/9", "rate": 1});
        cells[1]["client_report"] = serde_json::json!({"schema": "h3lab.load/1", "zeta": [1.5]});
        cells[2]["client_report"] = serde_json::json!({"completed": 3});
        let results: Results = serde_json::from_value(value).unwrap();
        let why = |index: usize| {
            let report = results.cells[index].client_report.as_ref().unwrap();
            report.unreadable().unwrap().to_string()
        };
        assert!(why(0).contains("h3lab.load/9"), "{}", why(0));
        assert!(why(1).contains("missing field"), "{}", why(1));
        assert!(why(2).contains("no schema"), "{}", why(2));
        let written = serde_json::to_value(&results).unwrap();
        for index in 0..3 {
            assert!(written["cells"][index]["client_report"].is_null());
        }
    }

    #[test]
    fn a_newer_files_unknown_link_fields_are_read_past() {
        let mut value: serde_json::Value = serde_json::from_str(WRITTEN).unwrap();
        let cell = value["cells"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|c| !c["link"].is_null())
            .unwrap();
        let as_written: LinkRecord = serde_json::from_value(cell["link"].clone()).unwrap();
        cell["link"]["settings"]["future"] = serde_json::json!({"a": 1});
        cell["link"]["future"] = serde_json::json!(2);
        let read: LinkRecord = serde_json::from_value(cell["link"].clone()).unwrap();
        assert_eq!(read, as_written);
    }
}
