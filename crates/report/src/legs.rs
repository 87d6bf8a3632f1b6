//! Where an edge cell's time went: each response's wait for the origin,
//! as the edge said in `Server-Timing`, and the rest (the client leg and
//! the edge's own work), merged over a cell's successful repetitions.

use h3lab_results::bench::{CellRecord, ClientReport};
use h3lab_results::load::OriginLeg;
use serde::Serialize;

use crate::histogram::LatencySummary;

/// A cell's responses split between an edge's two legs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LegsSummary {
    /// Responses whose edge said how long it waited for its origin.
    pub responses: u64,
    /// Every response of the cell, said or not.
    pub of_responses: u64,
    /// The edge's wait for the origin's response head.
    pub origin_wait: LatencySummary,
    /// Each response's latency without that wait.
    pub rest: LatencySummary,
}

/// The split of a cell's successful repetitions; `None` when no response
/// carried its edge's origin time (no edge, or one that does not say).
pub(crate) fn legs(ok: &[&CellRecord]) -> Option<LegsSummary> {
    let mut merged: Option<OriginLeg> = None;
    for record in ok {
        let Some(leg) = (record.client_report.as_ref())
            .and_then(ClientReport::load)
            .and_then(|report| report.origin_leg.as_ref())
        else {
            continue;
        };
        merged.get_or_insert_default().add(leg);
    }
    let merged = merged?;
    Some(LegsSummary {
        responses: merged.responses,
        of_responses: ok.iter().map(|record| record.requests).sum(),
        origin_wait: LatencySummary::of_micros(&merged.origin_wait_us)?,
        rest: LatencySummary::of_micros(&merged.client_leg_us)?,
    })
}

impl LegsSummary {
    /// The split in words: `latency`, the origin's wait and the rest, each
    /// at p50 and p99.
    pub(crate) fn line(&self, latency: &LatencySummary) -> String {
        let said = match self.responses == self.of_responses {
            true => String::new(),
            false => format!(
                " ({} of {} responses said)",
                self.responses, self.of_responses
            ),
        };
        format!(
            "latency p50 {} / p99 {} ms = origin wait p50 {} / p99 {} ms + the rest p50 {} / \
             p99 {} ms{said}",
            ms(latency.p50_ms),
            ms(latency.p99_ms),
            ms(self.origin_wait.p50_ms),
            ms(self.origin_wait.p99_ms),
            ms(self.rest.p50_ms),
            ms(self.rest.p99_ms),
        )
    }
}

fn ms(value: f64) -> String {
    match value < 10.0 {
        true => format!("{value:.1}"),
        false => format!("{value:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use h3lab_results::Micros;

    use super::*;
    use crate::fixture::rps_record;

    /// A repetition whose client report says `(origin wait, rest)` in ms
    /// for `said` responses of its 1,000.
    fn repetition(rep: u32, said: &[(u64, u64)]) -> CellRecord {
        let mut leg = OriginLeg {
            responses: said.len() as u64,
            origin_wait_us: Micros::default(),
            client_leg_us: Micros::default(),
        };
        for &(wait, rest) in said {
            leg.origin_wait_us.record(Duration::from_millis(wait));
            leg.client_leg_us.record(Duration::from_millis(rest));
        }
        CellRecord {
            client_report: Some(crate::fixture::load_report(Some(leg))),
            ..rps_record("broadband", "h3", rep, 1.0, Some(&[1000]))
        }
    }

    #[test]
    fn the_split_is_merged_over_the_repetitions_and_says_how_many_responses_said() {
        let (a, b) = (repetition(0, &[(80, 20); 3]), repetition(1, &[(90, 30)]));
        let split = legs(&[&a, &b]).expect("both said");
        assert_eq!((split.responses, split.of_responses), (4, 2000));
        // Within the histograms' 0.1 %.
        let near = |ms: f64, expected: f64| (ms - expected).abs() <= expected / 1000.0;
        assert!(near(split.origin_wait.p50_ms, 80.0), "{split:?}");
        assert!(near(split.origin_wait.max_ms, 90.0), "{split:?}");
        assert!(near(split.rest.p50_ms, 20.0), "{split:?}");
    }

    #[test]
    fn a_cell_without_an_edge_that_says_has_no_split() {
        let plain = rps_record("broadband", "h3", 0, 1.0, None);
        assert_eq!(legs(&[&plain]), None);
        let silent = CellRecord {
            client_report: Some(crate::fixture::load_report(None)),
            ..plain.clone()
        };
        assert_eq!(legs(&[&silent]), None);
        let unreadable = CellRecord {
            client_report: Some(ClientReport::Unreadable("h3lab.load/9".into())),
            ..plain.clone()
        };
        assert_eq!(legs(&[&unreadable]), None);
    }
}
