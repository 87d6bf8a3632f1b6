//! `h3lab probe conformance URL`: its flags, the URL resolved, and the run
//! of the `h3lab-conformance` helper (crates/conformance), which holds the
//! suite. The helper is a project of its own because it builds BoringSSL;
//! this side finds it, or says how to build it, and names what a URL offers
//! when it does not answer over HTTP/3.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use h3lab_client::{ResolveRule, Scheme, Target, TlsOptions};
use h3lab_probe::offer::check_offers;
use h3lab_results::flags::{self, CommandFlags};
use serde::Serialize;

/// The helper's name, beside this binary or on the PATH.
const HELPER: &str = "h3lab-conformance";
/// The helper's exit status when the server did not answer over HTTP/3.
const NO_HTTP3: i32 = 3;

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
    /// The helper's arguments: `list`, or `run` with the URL resolved.
    fn helper_args(&self) -> anyhow::Result<Vec<OsString>> {
        if self.list {
            return Ok(vec!["list".into()]);
        }
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
        let mut args: Vec<String> = vec![
            "run".into(),
            format!("--target={url}"),
            format!("--address={address}"),
            format!("--server-name={}", target.host()),
            format!("--authority={}", target.authority()),
            format!("--path={}", target.path_and_query()),
            format!("--timeout={}", humantime::format_duration(self.timeout)),
            format!("--settle={}", humantime::format_duration(self.settle)),
        ];
        args.extend(self.only.iter().map(|prefix| format!("--only={prefix}")));
        let mut args: Vec<OsString> = args.into_iter().map(OsString::from).collect();
        if let Some(json) = &self.json {
            args.push("--json".into());
            args.push(json.clone().into_os_string());
        }
        Ok(args)
    }
}

pub fn run(args: ConformanceArgs) -> anyhow::Result<ExitCode> {
    let helper_args = args.helper_args()?;
    let helper = find_helper()?;
    let status = Command::new(&helper)
        .args(&helper_args)
        .status()
        .with_context(|| format!("running {}", helper.display()))?;
    match status.code() {
        Some(0) => Ok(ExitCode::SUCCESS),
        Some(1) => Err(anyhow!(
            "the server failed cases; each FAIL line above says what the RFC requires"
        )),
        Some(NO_HTTP3) => Err(anyhow!(what_it_offers(&args))),
        _ => Err(anyhow!("{} stopped: {status}", helper.display())),
    }
}

/// The helper: `H3LAB_CONFORMANCE`, else beside this binary, else on the
/// PATH; or how to build it.
fn find_helper() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("H3LAB_CONFORMANCE") {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!("H3LAB_CONFORMANCE is {}, which is no file", path.display());
        }
        return Ok(path);
    }
    let beside = std::env::current_exe()?.with_file_name(HELPER);
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(HELPER));
    std::iter::once(beside)
        .chain(on_path)
        .find(|path| path.is_file())
        .ok_or_else(|| anyhow!(missing_helper(&std::env::current_exe().unwrap_or_default())))
}

fn missing_helper(this: &Path) -> String {
    let profile = match this.parent().and_then(Path::file_name) {
        Some(dir) if dir == "debug" => "",
        _ => " --release",
    };
    format!(
        "probe conformance runs the {HELPER} helper, which is not built (not beside {} nor on \
         the PATH, and H3LAB_CONFORMANCE is not set). It builds quiche and BoringSSL, which \
         need cmake and libclang (apt-get install cmake libclang-dev), in about 5 minutes on \
         2 cores; in the h3lab source tree: cargo build{profile} --manifest-path \
         crates/conformance/Cargo.toml --target-dir target",
        this.display()
    )
}

/// What a URL that did not answer over HTTP/3 offers instead, in a line.
fn what_it_offers(args: &ConformanceArgs) -> String {
    let url = args.url.clone().unwrap_or_default();
    let tls = TlsOptions {
        insecure: true,
        ca_file: None,
    };
    match check_offers(&[url], None, &args.resolve, &tls, args.timeout) {
        Ok(report) => format!(
            "what it offers: {report}; probe conformance needs h3 (a QUIC listener on the \
             URL's UDP port)"
        ),
        Err(err) => {
            format!("it did not answer over HTTP/3, and asking what it offers failed too: {err:#}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(flags: &[&str]) -> anyhow::Result<ConformanceArgs> {
        ConformanceArgs::parse_flags(flags.iter().copied())
    }

    fn text(args: Vec<OsString>) -> Vec<String> {
        args.into_iter()
            .map(|arg| arg.into_string().unwrap())
            .collect()
    }

    #[test]
    fn the_helper_gets_the_url_resolved() {
        let args = parse(&[
            "https://example.test:4433/x?y=1",
            "--resolve=example.test:4433:127.0.0.1",
            "--timeout=3s",
            "--only=qpack.",
            "--json=out.json",
        ])
        .unwrap();
        assert_eq!(
            ConformanceArgs::parse_flags(args.to_args().unwrap()).unwrap(),
            args
        );
        assert_eq!(
            text(args.helper_args().unwrap()),
            [
                "run",
                "--target=https://example.test:4433/x?y=1",
                "--address=127.0.0.1:4433",
                "--server-name=example.test",
                "--authority=example.test:4433",
                "--path=/x?y=1",
                "--timeout=3s",
                "--settle=200ms",
                "--only=qpack.",
                "--json",
                "out.json",
            ]
        );
        assert_eq!(
            text(parse(&["--list"]).unwrap().helper_args().unwrap()),
            ["list"]
        );
    }

    #[test]
    fn bad_urls_and_timeouts_are_refused_with_the_fix() {
        let err =
            |flags: &[&str]| format!("{:#}", parse(flags).unwrap().helper_args().unwrap_err());
        assert!(err(&["http://127.0.0.1:80/"]).contains("needs an https:// URL"));
        assert!(err(&["https://127.0.0.1:4433/", "--timeout=10ms"]).contains("at least 100ms"));
        assert!(err(&["ftp://x/"]).contains("scheme `ftp` is not supported"));
        assert!(parse(&[]).is_err());
    }

    #[test]
    fn a_missing_helper_is_named_with_how_to_build_it() {
        let message = missing_helper(Path::new("/src/h3lab/target/debug/h3lab"));
        assert!(message.contains("apt-get install cmake libclang-dev"));
        assert!(message.contains(
            "cargo build --manifest-path crates/conformance/Cargo.toml --target-dir target"
        ));
        let release = missing_helper(Path::new("/src/h3lab/target/release/h3lab"));
        assert!(release.contains("cargo build --release --manifest-path"));
    }
}
