//! `h3lab probe conformance URL`: the URL resolved, and the run of the
//! `h3lab-conformance` helper (crates/conformance), which holds the suite.
//! The helper is a project of its own because it builds BoringSSL; this
//! side finds it, or says how to build it, and names what a URL offers when
//! it does not answer over HTTP/3. A bench cell of kind `conformance` runs
//! this command too.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use h3lab_client::{ResolveRule, Scheme, Target, TlsOptions};

use crate::offer::check_offers;

/// The helper's name, beside this binary or on the PATH.
const HELPER: &str = "h3lab-conformance";
/// The helper's exit status when the server did not answer over HTTP/3.
const NO_HTTP3: i32 = 3;

/// What a run of the suite asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct ConformanceOptions {
    /// The https:// URL each case's valid requests ask for.
    pub url: String,
    /// `HOST:PORT:ADDR` pins.
    pub resolve: Vec<ResolveRule>,
    /// How long a case waits for any answer.
    pub timeout: Duration,
    /// How long after the follow-up answer a case still listens.
    pub settle: Duration,
    /// Case id prefixes to run (all when empty).
    pub only: Vec<String>,
    /// Where the JSON report goes.
    pub json: Option<PathBuf>,
}

impl ConformanceOptions {
    /// The helper's `run` arguments, with the URL resolved.
    fn helper_args(&self) -> anyhow::Result<Vec<OsString>> {
        let url = &self.url;
        if url.is_empty() {
            bail!("no URL; give the server's https:// URL, e.g. https://127.0.0.1:4433/");
        }
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

/// Runs the suite; an error when a case failed, the server offers no
/// HTTP/3 (with what it offers), or the helper could not run.
pub fn run(options: &ConformanceOptions) -> anyhow::Result<()> {
    let helper_args = options.helper_args()?;
    let helper = find_helper()?;
    let status = Command::new(&helper)
        .args(&helper_args)
        .status()
        .with_context(|| format!("running {}", helper.display()))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(1) => Err(anyhow!(
            "the server failed cases; each FAIL line above says what the RFC requires"
        )),
        Some(NO_HTTP3) => Err(anyhow!(what_it_offers(options))),
        _ => Err(anyhow!("{} stopped: {status}", helper.display())),
    }
}

/// Prints the cases, their RFC sections and what each expects.
pub fn list() -> anyhow::Result<()> {
    let helper = find_helper()?;
    let status = Command::new(&helper)
        .arg("list")
        .status()
        .with_context(|| format!("running {}", helper.display()))?;
    anyhow::ensure!(status.success(), "{} list: {status}", helper.display());
    Ok(())
}

/// The helper: `H3LAB_CONFORMANCE`, else beside this binary, else on the
/// PATH; or how to build it.
fn find_helper() -> anyhow::Result<PathBuf> {
    if let Some(named) = h3lab_supervise::named_by_env("H3LAB_CONFORMANCE") {
        return named.map_err(anyhow::Error::msg);
    }
    let this = std::env::current_exe()?;
    let beside = this.with_file_name(HELPER);
    match h3lab_supervise::is_executable(&beside) {
        true => Ok(beside),
        false => h3lab_supervise::on_path(&[HELPER]).ok_or_else(|| anyhow!(missing_helper(&this))),
    }
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
fn what_it_offers(options: &ConformanceOptions) -> String {
    let tls = TlsOptions {
        insecure: true,
        ca_file: None,
    };
    let urls = [options.url.clone()];
    match check_offers(&urls, None, &options.resolve, &tls, options.timeout) {
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

    fn options(url: &str) -> ConformanceOptions {
        ConformanceOptions {
            url: url.to_string(),
            resolve: Vec::new(),
            timeout: Duration::from_secs(2),
            settle: Duration::from_millis(200),
            only: Vec::new(),
            json: None,
        }
    }

    fn helper_args(options: &ConformanceOptions) -> anyhow::Result<Vec<String>> {
        Ok(options
            .helper_args()?
            .into_iter()
            .map(|arg| arg.into_string().unwrap())
            .collect())
    }

    #[test]
    fn the_helper_gets_the_url_resolved() {
        let options = ConformanceOptions {
            resolve: vec!["example.test:4433:127.0.0.1".parse().unwrap()],
            timeout: Duration::from_secs(3),
            only: vec!["qpack.".to_string()],
            json: Some(PathBuf::from("out.json")),
            ..options("https://example.test:4433/x?y=1")
        };
        assert_eq!(
            helper_args(&options).unwrap(),
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
    }

    #[test]
    fn bad_urls_and_timeouts_are_refused_with_the_fix() {
        let err = |options: ConformanceOptions| format!("{:#}", helper_args(&options).unwrap_err());
        assert!(err(options("http://127.0.0.1:80/")).contains("needs an https:// URL"));
        let hasty = ConformanceOptions {
            timeout: Duration::from_millis(10),
            ..options("https://127.0.0.1:4433/")
        };
        assert!(err(hasty).contains("at least 100ms"));
        assert!(err(options("ftp://x/")).contains("scheme `ftp` is not supported"));
        assert!(err(options("")).contains("no URL"));
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
