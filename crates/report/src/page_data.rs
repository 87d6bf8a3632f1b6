//! The values `report.html` shows, shaped from the results: protocol
//! colours, one violin and one latency CDF per condition, the JSON the
//! page's plots are drawn from, and the emulated link's statistics.
//! `html` lays them out; nothing here writes markup. Page-load cells get
//! their own view (`page_loads`) and are left out of the conditions here.

use std::collections::BTreeMap;

use h3lab_results::bench::{CellRecord, DirectionRecord, Outcome, Results};
use h3lab_results::WorkloadKind;
use serde::Serialize;

use crate::field::DriftPlot;

use crate::cell::{CellKey, CellSummary};
use crate::histogram::cdf_points;
use crate::summary::merged_latency;

/// Colour-blind-safe (Okabe–Ito) colours; h1/h2/h3 always get the same ones.
const KNOWN_COLOURS: [(&str, &str); 3] = [("h1", "#e69f00"), ("h2", "#0072b2"), ("h3", "#009e73")];
const EXTRA_COLOURS: [&str; 5] = ["#cc79a7", "#d55e00", "#56b4e9", "#7f7f7f", "#000000"];

/// Colour of every protocol in the run.
pub(crate) fn protocol_colours(results: &Results) -> BTreeMap<String, String> {
    let mut names: Vec<&str> = results.suite.protocols.iter().map(String::as_str).collect();
    names.extend(results.cells.iter().map(|c| c.protocol.name()));
    let mut colours = BTreeMap::new();
    let mut extra = EXTRA_COLOURS.iter().cycle();
    for name in names {
        if colours.contains_key(name) {
            continue;
        }
        let known = KNOWN_COLOURS
            .iter()
            .find(|(p, _)| *p == name)
            .map(|(_, c)| *c);
        let colour = known.or_else(|| extra.next().copied()).unwrap_or("#000000");
        colours.insert(name.to_string(), colour.to_string());
    }
    colours
}

#[derive(Serialize)]
struct PlotData<'a> {
    colours: &'a BTreeMap<String, String>,
    violins: Vec<&'a ViolinPlot>,
    cdfs: Vec<&'a CdfPlot>,
    cpu_per_gb: Vec<&'a CpuPerGbPlot>,
    drift: &'a [DriftPlot],
}

/// One condition (profile × workload): its violin plot and, when latency
/// histograms exist, its CDF.
pub(crate) struct Condition {
    pub(crate) profile: String,
    pub(crate) workload: String,
    pub(crate) violin: ViolinPlot,
    pub(crate) cdf: Option<CdfPlot>,
    /// Downloads: what a GB cost each protocol's server and client.
    pub(crate) cpu_per_gb: Option<CpuPerGbPlot>,
}

/// Bars of the server's and the client's CPU seconds per GB, side by side
/// for each protocol; an unknown figure is null, drawn as no bar.
#[derive(Serialize)]
pub(crate) struct CpuPerGbPlot {
    pub(crate) id: String,
    title: String,
    protocols: Vec<String>,
    server_s: Vec<Option<f64>>,
    client_s: Vec<Option<f64>>,
}

#[derive(Serialize)]
pub(crate) struct ViolinPlot {
    pub(crate) id: String,
    title: String,
    axis: String,
    grouped: bool,
    traces: Vec<ViolinTrace>,
}

impl ViolinPlot {
    /// An empty plot; `grouped` places one violin per protocol side by
    /// side within each category.
    pub(crate) fn new(id: String, title: String, axis: String, grouped: bool) -> ViolinPlot {
        ViolinPlot {
            id,
            title,
            axis,
            grouped,
            traces: Vec::new(),
        }
    }

    /// Adds one protocol's samples in one category (x axis position).
    pub(crate) fn push(&mut self, protocol: &str, category: &str, samples: Vec<f64>) {
        self.traces.push(ViolinTrace {
            protocol: protocol.to_string(),
            category: category.to_string(),
            samples,
        });
    }

    /// The protocols and categories drawn, in order.
    #[cfg(test)]
    pub(crate) fn trace_names(&self) -> Vec<(&str, &str)> {
        self.traces
            .iter()
            .map(|t| (t.protocol.as_str(), t.category.as_str()))
            .collect()
    }

    /// No successful repetition in the condition, so nothing to draw.
    pub(crate) fn is_empty(&self) -> bool {
        self.traces.is_empty()
    }
}

#[derive(Serialize)]
struct ViolinTrace {
    protocol: String,
    category: String,
    samples: Vec<f64>,
}

#[derive(Serialize)]
pub(crate) struct CdfPlot {
    pub(crate) id: String,
    title: String,
    traces: Vec<CdfTrace>,
}

#[derive(Serialize)]
struct CdfTrace {
    protocol: String,
    name: String,
    latency_ms: Vec<f64>,
    fraction: Vec<f64>,
}

/// The conditions in the order their first cell is summarised; page-load
/// cells are not among them (see `page_loads`).
pub(crate) fn conditions(results: &Results, summaries: &[CellSummary]) -> Vec<Condition> {
    let samples = samples_by_cell(results);
    let histograms = merged_latency(results);
    let mut conditions: Vec<Condition> = Vec::new();
    for summary in summaries
        .iter()
        .filter(|s| s.kind != Some(WorkloadKind::Page))
    {
        let key = &summary.key;
        let index = match conditions
            .iter()
            .position(|c| c.profile == key.profile && c.workload == key.workload)
        {
            Some(index) => index,
            None => {
                conditions.push(new_condition(conditions.len(), summary));
                conditions.len() - 1
            }
        };
        let condition = &mut conditions[index];
        if let Some(samples) = samples.get(key) {
            condition.violin.grouped |= key.mode.is_some();
            condition.violin.traces.push(ViolinTrace {
                protocol: key.protocol.clone(),
                category: key.mode.clone().unwrap_or_else(|| key.protocol.clone()),
                samples: samples.clone(),
            });
        }
        let costs = (summary.server_cpu_per_gb_s, summary.client_cpu_per_gb_s);
        if summary.kind == Some(WorkloadKind::Download) && costs != (None, None) {
            let plot = condition.cpu_per_gb.get_or_insert_with(|| CpuPerGbPlot {
                id: format!("cpu-{index}"),
                title: format!("{} · {}: CPU per GB", key.profile, key.workload),
                protocols: Vec::new(),
                server_s: Vec::new(),
                client_s: Vec::new(),
            });
            plot.protocols.push(key.protocol.clone());
            plot.server_s.push(costs.0);
            plot.client_s.push(costs.1);
        }
        if let Some((_, histogram)) = histograms.iter().find(|(k, _)| k == key) {
            let (latency_ms, fraction) = cdf_points(histogram).into_iter().unzip();
            let cdf = condition.cdf.get_or_insert_with(|| CdfPlot {
                id: format!("cdf-{index}"),
                title: format!("{} · {}: request latency CDF", key.profile, key.workload),
                traces: Vec::new(),
            });
            cdf.traces.push(CdfTrace {
                protocol: key.protocol.clone(),
                name: key.mode.as_ref().map_or_else(
                    || key.protocol.clone(),
                    |mode| format!("{} {mode}", key.protocol),
                ),
                latency_ms,
                fraction,
            });
        }
    }
    conditions
}

fn new_condition(index: usize, summary: &CellSummary) -> Condition {
    let key = &summary.key;
    let direction = if summary.higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    };
    Condition {
        profile: key.profile.clone(),
        workload: key.workload.clone(),
        violin: ViolinPlot::new(
            format!("violin-{index}"),
            format!("{} · {}: {}", key.profile, key.workload, summary.metric),
            format!("{} ({direction})", summary.unit),
            false,
        ),
        cdf: None,
        cpu_per_gb: None,
    }
}

/// Finite metric samples of the successful repetitions, per cell.
pub(crate) fn samples_by_cell(results: &Results) -> BTreeMap<CellKey, Vec<f64>> {
    let mut samples: BTreeMap<CellKey, Vec<f64>> = BTreeMap::new();
    for record in results.cells.iter().filter(|r| r.outcome == Outcome::Ok) {
        let key = CellKey::of(record);
        let finite = record
            .metric
            .samples
            .iter()
            .copied()
            .filter(|v| v.is_finite());
        samples.entry(key).or_default().extend(finite);
    }
    samples
}

/// The plots' data as JSON to embed in the page: the conditions' plots
/// and `more_violins` (the page-load ones). Conditions without a
/// successful repetition get no violin rather than an empty one.
pub(crate) fn plot_data_json<'a>(
    colours: &'a BTreeMap<String, String>,
    conditions: &'a [Condition],
    more_violins: impl IntoIterator<Item = &'a ViolinPlot>,
    drift: &'a [DriftPlot],
) -> String {
    embedded_json(&PlotData {
        colours,
        violins: conditions
            .iter()
            .map(|c| &c.violin)
            .chain(more_violins)
            .filter(|v| !v.is_empty())
            .collect(),
        cdfs: conditions.iter().filter_map(|c| c.cdf.as_ref()).collect(),
        cpu_per_gb: conditions
            .iter()
            .filter_map(|c| c.cpu_per_gb.as_ref())
            .collect(),
        drift,
    })
}

/// JSON safe inside a `<script>` element: `<`, `>` and `&` only occur in
/// strings, where their `\u` escapes mean the same.
fn embedded_json(value: &impl Serialize) -> String {
    serde_json::to_string(value)
        .expect("plot data holds only strings, finite numbers and string-keyed maps")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// What the emulated link did to one cell's packets.
pub(crate) struct LinkRow<'a> {
    pub(crate) cell: &'a CellRecord,
    pub(crate) seed: u64,
    /// Server to client.
    pub(crate) down: LinkDirection,
    pub(crate) up: LinkDirection,
}

/// One direction's counters.
pub(crate) struct LinkDirection {
    pub(crate) packets_in: u64,
    pub(crate) packets_out: u64,
    /// Configured loss as a share of the packets offered; `None` when
    /// nothing was offered.
    pub(crate) loss_pct: Option<f64>,
    pub(crate) dropped_queue: u64,
    pub(crate) queue_delay_p99_ms: f64,
}

impl LinkDirection {
    fn of(stats: &DirectionRecord) -> Self {
        LinkDirection {
            packets_in: stats.packets_in,
            packets_out: stats.packets_out,
            loss_pct: match stats.packets_in {
                0 => None,
                n => Some(stats.dropped_loss as f64 / n as f64 * 100.0),
            },
            dropped_queue: stats.dropped_queue,
            queue_delay_p99_ms: stats.queue_delay.p99_ms,
        }
    }
}

/// The cells that ran over an emulated link, in recording order.
pub(crate) fn link_rows(results: &Results) -> Vec<LinkRow<'_>> {
    results
        .cells
        .iter()
        .filter_map(|cell| {
            let link = cell.link.as_ref()?;
            Some(LinkRow {
                cell,
                seed: link.seed,
                down: LinkDirection::of(&link.down),
                up: LinkDirection::of(&link.up),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::summary::summarize;

    fn plot_data(results: &Results) -> serde_json::Value {
        let summaries = summarize(results);
        let conditions = conditions(results, &summaries);
        let pages = crate::page_loads::page_workloads(results, &summaries);
        let json = plot_data_json(
            &protocol_colours(results),
            &conditions,
            crate::page_loads::page_violins(&pages),
            &[],
        );
        serde_json::from_str(&json).unwrap()
    }

    #[test]
    fn plot_data_covers_every_condition() {
        let data = plot_data(&fixture::results());
        let violins = data["violins"].as_array().unwrap();
        let titles: Vec<&str> = violins
            .iter()
            .map(|v| v["title"].as_str().unwrap())
            .collect();
        assert_eq!(
            titles,
            [
                "broadband · rps-1k: requests_per_s",
                "broadband · ttfb: ttfb_ms",
                "cellular · rps-1k: requests_per_s"
            ]
        );
        let h3 = &violins[0]["traces"][2];
        assert_eq!(h3["protocol"], "h3");
        assert_eq!(
            h3["samples"],
            serde_json::json!([250.0, 240.0, 260.0, 245.0, 255.0])
        );
        assert_eq!(violins[1]["grouped"], true);
        assert_eq!(violins[1]["traces"].as_array().unwrap().len(), 4);

        // Only broadband rps-1k has histograms: one CDF with three lines ending at 1.
        let cdfs = data["cdfs"].as_array().unwrap();
        assert_eq!(cdfs.len(), 1);
        let lines = cdfs[0]["traces"].as_array().unwrap();
        assert_eq!(lines.len(), 3);
        for line in lines {
            assert_eq!(line["fraction"].as_array().unwrap().last().unwrap(), 1.0);
        }
        assert_eq!(data["colours"]["h3"], "#009e73");
    }

    #[test]
    fn condition_without_success_gets_no_violin() {
        let mut results = fixture::results();
        for record in results.cells.iter_mut().filter(|r| r.profile == "cellular") {
            record.outcome = Outcome::Failed {
                error: "no route".into(),
            };
        }
        let titles: Vec<String> = plot_data(&results)["violins"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["title"].as_str().unwrap().to_string())
            .collect();
        assert!(
            titles.iter().all(|t| !t.starts_with("cellular")),
            "{titles:?}"
        );
    }
}
