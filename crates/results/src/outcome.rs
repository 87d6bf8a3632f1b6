//! How a repetition (a cell's, or a handoff run's) ended.

use serde::{Deserialize, Serialize};

/// How a repetition ended, tagged by `status` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The repetition completed.
    Ok,
    /// The repetition failed; it carries no samples.
    Failed {
        /// What went wrong.
        error: String,
    },
    /// Ctrl-C stopped the run during the repetition; it carries no samples.
    Interrupted,
    /// The server does not offer what the cell measures (a resumed or
    /// 0-RTT handshake from a server that issues no session tickets): no
    /// samples, and not a failure.
    NotOffered {
        /// What the server lacks, as the client saw it.
        reason: String,
    },
}
