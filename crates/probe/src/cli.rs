//! The probes' flags (behind the `clap` feature) and what each asks for
//! (`options`), so the binary only wires them, and the way back
//! ([`CommandFlags::to_args`]): the flags that parse to the same value (a
//! bench cell starts `probe ttfb` from one).

use std::path::PathBuf;
use std::time::Duration;

use h3lab_client::{ResolveRule, TlsOptions};
use h3lab_results::flags::{self, CommandFlags};
use h3lab_results::{Proto, TtfbMode};
use h3lab_site::Shape;
use linkem::config::Overrides;
use linkem::model::UdpPolicy;
use serde::Serialize;

use crate::conformance::ConformanceOptions;
use crate::connections::ConnectionsOptions;
use crate::fallback::FallbackOptions;
use crate::hol::HolOptions;
use crate::migrate::scenario::{
    default_delay_threshold, default_request_timeout, Change, Scenario,
};
use crate::migrate::MigrateOptions;
use crate::ttfb::TtfbOptions;

/// The flags of `h3lab probe ttfb URL`.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize)]
pub struct TtfbArgs {
    /// URL to request, e.g. https://127.0.0.1:8443/bytes/1.
    pub url: String,
    /// Protocol.
    #[arg(long, value_enum, default_value = "h2")]
    pub proto: Proto,
    /// cold: full handshake; resumed: TLS/QUIC session resumption; 0rtt: the
    /// request in 0-RTT early data (h3 only).
    #[arg(long, value_enum, default_value = "cold")]
    pub mode: TtfbMode,
    /// New connections to measure.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub samples: u32,
    /// Accept any server certificate.
    #[arg(long)]
    pub insecure: bool,
    /// Trust the certificate(s) in this PEM file too (the system's
    /// certificate authorities, or SSL_CERT_FILE's, are always trusted).
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// Connection set-up timeout.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration")]
    pub connect_timeout: Duration,
    /// Connect to ADDR for HOST:PORT instead of resolving HOST (curl's
    /// --resolve HOST:PORT:ADDR); repeatable.
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    #[serde(serialize_with = "flags::display_each")]
    pub resolve: Vec<ResolveRule>,
    /// Also write the samples as JSON (schema h3lab.ttfb/2, docs/results-schema.md) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Print only the summary line.
    #[arg(short, long)]
    pub quiet: bool,
}

impl CommandFlags for TtfbArgs {
    const COMMAND: &'static str = "h3lab probe ttfb";
}

impl TtfbArgs {
    /// `h3lab probe ttfb URL` with every other flag at its default.
    pub fn new(url: &str) -> TtfbArgs {
        TtfbArgs::parse_flags([url]).expect("a URL alone is a valid `h3lab probe ttfb`")
    }

    /// What the probe measures.
    pub fn options(&self) -> TtfbOptions {
        TtfbOptions {
            url: self.url.clone(),
            proto: self.proto,
            mode: self.mode,
            samples: self.samples,
            tls: TlsOptions {
                insecure: self.insecure,
                ca_file: self.ca.clone(),
            },
            connect_timeout: self.connect_timeout,
            resolve: self.resolve.clone(),
        }
    }
}

/// The flags of `h3lab probe conformance URL`.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize)]
pub struct ConformanceArgs {
    /// An https:// URL on the server; each case's valid requests ask for
    /// it, so pick one that answers 200. Any certificate is accepted: the
    /// suite checks the protocol, not the server's identity.
    #[arg(required_unless_present = "list")]
    pub url: Option<String>,
    /// Connect to ADDR for HOST:PORT instead of resolving HOST (curl's
    /// --resolve HOST:PORT:ADDR); repeatable.
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    #[serde(serialize_with = "flags::display_each")]
    pub resolve: Vec<ResolveRule>,
    /// How long a case waits for any answer (its connection's idle
    /// timeout); a server silent for this long "timed out".
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration")]
    pub timeout: Duration,
    /// How long after the follow-up request's answer a case still listens
    /// for a late reset or close.
    #[arg(long, default_value = "200ms", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration")]
    pub settle: Duration,
    /// Run only the cases whose id starts with PREFIX (e.g. `qpack.`);
    /// repeatable.
    #[arg(long, value_name = "PREFIX")]
    pub only: Vec<String>,
    /// List the cases, their RFC sections and what they expect, and exit.
    #[arg(long)]
    pub list: bool,
    /// Also write the results as JSON (schema h3lab.conformance/1,
    /// docs/results-schema.md) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl CommandFlags for ConformanceArgs {
    const COMMAND: &'static str = "h3lab probe conformance";
}

impl ConformanceArgs {
    /// `h3lab probe conformance URL` with every other flag at its default.
    pub fn new(url: &str) -> ConformanceArgs {
        ConformanceArgs::parse_flags([url])
            .expect("a URL alone is a valid `h3lab probe conformance`")
    }

    /// What the run asks for; `None` for `--list`, which runs nothing.
    pub fn options(&self) -> Option<ConformanceOptions> {
        if self.list {
            return None;
        }
        Some(ConformanceOptions {
            url: self.url.clone().unwrap_or_default(),
            resolve: self.resolve.clone(),
            timeout: self.timeout,
            settle: self.settle,
            only: self.only.clone(),
            json: self.json.clone(),
        })
    }
}

/// The flags of `h3lab probe connections`.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize)]
pub struct ConnectionsArgs {
    /// Protocols, each against a fresh server on a fresh path.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "h1,h2,h3")]
    pub protocols: Vec<Proto>,
    /// Connections held at each step, ascending.
    #[arg(long, value_delimiter = ',', default_value = "100,1000")]
    pub counts: Vec<u32>,
    /// Connections opened at once while growing to a step.
    #[arg(long, default_value_t = 50)]
    pub concurrency: u32,
    /// How long each step waits before reading memory.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration")]
    pub settle: Duration,
    /// Measure a server this command starts instead of h3lab serve, e.g.
    /// "scripts/peer-server.sh caddy {ip} {port} {site} {cert} {key}"
    /// (placeholders as in a suite's server_cmd; {cert} and {key} are
    /// needed). Idle connections only: h3lab serve alone has an answer
    /// that waits.
    #[arg(long, value_name = "COMMAND")]
    pub server_cmd: Option<String>,
    /// Also write the report as JSON (schema h3lab.connections/1) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl CommandFlags for ConnectionsArgs {
    const COMMAND: &'static str = "h3lab probe connections";
}

impl ConnectionsArgs {
    /// What the probe runs, starting `exe` as the built-in server.
    pub fn options(&self, exe: PathBuf) -> anyhow::Result<ConnectionsOptions> {
        let options = ConnectionsOptions {
            protocols: self.protocols.clone(),
            counts: self.counts.clone(),
            concurrency: self.concurrency,
            settle: self.settle,
            exe,
            server_cmd: self.server_cmd.clone(),
        };
        options.validate()?;
        Ok(options)
    }
}

/// The flags of `h3lab probe offer URL...`.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize)]
pub struct OfferArgs {
    /// URLs whose origins to check, e.g. https://www.example.com/.
    #[arg(required = true)]
    pub urls: Vec<String>,
    /// Connect to ADDR for HOST:PORT instead of resolving HOST (curl's
    /// --resolve HOST:PORT:ADDR); repeatable.
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    #[serde(serialize_with = "flags::display_each")]
    pub resolve: Vec<ResolveRule>,
    /// Accept any server certificate.
    #[arg(long)]
    pub insecure: bool,
    /// Trust the certificate(s) in this PEM file too (the system's
    /// certificate authorities, or SSL_CERT_FILE's, are always trusted).
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// How long each connection may take; a QUIC handshake with no answer
    /// within it means no h3.
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration")]
    pub timeout: Duration,
    /// A URL on one of the origins whose response is larger than its h3
    /// server's initial window (a large image or download; 1 MB or more),
    /// to count what the server sends in the first round trip, and how it
    /// cuts its window after a datagram lost 150 KB in. Without it, the
    /// URL checked is asked, and a small response says nothing.
    #[arg(long, value_name = "URL")]
    pub window_url: Option<String>,
    /// Also write the report as JSON (schema h3lab.offer/1) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl CommandFlags for OfferArgs {
    const COMMAND: &'static str = "h3lab probe offer";
}

impl OfferArgs {
    /// How the origins' certificates are trusted.
    pub fn tls(&self) -> TlsOptions {
        TlsOptions {
            insecure: self.insecure,
            ca_file: self.ca.clone(),
        }
    }
}

/// The flags of `h3lab probe migrate`.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize)]
pub struct MigrateArgs {
    /// What changes at the switch: `port` (NAT rebinding) or `address` (a
    /// network handoff to a second client address).
    #[arg(long, default_value = "port")]
    #[serde(serialize_with = "flags::display")]
    pub change: Change,
    /// Protocols to run, each on a fresh path, e.g. h2,h3.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "h1,h2,h3")]
    pub proto: Vec<Proto>,
    /// Built-in network profile (see `h3lab net profiles`).
    #[arg(long, default_value = "broadband")]
    pub profile: String,
    /// Changes to the profile: the link flags of `h3lab net run`.
    #[command(flatten)]
    #[serde(flatten)]
    pub path: Overrides,
    /// Requests started per second.
    #[arg(long, default_value_t = 50)]
    pub rate: u32,
    /// How long requests are started.
    #[arg(long, default_value = "4s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration")]
    pub duration: Duration,
    /// When the change happens, from the first request; default: half-way.
    #[arg(long, value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration_opt")]
    pub switch_at: Option<Duration>,
    /// Response body size of each request (`/bytes/N`).
    #[arg(long, default_value_t = 1000)]
    pub bytes: u64,
    /// A request without a complete response this long after its
    /// scheduled start fails; default: 8 RTT, at least 1 s.
    #[arg(long, value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration_opt")]
    pub request_timeout: Option<Duration>,
    /// A successful request slower than this counts as delayed; default:
    /// 2 RTT, at least 10 ms.
    #[arg(long, value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration_opt")]
    pub delay_threshold: Option<Duration>,
    /// Also write the report as JSON (schema h3lab.migrate/1,
    /// docs/results-schema.md) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl CommandFlags for MigrateArgs {
    const COMMAND: &'static str = "h3lab probe migrate";
}

impl MigrateArgs {
    /// What the probe runs on the profile with the overrides, starting
    /// `exe` as the built-in server; the thresholds default from the
    /// path's RTT.
    pub fn options(&self, exe: PathBuf) -> anyhow::Result<MigrateOptions> {
        let settings = self.path.emulated(&self.profile, "a migration")?;
        let rtt = Duration::from_nanos(settings.rtt);
        let scenario = Scenario {
            change: self.change,
            protos: self.proto.clone(),
            rate_per_s: self.rate,
            duration: self.duration,
            switch_at: self.switch_at.unwrap_or(self.duration / 2),
            body_bytes: self.bytes,
            request_timeout: self
                .request_timeout
                .unwrap_or_else(|| default_request_timeout(rtt)),
            delay_threshold: self
                .delay_threshold
                .unwrap_or_else(|| default_delay_threshold(rtt)),
        };
        scenario.validate()?;
        Ok(MigrateOptions {
            settings,
            profile: Some(self.profile.clone()),
            scenario,
            exe,
        })
    }
}

/// The flags of `h3lab probe hol`.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize)]
pub struct HolArgs {
    /// Parallel GETs on the one connection.
    #[arg(long, default_value_t = 8)]
    pub streams: u32,
    /// Response body size of each stream (`/bytes/N`).
    #[arg(long, default_value_t = 131_072)]
    pub size: u64,
    /// Protocols, each on its own fresh path with the same seed.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "h2,h3")]
    pub protos: Vec<Proto>,
    /// Built-in network profile (see `h3lab net profiles`); study A's claim
    /// is at 1 % loss, as in `cellular`.
    #[arg(long, default_value = "cellular")]
    pub profile: String,
    /// Changes to the profile: the link flags of `h3lab net run`.
    #[command(flatten)]
    #[serde(flatten)]
    pub path: Overrides,
    /// Repetitions; repetition r runs every protocol with seed + r.
    #[arg(long, default_value_t = 1)]
    pub repetitions: u32,
    /// Also write the report as JSON (schema h3lab.hol/1,
    /// docs/results-schema.md) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also draw the per-stream stalls and completions into an HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

impl CommandFlags for HolArgs {
    const COMMAND: &'static str = "h3lab probe hol";
}

impl HolArgs {
    /// What the probe runs on the profile with the overrides, starting
    /// `exe` as the built-in server.
    pub fn options(&self, exe: PathBuf) -> anyhow::Result<HolOptions> {
        let options = HolOptions {
            settings: self.path.emulated(&self.profile, "a head-of-line probe")?,
            profile: Some(self.profile.clone()),
            protos: self.protos.clone(),
            streams: self.streams,
            body_bytes: self.size,
            repetitions: self.repetitions,
            exe,
        };
        options.validate()?;
        Ok(options)
    }
}

/// The flags of `h3lab probe fallback`.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize)]
pub struct FallbackArgs {
    /// The UDP policies, each on a fresh path: open, blocked,
    /// blocked-after:N or throttle:RATE.
    #[arg(long, value_delimiter = ',', default_value = "open,blocked,throttle:1mbit",
          value_parser = linkem::config::parse_udp_policy)]
    pub policies: Vec<UdpPolicy>,
    /// Built-in network profile (see `h3lab net profiles`).
    #[arg(long, default_value = "broadband")]
    pub profile: String,
    /// Changes to the profile: the link flags of `h3lab net run`.
    #[command(flatten)]
    #[serde(flatten)]
    pub path: Overrides,
    /// The generated site loaded (see `h3lab site generate`).
    #[arg(long, default_value = "small")]
    #[serde(serialize_with = "flags::display")]
    pub site: Shape,
    /// The site's seed (`--seed` is the path's).
    #[arg(long, default_value_t = 1)]
    pub site_seed: u64,
    /// Repetitions of every visit.
    #[arg(long, default_value_t = 5)]
    pub repetitions: u32,
    /// Also write the report as JSON (schema h3lab.fallback/1,
    /// docs/results-schema.md) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl CommandFlags for FallbackArgs {
    const COMMAND: &'static str = "h3lab probe fallback";
}

impl FallbackArgs {
    /// What the probe runs on the profile with the overrides, each UDP
    /// policy in turn, starting `exe` as the built-in server.
    pub fn options(&self, exe: PathBuf) -> anyhow::Result<FallbackOptions> {
        anyhow::ensure!(
            self.path.udp.is_none(),
            "probe fallback runs each of --policies in turn; give the UDP policies there, not with --udp"
        );
        let options = FallbackOptions {
            settings: self.path.emulated(&self.profile, "a fallback probe")?,
            profile: Some(self.profile.clone()),
            policies: self.policies.clone(),
            shape: self.site,
            seed: self.site_seed,
            repetitions: self.repetitions,
            exe,
        };
        options.validate()?;
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `args` and its arguments parse back to it.
    fn assert_round_trip<A>(args: A)
    where
        A: CommandFlags + clap::Args + clap::FromArgMatches + PartialEq + std::fmt::Debug,
    {
        assert_eq!(args.round_trip().unwrap(), args);
    }

    /// The flags that follow the probe's command: none, or the URL.
    fn defaults<A>(flags: &[&str]) -> A
    where
        A: CommandFlags + clap::Args + clap::FromArgMatches,
    {
        A::parse_flags(flags).unwrap()
    }

    #[test]
    fn ttfb_defaults_and_every_flag_parse_back_to_themselves() {
        assert_round_trip(TtfbArgs::new("https://127.0.0.1:8443/bytes/1"));
        assert_round_trip(TtfbArgs {
            url: "https://www.example.test/-x".to_string(),
            proto: Proto::H3,
            mode: TtfbMode::ZeroRtt,
            samples: 17,
            insecure: true,
            ca: Some(PathBuf::from("/tmp/ca.pem")),
            connect_timeout: Duration::from_millis(2_500),
            resolve: vec!["www.example.test:443:127.0.0.10".parse().unwrap()],
            json: Some(PathBuf::from("out.json")),
            quiet: true,
        });
    }

    #[test]
    fn connections_and_offer_flags_parse_back_to_themselves() {
        assert_round_trip(defaults::<ConnectionsArgs>(&[]));
        assert_round_trip(ConnectionsArgs {
            protocols: vec![Proto::H3, Proto::H1],
            counts: vec![10, 200],
            concurrency: 7,
            settle: Duration::from_millis(1_500),
            server_cmd: Some("scripts/peer-server.sh caddy {ip} {port} -x".to_string()),
            json: Some(PathBuf::from("c.json")),
        });
        assert_round_trip(defaults::<OfferArgs>(&["https://a.test/"]));
        assert_round_trip(OfferArgs {
            urls: vec![
                "https://a.test/".to_string(),
                "https://b.test:8443/-x".to_string(),
            ],
            resolve: vec!["a.test:443:127.0.0.10".parse().unwrap()],
            insecure: true,
            ca: Some(PathBuf::from("ca.pem")),
            timeout: Duration::from_secs(2),
            window_url: Some("https://a.test/big".to_string()),
            json: Some(PathBuf::from("-")),
        });
    }

    #[test]
    fn conformance_flags_parse_back_to_themselves_and_list_runs_nothing() {
        assert_round_trip(defaults::<ConformanceArgs>(&["https://a.test/"]));
        let args = ConformanceArgs {
            url: Some("https://a.test:4433/x?y=1".to_string()),
            resolve: vec!["a.test:4433:127.0.0.1".parse().unwrap()],
            timeout: Duration::from_secs(3),
            settle: Duration::from_millis(150),
            only: vec!["qpack.".to_string(), "control.".to_string()],
            list: false,
            json: Some(PathBuf::from("out.json")),
        };
        assert_round_trip(args.clone());
        let options = args.options().expect("a run");
        assert_eq!(options.url, "https://a.test:4433/x?y=1");
        assert_eq!(
            (options.timeout, options.only.len()),
            (Duration::from_secs(3), 2)
        );
        assert_eq!(defaults::<ConformanceArgs>(&["--list"]).options(), None);
        assert!(
            ConformanceArgs::parse_flags(Vec::<&str>::new()).is_err(),
            "a URL or --list"
        );
    }

    /// A path change for every link flag, so that the probes' round trips
    /// cover the flags they flatten from linkem.
    fn every_path_flag() -> Overrides {
        h3lab_results::flags::parse::<Overrides>(
            "path",
            [
                "--rtt=37ms",
                "--down=2500kbit",
                "--up=1mbit",
                "--loss=0.07%",
                "--loss-model=bernoulli",
                "--loss-direction=both",
                "--jitter=2ms:normal",
                "--queue=64kb",
                "--reorder=0.5%:10ms",
                "--duplicate=0.1%",
                "--udp=blocked-after:3",
                "--trace-down=down.trace",
                "--trace-up=up.trace",
                "--seed=9",
            ],
        )
        .unwrap()
    }

    /// Link values whose text must keep every digit: a fractional
    /// millisecond, a rate in bits, a loss below 0.01 %, a byte queue.
    #[test]
    fn link_values_pass_on_exactly() {
        use linkem::model::{QueueLimit, ReorderSpec};
        let exact = Overrides {
            rtt: Some(37_500_000),
            down: Some(2_500_000),
            up: Some(123),
            loss: Some(0.0007),
            loss_model: Some("gilbert:1%,30%,0%,100%".to_string()),
            loss_direction: Some(linkem::config::LossDirection::Both),
            jitter: every_path_flag().jitter,
            queue: Some(QueueLimit::Bytes(65_537)),
            reorder: Some(ReorderSpec {
                probability: 0.00007,
                extra_delay: 10_000_000,
            }),
            duplicate: Some(0.001),
            udp: Some(UdpPolicy::Throttle {
                bits_per_sec: 1_500_000,
            }),
            trace_down: Some("traces/-down.trace".into()),
            trace_up: Some("up.trace".into()),
            seed: Some(u64::MAX),
        };
        assert_round_trip(HolArgs {
            path: exact,
            ..defaults::<HolArgs>(&[])
        });
    }

    #[test]
    fn migrate_hol_and_fallback_flags_parse_back_to_themselves() {
        assert_round_trip(defaults::<MigrateArgs>(&[]));
        assert_round_trip(MigrateArgs {
            change: Change::Address,
            proto: vec![Proto::H3],
            profile: "cellular".to_string(),
            path: every_path_flag(),
            rate: 20,
            duration: Duration::from_millis(2_500),
            switch_at: Some(Duration::from_secs(1)),
            bytes: 10,
            request_timeout: Some(Duration::from_secs(3)),
            delay_threshold: Some(Duration::from_millis(40)),
            json: Some(PathBuf::from("-m.json")),
        });
        assert_round_trip(defaults::<HolArgs>(&[]));
        assert_round_trip(HolArgs {
            streams: 4,
            size: 1_000,
            protos: vec![Proto::H3, Proto::H2],
            profile: "broadband".to_string(),
            path: every_path_flag(),
            repetitions: 3,
            json: Some(PathBuf::from("h.json")),
            html: Some(PathBuf::from("h.html")),
        });
        assert_round_trip(defaults::<FallbackArgs>(&[]));
        assert_round_trip(FallbackArgs {
            policies: vec![UdpPolicy::Blocked, UdpPolicy::BlockedAfter { packets: 4 }],
            profile: "cellular".to_string(),
            path: Overrides {
                udp: None,
                ..every_path_flag()
            },
            site: Shape::Content,
            site_seed: 7,
            repetitions: 2,
            json: Some(PathBuf::from("f.json")),
        });
    }
}
