//! The versioned result of `probe hol`: `h3lab.hol/1`, documented in
//! docs/results-schema.md, and the per-protocol summary over its runs.

use std::fmt;

use h3lab_results::quantile::quantile_sorted;
use h3lab_results::Proto;
use serde::{Deserialize, Serialize};

use crate::claim::Claim;

/// The schema name and version written into every report.
pub const HOL_SCHEMA: &str = "h3lab.hol/1";

/// A whole `probe hol` run.
#[derive(Debug, Clone, Serialize)]
pub struct HolReport {
    /// Always [`HOL_SCHEMA`].
    pub schema: &'static str,
    /// The built-in profile, if one was named.
    pub profile: Option<String>,
    /// The path's settings (RTT, rates, loss) as run; each run's seed is
    /// in its entry.
    pub link: linkem::LinkSettings,
    /// Parallel streams on the one connection.
    pub streams: u32,
    /// Response body size of each stream (`/bytes/N`).
    pub body_bytes: u64,
    /// Repetitions of each protocol.
    pub repetitions: u32,
    /// Every protocol's run, repetition by repetition.
    pub runs: Vec<HolRun>,
    /// Per protocol, over every stream of every run.
    pub summary: Vec<ProtoSummary>,
    /// Study A's claim beside ours.
    pub claims: Vec<Claim>,
}

/// One protocol once, on its own fresh path.
#[derive(Debug, Clone, Serialize)]
pub struct HolRun {
    /// The protocol.
    pub proto: Proto,
    /// Which repetition, from 0.
    pub repetition: u32,
    /// The path's seed; both protocols of a repetition get the same one.
    pub seed: u64,
    /// What the path's random loss dropped.
    pub loss: LossPattern,
    /// The CPU each part used, to tell a busy receiver from a blocked one.
    pub cpu: RunCpu,
    /// Each stream, in stream-ID order.
    pub streams: Vec<StreamResult>,
}

/// Wall and CPU time of one run, from connecting to the last body byte
/// read.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunCpu {
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// CPU seconds of the client's thread (its whole stack runs there):
    /// near `wall_s` means the receiver was CPU-bound; `null` when
    /// /proc/thread-self/schedstat could not be read.
    pub client_s: Option<f64>,
    /// Seconds the client's thread was ready to run but waited for a CPU
    /// (the machine was busy): a wait it adds to every stream's stall.
    pub client_waiting_s: Option<f64>,
    /// The server's processes over the client's run (10 ms resolution);
    /// `null` when /proc could not be read.
    pub server_s: Option<f64>,
    /// The emulator's forwarding thread over the path's life.
    pub emulator_s: f64,
}

/// Which packets random loss dropped in each direction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LossPattern {
    /// Client to server.
    pub up: DirectionLoss,
    /// Server to client.
    pub down: DirectionLoss,
}

/// One direction's packets and the indices (from 0, in the order the
/// emulator got them) of those random loss dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectionLoss {
    /// Packets offered to the direction.
    pub packets: u64,
    /// Indices of the packets dropped by random loss.
    pub lost: Vec<u64>,
    /// Packets the full bottleneck queue dropped: congestion, which
    /// depends on how the protocol sends, so it is not part of the seeded
    /// pattern.
    pub queue_drops: u64,
}

/// One stream's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamResult {
    /// h2 stream ID or QUIC stream ID.
    pub stream_id: u64,
    /// Body bytes read.
    pub body_bytes: u64,
    /// Head-of-line stall: the longest time body data that could have
    /// been read (it and everything before it on the same stream had
    /// arrived) waited before the application got it; `null` when it
    /// could not be measured (see `unmeasured`).
    pub stall_ms: Option<f64>,
    /// h2: the part of the stall spent in TCP's connection-wide order
    /// (its bytes were in, earlier bytes of the connection were not);
    /// the rest is the receiver's processing. `null` for h3, whose
    /// transport has no such order, and when unmeasured.
    pub transport_order_wait_ms: Option<f64>,
    /// From sending the request to reading the last body byte.
    pub completion_ms: Option<f64>,
    /// Why the stall is missing, if it is.
    pub unmeasured: Option<String>,
}

/// One protocol's distribution over every measured stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtoSummary {
    /// The protocol.
    pub proto: Proto,
    /// Streams with a measured stall.
    pub streams_measured: usize,
    /// Streams whose stall could not be measured.
    pub streams_unmeasured: usize,
    /// The per-stream stalls.
    pub stall_ms: Option<Spread>,
    /// h2: the per-stream waits in TCP's order; `null` for h3.
    pub transport_order_wait_ms: Option<Spread>,
    /// The per-stream completion times.
    pub completion_ms: Option<Spread>,
}

/// Mean and order statistics of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (interpolated, as every h3lab quantile of raw samples).
    pub p50: f64,
    /// 90th percentile (interpolated).
    pub p90: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// `None` for an empty sample.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Spread {
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
            p50: quantile_sorted(&sorted, 0.5),
            p90: quantile_sorted(&sorted, 0.9),
            min: *sorted.first()?,
            max: *sorted.last()?,
        })
    }
}

/// Every stream's stall (and completion) of `proto` across runs.
pub fn stalls(runs: &[HolRun], proto: Proto) -> (Vec<f64>, Vec<f64>) {
    let streams = runs
        .iter()
        .filter(|run| run.proto == proto)
        .flat_map(|run| &run.streams);
    let stalls = streams.clone().filter_map(|s| s.stall_ms).collect();
    let completions = streams.filter_map(|s| s.completion_ms).collect();
    (stalls, completions)
}

/// The summary of each protocol that ran, in `protos` order.
pub fn summarise(runs: &[HolRun], protos: &[Proto]) -> Vec<ProtoSummary> {
    protos
        .iter()
        .map(|&proto| {
            let (stall, completion) = stalls(runs, proto);
            let order_waits: Vec<f64> = runs
                .iter()
                .filter(|run| run.proto == proto)
                .flat_map(|run| &run.streams)
                .filter_map(|s| s.transport_order_wait_ms)
                .collect();
            let unmeasured = runs
                .iter()
                .filter(|run| run.proto == proto)
                .flat_map(|run| &run.streams)
                .filter(|s| s.stall_ms.is_none())
                .count();
            ProtoSummary {
                proto,
                streams_measured: stall.len(),
                streams_unmeasured: unmeasured,
                stall_ms: Spread::of(&stall),
                transport_order_wait_ms: Spread::of(&order_waits),
                completion_ms: Spread::of(&completion),
            }
        })
        .collect()
}

impl HolReport {
    /// Per protocol that ran, `pick` of every stream of its runs (a
    /// distribution to draw).
    pub fn per_stream(&self, pick: fn(&StreamResult) -> Option<f64>) -> Vec<(Proto, Vec<f64>)> {
        self.summary
            .iter()
            .map(|summary| {
                let values = self
                    .runs
                    .iter()
                    .filter(|run| run.proto == summary.proto)
                    .flat_map(|run| run.streams.iter().filter_map(pick))
                    .collect();
                (summary.proto, values)
            })
            .collect()
    }

    /// What was run, then each claim, a sentence each.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = vec![format!(
            "{} parallel GETs of {} bytes on one connection; profile {}, RTT {} ms, loss {:.1} %; seeds {} to {}.",
            self.streams,
            self.body_bytes,
            self.profile.as_deref().unwrap_or("custom"),
            self.link.rtt / 1_000_000,
            self.link.loss.mean_loss() * 100.0,
            self.link.seed,
            self.link.seed + u64::from(self.repetitions) - 1,
        )];
        notes.extend(self.claims.iter().map(|claim| {
            format!(
                "Study {}, {}: theirs {}; ours {}.",
                claim.study, claim.claim, claim.theirs, claim.ours
            )
        }));
        notes
    }
}

/// A line per protocol over every stream, then a line per claim.
impl fmt::Display for HolReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let summaries = self.summary.iter().map(|summary| {
            format!(
                "{} over {} stream(s): stall {}{}; completion {}",
                summary.proto,
                summary.streams_measured,
                spread_line(summary.stall_ms),
                order_clause(summary.transport_order_wait_ms),
                spread_line(summary.completion_ms),
            )
        });
        let claims = self.claims.iter().map(ToString::to_string);
        write!(
            f,
            "{}",
            summaries.chain(claims).collect::<Vec<_>>().join("\n")
        )
    }
}

/// One line: the run's stalls, completions, losses and the client's CPU.
impl fmt::Display for HolRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let order: Vec<f64> = self
            .streams
            .iter()
            .filter_map(|s| s.transport_order_wait_ms)
            .collect();
        let stalls: Vec<f64> = self.streams.iter().filter_map(|s| s.stall_ms).collect();
        let completions: Vec<f64> = self
            .streams
            .iter()
            .filter_map(|s| s.completion_ms)
            .collect();
        let unmeasured = self.streams.iter().filter(|s| s.stall_ms.is_none()).count();
        write!(
            f,
            "{} repetition {} (seed {}): stall {}{}; completion {}; lost down {} of {} packets (+{} queue drops), up {} of {}; client {}",
            self.proto,
            self.repetition + 1,
            self.seed,
            spread_line(Spread::of(&stalls)),
            order_clause(Spread::of(&order)),
            spread_line(Spread::of(&completions)),
            self.loss.down.lost.len(),
            self.loss.down.packets,
            self.loss.down.queue_drops,
            self.loss.up.lost.len(),
            self.loss.up.packets,
            self.cpu,
        )?;
        match unmeasured {
            0 => Ok(()),
            n => write!(f, "; {n} stream(s) unmeasured"),
        }
    }
}

/// The client's CPU and its wait for a CPU, against the run's wall time.
impl fmt::Display for RunCpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.client_s, self.client_waiting_s) {
            (Some(running), Some(waiting)) => write!(
                f,
                "ran {:.0} ms and waited for a CPU {:.0} ms of {:.0} ms",
                running * 1e3,
                waiting * 1e3,
                self.wall_s * 1e3
            ),
            _ => write!(f, "CPU unknown over {:.0} ms", self.wall_s * 1e3),
        }
    }
}

fn spread_line(spread: Option<Spread>) -> String {
    spread.map_or("-".to_string(), |s| {
        format!("median {:.1}, p90 {:.1}, max {:.1} ms", s.p50, s.p90, s.max)
    })
}

/// h2's wait in TCP's order, as a clause; nothing for h3.
fn order_clause(spread: Option<Spread>) -> String {
    spread.map_or(String::new(), |s| {
        format!(
            " (in TCP's order: median {:.1}, max {:.1} ms)",
            s.p50, s.max
        )
    })
}

impl LossPattern {
    /// True when `other` dropped the same packet indices as this one over
    /// the packets both directions saw (the runs send different numbers
    /// of packets, so only the common prefix can agree).
    pub fn agrees_with(&self, other: &LossPattern) -> bool {
        self.up.agrees_with(&other.up) && self.down.agrees_with(&other.down)
    }
}

impl DirectionLoss {
    fn agrees_with(&self, other: &DirectionLoss) -> bool {
        let common = self.packets.min(other.packets);
        let within = |loss: &DirectionLoss| -> Vec<u64> {
            loss.lost.iter().copied().filter(|&i| i < common).collect()
        };
        within(self) == within(other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_interpolates_between_closest_ranks() {
        let values: Vec<f64> = (1..=10).map(f64::from).collect();
        let spread = Spread::of(&values).unwrap();
        assert_eq!((spread.p50, spread.min, spread.max), (5.5, 1.0, 10.0));
        assert!((spread.p90 - 9.1).abs() < 1e-12, "{}", spread.p90);
        assert_eq!(spread.mean, 5.5);
        assert_eq!(Spread::of(&[]), None);
    }

    #[test]
    fn loss_patterns_agree_over_the_common_packets_only() {
        let loss = |packets, lost: &[u64]| DirectionLoss {
            packets,
            lost: lost.to_vec(),
            queue_drops: 0,
        };
        let a = LossPattern {
            up: loss(50, &[7]),
            down: loss(100, &[3, 40, 90]),
        };
        let b = LossPattern {
            up: loss(60, &[7, 55]),
            down: loss(80, &[3, 40]),
        };
        assert!(a.agrees_with(&b));
        let c = LossPattern {
            down: loss(80, &[3, 41]),
            ..b.clone()
        };
        assert!(!a.agrees_with(&c));
    }
}
