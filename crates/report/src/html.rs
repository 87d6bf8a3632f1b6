//! `report.html`: one self-contained file (no network) with the run status,
//! published-vs-ours tables, summary tables, violin and latency-CDF plots
//! and the environment. Plots render client-side with the vendored
//! plotly.js from JSON embedded in the page.

use std::collections::BTreeMap;

use h3lab_results::bench::Results;
use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde::Serialize;

use crate::format::{fraction_as_percent, maybe, number, short};
use crate::histogram::cdf_points;
use crate::stats::RelativeDiff;
use crate::studies::{compare_claims, ClaimComparison};
use crate::summary::{list_repetitions, merged_latency, summarize, CellKey, CellSummary};
use crate::table::profiles_in_order;

/// plotly.js 4.1.1, cartesian bundle (MIT, licence in `assets/`).
const PLOTLY_JS: &str = include_str!("../assets/plotly-cartesian.min.js");
const REPORT_JS: &str = include_str!("../assets/report.js");
const REPORT_CSS: &str = include_str!("../assets/report.css");

/// Up to this many failed repetitions, their table is shown unfolded.
const FAILURES_SHOWN_OPEN: usize = 10;

/// Colour-blind-safe (Okabe–Ito) colours; h1/h2/h3 always get the same ones.
const KNOWN_COLOURS: [(&str, &str); 3] = [("h1", "#e69f00"), ("h2", "#0072b2"), ("h3", "#009e73")];
const EXTRA_COLOURS: [&str; 5] = ["#cc79a7", "#d55e00", "#56b4e9", "#7f7f7f", "#000000"];

/// The whole report page.
pub fn render_html(results: &Results) -> String {
    let summaries = summarize(results);
    let colours = protocol_colours(results);
    let conditions = conditions(results, &summaries);
    let claims = compare_claims(&results.studies, &summaries, &results.suite.baseline);
    let plot_data = embedded_json(&PlotData {
        colours: &colours,
        violins: conditions
            .iter()
            .map(|c| &c.violin)
            .filter(|v| !v.traces.is_empty())
            .collect(),
        cdfs: conditions.iter().filter_map(|c| c.cdf.as_ref()).collect(),
    });
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "h3lab: " (results.suite.name) }
                style { (PreEscaped(REPORT_CSS)) }
            }
            body {
                (header(results))
                (status(results, &summaries))
                @if !claims.is_empty() { (claims_section(&claims)) }
                (summary_section(results, &summaries, &colours))
                (plots_section(&conditions))
                (environment_section(results))
                (link_section(results))
                footer {
                    "Schema " code { (results.schema) } ". Plots: plotly.js 4.1.1 (MIT licence), embedded; "
                    "this file needs no network. Statistics: percentiles by linear interpolation between "
                    "closest ranks over all samples of the successful repetitions; CV = sample standard "
                    "deviation ÷ mean; latency percentiles from the merged HdrHistograms."
                }
                script type="application/json" id="h3lab-plot-data" { (PreEscaped(plot_data)) }
                script { (PreEscaped(PLOTLY_JS)) }
                script { (PreEscaped(REPORT_JS)) }
            }
        }
    };
    page.into_string()
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

/// Colour of every protocol in the run.
pub fn protocol_colours(results: &Results) -> BTreeMap<String, String> {
    let mut names: Vec<&String> = results.suite.protocols.iter().collect();
    names.extend(results.cells.iter().map(|c| &c.protocol));
    let mut colours = BTreeMap::new();
    let mut extra = EXTRA_COLOURS.iter().cycle();
    for name in names {
        if colours.contains_key(name) {
            continue;
        }
        let known = KNOWN_COLOURS
            .iter()
            .find(|(p, _)| p == name)
            .map(|(_, c)| *c);
        let colour = known.or_else(|| extra.next().copied()).unwrap_or("#000000");
        colours.insert(name.clone(), colour.to_string());
    }
    colours
}

fn protocol_badge(colours: &BTreeMap<String, String>, protocol: &str) -> Markup {
    let colour = colours.get(protocol).map_or("#000000", String::as_str);
    html! { span.proto style=(format!("--proto:{colour}")) { (protocol) } }
}

#[derive(Serialize)]
struct PlotData<'a> {
    colours: &'a BTreeMap<String, String>,
    violins: Vec<&'a ViolinPlot>,
    cdfs: Vec<&'a CdfPlot>,
}

/// One condition (profile × workload): its violin plot and, when latency
/// histograms exist, its CDF.
struct Condition {
    profile: String,
    workload: String,
    violin: ViolinPlot,
    cdf: Option<CdfPlot>,
}

#[derive(Serialize)]
struct ViolinPlot {
    id: String,
    title: String,
    axis: String,
    grouped: bool,
    traces: Vec<ViolinTrace>,
}

#[derive(Serialize)]
struct ViolinTrace {
    protocol: String,
    category: String,
    samples: Vec<f64>,
}

#[derive(Serialize)]
struct CdfPlot {
    id: String,
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

fn conditions(results: &Results, summaries: &[CellSummary]) -> Vec<Condition> {
    let samples = samples_by_cell(results);
    let histograms = merged_latency(results);
    let mut conditions: Vec<Condition> = Vec::new();
    for summary in summaries {
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
        violin: ViolinPlot {
            id: format!("violin-{index}"),
            title: format!("{} · {}: {}", key.profile, key.workload, summary.metric),
            axis: format!("{} ({direction})", summary.unit),
            grouped: false,
            traces: Vec::new(),
        },
        cdf: None,
    }
}

/// Finite metric samples of the successful repetitions, per cell.
fn samples_by_cell(results: &Results) -> BTreeMap<CellKey, Vec<f64>> {
    let mut samples: BTreeMap<CellKey, Vec<f64>> = BTreeMap::new();
    for record in results
        .cells
        .iter()
        .filter(|r| r.outcome == h3lab_results::bench::Outcome::Ok)
    {
        let key = CellKey {
            profile: record.profile.clone(),
            workload: record.workload.clone(),
            protocol: record.protocol.clone(),
            mode: record.mode.clone(),
        };
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

fn header(results: &Results) -> Markup {
    let suite = &results.suite;
    html! {
        header {
            h1 { "h3lab: " (suite.name) }
            @if !suite.description.is_empty() { p.description { (suite.description) } }
            dl.meta {
                @if let Some(preset) = &suite.preset { (meta_item("preset", preset)) }
                (meta_item("protocols", &suite.protocols.join(", ")))
                (meta_item("baseline", &suite.baseline))
                (meta_item("server", &suite.target))
                (meta_item("profiles", &suite.profiles.join(", ")))
                (meta_item("workloads", &suite.workloads.join(", ")))
                (meta_item("repetitions", &suite.repetitions.to_string()))
                (meta_item("warm-up (excluded)", &format!("{} s", short(suite.warmup_s))))
                (meta_item("seed", &suite.seed.to_string()))
                (meta_item("started", &results.started_at))
                (meta_item("finished", results.finished_at.as_deref().unwrap_or("not finished")))
            }
        }
    }
}

fn meta_item(name: &str, value: &str) -> Markup {
    html! { div { dt { (name) } dd { (value) } } }
}

fn status(results: &Results, summaries: &[CellSummary]) -> Markup {
    let recorded: usize = summaries.iter().map(|s| s.repetitions).sum();
    let failed: usize = summaries.iter().map(CellSummary::failed).sum();
    let with_problems: Vec<&CellSummary> = summaries
        .iter()
        .filter(|s| !s.problems.is_empty())
        .collect();
    let class = if results.interrupted || failed > 0 {
        "status warn"
    } else {
        "status ok"
    };
    html! {
        section #status class=(class) {
            h2 { "Run status" }
            @if results.interrupted {
                p { strong { "Interrupted." } " The run stopped early; every cell shown is complete, cells not reached are missing." }
            }
            p { (recorded) " repetition(s) recorded in " (summaries.len()) " cell(s); " (failed) " failed." }
            @if failed > 0 {
                details open[failed <= FAILURES_SHOWN_OPEN] {
                    summary { "Failed repetitions and their errors" }
                    table.failures {
                        thead { tr { th { "profile" } th { "workload" } th { "protocol" } th { "repetitions" } th { "error" } } }
                        tbody {
                            @for summary in summaries {
                                @for (repetitions, error) in summary.failures_by_error() {
                                    tr {
                                        td { (summary.key.profile) } td { (summary.key.workload_label()) }
                                        td { (summary.key.protocol) } td { (list_repetitions(&repetitions)) }
                                        td.error { (error) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @if !with_problems.is_empty() {
                ul.problems {
                    @for summary in with_problems {
                        @for problem in &summary.problems {
                            li { (summary.key.profile) " · " (summary.key.workload_label()) " · " (summary.key.protocol) ": " (problem) }
                        }
                    }
                }
            }
        }
    }
}

fn claims_section(claims: &[ClaimComparison]) -> Markup {
    html! {
        section #studies {
            h2 { "Published vs ours" }
            p.hint { "Absolute numbers differ (other hardware, other stacks); what should hold is the direction and rough size of each effect." }
            @for comparison in claims { (claim_card(comparison)) }
        }
    }
}

fn claim_card(comparison: &ClaimComparison) -> Markup {
    let claim = comparison.claim;
    let condition = match &claim.mode {
        Some(mode) => format!("{} · {} ({mode})", claim.profile, claim.workload),
        None => format!("{} · {}", claim.profile, claim.workload),
    };
    html! {
        div.card.claim {
            h3 { (claim.label) }
            p.sub { (claim.study) " — compared with our " (condition) }
            table {
                thead { tr { th { "protocol" } th.num { "published (" (claim.unit) ")" } th.num { "ours (median)" } th.num { "n" } } }
                tbody {
                    @for row in &comparison.rows {
                        tr {
                            td { (row.protocol) }
                            td.num { (number(row.published)) }
                            @match &row.ours {
                                Some((median, unit, n)) => { td.num { (number(*median)) " " (unit) } td.num { (n) } }
                                None => { td.num.missing { "no data" } td.num { "0" } }
                            }
                        }
                    }
                }
            }
            ul.directions {
                @for pair in &comparison.pairs {
                    @let class = match pair.agrees() {
                        Some(true) => "agrees",
                        Some(false) if pair.clearly_differs() => "differs",
                        _ => "unknown",
                    };
                    li class=(class) {
                        strong { (pair.subject) " vs " (pair.other) }
                        ": published " (describe(pair.published)) ", ours " (describe(pair.ours)) " → "
                        strong { (pair.verdict()) }
                    }
                }
            }
            @if comparison.differs() { p.caveat { strong { "Why ours may differ: " } (claim.caveat) } }
        }
    }
}

fn describe(diff: Option<RelativeDiff>) -> String {
    diff.map_or_else(|| "no data".to_string(), |d| d.describe())
}

fn summary_section(
    results: &Results,
    summaries: &[CellSummary],
    colours: &BTreeMap<String, String>,
) -> Markup {
    html! {
        section #summary {
            h2 { "Summary" }
            p.hint { "Per cell, over all samples of its successful repetitions. "
                "vs " (results.suite.baseline) ": the median's difference from the baseline protocol's median in the same condition." }
            @for profile in profiles_in_order(summaries) {
                @let block: Vec<&CellSummary> = summaries.iter().filter(|s| s.key.profile == profile).collect();
                h3 { (profile) span.sub { " · path RTT " (short(block.first().map_or(0.0, |s| s.path_rtt_ms))) " ms" } }
                (summary_table(&block, &results.suite.baseline, colours))
            }
        }
    }
}

fn summary_table(
    block: &[&CellSummary],
    baseline: &str,
    colours: &BTreeMap<String, String>,
) -> Markup {
    html! {
        table.summary {
            thead {
                tr {
                    th { "workload" } th { "protocol" } th.num { "n" } th.num { "failed" }
                    th.num { "median" } th.num { "mean" } th.num { "p90" } th.num { "p99" }
                    th.num { "min" } th.num { "max" } th.num { "CV" } th.num { "vs " (baseline) }
                    th.num.lat { "latency p50 ms" } th.num { "p90" } th.num { "p99" } th.num { "max" }
                    th.num.lat { "CPU client" } th.num { "server" }
                }
            }
            tbody {
                @for (index, summary) in block.iter().enumerate() {
                    @let first_of_workload = index == 0 || block[index - 1].key.workload_label() != summary.key.workload_label();
                    @let stats = summary.stats.as_ref();
                    @let latency = summary.latency.as_ref();
                    tr class=(if first_of_workload { "group-start" } else { "" }) {
                        td {
                            @if first_of_workload {
                                (summary.key.workload_label()) br;
                                span.unit { (summary.unit) ", " (if summary.higher_is_better { "higher is better" } else { "lower is better" }) }
                            }
                        }
                        td.nowrap {
                            (protocol_badge(colours, &summary.key.protocol))
                            @if summary.is_baseline { " " span.tag { "baseline" } }
                        }
                        td.num { (stats.map_or(0, |s| s.n)) }
                        td.num class=(if summary.failed() > 0 { "bad" } else { "" }) { (summary.failed()) "/" (summary.repetitions) }
                        td.num.strong {
                            (maybe(stats.map(|s| s.median)))
                            @if let Some(rtts) = summary.median_rtts() { br; span.unit { (format!("{rtts:.1} RTT")) } }
                        }
                        td.num { (maybe(stats.map(|s| s.mean))) }
                        td.num { (maybe(stats.map(|s| s.p90))) }
                        td.num { (maybe(stats.map(|s| s.p99))) }
                        td.num { (maybe(stats.map(|s| s.min))) }
                        td.num { (maybe(stats.map(|s| s.max))) }
                        td.num { (fraction_as_percent(stats.and_then(|s| s.cv))) }
                        @match (summary.is_baseline, summary.vs_baseline) {
                            (true, _) => td.num.muted { "baseline" },
                            (false, Some(diff)) => td.num class=(diff.verdict.word()) { (diff.describe()) },
                            (false, None) => td.num.muted { "–" },
                        }
                        td.num.lat { (maybe(latency.map(|l| l.p50_ms))) }
                        td.num { (maybe(latency.map(|l| l.p90_ms))) }
                        td.num { (maybe(latency.map(|l| l.p99_ms))) }
                        td.num { (maybe(latency.map(|l| l.max_ms))) }
                        td.num.lat { (cpu(summary.client_cpu_pct)) }
                        td.num { (cpu(summary.server_cpu_pct)) }
                    }
                }
            }
        }
    }
}

fn cpu(percent: Option<f64>) -> String {
    percent.map_or_else(|| "–".to_string(), |p| format!("{p:.0} %"))
}

fn plots_section(conditions: &[Condition]) -> Markup {
    html! {
        section #plots {
            h2 { "Distributions" }
            p.hint { "Violins: every sample of the successful repetitions, with the box (median, quartiles) inside. "
                "CDFs: request latency from the merged HdrHistograms (log scale)." }
            @for condition in conditions {
                div.card.condition {
                    h3 { (condition.profile) " · " (condition.workload) }
                    div.plots {
                        @if condition.violin.traces.is_empty() {
                            div.plot.empty { p { "No successful repetition in this condition." } }
                        } @else {
                            div.plot id=(condition.violin.id) {}
                        }
                        @match &condition.cdf {
                            Some(cdf) => { div.plot id=(cdf.id) {} },
                            None => { div.plot.empty { p { "No latency histograms recorded for this condition." } } },
                        }
                    }
                }
            }
        }
    }
}

fn environment_section(results: &Results) -> Markup {
    let env = &results.environment;
    html! {
        section #environment {
            h2 { "Environment" }
            table.env {
                tbody {
                    tr { th { "h3lab" } td { (env.h3lab_version) } }
                    tr { th { "kernel" } td { (env.kernel) } }
                    tr { th { "CPU" } td { (env.cpu_model) " (" (env.cpu_count) " cores)" } }
                    tr { th { "TCP congestion control" } td { (env.tcp_congestion_control) } }
                    tr { th { "QUIC congestion control" } td { (env.quic_congestion_control) } }
                    tr { th { "UDP GSO/GRO" } td { (env.udp_gso) } }
                    @for (name, value) in &env.sysctls { tr { th { code { (name) } } td { (value) } } }
                    @for (name, version) in &env.library_versions { tr { th { (name) } td { (version) } } }
                }
            }
        }
    }
}

/// What the emulated link did in each cell: proof of the configured loss
/// and queueing, per direction (down = server to client).
fn link_section(results: &Results) -> Markup {
    let emulated: Vec<_> = results.cells.iter().filter(|c| c.link.is_some()).collect();
    if emulated.is_empty() {
        return html! {};
    }
    let count = |dir: &serde_json::Value, key: &str| dir[key].as_u64().unwrap_or(0);
    let loss_pct = |dir: &serde_json::Value| {
        let offered = count(dir, "packets_in");
        match offered {
            0 => "–".to_string(),
            n => format!(
                "{:.2} %",
                count(dir, "dropped_loss") as f64 / n as f64 * 100.0
            ),
        }
    };
    html! {
        section #link {
            h2 { "Emulated link" }
            details {
                summary { "Per cell and direction: packets offered and delivered, drops by cause, queueing delay (" (emulated.len()) " cells)" }
                table.summary {
                    thead { tr {
                        th { "profile" } th { "workload" } th { "proto" } th { "rep" } th { "seed" }
                        th { "down in" } th { "down out" } th { "down loss" } th { "down queue drops" } th { "down queue p99 ms" }
                        th { "up in" } th { "up out" } th { "up loss" } th { "up queue drops" }
                    } }
                    tbody {
                        @for cell in &emulated {
                            @let link = cell.link.as_ref().expect("filtered on link");
                            @let (down, up) = (&link["down"], &link["up"]);
                            tr {
                                td { (cell.profile) } td { (cell.workload) @if let Some(mode) = &cell.mode { " (" (mode) ")" } }
                                td { (cell.protocol) } td.num { (cell.repetition) } td.num { (link["seed"]) }
                                td.num { (count(down, "packets_in")) } td.num { (count(down, "packets_out")) }
                                td.num { (loss_pct(down)) } td.num { (count(down, "dropped_queue")) }
                                td.num { (down["queue_delay"]["p99_ms"].as_f64().map_or("–".to_string(), |v| format!("{v:.2}"))) }
                                td.num { (count(up, "packets_in")) } td.num { (count(up, "packets_out")) }
                                td.num { (loss_pct(up)) } td.num { (count(up, "dropped_queue")) }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    /// The page with the bodies of its `<script>` elements removed.
    fn markup_outside_scripts(page: &str) -> String {
        let mut rest = page;
        let mut outside = String::new();
        while let Some(start) = rest.find("<script") {
            let open_end = start + rest[start..].find('>').unwrap() + 1;
            outside.push_str(&rest[..open_end]);
            let close = open_end + rest[open_end..].find("</script>").unwrap();
            rest = &rest[close..];
            outside.push_str("</script>");
            rest = &rest["</script>".len()..];
        }
        outside.push_str(rest);
        outside
    }

    fn plot_data(page: &str) -> serde_json::Value {
        let marker = r#"<script type="application/json" id="h3lab-plot-data">"#;
        let start = page.find(marker).unwrap() + marker.len();
        let end = start + page[start..].find("</script>").unwrap();
        serde_json::from_str(&page[start..end]).unwrap()
    }

    #[test]
    fn link_statistics_show_the_loss_each_direction_saw() {
        let mut results = fixture::results();
        assert!(
            !render_html(&results).contains("Emulated link"),
            "no section without link stats"
        );
        results.cells[0].link = Some(serde_json::json!({
            "seed": 7,
            "down": {"packets_in": 1000, "packets_out": 970, "dropped_loss": 20, "dropped_queue": 10,
                     "queue_delay": {"p99_ms": 3.5}},
            "up": {"packets_in": 400, "packets_out": 398, "dropped_loss": 2, "dropped_queue": 0},
        }));
        let page = render_html(&results);
        assert!(page.contains("Emulated link"));
        assert!(page.contains("2.00 %"), "20 of 1000 down packets lost");
        assert!(page.contains("0.50 %"), "2 of 400 up packets lost");
        assert!(page.contains("3.50"), "queue delay p99");
    }

    #[test]
    fn vendored_plotly_can_be_inlined() {
        assert!(!PLOTLY_JS.to_ascii_lowercase().contains("</script"));
        assert!(!REPORT_JS.to_ascii_lowercase().contains("</script"));
    }

    #[test]
    fn embeds_plot_data_for_every_condition() {
        let page = render_html(&fixture::results());
        let data = plot_data(&page);
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
        assert_eq!(h3["samples"], serde_json::json!([250.0, 240.0, 260.0]));
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

        for plot in violins.iter().chain(cdfs) {
            let id = plot["id"].as_str().unwrap();
            assert!(
                page.contains(&format!(r#"<div class="plot" id="{id}">"#)),
                "no div for {id}"
            );
        }
    }

    #[test]
    fn loads_nothing_from_the_network() {
        let page = render_html(&fixture::results());
        let markup = markup_outside_scripts(&page);
        assert_eq!(markup.matches("<script").count(), 3);
        for attribute in ["src=", "href="] {
            assert!(
                !markup.contains(attribute),
                "{attribute} found in the markup"
            );
        }
        assert!(!markup.contains("http://") && !markup.contains("https://"));
        assert!(page.contains("Plotly.newPlot"));
    }

    #[test]
    fn condition_without_success_gets_no_empty_plot() {
        let mut results = fixture::results();
        for record in results.cells.iter_mut().filter(|r| r.profile == "cellular") {
            record.outcome = h3lab_results::bench::Outcome::Failed {
                error: "no route".into(),
            };
        }
        let page = render_html(&results);
        let titles: Vec<String> = plot_data(&page)["violins"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["title"].as_str().unwrap().to_string())
            .collect();
        assert!(
            titles.iter().all(|t| !t.starts_with("cellular")),
            "{titles:?}"
        );
        assert!(page.contains("No successful repetition in this condition."));
        // 9 failed repetitions in 3 cells: one row per cell, shown unfolded.
        assert_eq!(page.matches(">0, 1 and 2<").count(), 3);
        assert!(page.contains("<details open><summary>"));
    }

    #[test]
    fn user_text_is_escaped() {
        let page = render_html(&fixture::results());
        assert!(page.contains("Synthetic run for tests &lt;b&gt;not markup&lt;/b&gt;"));
        // The caveat shows (its direction differs) but cannot close a script.
        assert!(page.contains("ttfb caveat &lt;/script&gt;"));
        assert!(!page.contains("<script>alert(1)"));
    }

    #[test]
    fn shows_status_claims_and_environment() {
        let mut results = fixture::results();
        results.interrupted = true;
        let page = render_html(&results);
        assert!(page.contains("Interrupted."));
        assert!(page.contains("connection refused"));
        assert!(page.contains("direction agrees"));
        assert!(page.contains("direction DIFFERS"));
        assert!(
            !page.contains("rps caveat"),
            "the caveat shows only when the direction differs"
        );
        assert!(page.contains("net.core.rmem_max"));
        assert!(page.contains("+19.0 % better"));
        assert!(page.contains(r#"class="proto" style="--proto:#0072b2""#));
    }
}
