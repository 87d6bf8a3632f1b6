//! Whether a test that needs something from the machine can run: root,
//! unprivileged user namespaces with an open TUN device, Chromium, Caddy,
//! nginx, NSS's certutil, iptables, a real documentation site, the shared
//! traces, a Kubernetes schema validator. One rule everywhere: in CI
//! (`CI=true`) a
//! missing precondition fails the test, naming what is missing and how to
//! provide it (`.ci/run` provides all of them); on a developer's machine the
//! test prints that message and skips.
//!
//! Not for fixtures or test logic: only the decision whether a test runs.

#![warn(missing_docs)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Flags every headless Chromium run in the tests needs on these machines:
/// no sandbox (root), no GPU, and no background traffic to the internet.
pub const CHROMIUM_HEADLESS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// True when running under CI (`CI=true` or `CI=1`), where nothing skips.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| value == "true" || value == "1")
}

/// Root, for network namespaces, veth and TUN devices.
pub fn root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    runs(root.then_some(()).ok_or_else(|| {
        "needs root for network namespaces (run the tests as root, as .ci/run does)".to_string()
    }))
    .is_some()
}

/// Unprivileged user namespaces that can hold a TUN device: the kernel
/// allows them, and `/dev/net/tun` is readable and writable by everyone
/// (a device of mode 0600 cannot be opened from inside one).
pub fn unprivileged_namespaces() -> bool {
    runs(unprivileged_namespaces_problem().map_or(Ok(()), Err)).is_some()
}

fn unprivileged_namespaces_problem() -> Option<String> {
    let disabled =
        |path: &str| std::fs::read_to_string(path).is_ok_and(|value| value.trim() == "0");
    if disabled("/proc/sys/user/max_user_namespaces") {
        return Some(
            "unprivileged user namespaces are disabled: `sysctl -w user.max_user_namespaces=15000`"
                .to_string(),
        );
    }
    if disabled("/proc/sys/kernel/unprivileged_userns_clone") {
        return Some(
            "unprivileged user namespaces are disabled: `sysctl -w kernel.unprivileged_userns_clone=1`"
                .to_string(),
        );
    }
    match std::fs::metadata("/dev/net/tun") {
        Err(err) => Some(format!(
            "/dev/net/tun: {err} (load the tun module: `modprobe tun`)"
        )),
        Ok(meta) if meta.permissions().mode() & 0o006 != 0o006 => Some(format!(
            "/dev/net/tun is mode {:o}, so other users cannot open it: `chmod 0666 /dev/net/tun` \
             (.ci/run does)",
            meta.permissions().mode() & 0o777
        )),
        Ok(_) => None,
    }
}

/// Chromium's path.
pub fn chromium() -> Option<PathBuf> {
    runs(find(
        "H3LAB_CHROMIUM",
        &["chromium", "chromium-browser"],
        &[],
        "Chromium is not installed: `apt-get install chromium` (.ci/run does), or set H3LAB_CHROMIUM",
    ))
}

/// Firefox's path (Debian's `firefox-esr`).
pub fn firefox() -> Option<PathBuf> {
    runs(find(
        "H3LAB_FIREFOX",
        &["firefox", "firefox-esr"],
        &[],
        "Firefox is not installed: `apt-get install firefox-esr` (.ci/run does), or set \
         H3LAB_FIREFOX",
    ))
}

/// NSS's `certutil`, which adds a private certificate authority to the
/// database Chromium trusts on Linux (`$HOME/.pki/nssdb`).
pub fn certutil() -> Option<PathBuf> {
    runs(find(
        "H3LAB_CERTUTIL",
        &["certutil"],
        &[],
        "NSS's certutil is not installed: `apt-get install libnss3-tools` (.ci/run does), or set \
         H3LAB_CERTUTIL",
    ))
}

/// `iptables`, which a field run's emulated profiles need for NAT.
pub fn iptables() -> Option<PathBuf> {
    runs(find(
        "H3LAB_IPTABLES",
        &["iptables"],
        &[PathBuf::from("/usr/sbin/iptables")],
        "iptables is not installed: `apt-get install iptables` (.ci/run does)",
    ))
}

/// Caddy's path: on PATH or where `go install` puts it.
pub fn caddy() -> Option<PathBuf> {
    let go_bin = std::env::var_os("HOME").map(|home| Path::new(&home).join("go/bin/caddy"));
    let fallbacks: Vec<PathBuf> = go_bin.into_iter().collect();
    runs(find(
        "H3LAB_CADDY",
        &["caddy"],
        &fallbacks,
        "Caddy is not installed: `go install github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9` \
         (.ci/run does), or set H3LAB_CADDY",
    ))
}

/// nginx's path.
pub fn nginx() -> Option<PathBuf> {
    runs(find(
        "H3LAB_NGINX",
        &["nginx"],
        &[PathBuf::from("/usr/sbin/nginx")],
        "nginx is not installed: `apt-get install nginx` (.ci/run does), or set H3LAB_NGINX",
    ))
}

/// `probe conformance`'s helper, `h3lab-conformance` (crates/conformance,
/// which builds BoringSSL): `H3LAB_CONFORMANCE`, or built into the
/// workspace's target directory beside `h3lab`.
pub fn conformance_helper(h3lab: &std::path::Path) -> Option<PathBuf> {
    runs(find(
        "H3LAB_CONFORMANCE",
        &[],
        &[h3lab.with_file_name("h3lab-conformance")],
        "h3lab-conformance is not built: `cargo build --manifest-path \
         crates/conformance/Cargo.toml --target-dir target` (.ci/run does), or set \
         H3LAB_CONFORMANCE",
    ))
}

/// nginx 1.26 with its own HTTP/3: Debian 13's build, under its own
/// loader (`scripts/trixie-servers.sh`).
pub fn nginx_h3() -> Option<PathBuf> {
    runs(find(
        "H3LAB_NGINX_H3",
        &[],
        &[PathBuf::from("/opt/h3lab-ci/trixie/bin/nginx")],
        "nginx with HTTP/3 is not set up: run `scripts/trixie-servers.sh nginx` (.ci/run does), \
         or set H3LAB_NGINX_H3",
    ))
}

/// HAProxy 3.0 with its own QUIC: Debian 13's build, as [`nginx_h3`].
pub fn haproxy() -> Option<PathBuf> {
    runs(find(
        "H3LAB_HAPROXY",
        &[],
        &[PathBuf::from("/opt/h3lab-ci/trixie/bin/haproxy")],
        "HAProxy with QUIC is not set up: run `scripts/trixie-servers.sh haproxy` (.ci/run \
         does), or set H3LAB_HAPROXY",
    ))
}

/// The peers `scripts/peer-setup.sh` installs, to run: their folder
/// (H3LAB_PEERS_DIR or /opt/h3lab-ci/peers) and their names, when every
/// one is there. The [`QUICK_PEERS`] always, which CI installs; the
/// [`BUILT_PEERS`] too with H3LAB_ALL_PEERS=1: each builds BoringSSL, 12
/// minutes in all on 2 cores, so CI's run leaves them to the long run.
pub fn peers() -> Option<(PathBuf, Vec<&'static str>)> {
    let dir = std::env::var_os("H3LAB_PEERS_DIR")
        .map_or_else(|| PathBuf::from("/opt/h3lab-ci/peers"), PathBuf::from);
    let all = std::env::var_os("H3LAB_ALL_PEERS").is_some_and(|v| v == "1");
    let wanted: Vec<&str> = match all {
        true => [QUICK_PEERS, BUILT_PEERS].concat(),
        false => QUICK_PEERS.to_vec(),
    };
    let missing: Vec<&str> = (wanted.iter().copied())
        .filter(|name| !dir.join(format!(".{name}.stamp")).is_file())
        .collect();
    let setup = match all {
        true => "all",
        false => "quick",
    };
    runs(match missing.is_empty() {
        true => Ok((dir, wanted)),
        false => Err(format!(
            "{} not installed in {}: run `scripts/peer-setup.sh {setup}` (.ci/run runs \
             `quick`), or set H3LAB_PEERS_DIR",
            missing.join(", "),
            dir.display()
        )),
    })
}

/// What `scripts/peer-setup.sh quick` installs: each downloads, or builds
/// Go in about a minute.
pub const QUICK_PEERS: &[&str] = &["bun", "hypercorn", "peregrine", "picoquic", "kwik", "xnet"];

/// What `scripts/peer-setup.sh built` builds from source: tquic_server and
/// scripts/quiche-server, each with BoringSSL.
pub const BUILT_PEERS: &[&str] = &["tquic", "quiche"];

/// ngtcp2's example HTTP/3 server, Debian's `gtlsserver`.
pub fn gtlsserver() -> Option<PathBuf> {
    runs(find(
        "H3LAB_GTLSSERVER",
        &["gtlsserver"],
        &[PathBuf::from("/usr/sbin/gtlsserver")],
        "ngtcp2's server is not installed: `apt-get install ngtcp2-server` (.ci/run does), or \
         set H3LAB_GTLSSERVER",
    ))
}

/// `kubernetes-validate` (PyPI), which checks a manifest against the
/// Kubernetes API's published JSON schemas, bundled for each version.
pub fn kubernetes_validate() -> Option<PathBuf> {
    runs(find(
        "H3LAB_KUBERNETES_VALIDATE",
        &["kubernetes-validate"],
        &[PathBuf::from(
            "/opt/h3lab-ci/kubernetes-validate/bin/kubernetes-validate",
        )],
        "kubernetes-validate is not installed: `python3 -m venv /opt/h3lab-ci/kubernetes-validate \
         && /opt/h3lab-ci/kubernetes-validate/bin/pip install kubernetes-validate==1.37.0` \
         (.ci/run does), or set H3LAB_KUBERNETES_VALIDATE",
    ))
}

/// A real static documentation site, for loading real pages: Debian's
/// `cargo-doc` package installs rustdoc's HTML for Cargo's dependencies
/// (`syn`, `quote`, `proc_macro2`, ...; about 24 MB, 860 files of HTML,
/// CSS, JavaScript, woff2 fonts, SVG and PNG) in `/usr/share/doc/cargo/doc`.
/// Its pages link with relative paths and need nothing outside it.
/// `H3LAB_DOC_SITE` points at another copy.
pub fn doc_site() -> Option<PathBuf> {
    let dir = std::env::var_os("H3LAB_DOC_SITE")
        .map_or_else(|| PathBuf::from("/usr/share/doc/cargo/doc"), PathBuf::from);
    let found = dir.join("syn/index.html").is_file().then_some(dir.clone());
    runs(found.ok_or_else(|| {
        format!(
            "the documentation site is not in {}: `apt-get install cargo-doc` (.ci/run does), \
             or set H3LAB_DOC_SITE",
            dir.display()
        )
    }))
}

/// The Rust book (mdBook) as rustup's `rust-docs` component installs it,
/// beside the toolchain (`$(rustc --print sysroot)/share/doc/rust/html/book`):
/// a real page of web fonts, stylesheets and scripts. `H3LAB_RUST_BOOK`
/// points at another copy.
pub fn rust_book() -> Option<PathBuf> {
    let dir = std::env::var_os("H3LAB_RUST_BOOK")
        .map(PathBuf::from)
        .or_else(|| {
            let output = std::process::Command::new("rustc")
                .args(["--print", "sysroot"])
                .output()
                .ok()?;
            let sysroot = String::from_utf8(output.stdout).ok()?;
            Some(Path::new(sysroot.trim()).join("share/doc/rust/html/book"))
        });
    let found = dir.clone().filter(|dir| dir.join("index.html").is_file());
    runs(found.ok_or_else(|| {
        format!(
            "the Rust book is not in {}: `rustup component add rust-docs`, or set H3LAB_RUST_BOOK",
            dir.map_or("the toolchain's docs".into(), |dir| dir
                .display()
                .to_string())
        )
    }))
}

/// `tests/har-recorder/record.js`, with its playwright-core installed:
/// a real Chromium records a HAR through it.
pub fn har_recorder() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/har-recorder");
    let installed = dir
        .join("node_modules/playwright-core/package.json")
        .is_file();
    let found = installed.then(|| dir.join("record.js"));
    runs(found.ok_or_else(|| {
        "playwright-core for the HAR recorder is not installed: `npm --prefix tests/har-recorder ci` (.ci/run does)"
            .to_string()
    }))
}

/// A file of `../shared` (the traces, the studies) beside the repository.
pub fn shared_file(relative: &str) -> Option<PathBuf> {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    let path = shared.join(relative);
    let found = path.exists().then_some(path.clone());
    runs(found.ok_or_else(|| {
        format!(
            "{} is missing: check out the shared folder beside the repository",
            path.display()
        )
    }))
}

/// `Ok` runs the test; `Err` fails it in CI and skips it elsewhere.
fn runs<T>(precondition: Result<T, String>) -> Option<T> {
    match precondition {
        Ok(value) => Some(value),
        Err(problem) => {
            let thread = std::thread::current();
            let test = thread.name().unwrap_or("this test");
            assert!(!in_ci(), "{test} cannot run in CI: {problem}");
            eprintln!("skipping {test}: {problem}");
            None
        }
    }
}

/// The program `$env_var` names, else the first of `names` on PATH, else
/// the first executable of `fallbacks`.
fn find(
    env_var: &str,
    names: &[&str],
    fallbacks: &[PathBuf],
    missing: &str,
) -> Result<PathBuf, String> {
    if let Some(named) = h3lab_supervise::named_by_env(env_var) {
        return named;
    }
    (h3lab_supervise::on_path(names))
        .or_else(|| {
            (fallbacks.iter())
                .find(|path| h3lab_supervise::is_executable(path))
                .cloned()
        })
        .ok_or_else(|| missing.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_met_precondition_runs_the_test() {
        assert_eq!(runs::<u8>(Ok(7)), Some(7));
    }

    #[test]
    fn a_binary_is_found_on_path_before_the_fallbacks() {
        let found = find("H3LAB_TESTENV_UNSET", &["sh"], &[], "missing").unwrap();
        assert!(found.ends_with("sh"), "{}", found.display());
        let missing = find(
            "H3LAB_TESTENV_UNSET",
            &["no-such-binary-h3lab"],
            &[],
            "nope",
        );
        assert_eq!(missing.unwrap_err(), "nope");
    }
}
