//! A published claim beside what a probe measured: the shared line of the
//! migrate and hol reports.

use std::fmt;

use serde::Serialize;

/// One published claim and what this run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Claim {
    /// The study (see `studies.md`): `A` or `B`.
    pub study: &'static str,
    /// The claim in a few words.
    pub claim: &'static str,
    /// Their figure.
    pub theirs: String,
    /// Ours, from this run.
    pub ours: String,
    /// Their change in percent, when the claim is one.
    pub theirs_change_percent: Option<f64>,
    /// Ours; `None` when it cannot be computed (a protocol not run, or no
    /// h2 failure to compare with).
    pub ours_change_percent: Option<f64>,
    /// Whether ours points the same way as theirs; `None` when unknown.
    pub same_direction: Option<bool>,
}

impl Claim {
    /// A claim that a figure falls by `theirs` percent, beside our
    /// `change`: the same direction when ours falls too.
    pub(crate) fn fall(
        study: &'static str,
        claim: &'static str,
        theirs: f64,
        ours: String,
        change: Option<f64>,
    ) -> Claim {
        Claim {
            study,
            claim,
            theirs: format!("{theirs:+.0} %"),
            ours,
            theirs_change_percent: Some(theirs),
            ours_change_percent: change,
            same_direction: change.map(|change| change < 0.0),
        }
    }
}

/// One line: the claim, theirs, ours, and whether they point the same way.
impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = match self.same_direction {
            Some(true) => "same direction",
            Some(false) => "OTHER direction",
            None => "not comparable",
        };
        write!(
            f,
            "study {}, {}: theirs {}; ours {} ({verdict})",
            self.study, self.claim, self.theirs, self.ours
        )
    }
}
