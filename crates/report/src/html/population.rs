//! The "Population" section: for a `[population]` suite, each page or
//! rps workload's verdict over all the groups' users, the two CDFs on one
//! axis, each group's change, and the rollout lines.

use maud::{html, Markup};

use super::call_class;
use crate::distribution::{cdf_svg, Curve};
use crate::population::handoff::{handoff_verdict, HandoffVerdict};
use crate::population::text::{change, figure, percent};
use crate::population::{population_verdicts, Mixed, PopulationVerdict};
use h3lab_results::bench::Results;

/// The whole section; nothing without a population.
pub(super) fn population_section(results: &Results) -> Markup {
    let verdicts = population_verdicts(results);
    let handoffs = handoff_verdict(results);
    if verdicts.is_empty() && handoffs.is_none() {
        return html! {};
    }
    html! {
        section #population {
            h2 { "Population" }
            p.hint { "Each group's samples weighed by its share of the users: the population's "
                "distribution, not an average of medians. Intervals: 95 % bootstrap that redraws "
                "each group's repetitions on their own, so a group with few repetitions widens "
                "them. Better or worse: a permutation test that deals each group's repetitions "
                "between its sides gives p ≤ 0.05 (docs/population.md)." }
            @for verdict in &verdicts { (card(verdict)) }
            @if let Some(handoffs) = &handoffs { (handoff_card(handoffs)) }
        }
    }
}

fn handoff_card(verdict: &HandoffVerdict) -> Markup {
    let call = verdict
        .resets
        .as_ref()
        .map_or("verdict muted", |r| call_class(r.call));
    html! {
        div.card.population {
            h3 { "Handoffs" }
            p.hint { (verdict.title()) }
            p class=(call) { (verdict.headline()) }
            @for line in verdict.loser_lines() { p.warning { (line) } }
            table {
                thead { tr { th { "group" } th { "h3 off → on" } } }
                tbody {
                    @for row in &verdict.groups {
                        tr { td { (row.title()) } td { (row.outcome()) } }
                    }
                }
            }
            @for row in &verdict.published { p.study { (row.line()) } }
        }
    }
}

fn card(verdict: &PopulationVerdict) -> Markup {
    html! {
        div.card.population {
            h3 { (verdict.workload) " (" (verdict.what) ")" }
            p { (verdict.headline()) }
            @for line in verdict.loser_lines() { p.warning { (line) } }
            @if let Ok(mixed) = &verdict.mixed { (mixed_part(verdict, mixed)) }
            (groups_table(verdict))
            p { (verdict.costs_line()) }
            @for row in &verdict.published { p.study { (row.line()) } }
        }
    }
}

fn mixed_part(verdict: &PopulationVerdict, mixed: &Mixed) -> Markup {
    let shares: Vec<String> = (verdict.groups.iter())
        .map(|row| format!("{} {}", row.group.name, percent(row.group.share)))
        .collect();
    let curves = [
        Curve {
            legend: "h3 off".to_string(),
            steps: mixed.steps.off.clone(),
        },
        Curve {
            legend: "h3 on".to_string(),
            steps: mixed.steps.on.clone(),
        },
    ];
    html! {
        table {
            thead { tr { th { "" } th { "h3 off" } th { "h3 on" } th { "change" } } }
            tbody {
                @for row in &mixed.quantiles {
                    tr {
                        td { (row.name) }
                        td { (figure(&row.figures.off)) }
                        td { (figure(&row.figures.on)) }
                        td class=(call_class(row.call)) {
                            (change(&row.change, row.figures.off.value)) ": " (row.call.word())
                        }
                    }
                }
            }
        }
        figure {
            (cdf_svg(&curves, &format!("{} (ms)", verdict.what), "fraction of users", true))
            figcaption { "The population's " (verdict.what) ", h3 off and on. Groups: " (shares.join(", ")) "." }
        }
        h4 { "Rollout" }
        p.hint { "The population with this share of every group's users on h3, and the change against none." }
        table {
            thead { tr { th { "on h3" } th { "p75" } th { "change" } th { "p99" } th { "change" } } }
            tbody {
                @for row in &mixed.rollout {
                    tr {
                        td { (percent(row.fraction)) }
                        td { (figure(&row.p75)) }
                        td class=(call_class(row.p75_call)) { (change(&row.p75_change, 0.0)) }
                        td { (figure(&row.p99)) }
                        td class=(call_class(row.p99_call)) { (change(&row.p99_change, 0.0)) }
                    }
                }
            }
        }
        p { (verdict.visibility_line()) }
    }
}

fn groups_table(verdict: &PopulationVerdict) -> Markup {
    html! {
        h4 { "Each group, at p75" }
        table {
            thead { tr { th { "group" } th { "h3 off → on" } } }
            tbody {
                @for row in &verdict.groups {
                    tr {
                        td { (row.title()) }
                        td class=(row.p75.as_ref().map_or("verdict muted", |p75| call_class(p75.call))) {
                            (row.outcome())
                        }
                    }
                }
            }
        }
    }
}
