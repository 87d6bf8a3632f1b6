//! HTTP/3 discovery as browsers do it: the `Alt-Svc` header (RFC 7838)
//! learned from responses over TCP, and Chromium's rules for when a new
//! connection races QUIC against TCP. Pure: time comes in as `Instant`s,
//! so the rules are tested in virtual time; [`crate::race`] is the shell.
//!
//! The rules, from Chromium's network stack (`net/http/
//! http_stream_factory_job_controller.cc`, `net/quic/quic_session_pool.cc`,
//! `net/http/broken_alternative_services.cc`):
//! - An origin with no `h3` alternative cached connects over TCP only.
//! - With one cached and not marked broken, QUIC starts first and TCP
//!   after a delay; the first to connect carries the requests. The delay
//!   is zero until QUIC has worked on this network (`require_confirmation`),
//!   then 1.5 × the origin's last QUIC smoothed RTT, or 300 ms without one.
//! - A QUIC attempt that fails marks the alternative broken for 5 minutes,
//!   doubling with each further failure (at most 2 days); a QUIC connection
//!   that succeeds clears the mark.
//! - `Alt-Svc: clear` forgets the origin's alternatives; `ma` (default 24 h)
//!   bounds how long one is kept.
//! - A DNS `HTTPS` record (RFC 9460) whose `alpn` lists `h3` makes QUIC a
//!   candidate from the first connection, raced against TCP by the same
//!   rules (Chromium's `DNS_ALPN_H3` job, which blocks the TCP job as an
//!   `Alt-Svc` job does, and whose failure marks the origin's `h3`
//!   endpoint broken). It lasts as long as the record's TTL, and a
//!   learned `Alt-Svc` is preferred over it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long an alternative is kept without `ma` (RFC 7838 3.1).
const DEFAULT_MAX_AGE: Duration = Duration::from_secs(86_400);
/// TCP's delay behind QUIC once QUIC works on the network, when the
/// origin has no QUIC RTT yet (Chromium's `kDefaultRTT`).
const DEFAULT_TCP_DELAY: Duration = Duration::from_millis(300);
/// The first broken mark (Chromium's `kDefaultBrokenAlternativeProtocolDelay`).
const FIRST_BROKEN_PERIOD: Duration = Duration::from_secs(300);
/// The longest broken mark (Chromium's `kMaxBrokenAlternativeProtocolDelay`).
const MAX_BROKEN_PERIOD: Duration = Duration::from_secs(2 * 86_400);

/// An HTTP/3 endpoint an origin advertised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternative {
    /// Another host, or `None` for the origin's own.
    pub host: Option<String>,
    /// The UDP port.
    pub port: u16,
    /// How long the advertisement holds.
    pub max_age: Duration,
}

/// What one `Alt-Svc` field value says about HTTP/3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AltSvc {
    /// `clear`: forget every alternative of the origin.
    Clear,
    /// The `h3` alternatives, in the server's order of preference; other
    /// protocols (drafts such as `h3-29`) are left out.
    H3(Vec<Alternative>),
}

/// Parses an `Alt-Svc` field value; `Err` says what is malformed.
pub fn parse_alt_svc(value: &str) -> Result<AltSvc, String> {
    if value.trim() == "clear" {
        return Ok(AltSvc::Clear);
    }
    let mut alternatives = Vec::new();
    for entry in split_outside_quotes(value, ',') {
        let mut parts = split_outside_quotes(entry, ';').into_iter();
        let alternative = parts.next().unwrap_or_default();
        let (protocol, authority) = alternative
            .split_once('=')
            .ok_or_else(|| format!("`{alternative}` is not PROTOCOL=\"HOST:PORT\""))?;
        let authority = unquote(authority.trim())?;
        let (host, port) = authority
            .rsplit_once(':')
            .ok_or_else(|| format!("`{authority}` has no port"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| format!("`{port}` in `{authority}` is not a port"))?;
        let mut max_age = DEFAULT_MAX_AGE;
        for parameter in parts {
            if let Some(("ma", seconds)) = parameter.split_once('=').map(|(k, v)| (k.trim(), v)) {
                let seconds: u64 = unquote(seconds.trim())?
                    .parse()
                    .map_err(|_| format!("`ma={seconds}` is not a number of seconds"))?;
                max_age = Duration::from_secs(seconds);
            }
        }
        if protocol.trim() == "h3" {
            alternatives.push(Alternative {
                host: (!host.is_empty()).then(|| host.to_string()),
                port,
                max_age,
            });
        }
    }
    Ok(AltSvc::H3(alternatives))
}

fn split_outside_quotes(text: &str, separator: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            c if c == separator && !quoted => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(text[start..].trim());
    parts.retain(|part| !part.is_empty());
    parts
}

fn unquote(text: &str) -> Result<&str, String> {
    match text.strip_prefix('"') {
        Some(rest) => rest
            .strip_suffix('"')
            .ok_or_else(|| format!("`{text}` has no closing quote")),
        None => Ok(text),
    }
}

/// How a new connection to an origin is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectPlan {
    /// TCP only: no usable alternative.
    Tcp,
    /// QUIC to `alternative` at once, TCP after `tcp_delay`; the first to
    /// connect wins.
    Race {
        /// Where QUIC goes.
        alternative: Alternative,
        /// How long TCP waits behind QUIC.
        tcp_delay: Duration,
    },
}

#[derive(Debug, Clone, Default)]
struct Origin {
    /// From `Alt-Svc`, with when it expires.
    alternative: Option<(Alternative, Instant)>,
    /// From a DNS `HTTPS` record, with when it expires.
    from_dns: Option<(Alternative, Instant)>,
    broken_until: Option<Instant>,
    /// Failures in a row, which lengthen the next broken mark.
    failures: u32,
    quic_rtt: Option<Duration>,
}

/// What a browser remembers about HTTP/3 across visits: each origin's
/// alternatives and broken marks, and whether QUIC has worked on this
/// network.
#[derive(Debug, Clone, Default)]
pub struct H3Discovery {
    origins: HashMap<String, Origin>,
    quic_works_here: bool,
}

impl H3Discovery {
    /// Takes in the `Alt-Svc` value of a response from `origin` over TCP;
    /// a malformed value is ignored, as browsers do.
    pub fn observe(&mut self, origin: &str, alt_svc: &str, now: Instant) {
        let Ok(parsed) = parse_alt_svc(alt_svc) else {
            return;
        };
        let state = self.origins.entry(origin.to_string()).or_default();
        state.alternative = match parsed {
            AltSvc::Clear => None,
            AltSvc::H3(alternatives) => alternatives
                .into_iter()
                .next()
                .map(|alternative| {
                    let expires = now + alternative.max_age;
                    (alternative, expires)
                })
                .or(state.alternative.take()),
        };
    }

    /// Takes in a DNS `HTTPS` record of `origin` that lists `h3`: QUIC at
    /// the record's `port`, or the origin's own when it has none, for the
    /// record's TTL (`alternative.max_age`).
    pub fn observe_https_record(&mut self, origin: &str, alternative: Alternative, now: Instant) {
        let expires = now + alternative.max_age;
        self.origins.entry(origin.to_string()).or_default().from_dns = Some((alternative, expires));
    }

    /// How the next connection to `origin` is made at `now`.
    pub fn plan(&self, origin: &str, now: Instant) -> ConnectPlan {
        let Some(state) = self.origins.get(origin) else {
            return ConnectPlan::Tcp;
        };
        let current = |known: &Option<(Alternative, Instant)>| {
            known.clone().filter(|(_, expires)| now < *expires)
        };
        let usable = current(&state.alternative)
            .or_else(|| current(&state.from_dns))
            .filter(|_| state.broken_until.is_none_or(|until| now >= until));
        match usable {
            None => ConnectPlan::Tcp,
            Some((alternative, _)) => ConnectPlan::Race {
                alternative,
                tcp_delay: match (self.quic_works_here, state.quic_rtt) {
                    (false, _) => Duration::ZERO,
                    (true, Some(rtt)) => rtt * 3 / 2,
                    (true, None) => DEFAULT_TCP_DELAY,
                },
            },
        }
    }

    /// A QUIC connection to `origin` completed its handshake.
    pub fn quic_connected(&mut self, origin: &str, smoothed_rtt: Duration) {
        self.quic_works_here = true;
        let state = self.origins.entry(origin.to_string()).or_default();
        state.quic_rtt = Some(smoothed_rtt);
        state.broken_until = None;
        state.failures = 0;
    }

    /// A QUIC attempt to `origin` failed: its alternative is broken for a
    /// while.
    pub fn quic_failed(&mut self, origin: &str, now: Instant) {
        let state = self.origins.entry(origin.to_string()).or_default();
        let period = FIRST_BROKEN_PERIOD
            .saturating_mul(1 << state.failures.min(16))
            .min(MAX_BROKEN_PERIOD);
        state.failures += 1;
        state.broken_until = Some(now + period);
    }

    /// Marks QUIC as known to work on this network, as a browser that used
    /// it here before remembers (Chromium keeps this per local address).
    pub fn assume_quic_works_here(&mut self) {
        self.quic_works_here = true;
    }

    /// Whether QUIC has worked on this network.
    pub fn quic_works_here(&self) -> bool {
        self.quic_works_here
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGIN: &str = "https://example.test";

    fn h3(port: u16, max_age: u64) -> Alternative {
        Alternative {
            host: None,
            port,
            max_age: Duration::from_secs(max_age),
        }
    }

    #[test]
    fn parses_h3_alternatives_and_skips_other_protocols() {
        assert_eq!(
            parse_alt_svc(
                r#"h3-29=":443"; ma=60, h3=":8443"; ma=3600; persist=1, h3="alt.test:443""#
            ),
            Ok(AltSvc::H3(vec![
                h3(8443, 3600),
                Alternative {
                    host: Some("alt.test".to_string()),
                    port: 443,
                    max_age: DEFAULT_MAX_AGE
                }
            ]))
        );
        assert_eq!(parse_alt_svc(" clear "), Ok(AltSvc::Clear));
        assert_eq!(parse_alt_svc(r#"h2=":443""#), Ok(AltSvc::H3(vec![])));
    }

    #[test]
    fn malformed_values_say_what_is_wrong() {
        assert!(parse_alt_svc(r#"h3=":port""#)
            .unwrap_err()
            .contains("not a port"));
        assert!(parse_alt_svc(r#"h3=":443"#)
            .unwrap_err()
            .contains("closing quote"));
        assert!(parse_alt_svc("h3").unwrap_err().contains("PROTOCOL="));
        assert!(parse_alt_svc(r#"h3=":443"; ma=soon"#)
            .unwrap_err()
            .contains("seconds"));
    }

    #[test]
    fn an_origin_without_alternatives_connects_over_tcp() {
        let discovery = H3Discovery::default();
        assert_eq!(discovery.plan(ORIGIN, Instant::now()), ConnectPlan::Tcp);
    }

    #[test]
    fn tcp_races_at_once_until_quic_has_worked_then_waits_one_and_a_half_rtt() {
        let now = Instant::now();
        let mut discovery = H3Discovery::default();
        discovery.observe(ORIGIN, r#"h3=":443"; ma=60"#, now);
        let race = |delay| ConnectPlan::Race {
            alternative: h3(443, 60),
            tcp_delay: delay,
        };
        assert_eq!(discovery.plan(ORIGIN, now), race(Duration::ZERO));
        discovery.assume_quic_works_here();
        assert_eq!(discovery.plan(ORIGIN, now), race(DEFAULT_TCP_DELAY));
        discovery.quic_connected(ORIGIN, Duration::from_millis(40));
        assert_eq!(discovery.plan(ORIGIN, now), race(Duration::from_millis(60)));
    }

    #[test]
    fn an_alternative_expires_after_its_max_age_and_clear_forgets_it() {
        let now = Instant::now();
        let mut discovery = H3Discovery::default();
        discovery.observe(ORIGIN, r#"h3=":443"; ma=60"#, now);
        assert_eq!(
            discovery.plan(ORIGIN, now + Duration::from_secs(60)),
            ConnectPlan::Tcp
        );
        discovery.observe(ORIGIN, r#"h3=":443""#, now);
        discovery.observe(ORIGIN, "clear", now);
        assert_eq!(discovery.plan(ORIGIN, now), ConnectPlan::Tcp);
    }

    #[test]
    fn a_failed_quic_attempt_breaks_the_alternative_for_doubling_periods() {
        let start = Instant::now();
        let mut discovery = H3Discovery::default();
        discovery.observe(ORIGIN, r#"h3=":443"; ma=1000000"#, start);
        let mut now = start;
        for period in [300, 600, 1200] {
            discovery.quic_failed(ORIGIN, now);
            let just_before = now + Duration::from_secs(period) - Duration::from_millis(1);
            assert_eq!(discovery.plan(ORIGIN, just_before), ConnectPlan::Tcp);
            now += Duration::from_secs(period);
            assert!(matches!(
                discovery.plan(ORIGIN, now),
                ConnectPlan::Race { .. }
            ));
        }
        discovery.quic_failed(ORIGIN, now);
        discovery.quic_connected(ORIGIN, Duration::from_millis(10));
        assert!(matches!(
            discovery.plan(ORIGIN, now),
            ConnectPlan::Race { .. }
        ));
    }

    #[test]
    fn an_https_record_races_quic_from_the_first_connection_until_its_ttl_ends() {
        let now = Instant::now();
        let mut discovery = H3Discovery::default();
        discovery.observe_https_record(ORIGIN, h3(8443, 60), now);
        assert_eq!(
            discovery.plan(ORIGIN, now),
            ConnectPlan::Race {
                alternative: h3(8443, 60),
                tcp_delay: Duration::ZERO
            }
        );
        assert_eq!(
            discovery.plan(ORIGIN, now + Duration::from_secs(60)),
            ConnectPlan::Tcp
        );
    }

    #[test]
    fn alt_svc_is_preferred_to_an_https_record_and_its_clear_leaves_the_record() {
        let now = Instant::now();
        let mut discovery = H3Discovery::default();
        discovery.observe_https_record(ORIGIN, h3(443, 60), now);
        discovery.observe(ORIGIN, r#"h3=":8443"; ma=60"#, now);
        let races_to = |discovery: &H3Discovery| match discovery.plan(ORIGIN, now) {
            ConnectPlan::Race { alternative, .. } => Some(alternative.port),
            ConnectPlan::Tcp => None,
        };
        assert_eq!(races_to(&discovery), Some(8443));
        discovery.observe(ORIGIN, "clear", now);
        assert_eq!(races_to(&discovery), Some(443));
    }

    #[test]
    fn a_failed_quic_attempt_breaks_an_https_records_alternative_too() {
        let now = Instant::now();
        let mut discovery = H3Discovery::default();
        discovery.observe_https_record(ORIGIN, h3(443, 3600), now);
        discovery.quic_failed(ORIGIN, now);
        assert_eq!(discovery.plan(ORIGIN, now), ConnectPlan::Tcp);
    }

    #[test]
    fn a_broken_mark_lasts_at_most_two_days() {
        let now = Instant::now();
        let mut discovery = H3Discovery::default();
        discovery.observe(ORIGIN, r#"h3=":443"; ma=10000000"#, now);
        for _ in 0..40 {
            discovery.quic_failed(ORIGIN, now);
        }
        assert!(matches!(
            discovery.plan(ORIGIN, now + MAX_BROKEN_PERIOD),
            ConnectPlan::Race { .. }
        ));
    }
}
