//! `probe fallback`'s report (`h3lab.fallback/1`): per UDP policy, each
//! visit's page loads against an h2-only site's, and the line that says
//! what turning h3 on costs users behind a UDP block. Pure: built from the
//! loads the shell gathered.

use std::collections::BTreeMap;
use std::fmt;

use h3lab_results::difference::{seed_for, Call, Difference};
use h3lab_results::page::PageLoad;
use linkem::model::UdpPolicy;
use linkem::LinkSettings;
use serde::Serialize;

/// The report's schema name.
pub const FALLBACK_SCHEMA: &str = "h3lab.fallback/1";

/// A visit of the page, in the order each repetition makes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VisitKind {
    /// The baseline: h2 only, as a site without HTTP/3.
    H2Only,
    /// `auto`'s first visit: nothing known, so TCP; `Alt-Svc` is learned.
    First,
    /// `auto`'s first visit to a site that also publishes a DNS `HTTPS`
    /// record listing h3: QUIC and TCP start together from the first
    /// connection.
    FirstWithHttpsRecord,
    /// `auto` with `Alt-Svc` cached and QUIC not yet seen working on this
    /// network: QUIC and TCP start together.
    Repeat,
    /// `auto` with `Alt-Svc` cached and QUIC known to work on this network
    /// (as for a browser that used it here before): TCP waits 300 ms.
    RepeatQuicKnown,
}

impl VisitKind {
    /// Every visit, in order.
    pub const ALL: [VisitKind; 5] = [
        VisitKind::H2Only,
        VisitKind::First,
        VisitKind::FirstWithHttpsRecord,
        VisitKind::Repeat,
        VisitKind::RepeatQuicKnown,
    ];

    fn label(self) -> &'static str {
        match self {
            VisitKind::H2Only => "h2 only (baseline)",
            VisitKind::First => "auto: first visit",
            VisitKind::FirstWithHttpsRecord => "auto: first, HTTPS record",
            VisitKind::Repeat => "auto: repeat visit",
            VisitKind::RepeatQuicKnown => "auto: repeat, QUIC known here",
        }
    }
}

/// One visit's loads over the repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct VisitResult {
    /// Which visit.
    pub visit: VisitKind,
    /// Page load time of each repetition that completed, in ms.
    pub load_ms: Vec<f64>,
    /// The document's time to first byte in each, in ms.
    pub ttfb_ms: Vec<f64>,
    /// Requests by the protocol they went over, over all repetitions.
    pub requests: BTreeMap<String, u64>,
    /// Loads that failed, with why.
    pub failed: Vec<String>,
    /// Page load time against the h2-only baseline: the fallback delay
    /// (absent for the baseline itself, or with too few loads).
    pub delay_vs_h2_ms: Option<Difference>,
    /// Whether that difference is outside the noise.
    pub call: Option<Call>,
}

/// One UDP policy's visits.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyResult {
    /// The UDP policy of the path.
    pub udp: UdpPolicy,
    /// The visits, baseline first.
    pub visits: Vec<VisitResult>,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct FallbackReport {
    /// [`FALLBACK_SCHEMA`].
    pub schema: &'static str,
    /// The built-in profile's name, if one was given.
    pub profile: Option<String>,
    /// The path, UDP policy aside.
    pub link: LinkSettings,
    /// The page loaded, as `SHAPE seed N`.
    pub site: String,
    /// Repetitions of every visit.
    pub repetitions: u32,
    /// Per UDP policy.
    pub policies: Vec<PolicyResult>,
    /// What turning h3 on costs users behind a UDP block, in one line;
    /// absent without a `blocked` run.
    pub verdict: Option<String>,
}

/// The loads one visit gathered: each repetition's load, or its failure.
pub type Gathered = Vec<Result<PageLoad, String>>;

/// One policy's result from its visits' loads, in [`VisitKind::ALL`] order.
pub fn summarise_policy(udp: UdpPolicy, gathered: &[(VisitKind, Gathered)]) -> PolicyResult {
    let baseline: Vec<Vec<f64>> = gathered
        .iter()
        .filter(|(visit, _)| *visit == VisitKind::H2Only)
        .flat_map(|(_, loads)| loads.iter().flatten().map(|l| vec![l.load_ms]))
        .collect();
    let visits = gathered
        .iter()
        .map(|(visit, loads)| {
            let ok: Vec<&PageLoad> = loads.iter().flatten().collect();
            let mut requests = BTreeMap::new();
            for row in ok.iter().flat_map(|load| &load.resources) {
                let protocol = row.protocol.clone().unwrap_or_else(|| "unknown".into());
                *requests.entry(protocol).or_insert(0) += 1;
            }
            let samples: Vec<Vec<f64>> = ok.iter().map(|l| vec![l.load_ms]).collect();
            let delay = (*visit != VisitKind::H2Only)
                .then(|| {
                    let seed = seed_for(&format!("{udp} {visit:?}"), "h2 only");
                    Difference::absolute(&samples, &baseline, "ms", false, seed)
                })
                .flatten();
            VisitResult {
                visit: *visit,
                load_ms: ok.iter().map(|l| l.load_ms).collect(),
                ttfb_ms: ok.iter().filter_map(|l| document_ttfb(l)).collect(),
                requests,
                failed: loads.iter().filter_map(|l| l.clone().err()).collect(),
                call: delay.as_ref().map(Difference::call),
                delay_vs_h2_ms: delay,
            }
        })
        .collect();
    PolicyResult { udp, visits }
}

fn document_ttfb(load: &PageLoad) -> Option<f64> {
    load.resources.first().map(|row| row.ttfb_ms)
}

/// The one line for users behind a UDP block, from the `blocked` policy.
pub fn verdict(policies: &[PolicyResult]) -> Option<String> {
    let blocked = policies.iter().find(|p| p.udp == UdpPolicy::Blocked)?;
    let delay = |kind: VisitKind| {
        let visit = blocked.visits.iter().find(|v| v.visit == kind)?;
        let delay = visit.delay_vs_h2_ms.as_ref()?;
        Some(format!(
            "{} ms ({})",
            signed(delay.estimate),
            visit.call?.word()
        ))
    };
    let failed: usize = blocked.visits.iter().map(|v| v.failed.len()).sum();
    Some(format!(
        "Behind a UDP block, turning h3 on changes page load by {} on the first visit ({} with \
         a DNS HTTPS record), {} on a repeat visit, and {} on a repeat visit once QUIC had \
         worked on the user's network; {failed} load(s) failed.",
        delay(VisitKind::First)?,
        delay(VisitKind::FirstWithHttpsRecord)?,
        delay(VisitKind::Repeat)?,
        delay(VisitKind::RepeatQuicKnown)?,
    ))
}

fn signed(value: f64) -> String {
    format!("{value:+.1}")
}

fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    h3lab_results::quantile::median(&mut sorted)
}

impl fmt::Display for PolicyResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "UDP {}", self.udp)?;
        writeln!(
            f,
            "  {:<31} {:>9} {:>9}  {:<18} fallback delay vs h2 only [95 % interval]",
            "visit", "load ms", "ttfb ms", "requests"
        )?;
        for visit in &self.visits {
            let requests: Vec<String> = visit
                .requests
                .iter()
                .map(|(protocol, n)| format!("{protocol} {n}"))
                .collect();
            let delay = visit
                .delay_vs_h2_ms
                .as_ref()
                .map_or("–".to_string(), Difference::describe);
            let cell = |values: &[f64]| median(values).map_or("–".into(), |m| format!("{m:.1}"));
            writeln!(
                f,
                "  {:<31} {:>9} {:>9}  {:<18} {delay}",
                visit.visit.label(),
                cell(&visit.load_ms),
                cell(&visit.ttfb_ms),
                requests.join(", "),
            )?;
            for failure in &visit.failed {
                writeln!(f, "    failed: {failure}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for FallbackReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "The write-ups: \"some enterprise proxies block UDP\", so \"always configure graceful \
             fallback to H2\"."
        )?;
        match &self.verdict {
            Some(line) => write!(f, "{line}"),
            None => write!(
                f,
                "(no `blocked` run, so no verdict for users behind a UDP block)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use h3lab_results::page::ResourceTiming;
    use h3lab_results::ResourceKind;

    fn load(load_ms: f64, protocol: &str) -> Result<PageLoad, String> {
        Ok(PageLoad {
            failed: Vec::new(),
            path_rtt_ms: None,
            started_at: String::new(),
            load_ms,
            resources: vec![ResourceTiming {
                method: "GET".to_string(),
                url: "https://198.18.0.2/".into(),
                kind: ResourceKind::Document,
                render_blocking: true,
                status: 200,
                protocol: Some(protocol.into()),
                start_ms: 0.0,
                ttfb_ms: load_ms / 2.0,
                end_ms: load_ms,
                bytes: 1,
                connection: Some(0),
                stream: Some(0),
            }],
            browser: None,
            skipped: Vec::new(),
        })
    }

    fn blocked(first: f64, repeat: f64, known: f64) -> PolicyResult {
        blocked_with_record(first, first, repeat, known)
    }

    fn blocked_with_record(first: f64, record: f64, repeat: f64, known: f64) -> PolicyResult {
        let visits =
            |ms: f64, protocol: &str| (0..5).map(|i| load(ms + i as f64, protocol)).collect();
        summarise_policy(
            UdpPolicy::Blocked,
            &[
                (VisitKind::H2Only, visits(100.0, "h2")),
                (VisitKind::First, visits(first, "h2")),
                (VisitKind::FirstWithHttpsRecord, visits(record, "h2")),
                (VisitKind::Repeat, visits(repeat, "h2")),
                (VisitKind::RepeatQuicKnown, visits(known, "h2")),
            ],
        )
    }

    #[test]
    fn the_fallback_delay_is_each_visit_against_the_h2_only_loads() {
        let policy = blocked_with_record(100.0, 160.0, 101.0, 400.0);
        let known = &policy.visits[4];
        assert_eq!(known.delay_vs_h2_ms.as_ref().unwrap().estimate, 300.0);
        assert_eq!(known.call, Some(Call::Worse));
        assert_eq!(known.requests, BTreeMap::from([("h2".to_string(), 5)]));
        assert_eq!(policy.visits[0].delay_vs_h2_ms, None);
        let line = verdict(&[policy]).unwrap();
        assert!(line.contains("+300.0 ms (worse)"), "{line}");
        assert!(
            line.contains("(+60.0 ms (worse) with a DNS HTTPS record)"),
            "{line}"
        );
        assert!(line.contains("0 load(s) failed"), "{line}");
    }

    #[test]
    fn failed_loads_are_listed_and_counted_in_the_verdict() {
        let mut policy = blocked(100.0, 100.0, 100.0);
        policy.visits[2].failed.push("load 1: timed out".into());
        assert!(verdict(&[policy.clone()])
            .unwrap()
            .contains("1 load(s) failed"));
        assert!(policy.to_string().contains("failed: load 1: timed out"));
    }

    #[test]
    fn no_blocked_run_gives_no_verdict() {
        let mut policy = blocked(100.0, 100.0, 100.0);
        policy.udp = UdpPolicy::Open;
        assert_eq!(verdict(&[policy]), None);
    }
}
