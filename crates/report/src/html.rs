//! `report.html`: one self-contained file (no network) with the run status,
//! published-vs-ours tables, summary tables, violin and latency-CDF plots,
//! page loads (violins, study E's columns, waterfalls; `html::pages`), the
//! HTTP/3 conformance table (`html::conformance`) and the environment. Plots render client-side with the vendored plotly.js
//! from JSON embedded in the page; waterfalls are inline SVG. This module
//! writes the markup; the plot series and link statistics come from
//! `page_data`, the page-load view from `page_loads`.

use std::collections::BTreeMap;

use h3lab_results::bench::{BlockTally, Results};
use h3lab_results::offer::H3Features;
use h3lab_results::WorkloadKind;
use maud::{html, Markup, PreEscaped, DOCTYPE};

use crate::captures::{compare_captures, CaptureComparison};
use crate::cell::CellSummary;
use crate::format::list_repetitions;
use crate::format::{fraction_as_percent, maybe, number, short};
use crate::page_data::{
    conditions, link_rows, plot_data_json, protocol_colours, Condition, LinkRow,
};
use crate::page_loads::{page_violins, page_workloads};
use crate::settings;
use crate::studies::{compare_claims, Agreement, ClaimComparison, Effect};
use crate::summary::{path_impairments, summarize};
use crate::table::{profiles_in_order, HEADER_COMPRESSION};
use h3lab_results::difference::{Call, Difference};

/// plotly.js 4.1.1, cartesian bundle (MIT, licence in `assets/`).
const PLOTLY_JS: &str = include_str!("../assets/plotly-cartesian.min.js");
const REPORT_JS: &str = include_str!("../assets/report.js");
const REPORT_CSS: &str = include_str!("../assets/report.css");

/// Up to this many failed repetitions, their table is shown unfolded.
const FAILURES_SHOWN_OPEN: usize = 10;

/// The whole report page.
pub fn render_html(results: &Results) -> String {
    let summaries = summarize(results);
    let colours = protocol_colours(results);
    let conditions = conditions(results, &summaries);
    let claims = compare_claims(&results.studies, &summaries, &results.suite.baseline);
    let captures = compare_captures(&results.captures, &summaries);
    let pages = page_workloads(results, &summaries);
    let drift = crate::field::drift_plots(results);
    let plot_data = plot_data_json(&colours, &conditions, page_violins(&pages), &drift);
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
                (field::field_section(results, &drift, &colours))
                @if !claims.is_empty() { (claims_section(&claims)) }
                @if !captures.is_empty() { (captures_section(&captures)) }
                (legs_section(&summaries))
                (servers_section(results))
                (summary_section(results, &summaries, &colours))
                (population::population_section(results))
                (conformance::conformance_section(results))
                (pages::pages_section(&pages, &colours))
                @if !conditions.is_empty() { (plots_section(&conditions)) }
                (environment_section(results))
                (link_section(results))
                footer {
                    "Schema " code { (results.schema) } ". Plots: plotly.js 4.1.1 (MIT licence), embedded; "
                    "this file needs no network. Statistics: percentiles by linear interpolation between "
                    "closest ranks over all samples of the successful repetitions; CV = sample standard "
                    "deviation ÷ mean; latency percentiles from the merged HdrHistograms. Differences: "
                    "called better or worse only when an exact permutation test of whole repetitions "
                    "(rank sum of their medians) gives p ≤ 0.05; the 95 % interval of the difference of "
                    "the medians holds every shift that test does not reject; see "
                    code { "docs/statistics.md" } "."
                }
                script type="application/json" id="h3lab-plot-data" { (PreEscaped(plot_data)) }
                script { (PreEscaped(PLOTLY_JS)) }
                script { (PreEscaped(REPORT_JS)) }
            }
        }
    };
    page.into_string()
}

fn protocol_badge(colours: &BTreeMap<String, String>, protocol: &str) -> Markup {
    let colour = colours.get(protocol).map_or("#000000", String::as_str);
    html! { span.proto style=(format!("--proto:{colour}")) { (protocol) } }
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
                p { strong { "Interrupted." } " The run stopped early; cells not reached are missing." }
                @for summary in summaries.iter().filter(|s| !s.interrupted.is_empty()) {
                    p {
                        "Cut short by Ctrl-C, and not measured: " (summary.key.profile) " " (summary.key.workload_label())
                        " " (summary.key.protocol) ", repetition " (list_repetitions(&summary.interrupted)) "."
                    }
                }
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
            @let lacking: Vec<&CellSummary> = summaries.iter().filter(|s| s.not_offered.is_some()).collect();
            @if !lacking.is_empty() {
                p { (lacking.len()) " cell(s) not offered by their server, which is not a failure:" }
                ul.not-offered {
                    @for summary in lacking {
                        li { (summary.key.profile) " · " (summary.key.workload_label()) " · " (summary.key.protocol) ": " (summary.not_offered.as_deref().unwrap_or_default()) }
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

/// Each replayed HAR: what it recorded where it was captured, beside the
/// replay's medians.
fn captures_section(captures: &[CaptureComparison]) -> Markup {
    html! {
        section #captures {
            h2 { "Captured pages" }
            p { "Replayed from HAR files; the recorded figures are from the network each page was captured on, not from the emulated paths." }
            @for capture in captures {
                div.claim {
                    h3 { (capture.title()) }
                    p { (capture.recorded()) }
                    p { (capture.replayed_line()) }
                }
            }
        }
    }
}

/// Behind an edge that says its origin's time: how much of each cell's
/// latency was the origin's.
fn legs_section(summaries: &[CellSummary]) -> Markup {
    let lines: Vec<(String, String)> = summaries
        .iter()
        .filter_map(CellSummary::legs_line)
        .collect();
    html! {
        @if !lines.is_empty() {
            section #legs {
                h2 { "Where the time went" }
                p.hint { "From each edge's Server-Timing: how long it waited for the origin's response head, and the rest (the client leg and the edge's own work), per request." }
                @for (title, line) in &lines {
                    div.claim {
                        h3 { (title) }
                        p { (line) }
                    }
                }
            }
        }
    }
}

/// A `server` sweep's rows: the QUIC stack under each server and the
/// protocols it offers; a protocol it does not offer has no cells, which
/// is not a failure.
fn servers_section(results: &Results) -> Markup {
    let rows = &results.suite.servers;
    html! {
        @if !rows.is_empty() {
            section #servers {
                h2 { "Servers compared" }
                p.hint { "The QUIC stack as the suite names it. A protocol a server does not offer has no cells: \"not offered\", not a failure." }
                p.hint { "The last six columns are read from the server by h3lab probe offer before its first h3 cell on each profile: its server header, whether it accepted a request in 0-RTT early data, the QPACK dynamic table its SETTINGS allow, whether its connection carried on after the client moved to a new UDP port, how much of a 1 MB response arrived in the first round trip (its initial window), and how it cut its sending after the client dropped one datagram of that response: the family of its congestion controller, with what it sent in the round trip after the loss over what it had in flight at it (Reno halves, CUBIC keeps 0.7, BBR its rate). The last two on each profile with a round trip of 5 ms or more. ? is unknown: the probe could not tell." }
                table {
                    thead { tr {
                        th { "server" } th { "QUIC stack" }
                        @for protocol in &results.suite.protocols { th { (protocol) } }
                        th { "server header" } th { "0-RTT" } th { "QPACK dynamic table" } th { "new client port" } th { "first round trip" } th { "after one loss" }
                    } }
                    tbody {
                        @for row in rows {
                            @let missing = crate::table::not_offered(row, results);
                            @let features = crate::table::h3_features(row, results, None);
                            @let first_flights: Vec<String> = crate::table::probed_on_each_profile(row, results).iter()
                                .filter(|(_, f)| f.first_round_trip_bytes.is_some())
                                .map(|(profile, f)| format!("{profile}: {}", f.first_flight())).collect();
                            @let loss_responses: Vec<String> = crate::table::probed_on_each_profile(row, results).iter()
                                .filter(|(_, f)| f.congestion_family().is_some())
                                .map(|(profile, f)| format!("{profile}: {}", f.loss_response())).collect();
                            tr {
                                td { (row.name) }
                                td { (row.stack_text()) }
                                @for protocol in &results.suite.protocols {
                                    td { @if missing.contains(&protocol.as_str()) { "not offered" } @else { "offered" } }
                                }
                                td { (features.map_or("?", |f| f.server_header.as_deref().unwrap_or("(none)"))) }
                                td { (h3lab_results::offer::answer(features.and_then(|f| f.zero_rtt))) }
                                td { (features.map_or("?".to_string(), H3Features::qpack_table)) }
                                td { (h3lab_results::offer::answer(features.and_then(|f| f.survives_new_port))) }
                                td { @if first_flights.is_empty() { "?" } @else { (first_flights.join("; ")) } }
                                td { @if loss_responses.is_empty() { "?" } @else { (loss_responses.join("; ")) } }
                            }
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
                    @let agreement = pair.agreement();
                    li class=(agreement_class(agreement)) {
                        strong { (pair.subject) " vs " (pair.other) }
                        ": published " (pair.published.as_ref().map_or_else(|| "no data".to_string(), Effect::describe))
                        ", ours " (pair.ours.as_ref().map_or_else(|| "no data".to_string(), Difference::figure)) " → "
                        strong { (agreement.text()) }
                    }
                }
            }
            @if comparison.pairs.is_empty() { p.hint { (crate::table::NOTHING_PUBLISHED) } }
            @if comparison.differs() { p.caveat { strong { "Why ours may differ: " } (claim.caveat) } }
        }
    }
}

fn agreement_class(agreement: Agreement) -> &'static str {
    match agreement {
        Agreement::Agrees => "agrees",
        Agreement::Differs => "differs",
        _ => "unknown",
    }
}

/// The classes of a difference's cell, `verdict` and a colour only when
/// clear. (maud writes a second `class` attribute, which browsers ignore,
/// when one is added to a `td` that has one, so the cell takes all its
/// classes from here.)
pub(super) fn call_class(call: Call) -> &'static str {
    match call {
        Call::Better => "verdict better",
        Call::Worse => "verdict worse",
        Call::NoClearDifference | Call::TooFewRepetitions => "verdict muted",
    }
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
                "vs " (results.suite.baseline) ": the median's difference from the baseline protocol's median in the same condition, "
                "with its 95 % interval in brackets; better or worse only when a permutation test of the repetitions "
                "gives p ≤ 0.05 (then the interval excludes zero), else “no clear difference”; “detects” is the "
                "smallest difference the run could have called; fewer than 4 repetitions on a side can call nothing "
                "and give no interval. " (crate::verdicts::expected_false(summaries, results.suite.aa)) "." }
            @for profile in profiles_in_order(summaries) {
                @let block: Vec<&CellSummary> = summaries.iter().filter(|s| s.key.profile == profile).collect();
                h3 { (profile) span.sub { " · " (block.first().map_or(String::new(), |s| s.round_trip_label()))
                    @if let Some(loss) = path_impairments(results, &profile) { " · " (loss) } } }
                @let windows = settings::common_windows(&block);
                @if let Some(windows) = &windows { p.hint { (windows) } }
                (summary_table(&block, &results.suite.baseline, colours, windows.is_none()))
                @for line in settings::turning_verdicts(&block, &results.suite.baseline) {
                    p.hint.bad { "⚠ " (line) }
                }
                @for line in settings::loader_verdicts(&block, results, &results.suite.baseline) {
                    p.hint.bad { "⚠ " (line) }
                }
                h4 { "Request latency and CPU" }
                (latency_cpu_table(&block, colours))
                (costs_table(&block, colours))
            }
        }
    }
}

fn summary_table(
    block: &[&CellSummary],
    baseline: &str,
    colours: &BTreeMap<String, String>,
    windows_per_workload: bool,
) -> Markup {
    html! {
        table.summary {
            thead {
                tr {
                    th { "workload" } th { "protocol" } th.num { "n" } th.num { "failed" }
                    th.num { "median" } th.num { "mean" } th.num { "p90" } th.num { "p99" }
                    th.num { "min" } th.num { "max" } th.num { "CV" } th.num { "vs " (baseline) }
                }
            }
            tbody {
                @for (index, summary) in block.iter().enumerate() {
                    @let first_of_workload = index == 0 || block[index - 1].key.workload_label() != summary.key.workload_label();
                    @let stats = summary.stats.as_ref();
                    tr class=(if first_of_workload { "group-start" } else { "" }) {
                        td {
                            @if first_of_workload {
                                (summary.key.workload_label()) br;
                                span.unit { (summary.measure()) ", " (summary.unit) ", " (if summary.higher_is_better { "higher is better" } else { "lower is better" }) }
                                @if windows_per_workload {
                                    @let group: Vec<&CellSummary> = block.iter().copied().filter(|s| s.key.workload_label() == summary.key.workload_label()).collect();
                                    @if let Some(windows) = settings::common_windows(&group) { br; span.unit { (windows) } }
                                }
                            }
                        }
                        td.nowrap {
                            (protocol_badge(colours, &summary.key.protocol))
                            @if summary.is_baseline { " " span.tag { "baseline" } }
                            @if !summary.bottlenecks.is_empty() {
                                @let named: Vec<String> = summary.bottlenecks.iter().map(|b| b.describe()).collect();
                                " " span.tag.bottleneck title=(named.join("; ")) { "CPU-bound?" }
                                br; span.unit.bad { (named.join("; ")) }
                            }
                            @if summary.kind == Some(WorkloadKind::Page) && summary.request_errors > 0 {
                                br; span.unit.bad title="failed resources that were neither the document nor render-blocking; listed per load in results.json" {
                                    (summary.request_errors) " resources failed; the loads went on without them"
                                }
                            }
                        }
                        td.num { (stats.map_or(0, |s| s.n)) }
                        td class=(if summary.failed() > 0 { "num bad" } else { "num" }) { (summary.failed()) "/" (summary.repetitions) }
                        td.num.strong {
                            @if stats.is_none() && summary.not_offered.is_some() { "not offered" } @else { (maybe(stats.map(|s| s.median))) }
                            @if let Some(rtts) = summary.median_rtts() { br; span.unit { (format!("{rtts:.1} RTT")) } }
                        }
                        td.num { (maybe(stats.map(|s| s.mean))) }
                        td.num { (maybe(stats.map(|s| s.p90))) }
                        td.num { (maybe(stats.map(|s| s.p99))) }
                        td.num { (maybe(stats.map(|s| s.min))) }
                        td.num { (maybe(stats.map(|s| s.max))) }
                        td.num { (fraction_as_percent(stats.and_then(|s| s.cv))) }
                        @match (summary.is_baseline, &summary.vs_baseline) {
                            (true, _) => td.num.muted { "baseline" },
                            (false, Some(diff)) => td class=(call_class(diff.call())) { (diff.describe()) },
                            (false, None) => td.num.muted { "–" },
                        }
                    }
                }
            }
        }
    }
}

/// The same cells' request latency and CPU, in a table of their own so
/// the summary's verdicts fit a 1,280-pixel window.
fn latency_cpu_table(block: &[&CellSummary], colours: &BTreeMap<String, String>) -> Markup {
    html! {
        table.summary.latency-cpu {
            thead {
                tr {
                    th { "workload" } th { "protocol" }
                    th.num { "latency p50 ms" } th.num { "p90" } th.num { "p99" } th.num { "max" }
                    th.num.lat { "CPU client" } th.num { "server" }
                }
            }
            tbody {
                @for (index, summary) in block.iter().enumerate() {
                    @let first_of_workload = index == 0 || block[index - 1].key.workload_label() != summary.key.workload_label();
                    @let latency = summary.latency.as_ref();
                    tr class=(if first_of_workload { "group-start" } else { "" }) {
                        td { @if first_of_workload { (summary.key.workload_label()) } }
                        td.nowrap { (protocol_badge(colours, &summary.key.protocol)) }
                        td.num { (maybe(latency.map(|l| l.p50_ms))) }
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

/// What each protocol cost per request (or per MB of bodies) on the wire,
/// in header blocks and in server CPU, where the cells know it: one table
/// for "what does each protocol cost my fleet". Empty without counts.
fn costs_table(block: &[&CellSummary], colours: &BTreeMap<String, String>) -> Markup {
    let rows: Vec<&CellSummary> = (block.iter().copied())
        .filter(|s| s.wire.is_some() || s.header_blocks.is_some())
        .collect();
    if rows.is_empty() {
        return html! {};
    }
    let whole = |value: Option<f64>| value.map_or_else(|| "–".to_string(), |v| format!("{v:.0}"));
    let pair = |first: BlockTally, later: BlockTally| {
        format!("{} / {}", whole(first.mean()), whole(later.mean()))
    };
    html! {
        h4 { "What each protocol costs" }
        table.summary.costs {
            thead {
                tr {
                    th { "workload" } th { "protocol" }
                    th.num { "IP bytes per request" } th.num { "over the body" } th.num { "resent per MB" }
                    th.num { "request headers, B (first / later)" } th.num { "response headers, B" }
                    th.num { "server CPU" }
                }
            }
            tbody {
                @for (index, summary) in rows.iter().enumerate() {
                    @let first_of_workload = index == 0 || rows[index - 1].key.workload_label() != summary.key.workload_label();
                    @let wire = summary.wire;
                    @let blocks = summary.header_blocks;
                    tr class=(if first_of_workload { "group-start" } else { "" }) {
                        td { @if first_of_workload { (summary.key.workload_label()) } }
                        td.nowrap { (protocol_badge(colours, &summary.key.protocol)) }
                        td.num { (whole(wire.and_then(|w| w.bytes_per_request()))) }
                        td.num { (fraction_as_percent(wire.and_then(|w| w.overhead_share()))) }
                        td.num { (whole(wire.and_then(|w| w.resent_per_mb()))) }
                        td.num { (blocks.map_or_else(|| "–".to_string(), |b| pair(b.request_first, b.request_later))) }
                        td.num { (blocks.map_or_else(|| "–".to_string(), |b| pair(b.response_first, b.response_later))) }
                        td.num { (server_cpu(summary)) }
                    }
                }
            }
        }
        p.hint {
            "IP bytes both ways as the emulated link counted them, against the response bodies the server sent; "
            "resent: the bytes the link dropped, per MB (10^6 B) of bodies. Header blocks as the server "
            "received and sent them, a connection's first apart from later ones. "
            @if rows.iter().any(|s| s.header_blocks.is_some()) {
                (HEADER_COMPRESSION[..1].to_uppercase()) (HEADER_COMPRESSION[1..]) ". "
            }
            "Memory per connection: h3lab probe connections (docs/costs.md)."
        }
    }
}

/// The server's CPU per request, or per GB of bodies for a download.
fn server_cpu(summary: &CellSummary) -> String {
    match (
        summary.kind,
        summary.server_cpu_per_request_us,
        summary.server_cpu_per_gb_s,
    ) {
        (Some(h3lab_results::WorkloadKind::Download), _, Some(per_gb)) => {
            format!("{per_gb:.2} s/GB")
        }
        (Some(h3lab_results::WorkloadKind::Download), _, None) => "–".to_string(),
        (_, Some(per_request), _) => format!("{per_request:.0} µs/request"),
        _ => "–".to_string(),
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
                "CDFs: request latency from the merged HdrHistograms (log scale). "
                "Bars (downloads): CPU seconds per GB of response bodies, the server's over the measured "
                "interval and the client's over its whole run; a missing bar is a figure not known." }
            @for condition in conditions {
                div.card.condition {
                    h3 { (condition.profile) " · " (condition.workload) }
                    div.plots {
                        @if condition.violin.is_empty() {
                            div.plot.empty { p { "No successful repetition in this condition." } }
                        } @else {
                            div.plot id=(condition.violin.id) {}
                        }
                        @match &condition.cdf {
                            Some(cdf) => { div.plot id=(cdf.id) {} },
                            None => { div.plot.empty { p { "No latency histograms recorded for this condition." } } },
                        }
                        @if let Some(cpu) = &condition.cpu_per_gb { div.plot id=(cpu.id) {} }
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
                    @if let Some(cpus) = &env.loopback_cpus { tr { th { "loopback CPUs" } td { (cpus) } } }
                    @for (name, value) in &env.sysctls { tr { th { code { (name) } } td { (value) } } }
                    @for (name, version) in &env.library_versions { tr { th { (name) } td { (version) } } }
                    @match &env.server_tuning {
                        Some(tuning) => { @for (name, value) in tuning { tr { th { "server " code { (name) } } td { (value) } } } },
                        None => { tr { th { "server tuning" } td { "not known (a custom server, or not recorded)" } } },
                    }
                }
            }
        }
    }
}

/// What the emulated link did in each cell: proof of the configured loss
/// and queueing, per direction (down = server to client).
fn link_section(results: &Results) -> Markup {
    let rows = link_rows(results);
    if rows.is_empty() {
        return html! {};
    }
    html! {
        section #link {
            h2 { "Emulated link" }
            details {
                summary { "Per cell and direction: packets offered and delivered, drops by cause, queueing delay (" (rows.len()) " cells)" }
                table.summary {
                    thead { tr {
                        th { "profile" } th { "workload" } th { "proto" } th { "rep" } th { "seed" }
                        th { "down in" } th { "down out" } th { "down loss" } th { "down queue drops" } th { "down queue p99 ms" }
                        th { "up in" } th { "up out" } th { "up loss" } th { "up queue drops" }
                    } }
                    tbody {
                        @for LinkRow { cell, seed, down, up } in &rows {
                            tr {
                                td { (cell.profile) } td { (cell.workload) @if let Some(mode) = &cell.mode { " (" (mode) ")" } }
                                td { (cell.protocol) } td.num { (cell.repetition) } td.num { (seed) }
                                td.num { (down.packets_in) } td.num { (down.packets_out) }
                                td.num { (loss(down.loss_pct)) } td.num { (down.dropped_queue) }
                                td.num { (format!("{:.2}", down.queue_delay_p99_ms)) }
                                td.num { (up.packets_in) } td.num { (up.packets_out) }
                                td.num { (loss(up.loss_pct)) } td.num { (up.dropped_queue) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn loss(percent: Option<f64>) -> String {
    percent.map_or_else(|| "–".to_string(), |p| format!("{p:.2} %"))
}

mod conformance;
mod field;
mod pages;
mod population;

#[cfg(test)]
mod tests;
