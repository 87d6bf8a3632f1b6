//! Facts about the machine a worker runs on, for its report: its name and
//! what the kernel knows of its clock's accuracy.

use h3lab_results::env::NODE;
use h3lab_results::load::Clock;

/// The machine's name: the node's under `h3lab dist k8s` (its pods' own
/// host names are all `JOB-INDEX`), else the host name.
pub(crate) fn name() -> String {
    if let Some(node) = std::env::var(NODE).ok().filter(|node| !node.is_empty()) {
        return node;
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}

/// The kernel's clock discipline state, read with `adjtimex` (which only
/// reads when no mode bit is set, so it needs no privilege).
pub(crate) fn clock() -> Clock {
    // SAFETY: `timex` is plain old data; all-zero is a valid value, and
    // with `modes` zero the call only fills it in.
    let mut timex: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: `timex` is a valid, exclusive pointer for the call.
    let state = unsafe { libc::adjtimex(&mut timex) };
    if state == -1 {
        return Clock::default();
    }
    let synchronized = state != libc::TIME_ERROR && timex.status & libc::STA_UNSYNC == 0;
    Clock {
        synchronized: Some(synchronized),
        max_error_us: synchronized.then_some(timex.maxerror as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_answers_about_its_clock() {
        let clock = clock();
        assert!(clock.synchronized.is_some(), "{clock:?}");
        assert_eq!(
            clock.max_error_us.is_some(),
            clock.synchronized == Some(true)
        );
        assert!(!name().is_empty());
    }
}
