//! `[sweep]`: one server tunable as a dimension of the matrix. Each swept
//! workload runs once per value, the built-in server started with that
//! value, so a suite can ask "what does BBR, or a larger initial window,
//! change for each protocol?" within one run. Documented in
//! `docs/suite.md`.

use h3lab_results::bench::{InitialWindows, SweptSetting};
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
    /// through `--quic-initial-window` ([`quic_initial_window_args`]).
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

    /// Whether setting it sets the QUIC congestion controller, which the
    /// `[target] quic_cc` flag must then leave alone.
    pub(crate) fn sets_quic_cc(self) -> bool {
        matches!(self, Tunable::Cc | Tunable::QuicCc)
    }
}

/// The built-in server's flag that starts QUIC at `packets` full-sized
/// datagrams.
pub(crate) fn quic_initial_window_args(packets: u32) -> Vec<String> {
    let bytes = u64::from(packets) * InitialWindows::QUIC_PACKET_BYTES;
    vec!["--quic-initial-window".into(), bytes.to_string()]
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

    /// The `h3lab serve` arguments that apply it (none for `server`, which
    /// picks the server instead).
    pub(crate) fn server_args(&self) -> Vec<String> {
        let value = self.value.clone();
        let flag = |name: &str| format!("--{}", name.replace('_', "-"));
        match self.tunable {
            Tunable::Cc => {
                let quic = match value.as_str() {
                    "reno" => "newreno".to_string(),
                    _ => value.clone(),
                };
                vec!["--quic-cc".into(), quic, "--tcp-cc".into(), value]
            }
            Tunable::Server => Vec::new(),
            Tunable::InitialWindow => {
                quic_initial_window_args(value.parse().expect("normalized to a count"))
            }
            tunable => vec![flag(tunable.name()), value],
        }
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

    fn parse(text: &str) -> Result<Sweep, String> {
        toml::from_str::<Sweep>(text).map_err(|err| err.to_string())
    }

    #[test]
    fn values_are_checked_and_written_as_the_flag_takes_them() {
        let sweep =
            parse("tunable = \"quic_initial_window\"\nvalues = [14480, \"64KiB\"]").unwrap();
        assert_eq!(sweep.values, ["14480", "65536"]);
        let setting = Setting {
            tunable: sweep.tunable,
            value: sweep.values[1].clone(),
        };
        assert_eq!(setting.server_args(), ["--quic-initial-window", "65536"]);
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
        assert_eq!(
            reno.server_args(),
            ["--quic-cc", "newreno", "--tcp-cc", "reno"]
        );
        assert!(Tunable::Cc.sets_quic_cc() && !Tunable::Gso.sets_quic_cc());
    }

    #[test]
    fn initial_window_sets_both_transports_in_packets() {
        let sweep = parse("tunable = \"initial_window\"\nvalues = [\"10 packets\", 32]").unwrap();
        assert_eq!(sweep.values, ["10", "32"]);
        let wide = Setting {
            tunable: sweep.tunable,
            value: sweep.values[1].clone(),
        };
        assert_eq!(wide.server_args(), ["--quic-initial-window", "47104"]);
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
    fn ack_settings_pass_to_the_server_as_written() {
        let sweep =
            parse("tunable = \"quic_max_ack_delay\"\nvalues = [\"5ms\", \"25ms\"]").unwrap();
        let short = Setting {
            tunable: sweep.tunable,
            value: sweep.values[0].clone(),
        };
        assert_eq!(short.server_args(), ["--quic-max-ack-delay", "5ms"]);
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
        assert_eq!(rfc.server_args(), ["--quic-ack-every", "2"]);
    }

    #[test]
    fn threads_sets_the_servers_worker_count() {
        let sweep = parse("tunable = \"threads\"\nvalues = [1, 2]").unwrap();
        let one = Setting {
            tunable: sweep.tunable,
            value: sweep.values[0].clone(),
        };
        assert_eq!(one.server_args(), ["--threads", "1"]);
        let err = parse("tunable = \"threads\"\nvalues = [0, 2]").unwrap_err();
        assert!(err.contains("positive whole number"), "{err}");
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
