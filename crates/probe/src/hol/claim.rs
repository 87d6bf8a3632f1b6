//! Study A's claim about head-of-line blocking, with our figure beside it.

use crate::claim::Claim;

/// Study A: HTTP/3 shows 40 % lower head-of-line blocking latency than
/// HTTP/2 at 1 % loss.
const STUDY_A_HOL_CHANGE_PERCENT: f64 = -40.0;

/// Study A's head-of-line claim beside ours: the mean per-stream stall of
/// h3 against h2's, on the same path at `loss_percent`. `None` means a
/// protocol was not run or had no measured stream.
pub fn hol_claim(
    h2_mean_stall_ms: Option<f64>,
    h3_mean_stall_ms: Option<f64>,
    loss_percent: f64,
) -> Claim {
    let change = match (h2_mean_stall_ms, h3_mean_stall_ms) {
        (Some(h2), Some(h3)) if h2 > 0.0 => Some((h3 - h2) / h2 * 100.0),
        _ => None,
    };
    let ours = match (h2_mean_stall_ms, h3_mean_stall_ms, change) {
        (Some(h2), Some(h3), Some(change)) => format!(
            "mean stall per stream at {loss_percent} % loss: h2 {h2:.1} ms, h3 {h3:.1} ms: {change:+.0} %"
        ),
        (Some(_), Some(h3), None) => {
            format!("h2 never stalled at {loss_percent} % loss (h3 {h3:.1} ms): nothing to compare")
        }
        _ => "needs measured h2 and h3 runs".to_string(),
    };
    Claim::fall(
        "A",
        "head-of-line blocking latency, h3 against h2 at 1 % loss",
        STUDY_A_HOL_CHANGE_PERCENT,
        ours,
        change,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hol_claim_compares_mean_stalls_and_says_when_it_cannot() {
        let lower = hol_claim(Some(80.0), Some(2.0), 1.0);
        assert_eq!(lower.ours_change_percent, Some(-97.5));
        assert_eq!(lower.same_direction, Some(true));
        assert!(
            lower.ours.contains("h2 80.0 ms, h3 2.0 ms: -98 %"),
            "{}",
            lower.ours
        );
        let higher = hol_claim(Some(2.0), Some(3.0), 2.0);
        assert_eq!(higher.same_direction, Some(false));
        let none = hol_claim(Some(0.0), Some(1.0), 1.0);
        assert_eq!(none.ours_change_percent, None);
        assert!(none.ours.contains("h2 never stalled"), "{}", none.ours);
        assert_eq!(
            hol_claim(None, Some(1.0), 1.0).ours,
            "needs measured h2 and h3 runs"
        );
    }
}
