//! One cell of the matrix: profile × workload × protocol (× handshake
//! mode × swept setting) at one repetition.

use h3lab_results::bench::Replica;
use h3lab_results::{Proto, TtfbMode};

use crate::suite::Workload;
use crate::sweep::Setting;

/// One cell of the matrix, at one repetition.
#[derive(Debug, Clone)]
pub struct CellSpec {
    pub(crate) profile: String,
    pub(crate) workload: Workload,
    pub(crate) protocol: Proto,
    pub(crate) mode: Option<TtfbMode>,
    /// The swept tunable's value the server runs with, if the workload is swept.
    pub(crate) setting: Option<Setting>,
    pub(crate) repetition: u32,
    /// In a field run, which load (page) or sample (ttfb) of the
    /// repetition this cell is: each is a cell of its own, so the
    /// protocols take turns load by load on a path that drifts.
    pub(crate) unit: Option<Unit>,
    /// In an A/A run, which of the protocol's two identical runs this is.
    pub(crate) replica: Option<Replica>,
}

/// One load (page) or sample (ttfb) of a field run's repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unit {
    /// Which, from 0.
    pub(crate) index: u32,
    /// Of how many in the repetition.
    pub(crate) count: u32,
}

impl CellSpec {
    /// A short label for progress lines: `broadband api-1KB h3 #2`.
    pub fn label(&self) -> String {
        let mode = self.mode.map(|m| format!(" {m}")).unwrap_or_default();
        let unit = self
            .unit
            .map(|u| format!(".{}", u.index + 1))
            .unwrap_or_default();
        let protocol = self.protocol.to_string();
        let protocol = match self.replica {
            Some(replica) => replica.label(&protocol),
            None => protocol,
        };
        format!(
            "{} {}{} {protocol} #{}{unit}",
            self.profile,
            self.workload_label(),
            mode,
            self.repetition + 1
        )
    }

    /// The repetition its record counts as: in a field run each load or
    /// sample is one of its own (the statistics resample them as such),
    /// numbered on through the suite's repetitions.
    pub(crate) fn record_repetition(&self) -> u32 {
        match self.unit {
            Some(unit) => self.repetition * unit.count + unit.index,
            None => self.repetition,
        }
    }

    /// The workload's name, with the swept setting when there is one.
    pub fn workload_label(&self) -> String {
        crate::sweep::workload_label(self.workload.name(), self.setting.as_ref())
    }
}
