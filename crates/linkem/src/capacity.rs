//! The forwarding capacity benchmark behind `h3lab net bench`: UDP
//! datagrams blasted from the client namespace to the server namespace as
//! fast as the sender manages, counted by the link.

use std::fmt;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::{EmulatedPath, LinkSettings};

/// What the benchmark measured on the upstream (client to server) link.
#[derive(Debug, Clone, Serialize)]
pub struct CapacityReport {
    /// How long the sender blasted, in seconds.
    seconds: f64,
    /// Datagrams the sender handed to the kernel per second.
    offered_pps: f64,
    /// Packets the forwarder read from the client's TUN per second.
    read_pps: f64,
    /// Packets the forwarder wrote into the server's TUN per second.
    pub forwarded_pps: f64,
    /// Wire rate forwarded (1500-byte packets), in Mbit/s.
    pub forwarded_mbit_s: f64,
    /// The configured upstream rate in Mbit/s, if limited.
    pub configured_mbit_s: Option<f64>,
    /// Forwarding-thread CPU time per packet read, in microseconds (whole
    /// run, both directions).
    pub cpu_us_per_packet: f64,
    /// Share of one core the forwarding thread used.
    pub forwarder_cpu_share: f64,
    /// Upstream packets dropped because the queue was full.
    dropped_queue: u64,
    /// Upstream packets dropped by random loss.
    dropped_loss: u64,
}

/// One line: packets and megabits forwarded, and the CPU it took.
impl fmt::Display for CapacityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "forwarded {:.0} packets/s ({:.0} Mbit/s",
            self.forwarded_pps, self.forwarded_mbit_s
        )?;
        if let Some(rate) = self.configured_mbit_s {
            write!(f, " of {rate:.0} configured")?;
        }
        write!(
            f,
            "), {:.2} us CPU per packet, forwarder at {:.0} % of a core",
            self.cpu_us_per_packet,
            self.forwarder_cpu_share * 100.0
        )
    }
}

/// Full-size datagram payload: 1472 + 8 (UDP) + 20 (IP) = 1500 bytes.
const PAYLOAD: usize = 1472;

/// Blasts for `duration` through a path built from `settings`.
pub fn measure(settings: &LinkSettings, duration: Duration) -> anyhow::Result<CapacityReport> {
    let path = EmulatedPath::start(settings.build())?;
    let server_ip = path.server_ip();
    let sink = path.spawn_in_server(move || UdpSocket::bind((server_ip, 0)))?;
    let sink = sink
        .join()
        .map_err(|_| anyhow::anyhow!("binding the sink panicked"))??;
    let to = sink.local_addr()?;
    let done = Arc::new(AtomicBool::new(false));
    let draining = {
        let done = done.clone();
        sink.set_read_timeout(Some(Duration::from_millis(50)))?;
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while !done.load(Ordering::Relaxed) {
                let _ = sink.recv(&mut buf);
            }
        })
    };
    let start_stats = path.stats();
    let started = Instant::now();
    let sender = path.spawn_in_client(move || -> std::io::Result<u64> {
        let socket = UdpSocket::bind("0.0.0.0:0")?;
        let payload = [0u8; PAYLOAD];
        let mut sent = 0u64;
        let start = Instant::now();
        while start.elapsed() < duration {
            for _ in 0..256 {
                if socket.send_to(&payload, to).is_ok() {
                    sent += 1;
                }
            }
        }
        Ok(sent)
    })?;
    let sent = sender
        .join()
        .map_err(|_| anyhow::anyhow!("the sender panicked"))??;
    let seconds = started.elapsed().as_secs_f64();
    // Let packets in flight arrive before counting.
    std::thread::sleep(Duration::from_millis(100) + Duration::from_nanos(path.config().up.delay));
    let stats = path.shutdown()?;
    done.store(true, Ordering::Relaxed);
    let _ = draining.join();
    let up = &stats.up;
    let read = up.packets_in - start_stats.up.packets_in;
    let forwarded = up.packets_out - start_stats.up.packets_out;
    // The forwarding thread serves both directions; count what it read in
    // both (the sink sends nothing back, so this is nearly all upstream).
    let packets_read = stats.up.packets_in + stats.down.packets_in;
    Ok(CapacityReport {
        seconds,
        offered_pps: sent as f64 / seconds,
        read_pps: read as f64 / seconds,
        forwarded_pps: forwarded as f64 / seconds,
        forwarded_mbit_s: (up.bytes_out - start_stats.up.bytes_out) as f64 * 8.0 / seconds / 1e6,
        configured_mbit_s: settings.up.mean_bits_per_sec().map(|bits| bits / 1e6),
        cpu_us_per_packet: stats.forwarder_cpu_s * 1e6 / packets_read.max(1) as f64,
        forwarder_cpu_share: stats.forwarder_cpu_s / stats.elapsed_s,
        dropped_queue: up.dropped_queue,
        dropped_loss: up.dropped_loss,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_configured_rate_only_when_there_is_one() {
        let mut report = CapacityReport {
            seconds: 1.0,
            offered_pps: 100.0,
            read_pps: 100.0,
            forwarded_pps: 99.6,
            forwarded_mbit_s: 1.2,
            configured_mbit_s: None,
            cpu_us_per_packet: 1.234,
            forwarder_cpu_share: 0.25,
            dropped_queue: 0,
            dropped_loss: 0,
        };
        assert_eq!(
            report.to_string(),
            "forwarded 100 packets/s (1 Mbit/s), 1.23 us CPU per packet, forwarder at 25 % of a core"
        );
        report.configured_mbit_s = Some(10.0);
        assert!(report.to_string().contains("(1 Mbit/s of 10 configured)"));
    }
}
