//! The rules of a field suite: one whose `[target] url` names a deployed
//! server. No server is started, every workload requests a URL over the
//! real path (`real`) or an emulated one on top of it, and what a run may
//! send a server it does not own is capped.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use h3lab_results::bench::Results;

use super::target::{FieldUrl, Pin};
use super::workload::{Load, RpsMetric, Site};
use super::{Count, Suite};

/// The profile with no emulation: the real path alone.
pub(crate) const REAL: &str = "real";

/// The pause after each cell unless the suite sets one: the write-ups'.
pub(crate) const DEFAULT_PAUSE: Duration = Duration::from_secs(3);

/// What a field run may ask of a server it does not own unless the suite
/// sets `allow_heavy = true` (docs/field.md, "Politeness").
pub(crate) mod caps {
    /// Requests per second of an rps workload (an open model).
    pub(crate) const RATE: u32 = 50;
    /// Requests per second of an rps workload that names none.
    pub(crate) const DEFAULT_RATE: u32 = 10;
    /// How long an rps workload runs.
    pub(crate) const DURATION_S: u64 = 30;
    /// Connections of an rps or download workload (rps's default is 10).
    pub(crate) const CONNECTIONS: u32 = 10;
    /// Parallel streams of a download workload.
    pub(crate) const STREAMS: u32 = 4;
}

impl Suite {
    /// The suite a field run recorded (`toml`), with the addresses it used
    /// (`pinned`, `HOST:PORT:ADDR`) pinned where the suite did not pin
    /// them already, so a run again goes where the first one went.
    pub fn rerun(toml: &str, pinned: &[String]) -> anyhow::Result<Suite> {
        let mut suite = Suite::from_toml(toml)?;
        for text in pinned {
            let pin: Pin = text.parse().map_err(anyhow::Error::msg)?;
            if !suite
                .target
                .resolve
                .iter()
                .any(|p| p.host_port == pin.host_port)
            {
                suite.target.resolve.push(pin);
            }
        }
        Ok(suite)
    }

    /// The suite a field run's `results.json` (`results`, read from
    /// `path`) recorded, to [`Suite::rerun`]; a lab run's results, which
    /// hold no suite file, are refused.
    pub fn rerun_of(results: &Results, path: &Path) -> anyhow::Result<Suite> {
        let field = results.field.as_ref().with_context(|| {
            format!(
                "{} is a lab run's results, which do not hold their suite file; run its suite \
                 (or preset `{}`) instead",
                path.display(),
                (results.suite.preset.as_deref()).unwrap_or(&results.suite.name)
            )
        })?;
        Suite::rerun(&field.suite_toml, &field.pinned)
            .with_context(|| format!("the suite recorded in {}", path.display()))
    }

    /// A field suite on the real path alone, for a machine that cannot
    /// emulate its other profiles: those profiles, and the suite.
    pub fn real_path_only(self) -> anyhow::Result<(Vec<String>, Suite)> {
        let left_out = (self.profiles.iter())
            .filter(|profile| *profile != REAL)
            .cloned()
            .collect();
        Ok((left_out, self.with_profiles(vec![REAL.to_string()])?))
    }

    /// Whether this is a field suite: `[target] url` names its pages.
    pub fn is_field(&self) -> bool {
        !self.target.url.is_empty()
    }

    /// Gives every page, ttfb and rps workload without a `url` the
    /// target's: one workload per target URL, named after its page when
    /// there are several.
    pub(super) fn fill_field_urls(&mut self) {
        let urls = self.target.url.clone();
        if urls.is_empty() {
            return;
        }
        let mut filled = Vec::new();
        for workload in std::mem::take(&mut self.workloads) {
            let takes_target = workload.url.is_none()
                && matches!(
                    workload.load,
                    Load::Page { .. } | Load::Ttfb { .. } | Load::Rps { .. }
                );
            if !takes_target {
                filled.push(workload);
                continue;
            }
            for url in &urls {
                let mut one = workload.clone();
                if urls.len() > 1 {
                    one.name = format!("{} {}", workload.name, short(url));
                }
                one.url = Some(url.clone());
                filled.push(one);
            }
        }
        self.workloads = filled;
    }

    /// A field suite's own rules, or a lab suite's refusal of field keys.
    pub(super) fn check_field(&self) -> anyhow::Result<()> {
        match self.is_field() {
            true => self.check_field_suite(),
            false => self.check_lab_suite(),
        }
    }

    fn check_field_suite(&self) -> anyhow::Result<()> {
        let name = &self.name;
        let lab_only = [
            ("server_cmd", self.target.server_cmd.is_some()),
            ("servers", !self.target.servers.is_empty()),
            ("initial_window", self.target.initial_window.is_some()),
            ("port", self.target.port.is_some()),
        ];
        if let Some((key, _)) = lab_only.iter().find(|(_, set)| *set) {
            anyhow::bail!(
                "suite `{name}`: [target] `{key}` sets up a server h3lab starts, and a field run \
                 (`url`) starts none; drop one of them"
            );
        }
        anyhow::ensure!(
            self.sweep.is_none(),
            "suite `{name}`: a sweep changes the built-in server's settings, and a field run \
             measures a server h3lab does not run; drop [sweep] or [target] url"
        );
        anyhow::ensure!(
            !self.profiles.iter().any(|p| p == "loopback"),
            "suite `{name}`: `loopback` runs both ends on this machine; a field run's profile \
             with no emulation is `{REAL}`"
        );
        for workload in &self.workloads {
            let what = format!(
                "suite `{name}`: {} workload `{}`",
                workload.kind(),
                workload.name
            );
            anyhow::ensure!(
                !matches!(workload.load, Load::Conformance { .. }),
                "{what}: the conformance suite sends malformed frames and requests on purpose, \
                 so a suite runs it against lab servers only; for a server of your own, run \
                 `h3lab probe conformance URL`"
            );
            if let Load::Page { site, .. } = &workload.load {
                anyhow::ensure!(
                    *site == Site::Remote,
                    "{what} names a `site` or `har`, which a lab run serves; a field run loads \
                     the target's pages (or the workload's `url`)"
                );
            }
            let size = match &workload.load {
                Load::Rps { size, .. } | Load::Download { size, .. } => *size,
                _ => None,
            };
            anyhow::ensure!(
                size.is_none(),
                "{what} has a `size`, which sizes the lab server's bodies; a field run requests \
                 `url` and takes what it answers"
            );
            anyhow::ensure!(
                workload.url.is_some(),
                "{what} needs `url`: the file to download from the target"
            );
            if !self.target.allow_heavy {
                check_caps(&workload.load).map_err(|why| {
                    anyhow::anyhow!(
                        "{what}: {why}; a field run is capped so that it cannot flood a server \
                         it does not own (docs/field.md); set [target] allow_heavy = true only \
                         for your own server"
                    )
                })?;
            }
            if let Load::Rps { metric, .. } = &workload.load {
                anyhow::ensure!(
                    *metric != RpsMetric::Throughput,
                    "{what} measures throughput, which means loading the server as hard as it \
                     goes; a field run measures latency at a fixed rate: metric = \"p50\" or \"p99\""
                );
            }
        }
        Ok(())
    }

    fn check_lab_suite(&self) -> anyhow::Result<()> {
        let name = &self.name;
        let field_keys = [
            ("origins", !self.target.origins.is_empty()),
            ("resolve", !self.target.resolve.is_empty()),
            ("pause", self.target.pause.is_some()),
            ("place", self.target.place.is_some()),
            ("allow_heavy", self.target.allow_heavy),
            ("insecure", self.target.insecure),
        ];
        let field_profile = self.profiles.iter().any(|p| p == REAL);
        let field_workload = self.workloads.iter().find(|w| w.url.is_some());
        if let Some((key, _)) = field_keys.iter().find(|(_, set)| *set) {
            anyhow::bail!("suite `{name}`: [target] `{key}` is for a field run; add [target] url");
        }
        anyhow::ensure!(
            !field_profile,
            "suite `{name}`: profile `{REAL}` is the real path to a deployed server; add [target] \
             url, or use `loopback` for no emulation"
        );
        if let Some(workload) = field_workload {
            anyhow::bail!(
                "suite `{name}`: workload `{}` has a `url`, which only a field run requests; add \
                 [target] url",
                workload.name
            );
        }
        for workload in &self.workloads {
            let what = format!("{} workload `{}`", workload.kind(), workload.name);
            match &workload.load {
                Load::Page {
                    site: Site::Remote, ..
                } => anyhow::bail!(
                    "{what} needs `site` (a shape: small, content, spa, cms; or the directory \
                     of a static site) or `har` (a captured page); or, in a field suite, `url`"
                ),
                Load::Rps { size: None, .. } | Load::Download { size: None, .. } => {
                    anyhow::bail!("{what} needs `size`")
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The profile names a suite may use besides built-in and its own.
    pub(super) fn is_field_profile(&self, name: &str) -> bool {
        self.is_field() && name == REAL
    }
}

/// Why a workload asks more than a field run may, if it does.
fn check_caps(load: &Load) -> Result<(), String> {
    let over = |what: &str, asked: u64, cap: u64| -> Result<(), String> {
        match asked > cap {
            true => Err(format!("{what} {asked} is over the field cap of {cap}")),
            false => Ok(()),
        }
    };
    match load {
        Load::Rps {
            connections,
            duration,
            rate,
            ..
        } => {
            over(
                "rate",
                rate.map_or(caps::DEFAULT_RATE, |r| r.0).into(),
                caps::RATE.into(),
            )?;
            over("duration (s)", duration.0.as_secs(), caps::DURATION_S)?;
            over(
                "connections",
                connections.0.into(),
                caps::CONNECTIONS.into(),
            )
        }
        Load::Download {
            streams,
            connections,
            ..
        } => {
            over("streams", streams.0.into(), caps::STREAMS.into())?;
            let connections = connections.unwrap_or(Count(1));
            over(
                "connections",
                connections.0.into(),
                caps::CONNECTIONS.into(),
            )
        }
        Load::Ttfb { .. } | Load::Page { .. } | Load::Conformance { .. } => Ok(()),
    }
}

/// `host/path` of a URL, for a workload's name.
fn short(url: &FieldUrl) -> String {
    let host = url.0.host_str().unwrap_or_default();
    format!("{host}{}", url.0.path())
}

#[cfg(test)]
mod tests {
    use super::super::tests::error_of;
    use super::*;

    const FIELD: &str = "name = \"t\"\nprotocols = [\"h2\", \"h3\"]\nprofiles = [\"real\"]\n\
                         [target]\nurl = [\"https://a.test/\", \"https://b.test/x\"]\n";

    #[test]
    fn workloads_without_a_url_take_each_of_the_targets() {
        let suite = Suite::from_toml(&format!(
            "{FIELD}[[workload]]\nkind = \"page\"\nname = \"home\"\n\
             [[workload]]\nkind = \"download\"\nname = \"dl\"\nurl = \"https://a.test/big\"\n"
        ))
        .unwrap();
        let names: Vec<(&str, String)> = suite
            .workloads
            .iter()
            .map(|w| (w.name(), w.url.as_ref().unwrap().to_string()))
            .collect();
        assert_eq!(
            names,
            [
                ("home a.test/", "https://a.test/".to_string()),
                ("home b.test/x", "https://b.test/x".to_string()),
                ("dl", "https://a.test/big".to_string()),
            ]
        );
    }

    #[test]
    fn field_and_lab_keys_do_not_mix_and_the_caps_hold() {
        let page = "[[workload]]\nkind = \"page\"\nname = \"home\"\n";
        let cases = [
            (format!("{FIELD}server_cmd = \"caddy run\"\n{page}"), "starts none"),
            (FIELD.replace("[\"real\"]", "[\"loopback\"]") + page, "is `real`"),
            (format!("{FIELD}{page}site = \"small\"\n"), "names a `site` or `har`"),
            (format!("{FIELD}[[workload]]\nkind = \"download\"\nname = \"d\"\n"), "needs `url`"),
            (format!("{FIELD}[[workload]]\nkind = \"rps\"\nname = \"r\"\nduration = \"5s\"\n"), "measures throughput"),
            (
                format!("{FIELD}[[workload]]\nkind = \"rps\"\nname = \"r\"\nmetric = \"p50\"\nrate = 51\nduration = \"5s\"\n"),
                "rate 51 is over the field cap of 50",
            ),
            (
                format!("{FIELD}[[workload]]\nkind = \"rps\"\nname = \"r\"\nmetric = \"p50\"\nsize = \"1KB\"\nduration = \"5s\"\n"),
                "has a `size`",
            ),
            (FIELD.replace("https://a.test/", "http://a.test/") + page, "not an https:// URL"),
            (FIELD.replace("url = [", "resolve = [\"a.test:x:1.2.3.4\"]\nurl = [") + page, "is not a port"),
            (
                "name = \"t\"\nprotocols = [\"h2\"]\nprofiles = [\"real\"]\n[[workload]]\nkind = \"page\"\nname = \"p\"\nsite = \"small\"\n".to_string(),
                "profile `real` is the real path",
            ),
            (
                "name = \"t\"\nprotocols = [\"h2\"]\nprofiles = [\"broadband\"]\n[target]\npause = \"1s\"\n[[workload]]\nkind = \"page\"\nname = \"p\"\nsite = \"small\"\n".to_string(),
                "`pause` is for a field run",
            ),
            (
                "name = \"t\"\nprotocols = [\"h2\"]\nprofiles = [\"broadband\"]\n[[workload]]\nkind = \"page\"\nname = \"p\"\n".to_string(),
                "in a field suite, `url`",
            ),
        ];
        for (text, expected) in cases {
            let err = error_of(&text);
            assert!(err.contains(expected), "expected `{expected}` in: {err}");
        }
        let heavy = format!(
            "{FIELD}allow_heavy = true\n[[workload]]\nkind = \"rps\"\nname = \"r\"\nmetric = \"p50\"\nrate = 500\nduration = \"5s\"\n"
        );
        assert!(
            Suite::from_toml(&heavy).is_ok(),
            "allow_heavy lifts the caps"
        );
    }

    #[test]
    fn a_rerun_keeps_the_suites_pins_and_adds_the_recorded_ones() {
        let text = FIELD.replace("url = [", "resolve = [\"a.test:443:192.0.2.1\"]\nurl = [")
            + "[[workload]]\nkind = \"page\"\nname = \"home\"\n";
        let suite = Suite::rerun(
            &text,
            &[
                "a.test:443:192.0.2.9".to_string(),
                "b.test:443:192.0.2.7".to_string(),
            ],
        )
        .unwrap();
        let pins: Vec<String> = suite.target.resolve.iter().map(Pin::to_string).collect();
        assert_eq!(pins, ["a.test:443:192.0.2.1", "b.test:443:192.0.2.7"]);
    }

    #[test]
    fn a_field_runs_results_run_again_and_a_lab_runs_are_refused() {
        let lab = "name = \"t\"\nprotocols = [\"h2\"]\nprofiles = [\"broadband\"]\n\
                   [[workload]]\nkind = \"page\"\nname = \"p\"\nsite = \"small\"\n";
        let ctx = crate::runner::RunContext {
            exe: Default::default(),
            scratch: Default::default(),
            stop: Default::default(),
            preset: Some("lab".to_string()),
            field: None,
        };
        let mut results = crate::runner::new_results(&Suite::from_toml(lab).unwrap(), &ctx);
        let path = Path::new("run/results.json");
        let err = Suite::rerun_of(&results, path).unwrap_err().to_string();
        assert!(err.starts_with("run/results.json is a lab run's"), "{err}");
        assert!(err.contains("preset `lab`"), "{err}");
        let toml = format!("{FIELD}[[workload]]\nkind = \"page\"\nname = \"home\"\n");
        results.field = Some(h3lab_results::bench::FieldRun {
            urls: Vec::new(),
            resolved: Default::default(),
            pinned: vec!["a.test:443:192.0.2.9".to_string()],
            origins: Vec::new(),
            place: None,
            hostname: None,
            pause_s: 3.0,
            suite_toml: toml,
        });
        let suite = Suite::rerun_of(&results, path).unwrap();
        let pins: Vec<String> = suite.target.resolve.iter().map(Pin::to_string).collect();
        assert_eq!(pins, ["a.test:443:192.0.2.9"]);
    }
}
