//! What `probe migrate` does: which change, when, and the request stream.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use h3lab_results::Proto;
use serde::Serialize;

/// Longest run accepted, so a typo cannot tie up the machine for hours.
const MAX_DURATION: Duration = Duration::from_secs(600);
/// Highest request rate accepted: every request is its own task.
const MAX_RATE: u32 = 10_000;
/// The delay threshold never goes below this, so a path without added
/// RTT does not count every request as delayed.
const DELAY_FLOOR: Duration = Duration::from_millis(10);
/// The request timeout never goes below this.
const TIMEOUT_FLOOR: Duration = Duration::from_secs(1);

/// How the client's address changes at the switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// A new client port (NAT rebinding).
    Port,
    /// A new client IP address (a network handoff).
    Address,
}

impl FromStr for Change {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<Change> {
        match text.trim().to_ascii_lowercase().as_str() {
            "port" => Ok(Change::Port),
            "address" => Ok(Change::Address),
            _ => anyhow::bail!(
                "`{text}` is not a change; write `port` (NAT rebinding) or `address` (network handoff)"
            ),
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Change::Port => "port",
            Change::Address => "address",
        })
    }
}

/// One migration experiment, run once per protocol on a fresh path.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// What changes at the switch.
    pub change: Change,
    /// Protocols to run, in order.
    pub protos: Vec<Proto>,
    /// Requests started per second (open model: on schedule, whatever the
    /// responses do).
    pub rate_per_s: u32,
    /// How long requests are started.
    pub duration: Duration,
    /// When the change happens, from the first request.
    pub switch_at: Duration,
    /// Size of each response body (`/bytes/N`).
    pub body_bytes: u64,
    /// A request with no complete response this long after its intended
    /// start fails, and its connection counts as broken.
    pub request_timeout: Duration,
    /// A successful request slower than this counts as delayed.
    pub delay_threshold: Duration,
}

impl Scenario {
    /// Rejects values that cannot make a run, naming the fix.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.protos.is_empty(),
            "no protocol to run; give --proto h1,h2,h3 or a subset"
        );
        anyhow::ensure!(
            !self.protos.contains(&Proto::Auto),
            "probe migrate follows one protocol's connection; give --proto h1,h2,h3 or a subset"
        );
        anyhow::ensure!(
            (1..=MAX_RATE).contains(&self.rate_per_s),
            "--rate {} is out of range; give 1 to {MAX_RATE} requests per second",
            self.rate_per_s
        );
        anyhow::ensure!(
            !self.duration.is_zero() && self.duration <= MAX_DURATION,
            "--duration {:?} is out of range; give more than 0 and at most {} s",
            self.duration,
            MAX_DURATION.as_secs()
        );
        anyhow::ensure!(
            !self.switch_at.is_zero() && self.switch_at < self.duration,
            "--switch-at {:?} is not inside the run of {:?}; give a time after 0 and before --duration",
            self.switch_at,
            self.duration
        );
        anyhow::ensure!(
            !self.request_timeout.is_zero(),
            "--request-timeout must be positive, e.g. 1s"
        );
        anyhow::ensure!(
            self.requests() >= 2,
            "{} request(s) make no stream; raise --rate or --duration",
            self.requests()
        );
        Ok(())
    }

    /// How many requests the run starts.
    pub fn requests(&self) -> u64 {
        (self.duration.as_secs_f64() * f64::from(self.rate_per_s)).round() as u64
    }

    /// When request `index` is meant to start, from the first one.
    pub fn intended_at(&self, index: u64) -> Duration {
        Duration::from_secs_f64(index as f64 / f64::from(self.rate_per_s))
    }
}

/// Twice the path's RTT, at least 10 ms: a small request needs one round
/// trip, so twice that means it waited for something.
pub fn default_delay_threshold(rtt: Duration) -> Duration {
    (rtt * 2).max(DELAY_FLOOR)
}

/// Eight round trips, at least 1 s: long enough for a retransmission on
/// a healthy path, short enough to notice a dead connection in the run.
pub fn default_request_timeout(rtt: Duration) -> Duration {
    (rtt * 8).max(TIMEOUT_FLOOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        Scenario {
            change: Change::Port,
            protos: vec![Proto::H3],
            rate_per_s: 50,
            duration: Duration::from_secs(4),
            switch_at: Duration::from_secs(2),
            body_bytes: 1000,
            request_timeout: Duration::from_secs(1),
            delay_threshold: Duration::from_millis(40),
        }
    }

    #[test]
    fn requests_follow_the_rate() {
        let scenario = scenario();
        assert_eq!(scenario.requests(), 200);
        assert_eq!(scenario.intended_at(0), Duration::ZERO);
        assert_eq!(scenario.intended_at(25), Duration::from_millis(500));
        scenario.validate().unwrap();
    }

    /// Spoils one value of a good scenario.
    type Spoil = fn(&mut Scenario);

    #[test]
    fn bad_values_name_the_flag_to_fix() {
        let cases: [(Spoil, &str); 4] = [
            (|s| s.rate_per_s = 0, "--rate"),
            (|s| s.switch_at = Duration::from_secs(4), "--switch-at"),
            (|s| s.duration = Duration::ZERO, "--duration"),
            (|s| s.protos.clear(), "--proto"),
        ];
        for (spoil, flag) in cases {
            let mut bad = scenario();
            spoil(&mut bad);
            let message = bad.validate().unwrap_err().to_string();
            assert!(message.contains(flag), "{message}");
        }
    }

    #[test]
    fn changes_parse_and_unknown_ones_list_the_choices() {
        assert_eq!("Port".parse::<Change>().unwrap(), Change::Port);
        assert_eq!("address".parse::<Change>().unwrap(), Change::Address);
        let message = "wifi".parse::<Change>().unwrap_err().to_string();
        assert!(
            message.contains("`port`") && message.contains("`address`"),
            "{message}"
        );
    }

    #[test]
    fn defaults_scale_with_the_rtt_above_their_floors() {
        let rtt = Duration::from_millis(20);
        assert_eq!(default_delay_threshold(rtt), Duration::from_millis(40));
        assert_eq!(default_delay_threshold(Duration::ZERO), DELAY_FLOOR);
        assert_eq!(default_request_timeout(rtt), TIMEOUT_FLOOR);
        let far = Duration::from_millis(500);
        assert_eq!(default_request_timeout(far), Duration::from_secs(4));
    }
}
