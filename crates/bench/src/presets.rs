//! Built-in presets: suites embedded in the binary. `default` is what
//! `h3lab bench` runs with no arguments; the `study-*` ones reproduce the
//! published experiments of `studies.md` and carry their figures; `node`
//! compares Node.js servers (and the h3lab-node package) with h3lab serve;
//! `servers` compares h3lab serve with Caddy and nginx; `conformance` runs
//! the HTTP/3 conformance suite against each of those servers; `udp-blocked` shows
//! what turning h3 on costs users whose network blocks or throttles UDP;
//! `population` gives one verdict for users on several networks at once;
//! `costs` checks the write-ups' claims about bytes, header compression
//! and CPU per request; `edge` puts nginx, HAProxy, Caddy and h3lab serve in front
//! of the origin, which sits behind a link of its own;
//! `field` measures a deployed site over the real path (`--url`).

use anyhow::Context;

use crate::runner;
use crate::suite::Suite;

/// Every preset's name and TOML text, in the order `--list` shows them.
const PRESETS: &[(&str, &str)] = &[
    ("default", include_str!("../presets/default.toml")),
    ("study-a", include_str!("../presets/study-a.toml")),
    ("study-b", include_str!("../presets/study-b.toml")),
    ("study-c", include_str!("../presets/study-c.toml")),
    ("study-d", include_str!("../presets/study-d.toml")),
    ("study-e", include_str!("../presets/study-e.toml")),
    ("node", include_str!("../presets/node.toml")),
    ("servers", include_str!("../presets/servers.toml")),
    ("conformance", include_str!("../presets/conformance.toml")),
    ("edge", include_str!("../presets/edge.toml")),
    ("udp-blocked", include_str!("../presets/udp-blocked.toml")),
    ("population", include_str!("../presets/population.toml")),
    ("costs", include_str!("../presets/costs.toml")),
    ("field", include_str!("../presets/field.toml")),
];

/// The `field` preset against `url` (`h3lab bench --url URL`), with
/// `resolve` pins (`HOST:PORT:ADDR`) added to its target.
pub fn field(url: &str, resolve: &[String]) -> anyhow::Result<Suite> {
    let text = preset_text("field").expect("the field preset is built in");
    let quoted = |text: &str| toml::Value::String(text.to_string()).to_string();
    let mut target = format!("[target]\nurl = {}\n", quoted(url));
    if !resolve.is_empty() {
        let pins: Vec<String> = resolve.iter().map(|pin| quoted(pin)).collect();
        target.push_str(&format!("resolve = [{}]\n", pins.join(", ")));
    }
    let text = text.replace("[target]\nurl = \"https://www.example.com/\"\n", &target);
    Suite::from_toml(&text).context("the field preset with --url")
}

/// Names of the built-in presets.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|(name, _)| *name).collect()
}

/// The preset called `name` (`a` … `e` are accepted for `study-*`).
pub fn preset(name: &str) -> anyhow::Result<Suite> {
    let wanted = name.to_ascii_lowercase();
    let text = PRESETS
        .iter()
        .find(|(n, _)| *n == wanted || n.strip_prefix("study-") == Some(wanted.as_str()))
        .map(|(_, text)| *text)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "unknown preset `{name}`; choose one of: {} (see `h3lab bench --list`)",
                names().join(", ")
            )
        })?;
    Suite::from_toml(text)
}

/// The TOML text of a preset, for `h3lab bench --show NAME` and as a
/// starting point for one's own suite file.
pub fn preset_text(name: &str) -> Option<&'static str> {
    PRESETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// A preset as `--list` shows it: its size, its estimated run time and
/// what it is for.
pub struct PresetSummary {
    /// Its name, as `--preset` takes it.
    pub name: &'static str,
    /// How many cells it plans.
    pub cells: usize,
    /// The runner's estimate, in whole minutes as `--list` prints it.
    pub minutes: u64,
    /// Its description, on one line.
    pub description: String,
}

impl PresetSummary {
    /// The description's opening clause (up to its first colon or full
    /// stop): what the preset is, in a few words.
    pub fn headline(&self) -> &str {
        before_first(&self.description, &[": ", ". "])
    }

    /// What it needs beyond root, from its description's
    /// "Needs ..." sentence, up to the first pause.
    pub fn needs(&self) -> Option<&str> {
        let start = self.description.find("Needs ")? + "Needs ".len();
        Some(before_first(&self.description[start..], &[": ", "; ", " (", ". "]).trim())
    }
}

/// `text` up to the first of `stops`, without a closing full stop.
fn before_first<'a>(text: &'a str, stops: &[&str]) -> &'a str {
    let end = (stops.iter())
        .filter_map(|stop| text.find(stop))
        .min()
        .unwrap_or(text.len());
    text[..end].trim_end_matches('.')
}

/// Every preset's summary, in `--list` order.
pub fn summaries() -> anyhow::Result<Vec<PresetSummary>> {
    names()
        .into_iter()
        .map(|name| {
            let suite = preset(name)?;
            let cells = runner::plan(&suite);
            Ok(PresetSummary {
                name,
                cells: cells.len(),
                minutes: runner::estimated_minutes(&suite, &cells),
                description: suite.description.replace('\n', " "),
            })
        })
        .collect()
}

/// What `h3lab bench --list` prints: each preset's name, cells and
/// estimated minutes, and its description, then how to run or show one.
pub fn catalogue() -> anyhow::Result<String> {
    let mut text = String::new();
    for preset in summaries()? {
        text.push_str(&format!(
            "{:<9} {} cells, about {} min\n          {}\n\n",
            preset.name, preset.cells, preset.minutes, preset.description
        ));
    }
    text.push_str("Run one with `h3lab bench --preset NAME`; `h3lab bench --show NAME` prints its suite file.\n");
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses() {
        for name in names() {
            let suite = preset(name).unwrap_or_else(|e| panic!("preset {name}: {e:#}"));
            assert_eq!(suite.name, name);
        }
    }

    /// The suites the docs measure with, which they tell readers to run.
    #[test]
    fn every_suite_in_the_docs_parses() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/suites");
        let mut read = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|ext| ext == "toml") {
                Suite::from_file(&path).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
                read += 1;
            }
        }
        assert!(read >= 5, "only {read} suites in {}", dir.display());
    }

    #[test]
    fn the_field_preset_takes_the_url_and_pins_of_bench_url() {
        let suite = field(
            "https://www.site.test/shop?a=\"b\"",
            &["www.site.test:443:198.51.100.2".to_string()],
        )
        .unwrap();
        assert!(suite.is_field());
        assert_eq!(
            suite.target.url[0].to_string(),
            "https://www.site.test/shop?a=%22b%22"
        );
        assert_eq!(
            suite.target.resolve[0].to_string(),
            "www.site.test:443:198.51.100.2"
        );
        let again = Suite::from_toml(&suite.source).unwrap();
        assert_eq!(
            again.target.url, suite.target.url,
            "the recorded suite is the one run"
        );
        assert!(field("http://www.site.test/", &[]).is_err());
    }

    /// The conformance preset runs the `servers` preset's servers, as that
    /// preset starts them, one h3 cell each per repetition: a server added
    /// to one is not silently missing from the other.
    #[test]
    fn the_conformance_preset_runs_every_server_of_the_servers_preset_over_h3() {
        let toml_of = |name| -> toml::Table { preset_text(name).unwrap().parse().unwrap() };
        let (servers, conformance) = (toml_of("servers"), toml_of("conformance"));
        assert_eq!(
            conformance["target"]["servers"],
            servers["target"]["servers"]
        );
        assert_eq!(conformance["sweep"], servers["sweep"]);
        let cells = runner::plan(&preset("conformance").unwrap());
        let ran: Vec<String> = (cells.iter())
            .filter(|cell| cell.repetition == 0)
            .map(|cell| cell.setting.as_ref().unwrap().recorded().value)
            .collect();
        let offer_h3 = servers["sweep"]["values"].as_array().unwrap().len() - 1;
        assert_eq!(
            ran.len(),
            offer_h3,
            "one cell per server but h1/h2-only nginx: {ran:?}"
        );
        assert!(!ran.contains(&"nginx".to_string()) && ran.contains(&"nginx-h3".to_string()));
        assert!(cells
            .iter()
            .all(|cell| cell.protocol == h3lab_results::Proto::H3));
    }

    #[test]
    fn short_study_names_work_and_unknown_ones_are_listed() {
        assert_eq!(preset("A").unwrap().name, "study-a");
        let err = preset("zz").unwrap_err().to_string();
        assert!(err.contains("study-d"), "{err}");
    }

    #[test]
    fn the_catalogue_lists_every_preset() {
        let text = catalogue().unwrap();
        for name in names() {
            assert!(
                text.contains(&format!("\n{name:<9} ")) || text.starts_with(name),
                "{name}"
            );
        }
        assert!(text.ends_with("prints its suite file.\n"));
    }
}
