//! One cell of the matrix: profile × workload × protocol (× handshake
//! mode) at one repetition.

use h3lab_results::{Proto, TtfbMode};

use crate::suite::Workload;

/// One cell of the matrix, at one repetition.
#[derive(Debug, Clone)]
pub struct CellSpec {
    pub(crate) profile: String,
    pub(crate) workload: Workload,
    pub(crate) protocol: Proto,
    pub(crate) mode: Option<TtfbMode>,
    pub(crate) repetition: u32,
}

impl CellSpec {
    /// A short label for progress lines: `broadband api-1KB h3 #2`.
    pub fn label(&self) -> String {
        let mode = self.mode.map(|m| format!(" {m}")).unwrap_or_default();
        format!(
            "{} {}{} {} #{}",
            self.profile,
            self.workload.name(),
            mode,
            self.protocol,
            self.repetition + 1
        )
    }
}
