//! The "Page loads" section: per page workload, a violin of every load
//! time per profile (protocols side by side, each profile on its own axis), study E's table (median,
//! mean, p90, p99, min, max and the load count, in ms) and, per profile,
//! one waterfall per protocol of the median load.

use std::collections::BTreeMap;

use maud::{html, Markup};

use super::protocol_badge;
use crate::format::{maybe, number};
use crate::page_loads::{MedianLoad, PageCell, PageCondition, PageWorkload};
use crate::waterfall::{legend, waterfall_svg};

/// Up to this many profiles × workloads, the waterfalls are shown unfolded.
const WATERFALLS_SHOWN_OPEN: usize = 4;

/// The whole section; nothing when the run has no page cell.
pub(super) fn pages_section(
    workloads: &[PageWorkload],
    colours: &BTreeMap<String, String>,
) -> Markup {
    if workloads.is_empty() {
        return html! {};
    }
    let conditions: usize = workloads.iter().map(|w| w.conditions.len()).sum();
    let open = conditions <= WATERFALLS_SHOWN_OPEN;
    html! {
        section #pages {
            h2 { "Page loads" }
            p.hint { "Page load time: from the start of the navigation until every resource is complete, "
                "over every load of the successful repetitions. Waterfalls show the median load." }
            @for workload in workloads {
                div.card.page {
                    h3 { (workload.workload) }
                    div.plots {
                        @for condition in &workload.conditions {
                            @if condition.violin.is_empty() {
                                div.plot.empty { p { "No successful repetition on " (condition.profile) "." } }
                            } @else {
                                div.plot id=(condition.violin.id) {}
                            }
                        }
                    }
                    (columns_table(workload, colours))
                    @for condition in &workload.conditions {
                        (waterfalls(&workload.workload, condition, colours, open))
                    }
                }
            }
        }
    }
}

/// Study E's columns, in ms, one row per profile and protocol.
fn columns_table(workload: &PageWorkload, colours: &BTreeMap<String, String>) -> Markup {
    html! {
        table.summary.page-columns {
            thead {
                tr {
                    th { "profile" } th { "protocol" } th.num { "loads" }
                    th.num { "median ms" } th.num { "mean ms" } th.num { "p90 ms" }
                    th.num { "p99 ms" } th.num { "min ms" } th.num { "max ms" }
                }
            }
            tbody {
                @for condition in &workload.conditions {
                    @for (index, cell) in condition.cells.iter().enumerate() {
                        @let stats = cell.summary.stats.as_ref();
                        tr class=(if index == 0 { "group-start" } else { "" }) {
                            td {
                                @if index == 0 {
                                    (condition.profile) br;
                                    span.unit { (condition.round_trip) }
                                }
                            }
                            td.nowrap { (protocol_badge(colours, &cell.summary.key.protocol)) }
                            td.num { (stats.map_or(0, |s| s.n)) }
                            td.num.strong { (maybe(stats.map(|s| s.median))) }
                            td.num { (maybe(stats.map(|s| s.mean))) }
                            td.num { (maybe(stats.map(|s| s.p90))) }
                            td.num { (maybe(stats.map(|s| s.p99))) }
                            td.num { (maybe(stats.map(|s| s.min))) }
                            td.num { (maybe(stats.map(|s| s.max))) }
                        }
                    }
                }
            }
        }
    }
}

/// One profile's median-load waterfalls, one per protocol, on one time axis.
fn waterfalls(
    workload: &str,
    condition: &PageCondition,
    colours: &BTreeMap<String, String>,
    open: bool,
) -> Markup {
    html! {
        details.waterfalls open[open] {
            summary { (condition.profile) " · " (workload) ": waterfalls of the median load" }
            (legend())
            @for cell in &condition.cells {
                div.waterfall-block {
                    h4 { (protocol_badge(colours, &cell.summary.key.protocol)) " " (caption(cell)) }
                    @match &cell.median_load {
                        Ok(median) => { (waterfall_svg(&median.load, condition.axis_ms)) },
                        Err(why) => { p.missing { "No waterfall: " (why) "." } },
                    }
                }
            }
        }
    }
}

/// e.g. `median load 812 ms · 20 resources · 600.0 KB · 3 connections ·
/// repetition 1 of 3`.
fn caption(cell: &PageCell) -> String {
    let Ok(MedianLoad {
        repetition,
        of_repetitions,
        load,
    }) = &cell.median_load
    else {
        return String::new();
    };
    let mut parts = vec![
        format!("median load {} ms", number(load.load_ms)),
        format!("{} resources", load.resources.len()),
        format!("{} KB", number(load.bytes() as f64 / 1000.0)),
    ];
    if let Some(connections) = load.connections() {
        parts.push(format!("{connections} connection(s)"));
    }
    if *of_repetitions > 1 {
        parts.push(format!(
            "from repetition {repetition}, the median of {of_repetitions}"
        ));
    }
    parts.join(" · ")
}
