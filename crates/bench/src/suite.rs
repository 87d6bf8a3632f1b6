//! Suite files: the TOML that names protocols, profiles, workloads,
//! repetitions, seed, warm-up and target. Documented in `docs/suite.md`.
//!
//! Unknown keys and impossible values are rejected with the line number: the
//! types below validate while they deserialize, so toml's span-carrying
//! errors point at the offending line.

use std::path::PathBuf;
use std::time::Duration;

use h3lab_results::{Loader, Proto, QuicCongestion, TtfbMode, Visit, WorkloadKind};
use h3lab_site::Shape;
use linkem::config::LossDirection;
use serde::{Deserialize, Deserializer};

use crate::sweep::{Sweep, Tunable, BUILTIN_SERVER};

/// A parsed, validated suite.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// The suite's name (required); recorded in the results and shown in the report.
    pub name: String,
    /// What the suite measures, in words; shown in the report.
    #[serde(default)]
    pub description: String,
    pub(crate) protocols: Vec<Proto>,
    /// Built-in profile names or names of `[[profile]]` tables below.
    pub(crate) profiles: Vec<String>,
    #[serde(default = "default_repetitions")]
    pub(crate) repetitions: Count,
    #[serde(default = "default_seed")]
    pub(crate) seed: u64,
    /// Excluded load before each rps measurement.
    #[serde(default)]
    pub(crate) warmup: HumanDuration,
    /// Protocol the relative differences are computed against.
    #[serde(default = "default_baseline")]
    pub(crate) baseline: Proto,
    #[serde(default)]
    pub(crate) target: Target,
    #[serde(default, rename = "profile")]
    pub(crate) custom_profiles: Vec<CustomProfile>,
    #[serde(rename = "workload")]
    pub(crate) workloads: Vec<Workload>,
    /// Figures from a published study, shown beside ours in the report.
    #[serde(default)]
    pub(crate) published: Vec<PublishedFigure>,
    /// One server tunable swept as a dimension of the matrix.
    pub(crate) sweep: Option<Sweep>,
}

/// A study's published figure for the cell `profile` × `workload` [× `mode`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PublishedFigure {
    pub(crate) study: String,
    pub(crate) label: String,
    pub(crate) profile: String,
    pub(crate) workload: String,
    pub(crate) mode: Option<String>,
    pub(crate) unit: String,
    pub(crate) higher_is_better: bool,
    pub(crate) h1: Option<f64>,
    pub(crate) h2: Option<f64>,
    pub(crate) h3: Option<f64>,
    /// A published difference between two protocols, for studies that
    /// give only that (e.g. "h3 loaded 200 ms faster than h2").
    pub(crate) difference: Option<PublishedDifference>,
    /// A claim about the swept tunable instead of the protocols: the
    /// published figure per value (e.g. `{ cubic = 100.0, bbr = 118.0 }`
    /// for "BBR gives 18 % more than Cubic"), compared for each protocol.
    pub(crate) sweep: Option<PublishedSweep>,
    /// Why our figure may differ; shown when the direction disagrees.
    pub(crate) caveat: String,
}

/// `subject − other = value` (in the figure's `unit`), as a study published
/// it, e.g. `{ subject = "h3", other = "h2", value = -200.0 }` for "h3
/// loaded 200 ms faster than h2".
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PublishedDifference {
    pub(crate) subject: Proto,
    pub(crate) other: Proto,
    pub(crate) value: f64,
}

/// `sweep = { baseline = "cubic", values = { cubic = 100.0, bbr = 118.0 } }`:
/// the published figure per value of the suite's swept tunable.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PublishedSweep {
    pub(crate) baseline: String,
    pub(crate) values: std::collections::BTreeMap<String, f64>,
}

fn default_repetitions() -> Count {
    Count(3)
}

fn default_seed() -> u64 {
    1
}

fn default_baseline() -> Proto {
    Proto::H2
}

impl Suite {
    /// Parses and validates a suite; errors carry the TOML line number.
    pub fn from_toml(text: &str) -> anyhow::Result<Suite> {
        let suite: Suite = toml::from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
        suite.check_cross_references()?;
        Ok(suite)
    }

    /// Checks that need the whole suite: names that refer to each other.
    fn check_cross_references(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.protocols.is_empty(),
            "suite `{}`: `protocols` is empty; list at least one of h1, h2, h3",
            self.name
        );
        anyhow::ensure!(
            !self.profiles.is_empty(),
            "suite `{}`: `profiles` is empty; list at least one (see `h3lab net profiles`)",
            self.name
        );
        anyhow::ensure!(
            !self.workloads.is_empty(),
            "suite `{}`: no [[workload]]; add at least one",
            self.name
        );
        let mut seen = std::collections::BTreeSet::new();
        for workload in &self.workloads {
            anyhow::ensure!(
                seen.insert(workload.name()),
                "suite `{}`: two workloads are named `{}`; give each a unique name",
                self.name,
                workload.name()
            );
        }
        for workload in &self.workloads {
            if let Some(stray) = workload
                .profiles
                .iter()
                .find(|p| !self.profiles.contains(p))
            {
                anyhow::bail!(
                    "suite `{}`: workload `{}` names profile `{stray}`, which is not in the suite's `profiles`",
                    self.name,
                    workload.name
                );
            }
        }
        self.check_sweep()?;
        if let Some(command) = &self.target.server_cmd {
            if let Some(page) = self
                .workloads
                .iter()
                .find(|w| matches!(w.load, Load::Page { .. }))
            {
                anyhow::bail!(
                    "suite `{}`: page workload `{}` needs the built-in server, which serves its site, \
                     but [target] runs `{command}`; remove `server_cmd` or move the page workload \
                     to a suite of its own",
                    self.name,
                    page.name
                );
            }
        }
        for profile in &self.profiles {
            if self.custom_profile(profile).is_none() {
                linkem::profile(profile).map_err(|e| {
                    anyhow::anyhow!(
                        "suite `{}`: {e} (or define it in a [[profile]] table)",
                        self.name
                    )
                })?;
            }
        }
        for figure in &self.published {
            anyhow::ensure!(
                self.profiles.contains(&figure.profile),
                "suite `{}`: published figure `{}` names profile `{}`, which the suite does not run",
                self.name,
                figure.label,
                figure.profile
            );
            anyhow::ensure!(
                self.workloads.iter().any(|w| w.name() == figure.workload),
                "suite `{}`: published figure `{}` names workload `{}`, which the suite does not define",
                self.name,
                figure.label,
                figure.workload
            );
            if let Some(difference) = &figure.difference {
                anyhow::ensure!(
                    difference.subject != difference.other,
                    "suite `{}`: published figure `{}` has a difference of {} against itself; \
                     name two protocols, e.g. subject = \"h3\", other = \"h2\"",
                    self.name,
                    figure.label,
                    difference.subject
                );
                for proto in [difference.subject, difference.other] {
                    anyhow::ensure!(
                        self.protocols.contains(&proto),
                        "suite `{}`: published figure `{}` compares {proto}, which the suite does not run",
                        self.name,
                        figure.label
                    );
                }
            }
            self.check_published_sweep(figure)?;
        }
        Ok(())
    }

    /// A figure about the swept tunable names its values and a swept
    /// workload; a figure about protocols names a workload that is not.
    fn check_published_sweep(&self, figure: &PublishedFigure) -> anyhow::Result<()> {
        let label = &figure.label;
        let swept = self.sweep.as_ref().filter(|sweep| {
            sweep.workloads.is_empty() || sweep.workloads.contains(&figure.workload)
        });
        let (published, sweep) = match (&figure.sweep, swept) {
            (None, None) => return Ok(()),
            (None, Some(_)) => anyhow::bail!(
                "suite `{}`: published figure `{label}` compares protocols in workload `{}`, \
                 which is swept; give it a `sweep = {{ baseline, values }}` or compare an unswept workload",
                self.name,
                figure.workload
            ),
            (Some(_), None) => anyhow::bail!(
                "suite `{}`: published figure `{label}` has `sweep`, but workload `{}` is not swept; \
                 add a [sweep] that covers it",
                self.name,
                figure.workload
            ),
            (Some(published), Some(sweep)) => (published, sweep),
        };
        let others = [figure.h1, figure.h2, figure.h3];
        anyhow::ensure!(
            others.iter().all(Option::is_none) && figure.difference.is_none(),
            "suite `{}`: published figure `{label}` has `sweep` and also h1/h2/h3 or `difference`; \
             a figure compares either protocols or the swept values",
            self.name
        );
        anyhow::ensure!(
            published.values.len() >= 2 && published.values.contains_key(&published.baseline),
            "suite `{}`: published figure `{label}`: `sweep.values` needs two values or more, \
             the baseline `{}` among them",
            self.name,
            published.baseline
        );
        if let Some(stray) = published
            .values
            .keys()
            .find(|value| !sweep.values.contains(value))
        {
            anyhow::bail!(
                "suite `{}`: published figure `{label}` names `{stray}`, which [sweep] does not run \
                 (it runs {})",
                self.name,
                sweep.values.join(", ")
            );
        }
        Ok(())
    }

    /// A sweep sets the built-in server's flags, and names real workloads.
    fn check_sweep(&self) -> anyhow::Result<()> {
        let sweeps_server = self.sweep.as_ref().map(|s| s.tunable) == Some(Tunable::Server);
        if !self.target.servers.is_empty() && !sweeps_server {
            anyhow::bail!(
                "suite `{}`: [target.servers] names servers for a `server` sweep; add \
                 [sweep] tunable = \"server\" with their names as `values`, or remove it",
                self.name
            );
        }
        let Some(sweep) = &self.sweep else {
            return Ok(());
        };
        if sweep.tunable == Tunable::Server {
            self.check_server_sweep(sweep)?;
        } else if let Some(command) = &self.target.server_cmd {
            anyhow::bail!(
                "suite `{}`: [sweep] sets flags of the built-in server, but [target] runs `{command}`; \
                 remove `server_cmd`, or run one suite per setting of your server",
                self.name
            );
        }
        if let Some(stray) = sweep
            .workloads
            .iter()
            .find(|name| !self.workloads.iter().any(|w| w.name() == name.as_str()))
        {
            anyhow::bail!(
                "suite `{}`: [sweep] names workload `{stray}`, which is not a [[workload]] of the suite",
                self.name
            );
        }
        Ok(())
    }

    /// A `server` sweep names servers the suite defines, and replaces `server_cmd`.
    fn check_server_sweep(&self, sweep: &Sweep) -> anyhow::Result<()> {
        if self.target.server_cmd.is_some() {
            anyhow::bail!(
                "suite `{}`: [sweep] tunable = \"server\" picks the server per row, so [target] \
                 cannot also have `server_cmd`; move the command into [target.servers]",
                self.name
            );
        }
        if let Some(unknown) = sweep
            .values
            .iter()
            .find(|v| *v != BUILTIN_SERVER && !self.target.servers.contains_key(v.as_str()))
        {
            anyhow::bail!(
                "suite `{}`: [sweep] names server `{unknown}`, which is neither `{BUILTIN_SERVER}` \
                 nor a key of [target.servers]",
                self.name
            );
        }
        if self
            .workloads
            .iter()
            .any(|w| matches!(w.load, Load::Page { .. }))
        {
            anyhow::bail!(
                "suite `{}`: page workloads need the built-in server, so they cannot be in a \
                 suite that sweeps `server`; move them to a suite of their own",
                self.name
            );
        }
        Ok(())
    }

    /// The custom profile called `name`, if the suite defines one.
    pub(crate) fn custom_profile(&self, name: &str) -> Option<&CustomProfile> {
        self.custom_profiles.iter().find(|p| p.name == name)
    }
}

/// Where requests go: the built-in server, or any server a command starts
/// in the server namespace.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Target {
    /// Shell command started in the server namespace (`sh -c`); the built-in
    /// `h3lab serve` when absent. `{ip}` and `{port}` are replaced by the
    /// server's address and port.
    pub(crate) server_cmd: Option<String>,
    /// Port the server listens on (TCP and UDP); 443 by default.
    pub(crate) port: Option<u16>,
    /// Named server commands (as `server_cmd`) for a `server` sweep.
    #[serde(default)]
    pub(crate) servers: std::collections::BTreeMap<String, String>,
    /// The built-in server's QUIC congestion controller: `auto` (default:
    /// the family of the kernel's TCP controller, so h2 and h3 run the same
    /// congestion control), `cubic`, `newreno` or `bbr`.
    #[serde(default = "follow_tcp")]
    pub(crate) quic_cc: QuicCongestion,
}

fn follow_tcp() -> QuicCongestion {
    QuicCongestion::Auto
}

impl Default for Target {
    fn default() -> Target {
        Target {
            server_cmd: None,
            port: None,
            servers: Default::default(),
            quic_cc: follow_tcp(),
        }
    }
}

/// A path defined in the suite itself, starting from a built-in profile.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CustomProfile {
    pub(crate) name: String,
    /// Built-in profile to start from; every field below overrides it.
    pub(crate) base: Option<String>,
    pub(crate) rtt: Option<String>,
    pub(crate) down: Option<String>,
    pub(crate) up: Option<String>,
    pub(crate) loss: Option<String>,
    pub(crate) loss_model: Option<String>,
    /// `down`, `up` or `both`; checked here, so a bad one names its line.
    pub(crate) loss_direction: Option<LossDirection>,
    pub(crate) jitter: Option<String>,
    pub(crate) queue: Option<String>,
    pub(crate) trace_down: Option<String>,
    pub(crate) trace_up: Option<String>,
}

/// One measurement of the suite: its name, where it runs and what it does.
#[derive(Debug, Clone)]
pub(crate) struct Workload {
    pub(crate) name: String,
    /// Profiles it runs on; empty means all of the suite's.
    pub(crate) profiles: Vec<String>,
    pub(crate) load: Load,
}

/// What a workload measures, with its parameters.
#[derive(Debug, Clone)]
pub(crate) enum Load {
    /// Requests per second for a payload size at a concurrency.
    Rps {
        /// Response body size.
        size: ByteSize,
        connections: Count,
        /// Concurrent streams per connection (h2/h3; h1 uses one).
        streams: Count,
        duration: HumanDuration,
        /// What this workload's figure is: throughput or a latency quantile.
        metric: RpsMetric,
    },
    /// `streams` bodies of `size` downloaded in parallel.
    Download {
        size: ByteSize,
        streams: Count,
        /// Connections carrying the streams; default one for h2/h3 and one
        /// per stream for h1.
        connections: Option<Count>,
        metric: DownloadMetric,
    },
    /// Time to the first response byte on a new connection.
    Ttfb {
        modes: Vec<TtfbMode>,
        /// New connections measured per repetition.
        samples: Count,
    },
    /// Page loads of a site: its HTML and every asset it references.
    Page {
        site: Site,
        loader: Loader,
        visit: Visit,
        /// Page loads measured per repetition.
        loads: Count,
    },
}

/// The site a page workload loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Site {
    /// A synthetic site of this shape, generated once per run from the
    /// suite's seed.
    Shape(Shape),
    /// A static site already on disk, served at `/`.
    Dir(PathBuf),
}

impl Site {
    /// `small` etc. for a shape, or a directory holding a site; anything
    /// else is an error that says how to get one.
    fn parse(text: &str) -> Result<Site, String> {
        if let Ok(shape) = text.parse::<Shape>() {
            return Ok(Site::Shape(shape));
        }
        let dir = PathBuf::from(text);
        if !dir.is_dir() {
            return Err(format!(
                "site `{text}` is neither a shape (small, content, spa, cms) \
                 nor an existing directory; name a shape, or generate a site with \
                 `h3lab site gen small --out DIR` and give its directory"
            ));
        }
        if !dir.join("index.html").is_file() {
            return Err(format!(
                "site directory `{text}` has no index.html, so `/` has no page; \
                 give the directory that holds the site's index.html"
            ));
        }
        Ok(Site::Dir(dir))
    }
}

impl<'de> Deserialize<'de> for Site {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Site::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A `[[workload]]` table as written: one flat set of keys, so that toml
/// reports unknown keys and bad values at their own line (an internally
/// tagged enum would only know the table's line).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadTable {
    kind: WorkloadKind,
    name: String,
    #[serde(default)]
    profiles: Vec<String>,
    size: Option<ByteSize>,
    connections: Option<Count>,
    streams: Option<Count>,
    duration: Option<HumanDuration>,
    metric: Option<String>,
    modes: Option<Vec<TtfbMode>>,
    samples: Option<Count>,
    site: Option<Site>,
    loader: Option<Loader>,
    visit: Option<Visit>,
    loads: Option<Count>,
}

impl<'de> Deserialize<'de> for Workload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        WorkloadTable::deserialize(d)?
            .into_workload()
            .map_err(serde::de::Error::custom)
    }
}

impl WorkloadTable {
    fn into_workload(self) -> Result<Workload, String> {
        let name = &self.name;
        let kind = self.kind;
        let needs = |what: &str| format!("{kind} workload `{name}` needs `{what}`");
        let given = [
            ("size", self.size.is_some()),
            ("connections", self.connections.is_some()),
            ("streams", self.streams.is_some()),
            ("duration", self.duration.is_some()),
            ("metric", self.metric.is_some()),
            ("modes", self.modes.is_some()),
            ("samples", self.samples.is_some()),
            ("site", self.site.is_some()),
            ("loader", self.loader.is_some()),
            ("visit", self.visit.is_some()),
            ("loads", self.loads.is_some()),
        ];
        let takes = keys_of(kind);
        if let Some((key, _)) = given
            .iter()
            .find(|(key, present)| *present && !takes.contains(key))
        {
            return Err(format!(
                "`{key}` does not apply to {kind} workload `{name}`"
            ));
        }
        let metric = |choices: &[&str]| match &self.metric {
            Some(m) if !choices.contains(&m.as_str()) => Err(format!(
                "{kind} workload `{name}`: metric `{m}` is not one of {}",
                choices.join(", ")
            )),
            m => Ok(m.clone().unwrap_or_else(|| choices[0].to_string())),
        };
        let load = match self.kind {
            WorkloadKind::Rps => Load::Rps {
                size: self.size.ok_or_else(|| needs("size"))?,
                connections: self.connections.unwrap_or(Count(10)),
                streams: self.streams.unwrap_or(Count(1)),
                duration: self.duration.ok_or_else(|| needs("duration"))?,
                metric: match metric(&["throughput", "p50", "p99"])?.as_str() {
                    "p50" => RpsMetric::P50,
                    "p99" => RpsMetric::P99,
                    _ => RpsMetric::Throughput,
                },
            },
            WorkloadKind::Download => Load::Download {
                size: self.size.ok_or_else(|| needs("size"))?,
                streams: self.streams.unwrap_or(Count(1)),
                connections: self.connections,
                metric: match metric(&["time", "rps"])?.as_str() {
                    "rps" => DownloadMetric::RequestsPerSecond,
                    _ => DownloadMetric::Time,
                },
            },
            WorkloadKind::Ttfb => {
                let modes = self
                    .modes
                    .clone()
                    .unwrap_or_else(|| vec![TtfbMode::Cold, TtfbMode::Resumed, TtfbMode::ZeroRtt]);
                if modes.is_empty() {
                    return Err(format!(
                        "ttfb workload `{name}` has no `modes`; use some of cold, resumed, 0rtt"
                    ));
                }
                Load::Ttfb {
                    modes,
                    samples: self.samples.unwrap_or(Count(5)),
                }
            }
            WorkloadKind::Page => {
                let site = self.site.clone().ok_or_else(|| {
                    format!(
                        "page workload `{name}` needs `site`: a shape (small, content, spa, cms) \
                         or the directory of a static site"
                    )
                })?;
                Load::Page {
                    site,
                    loader: self.loader.unwrap_or_default(),
                    visit: self.visit.unwrap_or_default(),
                    loads: self.loads.unwrap_or(Count(20)),
                }
            }
        };
        Ok(Workload {
            name: self.name,
            profiles: self.profiles,
            load,
        })
    }
}

/// The keys of a `[[workload]]` table only some kinds take: those `kind`
/// takes.
fn keys_of(kind: WorkloadKind) -> &'static [&'static str] {
    match kind {
        WorkloadKind::Rps => &["size", "connections", "streams", "duration", "metric"],
        WorkloadKind::Download => &["size", "connections", "streams", "metric"],
        WorkloadKind::Ttfb => &["modes", "samples"],
        WorkloadKind::Page => &["site", "loader", "visit", "loads"],
    }
}

impl Workload {
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn kind(&self) -> WorkloadKind {
        match self.load {
            Load::Rps { .. } => WorkloadKind::Rps,
            Load::Download { .. } => WorkloadKind::Download,
            Load::Ttfb { .. } => WorkloadKind::Ttfb,
            Load::Page { .. } => WorkloadKind::Page,
        }
    }

    /// Whether this workload runs on `profile`.
    pub(crate) fn runs_on(&self, profile: &str) -> bool {
        self.profiles.is_empty() || self.profiles.iter().any(|p| p == profile)
    }
}

/// The figure a download workload reports per repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DownloadMetric {
    /// Seconds until every stream finished.
    Time,
    /// Streams finished per second: `streams / time`.
    RequestsPerSecond,
}

/// The figure an rps workload reports per repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RpsMetric {
    Throughput,
    P50,
    P99,
}

/// A positive whole number (repetitions, connections, samples).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Count(pub(crate) u32);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(d)?;
        match u32::try_from(n) {
            Ok(n) if n >= 1 => Ok(Count(n)),
            _ => Err(serde::de::Error::custom(format!(
                "{n} is not a positive whole number (1 or more)"
            ))),
        }
    }
}

/// A byte count written as `1KB`, `10MB`, `1GiB` (SI and binary units).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ByteSize(pub(crate) u64);

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse::<bytesize::ByteSize>()
            .map(|b| ByteSize(b.as_u64()))
            .map_err(|_| {
                serde::de::Error::custom(format!(
                    "`{text}` is not a size; write e.g. `1KB`, `10MB` or `1GiB`"
                ))
            })
    }
}

/// A duration written as `500ms`, `3s`, `1m`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HumanDuration(pub(crate) Duration);

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text)
            .map(HumanDuration)
            .map_err(|_| {
                serde::de::Error::custom(format!(
                    "`{text}` is not a duration; write e.g. `500ms`, `3s` or `1m`"
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "t"
protocols = ["h2", "h3"]
profiles = ["broadband"]

[[workload]]
kind = "rps"
name = "api"
size = "1KB"
duration = "2s"
"#;

    #[test]
    fn minimal_suite_gets_defaults() {
        let suite = Suite::from_toml(MINIMAL).unwrap();
        assert_eq!(suite.repetitions, Count(3));
        assert_eq!(suite.baseline, Proto::H2);
        match &suite.workloads[0].load {
            Load::Rps {
                size,
                connections,
                streams,
                duration,
                metric,
            } => {
                assert_eq!(size.0, 1000);
                assert_eq!(*connections, Count(10));
                assert_eq!(*streams, Count(1));
                assert_eq!(duration.0, Duration::from_secs(2));
                assert_eq!(*metric, RpsMetric::Throughput);
            }
            other => panic!("parsed as {other:?}"),
        }
    }

    fn error_of(text: &str) -> String {
        format!("{:#}", Suite::from_toml(text).unwrap_err())
    }

    #[test]
    fn unknown_key_is_rejected_with_its_line() {
        let text = MINIMAL.replace("duration = \"2s\"", "duration = \"2s\"\nconcurrency = 5");
        let err = error_of(&text);
        assert!(err.contains("line 11"), "{err}");
        assert!(err.contains("concurrency"), "{err}");
    }

    #[test]
    fn impossible_values_are_rejected_with_their_line() {
        let err = error_of(&format!("repetitions = 0\n{MINIMAL}"));
        assert!(err.contains("line 1") && err.contains("positive"), "{err}");
        let err = error_of(&MINIMAL.replace("\"1KB\"", "\"lots\""));
        assert!(
            err.contains("line 9") && err.contains("not a size"),
            "{err}"
        );
        let err = error_of(&MINIMAL.replace("\"2s\"", "\"soon\""));
        assert!(
            err.contains("line 10") && err.contains("not a duration"),
            "{err}"
        );
        let err = error_of(&MINIMAL.replace("\"h3\"", "\"h4\""));
        assert!(err.contains("line 3") && err.contains("h4"), "{err}");
    }

    #[test]
    fn unknown_profile_names_the_builtin_ones() {
        let err = error_of(&MINIMAL.replace("broadband", "dialup"));
        assert!(err.contains("dialup") && err.contains("cellular"), "{err}");
    }

    #[test]
    fn custom_profile_satisfies_the_reference() {
        let text = format!(
            "{}\n[[profile]]\nname = \"dialup\"\nbase = \"broadband\"\nrtt = \"300ms\"\n",
            MINIMAL.replace("broadband", "dialup")
        );
        let suite = Suite::from_toml(&text).unwrap();
        assert_eq!(
            suite.custom_profile("dialup").unwrap().rtt.as_deref(),
            Some("300ms")
        );
    }

    fn with_custom_profile(table: &str) -> String {
        format!(
            "{}\n[[profile]]\nname = \"dialup\"\n{table}",
            MINIMAL.replace("broadband", "dialup")
        )
    }

    #[test]
    fn custom_profile_takes_a_loss_direction() {
        for (value, expected) in [
            ("down", LossDirection::Down),
            ("up", LossDirection::Up),
            ("both", LossDirection::Both),
        ] {
            let text = with_custom_profile(&format!("loss_direction = \"{value}\"\n"));
            let suite = Suite::from_toml(&text).unwrap();
            let profile = suite.custom_profile("dialup").unwrap();
            assert_eq!(profile.loss_direction, Some(expected));
        }
        let suite = Suite::from_toml(&with_custom_profile("loss = \"1%\"\n")).unwrap();
        assert_eq!(suite.custom_profile("dialup").unwrap().loss_direction, None);
    }

    #[test]
    fn a_bad_loss_direction_is_rejected_with_its_line_and_the_accepted_values() {
        let err = error_of(&with_custom_profile("loss_direction = \"sideways\"\n"));
        assert!(
            err.contains("line 14")
                && err.contains("`sideways` is not a loss direction")
                && ["`down`", "`up`", "`both`"]
                    .iter()
                    .all(|name| err.contains(name)),
            "{err}"
        );
    }

    #[test]
    fn workload_keys_must_fit_the_kind() {
        let err = error_of(&MINIMAL.replace("duration = \"2s\"", "duration = \"2s\"\nsamples = 3"));
        assert!(
            err.contains("line 6") && err.contains("`samples` does not apply"),
            "{err}"
        );
        let err = error_of(&MINIMAL.replace("size = \"1KB\"\n", ""));
        assert!(err.contains("needs `size`"), "{err}");
    }

    #[test]
    fn metrics_must_fit_the_kind() {
        let text = format!("{MINIMAL}\n[[workload]]\nkind = \"download\"\nname = \"dl\"\nsize = \"1MB\"\nstreams = 4\nmetric = \"rps\"\n");
        let suite = Suite::from_toml(&text).unwrap();
        match &suite.workloads[1].load {
            Load::Download {
                streams,
                metric,
                connections,
                ..
            } => {
                assert_eq!(
                    (*streams, *metric, *connections),
                    (Count(4), DownloadMetric::RequestsPerSecond, None)
                );
            }
            other => panic!("parsed as {other:?}"),
        }
        let err = error_of(&text.replace("metric = \"rps\"", "metric = \"p99\""));
        assert!(
            err.contains("metric `p99` is not one of time, rps"),
            "{err}"
        );
    }

    #[test]
    fn workload_profiles_must_be_suite_profiles() {
        let text = MINIMAL.replace(
            "duration = \"2s\"",
            "duration = \"2s\"\nprofiles = [\"satellite\"]",
        );
        let err = error_of(&text);
        assert!(
            err.contains("workload `api` names profile `satellite`"),
            "{err}"
        );
        let ok = Suite::from_toml(&text.replace(
            "profiles = [\"broadband\"]",
            "profiles = [\"broadband\", \"satellite\"]",
        ))
        .unwrap();
        assert!(ok.workloads[0].runs_on("satellite") && !ok.workloads[0].runs_on("broadband"));
    }

    #[test]
    fn duplicate_workload_names_are_rejected() {
        let text = format!("{MINIMAL}\n[[workload]]\nkind = \"ttfb\"\nname = \"api\"\n");
        assert!(error_of(&text).contains("two workloads"));
    }

    const PAGE: &str = r#"
name = "t"
protocols = ["h2", "h3"]
profiles = ["broadband"]

[[workload]]
kind = "page"
name = "pages"
site = "small"
"#;

    #[test]
    fn page_workload_gets_defaults() {
        let suite = Suite::from_toml(PAGE).unwrap();
        assert_eq!(suite.workloads[0].kind(), WorkloadKind::Page);
        match &suite.workloads[0].load {
            Load::Page {
                site,
                loader,
                visit,
                loads,
            } => {
                assert_eq!(*site, Site::Shape(Shape::Small));
                assert_eq!(
                    (*loader, *visit, *loads),
                    (Loader::Builtin, Visit::Cold, Count(20))
                );
            }
            other => panic!("parsed as {other:?}"),
        }
        let text = PAGE.replace(
            "site = \"small\"",
            "site = \"cms\"\nloader = \"chromium\"\nvisit = \"warm\"\nloads = 3",
        );
        match &Suite::from_toml(&text).unwrap().workloads[0].load {
            Load::Page {
                site,
                loader,
                visit,
                loads,
            } => {
                assert_eq!(*site, Site::Shape(Shape::Cms));
                assert_eq!(
                    (*loader, *visit, *loads),
                    (Loader::Chromium, Visit::Warm, Count(3))
                );
            }
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn page_workload_takes_a_site_directory() {
        let dir = std::env::temp_dir().join(format!("h3lab-suite-site-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = PAGE.replace("\"small\"", &format!("{:?}", dir.display().to_string()));
        let err = error_of(&text);
        assert!(err.contains("has no index.html"), "{err}");
        std::fs::write(dir.join("index.html"), "<html></html>").unwrap();
        let suite = Suite::from_toml(&text).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        match &suite.workloads[0].load {
            Load::Page { site, .. } => assert_eq!(*site, Site::Dir(dir)),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn bad_page_workloads_are_rejected_with_their_line() {
        let err = error_of(&PAGE.replace("\"small\"", "\"/no/such/site\""));
        assert!(
            err.contains("line 9")
                && err.contains("neither a shape")
                && err.contains("h3lab site gen"),
            "{err}"
        );
        let err = error_of(&PAGE.replace("site = \"small\"", "site = \"small\"\nloads = 0"));
        assert!(err.contains("line 10") && err.contains("positive"), "{err}");
        let err =
            error_of(&PAGE.replace("site = \"small\"", "site = \"small\"\nloader = \"firefox\""));
        assert!(err.contains("line 10") && err.contains("firefox"), "{err}");
        let err = error_of(&PAGE.replace("site = \"small\"", "site = \"small\"\nvisit = \"hot\""));
        assert!(err.contains("line 10") && err.contains("hot"), "{err}");
        let err = error_of(&PAGE.replace("site = \"small\"", "site = \"small\"\npages = 3"));
        assert!(err.contains("line 10") && err.contains("pages"), "{err}");
        let err = error_of(&PAGE.replace("site = \"small\"", "site = \"small\"\nsize = \"1KB\""));
        assert!(
            err.contains("line 6") && err.contains("`size` does not apply to page workload"),
            "{err}"
        );
        let err = error_of(&PAGE.replace("site = \"small\"\n", ""));
        assert!(err.contains("needs `site`"), "{err}");
        let err = error_of(&MINIMAL.replace("duration = \"2s\"", "duration = \"2s\"\nloads = 3"));
        assert!(err.contains("`loads` does not apply to rps"), "{err}");
    }

    #[test]
    fn page_workloads_need_the_builtin_server() {
        let text = format!("{PAGE}\n[target]\nserver_cmd = \"caddy run\"\n");
        let err = error_of(&text);
        assert!(
            err.contains("page workload `pages` needs the built-in server")
                && err.contains("server_cmd"),
            "{err}"
        );
    }

    #[test]
    fn published_sweep_figures_name_swept_values_of_a_swept_workload() {
        let sweep = "\n[sweep]\ntunable = \"cc\"\nvalues = [\"cubic\", \"bbr\"]\n";
        let figure = "\n[[published]]\nstudy = \"A\"\nlabel = \"bbr\"\nprofile = \"broadband\"\n\
                      workload = \"pages\"\nunit = \"%\"\nhigher_is_better = true\ncaveat = \"\"\n";
        let claim = "sweep = { baseline = \"cubic\", values = { cubic = 100.0, bbr = 118.0 } }\n";
        let ok = format!("{PAGE}{sweep}{figure}{claim}");
        assert!(Suite::from_toml(&ok).is_ok());
        let err = error_of(&ok.replace("bbr = 118.0", "reno = 118.0"));
        assert!(
            err.contains("names `reno`, which [sweep] does not run"),
            "{err}"
        );
        let err = error_of(&ok.replace("baseline = \"cubic\"", "baseline = \"vegas\""));
        assert!(err.contains("the baseline `vegas` among them"), "{err}");
        let err = error_of(&format!("{PAGE}{figure}{claim}"));
        assert!(err.contains("is not swept"), "{err}");
        let err = error_of(&format!("{PAGE}{sweep}{figure}h3 = 1.0\n"));
        assert!(err.contains("which is swept"), "{err}");
    }

    #[test]
    fn published_differences_name_two_run_protocols() {
        let figure = "\n[[published]]\nstudy = \"C\"\nlabel = \"small\"\nprofile = \"broadband\"\n\
                      workload = \"pages\"\nunit = \"ms\"\nhigher_is_better = false\ncaveat = \"\"\n";
        let ok = format!(
            "{PAGE}{figure}difference = {{ subject = \"h3\", other = \"h2\", value = -200.0 }}\n"
        );
        let suite = Suite::from_toml(&ok).unwrap();
        let difference = suite.published[0].difference.unwrap();
        assert_eq!(
            (difference.subject, difference.other, difference.value),
            (Proto::H3, Proto::H2, -200.0)
        );
        let err = error_of(&ok.replace("\"h2\", value", "\"h1\", value"));
        assert!(
            err.contains("compares h1, which the suite does not run"),
            "{err}"
        );
        let err = error_of(&ok.replace("\"h2\", value", "\"h3\", value"));
        assert!(err.contains("against itself"), "{err}");
        let err = error_of(&ok.replace("value = ", "amount = "));
        assert!(err.contains("amount"), "{err}");
    }

    #[test]
    fn a_server_sweep_names_servers_the_target_defines() {
        let servers = "\n[target.servers]\nnode = \"node server.js --port {port}\"\n";
        let sweep = "\n[sweep]\ntunable = \"server\"\nvalues = [\"node\", \"builtin\"]\n";
        let suite = Suite::from_toml(&format!("{MINIMAL}{servers}{sweep}")).unwrap();
        assert_eq!(suite.sweep.unwrap().values, ["node", "builtin"]);

        let err = error_of(&format!(
            "{MINIMAL}{servers}{}",
            sweep.replace("node\"", "deno\"")
        ));
        assert!(err.contains("names server `deno`"), "{err}");
        let err = error_of(&format!("{MINIMAL}{servers}"));
        assert!(err.contains("add [sweep] tunable = \"server\""), "{err}");
        let with_cmd = servers.replace(
            "[target.servers]",
            "[target]\nserver_cmd = \"caddy run\"\n[target.servers]",
        );
        let err = error_of(&format!("{MINIMAL}{with_cmd}{sweep}"));
        assert!(err.contains("cannot also have `server_cmd`"), "{err}");
    }
}
