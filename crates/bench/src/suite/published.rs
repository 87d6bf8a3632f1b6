//! `[[published]]`: a study's figures, compared with ours in the report.

use h3lab_results::Proto;
use serde::Deserialize;

/// A study's published figure for the cell `profile` × `workload` [× `mode`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PublishedFigure {
    pub(crate) study: String,
    pub(crate) label: String,
    pub(crate) profile: String,
    pub(crate) workload: String,
    /// For a swept workload: the value whose row the protocol figures
    /// describe (e.g. `node` for a study of Node.js servers in a suite that
    /// sweeps `server`).
    pub(crate) row: Option<String>,
    pub(crate) mode: Option<String>,
    pub(crate) unit: String,
    pub(crate) higher_is_better: bool,
    pub(crate) h1: Option<f64>,
    pub(crate) h2: Option<f64>,
    pub(crate) h3: Option<f64>,
    /// A published difference between two protocols, for studies that
    /// give only that (e.g. "h3 loaded 200 ms faster than h2").
    pub(crate) difference: Option<PublishedDifference>,
    /// A claim about the swept tunable instead of the protocols: the
    /// published figure per value (e.g. `{ cubic = 100.0, bbr = 118.0 }`
    /// for "BBR gives 18 % more than Cubic"), compared for each protocol.
    pub(crate) sweep: Option<PublishedSweep>,
    /// A claim about what a cell costs (bytes, CPU): the cost compared
    /// instead of the workload's own figure, lower being better.
    pub(crate) measure: Option<h3lab_results::CostMeasure>,
    /// Why our figure may differ; shown when the direction disagrees.
    pub(crate) caveat: String,
}

/// `subject − other = value` (in the figure's `unit`), as a study published
/// it, e.g. `{ subject = "h3", other = "h2", value = -200.0 }` for "h3
/// loaded 200 ms faster than h2".
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PublishedDifference {
    pub(crate) subject: Proto,
    pub(crate) other: Proto,
    pub(crate) value: f64,
}

/// `sweep = { baseline = "cubic", values = { cubic = 100.0, bbr = 118.0 } }`:
/// the published figure per value of the suite's swept tunable.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PublishedSweep {
    pub(crate) baseline: String,
    pub(crate) values: std::collections::BTreeMap<String, f64>,
}
