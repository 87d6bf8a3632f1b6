//! Named network namespaces (`ip netns`), entering them, and removing the
//! ones a dead h3lab process left behind.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::Context;
use nix::sched::{setns, CloneFlags};

use super::{tool, tun, userns};

/// Prefix of every namespace h3lab creates: `h3lab-<pid>-<n>-c|s|o`.
pub const PREFIX: &str = "h3lab-";
/// The TUN device's name inside each namespace.
pub const DEVICE: &str = "h3lab0";
/// The server namespace's second TUN device, the edge's end of the origin
/// leg (see `EmulatedPath::add_origin_leg`).
pub const ORIGIN_LEG_DEVICE: &str = "h3lab1";

/// Kernel queue of packets the TUN device holds until h3lab reads them.
/// Drops there would be invisible to the link statistics, so it is deep
/// enough to ride out a scheduling hiccup at 1 Gbit/s.
const TX_QUEUE_PACKETS: u32 = 10_000;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// The names of one path's namespaces: one base, `h3lab-<pid>-<n>`, and
/// a suffix each, so [`cleanup_stale`] finds all of them by the pid.
pub struct Names {
    /// `-c`.
    pub client: String,
    /// `-s`.
    pub server: String,
    /// `-o`, used only once the path gets an origin leg.
    pub origin: String,
}

/// Fresh, process-unique names for a path's namespaces.
pub fn fresh_names() -> Names {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let base = format!("{PREFIX}{}-{n}", std::process::id());
    Names {
        client: format!("{base}-c"),
        server: format!("{base}-s"),
        origin: format!("{base}-o"),
    }
}

/// A namespace with its TUN device; deleted on drop.
pub struct Namespace {
    name: String,
    handle: File,
    /// The user namespace owning it, when made without root (then it has
    /// no name under /run/netns and vanishes with its last descriptor).
    user: Option<OwnedFd>,
    tun: OwnedFd,
}

/// Loopback up; the TUN device up with `address`/24.
fn configuration(address: &str) -> String {
    format!("link set lo up\n{}", device_configuration(DEVICE, address))
}

/// TUN device `device` up with `address`/24.
fn device_configuration(device: &str, address: &str) -> String {
    format!(
        "link set {device} mtu 1500 txqueuelen {TX_QUEUE_PACKETS} up\n\
         addr add {address}/24 dev {device}\n"
    )
}

fn ip(args: &[&str], batch: Option<&str>) -> anyhow::Result<()> {
    run_ip(Command::new("ip").args(args), batch)
}

/// Runs an `ip` command, feeding it `batch` on stdin, with the time bound
/// and process group of [`tool::run`].
pub fn run_ip(command: &mut Command, batch: Option<&str>) -> anyhow::Result<()> {
    tool::run(&tool::IP, command, batch).map(drop)
}

/// What lets `ip netns add` succeed: root, and as root the capabilities
/// and the writable `/run` a container may withhold.
fn netns_fix() -> &'static str {
    if nix::unistd::geteuid().is_root() {
        "as root this needs CAP_SYS_ADMIN and CAP_NET_ADMIN and a writable /run \
         (where `ip netns` keeps its namespaces): a container must be run privileged"
    } else {
        "`h3lab net` needs root or CAP_NET_ADMIN: run it with sudo"
    }
}

/// Moves the calling thread into the namespace.
pub fn enter(handle: impl AsFd) -> nix::Result<()> {
    setns(handle, CloneFlags::CLONE_NEWNET)
}

impl Namespace {
    /// Creates namespace `name` with loopback up and a TUN device holding
    /// `address`/24 (its peer is the other end of the path).
    pub fn create(name: &str, address: &str) -> anyhow::Result<Namespace> {
        // A missing or hanging `ip` is its own error, with its own fix.
        let own_error = |err: &anyhow::Error| err.is::<tool::Hung>() || !tool::IP.installed();
        ip(&["netns", "add", name], None).map_err(|err| match own_error(&err) {
            true => err.context(format!("cannot create network namespace {name}")),
            false => anyhow::anyhow!(
                "cannot create network namespace {name} ({err:#}); {}",
                netns_fix()
            ),
        })?;
        // From here on, dropping `partial` deletes the namespace.
        let partial = Deleter(name.to_string());
        let handle = File::open(format!("/run/netns/{name}"))
            .with_context(|| format!("cannot open namespace {name}"))?;
        let tun = create_tun_inside(&handle, DEVICE).map_err(|err| {
            anyhow::anyhow!(
                "cannot create the TUN device in namespace {name}: {err:#}; load the module \
                 (`modprobe tun`), and in a container pass the host's /dev/net/tun in"
            )
        })?;
        ip(&["-n", name, "-batch", "-"], Some(&configuration(address)))?;
        std::mem::forget(partial);
        Ok(Namespace {
            name: name.to_string(),
            handle,
            user: None,
            tun,
        })
    }

    /// Like [`Namespace::create`] without root: the namespace belongs to a
    /// new user namespace in which the caller is root. `name` is only a
    /// label (nothing appears in `ip netns list`).
    pub fn create_unprivileged(name: &str, address: &str) -> anyhow::Result<Namespace> {
        let handles = userns::create(DEVICE)?;
        let (user, net) = (handles.user.as_raw_fd(), handles.net.as_raw_fd());
        let mut configure = Command::new("ip");
        // SAFETY: `enter` makes only setns(2) calls, on descriptors that
        // stay open until the child has been waited for.
        unsafe {
            configure.pre_exec(move || userns::enter(user, net));
        }
        run_ip(
            configure.args(["-batch", "-"]),
            Some(&configuration(address)),
        )
        .with_context(|| format!("cannot configure namespace {name}"))?;
        Ok(Namespace {
            name: name.to_string(),
            handle: File::from(handles.net),
            user: Some(handles.user),
            tun: handles.tun,
        })
    }

    /// Adds a second TUN device, `device`, holding `address`/24 (a subnet
    /// of its own: its peer is the other end of another link) to this
    /// namespace. The device lives as long as the returned descriptor.
    /// Needs root (a named namespace).
    pub fn add_tun(&self, device: &str, address: &str) -> anyhow::Result<OwnedFd> {
        let name = &self.name;
        anyhow::ensure!(
            self.user.is_none(),
            "adding a device to namespace {name} needs root (it was made without it)"
        );
        let tun = create_tun_inside(&self.handle, device)
            .with_context(|| format!("cannot create TUN device {device} in namespace {name}"))?;
        ip(
            &["-n", name, "-batch", "-"],
            Some(&device_configuration(device, address)),
        )
        .with_context(|| format!("cannot configure TUN device {device} in namespace {name}"))?;
        Ok(tun)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn handle(&self) -> &File {
        &self.handle
    }

    pub fn tun(&self) -> &OwnedFd {
        &self.tun
    }

    /// The owning user namespace, for namespaces made without root.
    pub fn user(&self) -> Option<&OwnedFd> {
        self.user.as_ref()
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        if self.user.is_none() {
            delete(&self.name);
        }
    }
}

/// Deletes a namespace when dropped (for half-built ones).
struct Deleter(String);

impl Drop for Deleter {
    fn drop(&mut self) {
        delete(&self.0);
    }
}

fn delete(name: &str) {
    if let Err(err) = ip(&["netns", "delete", name], None) {
        tracing::warn!("removing namespace {name}: {err:#}");
    }
}

/// TUN devices are created in the namespace of the calling thread, so a
/// short-lived thread enters the namespace, creates TUN device `device`
/// and returns the fd. IPv6 is turned off on the device so router
/// solicitations and MLD reports do not cross the emulated link.
fn create_tun_inside(handle: &File, device: &str) -> anyhow::Result<OwnedFd> {
    let handle = handle.try_clone()?;
    let device = device.to_string();
    std::thread::spawn(move || -> anyhow::Result<OwnedFd> {
        enter(&handle)?;
        let fd = tun::open(&device)?;
        // Best effort: absent when the kernel has no IPv6.
        let _ = std::fs::write(
            format!("/proc/sys/net/ipv6/conf/{device}/disable_ipv6"),
            "1",
        );
        Ok(fd)
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the namespace thread panicked"))?
}

/// Adds (`add`) or removes (`del`) `address`/24 on the TUN device of
/// namespace `name`.
pub fn change_address(name: &str, action: &str, address: &str) -> anyhow::Result<()> {
    let prefix = format!("{address}/24");
    ip(&["-n", name, "addr", action, &prefix, "dev", DEVICE], None)
}

/// Makes namespace `name` answer every packet to `prefix` (`a.b.c.0/24`)
/// with "host unreachable", whatever other routes it has (a default route
/// included: the more specific route wins).
pub fn block_route(name: &str, prefix: &str) -> anyhow::Result<()> {
    ip(
        &["-n", name, "route", "replace", "unreachable", prefix],
        None,
    )
}

/// The `ip` arguments that set the initial congestion window (`initcwnd`)
/// and the initial receive window (`initrwnd`) of the route to `address`'s
/// /24, in segments: Linux takes both from the route, not from a socket
/// option, so every TCP connection of the namespace starts with them. The
/// receive window matters too: a Linux receiver advertises about 10
/// segments at first, which would hold a larger `initcwnd` back to 10.
pub fn initial_window_route(address: &str, segments: u32) -> Vec<String> {
    let octets: Vec<&str> = address.split('.').take(3).collect();
    let prefix = format!("{}.0/24", octets.join("."));
    let segments = segments.to_string();
    [
        "route", "replace", &prefix, "dev", DEVICE, "proto", "kernel", "scope", "link", "src",
        address, "initcwnd", &segments, "initrwnd", &segments,
    ]
    .map(str::to_string)
    .to_vec()
}

/// Makes deleting the device's first address promote the next one in
/// its subnet (by default the kernel deletes them all, and the route
/// with them).
pub fn promote_secondaries(handle: &File) -> anyhow::Result<()> {
    let setting = format!("/proc/sys/net/ipv4/conf/{DEVICE}/promote_secondaries");
    write_sysctl(handle, &setting, "1")
}

/// Writes `value` to the `/proc/sys` file `setting` of the namespace
/// behind `handle` (a thread enters it: each namespace has its own).
pub fn write_sysctl(handle: &File, setting: &str, value: &str) -> anyhow::Result<()> {
    let handle = handle.try_clone()?;
    let (setting, value) = (setting.to_string(), value.to_string());
    std::thread::spawn(move || -> anyhow::Result<()> {
        enter(&handle)?;
        std::fs::write(&setting, value).with_context(|| format!("cannot write {setting}"))
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the namespace thread panicked"))?
}

/// The pid in an h3lab namespace name, if it is one.
pub fn owner_pid(name: &str) -> Option<i32> {
    name.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()
}

/// Whether process `pid` exists.
pub fn is_alive(pid: i32) -> bool {
    // Signal 0 only checks that the process exists.
    let probe = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None);
    matches!(probe, Ok(()) | Err(nix::errno::Errno::EPERM))
}

/// Removes h3lab namespaces whose owning process is gone (their TUN
/// devices died with that process). Returns the names removed.
pub fn cleanup_stale() -> anyhow::Result<Vec<String>> {
    let entries = match std::fs::read_dir("/run/netns") {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(err).context("cannot list /run/netns"),
    };
    let mut removed = Vec::new();
    for entry in entries {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if owner_pid(&name).is_some_and(|pid| !is_alive(pid)) {
            ip(&["netns", "delete", &name], None)?;
            removed.push(name);
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_prefix_pid_and_a_counter() {
        let Names {
            client,
            server,
            origin,
        } = fresh_names();
        let client2 = fresh_names().client;
        let pid = std::process::id() as i32;
        assert!(client.ends_with("-c") && server.ends_with("-s") && origin.ends_with("-o"));
        assert_eq!(client.strip_suffix("-c"), origin.strip_suffix("-o"));
        assert_ne!(client, client2);
        assert_eq!(owner_pid(&client), Some(pid));
        assert_eq!(owner_pid(&origin), Some(pid));
        assert_eq!(owner_pid("other-123-0-c"), None);
        assert!(is_alive(pid));
    }
}
