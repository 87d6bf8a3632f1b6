//! Cells whose figure may be a saturated CPU's rather than the protocol's:
//! the server, the client or the link emulator neared a full core during
//! the measured interval, the machine neared all its cores, or the
//! emulator fell behind its schedule. The report marks such cells and
//! names which one.

use h3lab_results::bench::CellRecord;
use serde::Serialize;

use crate::format::list_repetitions;

/// A process using this many cores or more neared a full one.
pub const NEAR_FULL_CORE: f64 = 0.9;
/// The machine this busy (share of all cores) neared its total.
pub const NEAR_FULL_MACHINE: f64 = 0.9;
/// The emulator fell behind when this share of its packets or more left
/// over a millisecond late (`released_late` in the link statistics)...
pub const LATE_PACKETS: f64 = 0.01;
/// ...and at least this many: one or two late packets of a short cell are
/// a scheduling hiccup of the machine, not an emulator behind its schedule.
pub const LATE_PACKETS_MIN: u64 = 10;

/// What ran short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resource {
    Server,
    Client,
    Emulator,
    Machine,
    /// The emulator's schedule, rather than its CPU.
    EmulatorSchedule,
}

/// A resource that ran short in some repetitions of a cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bottleneck {
    pub resource: Resource,
    /// The largest figure over those repetitions: cores for a process, a
    /// share (0 to 1) for the machine and for late packets.
    pub worst: f64,
    pub repetitions: Vec<u32>,
}

impl Bottleneck {
    /// e.g. `server at 0.97 cores (repetitions 1 and 2)`.
    pub fn describe(&self) -> String {
        let what = match self.resource {
            Resource::Server => format!("server at {:.2} cores", self.worst),
            Resource::Client => format!("client at {:.2} cores", self.worst),
            Resource::Emulator => format!("link emulator at {:.2} cores", self.worst),
            Resource::Machine => format!("machine {:.0} % busy", self.worst * 100.0),
            Resource::EmulatorSchedule => format!(
                "link emulator behind: {:.1} % of packets over 1 ms late",
                self.worst * 100.0
            ),
        };
        let plural = if self.repetitions.len() == 1 { "" } else { "s" };
        format!(
            "{what} (repetition{plural} {})",
            list_repetitions(&self.repetitions)
        )
    }
}

/// The bottlenecks of one cell's repetitions, one per resource, in the
/// order of [`Resource`].
pub fn bottlenecks(records: &[&CellRecord]) -> Vec<Bottleneck> {
    let mut found: Vec<Bottleneck> = Vec::new();
    for record in records {
        for (resource, figure) in marks(record) {
            match found.iter_mut().find(|b| b.resource == resource) {
                Some(known) => {
                    known.worst = known.worst.max(figure);
                    known.repetitions.push(record.repetition);
                }
                None => found.push(Bottleneck {
                    resource,
                    worst: figure,
                    repetitions: vec![record.repetition],
                }),
            }
        }
    }
    found.sort_by_key(|b| b.resource);
    found
}

/// What ran short in one repetition, with its figure.
fn marks(record: &CellRecord) -> Vec<(Resource, f64)> {
    let cpu = &record.cpu;
    let cores = |seconds: Option<f64>| Some(seconds? / cpu.interval_s.filter(|s| *s > 0.0)?);
    [
        (
            Resource::Server,
            cores(cpu.server_interval_s),
            NEAR_FULL_CORE,
        ),
        (Resource::Client, cores(Some(cpu.client_s)), NEAR_FULL_CORE),
        (
            Resource::Emulator,
            cores(cpu.emulator_interval_s),
            NEAR_FULL_CORE,
        ),
        (Resource::Machine, cpu.machine_busy, NEAR_FULL_MACHINE),
        (Resource::EmulatorSchedule, late_share(record), LATE_PACKETS),
    ]
    .into_iter()
    .filter_map(|(resource, figure, limit)| figure.filter(|f| *f >= limit).map(|f| (resource, f)))
    .collect()
}

/// Share of the link's delivered packets that left over 1 ms late, both
/// directions together; `None` without link statistics or with fewer than
/// [`LATE_PACKETS_MIN`] late.
fn late_share(record: &CellRecord) -> Option<f64> {
    let link = record.link.as_ref()?;
    let delivered = link.down.packets_out + link.up.packets_out;
    let late = link.down.released_late + link.up.released_late;
    (delivered > 0 && late >= LATE_PACKETS_MIN).then(|| late as f64 / delivered as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use h3lab_results::bench::CpuUse;

    fn record(repetition: u32, cpu: CpuUse) -> CellRecord {
        let mut record = crate::fixture::rps_record("broadband", "h2", repetition, 1.0, None);
        record.cpu = cpu;
        record
    }

    fn measured(server_s: f64, client_s: f64, machine_busy: f64) -> CpuUse {
        CpuUse {
            client_s,
            server_s,
            interval_s: Some(2.0),
            server_interval_s: Some(server_s),
            emulator_interval_s: Some(0.2),
            machine_busy: Some(machine_busy),
        }
    }

    #[test]
    fn a_server_near_a_full_core_is_named_with_its_repetitions() {
        let records = [
            record(1, measured(1.9, 0.4, 0.6)),
            record(2, measured(1.0, 0.4, 0.5)),
            record(3, measured(1.95, 0.4, 0.6)),
        ];
        let found = bottlenecks(&records.iter().collect::<Vec<_>>());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].resource, Resource::Server);
        assert_eq!(found[0].repetitions, vec![1, 3]);
        assert_eq!(
            found[0].describe(),
            "server at 0.97 cores (repetitions 1 and 3)"
        );
    }

    #[test]
    fn a_busy_machine_and_a_busy_client_are_both_named() {
        let records = [record(1, measured(0.2, 1.9, 0.95))];
        let found = bottlenecks(&records.iter().collect::<Vec<_>>());
        let described: Vec<String> = found.iter().map(Bottleneck::describe).collect();
        assert_eq!(
            described,
            vec![
                "client at 0.95 cores (repetition 1)",
                "machine 95 % busy (repetition 1)"
            ]
        );
    }

    #[test]
    fn an_emulator_behind_its_schedule_is_named() {
        let mut late = record(1, measured(0.2, 0.2, 0.3));
        late.link = Some(crate::fixture::link((900, 15), (100, 0)));
        let found = bottlenecks(&[&late]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].describe(),
            "link emulator behind: 1.5 % of packets over 1 ms late (repetition 1)"
        );
    }

    #[test]
    fn a_few_late_packets_of_a_short_cell_are_not_a_backlog() {
        let mut short = record(1, measured(0.2, 0.2, 0.3));
        short.link = Some(crate::fixture::link((30, 2), (18, 0)));
        assert!(bottlenecks(&[&short]).is_empty());
    }

    #[test]
    fn a_cell_with_spare_cpu_or_no_interval_figures_is_not_marked() {
        let spare = record(1, measured(0.5, 0.5, 0.5));
        let unknown = record(2, CpuUse::default());
        assert!(bottlenecks(&[&spare, &unknown]).is_empty());
    }
}
