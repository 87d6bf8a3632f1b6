//! The population verdict in words: the lines the terminal prints, which
//! the HTML report shows too.

use h3lab_results::population::Estimate;

use h3lab_results::bench::Results;

use super::handoff::{handoff_verdict, HandoffGroup, HandoffSide, HandoffVerdict};
use super::{
    population_verdicts, GroupRow, PopulationVerdict, PublishedRow, QuantileRow, RolloutRow, Side,
};
use crate::format::number;
use crate::format::wrapped;

/// `412.3 ms [398.0, 430.1]`.
pub(crate) fn figure(estimate: &Estimate) -> String {
    format!(
        "{} ms [{}, {}]",
        number(estimate.value),
        number(estimate.interval.0),
        number(estimate.interval.1)
    )
}

/// `−20.0 ms [−35.1, −3.2]`, with the change relative to `from` when it
/// is not zero.
pub(crate) fn change(estimate: &Estimate, from: f64) -> String {
    let relative = match from {
        0.0 => String::new(),
        from => format!(
            " ({}{:.1} %)",
            sign(estimate.value),
            estimate.value / from * 100.0
        ),
    };
    format!(
        "{}{} ms [{}{}, {}{}]{relative}",
        sign(estimate.value),
        number(estimate.value),
        sign(estimate.interval.0),
        number(estimate.interval.0),
        sign(estimate.interval.1),
        number(estimate.interval.1)
    )
}

fn sign(value: f64) -> &'static str {
    if value > 0.0 {
        "+"
    } else {
        ""
    }
}

/// `50 %` or `2 %`.
pub(crate) fn percent(fraction: f64) -> String {
    let text = number(fraction * 100.0);
    match text.contains('.') {
        true => format!("{} %", text.trim_end_matches('0').trim_end_matches('.')),
        false => format!("{text} %"),
    }
}

impl QuantileRow {
    /// `p75: 420 ms [..] → 400 ms [..], −20 ms [..] (−4.8 %): better`.
    pub(crate) fn line(&self) -> String {
        format!(
            "{}: {} → {}, {}: {}",
            self.name,
            figure(&self.figures.off),
            figure(&self.figures.on),
            change(&self.change, self.figures.off.value),
            self.call.word()
        )
    }
}

impl GroupRow {
    /// `home (55 %; broadband, UDP open, alt-svc, h2 when off)`.
    pub(crate) fn title(&self) -> String {
        let group = &self.group;
        let mut parts = vec![
            group.network.clone(),
            format!("UDP {}", group.udp),
            group.discovery.clone(),
            format!("{} when off", group.off),
        ];
        parts.extend(group.loader.map(|loader| loader.to_string()));
        parts.extend(group.visit.map(|visit| format!("{visit} visit")));
        format!(
            "{} ({}; {})",
            group.name,
            percent(group.share),
            parts.join(", ")
        )
    }

    /// Its p75 off and on, or why it is unknown.
    pub(crate) fn outcome(&self) -> String {
        let failed = match (self.failed.off, self.failed.on) {
            (0, 0) => String::new(),
            (off, on) => format!(" ({off} repetitions failed off, {on} on)"),
        };
        let served = match (self.over_h3.off, self.over_h3.on) {
            (Some(off), Some(on)) => {
                format!("; requests over h3 {} → {}", percent(off), percent(on))
            }
            _ => String::new(),
        };
        match &self.p75 {
            Some(p75) => format!("{}{served}{failed}", p75.line()),
            None => format!("unknown: no successful repetition on a side{failed}"),
        }
    }
}

impl RolloutRow {
    /// `10 % on h3: p75 418 ms [..] (−2 ms [..]: no clear difference), p99 …`.
    pub(crate) fn line(&self) -> String {
        format!(
            "{} on h3: p75 {} ({}: {}), p99 {} ({}: {})",
            percent(self.fraction),
            figure(&self.p75),
            change(&self.p75_change, 0.0),
            self.p75_call.word(),
            figure(&self.p99),
            change(&self.p99_change, 0.0),
            self.p99_call.word()
        )
    }
}

impl PublishedRow {
    /// `B: API p99 on mobile: 1200 → 850 ms (−29.2 %); ours (phones):
    /// 900 → 800 ms (−11.1 %)`.
    pub(crate) fn line(&self) -> String {
        let figure = &self.figure;
        let theirs = match (figure.off, figure.on, figure.change_percent) {
            (Some(off), Some(on), _) => pair(off, on, &figure.unit),
            (_, _, Some(change)) => format!("{}{change:.1} %", sign(change)),
            _ => "no figure".to_string(),
        };
        let whose = figure.group.as_deref().unwrap_or("everyone");
        let ours = match (self.ours.off, self.ours.on) {
            (Some(off), Some(on)) => pair(off, on, self.unit),
            _ => "unknown".to_string(),
        };
        let note = match figure.note.is_empty() {
            true => String::new(),
            false => format!(". {}", figure.note),
        };
        format!(
            "{}, {}: {theirs}; ours ({whose}): {ours}{note}",
            figure.study, figure.label
        )
    }
}

/// `1200 → 850 ms (−29.2 %)`.
fn pair(off: f64, on: f64, unit: &str) -> String {
    let relative = match off {
        0.0 => String::new(),
        off => format!(" ({}{:.1} %)", sign(on - off), (on - off) / off * 100.0),
    };
    format!("{} → {} {unit}{relative}", number(off), number(on))
}

impl PopulationVerdict {
    /// The one-line answer: what h3 on does to the population's p75 and
    /// p99, and whom it hurts.
    pub(crate) fn headline(&self) -> String {
        let mixed = match &self.mixed {
            Ok(mixed) => mixed,
            Err(groups) => {
                return format!(
                    "the population's {} is unknown: group{} {} had no successful repetition \
                     on a side, and a figure from the other groups would not be this population's",
                    self.what,
                    if groups.len() > 1 { "s" } else { "" },
                    groups.join(", ")
                )
            }
        };
        let at = |name: &str| mixed.quantiles.iter().find(|row| row.name == name);
        let said = |row: Option<&QuantileRow>| {
            row.map_or(String::new(), |row| {
                format!(
                    "{} {} ({})",
                    row.name,
                    change(&row.change, row.figures.off.value),
                    row.call.word()
                )
            })
        };
        format!(
            "turning h3 on changes the population's {}: {}; {}",
            self.what,
            said(at("p75")),
            said(at("p99"))
        )
    }

    /// A line for each group h3 on hurts, named even when the population
    /// gains.
    pub(crate) fn loser_lines(&self) -> Vec<String> {
        self.losers()
            .iter()
            .map(|row| {
                let p75 = row.p75.as_ref().expect("a loser has a p75");
                format!(
                    "! h3 on makes {} worse for {} ({} of users): p75 {}",
                    self.what,
                    row.group.name,
                    percent(row.group.share),
                    change(&p75.change, p75.figures.off.value)
                )
            })
            .collect()
    }

    /// Where a rollout starts to show, with this run's samples.
    pub(crate) fn visibility_line(&self) -> String {
        let at = |p99: bool| match self.smallest_visible(p99) {
            Some(fraction) => format!("from {} of users on h3", percent(fraction)),
            None => "at no fraction, even 100 %".to_string(),
        };
        format!(
            "with this run's samples a rollout is told from noise at p75 {}, at p99 {}",
            at(false),
            at(true)
        )
    }

    /// Connections per page load (pages) or the server's CPU per request
    /// (request rates).
    pub(crate) fn costs_line(&self) -> String {
        let pair_or_unknown = |side: &Side<Option<f64>>, unit: &str| match (side.off, side.on) {
            (Some(off), Some(on)) => pair(off, on, unit),
            _ => "unknown".to_string(),
        };
        let mut parts = Vec::new();
        if let Some(connections) = &self.connections {
            let figure = pair_or_unknown(connections, "connections");
            parts.push(format!("connections per page load {figure}"));
        }
        if let Some(cpu) = &self.server_cpu_us {
            parts.push(format!(
                "the server's CPU per request {}",
                pair_or_unknown(cpu, "µs")
            ));
        }
        format!("h3 off → on: {}", parts.join("; "))
    }
}

impl HandoffVerdict {
    /// `population: handoffs (...)`: what ran.
    pub(crate) fn title(&self) -> String {
        let scenario = &self.scenario;
        format!(
            "population: handoffs (the client's address changes {:.1} s into {:.1} s of {} \
             requests/s of {} bytes, as when a phone moves between networks; each group's h3-off \
             protocol, then h3)",
            scenario.switch_at_s, scenario.duration_s, scenario.rate_per_s, scenario.body_bytes
        )
    }

    /// The share of handoffs that reset over the moving groups' users.
    pub(crate) fn headline(&self) -> String {
        match &self.resets {
            Ok(resets) => format!(
                "turning h3 on changes the share of handoffs that end in a connection reset \
                 from {} to {} over the moving groups' users: {} points [{}, {}]: {}",
                percent(resets.off),
                percent(resets.on),
                signed(resets.change.value * 100.0),
                signed(resets.change.interval.0 * 100.0),
                signed(resets.change.interval.1 * 100.0),
                resets.call.word()
            ),
            Err(groups) => format!(
                "the share of handoffs that reset is unknown: {} had no completed handoff run \
                 on a side",
                groups.join(", ")
            ),
        }
    }

    /// A line for each group whose handoffs reset more often with h3 on.
    pub(crate) fn loser_lines(&self) -> Vec<String> {
        (self.groups.iter())
            .filter(
                |row| match (row.sides.off.reset_share(), row.sides.on.reset_share()) {
                    (Some(off), Some(on)) => on > off,
                    _ => false,
                },
            )
            .map(|row| {
                format!(
                    "! h3 on resets more of {}'s handoffs ({} of users): {}",
                    row.group.name,
                    percent(row.group.share),
                    row.outcome()
                )
            })
            .collect()
    }
}

impl HandoffGroup {
    /// `phone (30 %; lte)`.
    pub(crate) fn title(&self) -> String {
        format!(
            "{} ({}; {})",
            self.group.name,
            percent(self.group.share),
            self.group.network
        )
    }

    /// `h3 off (h2): 5 of 5 reset, longest stall 1030 ms (median); h3 on (h3): 0 of 5, 72 ms`.
    pub(crate) fn outcome(&self) -> String {
        let side = |name: &str, side: &HandoffSide| {
            let stall = side.median_stall_ms.map_or(String::new(), |ms| {
                format!(", longest stall {} ms (median)", number(ms))
            });
            let failed = match side.failed {
                0 => String::new(),
                failed => format!(" ({failed} runs failed)"),
            };
            format!(
                "{name} ({}): {} of {} reset{stall}{failed}",
                side.protocol, side.resets, side.completed
            )
        };
        format!(
            "{}; {}",
            side("h3 off", &self.sides.off),
            side("h3 on", &self.sides.on)
        )
    }
}

/// `+1.5` or `−20`.
fn signed(value: f64) -> String {
    format!("{}{}", sign(value), number(value))
}

/// The handoffs' block: the headline, each group, the losers and the
/// studies' figures.
fn handoff_block(verdict: &HandoffVerdict) -> Vec<(u16, String)> {
    let mut lines = vec![(0, verdict.title()), (2, verdict.headline())];
    for row in &verdict.groups {
        lines.push((4, row.title()));
        lines.push((6, row.outcome()));
    }
    lines.extend(verdict.loser_lines().into_iter().map(|line| (2, line)));
    lines.extend(verdict.published.iter().map(|row| (2, row.line())));
    lines
}

/// The population verdict of a `[population]` suite, as the terminal
/// prints it under the tables; empty without one.
pub(crate) fn terminal_lines(results: &Results) -> String {
    let mut out = String::new();
    let mut block = population_block(&population_verdicts(results));
    block.extend(handoff_verdict(results).iter().flat_map(handoff_block));
    for (indent, line) in block {
        if indent == 0 {
            out.push('\n');
        }
        out.push_str(&wrapped(indent, &line));
    }
    out
}

/// The terminal's population block: for each workload, the headline, the
/// percentiles, each group, the losers, the rollout and the costs.
fn population_block(verdicts: &[PopulationVerdict]) -> Vec<(u16, String)> {
    let mut lines = Vec::new();
    for verdict in verdicts {
        lines.push((
            0,
            format!("population: {} ({})", verdict.workload, verdict.what),
        ));
        lines.push((2, verdict.headline()));
        if let Ok(mixed) = &verdict.mixed {
            lines.extend(mixed.quantiles.iter().map(|row| (4, row.line())));
        }
        lines.push((2, "each group, at p75:".to_string()));
        for row in &verdict.groups {
            lines.push((4, row.title()));
            lines.push((6, row.outcome()));
        }
        lines.extend(verdict.loser_lines().into_iter().map(|line| (2, line)));
        if let Ok(mixed) = &verdict.mixed {
            lines.push((2, "rollout (against no user on h3):".to_string()));
            lines.extend(mixed.rollout.iter().map(|row| (4, row.line())));
            lines.push((2, verdict.visibility_line()));
        }
        lines.push((2, verdict.costs_line()));
        lines.extend(verdict.published.iter().map(|row| (2, row.line())));
    }
    lines
}
