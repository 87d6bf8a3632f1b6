//! The bottleneck's service: a fixed bit rate or a Mahimahi delivery trace.

use std::path::Path;
use std::sync::Arc;

use super::{Nanos, Stage, Verdict, MILLI};

/// Bytes one trace delivery opportunity can carry (Mahimahi's PACKET_SIZE).
pub const TRACE_OPPORTUNITY_BYTES: u32 = 1500;

/// Latest timestamp a trace may have: one week, in milliseconds. Times are
/// nanoseconds in a `u64`, so a much longer period (a huge timestamp)
/// would overflow them as soon as the trace runs.
pub const MAX_TRACE_MS: u64 = 7 * 24 * 3600 * 1000;

/// A Mahimahi link trace: one millisecond timestamp per line, each a chance
/// to deliver 1500 bytes; the schedule repeats with period = last timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    name: String,
    opportunities_ms: Arc<[u64]>,
}

impl Trace {
    /// Parses trace text; `name` (usually the file path) appears in errors.
    pub fn parse(name: &str, text: &str) -> anyhow::Result<Trace> {
        let mut opportunities = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let ms: u64 = line.parse().map_err(|_| {
                anyhow::anyhow!(
                    "trace {name}, line {}: `{line}` is not a millisecond timestamp; \
                     expected one non-negative integer per line (Mahimahi format)",
                    index + 1
                )
            })?;
            if ms > MAX_TRACE_MS {
                anyhow::bail!(
                    "trace {name}, line {}: timestamp {ms} ms is beyond one week \
                     ({MAX_TRACE_MS} ms); a trace's period must be shorter",
                    index + 1
                );
            }
            if opportunities.last().is_some_and(|&last| ms < last) {
                anyhow::bail!(
                    "trace {name}, line {}: timestamp {ms} goes back in time; \
                     timestamps must not decrease",
                    index + 1
                );
            }
            opportunities.push(ms);
        }
        match opportunities.last() {
            None => anyhow::bail!("trace {name} has no timestamps; give a Mahimahi trace file"),
            Some(0) => anyhow::bail!(
                "trace {name} ends at 0 ms, so it cannot repeat; its last timestamp must be positive"
            ),
            Some(_) => Ok(Trace {
                name: name.to_string(),
                opportunities_ms: opportunities.into(),
            }),
        }
    }

    /// Reads and parses a trace file.
    pub(crate) fn load(path: &Path) -> anyhow::Result<Trace> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|err| {
            anyhow::anyhow!("cannot read trace file {name}: {err}; give a readable Mahimahi trace")
        })?;
        Trace::parse(&name, &text)
    }

    /// The name given to [`Trace::parse`], usually the file path.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Mean delivery rate over one period, in bits per second.
    pub(crate) fn mean_bits_per_sec(&self) -> f64 {
        let bits = self.opportunities_ms.len() as f64 * f64::from(TRACE_OPPORTUNITY_BYTES) * 8.0;
        bits / (self.period_ms() as f64 / 1000.0)
    }

    fn period_ms(&self) -> u64 {
        *self
            .opportunities_ms
            .last()
            .expect("parse rejects empty traces")
    }

    /// Time of the opportunity with this index, counting across repeats.
    fn time(&self, index: u64) -> Nanos {
        let n = self.opportunities_ms.len() as u64;
        let cycle = index / n;
        (cycle * self.period_ms() + self.opportunities_ms[(index % n) as usize]) * MILLI
    }

    /// Index of the first opportunity strictly after `at` (Mahimahi burns
    /// opportunities up to `now` before it enqueues an arriving packet).
    fn first_after(&self, at: Nanos) -> u64 {
        let period = self.period_ms() * MILLI;
        let cycle = at / period;
        let within = at - cycle * period;
        let index = self
            .opportunities_ms
            .partition_point(|&ms| ms * MILLI <= within);
        cycle * self.opportunities_ms.len() as u64 + index as u64
    }
}

/// The bottleneck's service discipline. Serves packets in arrival order.
pub(crate) enum Rate {
    /// No rate limit.
    Unlimited,
    /// Serialization at a fixed bit rate.
    Fixed {
        /// The rate, in bits/s.
        bits_per_sec: u64,
        /// When the link finishes sending what it has, in ns.
        free_at: Nanos,
    },
    /// Trace-driven delivery opportunities.
    Trace(TraceServer),
}

/// Progress through a trace.
pub(crate) struct TraceServer {
    trace: Trace,
    /// First opportunity nobody has used yet.
    next_unused: u64,
    /// The last used opportunity's time and the bytes it has left; an
    /// opportunity delivers up to 1500 bytes, possibly of several packets.
    partial: Option<(Nanos, u32)>,
}

impl Rate {
    pub fn fixed(bits_per_sec: u64) -> Rate {
        Rate::Fixed {
            bits_per_sec,
            free_at: 0,
        }
    }

    pub fn trace(trace: Trace) -> Rate {
        Rate::Trace(TraceServer {
            trace,
            next_unused: 0,
            partial: None,
        })
    }
}

impl TraceServer {
    fn serve(&mut self, len: u32, at: Nanos) -> Nanos {
        let mut need = len;
        if let Some((time, left)) = self.partial {
            // Bytes left in an opportunity serve only packets already queued
            // when it came; later arrivals find it gone.
            if at < time {
                let used = left.min(need);
                need -= used;
                if need == 0 {
                    self.partial = Some((time, left - used));
                    return time;
                }
            }
        }
        let first = self.next_unused.max(self.trace.first_after(at));
        let count = u64::from(need.div_ceil(TRACE_OPPORTUNITY_BYTES).max(1));
        let last = first + count - 1;
        let time = self.trace.time(last);
        let left = (count as u32) * TRACE_OPPORTUNITY_BYTES - need;
        self.partial = Some((time, left));
        self.next_unused = last + 1;
        time
    }
}

impl Stage for Rate {
    fn offer(&mut self, len: u32, at: Nanos) -> Verdict {
        match self {
            Rate::Unlimited => Verdict::Pass(at),
            Rate::Fixed {
                bits_per_sec,
                free_at,
            } => {
                let bits = u128::from(len) * 8 * 1_000_000_000;
                let serialization = bits.div_ceil(u128::from(*bits_per_sec)) as Nanos;
                *free_at = at.max(*free_at) + serialization;
                Verdict::Pass(*free_at)
            }
            Rate::Trace(server) => Verdict::Pass(server.serve(len, at)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(v: Verdict) -> Nanos {
        match v {
            Verdict::Pass(t) => t,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn fixed_rate_delivers_the_configured_rate_within_one_percent() {
        for bits_per_sec in [2_000_000u64, 30_000_000, 1_000_000_000, 7_000_000] {
            let mut rate = Rate::fixed(bits_per_sec);
            // Saturate: 20 000 mixed-size packets all offered at time 0..
            let sizes = [1500u32, 52, 1280, 600];
            let mut bytes = 0u64;
            let mut last = 0;
            for i in 0..20_000 {
                let len = sizes[i % sizes.len()];
                bytes += u64::from(len);
                last = pass(rate.offer(len, (i as Nanos) * 10));
            }
            let delivered = bytes as f64 * 8.0 / (last as f64 / 1e9);
            let error = (delivered - bits_per_sec as f64).abs() / bits_per_sec as f64;
            assert!(error < 0.01, "{bits_per_sec}: delivered {delivered}");
        }
    }

    #[test]
    fn fixed_rate_serialization_time_is_exact() {
        let mut rate = Rate::fixed(12_000_000);
        // 1500 bytes at 12 Mbit/s = 1 ms; an idle link starts at arrival.
        assert_eq!(pass(rate.offer(1500, 5 * MILLI)), 6 * MILLI);
        assert_eq!(pass(rate.offer(1500, 5 * MILLI)), 7 * MILLI);
        assert_eq!(pass(rate.offer(750, 20 * MILLI)), 20 * MILLI + MILLI / 2);
    }

    fn trace(text: &str) -> Trace {
        Trace::parse("test", text).unwrap()
    }

    #[test]
    fn trace_opportunities_deliver_one_mtu_and_repeat() {
        let mut rate = Rate::trace(trace("2\n2\n5\n10\n"));
        // All offered at 0: two at 2 ms, one at 5, one at 10, then the
        // schedule repeats shifted by the period (10 ms).
        let out: Vec<Nanos> = (0..8).map(|_| pass(rate.offer(1500, 0))).collect();
        let ms: Vec<Nanos> = out.iter().map(|t| t / MILLI).collect();
        assert_eq!(ms, [2, 2, 5, 10, 12, 12, 15, 20]);
    }

    #[test]
    fn one_opportunity_carries_several_small_packets() {
        let mut rate = Rate::trace(trace("1\n2\n3\n"));
        // 500-byte packets: three per opportunity.
        let out: Vec<Nanos> = (0..7).map(|_| pass(rate.offer(500, 0)) / MILLI).collect();
        assert_eq!(out, [1, 1, 1, 2, 2, 2, 3]);
    }

    #[test]
    fn a_packet_can_span_opportunities() {
        let mut rate = Rate::trace(trace("1\n2\n3\n4\n"));
        assert_eq!(pass(rate.offer(1000, 0)) / MILLI, 1);
        // 1000 bytes: 500 left at 1 ms, the rest at 2 ms.
        assert_eq!(pass(rate.offer(1000, 0)) / MILLI, 2);
        // 1000 more fit in the 1000 left at 2 ms.
        assert_eq!(pass(rate.offer(1000, 0)) / MILLI, 2);
    }

    #[test]
    fn unused_opportunities_are_lost() {
        let mut rate = Rate::trace(trace("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"));
        assert_eq!(pass(rate.offer(100, 0)) / MILLI, 1);
        // The rest of the 1 ms opportunity is gone by 3.5 ms; the next
        // opportunity strictly after arrival is 4 ms.
        assert_eq!(pass(rate.offer(100, 3 * MILLI + MILLI / 2)) / MILLI, 4);
        // Arriving exactly at an opportunity misses it (Mahimahi's order).
        assert_eq!(pass(rate.offer(100, 6 * MILLI)) / MILLI, 7);
        // Across the wrap: arriving at 25.5 ms uses 26 ms (6 + 2 * 10).
        assert_eq!(pass(rate.offer(100, 25 * MILLI + MILLI / 2)) / MILLI, 26);
    }

    #[test]
    fn trace_rate_matches_the_trace_mean() {
        let text: String = (1..=100).map(|ms| format!("{ms}\n{ms}\n")).collect();
        let t = trace(&text);
        assert_eq!(t.mean_bits_per_sec(), 2.0 * 1500.0 * 8.0 * 1000.0);
        let mut rate = Rate::trace(t);
        let mut last = 0;
        for _ in 0..10_000 {
            last = pass(rate.offer(1500, 0));
        }
        let delivered = 10_000.0 * 1500.0 * 8.0 / (last as f64 / 1e9);
        assert!((delivered / 24e6 - 1.0).abs() < 0.01, "{delivered}");
    }

    #[test]
    fn malformed_traces_name_the_line() {
        let err = Trace::parse("f.down", "1\n2\nabc\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("f.down") && err.contains("line 3"), "{err}");
        let err = Trace::parse("f.down", "5\n3\n").unwrap_err().to_string();
        assert!(
            err.contains("line 2") && err.contains("back in time"),
            "{err}"
        );
        let err = Trace::parse("f.down", "\n\n").unwrap_err().to_string();
        assert!(err.contains("no timestamps"), "{err}");
        let err = Trace::parse("f.down", "0\n0\n").unwrap_err().to_string();
        assert!(err.contains("cannot repeat"), "{err}");
        let err = Trace::parse("f.down", "-1\n").unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
    }

    #[test]
    fn timestamps_beyond_a_week_are_refused_rather_than_overflowing() {
        // Found by h3lab-fuzz: a timestamp near u64::MAX parsed, and the
        // first packet then overflowed the nanosecond arithmetic.
        let err = Trace::parse("f.down", "1\n18446744073709551615\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2") && err.contains("one week"), "{err}");
        let week = format!("1\n{MAX_TRACE_MS}\n");
        let mut rate = Rate::trace(Trace::parse("f.down", &week).unwrap());
        let last_day = (MAX_TRACE_MS - 24 * 3600 * 1000) * MILLI;
        assert_eq!(pass(rate.offer(1500, last_day)), MAX_TRACE_MS * MILLI);
        assert_eq!(pass(rate.offer(1500, last_day)), (MAX_TRACE_MS + 1) * MILLI);
    }

    #[test]
    fn real_traces_parse_with_their_documented_rates() {
        let Some(file) = h3lab_testenv::shared_file("traces/Verizon-LTE-short.down") else {
            return;
        };
        let dir = file.parent().unwrap();
        let t = Trace::load(&file).unwrap();
        // The traces README gives 5.03 Mbit/s.
        assert!((t.mean_bits_per_sec() / 5.03e6 - 1.0).abs() < 0.01);
        let err = Trace::load(&dir.join("missing.down"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("missing.down") && err.contains("cannot read"),
            "{err}"
        );
    }
}
