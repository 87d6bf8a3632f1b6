//! `[sweep]`: one server tunable as a dimension of the matrix. Each swept
//! workload runs once per value, the built-in server started with that
//! value, so a suite can ask "what does BBR, or a larger initial window,
//! change for each protocol?" within one run. Documented in
//! `docs/suite.md`.

use std::ffi::OsString;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use h3lab_results::bench::{InitialWindows, SweptSetting};
use h3lab_results::flags;
use h3lab_server::cli::ServeArgs;
use serde::{Deserialize, Deserializer};

/// A tunable of the built-in server: its name in `[sweep]`, how its
/// values are written, and what they set. Adding one is an entry in
/// [`TUNABLES`] (and the server's flag).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Tunable {
    name: &'static str,
    kind: Kind,
    sets: Sets,
}

/// How a `[sweep]` value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A size: `14480`, `64KB`, `8MiB`; passed on in bytes.
    Bytes,
    /// A positive whole number.
    Count,
    /// A duration above zero: `5ms`.
    Duration,
    /// One of the words of the (first) server flag it sets: `in-order`.
    Word,
    /// A number of packets: `32` or `32 packets`, 1 to 1024.
    Packets,
    /// A name the suite checks against one of its tables, or `none`.
    Name {
        what: &'static str,
        none: &'static str,
        table: &'static str,
    },
}

/// What a value sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sets {
    /// The `h3lab serve` flag of this `ServeArgs` field, to the value.
    Flag(&'static str),
    /// Both transports' controllers: `--tcp-cc`, and `--quic-cc`, where
    /// reno is named newreno.
    Controllers,
    /// Both transports' initial windows, in packets: TCP's through the
    /// routes of the path (`initcwnd`, `initrwnd`), QUIC's through
    /// `--quic-initial-window` ([`quic_initial_window`]).
    InitialWindows,
    /// Which server answers: `builtin` (h3lab serve) or a name from
    /// `[target.servers]`.
    Server,
    /// Which edge stands in front of the target: `direct` (none) or a name
    /// from `[target.edges]`.
    Edge,
}

/// The `server` sweep's value for the built-in server.
pub(crate) const BUILTIN_SERVER: &str = "builtin";

/// The `edge` sweep's value for no edge: the client reaches the target.
pub(crate) const DIRECT: &str = "direct";

/// A tunable that is one flag of `h3lab serve`, named as its field.
const fn flag(name: &'static str, kind: Kind) -> Tunable {
    Tunable {
        name,
        kind,
        sets: Sets::Flag(name),
    }
}

/// Every tunable.
const TUNABLES: &[Tunable] = &[
    Tunable {
        name: "cc",
        kind: Kind::Word,
        sets: Sets::Controllers,
    },
    flag("quic_cc", Kind::Word),
    flag("tcp_cc", Kind::Word),
    flag("quic_initial_window", Kind::Bytes),
    Tunable {
        name: "initial_window",
        kind: Kind::Packets,
        sets: Sets::InitialWindows,
    },
    flag("quic_ack_every", Kind::Count),
    flag("quic_max_ack_delay", Kind::Duration),
    flag("quic_stream_order", Kind::Word),
    flag("gso", Kind::Word),
    flag("udp_buffer", Kind::Bytes),
    flag("tcp_send_buffer", Kind::Bytes),
    flag("tcp_recv_buffer", Kind::Bytes),
    flag("tcp_notsent_lowat", Kind::Bytes),
    flag("max_streams", Kind::Count),
    flag("threads", Kind::Count),
    flag("tls_records", Kind::Word),
    flag("h2_stream_window", Kind::Bytes),
    flag("h2_connection_window", Kind::Bytes),
    flag("h2_send_buffer", Kind::Bytes),
    flag("h2_stream_order", Kind::Word),
    Tunable {
        name: "server",
        kind: Kind::Name {
            what: "a server",
            none: BUILTIN_SERVER,
            table: "target.servers",
        },
        sets: Sets::Server,
    },
    Tunable {
        name: "edge",
        kind: Kind::Name {
            what: "an edge",
            none: DIRECT,
            table: "target.edges",
        },
        sets: Sets::Edge,
    },
];

impl Tunable {
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// What its values set.
    pub(crate) fn sets(&self) -> Sets {
        self.sets
    }

    fn parse(name: &str) -> Result<&'static Tunable, String> {
        TUNABLES.iter().find(|t| t.name == name).ok_or_else(|| {
            let names: Vec<&str> = TUNABLES.iter().map(|t| t.name).collect();
            format!(
                "[sweep] tunable `{name}` is not one of {}",
                names.join(", ")
            )
        })
    }

    /// The `ServeArgs` fields its values set.
    fn server_fields(&'static self) -> &'static [&'static str] {
        match &self.sets {
            Sets::Flag(field) => std::slice::from_ref(field),
            Sets::Controllers => &["tcp_cc", "quic_cc"],
            Sets::InitialWindows => &["quic_initial_window"],
            Sets::Server | Sets::Edge => &[],
        }
    }

    /// Whether it sets QUIC's initial window.
    pub(crate) fn sets_initial_window(&'static self) -> bool {
        self.server_fields().contains(&"quic_initial_window")
    }

    /// The setting `value` stands for, checked as the server checks its
    /// flags, or why it cannot be one.
    fn setting(&'static self, value: &str) -> Result<Setting, String> {
        let value = Value {
            tunable: self,
            text: value,
        };
        let setting = Setting {
            tunable: self,
            value: match self.kind {
                Kind::Bytes => value.bytes()?.to_string(),
                Kind::Count => value.count()?.to_string(),
                Kind::Duration => humantime::format_duration(value.duration()?).to_string(),
                Kind::Word => value.word(&self.words())?,
                Kind::Packets => value.packets()?.to_string(),
                Kind::Name { what, none, table } => value.table_key(what, none, table)?,
            },
        };
        setting.apply(&mut ServeArgs::new()).map_err(|err| {
            format!(
                "[sweep] `{}` is not a value of `{}`: {err:#}",
                value.text, self.name
            )
        })?;
        Ok(setting)
    }

    /// The words of the first server flag it sets.
    fn words(&'static self) -> Vec<String> {
        let command = ServeArgs::augment_args(clap::Command::new("serve"));
        let first = self.server_fields().first();
        let arg = (command.get_arguments()).find(|arg| Some(&arg.get_id().as_str()) == first);
        (arg.into_iter())
            .flat_map(|arg| arg.get_possible_values())
            .map(|value| value.get_name().to_string())
            .collect()
    }
}

/// A `[sweep]` value as written, read as its tunable's kind; each
/// reader's error names the value, the tunable and the accepted form.
struct Value<'a> {
    tunable: &'a Tunable,
    text: &'a str,
}

impl Value<'_> {
    /// One of `words` (`bbr`, `in-order`).
    fn word(&self, words: &[String]) -> Result<String, String> {
        match words.iter().any(|word| word == self.text) {
            true => Ok(self.text.to_string()),
            false => Err(format!(
                "[sweep] `{}` is not a value of `{}`; use one of {}",
                self.text,
                self.tunable.name,
                words.join(", ")
            )),
        }
    }

    /// A size above zero: `14480`, `64KB`, `8MiB`, in bytes.
    fn bytes(&self) -> Result<u64, String> {
        let size = self.text.parse::<bytesize::ByteSize>().ok();
        let bytes = size.map(|size| size.as_u64()).filter(|bytes| *bytes > 0);
        bytes.ok_or_else(|| {
            format!(
                "[sweep] `{}` is not a size for `{}`; write e.g. `14480`, `64KB` or `8MiB`",
                self.text, self.tunable.name
            )
        })
    }

    /// A positive whole number.
    fn count(&self) -> Result<u64, String> {
        let count = self.text.parse().ok().filter(|count| *count > 0);
        count.ok_or_else(|| {
            format!(
                "[sweep] `{}` is not a positive whole number for `{}`",
                self.text, self.tunable.name
            )
        })
    }

    /// A number of packets: `32` or `32 packets`.
    fn packets(&self) -> Result<u32, String> {
        parse_packets(self.text).ok_or_else(|| {
            format!(
                "[sweep] `{}` is not a number of packets for `{}`; write e.g. `10` or \
                 `\"32 packets\"` (1 to 1024)",
                self.text, self.tunable.name
            )
        })
    }

    /// A duration above zero: `5ms`, `1s`.
    fn duration(&self) -> Result<Duration, String> {
        let duration = humantime::parse_duration(self.text).ok();
        duration.filter(|d| !d.is_zero()).ok_or_else(|| {
            format!(
                "[sweep] `{}` is not a duration for `{}`; write e.g. `5ms`",
                self.text, self.tunable.name
            )
        })
    }

    /// A name of `table`'s, or `none`: one word, which the suite checks
    /// against the table (`builtin` or a key of `[target.servers]`,
    /// `direct` or a key of `[target.edges]`).
    fn table_key(&self, what: &str, none: &str, table: &str) -> Result<String, String> {
        if self.text.is_empty() || self.text.contains(char::is_whitespace) {
            return Err(format!(
                "[sweep] `{}` is not {what} name; use `{none}` or a key of [{table}]",
                self.text
            ));
        }
        Ok(self.text.to_string())
    }
}

/// The built-in server's QUIC initial window, in bytes, of `packets`
/// full-sized datagrams.
pub(crate) fn quic_initial_window(packets: u32) -> u64 {
    u64::from(packets) * InitialWindows::QUIC_PACKET_BYTES
}

/// `32` or `32 packets`, from 1 to 1024.
pub(crate) fn parse_packets(text: &str) -> Option<u32> {
    let number = text.trim().strip_suffix("packets").unwrap_or(text).trim();
    number.parse().ok().filter(|n| (1..=1024).contains(n))
}

/// One value of the swept tunable: what a cell's server runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Setting {
    tunable: &'static Tunable,
    /// As results record it and suites name rows: sizes in bytes, words
    /// as written, durations as humantime writes them.
    value: String,
}

impl Setting {
    /// The value as results record it and suites name rows.
    pub(crate) fn value_text(&self) -> String {
        self.value.clone()
    }

    /// The setting as results record it.
    pub(crate) fn recorded(&self) -> SweptSetting {
        SweptSetting {
            tunable: self.tunable.name.to_string(),
            value: self.value_text(),
        }
    }

    /// The TCP initial window it asks the path for, in segments.
    pub(crate) fn tcp_initial_window(&self) -> Option<u32> {
        match self.tunable.sets {
            Sets::InitialWindows => self.value.parse().ok(),
            _ => None,
        }
    }

    /// The server's name, for a `server` sweep's value.
    pub(crate) fn server(&self) -> Option<&str> {
        (self.tunable.sets == Sets::Server).then_some(self.value.as_str())
    }

    /// The edge's name, for an `edge` sweep's value other than `direct`.
    pub(crate) fn edge(&self) -> Option<&str> {
        (self.tunable.sets == Sets::Edge && self.value != DIRECT).then_some(self.value.as_str())
    }

    /// The `h3lab serve` flags it sets, each `--flag=value` in clap's
    /// spelling.
    fn server_flags(&self) -> Vec<OsString> {
        let value = match self.tunable.sets {
            Sets::InitialWindows => self.value.parse().map(quic_initial_window).ok(),
            _ => None,
        };
        let text = |field: &str| match (field, self.value.as_str()) {
            ("quic_cc", "reno") => "newreno".to_string(),
            _ => value.map_or_else(|| self.value.clone(), |bytes| bytes.to_string()),
        };
        (self.tunable.server_fields().iter())
            .map(|field| format!("{}={}", flags::flag::<ServeArgs>(field), text(field)).into())
            .collect()
    }

    /// Sets it on the built-in server's flags, through the server's own
    /// parser (nothing for `server`, which picks the server instead, nor
    /// for `edge`, which puts one in front of it).
    pub(crate) fn apply(&self, serve: &mut ServeArgs) -> anyhow::Result<()> {
        let flags = self.server_flags();
        if !flags.is_empty() {
            *serve = flags::overridden(serve, flags).context("h3lab serve refuses it")?;
        }
        Ok(())
    }
}

/// A workload's name with the setting it runs with, if any
/// (`rps-1KB [cc=bbr]`): each setting is a row of its own in results and
/// reports.
pub(crate) fn workload_label(workload: &str, setting: Option<&Setting>) -> String {
    match setting {
        Some(setting) => setting.recorded().row_label(workload),
        None => workload.to_string(),
    }
}

/// A parsed `[sweep]` table.
#[derive(Debug, Clone)]
pub(crate) struct Sweep {
    pub(crate) tunable: &'static Tunable,
    pub(crate) values: Vec<Setting>,
    /// Workloads swept; empty means all of them.
    pub(crate) workloads: Vec<String>,
}

impl Sweep {
    /// The settings a workload runs with: one per value when it is swept,
    /// else only the server's defaults (`None`).
    pub(crate) fn settings_for(sweep: Option<&Sweep>, workload: &str) -> Vec<Option<Setting>> {
        match sweep {
            Some(sweep)
                if sweep.workloads.is_empty() || sweep.workloads.iter().any(|w| w == workload) =>
            {
                sweep.values.iter().cloned().map(Some).collect()
            }
            _ => vec![None],
        }
    }

    /// The values as results record them (`65536`, `bbr`).
    pub(crate) fn value_texts(&self) -> Vec<String> {
        self.values.iter().map(Setting::value_text).collect()
    }

    /// The value a row names (as results record it), if the sweep runs it.
    pub(crate) fn value_named(&self, row: &str) -> Option<&Setting> {
        self.values.iter().find(|value| value.value_text() == row)
    }
}

/// `[sweep]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepTable {
    tunable: String,
    values: Vec<SweepValue>,
    #[serde(default)]
    workloads: Vec<String>,
}

/// A value written as a string or a whole number.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum SweepValue {
    Text(String),
    Number(u64),
}

impl<'de> Deserialize<'de> for Sweep {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let table = SweepTable::deserialize(d)?;
        let tunable = Tunable::parse(&table.tunable).map_err(serde::de::Error::custom)?;
        let mut values: Vec<Setting> = Vec::new();
        for value in table.values {
            let text = match value {
                SweepValue::Text(text) => text,
                SweepValue::Number(number) => number.to_string(),
            };
            let value = tunable.setting(&text).map_err(serde::de::Error::custom)?;
            if values.contains(&value) {
                return Err(serde::de::Error::custom(format!(
                    "[sweep] lists `{text}` twice; give each value once"
                )));
            }
            values.push(value);
        }
        if values.len() < 2 {
            return Err(serde::de::Error::custom(
                "[sweep] needs at least two `values` to compare",
            ));
        }
        Ok(Sweep {
            tunable,
            values,
            workloads: table.workloads,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use h3lab_results::flags::CommandFlags;

    fn parse(text: &str) -> Result<Sweep, String> {
        toml::from_str::<Sweep>(text).map_err(|err| err.to_string())
    }

    fn tunable(name: &str) -> &'static Tunable {
        Tunable::parse(name).unwrap()
    }

    /// The server flags a setting changes from the defaults.
    fn server_args(setting: &Setting) -> Vec<String> {
        let mut serve = ServeArgs::new();
        setting.apply(&mut serve).unwrap();
        let args = serve.to_args().unwrap();
        let flags = &args[..args.len() - 1];
        flags
            .iter()
            .map(|a| a.to_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn values_are_checked_and_set_on_the_servers_flags() {
        let sweep =
            parse("tunable = \"quic_initial_window\"\nvalues = [14480, \"64KiB\"]").unwrap();
        assert_eq!(sweep.value_texts(), ["14480", "65536"]);
        let setting = &sweep.values[1];
        assert_eq!(server_args(setting), ["--quic-initial-window=65536"]);
        assert_eq!(
            workload_label("w", Some(setting)),
            "w [quic_initial_window=65536]"
        );
    }

    #[test]
    fn a_setting_changes_its_flags_and_keeps_the_others() {
        let mut serve = ServeArgs {
            sans: vec!["a.test".into(), "b.test".into()],
            site: Some("/srv/site".into()),
            quic_cc: h3lab_results::QuicCongestion::Bbr,
            udp_buffer: 1,
            ..ServeArgs::new()
        };
        let before = serve.clone();
        let setting = tunable("udp_buffer").setting("2MB").unwrap();
        setting.apply(&mut serve).unwrap();
        assert_eq!(serve.udp_buffer, 2_000_000);
        serve.udp_buffer = 1;
        assert_eq!(serve, before);
    }

    #[test]
    fn cc_sets_both_transports_with_quic_naming_reno_newreno() {
        let reno = tunable("cc").setting("reno").unwrap();
        assert_eq!(server_args(&reno), ["--quic-cc=newreno", "--tcp-cc=reno"]);
    }

    #[test]
    fn initial_window_sets_both_transports_in_packets() {
        let sweep = parse("tunable = \"initial_window\"\nvalues = [\"10 packets\", 32]").unwrap();
        assert_eq!(sweep.value_texts(), ["10", "32"]);
        let wide = &sweep.values[1];
        assert_eq!(server_args(wide), ["--quic-initial-window=47104"]);
        assert_eq!(wide.tcp_initial_window(), Some(32));
        assert_eq!(workload_label("w", Some(wide)), "w [initial_window=32]");
        let gso = tunable("gso").setting("on").unwrap();
        assert_eq!(gso.tcp_initial_window(), None);
        for bad in ["0", "\"many packets\"", "2000"] {
            let err = parse(&format!(
                "tunable = \"initial_window\"\nvalues = [10, {bad}]"
            ))
            .unwrap_err();
            assert!(err.contains("not a number of packets"), "{bad}: {err}");
        }
    }

    #[test]
    fn ack_settings_pass_to_the_server() {
        let sweep =
            parse("tunable = \"quic_max_ack_delay\"\nvalues = [\"5ms\", \"25ms\"]").unwrap();
        assert_eq!(server_args(&sweep.values[0]), ["--quic-max-ack-delay=5ms"]);
        assert!(
            parse("tunable = \"quic_max_ack_delay\"\nvalues = [\"soon\", \"5ms\"]")
                .unwrap_err()
                .contains("not a duration")
        );
        let every = parse("tunable = \"quic_ack_every\"\nvalues = [2, 10]").unwrap();
        assert_eq!(server_args(&every.values[0]), ["--quic-ack-every=2"]);
        let err = parse("tunable = \"quic_ack_every\"\nvalues = [2, 300]").unwrap_err();
        assert!(
            err.contains("`300` is not a value of `quic_ack_every`"),
            "{err}"
        );
        assert!(err.contains("300 is not in 1..=256"), "{err}");
    }

    #[test]
    fn stream_orders_set_each_sides_flag() {
        let sweep =
            parse("tunable = \"h2_stream_order\"\nvalues = [\"priority\", \"fair\"]").unwrap();
        assert_eq!(sweep.value_texts(), ["priority", "fair"]);
        assert_eq!(server_args(&sweep.values[0]), Vec::<String>::new());
        assert_eq!(server_args(&sweep.values[1]), ["--h2-stream-order=fair"]);
        assert_eq!(
            workload_label("w", Some(&sweep.values[1])),
            "w [h2_stream_order=fair]"
        );
        let quic = tunable("quic_stream_order").setting("in-order").unwrap();
        assert_eq!(server_args(&quic), ["--quic-stream-order=in-order"]);
    }

    #[test]
    fn values_the_server_does_not_take_are_refused_with_its_reason() {
        let sweep = parse("tunable = \"threads\"\nvalues = [1, 2]").unwrap();
        assert_eq!(server_args(&sweep.values[0]), ["--threads=1"]);
        let err = parse("tunable = \"threads\"\nvalues = [0, 2]").unwrap_err();
        assert!(err.contains("positive whole number for `threads`"), "{err}");
        let err = parse("tunable = \"threads\"\nvalues = [70000, 2]").unwrap_err();
        assert!(err.contains("`70000` is not a value of `threads`"), "{err}");
        assert!(err.contains("--threads"), "{err}");
        let err = parse("tunable = \"h2_stream_window\"\nvalues = [\"8GiB\", 2]").unwrap_err();
        assert!(
            err.contains("`8GiB` is not a value of `h2_stream_window`"),
            "{err}"
        );
    }

    /// Every tunable but `server` and `edge` sets a flag of the server,
    /// and a word at the server's default leaves it as it was.
    #[test]
    fn every_tunable_sets_a_flag_of_the_server() {
        for tunable in TUNABLES {
            let samples = match tunable.kind {
                Kind::Word => tunable.words(),
                Kind::Duration => vec!["5ms".to_string()],
                Kind::Name { .. } => vec![],
                Kind::Bytes | Kind::Count | Kind::Packets => vec!["3".to_string()],
            };
            assert_eq!(samples.is_empty(), tunable.server_fields().is_empty());
            for value in samples {
                let setting = tunable.setting(&value).unwrap();
                assert_eq!(setting.recorded().tunable, tunable.name);
                assert_eq!(setting.value_text(), value);
                let mut serve = ServeArgs::new();
                setting.apply(&mut serve).unwrap();
                let changed = serve != ServeArgs::new();
                let is_default = matches!(
                    (tunable.name, value.as_str()),
                    ("quic_cc", "auto")
                        | ("gso", "on")
                        | ("quic_stream_order", "priority")
                        | ("h2_stream_order", "priority")
                        | ("tls_records", "dynamic")
                );
                assert!(
                    changed != is_default,
                    "{} = {value}: changed {changed}",
                    tunable.name
                );
            }
        }
    }

    #[test]
    fn bad_tables_name_the_problem() {
        let cases = [
            (
                "tunable = \"colour\"\nvalues = [\"a\", \"b\"]",
                "not one of cc, quic_cc",
            ),
            (
                "tunable = \"cc\"\nvalues = [\"cubic\", \"vegas\"]",
                "use one of cubic, bbr, reno",
            ),
            (
                "tunable = \"udp_buffer\"\nvalues = [\"big\", \"1MB\"]",
                "not a size",
            ),
            (
                "tunable = \"max_streams\"\nvalues = [0, 10]",
                "positive whole number",
            ),
            ("tunable = \"gso\"\nvalues = [\"on\"]", "at least two"),
            ("tunable = \"gso\"\nvalues = [\"on\", \"on\"]", "twice"),
            (
                "tunable = \"gso\"\nvalues = [\"on\", \"off\"]\ncolour = 1",
                "unknown field",
            ),
            (
                "tunable = \"server\"\nvalues = [\"builtin\", \"my caddy\"]",
                "is not a server name",
            ),
        ];
        for (text, wanted) in cases {
            let err = parse(text).expect_err(text);
            assert!(err.contains(wanted), "{text}: {err}");
        }
    }

    #[test]
    fn only_the_named_workloads_are_swept() {
        let sweep =
            parse("tunable = \"gso\"\nvalues = [\"on\", \"off\"]\nworkloads = [\"big\"]").unwrap();
        assert_eq!(Sweep::settings_for(Some(&sweep), "big").len(), 2);
        assert_eq!(Sweep::settings_for(Some(&sweep), "small"), vec![None]);
        assert_eq!(Sweep::settings_for(None, "big"), vec![None]);
    }
}
