//! The suite target: suite TOML (dictionary soup, or a preset or template
//! with a few edits) parses or fails with a message. A parsed suite has the
//! name its file gives, and every profile it lists yields sane link
//! settings at the suite's seed or a clean error naming the profile.

use arbitrary::{Result, Unstructured};
use h3lab_bench::presets;
use h3lab_bench::suite::Suite;

use crate::input::{mutate, pick, soup};
use crate::oracle::check_sane_settings;
use crate::target::Target;

/// A suite with a bit of everything the format has.
const TEMPLATE: &str = r#"name = "fuzz"
description = "every kind of table"
protocols = ["h1", "h2", "h3"]
profiles = ["broadband", "custom", "loopback"]
repetitions = 2
seed = 7
warmup = "1s"
baseline = "h2"

[target]
port = 8443
quic_cc = "cubic"

[[profile]]
name = "custom"
base = "cellular"
rtt = "80ms"
down = "20mbit"
up = "5mbit"
loss = "1%"
loss_direction = "both"
jitter = "3ms:normal"
queue = "100p"

[[workload]]
kind = "rps"
name = "api"
size = "1KB"
connections = 4
streams = 2
duration = "2s"
metric = "p99"

[[workload]]
kind = "download"
name = "dl"
size = "10MB"
streams = 4
metric = "rps"
profiles = ["custom"]

[[workload]]
kind = "ttfb"
name = "hs"
modes = ["cold", "resumed"]
samples = 3

[[workload]]
kind = "page"
name = "pages"
site = "small"
loader = "builtin"
visit = "warm"
loads = 2

[[published]]
study = "X"
label = "pages"
profile = "broadband"
workload = "pages"
unit = "ms"
higher_is_better = false
h2 = 100.0
h3 = 90.0
difference = { subject = "h3", other = "h2", value = -10.0 }
caveat = "none"
"#;

const WORDS: &[&str] = &[
    "name = \"x\"",
    "[[profile]]",
    "[[workload]]",
    "[target]",
    "[[published]]",
    "protocols = []",
    "profiles = []",
    "kind = \"rps\"",
    "kind = \"page\"",
    "kind = \"ttfb\"",
    "repetitions = 0",
    "seed = -1",
    "server_cmd = \"caddy run\"",
    "base = \"loopback\"",
    "loss_model = \"gilbert:1%,30%,0%,100%\"",
    "loss_model = \"gilbert:1%\"",
    "trace_down = \"/\"",
    "site = \"/\"",
    "site = \"/nonexistent\"",
    "modes = [\"warm\"]",
    "\"h1\"",
    "\"h4\"",
    "[\"h2\", \"h3\"]",
    "0",
    "1",
    "-1",
    "4294967296",
    "9223372036854775807",
    "\"1KB\"",
    "\"10GiB\"",
    "\"18446744073709551615 EiB\"",
    "\"1e400KB\"",
    "\"0s\"",
    "\"99999999999999999999s\"",
    "\"-1s\"",
    "\"cellular\"",
    "\"loopback\"",
    "\"both\"",
    "\"sideways\"",
    "\"\"",
    "true",
    "1.5",
    "nan",
    "inf",
    "{}",
    "[]",
    "\"small\"",
    "\"cms\"",
    "\"100p\"",
    "\"0p\"",
    "\"5ms:normal\"",
    "\"5ms:pareto\"",
    "\"1%\"",
    "\"101%\"",
    "\"50mbit\"",
    "\"0mbit\"",
    "\"soon\"",
    "\"chromium\"",
    "\"auto\"",
    "\"bbr\"",
    "\"throughput\"",
    "\"p50\"",
    "\"time\"",
    "'literal'",
    "\"\"\"multi\nline\"\"\"",
    "[1, \"a\"]",
    "1979-05-27",
];

/// The suite target (no state).
pub struct SuiteTarget;

impl Target for SuiteTarget {
    fn check(&mut self, u: &mut Unstructured) -> Result<()> {
        let text = match u.int_in_range(0..=3)? {
            0 => soup(u, WORDS)?,
            1 => {
                let name = pick(u, &presets::names())?;
                let preset = presets::preset_text(name).expect("a listed preset");
                mutate(preset, u, WORDS)?
            }
            _ => mutate(TEMPLATE, u, WORDS)?,
        };
        check_suite_text(&text);
        Ok(())
    }
}

/// Parses `text`; an accepted suite must agree with the TOML it came from,
/// and each of its profiles must give settings or an error.
pub fn check_suite_text(text: &str) -> Option<Suite> {
    let suite = match Suite::from_toml(text) {
        Ok(suite) => suite,
        Err(err) => {
            let message = format!("{err:#}");
            assert!(!message.trim().is_empty(), "an error without a message");
            return None;
        }
    };
    let table: toml::Table = text.parse().expect("TOML that made a suite is TOML");
    assert_eq!(
        Some(suite.name.as_str()),
        table["name"].as_str(),
        "suite name"
    );
    let seed = table.get("seed").map_or(Some(1), toml::Value::as_integer);
    let seed = seed.expect("an accepted seed is an integer") as u64;
    for name in &profile_names(&table) {
        match suite.link_settings(name) {
            Ok(Some(settings)) => check_sane_settings(&settings, seed),
            Ok(None) => {}
            Err(err) => {
                let message = format!("{err:#}");
                assert!(
                    !message.trim().is_empty(),
                    "profile `{name}`: an error without a message"
                );
            }
        }
    }
    Some(suite)
}

/// The profiles an accepted suite runs: its `profiles`, then a profile of
/// each `[population]` group's name (either may be absent).
fn profile_names(table: &toml::Table) -> Vec<&str> {
    let mut all: Vec<&str> = Vec::new();
    if let Some(profiles) = table.get("profiles") {
        let profiles = profiles.as_array().expect("profiles is an array");
        all.extend(profiles.iter().map(|p| p.as_str().expect("a profile name")));
    }
    let groups = table.get("population").and_then(|p| p.get("group"));
    if let Some(groups) = groups.and_then(toml::Value::as_array) {
        for group in groups {
            let name = group.get("name").and_then(toml::Value::as_str);
            all.push(name.expect("a group name"));
        }
    }
    all
}
