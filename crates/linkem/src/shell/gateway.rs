//! The server end of a path as a gateway to this machine's own network,
//! as Mahimahi's shells are: the client's traffic crosses the emulated
//! link, leaves the server namespace through a veth pair, and is
//! masqueraded twice (to the veth's address in the namespace, then to the
//! machine's own address in the root namespace), so it reaches whatever
//! this machine reaches, and replies find their way back.
//!
//! The root namespace's part (the veth's host end, three iptables rules
//! and `net.ipv4.ip_forward`) outlives a killed process, so every rule
//! carries a comment naming its owner's pid, and [`cleanup_stale`] removes
//! those of dead owners. `ip_forward` is turned on only if it was off, and
//! turned off again when the last gateway of any h3lab process is gone.

use std::fs::File;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::fcntl::{Flock, FlockArg};

use super::netns::{self, run_ip, Namespace, DEVICE};
use super::tool::{self, IPTABLES};

/// The veth's end inside the server namespace.
const OUTSIDE_DEVICE: &str = "h3lab-out";
/// Comment prefix of every iptables rule a gateway adds in the root namespace.
const RULE_PREFIX: &str = "h3lab-gw-";
/// Root's `ip_forward` before the first gateway turned it on; present
/// only while some gateway is up (or its owner was killed).
const FORWARD_MARKER: &str = "/run/h3lab-ip-forward-was-off";
/// Serialises gateways' set-up and removal across processes.
const LOCK_FILE: &str = "/run/h3lab-gateway.lock";
const IP_FORWARD: &str = "/proc/sys/net/ipv4/ip_forward";
/// How long to wait for another h3lab's gateway set-up or removal: a few
/// `ip` and `iptables` commands, each bounded by [`tool::TOOL_TIMEOUT`].
const LOCK_PATIENCE: Duration = Duration::from_secs(15);

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A gateway's root-namespace part; removed on drop.
pub(crate) struct Gateway {
    host_device: String,
    subnet: String,
    comment: String,
}

impl Gateway {
    /// Routes everything the client namespace sends beyond the path out of
    /// the server namespace, to this machine's network. Needs root.
    pub(crate) fn open(client: &Namespace, server: &Namespace) -> anyhow::Result<Gateway> {
        anyhow::ensure!(
            IPTABLES.installed(),
            "a path out to this machine's network (a real target behind an emulated profile) \
             needs iptables for its NAT, and there is none on PATH: install it \
             (apt-get install iptables)"
        );
        let lock = lock()?;
        let n = COUNTER.fetch_add(1, Ordering::Relaxed) % 1000;
        let pid = std::process::id();
        let (host_ip, inside_ip) = free_subnet(pid, n)?;
        let gateway = Gateway {
            host_device: format!("h3g{pid}-{n}"),
            subnet: subnet_of(host_ip),
            comment: format!("{RULE_PREFIX}{pid}-{n}"),
        };
        let set_up = gateway.set_up(client, server, host_ip, inside_ip);
        // Unlocked before a half-made gateway drops: its `Drop` takes the
        // lock again to remove what was made.
        drop(lock);
        set_up.map(|()| gateway)
    }

    fn set_up(
        &self,
        client: &Namespace,
        server: &Namespace,
        host_ip: Ipv4Addr,
        inside_ip: Ipv4Addr,
    ) -> anyhow::Result<()> {
        let gateway = self;
        ip(
            &[
                "link",
                "add",
                &gateway.host_device,
                "type",
                "veth",
                "peer",
                "name",
                OUTSIDE_DEVICE,
                "netns",
                server.name(),
            ],
            None,
        )
        .context("cannot create the veth pair that takes the path out to this machine's network")?;
        ip(
            &[
                "addr",
                "add",
                &format!("{host_ip}/30"),
                "dev",
                &gateway.host_device,
            ],
            None,
        )?;
        ip(&["link", "set", &gateway.host_device, "up"], None)?;
        let inside = format!(
            "addr add {inside_ip}/30 dev {OUTSIDE_DEVICE}\n\
             link set {OUTSIDE_DEVICE} up\n\
             route add default via {host_ip}\n"
        );
        ip(&["-n", server.name(), "-batch", "-"], Some(&inside))?;
        ip(
            &[
                "-n",
                client.name(),
                "route",
                "add",
                "default",
                "dev",
                DEVICE,
            ],
            None,
        )?;
        netns::write_sysctl(server.handle(), IP_FORWARD, "1")?;
        iptables_in(
            server.name(),
            &[
                "-t",
                "nat",
                "-A",
                "POSTROUTING",
                "-o",
                OUTSIDE_DEVICE,
                "-j",
                "MASQUERADE",
            ],
        )?;
        turn_forwarding_on()?;
        for rule in gateway.root_rules() {
            iptables(&with_action("-A", &rule))?;
        }
        Ok(())
    }

    /// The root namespace's rules: masquerade what leaves the gateway's
    /// subnet, and let it through a FORWARD chain whose policy may drop.
    fn root_rules(&self) -> [Vec<String>; 3] {
        let rule = |words: &[&str]| -> Vec<String> {
            let comment = ["-m", "comment", "--comment", &self.comment];
            words
                .iter()
                .chain(&comment)
                .map(|w| w.to_string())
                .collect()
        };
        [
            rule(&[
                "-t",
                "nat",
                "POSTROUTING",
                "-s",
                &self.subnet,
                "-j",
                "MASQUERADE",
            ]),
            rule(&[
                "-t",
                "filter",
                "FORWARD",
                "-s",
                &self.subnet,
                "-j",
                "ACCEPT",
            ]),
            rule(&[
                "-t",
                "filter",
                "FORWARD",
                "-d",
                &self.subnet,
                "-j",
                "ACCEPT",
            ]),
        ]
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _lock =
            lock().inspect_err(|err| tracing::warn!("removing the gateway unlocked: {err:#}"));
        for rule in self.root_rules() {
            if let Err(err) = iptables(&with_action("-D", &rule)) {
                tracing::warn!("removing the gateway's rule: {err:#}");
            }
        }
        // The namespace's end goes with the namespace; the host's end may
        // still be there if the namespace is not deleted yet.
        let _ = ip(&["link", "delete", &self.host_device], None);
        if let Err(err) = restore_forwarding() {
            tracing::warn!("restoring ip_forward: {err:#}");
        }
    }
}

/// `words` (`-t TABLE CHAIN rest…`) with the action before the chain.
fn with_action(action: &str, words: &[String]) -> Vec<String> {
    let mut out = words[..2].to_vec();
    out.push(action.to_string());
    out.extend_from_slice(&words[2..]);
    out
}

/// A /30 in 198.19.0.0/16 (beside the paths' 198.18.0.0/24, in the
/// benchmarking range) that no interface here uses: (host end, inside end).
fn free_subnet(pid: u32, n: u32) -> anyhow::Result<(Ipv4Addr, Ipv4Addr)> {
    const SLOTS: u32 = 1 << 14;
    let used = tool::run(
        &tool::IP,
        Command::new("ip").args(["-4", "-o", "addr", "show"]),
        None,
    )?;
    let start = pid.wrapping_mul(31).wrapping_add(n) % SLOTS;
    (0..SLOTS)
        .map(|i| (start + i) % SLOTS)
        .map(|slot| {
            let base = u32::from(Ipv4Addr::new(198, 19, 0, 0)) + slot * 4;
            (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2))
        })
        .find(|(host, _)| !used.contains(&format!("inet {host}/")))
        .context("no free /30 left in 198.19.0.0/16 for a gateway")
}

fn subnet_of(host: Ipv4Addr) -> String {
    format!("{}/30", Ipv4Addr::from(u32::from(host) - 1))
}

fn ip(args: &[&str], batch: Option<&str>) -> anyhow::Result<()> {
    run_ip(Command::new("ip").args(args), batch)
}

fn iptables(args: &[String]) -> anyhow::Result<()> {
    run_iptables(Command::new("iptables").args(args))
}

fn iptables_in(namespace: &str, args: &[&str]) -> anyhow::Result<()> {
    run_iptables(
        Command::new("ip")
            .args(["netns", "exec", namespace, "iptables"])
            .args(args),
    )
}

fn run_iptables(command: &mut Command) -> anyhow::Result<()> {
    tool::run(&IPTABLES, command, None).map(drop)
}

/// The lock that serialises gateways across processes, waited for at most
/// [`LOCK_PATIENCE`].
fn lock() -> anyhow::Result<Flock<File>> {
    let mut file = File::create(LOCK_FILE).with_context(|| {
        format!(
            "cannot open {LOCK_FILE}: an emulated path needs root and a writable /run \
             (run it with sudo)"
        )
    })?;
    let deadline = Instant::now() + LOCK_PATIENCE;
    loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => return Ok(lock),
            Err((returned, nix::errno::Errno::EWOULDBLOCK)) if Instant::now() < deadline => {
                file = returned;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => anyhow::bail!(
                "another process has held {LOCK_FILE} for over {} s while setting up or \
                 removing an emulated path; if no other h3lab runs (`pgrep -a h3lab`), that \
                 process is stuck: end it",
                LOCK_PATIENCE.as_secs()
            ),
            Err((_, err)) => anyhow::bail!("cannot lock {LOCK_FILE}: {err}"),
        }
    }
}

fn turn_forwarding_on() -> anyhow::Result<()> {
    let now =
        std::fs::read_to_string(IP_FORWARD).with_context(|| format!("cannot read {IP_FORWARD}"))?;
    if now.trim() == "0" {
        std::fs::write(FORWARD_MARKER, "0\n")
            .with_context(|| format!("cannot write {FORWARD_MARKER}"))?;
        std::fs::write(IP_FORWARD, "1").with_context(|| format!("cannot write {IP_FORWARD}"))?;
    }
    Ok(())
}

/// Turns `ip_forward` off again if a gateway turned it on and none is
/// left. Called with the lock held.
fn restore_forwarding() -> anyhow::Result<()> {
    if !std::path::Path::new(FORWARD_MARKER).exists() || !root_rules()?.is_empty() {
        return Ok(());
    }
    std::fs::write(IP_FORWARD, "0").with_context(|| format!("cannot write {IP_FORWARD}"))?;
    std::fs::remove_file(FORWARD_MARKER).with_context(|| format!("cannot remove {FORWARD_MARKER}"))
}

/// Every gateway rule in the root namespace, as `iptables -S` prints it,
/// with its table.
fn root_rules() -> anyhow::Result<Vec<(String, String)>> {
    let mut rules = Vec::new();
    // No iptables: no gateway ever ran here.
    if !IPTABLES.installed() {
        return Ok(rules);
    }
    for table in ["nat", "filter"] {
        let listed = tool::run(
            &IPTABLES,
            Command::new("iptables").args(["-t", table, "-S"]),
            None,
        );
        let text = match listed {
            Ok(text) => text,
            Err(err) if err.is::<tool::Hung>() => return Err(err),
            // A table the kernel lacks holds no gateway rule either.
            Err(_) => continue,
        };
        rules.extend(
            text.lines()
                .filter(|line| line.starts_with("-A ") && line.contains(RULE_PREFIX))
                .map(|line| (table.to_string(), line.to_string())),
        );
    }
    Ok(rules)
}

/// The pid in a gateway rule's comment.
fn rule_owner(rule: &str) -> Option<i32> {
    let at = rule.find(RULE_PREFIX)? + RULE_PREFIX.len();
    rule[at..].split('-').next()?.parse().ok()
}

/// Removes the root-namespace rules and veth ends of gateways whose owner
/// is dead, and turns `ip_forward` off again if they had turned it on.
pub(crate) fn cleanup_stale(is_alive: impl Fn(i32) -> bool) -> anyhow::Result<()> {
    let _lock = lock()?;
    for (table, rule) in root_rules()? {
        if rule_owner(&rule).is_some_and(|pid| !is_alive(pid)) {
            let words: Vec<String> = rule
                .replacen("-A ", "-D ", 1)
                .split_whitespace()
                .map(str::to_string)
                .collect();
            let mut args = vec!["-t".to_string(), table];
            args.extend(words);
            iptables(&args)?;
        }
    }
    restore_forwarding()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_name_their_owner_and_take_the_action_before_the_chain() {
        let gateway = Gateway {
            host_device: "h3g12-0".into(),
            subnet: "198.19.0.0/30".into(),
            comment: format!("{RULE_PREFIX}4321-7"),
        };
        let [nat, ..] = gateway.root_rules();
        assert_eq!(
            with_action("-A", &nat).join(" "),
            "-t nat -A POSTROUTING -s 198.19.0.0/30 -j MASQUERADE -m comment --comment h3lab-gw-4321-7"
        );
        let printed =
            "-A POSTROUTING -s 198.19.0.0/30 -m comment --comment h3lab-gw-4321-7 -j MASQUERADE";
        assert_eq!(rule_owner(printed), Some(4321));
        assert_eq!(rule_owner("-A FORWARD -j ACCEPT"), None);
        assert_eq!(subnet_of(Ipv4Addr::new(198, 19, 0, 5)), "198.19.0.4/30");
    }
}
