//! `h3lab probe ttfb`'s flags (behind the `clap` feature), and the way
//! back: [`TtfbArgs::to_args`] gives the flags that parse to the same
//! value, so a bench cell starts the probe from a typed value.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::anyhow;
use h3lab_client::{ResolveRule, TlsOptions};
use h3lab_results::flags::Flags;
use h3lab_results::{Proto, TtfbMode};

use crate::ttfb::TtfbOptions;

/// The flags of `h3lab probe ttfb URL`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
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
    pub connect_timeout: Duration,
    /// Connect to ADDR for HOST:PORT instead of resolving HOST (curl's
    /// --resolve HOST:PORT:ADDR); repeatable.
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    pub resolve: Vec<ResolveRule>,
    /// Also write the samples as JSON (schema h3lab.ttfb/2, docs/results-schema.md) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Print only the summary line.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `h3lab probe ttfb` alone, to parse its flags outside the binary.
#[derive(clap::Parser)]
#[command(name = "h3lab probe ttfb", no_binary_name = true)]
struct TtfbLine {
    #[command(flatten)]
    args: TtfbArgs,
}

impl TtfbArgs {
    /// `h3lab probe ttfb URL` with every other flag at its default.
    pub fn new(url: &str) -> TtfbArgs {
        TtfbArgs::parse_flags([url]).expect("a URL alone is a valid `h3lab probe ttfb`")
    }

    /// Parses the flags that follow `h3lab probe ttfb`, as the binary does.
    pub fn parse_flags<T: Into<OsString> + Clone>(
        flags: impl IntoIterator<Item = T>,
    ) -> anyhow::Result<TtfbArgs> {
        let line = <TtfbLine as clap::Parser>::try_parse_from(flags).map_err(|err| {
            let text = err.render().to_string();
            anyhow!("{}", text.trim_start_matches("error: ").trim_end())
        })?;
        Ok(line.args)
    }

    /// The flags, after `h3lab probe ttfb`, that parse back to `self`.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args = Flags::default();
        args.value("--proto", self.proto);
        args.value("--mode", self.mode);
        args.value("--samples", self.samples);
        args.switch("--insecure", self.insecure);
        args.path_opt("--ca", self.ca.as_deref());
        args.duration("--connect-timeout", self.connect_timeout);
        args.each("--resolve", &self.resolve);
        args.path_opt("--json", self.json.as_deref());
        args.switch("--quiet", self.quiet);
        args.finish([&self.url])
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

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(args: &TtfbArgs) -> TtfbArgs {
        TtfbArgs::parse_flags(args.to_args())
            .unwrap_or_else(|err| panic!("{:?} does not parse: {err}", args.to_args()))
    }

    #[test]
    fn defaults_and_every_flag_parse_back_to_themselves() {
        let defaults = TtfbArgs::new("https://127.0.0.1:8443/bytes/1");
        let every = TtfbArgs {
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
        };
        for args in [defaults, every] {
            assert_eq!(round_trip(&args), args);
        }
    }
}
