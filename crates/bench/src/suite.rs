//! Suite files: the TOML that names protocols, profiles, workloads,
//! repetitions, seed, warm-up and target. Documented in `docs/suite.md`.
//!
//! Unknown keys and impossible values are rejected with the line number: the
//! types validate while they deserialize, so toml's span-carrying errors
//! point at the offending line. Each table has a module (`workload`,
//! `target`, `custom_profile`, `published`), the units they are written in
//! are in `values`, and the checks that need the whole suite in `checks`.

mod checks;
mod custom_profile;
mod edge;
mod field;
mod paths;
mod population;
mod published;
mod target;
mod values;
mod workload;

use std::path::Path;

use anyhow::Context;
use h3lab_results::Proto;
use serde::Deserialize;

use crate::sweep::Sweep;

pub(crate) use custom_profile::{dns_setting, CustomProfile};
pub(crate) use edge::{Edge, EdgeServer, Forwarding, OriginProtocol};
pub(crate) use field::{caps, DEFAULT_PAUSE, REAL};
pub(crate) use published::PublishedFigure;
pub(crate) use target::Target;
pub(crate) use target::{fixed_protocols, FieldUrl, Pin};
pub(crate) use values::{ByteSize, Count, HumanDuration};
pub(crate) use workload::{import_har, DownloadMetric, Load, RpsMetric, Site, Workload};

/// A parsed, validated suite.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// The suite's name (required); recorded in the results and shown in the report.
    pub name: String,
    /// What the suite measures, in words; shown in the report.
    #[serde(default)]
    pub description: String,
    /// Required, unless a `[population]` says which its groups need.
    #[serde(default)]
    pub(crate) protocols: Vec<Proto>,
    /// Built-in profile names or names of `[[profile]]` tables below;
    /// a `[population]` adds one per group.
    #[serde(default)]
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
    /// The users the suite stands for, as written; read once into the
    /// profiles and workloads that run it, and into `population`.
    #[serde(rename = "population")]
    population_table: Option<population::PopulationTable>,
    /// The population's groups, as results record them.
    #[serde(skip)]
    pub(crate) population: Option<h3lab_results::population::Population>,
    /// The TOML the suite was read from, recorded with a field run's
    /// results so that they say how to run it again.
    #[serde(skip)]
    pub(crate) source: String,
    /// An A/A run (`h3lab bench --aa`): every cell runs twice, as two
    /// replicas of its protocol, and each verdict compares them.
    #[serde(skip)]
    pub aa: bool,
}

/// Five: a call at 5 % needs at least 4 repetitions a side
/// (docs/statistics.md), and 5 leave room for one repetition among the
/// other side's.
fn default_repetitions() -> Count {
    Count(5)
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
        let mut suite: Suite = toml::from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
        suite.source = text.to_string();
        suite.fill_field_urls();
        suite.expand_population()?;
        suite.check_cross_references()?;
        Ok(suite)
    }

    /// Reads a suite file and parses it, with the paths in it relative to
    /// the file; errors name the file.
    pub fn from_file(path: &Path) -> anyhow::Result<Suite> {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!("cannot read suite file {}; check the path", path.display())
        })?;
        let dir = path.parent().unwrap_or(Path::new(""));
        paths::relative_to(dir, || Suite::from_toml(&text))
            .with_context(|| format!("suite file {}", path.display()))
    }

    /// The suite on `profiles` instead of its own (`--profiles`): a
    /// workload kept to profiles none of which remain is left out, as are
    /// published figures on a profile left out; a profile neither built in
    /// nor defined by the suite is an error.
    pub fn with_profiles(mut self, profiles: Vec<String>) -> anyhow::Result<Suite> {
        anyhow::ensure!(
            self.population.is_none(),
            "--profiles: suite `{}` stands for a population, whose verdict needs every group; \
             change the groups in the suite instead (`h3lab bench --show {}` prints it)",
            self.name,
            self.name
        );
        let kept = |profile: &String| profiles.contains(profile);
        self.workloads.retain_mut(|workload| {
            let restricted = !workload.profiles.is_empty();
            workload.profiles.retain(kept);
            !(restricted && workload.profiles.is_empty())
        });
        self.published.retain(|figure| kept(&figure.profile));
        self.profiles = profiles;
        self.check_cross_references().context("--profiles")?;
        Ok(self)
    }

    /// Whether the server of `setting` (a `server` sweep's row) offers
    /// `protocol`; every other server runs every protocol.
    pub(crate) fn offers(&self, setting: Option<&crate::sweep::Setting>, protocol: Proto) -> bool {
        setting
            .and_then(crate::sweep::Setting::server)
            .and_then(|name| self.target.servers.get(name))
            .is_none_or(|server| server.offers(protocol))
    }

    /// For each page workload that replays a HAR, what its import makes of
    /// it (`--dry-run` prints them before the cells).
    pub fn har_imports(&self) -> Vec<String> {
        let think = |think: h3lab_site::replay::Think| match think {
            h3lab_site::replay::Think::Recorded => "recorded server think time",
            h3lab_site::replay::Think::None => "no server think time",
        };
        self.workloads
            .iter()
            .filter_map(|workload| match &workload.load {
                Load::Page {
                    site: Site::Har(har),
                    ..
                } => Some(format!(
                    "page workload `{}` replays {} ({}):\n{}",
                    workload.name(),
                    har.path.display(),
                    think(har.import.think),
                    har.summary.trim_end()
                )),
                _ => None,
            })
            .collect()
    }

    /// The custom profile called `name`, if the suite defines one.
    pub(crate) fn custom_profile(&self, name: &str) -> Option<&CustomProfile> {
        self.custom_profiles.iter().find(|p| p.name == name)
    }

    /// What profile `name`'s path publishes in DNS for the site (its
    /// `[[profile]]`'s `dns`); `None` is no DNS server.
    pub(crate) fn published_dns(&self, name: &str) -> anyhow::Result<Option<h3lab_dns::Publish>> {
        let Some(custom) = self.custom_profile(name) else {
            return Ok(None);
        };
        custom
            .published_dns()
            .with_context(|| format!("profile `{name}` in the suite"))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    pub(super) const MINIMAL: &str = r#"
name = "t"
protocols = ["h2", "h3"]
profiles = ["broadband"]

[[workload]]
kind = "rps"
name = "api"
size = "1KB"
duration = "2s"
"#;

    pub(super) fn error_of(text: &str) -> String {
        format!("{:#}", Suite::from_toml(text).unwrap_err())
    }

    /// `--profiles`: the suite on others of its own or built-in ones; a
    /// workload kept to profiles left out goes too.
    #[test]
    fn profiles_can_be_chosen_for_a_run() {
        let text = MINIMAL.replace("[\"broadband\"]", "[\"broadband\", \"satellite\"]")
            + "\n[[workload]]\nkind = \"ttfb\"\nname = \"far\"\nprofiles = [\"satellite\"]\n";
        let suite = Suite::from_toml(&text).unwrap();
        let names = |suite: &Suite| -> Vec<String> {
            suite
                .workloads
                .iter()
                .map(|w| w.name().to_string())
                .collect()
        };
        assert_eq!(names(&suite), ["api", "far"]);
        let near = suite
            .clone()
            .with_profiles(vec!["broadband".into(), "lte".into()]);
        let near = near.unwrap();
        assert_eq!(near.profiles, ["broadband", "lte"]);
        assert_eq!(names(&near), ["api"]);
        let far = suite
            .clone()
            .with_profiles(vec!["satellite".into()])
            .unwrap();
        assert_eq!(names(&far), ["api", "far"]);
        let err = format!(
            "{:#}",
            suite.with_profiles(vec!["moon".into()]).unwrap_err()
        );
        assert!(err.contains("--profiles") && err.contains("moon"), "{err}");
    }

    #[test]
    fn minimal_suite_gets_defaults() {
        let suite = Suite::from_toml(MINIMAL).unwrap();
        assert_eq!(suite.repetitions, Count(5));
        assert_eq!(suite.baseline, Proto::H2);
        match &suite.workloads[0].load {
            Load::Rps {
                size,
                connections,
                streams,
                duration,
                metric,
                rate,
                headers,
            } => {
                assert_eq!(size.unwrap().0, 1000);
                assert_eq!(*rate, None);
                assert_eq!(*headers, h3lab_results::HeaderSet::Minimal);
                assert_eq!(*connections, Count(10));
                assert_eq!(*streams, Count(1));
                assert_eq!(duration.0, Duration::from_secs(2));
                assert_eq!(*metric, RpsMetric::Throughput);
            }
            other => panic!("parsed as {other:?}"),
        }
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

    pub(super) const PAGE: &str = r#"
name = "t"
protocols = ["h2", "h3"]
profiles = ["broadband"]

[[workload]]
kind = "page"
name = "pages"
site = "small"
"#;
}
