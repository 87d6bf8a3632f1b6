//! The written form of a [`UdpPolicy`]: `open`, `blocked`,
//! `blocked-after:N`, `throttle:RATE`, as flags, suite files and results
//! give it.

use std::fmt;

use serde::{Serialize, Serializer};

use super::parse::{format_rate, parse_rate};
use crate::model::UdpPolicy;

/// Parses `open`, `blocked`, `blocked-after:N` or `throttle:RATE`
/// (`throttle:2mbit`); the error names the accepted forms.
pub fn parse_udp_policy(text: &str) -> Result<UdpPolicy, String> {
    let accepted =
        "use open, blocked, blocked-after:N (packets) or throttle:RATE (e.g. throttle:1mbit)";
    match text.split_once(':') {
        None if text == "open" => Ok(UdpPolicy::Open),
        None if text == "blocked" => Ok(UdpPolicy::Blocked),
        Some(("blocked-after", count)) => count
            .parse()
            .map(|packets| UdpPolicy::BlockedAfter { packets })
            .map_err(|_| format!("`{count}` in `{text}` is not a packet count; {accepted}")),
        Some(("throttle", rate)) => parse_rate(rate)
            .map(|bits_per_sec| UdpPolicy::Throttle { bits_per_sec })
            .map_err(|_| format!("`{rate}` in `{text}` is not a rate above zero; {accepted}")),
        _ => Err(format!("`{text}` is not a UDP policy; {accepted}")),
    }
}

impl fmt::Display for UdpPolicy {
    /// The form [`parse_udp_policy`] reads.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            UdpPolicy::Open => write!(f, "open"),
            UdpPolicy::Blocked => write!(f, "blocked"),
            UdpPolicy::BlockedAfter { packets } => write!(f, "blocked-after:{packets}"),
            UdpPolicy::Throttle { bits_per_sec } => {
                write!(f, "throttle:{}", format_rate(*bits_per_sec))
            }
        }
    }
}

impl Serialize for UdpPolicy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_print_alike() {
        for text in ["open", "blocked", "blocked-after:20", "throttle:2mbit"] {
            assert_eq!(parse_udp_policy(text).unwrap().to_string(), text);
        }
        assert_eq!(
            parse_udp_policy("throttle:500kbit").unwrap(),
            UdpPolicy::Throttle {
                bits_per_sec: 500_000
            }
        );
        for bad in [
            "closed",
            "throttle:fast",
            "throttle:0mbit",
            "blocked-after:x",
        ] {
            let err = parse_udp_policy(bad).unwrap_err();
            assert!(err.contains("use open, blocked"), "{bad}: {err}");
        }
    }
}
