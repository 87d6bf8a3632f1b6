//! The forwarding loop: read packets from each TUN device, pass them
//! through that direction's model, write them into the other device at
//! their time.
//!
//! One thread serves both directions. In a VM every sleep and wake-up
//! costs a thread about 20 us of CPU (timer set-up, interrupt, context
//! switch), more than forwarding a packet, so the number of wake-ups
//! decides what a busy path costs; one thread wakes once for a data
//! packet and the ACK going the other way. It owns both pipes outright
//! (no lock on the packet path) and copies the statistics out only when
//! asked ([`Snapshots`]) and when it stops.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::model::{
    gro_merge, gro_run_length, nat_translate, DirectionStats, Nanos, NatVerdict, Pipe, Transport,
    Way, PLAIN_HEADER, VNET_HEADER_LEN,
};

/// Largest read: the virtio-net header and a packet; the MTU is 1500 and
/// there are no offloads, so this leaves room without ever truncating.
const BUFFER_BYTES: usize = VNET_HEADER_LEN + 2048;
/// Most packets read from one device in one go before due packets get
/// written.
const READ_BATCH: usize = 256;
/// Longest sleep, so a stop request is noticed promptly.
const MAX_SLEEP: Nanos = 10_000_000;
/// Timer wake-ups come late by a roughly steady amount (tens of
/// microseconds in a VM, even at real-time priority); the thread learns it
/// and sets its alarm that much early. This caps the estimate, and so the
/// spin after an early wake-up.
const MAX_LATENESS: Nanos = 100_000;
/// The starting estimate of that lateness.
const INITIAL_LATENESS: Nanos = 20_000;
/// Deadlines this much beyond the lateness estimate are still spun for.
const SPIN_LIMIT: Nanos = 3_000;
/// A deadline this close while [`BUSY_IN_FLIGHT`] packets are in flight
/// means a busy link: the thread sleeps this long without waking for each
/// arrival, so packets in the meantime are stamped or written up to this
/// much (plus the wake-up lateness) late.
const COALESCE: Nanos = 50_000;
/// Packets in flight (both directions) from which a link counts as busy;
/// interactive exchanges (a request, its ACK, the response) stay below.
const BUSY_IN_FLIGHT: usize = 8;

/// A packet buffer as read from a TUN device, its virtio-net header then
/// the IP packet; recycled through a free list so the steady state
/// allocates nothing.
#[derive(Clone)]
pub struct Packet {
    bytes: Box<[u8]>,
    /// Header and packet.
    len: usize,
}

impl AsRef<[u8]> for Packet {
    /// The IP packet.
    fn as_ref(&self) -> &[u8] {
        &self.bytes[VNET_HEADER_LEN..self.len]
    }
}

impl AsMut<[u8]> for Packet {
    /// The IP packet.
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.bytes[VNET_HEADER_LEN..self.len]
    }
}

/// One direction: packets read from `from` cross `pipe` into `to`.
pub struct Lane {
    from: Arc<OwnedFd>,
    to: Arc<OwnedFd>,
    pipe: Pipe<Packet>,
    way: Way,
    /// Set once the path's NAT has rebound (see `model::nat`): from then on
    /// every packet is translated as it arrives.
    nat_rebound: Arc<AtomicBool>,
    /// The packets due in one pass, to be merged where they can be.
    due: Vec<Packet>,
    /// The merged packet being written.
    merged: Vec<u8>,
}

/// The statistics of both directions and the thread's own CPU time.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub up: DirectionStats,
    pub down: DirectionStats,
    pub cpu_s: f64,
    /// Counts the copies made, so a requester knows a fresh one arrived.
    serial: u64,
}

/// Statistics handed out by the forwarding thread on request: copying the
/// histograms takes long enough to make a packet late, so it happens
/// only when someone asks, and when the thread stops.
#[derive(Default)]
pub struct Snapshots {
    wanted: AtomicBool,
    latest: Mutex<Snapshot>,
    fresh: Condvar,
}

impl Snapshots {
    /// Asks the running thread for a copy and waits for it (it wakes at
    /// least every [`MAX_SLEEP`]); after `patience`, returns the last one.
    pub fn request(&self, patience: Duration) -> Snapshot {
        let latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        let serial = latest.serial;
        self.wanted.store(true, Ordering::Release);
        let (latest, _) = self
            .fresh
            .wait_timeout_while(latest, patience, |latest| latest.serial == serial)
            .unwrap_or_else(PoisonError::into_inner);
        latest.clone()
    }

    /// The last copy, without asking (the final one once the thread ended).
    pub fn latest(&self) -> Snapshot {
        self.latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn store(&self, lanes: &[Lane; 2]) {
        let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        latest.up.clone_from(lanes[0].pipe.direction().stats());
        latest.down.clone_from(lanes[1].pipe.direction().stats());
        latest.cpu_s = thread_cpu_seconds();
        latest.serial += 1;
        self.fresh.notify_all();
    }
}

pub struct Forwarder {
    /// Up (client to server, or edge to origin), then down.
    pub lanes: [Lane; 2],
    pub snapshots: Arc<Snapshots>,
    pub clock: Clock,
    pub stop: Arc<AtomicBool>,
}

/// Nanoseconds since the path started: the model's time.
#[derive(Clone, Copy)]
pub struct Clock(pub Instant);

impl Clock {
    fn now(self) -> Nanos {
        self.0.elapsed().as_nanos() as Nanos
    }
}

impl Forwarder {
    /// Forwards until stopped, then leaves the final statistics in
    /// [`Snapshots::latest`].
    pub fn run(mut self) {
        // Wake within microseconds of the deadline instead of the default
        // 50 us slack.
        let _ = nix::sys::prctl::set_timerslack(1);
        let mut priority = Priority::new();
        let mut free: Vec<Packet> = Vec::new();
        let mut lateness = INITIAL_LATENESS;
        while !self.stop.load(Ordering::Relaxed) {
            for lane in &mut self.lanes {
                lane.read_arrivals(&mut free, self.clock);
            }
            for lane in &mut self.lanes {
                lane.write_due(&mut free, self.clock);
            }
            if self.snapshots.wanted.swap(false, Ordering::Acquire) {
                self.snapshots.store(&self.lanes);
            }
            priority.follow(self.in_flight() > 0);
            self.wait(&mut lateness);
        }
        self.snapshots.store(&self.lanes);
    }

    fn next_due(&self) -> Option<Nanos> {
        self.lanes
            .iter()
            .filter_map(|lane| lane.pipe.next_due())
            .min()
    }

    /// Sleeps until a packet arrives or the next one is due. A deadline
    /// nearer than the timer's lateness is spun for (watching for
    /// arrivals). A near deadline with many packets in flight means a busy
    /// link: the thread sleeps [`COALESCE`] without waking for arrivals,
    /// then reads and writes everything in one batch, like a NIC
    /// coalescing interrupts. A farther deadline is slept for while
    /// watching for arrivals, with the alarm set early by the learned
    /// lateness and the rest spun, so sparse packets leave on time.
    fn wait(&self, lateness: &mut Nanos) {
        let Some(due) = self.next_due() else {
            self.poll(MAX_SLEEP);
            return;
        };
        let now = self.clock.now();
        let remaining = due.saturating_sub(now);
        if remaining <= COALESCE && self.in_flight() >= BUSY_IN_FLIGHT {
            sleep(COALESCE);
            return;
        }
        if remaining <= *lateness + SPIN_LIMIT {
            self.spin_until(due);
            return;
        }
        let nap = (remaining - *lateness).min(MAX_SLEEP);
        if self.poll(nap) {
            return; // a packet arrived: read it first
        }
        let woke = self.clock.now();
        let observed = woke.saturating_sub(now + nap).min(MAX_LATENESS);
        *lateness = (*lateness * 7 + observed) / 8;
        if due.saturating_sub(woke) <= *lateness + SPIN_LIMIT {
            self.spin_until(due);
        }
    }

    fn in_flight(&self) -> usize {
        self.lanes.iter().map(|lane| lane.pipe.len()).sum()
    }

    /// Spins until `due` or until a packet arrives.
    fn spin_until(&self, due: Nanos) {
        while self.clock.now() < due && !self.poll(0) {
            std::hint::spin_loop();
        }
    }

    /// Waits up to `nanos` for a packet to read on either device; true
    /// when one is waiting.
    fn poll(&self, nanos: Nanos) -> bool {
        let mut polls = self.lanes.each_ref().map(|lane| libc::pollfd {
            fd: lane.from.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        let timeout = timespec(nanos);
        // SAFETY: valid pollfds and a valid timespec for the call.
        unsafe { libc::ppoll(polls.as_mut_ptr(), 2, &timeout, std::ptr::null()) > 0 }
    }
}

impl Lane {
    pub fn new(
        from: Arc<OwnedFd>,
        to: Arc<OwnedFd>,
        pipe: Pipe<Packet>,
        way: Way,
        nat_rebound: Arc<AtomicBool>,
    ) -> Lane {
        Lane {
            from,
            to,
            pipe,
            way,
            nat_rebound,
            due: Vec::new(),
            merged: Vec::new(),
        }
    }

    /// Reads what is waiting (until EAGAIN or a full batch), each packet
    /// stamped with its own read time.
    fn read_arrivals(&mut self, free: &mut Vec<Packet>, clock: Clock) {
        for _ in 0..READ_BATCH {
            let mut packet = free.pop().unwrap_or_else(|| Packet {
                bytes: vec![0; BUFFER_BYTES].into_boxed_slice(),
                len: 0,
            });
            match super::tun::read_packet(&self.from, &mut packet.bytes) {
                Ok(Some(len)) if len > VNET_HEADER_LEN => {
                    packet.len = len;
                    if !self.passes_nat(&mut packet) {
                        free.push(packet);
                        continue;
                    }
                    let size = (len - VNET_HEADER_LEN) as u32;
                    let transport = Transport::of(packet.as_ref());
                    if let Some(dropped) = self.pipe.push(packet, size, transport, clock.now()) {
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

    /// False when the NAT has no mapping for the packet any more.
    fn passes_nat(&self, packet: &mut Packet) -> bool {
        !self.nat_rebound.load(Ordering::Relaxed)
            || nat_translate(packet.as_mut(), self.way) == NatVerdict::Forward
    }

    /// Writes the packets now due, consecutive ones of a flow merged into
    /// one as a receiving NIC would (see `model::gro`).
    fn write_due(&mut self, free: &mut Vec<Packet>, clock: Clock) {
        let now = clock.now();
        while let Some(packet) = self.pipe.pop_due(now) {
            self.due.push(packet);
        }
        let mut start = 0;
        while start < self.due.len() {
            let run = gro_run_length(&self.due[start..]);
            let written = if run == 1 {
                let packet = &mut self.due[start];
                packet.bytes[..VNET_HEADER_LEN].copy_from_slice(&PLAIN_HEADER);
                super::tun::write_packet(&self.to, &packet.bytes[..packet.len])
            } else {
                gro_merge(&self.due[start..start + run], &mut self.merged);
                super::tun::write_packet(&self.to, &self.merged)
            };
            if let Err(err) = written {
                tracing::debug!("writing to the TUN device: {err}");
            }
            start += run;
        }
        free.append(&mut self.due);
    }
}

fn sleep(nanos: Nanos) {
    let timeout = timespec(nanos);
    // SAFETY: no descriptors, a valid timespec for the call.
    unsafe { libc::ppoll(std::ptr::null_mut(), 0, &timeout, std::ptr::null()) };
}

fn timespec(nanos: Nanos) -> libc::timespec {
    libc::timespec {
        tv_sec: (nanos / 1_000_000_000) as libc::time_t,
        tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
    }
}

/// The thread's scheduling class, which follows the link. Real-time while
/// packets are in flight keeps their departures exact while other work
/// (builds, the peers themselves) saturates the CPUs; the loop sleeps in
/// ppoll between deadlines and spins only for the last microseconds before
/// one, so it cannot starve the machine. Normal while the link is empty:
/// Linux wakes a real-time thread on the CPU it last ran on, and on a VM
/// whose idle CPU has halted, the arrival that ends the idle waits for
/// the host to run it again (a 40 ms path's idle round trip measured
/// 40.8 to 41.1 ms when real-time throughout, 40.4 ms when normal).
struct Priority {
    real_time: bool,
    /// False once the system refused real-time (no CAP_SYS_NICE): best effort.
    allowed: bool,
}

impl Priority {
    fn new() -> Priority {
        Priority {
            real_time: false,
            allowed: true,
        }
    }

    /// Real-time when `busy`, normal when not; a system call only on a change.
    fn follow(&mut self, busy: bool) {
        if busy == self.real_time || (busy && !self.allowed) {
            return;
        }
        let (policy, priority) = match busy {
            true => (libc::SCHED_FIFO, 10),
            false => (libc::SCHED_OTHER, 0),
        };
        let param = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: pid 0 is the calling thread; `param` is valid for the call.
        if unsafe { libc::sched_setscheduler(0, policy, &param) } == 0 {
            self.real_time = busy;
        } else {
            self.allowed = false;
            tracing::debug!(
                "forwarding at normal priority: {}",
                std::io::Error::last_os_error()
            );
        }
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
