//! The client namespace's DNS resolver: `/etc/netns/NAME/resolv.conf`,
//! the file `ip netns exec NAME` mounts over `/etc/resolv.conf`, so a
//! program run there asks the path's own DNS server (Chromium's built-in
//! resolver reads it, and finds the site's `HTTPS` records).
//!
//! The programs linkem starts itself enter the namespace with setns(2),
//! which mounts nothing, so they get the same mount from
//! [`mount_over_resolv_conf`], in a mount namespace of their own. Threads
//! of this process cannot (a multithreaded process cannot leave its mount
//! namespace): code running on them is given the server's address.

use std::ffi::{CStr, CString};
use std::io::ErrorKind;
use std::net::Ipv4Addr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::netns;

/// Where `ip netns exec` looks for a namespace's own `/etc` files.
const NETNS_ETC: &str = "/etc/netns";
const FILE_NAME: &str = "resolv.conf";
/// The file every resolver reads, which the namespace's own is mounted over.
pub const RESOLV_CONF: &CStr = c"/etc/resolv.conf";

/// A namespace's `resolv.conf` naming one DNS server; the file and its
/// directory are removed on drop.
pub struct ResolverFile {
    dir: PathBuf,
    /// The file's path, ready for mount(2) in a child before exec.
    file: CString,
}

impl ResolverFile {
    /// Writes `/etc/netns/<namespace>/resolv.conf` with `nameserver`.
    pub fn write(namespace: &str, nameserver: Ipv4Addr) -> anyhow::Result<ResolverFile> {
        write_under(Path::new(NETNS_ETC), namespace, nameserver)
    }

    /// The file, as mount(2) takes it.
    pub fn c_path(&self) -> &CStr {
        &self.file
    }
}

fn write_under(base: &Path, namespace: &str, nameserver: Ipv4Addr) -> anyhow::Result<ResolverFile> {
    let dir = base.join(namespace);
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create {} (it needs root)", dir.display()))?;
    let path = dir.join(FILE_NAME);
    let file = CString::new(path.as_os_str().as_bytes())
        .context("a namespace's resolver path holds a NUL byte")?;
    // From here on, dropping `written` removes what was made.
    let written = ResolverFile { dir, file };
    std::fs::write(&path, resolv_conf(nameserver))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(written)
}

/// The file's text: one name server, and nothing else to try.
fn resolv_conf(nameserver: Ipv4Addr) -> String {
    format!(
        "# h3lab: the DNS server at the server end of the emulated path\nnameserver {nameserver}\n"
    )
}

impl Drop for ResolverFile {
    fn drop(&mut self) {
        let file = Path::new(std::ffi::OsStr::from_bytes(self.file.as_bytes()));
        for removed in [std::fs::remove_file(file), std::fs::remove_dir(&self.dir)] {
            if let Err(err) = removed.or_else(ignore_missing) {
                tracing::warn!(
                    "removing the resolver file in {}: {err}",
                    self.dir.display()
                );
            }
        }
    }
}

fn ignore_missing(err: std::io::Error) -> std::io::Result<()> {
    match err.kind() {
        ErrorKind::NotFound => Ok(()),
        _ => Err(err),
    }
}

/// Removes the resolver directories of h3lab namespaces whose owning
/// process is gone.
pub fn cleanup_stale(is_alive: impl Fn(i32) -> bool) -> anyhow::Result<()> {
    cleanup_stale_under(Path::new(NETNS_ETC), is_alive)
}

fn cleanup_stale_under(base: &Path, is_alive: impl Fn(i32) -> bool) -> anyhow::Result<()> {
    let entries = match std::fs::read_dir(base) {
        Ok(entries) => entries,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err).with_context(|| format!("cannot list {}", base.display())),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if netns::owner_pid(&name).is_some_and(|pid| !is_alive(pid)) {
            std::fs::remove_dir_all(entry.path())
                .with_context(|| format!("cannot remove {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Puts the calling process in a mount namespace of its own and mounts
/// `file` over `/etc/resolv.conf` there, as `ip netns exec` does. Marking
/// every mount a slave first keeps the new mount out of this machine's
/// namespace. For a child between fork and exec: it only makes
/// unshare(2) and mount(2) calls, on strings made before the fork.
pub fn mount_over_resolv_conf(file: &CStr) -> std::io::Result<()> {
    let check = |status: libc::c_int| match status {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    };
    let none = std::ptr::null();
    // SAFETY: the strings are NUL-terminated and outlive the calls; null
    // filesystem types and data are allowed for these mount flags.
    unsafe {
        check(libc::unshare(libc::CLONE_NEWNS))?;
        check(libc::mount(
            c"none".as_ptr(),
            c"/".as_ptr(),
            none,
            libc::MS_SLAVE | libc::MS_REC,
            none.cast(),
        ))?;
        check(libc::mount(
            file.as_ptr(),
            RESOLV_CONF.as_ptr(),
            none,
            libc::MS_BIND,
            none.cast(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "linkem-resolver-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_file_names_the_server_and_goes_with_its_directory() {
        let base = scratch();
        let file = write_under(&base, "h3lab-1-0-c", Ipv4Addr::new(198, 18, 0, 2)).unwrap();
        let path = base.join("h3lab-1-0-c/resolv.conf");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("\nnameserver 198.18.0.2\n"), "{text}");
        assert_eq!(file.c_path().to_str().unwrap(), path.to_str().unwrap());
        drop(file);
        assert!(!base.join("h3lab-1-0-c").exists());
        std::fs::remove_dir(base).unwrap();
    }

    #[test]
    fn only_dead_owners_directories_are_removed() {
        let base = scratch();
        for name in ["h3lab-10-0-c", "h3lab-20-0-c", "other"] {
            std::fs::create_dir_all(base.join(name)).unwrap();
            std::fs::write(base.join(name).join(FILE_NAME), "nameserver 1.2.3.4\n").unwrap();
        }
        cleanup_stale_under(&base, |pid| pid == 20).unwrap();
        assert!(!base.join("h3lab-10-0-c").exists());
        assert!(base.join("h3lab-20-0-c").exists() && base.join("other").exists());
        std::fs::remove_dir_all(base).unwrap();
    }
}
