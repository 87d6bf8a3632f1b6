//! The forwarding loop of one direction: read packets from one TUN device,
//! pass them through the model, write them into the other at their time.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::model::{Nanos, Pipe};

/// Largest packet read; the MTU is 1500 and there are no offloads, so this
/// leaves room without ever truncating.
const BUFFER_BYTES: usize = 2048;
/// Packets read per wakeup before due packets get written.
const READ_BATCH: usize = 64;
/// Longest sleep, so a stop request is noticed promptly.
const MAX_SLEEP: Nanos = 10_000_000;
/// How long before a deadline the thread stops sleeping and spins.
const SPIN_WINDOW: Nanos = 100_000;
/// How often the thread's CPU time is copied into the stats.
const CPU_UPDATE_EVERY: Nanos = 50_000_000;

/// A packet buffer; recycled through a free list so the steady state
/// allocates nothing.
#[derive(Clone)]
pub struct Packet {
    bytes: Box<[u8]>,
    len: usize,
}

pub struct Forwarder {
    pub from: Arc<OwnedFd>,
    pub to: Arc<OwnedFd>,
    pub pipe: Arc<Mutex<Pipe<Packet>>>,
    pub epoch: Instant,
    pub stop: Arc<AtomicBool>,
}

impl Forwarder {
    pub fn run(self) {
        // Wake within microseconds of the deadline instead of the default
        // 50 us slack.
        let _ = nix::sys::prctl::set_timerslack(1);
        raise_priority();
        let mut free: Vec<Packet> = Vec::new();
        let mut last_cpu_update = 0;
        while !self.stop.load(Ordering::Relaxed) {
            let next_due = self.pipe.lock().expect("pipe lock").next_due();
            self.wait(next_due);
            let mut pipe = self.pipe.lock().expect("pipe lock");
            self.read_batch(&mut pipe, &mut free);
            self.write_due(&mut pipe, &mut free);
            let now = self.now();
            if now - last_cpu_update >= CPU_UPDATE_EVERY {
                pipe.direction_mut().stats_mut().forwarder_cpu_s = thread_cpu_seconds();
                last_cpu_update = now;
            }
        }
        self.pipe
            .lock()
            .expect("pipe lock")
            .direction_mut()
            .stats_mut()
            .forwarder_cpu_s = thread_cpu_seconds();
    }

    fn now(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    /// Sleeps until a packet arrives or the next one is due. Timer wakeups
    /// come tens of microseconds late on a busy machine, so the last
    /// stretch before a deadline is spun (still watching for arrivals).
    fn wait(&self, next_due: Option<Nanos>) {
        let Some(due) = next_due else {
            self.poll(MAX_SLEEP);
            return;
        };
        let remaining = due.saturating_sub(self.now());
        if remaining > SPIN_WINDOW {
            self.poll((remaining - SPIN_WINDOW).min(MAX_SLEEP));
            return;
        }
        while self.now() < due && !self.poll(0) {
            std::hint::spin_loop();
        }
    }

    /// Waits up to `nanos` for a packet to read; true when one is waiting.
    fn poll(&self, nanos: Nanos) -> bool {
        let mut poll = libc::pollfd {
            fd: self.from.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let timeout = libc::timespec {
            tv_sec: (nanos / 1_000_000_000) as libc::time_t,
            tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: one valid pollfd and a valid timespec for the call.
        unsafe { libc::ppoll(&mut poll, 1, &timeout, std::ptr::null()) > 0 }
    }

    /// Reads what is waiting, each packet stamped with its own read time.
    fn read_batch(&self, pipe: &mut Pipe<Packet>, free: &mut Vec<Packet>) {
        for _ in 0..READ_BATCH {
            let mut packet = free.pop().unwrap_or_else(|| Packet {
                bytes: vec![0; BUFFER_BYTES].into_boxed_slice(),
                len: 0,
            });
            match super::tun::read_packet(&self.from, &mut packet.bytes) {
                Ok(Some(len)) if len > 0 => {
                    packet.len = len;
                    if let Some(dropped) = pipe.push(packet, len as u32, self.now()) {
                        free.push(dropped);
                    }
                }
                Ok(_) => {
                    free.push(packet);
                    return;
                }
                Err(err) => {
                    tracing::warn!("reading from the TUN device: {err}");
                    free.push(packet);
                    return;
                }
            }
        }
    }

    fn write_due(&self, pipe: &mut Pipe<Packet>, free: &mut Vec<Packet>) {
        let now = self.now();
        while let Some(packet) = pipe.pop_due(now) {
            if let Err(err) = super::tun::write_packet(&self.to, &packet.bytes[..packet.len]) {
                tracing::debug!("writing to the TUN device: {err}");
            }
            free.push(packet);
        }
    }
}

/// Best effort: real-time priority keeps packet timing exact while other
/// work (builds, the peers themselves) saturates the CPUs. The loop sleeps
/// in ppoll between deadlines, so it cannot starve the machine.
fn raise_priority() {
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: pid 0 is the calling thread; `param` is valid for the call.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        tracing::debug!(
            "forwarding at normal priority: {}",
            std::io::Error::last_os_error()
        );
    }
}

fn thread_cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec for the call to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } != 0 {
        return 0.0;
    }
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}
