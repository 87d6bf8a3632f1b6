//! `[sweep]`: one server tunable as a dimension of the matrix. Each swept
//! workload runs once per value, the built-in server started with that
//! value, so a suite can ask "what does BBR, or a larger initial window,
//! change for each protocol?" within one run. Documented in
//! `docs/suite.md`.

use std::time::Duration;

use h3lab_results::bench::{InitialWindows, SweptSetting};
use h3lab_results::flags::value_word;
use h3lab_results::{QuicCongestion, TcpCongestion};
use h3lab_server::cli::{RecordSizing, ServeArgs, StreamOrder, Switch};
use serde::{Deserialize, Deserializer};

/// A tunable of the built-in server.
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
    H2StreamOrder,
    /// Which server answers: `builtin` (h3lab serve) or a name from
    /// `[target.servers]`; checked against the suite.
    Server,
    /// Which edge stands in front of the target: `direct` (none) or a
    /// name from `[target.edges]`; checked against the suite.
    Edge,
}

/// The `server` sweep's value for the built-in server.
pub(crate) const BUILTIN_SERVER: &str = "builtin";

/// The `edge` sweep's value for no edge: the client reaches the target.
pub(crate) const DIRECT: &str = "direct";

const TUNABLES: [(Tunable, &str); 22] = [
    (Tunable::Cc, "cc"),
    (Tunable::QuicCc, "quic_cc"),
    (Tunable::TcpCc, "tcp_cc"),
    (Tunable::QuicInitialWindow, "quic_initial_window"),
    (Tunable::InitialWindow, "initial_window"),
    (Tunable::QuicAckEvery, "quic_ack_every"),
    (Tunable::QuicMaxAckDelay, "quic_max_ack_delay"),
    (Tunable::QuicStreamOrder, "quic_stream_order"),
    (Tunable::Gso, "gso"),
    (Tunable::UdpBuffer, "udp_buffer"),
    (Tunable::TcpSendBuffer, "tcp_send_buffer"),
    (Tunable::TcpRecvBuffer, "tcp_recv_buffer"),
    (Tunable::TcpNotsentLowat, "tcp_notsent_lowat"),
    (Tunable::MaxStreams, "max_streams"),
    (Tunable::Threads, "threads"),
    (Tunable::TlsRecords, "tls_records"),
    (Tunable::H2StreamWindow, "h2_stream_window"),
    (Tunable::H2ConnectionWindow, "h2_connection_window"),
    (Tunable::H2SendBuffer, "h2_send_buffer"),
    (Tunable::H2StreamOrder, "h2_stream_order"),
    (Tunable::Server, "server"),
    (Tunable::Edge, "edge"),
];

impl Tunable {
    pub(crate) fn name(self) -> &'static str {
        TUNABLES
            .iter()
            .find(|(tunable, _)| *tunable == self)
            .expect("every tunable is in the table")
            .1
    }

    fn parse(name: &str) -> Result<Tunable, String> {
        TUNABLES
            .iter()
            .find(|(_, known)| *known == name)
            .map(|(tunable, _)| *tunable)
            .ok_or_else(|| {
                let names: Vec<&str> = TUNABLES.iter().map(|(_, name)| *name).collect();
                format!(
                    "[sweep] tunable `{name}` is not one of {}",
                    names.join(", ")
                )
            })
    }

    /// The setting `value` stands for, or why it cannot be one.
    fn setting(self, value: &str) -> Result<Setting, String> {
        let value = Value {
            tunable: self,
            text: value,
        };
        Ok(match self {
            Tunable::Cc => Setting::Cc(value.word(TcpCongestion::ALL)?),
            Tunable::QuicCc => Setting::QuicCc(value.word(QuicCongestion::ALL)?),
            Tunable::TcpCc => Setting::TcpCc(value.word(TcpCongestion::ALL)?),
            Tunable::QuicInitialWindow => Setting::QuicInitialWindow(value.bytes()?),
            Tunable::InitialWindow => Setting::InitialWindow(value.packets()?),
            Tunable::QuicAckEvery => Setting::QuicAckEvery(value.count()?),
            Tunable::QuicMaxAckDelay => Setting::QuicMaxAckDelay(value.duration()?),
            Tunable::QuicStreamOrder => Setting::QuicStreamOrder(value.flag_word()?),
            Tunable::Gso => Setting::Gso(value.flag_word()?),
            Tunable::UdpBuffer => Setting::UdpBuffer(value.bytes()?),
            Tunable::TcpSendBuffer => Setting::TcpSendBuffer(value.bytes()?),
            Tunable::TcpRecvBuffer => Setting::TcpRecvBuffer(value.bytes()?),
            Tunable::TcpNotsentLowat => Setting::TcpNotsentLowat(value.bytes()?),
            Tunable::MaxStreams => Setting::MaxStreams(value.count()?),
            Tunable::Threads => Setting::Threads(value.count()?),
            Tunable::TlsRecords => Setting::TlsRecords(value.flag_word()?),
            Tunable::H2StreamWindow => Setting::H2StreamWindow(value.bytes()?),
            Tunable::H2ConnectionWindow => Setting::H2ConnectionWindow(value.bytes()?),
            Tunable::H2SendBuffer => Setting::H2SendBuffer(value.bytes()?),
            Tunable::H2StreamOrder => Setting::H2StreamOrder(value.flag_word()?),
            Tunable::Server => {
                Setting::Server(value.table_key("a server", BUILTIN_SERVER, "target.servers")?)
            }
            Tunable::Edge => Setting::Edge(value.table_key("an edge", DIRECT, "target.edges")?),
        })
    }
}

/// A `[sweep]` value as written, read as the type its tunable takes; each
/// reader's error names the value, the tunable and the accepted form.
struct Value<'a> {
    tunable: Tunable,
    text: &'a str,
}

impl Value<'_> {
    /// One of h3lab's words (`bbr`).
    fn word<T: Copy + std::fmt::Display>(&self, words: &[T]) -> Result<T, String> {
        let names: Vec<String> = words.iter().map(ToString::to_string).collect();
        let found = names.iter().position(|name| name == self.text);
        found
            .map(|at| words[at])
            .ok_or_else(|| self.not_one_of(&names))
    }

    /// One of the server's own words for a flag (`in-order`).
    fn flag_word<T: clap::ValueEnum>(&self) -> Result<T, String> {
        let names: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|word| Some(word.to_possible_value()?.get_name().to_string()))
            .collect();
        T::from_str(self.text, false).map_err(|_| self.not_one_of(&names))
    }

    fn not_one_of(&self, names: &[String]) -> String {
        format!(
            "[sweep] `{}` is not a value of `{}`; use one of {}",
            self.text,
            self.tunable.name(),
            names.join(", ")
        )
    }

    /// A size: `14480`, `64KB`, `8MiB`, in bytes, as large as the
    /// server's field holds.
    fn bytes<T: TryFrom<u64>>(&self) -> Result<T, String> {
        let size = self.text.parse::<bytesize::ByteSize>().ok();
        let bytes = size.map(|size| size.as_u64()).filter(|bytes| *bytes > 0);
        bytes
            .and_then(|bytes| T::try_from(bytes).ok())
            .ok_or_else(|| {
                format!(
                    "[sweep] `{}` is not a size that `{}` holds; write e.g. `14480`, `64KB` or `8MiB`",
                    self.text,
                    self.tunable.name()
                )
            })
    }

    /// A positive whole number, as large as the server's field holds.
    fn count<T: std::str::FromStr + Default + PartialOrd>(&self) -> Result<T, String> {
        let count = self.text.parse().ok();
        count.filter(|count| *count > T::default()).ok_or_else(|| {
            format!(
                "[sweep] `{}` is not a positive whole number that `{}` holds",
                self.text,
                self.tunable.name()
            )
        })
    }

    /// A number of packets: `32` or `32 packets`.
    fn packets(&self) -> Result<u32, String> {
        parse_packets(self.text).ok_or_else(|| {
            format!(
                "[sweep] `{}` is not a number of packets for `{}`; write e.g. `10` or \
                 `\"32 packets\"` (1 to 1024)",
                self.text,
                self.tunable.name()
            )
        })
    }

    /// A duration above zero: `5ms`, `1s`.
    fn duration(&self) -> Result<Duration, String> {
        let duration = humantime::parse_duration(self.text).ok();
        duration.filter(|d| !d.is_zero()).ok_or_else(|| {
            format!(
                "[sweep] `{}` is not a duration for `{}`; write e.g. `5ms`",
                self.text,
                self.tunable.name()
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

/// One value of the swept tunable, in the type of the server's field it
/// sets: what a cell's server runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Setting {
    /// Both transports' controllers; QUIC names `reno` `newreno`.
    Cc(TcpCongestion),
    QuicCc(QuicCongestion),
    TcpCc(TcpCongestion),
    QuicInitialWindow(u64),
    /// Packets.
    InitialWindow(u32),
    QuicAckEvery(u32),
    QuicMaxAckDelay(Duration),
    QuicStreamOrder(StreamOrder),
    Gso(Switch),
    UdpBuffer(usize),
    TcpSendBuffer(usize),
    TcpRecvBuffer(usize),
    TcpNotsentLowat(u32),
    MaxStreams(u32),
    Threads(u16),
    TlsRecords(RecordSizing),
    H2StreamWindow(u32),
    H2ConnectionWindow(u32),
    H2SendBuffer(usize),
    H2StreamOrder(StreamOrder),
    /// A name from `[target.servers]`, or `builtin`.
    Server(String),
    /// A name from `[target.edges]`, or `direct`.
    Edge(String),
}

impl Setting {
    /// The tunable it sets.
    pub(crate) fn tunable(&self) -> Tunable {
        match self {
            Setting::Cc(_) => Tunable::Cc,
            Setting::QuicCc(_) => Tunable::QuicCc,
            Setting::TcpCc(_) => Tunable::TcpCc,
            Setting::QuicInitialWindow(_) => Tunable::QuicInitialWindow,
            Setting::InitialWindow(_) => Tunable::InitialWindow,
            Setting::QuicAckEvery(_) => Tunable::QuicAckEvery,
            Setting::QuicMaxAckDelay(_) => Tunable::QuicMaxAckDelay,
            Setting::QuicStreamOrder(_) => Tunable::QuicStreamOrder,
            Setting::Gso(_) => Tunable::Gso,
            Setting::UdpBuffer(_) => Tunable::UdpBuffer,
            Setting::TcpSendBuffer(_) => Tunable::TcpSendBuffer,
            Setting::TcpRecvBuffer(_) => Tunable::TcpRecvBuffer,
            Setting::TcpNotsentLowat(_) => Tunable::TcpNotsentLowat,
            Setting::MaxStreams(_) => Tunable::MaxStreams,
            Setting::Threads(_) => Tunable::Threads,
            Setting::TlsRecords(_) => Tunable::TlsRecords,
            Setting::H2StreamWindow(_) => Tunable::H2StreamWindow,
            Setting::H2ConnectionWindow(_) => Tunable::H2ConnectionWindow,
            Setting::H2SendBuffer(_) => Tunable::H2SendBuffer,
            Setting::H2StreamOrder(_) => Tunable::H2StreamOrder,
            Setting::Server(_) => Tunable::Server,
            Setting::Edge(_) => Tunable::Edge,
        }
    }

    /// The value as results record it and suites name rows: sizes in
    /// bytes, words as written, durations as humantime writes them.
    pub(crate) fn value_text(&self) -> String {
        match self {
            Setting::Cc(cc) | Setting::TcpCc(cc) => cc.to_string(),
            Setting::QuicCc(cc) => cc.to_string(),
            Setting::QuicInitialWindow(bytes) => bytes.to_string(),
            Setting::UdpBuffer(bytes)
            | Setting::TcpSendBuffer(bytes)
            | Setting::TcpRecvBuffer(bytes)
            | Setting::H2SendBuffer(bytes) => bytes.to_string(),
            Setting::TcpNotsentLowat(number)
            | Setting::H2StreamWindow(number)
            | Setting::H2ConnectionWindow(number)
            | Setting::InitialWindow(number)
            | Setting::QuicAckEvery(number)
            | Setting::MaxStreams(number) => number.to_string(),
            Setting::Threads(count) => count.to_string(),
            Setting::QuicMaxAckDelay(delay) => humantime::format_duration(*delay).to_string(),
            Setting::QuicStreamOrder(order) | Setting::H2StreamOrder(order) => value_word(*order),
            Setting::Gso(gso) => value_word(*gso),
            Setting::TlsRecords(records) => value_word(*records),
            Setting::Server(name) | Setting::Edge(name) => name.clone(),
        }
    }

    /// The setting as results record it.
    pub(crate) fn recorded(&self) -> SweptSetting {
        SweptSetting {
            tunable: self.tunable().name().to_string(),
            value: self.value_text(),
        }
    }

    /// The TCP initial window it asks the path for, in segments.
    pub(crate) fn tcp_initial_window(&self) -> Option<u32> {
        match self {
            Setting::InitialWindow(packets) => Some(*packets),
            _ => None,
        }
    }

    /// The server's name, for a `server` sweep's value.
    pub(crate) fn server(&self) -> Option<&str> {
        match self {
            Setting::Server(name) => Some(name),
            _ => None,
        }
    }

    /// The edge's name, for an `edge` sweep's value other than `direct`.
    pub(crate) fn edge(&self) -> Option<&str> {
        match self {
            Setting::Edge(name) if name != DIRECT => Some(name),
            _ => None,
        }
    }

    /// Sets it on the built-in server's flags (nothing for `server`,
    /// which picks the server instead, nor for `edge`, which puts one in
    /// front of it). A field's own check (such as
    /// `--threads`' range) is the server's, when it starts.
    pub(crate) fn apply(&self, serve: &mut ServeArgs) {
        match self {
            Setting::Cc(cc) => {
                serve.tcp_cc = Some(*cc);
                serve.quic_cc = match cc {
                    TcpCongestion::Cubic => QuicCongestion::Cubic,
                    TcpCongestion::Bbr => QuicCongestion::Bbr,
                    TcpCongestion::Reno => QuicCongestion::NewReno,
                };
            }
            Setting::QuicCc(cc) => serve.quic_cc = *cc,
            Setting::TcpCc(cc) => serve.tcp_cc = Some(*cc),
            Setting::QuicInitialWindow(bytes) => serve.quic_initial_window = Some(*bytes),
            Setting::InitialWindow(packets) => {
                serve.quic_initial_window = Some(quic_initial_window(*packets));
            }
            Setting::QuicAckEvery(count) => serve.quic_ack_every = *count,
            Setting::QuicMaxAckDelay(delay) => serve.quic_max_ack_delay = Some(*delay),
            Setting::QuicStreamOrder(order) => serve.quic_stream_order = *order,
            Setting::Gso(gso) => serve.gso = *gso,
            Setting::UdpBuffer(bytes) => serve.udp_buffer = *bytes,
            Setting::TcpSendBuffer(bytes) => serve.tcp_send_buffer = Some(*bytes),
            Setting::TcpRecvBuffer(bytes) => serve.tcp_recv_buffer = Some(*bytes),
            Setting::TcpNotsentLowat(bytes) => serve.tcp_notsent_lowat = Some(*bytes),
            Setting::MaxStreams(count) => serve.max_streams = *count,
            Setting::Threads(count) => serve.threads = Some(*count),
            Setting::TlsRecords(records) => serve.tls_records = *records,
            Setting::H2StreamWindow(bytes) => serve.h2_stream_window = *bytes,
            Setting::H2ConnectionWindow(bytes) => serve.h2_connection_window = *bytes,
            Setting::H2SendBuffer(bytes) => serve.h2_send_buffer = *bytes,
            Setting::H2StreamOrder(order) => serve.h2_stream_order = *order,
            Setting::Server(_) | Setting::Edge(_) => {}
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

    /// The server flags a setting changes from the defaults.
    fn server_args(setting: &Setting) -> Vec<String> {
        let mut serve = ServeArgs::new();
        setting.apply(&mut serve);
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
    fn cc_sets_both_transports_with_quic_naming_reno_newreno() {
        let reno = Tunable::Cc.setting("reno").unwrap();
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
        let gso = Setting::Gso(Switch::On);
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
        let quic = Tunable::QuicStreamOrder.setting("in-order").unwrap();
        assert_eq!(server_args(&quic), ["--quic-stream-order=in-order"]);
    }

    #[test]
    fn threads_sets_the_servers_worker_count() {
        let sweep = parse("tunable = \"threads\"\nvalues = [1, 2]").unwrap();
        assert_eq!(server_args(&sweep.values[0]), ["--threads=1"]);
        for bad in ["0", "70000"] {
            let err = parse(&format!("tunable = \"threads\"\nvalues = [{bad}, 2]")).unwrap_err();
            assert!(
                err.contains("positive whole number that `threads` holds"),
                "{err}"
            );
        }
        let err = parse("tunable = \"h2_stream_window\"\nvalues = [\"8GiB\", 2]").unwrap_err();
        assert!(err.contains("size that `h2_stream_window` holds"), "{err}");
    }

    #[test]
    fn every_tunable_sets_a_flag_of_the_server() {
        let words = |tunable: Tunable| -> Vec<String> {
            let err = tunable.setting("?").err().unwrap_or_default();
            let list = err.split_once("use one of ").map_or("", |(_, list)| list);
            list.split(", ").map(str::to_string).collect()
        };
        for (tunable, name) in TUNABLES {
            let samples = match words(tunable) {
                words if words.len() > 1 => words,
                _ if tunable == Tunable::QuicMaxAckDelay => vec!["5ms".to_string()],
                // These pick the server, or put one in front of it.
                _ if matches!(tunable, Tunable::Server | Tunable::Edge) => vec![],
                _ => vec!["3".to_string()],
            };
            for value in samples {
                let setting = tunable.setting(&value).unwrap();
                assert_eq!(
                    (setting.tunable(), setting.value_text()),
                    (tunable, value.clone())
                );
                let mut serve = ServeArgs::new();
                setting.apply(&mut serve);
                let changed = serve != ServeArgs::new();
                let is_default = matches!(
                    (name, value.as_str()),
                    ("quic_cc", "auto")
                        | ("gso", "on")
                        | ("quic_stream_order", "priority")
                        | ("h2_stream_order", "priority")
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
