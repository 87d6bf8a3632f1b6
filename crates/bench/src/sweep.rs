//! `[sweep]`: one server tunable as a dimension of the matrix. Each swept
//! workload runs once per value, the built-in server started with that
//! value, so a suite can ask "what does BBR, or a larger initial window,
//! change for each protocol?" within one run. Documented in
//! `docs/suite.md`.

use std::fmt;
use std::str::FromStr;

use anyhow::anyhow;
use h3lab_results::bench::{InitialWindows, SweptSetting};
use h3lab_results::QuicCongestion;
use h3lab_server::cli::ServeArgs;
use serde::{Deserialize, Deserializer};

/// A tunable of the built-in server and the kind of value it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tunable {
    /// The congestion controller of both transports: `--quic-cc` and `--tcp-cc`.
    Cc,
    QuicCc,
    TcpCc,
    QuicInitialWindow,
    /// Both transports' initial congestion window, in packets: TCP's
    /// through the routes of the path (`initcwnd`, `initrwnd`), QUIC's
    /// through `--quic-initial-window` ([`quic_initial_window`]).
    InitialWindow,
    QuicAckEvery,
    QuicMaxAckDelay,
    QuicStreamOrder,
    Gso,
    UdpBuffer,
    TcpSendBuffer,
    TcpRecvBuffer,
    TcpNotsentLowat,
    MaxStreams,
    /// The server runtime's worker threads: `--threads`.
    Threads,
    TlsRecords,
    H2StreamWindow,
    H2ConnectionWindow,
    H2SendBuffer,
    /// Which server answers: `builtin` (h3lab serve) or a name from
    /// `[target.servers]`; checked against the suite.
    Server,
}

/// What values a tunable takes.
enum Values {
    OneOf(&'static [&'static str]),
    /// A size: `14480`, `64KB`, `8MiB`; passed on in bytes.
    Bytes,
    /// A positive whole number.
    Count,
    /// A number of packets: `32` or `"32 packets"`.
    Packets,
    /// A duration: `5ms`, `1s`.
    Duration,
    /// A server's name: `builtin` or a key of `[target.servers]`.
    ServerName,
}

/// The `server` sweep's value for the built-in server.
pub(crate) const BUILTIN_SERVER: &str = "builtin";

const TUNABLES: [(Tunable, &str, Values); 20] = [
    (Tunable::Cc, "cc", Values::OneOf(&["cubic", "bbr", "reno"])),
    (
        Tunable::QuicCc,
        "quic_cc",
        Values::OneOf(&["auto", "cubic", "newreno", "bbr"]),
    ),
    (
        Tunable::TcpCc,
        "tcp_cc",
        Values::OneOf(&["cubic", "bbr", "reno"]),
    ),
    (
        Tunable::QuicInitialWindow,
        "quic_initial_window",
        Values::Bytes,
    ),
    (Tunable::InitialWindow, "initial_window", Values::Packets),
    (Tunable::QuicAckEvery, "quic_ack_every", Values::Count),
    (
        Tunable::QuicMaxAckDelay,
        "quic_max_ack_delay",
        Values::Duration,
    ),
    (
        Tunable::QuicStreamOrder,
        "quic_stream_order",
        Values::OneOf(&["priority", "fair", "in-order"]),
    ),
    (Tunable::Gso, "gso", Values::OneOf(&["on", "off"])),
    (Tunable::UdpBuffer, "udp_buffer", Values::Bytes),
    (Tunable::TcpSendBuffer, "tcp_send_buffer", Values::Bytes),
    (Tunable::TcpRecvBuffer, "tcp_recv_buffer", Values::Bytes),
    (Tunable::TcpNotsentLowat, "tcp_notsent_lowat", Values::Bytes),
    (Tunable::MaxStreams, "max_streams", Values::Count),
    (Tunable::Threads, "threads", Values::Count),
    (
        Tunable::TlsRecords,
        "tls_records",
        Values::OneOf(&["dynamic", "max"]),
    ),
    (Tunable::H2StreamWindow, "h2_stream_window", Values::Bytes),
    (
        Tunable::H2ConnectionWindow,
        "h2_connection_window",
        Values::Bytes,
    ),
    (Tunable::H2SendBuffer, "h2_send_buffer", Values::Bytes),
    (Tunable::Server, "server", Values::ServerName),
];

impl Tunable {
    fn entry(self) -> &'static (Tunable, &'static str, Values) {
        TUNABLES
            .iter()
            .find(|(tunable, _, _)| *tunable == self)
            .expect("every tunable is in the table")
    }

    pub(crate) fn name(self) -> &'static str {
        self.entry().1
    }

    fn parse(name: &str) -> Result<Tunable, String> {
        TUNABLES
            .iter()
            .find(|(_, known, _)| *known == name)
            .map(|(tunable, _, _)| *tunable)
            .ok_or_else(|| {
                let names: Vec<&str> = TUNABLES.iter().map(|(_, name, _)| *name).collect();
                format!(
                    "[sweep] tunable `{name}` is not one of {}",
                    names.join(", ")
                )
            })
    }

    /// The value as the server's flag takes it, or why it cannot be one.
    fn normalize(self, value: &str) -> Result<String, String> {
        let name = self.name();
        match &self.entry().2 {
            Values::OneOf(choices) if choices.contains(&value) => Ok(value.to_string()),
            Values::OneOf(choices) => Err(format!(
                "[sweep] `{value}` is not a value of `{name}`; use one of {}",
                choices.join(", ")
            )),
            Values::Bytes => value
                .parse::<bytesize::ByteSize>()
                .ok()
                .filter(|size| size.as_u64() > 0)
                .map(|size| size.as_u64().to_string())
                .ok_or_else(|| {
                    format!("[sweep] `{value}` is not a size for `{name}`; write e.g. `14480`, `64KB` or `8MiB`")
                }),
            Values::Count => value
                .parse::<u32>()
                .ok()
                .filter(|count| *count > 0)
                .map(|count| count.to_string())
                .ok_or_else(|| {
                    format!("[sweep] `{value}` is not a positive whole number for `{name}`")
                }),
            Values::Packets => parse_packets(value).map(|packets| packets.to_string()).ok_or_else(|| {
                format!("[sweep] `{value}` is not a number of packets for `{name}`; write e.g. `10` or `\"32 packets\"` (1 to 1024)")
            }),
            Values::Duration => humantime::parse_duration(value)
                .ok()
                .filter(|duration| !duration.is_zero())
                .map(|duration| humantime::format_duration(duration).to_string())
                .ok_or_else(|| format!("[sweep] `{value}` is not a duration for `{name}`; write e.g. `5ms`")),
            Values::ServerName if !value.is_empty() && !value.contains(char::is_whitespace) => {
                Ok(value.to_string())
            }
            Values::ServerName => Err(format!(
                "[sweep] `{value}` is not a server name; use `{BUILTIN_SERVER}` or a key of [target.servers]"
            )),
        }
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
    pub(crate) tunable: Tunable,
    pub(crate) value: String,
}

impl Setting {
    /// The setting as results record it.
    pub(crate) fn recorded(&self) -> SweptSetting {
        SweptSetting {
            tunable: self.tunable.name().to_string(),
            value: self.value.clone(),
        }
    }

    /// The TCP initial window it asks the path for, in segments.
    pub(crate) fn tcp_initial_window(&self) -> Option<u32> {
        match self.tunable {
            Tunable::InitialWindow => self.value.parse().ok(),
            _ => None,
        }
    }

    /// Sets it on the built-in server's flags (nothing for `server`,
    /// which picks the server instead). The value was checked when the
    /// suite was read; a field's own check (such as `--threads`' range)
    /// still names the value.
    pub(crate) fn apply(&self, serve: &mut ServeArgs) -> anyhow::Result<()> {
        let value = self.value.as_str();
        match self.tunable {
            Tunable::Cc => {
                serve.tcp_cc = Some(word(value)?);
                serve.quic_cc = match value {
                    "reno" => QuicCongestion::NewReno,
                    _ => parsed(value)?,
                };
            }
            Tunable::QuicCc => serve.quic_cc = parsed(value)?,
            Tunable::TcpCc => serve.tcp_cc = Some(word(value)?),
            Tunable::QuicInitialWindow => serve.quic_initial_window = Some(parsed(value)?),
            Tunable::InitialWindow => {
                serve.quic_initial_window = Some(quic_initial_window(parsed(value)?));
            }
            Tunable::QuicAckEvery => serve.quic_ack_every = parsed(value)?,
            Tunable::QuicMaxAckDelay => {
                serve.quic_max_ack_delay = Some(humantime::parse_duration(value)?);
            }
            Tunable::QuicStreamOrder => serve.quic_stream_order = word(value)?,
            Tunable::Gso => serve.gso = word(value)?,
            Tunable::UdpBuffer => serve.udp_buffer = parsed(value)?,
            Tunable::TcpSendBuffer => serve.tcp_send_buffer = Some(parsed(value)?),
            Tunable::TcpRecvBuffer => serve.tcp_recv_buffer = Some(parsed(value)?),
            Tunable::TcpNotsentLowat => serve.tcp_notsent_lowat = Some(parsed(value)?),
            Tunable::MaxStreams => serve.max_streams = parsed(value)?,
            Tunable::Threads => serve.threads = Some(parsed(value)?),
            Tunable::TlsRecords => serve.tls_records = word(value)?,
            Tunable::H2StreamWindow => serve.h2_stream_window = parsed(value)?,
            Tunable::H2ConnectionWindow => serve.h2_connection_window = parsed(value)?,
            Tunable::H2SendBuffer => serve.h2_send_buffer = parsed(value)?,
            Tunable::Server => {}
        }
        Ok(())
    }
}

/// A number or a vocabulary word, as its type reads it.
fn parsed<T: FromStr>(value: &str) -> anyhow::Result<T>
where
    T::Err: fmt::Display,
{
    value
        .parse()
        .map_err(|err| anyhow!("`{value}` is not a server setting's value: {err}"))
}

/// One of the server's own words for a flag (`in-order`, `off`).
fn word<T: clap::ValueEnum>(value: &str) -> anyhow::Result<T> {
    T::from_str(value, false).map_err(|err| anyhow!("`{value}`: {err}"))
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
    pub(crate) tunable: Tunable,
    pub(crate) values: Vec<String>,
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
                sweep
                    .values
                    .iter()
                    .map(|value| {
                        Some(Setting {
                            tunable: sweep.tunable,
                            value: value.clone(),
                        })
                    })
                    .collect()
            }
            _ => vec![None],
        }
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
        let mut values: Vec<String> = Vec::new();
        for value in table.values {
            let text = match value {
                SweepValue::Text(text) => text,
                SweepValue::Number(number) => number.to_string(),
            };
            let value = tunable.normalize(&text).map_err(serde::de::Error::custom)?;
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

    /// The server flags a setting changes from the defaults.
    fn server_args(setting: &Setting) -> Vec<String> {
        let mut serve = ServeArgs::new();
        setting.apply(&mut serve).unwrap();
        let args = serve.to_args();
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
        assert_eq!(sweep.values, ["14480", "65536"]);
        let setting = Setting {
            tunable: sweep.tunable,
            value: sweep.values[1].clone(),
        };
        assert_eq!(server_args(&setting), ["--quic-initial-window=65536"]);
        assert_eq!(
            workload_label("w", Some(&setting)),
            "w [quic_initial_window=65536]"
        );
    }

    #[test]
    fn cc_sets_both_transports_with_quic_naming_reno_newreno() {
        let reno = Setting {
            tunable: Tunable::Cc,
            value: "reno".into(),
        };
        assert_eq!(server_args(&reno), ["--quic-cc=newreno", "--tcp-cc=reno"]);
    }

    #[test]
    fn initial_window_sets_both_transports_in_packets() {
        let sweep = parse("tunable = \"initial_window\"\nvalues = [\"10 packets\", 32]").unwrap();
        assert_eq!(sweep.values, ["10", "32"]);
        let wide = Setting {
            tunable: sweep.tunable,
            value: sweep.values[1].clone(),
        };
        assert_eq!(server_args(&wide), ["--quic-initial-window=47104"]);
        assert_eq!(wide.tcp_initial_window(), Some(32));
        assert_eq!(workload_label("w", Some(&wide)), "w [initial_window=32]");
        let gso = Setting {
            tunable: Tunable::Gso,
            value: "on".into(),
        };
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
        let short = Setting {
            tunable: sweep.tunable,
            value: sweep.values[0].clone(),
        };
        assert_eq!(server_args(&short), ["--quic-max-ack-delay=5ms"]);
        assert!(
            parse("tunable = \"quic_max_ack_delay\"\nvalues = [\"soon\", \"5ms\"]")
                .unwrap_err()
                .contains("not a duration")
        );
        let every = parse("tunable = \"quic_ack_every\"\nvalues = [2, 10]").unwrap();
        let rfc = Setting {
            tunable: every.tunable,
            value: every.values[0].clone(),
        };
        assert_eq!(server_args(&rfc), ["--quic-ack-every=2"]);
    }

    #[test]
    fn threads_sets_the_servers_worker_count() {
        let sweep = parse("tunable = \"threads\"\nvalues = [1, 2]").unwrap();
        let one = Setting {
            tunable: sweep.tunable,
            value: sweep.values[0].clone(),
        };
        assert_eq!(server_args(&one), ["--threads=1"]);
        let err = parse("tunable = \"threads\"\nvalues = [0, 2]").unwrap_err();
        assert!(err.contains("positive whole number"), "{err}");
    }

    #[test]
    fn every_tunable_sets_a_flag_of_the_server() {
        let samples = |values: &Values| -> Vec<&'static str> {
            match values {
                Values::OneOf(choices) => choices.to_vec(),
                Values::Bytes | Values::Count | Values::Packets => vec!["3"],
                Values::Duration => vec!["5ms"],
                Values::ServerName => vec![],
            }
        };
        for (tunable, name, values) in &TUNABLES {
            for value in samples(values) {
                let setting = Setting {
                    tunable: *tunable,
                    value: tunable.normalize(value).unwrap(),
                };
                let mut serve = ServeArgs::new();
                setting.apply(&mut serve).unwrap();
                let changed = serve != ServeArgs::new();
                let is_default = matches!(
                    (*name, value),
                    ("quic_cc", "auto")
                        | ("gso", "on")
                        | ("quic_stream_order", "priority")
                        | ("tls_records", "dynamic")
                );
                assert!(changed != is_default, "{name} = {value}: changed {changed}");
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
