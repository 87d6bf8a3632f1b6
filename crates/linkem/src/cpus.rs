//! Which CPUs each end of a plain-loopback run may use.
//!
//! On loopback the client and the server share one machine, and the
//! kernel's scheduler decides whether they share a core too. Two processes
//! that wake each other through a socket are put on the waker's core
//! (wake-affine placement), so a request-response or a download that
//! ping-pongs between them runs both ends on one core while the others idle.
//! Which protocol that hurts depends on how much work each end does per
//! wake-up, not on the protocol over a network. So loopback runs keep the
//! server on the first half of the allowed CPUs and the client on the rest,
//! as two machines would be. An emulated path is left to the scheduler: its
//! emulator needs cores of its own.

use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// The CPUs of each end, as listed by the kernel (`sched_getaffinity`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSplit {
    /// CPUs the server side runs on.
    pub server: Vec<usize>,
    /// CPUs the client side runs on.
    pub client: Vec<usize>,
}

impl CpuSplit {
    /// `allowed` split in two: the server takes the first half, rounded up.
    /// `None` with fewer than two CPUs, which cannot be split.
    pub fn of(allowed: &[usize]) -> Option<CpuSplit> {
        if allowed.len() < 2 {
            return None;
        }
        let (server, client) = allowed.split_at(allowed.len().div_ceil(2));
        Some(CpuSplit {
            server: server.to_vec(),
            client: client.to_vec(),
        })
    }

    /// The split of the CPUs this process may use, or why there is none.
    pub fn of_this_process() -> Result<CpuSplit, String> {
        let allowed = allowed_cpus().map_err(|err| format!("cannot read the CPU set: {err}"))?;
        CpuSplit::of(&allowed).ok_or_else(|| format!("{} CPU, nothing to split", allowed.len()))
    }

    /// For the record: "server on CPU 0, client on CPU 1".
    pub fn describe(&self) -> String {
        format!(
            "server on {}, client on {}",
            cpu_list(&self.server),
            cpu_list(&self.client)
        )
    }
}

/// Makes `command` start on `cpus` only.
pub(crate) fn pin(cpus: &[usize], command: &mut Command) {
    let cpus = cpus.to_vec();
    // SAFETY: the closure only fills a CPU set on the stack and makes one
    // system call, both async-signal-safe.
    unsafe {
        command.pre_exec(move || set_affinity(&cpus));
    }
}

/// What a run on plain loopback records of its CPU placement.
pub fn loopback_placement() -> String {
    match CpuSplit::of_this_process() {
        Ok(split) => split.describe(),
        Err(why) => format!("shared ({why})"),
    }
}

fn cpu_list(cpus: &[usize]) -> String {
    let noun = if cpus.len() == 1 { "CPU" } else { "CPUs" };
    let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
    format!("{noun} {}", list.join(","))
}

fn allowed_cpus() -> nix::Result<Vec<usize>> {
    let set = sched_getaffinity(Pid::from_raw(0))?;
    Ok((0..CpuSet::count())
        .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
        .collect())
}

fn set_affinity(cpus: &[usize]) -> std::io::Result<()> {
    let mut set = CpuSet::new();
    for &cpu in cpus {
        set.set(cpu)?;
    }
    sched_setaffinity(Pid::from_raw(0), &set)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_cpus_give_one_to_each_end() {
        let split = CpuSplit::of(&[0, 1]).unwrap();
        assert_eq!(split.server, vec![0]);
        assert_eq!(split.client, vec![1]);
        assert_eq!(split.describe(), "server on CPU 0, client on CPU 1");
    }

    #[test]
    fn an_odd_count_gives_the_server_the_larger_half() {
        let split = CpuSplit::of(&[2, 5, 7]).unwrap();
        assert_eq!(split.server, vec![2, 5]);
        assert_eq!(split.client, vec![7]);
        assert_eq!(split.describe(), "server on CPUs 2,5, client on CPU 7");
    }

    #[test]
    fn one_cpu_cannot_be_split() {
        assert_eq!(CpuSplit::of(&[3]), None);
        assert_eq!(CpuSplit::of(&[]), None);
    }

    #[test]
    fn a_pinned_child_runs_only_on_its_side() {
        let Ok(split) = CpuSplit::of_this_process() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI machines have two CPUs or more"
            );
            eprintln!("skipped: this machine has one CPU");
            return;
        };
        for cpus in [&split.server, &split.client] {
            let mut command = Command::new("sh");
            command.args(["-c", "grep Cpus_allowed_list /proc/self/status"]);
            pin(cpus, &mut command);
            let output = command.output().unwrap();
            let text = String::from_utf8_lossy(&output.stdout);
            let listed = text.split(':').nth(1).unwrap().trim();
            assert_eq!(&listed_cpus(listed), cpus, "{text}");
        }
    }

    /// "0-2,5" as [0, 1, 2, 5].
    fn listed_cpus(list: &str) -> Vec<usize> {
        list.split(',')
            .flat_map(|range| match range.split_once('-') {
                Some((a, b)) => (a.parse().unwrap()..=b.parse().unwrap()).collect::<Vec<_>>(),
                None => vec![range.parse().unwrap()],
            })
            .collect()
    }
}
