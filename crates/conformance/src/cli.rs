//! The flags of `h3lab probe conformance URL` and the options they ask
//! for, and the way back to the flags ([`CommandFlags::to_args`]).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use h3lab_client::{ResolveRule, Scheme, Target};
use h3lab_results::flags::{self, CommandFlags};
use serde::Serialize;

use crate::run::Options;
use crate::suite::Origin;

/// The flags of `h3lab probe conformance URL`.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize)]
pub struct ConformanceArgs {
    /// An https:// URL on the server; each case's valid requests ask for
    /// it. Any certificate is accepted: the suite checks the protocol, not
    /// the server's identity.
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
    /// What the flags ask for, with the URL's host resolved once.
    pub fn options(&self) -> anyhow::Result<Options> {
        let Some(url) = &self.url else {
            bail!("no URL; give the server's https:// URL, e.g. https://127.0.0.1:4433/");
        };
        let target = Target::parse(url)?;
        if target.scheme() != Scheme::Https {
            bail!("bad URL `{url}`: HTTP/3 needs an https:// URL");
        }
        if self.timeout < Duration::from_millis(100) || self.settle > self.timeout {
            bail!(
                "--timeout {:?} and --settle {:?}: the timeout must be at least 100ms and no \
                 shorter than the settle time",
                self.timeout,
                self.settle
            );
        }
        let address = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting a tokio runtime to resolve the host")?
            .block_on(target.resolve(&self.resolve))?;
        Ok(Options {
            target: url.clone(),
            origin: Origin {
                authority: target.authority().to_string(),
                path: target.path_and_query().to_string(),
            },
            server_name: target.host().to_string(),
            address,
            case_timeout: self.timeout,
            settle: self.settle,
            only: self.only.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(flags: &[&str]) -> anyhow::Result<ConformanceArgs> {
        ConformanceArgs::parse_flags(flags.iter().copied())
    }

    #[test]
    fn flags_go_there_and_back() {
        let args = parse(&[
            "https://example.test:4433/x",
            "--resolve=example.test:4433:127.0.0.1",
            "--timeout=3s",
            "--only=qpack.",
        ])
        .unwrap();
        assert_eq!(
            ConformanceArgs::parse_flags(args.to_args().unwrap()).unwrap(),
            args
        );
        let options = args.options().unwrap();
        assert_eq!(options.address.to_string(), "127.0.0.1:4433");
        assert_eq!(options.server_name, "example.test");
        assert_eq!(options.origin.authority, "example.test:4433");
        assert_eq!(options.origin.path, "/x");
    }

    #[test]
    fn bad_urls_and_timeouts_are_refused_with_the_fix() {
        let err = |flags: &[&str]| format!("{:#}", parse(flags).unwrap().options().unwrap_err());
        assert!(err(&["http://127.0.0.1:80/"]).contains("needs an https:// URL"));
        assert!(err(&["https://127.0.0.1:4433/", "--timeout=10ms"]).contains("at least 100ms"));
        assert!(err(&["ftp://x/"]).contains("scheme `ftp` is not supported"));
        assert!(parse(&[]).is_err());
        assert!(parse(&["--list"]).unwrap().url.is_none());
    }
}
