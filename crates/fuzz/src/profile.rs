//! The profile target: the value parsers that the command line and suite
//! `[[profile]]` tables share (rates, times, percentages, queues, jitter,
//! loss directions) accept their documented forms within their documented
//! ranges and read them back exactly; a `[[profile]]` table gives settings
//! with each of its values applied over its base, or an error naming the
//! profile, and those settings run through the link model.

use arbitrary::{Result, Unstructured};
use h3lab_bench::suite::Suite;
use linkem::config::{
    parse_jitter, parse_percent, parse_queue, parse_rate, parse_time, LossDirection, MAX_RATE_BITS,
    MAX_TIME,
};
use linkem::model::{LossModel, QueueLimit, RateSpec, TRACE_OPPORTUNITY_BYTES};
use linkem::LinkSettings;

use crate::input::{arbitrary_packets, pick, quoted, soup, token};
use crate::oracle::{check_sane_settings, check_settings};
use crate::target::Target;

const VALUE_WORDS: &[&str] = &[
    "0",
    "1",
    "2.5",
    "50",
    "100",
    "1000000000000",
    "1000000000001",
    "99999999999999999999999",
    ".",
    "..",
    "-",
    "+",
    "1e3",
    "nan",
    "inf",
    " ",
    "bit",
    "kbit",
    "mbit",
    "gbit",
    "ns",
    "us",
    "ms",
    "s",
    "%",
    "p",
    "b",
    "kb",
    "kib",
    "mb",
    "mib",
    "unlimited",
    "Unlimited",
    ":",
    "uniform",
    "normal",
    "pareto",
    "down",
    "up",
    "both",
    "Both",
    "\u{0663}",
    "\u{ff11}",
    "µs",
];

const BASES: &[&str] = &[
    "loopback",
    "broadband",
    "cellular",
    "satellite",
    "lte",
    "fast-1g",
    "Cellular",
    "dialup",
    "",
];

/// The profile target: trace files for `trace_down` / `trace_up`.
pub struct ProfileTarget {
    dir: tempfile::TempDir,
}

/// A trace file of 3 opportunities per 10 ms: 3.6 Mbit/s.
const GOOD_TRACE: &str = "2\n5\n10\n";
const GOOD_TRACE_BITS: f64 = 3.0 * TRACE_OPPORTUNITY_BYTES as f64 * 8.0 / 0.010;

impl ProfileTarget {
    /// Writes the trace files the tables name.
    pub fn new() -> anyhow::Result<ProfileTarget> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("good.down"), GOOD_TRACE)?;
        std::fs::write(dir.path().join("bad.down"), "1\nabc\n")?;
        Ok(ProfileTarget { dir })
    }

    fn trace_path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

impl Target for ProfileTarget {
    fn check(&mut self, u: &mut Unstructured) -> Result<()> {
        match u.int_in_range(0..=2)? {
            0 => check_value_parsers(u),
            _ => self.check_profile_table(u),
        }
    }
}

/// Each parser on arbitrary text, and on its own forms read back.
fn check_value_parsers(u: &mut Unstructured) -> Result<()> {
    let text = match u.ratio(1, 2)? {
        true => soup(u, VALUE_WORDS)?.replace('\n', ""),
        false => token(u)?,
    };
    if let Ok(bits) = parse_rate(&text) {
        assert!(
            (1..=MAX_RATE_BITS).contains(&bits),
            "rate {text:?} -> {bits}"
        );
    }
    if let Ok(ns) = parse_time(&text) {
        assert!(ns <= MAX_TIME, "time {text:?} -> {ns}");
    }
    if let Ok(share) = parse_percent(&text) {
        assert!((0.0..=1.0).contains(&share), "percent {text:?} -> {share}");
    }
    let empty_queue = matches!(
        parse_queue(&text),
        Ok(QueueLimit::Packets(0) | QueueLimit::Bytes(0))
    );
    assert!(!empty_queue, "queue {text:?} holds nothing");
    if let Ok(jitter) = parse_jitter(&text) {
        if !text.contains(':') {
            assert_eq!(Some(jitter), parse_jitter(&format!("{text}:uniform")).ok());
        }
    }
    if let Ok(direction) = text.parse::<LossDirection>() {
        let name = text.trim().to_ascii_lowercase();
        assert!(
            ["down", "up", "both"].contains(&name.as_str()),
            "direction {text:?} -> {direction:?}"
        );
    }
    for result in [
        parse_rate(&text).map(drop),
        parse_time(&text).map(drop),
        parse_percent(&text).map(drop),
        parse_queue(&text).map(drop),
        parse_jitter(&text).map(drop),
    ] {
        if let Err(err) = result {
            assert!(
                !format!("{err:#}").trim().is_empty(),
                "an error without a message"
            );
        }
    }
    check_round_trips(u)
}

/// A value written in a parser's own form reads back as itself.
fn check_round_trips(u: &mut Unstructured) -> Result<()> {
    let bits = u.int_in_range(1..=MAX_RATE_BITS)?;
    assert_eq!(parse_rate(&format!("{bits}bit")).ok(), Some(bits));
    let kbits = u.int_in_range(1..=MAX_RATE_BITS / 1000)?;
    assert_eq!(parse_rate(&format!("{kbits}kbit")).ok(), Some(kbits * 1000));
    let ms = u.int_in_range(0..=MAX_TIME / 1_000_000)?;
    assert_eq!(parse_time(&format!("{ms}ms")).ok(), Some(ms * 1_000_000));
    let ns = u.int_in_range(0..=MAX_TIME)?;
    assert_eq!(parse_time(&format!("{ns}ns")).ok(), Some(ns));
    let percent = u.int_in_range(0..=100u32)?;
    assert_eq!(
        parse_percent(&format!("{percent}%")).ok(),
        Some(f64::from(percent) / 100.0)
    );
    let packets = u.int_in_range(1..=1u64 << 40)?;
    assert_eq!(
        parse_queue(&format!("{packets}p")).ok(),
        Some(QueueLimit::Packets(packets))
    );
    Ok(())
}

/// The values of one `[[profile]]` table, by key.
#[derive(Debug, Default)]
struct Table {
    base: Option<String>,
    rtt: Option<String>,
    down: Option<String>,
    up: Option<String>,
    loss: Option<String>,
    loss_model: Option<String>,
    loss_direction: Option<String>,
    jitter: Option<String>,
    queue: Option<String>,
    trace_down: Option<String>,
    trace_up: Option<String>,
}

impl Table {
    fn lines(&self) -> String {
        let keys = [
            ("base", &self.base),
            ("rtt", &self.rtt),
            ("down", &self.down),
            ("up", &self.up),
            ("loss", &self.loss),
            ("loss_model", &self.loss_model),
            ("loss_direction", &self.loss_direction),
            ("jitter", &self.jitter),
            ("queue", &self.queue),
            ("trace_down", &self.trace_down),
            ("trace_up", &self.trace_up),
        ];
        keys.iter()
            .filter_map(|(key, value)| value.as_ref().map(|v| format!("{key} = {}\n", quoted(v))))
            .collect()
    }

    fn overrides_nothing(&self) -> bool {
        self.lines().lines().all(|line| line.starts_with("base ="))
    }
}

/// Sometimes a value, of the key's kind or not.
fn maybe(
    u: &mut Unstructured,
    kind: fn(&mut Unstructured) -> Result<String>,
) -> Result<Option<String>> {
    Ok(match u.int_in_range(0..=9)? {
        0..=4 => None,
        5..=8 => Some(kind(u)?),
        _ => Some(token(u)?),
    })
}

fn number_with(u: &mut Unstructured, units: &[&str]) -> Result<String> {
    let number = match u.int_in_range(0..=3)? {
        0 => u.int_in_range(0..=1000u64)?.to_string(),
        1 => format!(
            "{}.{}",
            u.int_in_range(0..=100u32)?,
            u.int_in_range(0..=999u32)?
        ),
        2 => u.arbitrary::<u64>()?.to_string(),
        _ => pick(u, VALUE_WORDS)?.to_string(),
    };
    Ok(format!("{number}{}", pick(u, units)?))
}

fn time_text(u: &mut Unstructured) -> Result<String> {
    number_with(u, &["ns", "us", "ms", "s", "MS", " ms", ""])
}

fn rate_text(u: &mut Unstructured) -> Result<String> {
    number_with(u, &["bit", "kbit", "mbit", "gbit", "Mbit", "mbps", ""])
}

fn percent_text(u: &mut Unstructured) -> Result<String> {
    number_with(u, &["%", " %", ""])
}

fn queue_text(u: &mut Unstructured) -> Result<String> {
    match u.ratio(1, 5)? {
        true => Ok("unlimited".to_string()),
        false => number_with(u, &["p", "b", "kb", "kib", "mb", "mib", ""]),
    }
}

fn jitter_text(u: &mut Unstructured) -> Result<String> {
    let shape = pick(u, &["", ":uniform", ":normal", ":Normal", ":pareto"])?;
    Ok(format!("{}{shape}", time_text(u)?))
}

impl ProfileTarget {
    fn arbitrary_table(&self, u: &mut Unstructured) -> Result<Table> {
        let trace = |u: &mut Unstructured| -> Result<String> {
            let name = pick(u, &["good.down", "good.down", "bad.down", "missing.down"])?;
            Ok(self.trace_path(name))
        };
        Ok(Table {
            base: maybe(u, |u| Ok(pick(u, BASES)?.to_string()))?,
            rtt: maybe(u, time_text)?,
            down: maybe(u, rate_text)?,
            up: maybe(u, rate_text)?,
            loss: maybe(u, percent_text)?,
            loss_model: match u.ratio(1, 6)? {
                true => Some(
                    pick(
                        u,
                        &[
                            "bernoulli",
                            "gilbert:1%,30%,0%,100%",
                            "gilbert:1%",
                            "markov",
                        ],
                    )?
                    .to_string(),
                ),
                false => None,
            },
            loss_direction: maybe(u, |u| {
                Ok(pick(u, &["down", "up", "both", "UP", " both ", "sideways", ""])?.to_string())
            })?,
            jitter: maybe(u, jitter_text)?,
            queue: maybe(u, queue_text)?,
            trace_down: match u.ratio(1, 6)? {
                true => Some(trace(u)?),
                false => None,
            },
            trace_up: match u.ratio(1, 8)? {
                true => Some(trace(u)?),
                false => None,
            },
        })
    }

    fn check_profile_table(&self, u: &mut Unstructured) -> Result<()> {
        let table = self.arbitrary_table(u)?;
        let seed = u.int_in_range(0..=i64::MAX as u64)?;
        let text = format!(
            "name = \"fuzz\"\nprotocols = [\"h2\"]\nprofiles = [\"p\"]\nseed = {seed}\n\
             [[workload]]\nkind = \"ttfb\"\nname = \"hs\"\n[[profile]]\nname = \"p\"\n{}",
            table.lines()
        );
        let direction = table
            .loss_direction
            .as_deref()
            .map(str::parse::<LossDirection>);
        let suite = match Suite::from_toml(&text) {
            Ok(suite) => suite,
            Err(err) => {
                assert!(
                    matches!(direction, Some(Err(_))),
                    "refused a table with a valid loss direction: {err:#}\n{text}"
                );
                return Ok(());
            }
        };
        match suite.link_settings("p") {
            Ok(None) => {
                let base = table.base.as_deref().unwrap_or("");
                assert!(
                    base.eq_ignore_ascii_case("loopback") && table.overrides_nothing(),
                    "plain loopback from a table that asks for more:\n{text}"
                );
            }
            Ok(Some(settings)) => {
                check_sane_settings(&settings, seed);
                self.check_applied(&table, &settings);
                let packets = arbitrary_packets(u)?;
                check_settings(&settings, &packets[..packets.len().min(200)]);
            }
            Err(err) => {
                let message = format!("{err:#}");
                assert!(
                    message.contains("profile `p`"),
                    "error does not name the profile: {message}"
                );
                assert!(
                    !self.must_apply(&table),
                    "refused a table of valid values: {message}\n{text}"
                );
            }
        }
        Ok(())
    }

    /// Whether every value is valid on its own, so the table must apply.
    fn must_apply(&self, table: &Table) -> bool {
        let valid =
            |value: &Option<String>, parse: fn(&str) -> bool| value.as_deref().is_none_or(parse);
        let good_trace = self.trace_path("good.down");
        let known_base = table
            .base
            .as_deref()
            .is_none_or(|base| linkem::profile(base).is_ok());
        known_base
            && valid(&table.rtt, |t| parse_time(t).is_ok())
            && valid(&table.down, |t| parse_rate(t).is_ok())
            && valid(&table.up, |t| parse_rate(t).is_ok())
            && valid(&table.loss, |t| parse_percent(t).is_ok())
            && valid(&table.jitter, |t| parse_jitter(t).is_ok())
            && valid(&table.queue, |t| parse_queue(t).is_ok())
            && table.loss_model.is_none()
            && [&table.trace_down, &table.trace_up]
                .iter()
                .all(|path| path.as_ref().is_none_or(|path| *path == good_trace))
    }

    /// Each value the table gives replaced its base's.
    fn check_applied(&self, table: &Table, settings: &LinkSettings) {
        let base = table
            .base
            .as_deref()
            .and_then(|name| linkem::profile(name).ok()?.settings)
            .unwrap_or_default();
        let rtt = table
            .rtt
            .as_deref()
            .map(|t| parse_time(t).expect("applied, so valid"));
        assert_eq!(settings.rtt, rtt.unwrap_or(base.rtt), "rtt");
        let rate = |given: &Option<String>, trace: &Option<String>, spec: &RateSpec| match (
            given, trace,
        ) {
            (_, Some(_)) => {
                let bits = spec.mean_bits_per_sec().expect("a trace has a rate");
                assert!((bits - GOOD_TRACE_BITS).abs() < 1e-6, "trace rate {bits}");
            }
            (Some(text), None) => {
                let bits_per_sec = parse_rate(text).expect("applied, so valid");
                assert_eq!(*spec, RateSpec::Fixed { bits_per_sec }, "rate {text}");
            }
            (None, None) => {}
        };
        rate(&table.down, &table.trace_down, &settings.down);
        rate(&table.up, &table.trace_up, &settings.up);
        if let (Some(loss), None) = (&table.loss, &table.loss_model) {
            let p = parse_percent(loss).expect("applied, so valid");
            assert_eq!(settings.loss, LossModel::Bernoulli { p }, "loss");
        }
        if let Some(direction) = &table.loss_direction {
            assert_eq!(
                Ok(settings.loss_direction),
                direction.parse::<LossDirection>().map_err(drop)
            );
        }
        if let Some(jitter) = &table.jitter {
            assert_eq!(settings.jitter, parse_jitter(jitter).ok(), "jitter");
        }
        if let Some(queue) = &table.queue {
            assert_eq!(settings.queue, parse_queue(queue).ok(), "queue");
        }
    }
}
