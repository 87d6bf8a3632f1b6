//! When a read's bytes arrived, by the kernel's clock, for `--linger`:
//! a loop that holds out before it waits reads responses later than they
//! came, so it times them by the receive timestamp TCP gives each read
//! (SO_TIMESTAMPNS: when the last segment the read returns arrived). On h1,
//! with one response in flight per connection, that is the response's
//! last byte; on h2 a read holding several responses times each by the
//! last one's, an upper bound within the hold.
//!
//! [`ArrivalClock`] turns the kernel's wall-clock stamp into the loop's
//! monotonic `Instant` and counts the reads it could and could not time;
//! [`recv_stamped`] is the one syscall.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};
use nix::sys::time::TimeSpec;

/// A stamp this much older than the read is taken for a clock step, not
/// an arrival: the read is timed as it is read, and counted untimed.
const OLDEST_STAMP: Duration = Duration::from_secs(1);

/// Converts the kernel's receive stamps to `Instant`s and counts them.
pub(crate) struct ArrivalClock {
    /// One reading of both clocks: the wall clock's stamps are placed
    /// against it, so a later step of the wall clock moves no arrival
    /// by more than [`OLDEST_STAMP`] (beyond which it is not believed).
    wall: SystemTime,
    mono: Instant,
    /// Reads timed by their receive stamp.
    pub(crate) timed: u64,
    /// Reads without one (or with one not believed), timed when read.
    pub(crate) untimed: u64,
    /// recvmsg's control buffer, room for one timestamp.
    pub(crate) control: Vec<u8>,
}

impl ArrivalClock {
    pub(crate) fn new() -> ArrivalClock {
        ArrivalClock::at(SystemTime::now(), Instant::now())
    }

    fn at(wall: SystemTime, mono: Instant) -> ArrivalClock {
        ArrivalClock {
            wall,
            mono,
            timed: 0,
            untimed: 0,
            control: nix::cmsg_space!(TimeSpec),
        }
    }

    /// When a read's bytes arrived: its stamp on the loop's clock, or
    /// `read_at` (when the read ran) without a stamp to believe. A stamp
    /// after `read_at` (the two clocks read a few ns apart) is `read_at`.
    pub(crate) fn arrival(&mut self, stamp: Option<SystemTime>, read_at: Instant) -> Instant {
        let arrived = stamp.and_then(|stamp| match stamp.duration_since(self.wall) {
            Ok(after) => self.mono.checked_add(after),
            Err(before) => self.mono.checked_sub(before.duration()),
        });
        match arrived {
            Some(at) if at + OLDEST_STAMP >= read_at => {
                self.timed += 1;
                at.min(read_at)
            }
            _ => {
                self.untimed += 1;
                read_at
            }
        }
    }
}

/// Asks the kernel to stamp each read of `socket` with its arrival.
pub(crate) fn stamp_reads(socket: &impl AsFd) -> io::Result<()> {
    setsockopt(socket, sockopt::ReceiveTimestampns, &true).map_err(io::Error::from)
}

/// One read of `socket` into `buf`: its length and its receive stamp, if
/// the kernel gave one.
pub(crate) fn recv_stamped(
    socket: &impl AsRawFd,
    buf: &mut [u8],
    control: &mut [u8],
) -> io::Result<(usize, Option<SystemTime>)> {
    let mut iov = [io::IoSliceMut::new(buf)];
    let message = recvmsg::<()>(
        socket.as_raw_fd(),
        &mut iov,
        Some(control),
        MsgFlags::MSG_DONTWAIT,
    )
    .map_err(io::Error::from)?;
    let stamp = message.cmsgs().ok().and_then(|mut cmsgs| {
        cmsgs.find_map(|cmsg| match cmsg {
            ControlMessageOwned::ScmTimestampns(spec) => Some(
                SystemTime::UNIX_EPOCH + Duration::new(spec.tv_sec() as u64, spec.tv_nsec() as u32),
            ),
            _ => None,
        })
    });
    Ok((message.bytes, stamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_stamp_lands_on_the_loops_clock_and_counts_as_timed() {
        let (wall, mono) = (SystemTime::now(), Instant::now());
        let mut clock = ArrivalClock::at(wall, mono);
        let read_at = mono + 10 * MS;
        assert_eq!(clock.arrival(Some(wall + 7 * MS), read_at), mono + 7 * MS);
        assert_eq!((clock.timed, clock.untimed), (1, 0));
    }

    #[test]
    fn a_stamp_before_the_clocks_were_read_lands_before_them() {
        let (wall, mono) = (SystemTime::now(), Instant::now() + 10 * MS);
        let mut clock = ArrivalClock::at(wall, mono);
        assert_eq!(clock.arrival(Some(wall - 3 * MS), mono), mono - 3 * MS);
        assert_eq!(clock.timed, 1);
    }

    #[test]
    fn a_stamp_after_the_read_is_the_read() {
        let (wall, mono) = (SystemTime::now(), Instant::now());
        let mut clock = ArrivalClock::at(wall, mono);
        assert_eq!(clock.arrival(Some(wall + 5 * MS), mono + MS), mono + MS);
        assert_eq!(clock.timed, 1);
    }

    #[test]
    fn no_stamp_or_one_from_a_clock_step_is_the_read_and_counts_as_untimed() {
        let (wall, mono) = (SystemTime::now(), Instant::now() + Duration::from_secs(5));
        let mut clock = ArrivalClock::at(wall, mono);
        let read_at = mono + MS;
        assert_eq!(clock.arrival(None, read_at), read_at);
        let stepped = wall - Duration::from_secs(2);
        assert_eq!(clock.arrival(Some(stepped), read_at), read_at);
        assert_eq!((clock.timed, clock.untimed), (0, 2));
    }

    #[test]
    fn a_loopback_read_is_stamped_with_its_last_segments_arrival() {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        stamp_reads(&client).unwrap();
        server.write_all(b"first").unwrap();
        std::thread::sleep(20 * MS);
        let before_second = SystemTime::now();
        server.write_all(b"second").unwrap();
        let after_second = SystemTime::now();
        std::thread::sleep(20 * MS);
        let mut clock = ArrivalClock::new();
        let mut buf = [0; 64];
        let (read, stamp) = recv_stamped(&client, &mut buf, &mut clock.control).unwrap();
        assert_eq!(&buf[..read], b"firstsecond");
        let stamp = stamp.expect("TCP stamps a read once SO_TIMESTAMPNS is on");
        assert!(
            stamp >= before_second && stamp <= after_second,
            "{stamp:?} is not the second write's arrival, between {before_second:?} and \
             {after_second:?}"
        );
    }
}
