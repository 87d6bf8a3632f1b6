//! CPU use over a cell's measured interval (the client's run): the
//! server's processes, the link emulator's forwarding thread and the whole
//! machine, read just before the client starts and just after it exits.

use std::time::Instant;

use h3lab_results::bench::CpuUse;
use h3lab_supervise::Supervised;
use linkem::EmulatedPath;

/// CPU counters at one moment.
pub(crate) struct Reading {
    at: Instant,
    server_s: Option<f64>,
    emulator_s: Option<f64>,
    machine: Option<MachineTicks>,
}

/// Busy and total clock ticks of all cores, from /proc/stat's `cpu` line.
#[derive(Clone, Copy)]
struct MachineTicks {
    busy: u64,
    total: u64,
}

impl Reading {
    pub(crate) fn now(server: Option<&Supervised>, path: Option<&EmulatedPath>) -> Reading {
        Reading {
            at: Instant::now(),
            server_s: server.and_then(Supervised::group_cpu_s),
            emulator_s: path.map(EmulatedPath::forwarder_cpu_s),
            machine: std::fs::read_to_string("/proc/stat")
                .ok()
                .and_then(|stat| machine_ticks(&stat)),
        }
    }
}

/// Fills the interval figures of `cpu` from readings before and after.
pub(crate) fn record_interval(before: &Reading, after: &Reading, cpu: &mut CpuUse) {
    let delta = |a: Option<f64>, b: Option<f64>| Some((b? - a?).max(0.0));
    cpu.interval_s = Some(after.at.duration_since(before.at).as_secs_f64());
    cpu.server_interval_s = delta(before.server_s, after.server_s);
    cpu.emulator_interval_s = delta(before.emulator_s, after.emulator_s);
    cpu.machine_busy = match (before.machine, after.machine) {
        (Some(a), Some(b)) if b.total > a.total => {
            Some(b.busy.saturating_sub(a.busy) as f64 / (b.total - a.total) as f64)
        }
        _ => None,
    };
}

/// `cpu  user nice system idle iowait irq softirq steal ...`: idle and
/// iowait are not busy; the guest columns are already in user and nice.
fn machine_ticks(stat: &str) -> Option<MachineTicks> {
    let line = stat.lines().find(|line| line.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|field| field.parse().ok())
        .collect::<Option<_>>()?;
    let total: u64 = ticks.iter().sum();
    let idle = ticks.get(3)? + ticks.get(4)?;
    Some(MachineTicks {
        busy: total - idle,
        total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_busy_is_the_share_of_non_idle_ticks() {
        let before = machine_ticks("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3").unwrap();
        let after = machine_ticks("cpu  250 0 100 850 50 0 0 0 0 0\n").unwrap();
        let reading = |machine| Reading {
            at: Instant::now(),
            server_s: Some(1.0),
            emulator_s: None,
            machine: Some(machine),
        };
        let mut cpu = CpuUse::default();
        record_interval(&reading(before), &reading(after), &mut cpu);
        // busy 150 + 50 = 200 of 250 ticks
        assert_eq!(cpu.machine_busy, Some(0.8));
        assert_eq!(cpu.server_interval_s, Some(0.0));
        assert_eq!(cpu.emulator_interval_s, None);
    }
}
