//! The cell model every view of a run shares: a cell's key and its
//! summary. It sits below the modules that build and draw summaries
//! (`summary`, `page_loads`, `page_data`, `table`, `html`), so none of
//! them needs another for the types alone.

use h3lab_results::bench::{CellRecord, ClientReport, InitialWindows, Replica, SweptSetting};
use h3lab_results::page::{PageReport, PAGE_SCHEMA};
use h3lab_results::WorkloadKind;
use serde::Serialize;

use crate::bottleneck::Bottleneck;
use crate::format::short;
use crate::histogram::LatencySummary;
use crate::stats::SampleStats;
use h3lab_results::difference::{seed_for, Difference};

/// Identifies a cell across repetitions and across runs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CellKey {
    pub profile: String,
    pub workload: String,
    /// The protocol as the report names it; in an A/A run, with its
    /// replica's (`h2`, `h2 again`).
    pub protocol: String,
    pub mode: Option<String>,
    /// In an A/A run, which of the protocol's two runs.
    pub replica: Option<Replica>,
}

impl CellKey {
    /// The cell a record belongs to.
    pub fn of(record: &CellRecord) -> CellKey {
        let protocol = record.protocol.to_string();
        CellKey {
            profile: record.profile.clone(),
            workload: record.workload.clone(),
            protocol: match record.replica {
                Some(replica) => replica.label(&protocol),
                None => protocol,
            },
            mode: record.mode.map(|mode| mode.to_string()),
            replica: record.replica,
        }
    }

    /// In an A/A run, whether `reference` is this B cell's A: the same
    /// condition and protocol, run first.
    pub fn is_replica_a_of(&self, reference: &CellKey) -> bool {
        self.replica == Some(Replica::B)
            && reference.replica == Some(Replica::A)
            && Replica::B.label(&reference.protocol) == self.protocol
            && (&self.profile, &self.workload, &self.mode)
                == (&reference.profile, &reference.workload, &reference.mode)
    }

    /// The same condition measured with another protocol.
    pub fn with_protocol(&self, protocol: &str) -> CellKey {
        CellKey {
            protocol: protocol.to_string(),
            ..self.clone()
        }
    }

    /// The cell in words, `profile/workload/mode/protocol` (`-` for no
    /// mode); it seeds the bootstrap of differences involving the cell.
    pub fn name(&self) -> String {
        let mode = self.mode.as_deref().unwrap_or("-");
        format!(
            "{}/{}/{mode}/{}",
            self.profile, self.workload, self.protocol
        )
    }

    /// The bootstrap seed for comparing this cell with `reference`.
    pub fn seed_against(&self, reference: &CellKey) -> u64 {
        seed_for(&self.name(), &reference.name())
    }

    /// Workload and mode in one label, e.g. `ttfb (0rtt)`.
    pub fn workload_label(&self) -> String {
        match &self.mode {
            Some(mode) => format!("{} ({mode})", self.workload),
            None => self.workload.clone(),
        }
    }
}

/// A failed repetition and its error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    pub repetition: u32,
    pub error: String,
}

/// Everything the report shows about one cell.
#[derive(Debug, Clone, Serialize)]
pub struct CellSummary {
    pub key: CellKey,
    /// What the cell measures; `None` for a cell without records.
    pub kind: Option<WorkloadKind>,
    pub metric: String,
    pub unit: String,
    pub higher_is_better: bool,
    /// The round trip the profile's emulated path adds.
    pub path_rtt_ms: f64,
    /// A field run's: the cell ran over the real path (plus the profile's
    /// emulation, if any), so its round trip is what was measured.
    pub on_real_path: bool,
    /// In a field run, the median round trip the profile's cells measured
    /// over their own connections; `None` when none measured one.
    pub measured_rtt_ms: Option<f64>,
    /// Repetitions recorded, successful or not.
    pub repetitions: usize,
    pub failures: Vec<Failure>,
    /// Repetitions Ctrl-C cut short: neither figures nor failures.
    pub interrupted: Vec<u32>,
    /// Why the server cannot give this cell (no session ticket for a
    /// resumed handshake): neither figures nor a failure.
    pub not_offered: Option<String>,
    /// The swept tunable and value of the cell's row, if it is swept.
    pub sweep: Option<SweptSetting>,
    /// The initial windows the cell's connections started with, when its
    /// successful repetitions all recorded the same.
    pub initial_windows: Option<InitialWindows>,
    /// Statistics of the metric samples of the successful repetitions.
    pub stats: Option<SampleStats>,
    /// The finite metric samples of each successful repetition, what
    /// differences are bootstrapped from.
    pub samples_by_repetition: Vec<Vec<f64>>,
    /// The repetition each entry of `samples_by_repetition` is, so that
    /// two cells' repetitions can be paired (same seed, run back to back);
    /// empty where that is unknown (a cost's figures).
    pub repetition_numbers: Vec<u32>,
    /// True for the suite's baseline protocol.
    pub is_baseline: bool,
    /// Median against the baseline protocol's median in the same
    /// condition, with its interval.
    pub vs_baseline: Option<Difference>,
    /// The protocol `vs_baseline` is against, as the report names it: the
    /// baseline, or in an A/A run this cell's replica A.
    pub reference: Option<String>,
    /// Request latency merged over the successful repetitions.
    pub latency: Option<LatencySummary>,
    /// Behind an edge that says its origin's time: that latency split
    /// between the origin's wait and the rest.
    pub legs: Option<crate::legs::LegsSummary>,
    pub requests: u64,
    pub request_errors: u64,
    /// CPU time ÷ wall time of the successful repetitions, in % of one core.
    pub client_cpu_pct: Option<f64>,
    pub server_cpu_pct: Option<f64>,
    /// The server's CPU over the measured intervals per request and per
    /// GB of response bodies; None when a repetition's server CPU is
    /// unknown, nothing was served, or the CPU is too little for /proc's
    /// 10 ms clock ticks to resolve (under 50 ms in all).
    pub server_cpu_per_request_us: Option<f64>,
    pub server_cpu_per_gb_s: Option<f64>,
    /// The client's CPU over its whole run (start-up included, as the
    /// kernel counted it at exit) per request and per GB of response
    /// bodies; None when nothing was received.
    pub client_cpu_per_request_us: Option<f64>,
    pub client_cpu_per_gb_s: Option<f64>,
    /// What the successful repetitions put on the link, added up; None
    /// when one of them has no count (see `WireCost`).
    pub wire: Option<h3lab_results::bench::WireCost>,
    /// The header blocks the server received and sent in the successful
    /// repetitions, added up; None when one of them has no count.
    pub header_blocks: Option<h3lab_results::bench::HeaderBlocks>,
    /// Each cost a published claim may compare (`measure`), one value per
    /// successful repetition that knows it.
    pub costs_by_repetition: std::collections::BTreeMap<h3lab_results::CostMeasure, Vec<f64>>,
    /// Page cells: the connections a load opened, over the loads the
    /// successful repetitions kept (each keeps its median load); None when
    /// a load does not say.
    pub page_connections: Option<PageConnections>,
    /// Page cells: the requests a load made, the median over the loads the
    /// successful repetitions kept; None when a load does not say.
    pub page_requests: Option<f64>,
    /// What ran short during the successful repetitions' measured
    /// intervals: the figure may be the CPU's, not the protocol's.
    pub bottlenecks: Vec<Bottleneck>,
    /// Data problems found while summarising (dropped samples, unreadable
    /// histograms, mixed metrics); shown beside the figures.
    pub problems: Vec<String>,
}

impl CellSummary {
    pub fn failed(&self) -> usize {
        self.failures.len()
    }

    /// What the cell measures, in words (`page load` for a `page` cell);
    /// the metric's name for a cell without records.
    pub fn measure(&self) -> &str {
        match self.kind {
            Some(WorkloadKind::Rps) => "request rate",
            Some(WorkloadKind::Download) if self.metric == "requests_per_s" => "request rate",
            Some(WorkloadKind::Download) => "download time",
            Some(WorkloadKind::Ttfb) => "time to first byte",
            Some(WorkloadKind::Page) => "page load",
            Some(WorkloadKind::Conformance) => "HTTP/3 conformance",
            None => &self.metric,
        }
    }

    /// Behind an edge that says its origin's time: the cell, and its
    /// latency split between the origin's wait and the rest.
    pub fn legs_line(&self) -> Option<(String, String)> {
        let line = self.legs.as_ref()?.line(self.latency.as_ref()?);
        let key = &self.key;
        let title = format!("{} {} {}", key.profile, key.workload_label(), key.protocol);
        Some((title, line))
    }

    /// This cell with `cost` as its figure, lower being better, for a
    /// published claim about it; `None` when no repetition knows it.
    pub fn costing(&self, cost: h3lab_results::CostMeasure) -> Option<CellSummary> {
        let values = self.costs_by_repetition.get(&cost)?;
        Some(CellSummary {
            metric: cost.name().to_string(),
            unit: cost.unit().to_string(),
            higher_is_better: false,
            stats: Some(SampleStats::of(values)?),
            samples_by_repetition: values.iter().map(|value| vec![*value]).collect(),
            repetition_numbers: Vec::new(),
            vs_baseline: None,
            reference: None,
            ..self.clone()
        })
    }

    /// The path's round trip: the emulated one, or on a real path the
    /// measured one (`None` when nothing measured it).
    pub fn round_trip_ms(&self) -> Option<f64> {
        match self.on_real_path {
            true => self.measured_rtt_ms,
            false => Some(self.path_rtt_ms),
        }
    }

    /// What the report says of the path's round trip beside a profile:
    /// `path RTT 20 ms`, or on a real path `measured round trip 21.3 ms`
    /// with the part the profile's emulation adds.
    pub fn round_trip_label(&self) -> String {
        let added = match self.path_rtt_ms > 0.0 {
            true => format!(", {} ms of it emulated", short(self.path_rtt_ms)),
            false => String::new(),
        };
        match (self.on_real_path, self.measured_rtt_ms) {
            (false, _) => format!("path RTT {} ms", short(self.path_rtt_ms)),
            (true, Some(measured)) => format!("measured round trip {} ms{added}", short(measured)),
            (true, None) => format!("round trip not measured{added}"),
        }
    }

    /// For time-to-first-byte cells: the median in round trips of the
    /// path (the unit handshake costs are counted in), where it is known.
    pub fn median_rtts(&self) -> Option<f64> {
        let median = self.stats.as_ref()?.median;
        let rtt = self.round_trip_ms().filter(|rtt| *rtt > 0.0)?;
        (self.kind == Some(WorkloadKind::Ttfb)).then(|| median / rtt)
    }

    /// Failures with the same error, together: `(repetitions, error)` in
    /// order of first occurrence.
    pub fn failures_by_error(&self) -> Vec<(Vec<u32>, &str)> {
        let mut groups: Vec<(Vec<u32>, &str)> = Vec::new();
        for failure in &self.failures {
            match groups.iter_mut().find(|(_, error)| *error == failure.error) {
                Some((repetitions, _)) => repetitions.push(failure.repetition),
                None => groups.push((vec![failure.repetition], &failure.error)),
            }
        }
        groups
    }
}

/// The connections a page load opened: the median over the kept loads, in
/// all and per host (each origin of a replay is a host of its own).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PageConnections {
    pub all: f64,
    pub by_host: std::collections::BTreeMap<String, f64>,
}

/// The page report a page cell's record kept, or why it cannot be read.
pub(crate) fn page_report(record: &CellRecord) -> Result<&PageReport, String> {
    let repetition = record.repetition;
    match &record.client_report {
        None => Err(format!("repetition {repetition} kept no page report")),
        Some(ClientReport::Page(report)) => Ok(report),
        Some(ClientReport::Unreadable(why)) => Err(format!("repetition {repetition}: {why}")),
        Some(_) => Err(format!(
            "repetition {repetition}: its client report is not a {PAGE_SCHEMA} report"
        )),
    }
}
