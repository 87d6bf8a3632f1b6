//! When a read's bytes arrived, by the kernel's clock, for `--linger`:
//! a loop that holds out before it waits reads responses later than they
//! came, so it times them by the receive timestamp TCP gives each read
//! (SO_TIMESTAMPNS: when the last segment the read returns arrived). On h1,
//! with one response in flight per connection, that is the response's
//! last byte; what a read holds before its end (several h2 responses, the
//! head read with the body) gets an upper bound within the hold. A FIN
//! has no stamp: a response it ends is timed when read.
//!
//! [`ArrivalClock`] reads with `recvmsg`, turns the kernel's wall-clock
//! stamp into the loop's monotonic `Instant` by its age at the read, and
//! counts the reads it could and could not time.

use std::io;
use std::net::UdpSocket;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};
use nix::sys::time::TimeSpec;

/// A stamp older than this at its read is taken for a clock step, not an
/// arrival (a hold is at most 50 ms): the read is timed as it is read,
/// and counted untimed.
const OLDEST_STAMP: Duration = Duration::from_secs(1);

/// How long [`ArrivalClock::new`] waits for the kernel to start stamping.
const SWITCH_ON_LIMIT: Duration = Duration::from_millis(100);

/// Turns the kernel's receive stamps into `Instant`s and counts them.
pub(crate) struct ArrivalClock {
    /// Reads timed by their receive stamp.
    pub(crate) timed: u64,
    /// Reads without one (or with one not believed), timed when read.
    pub(crate) untimed: u64,
    /// recvmsg's control buffer, room for one timestamp.
    control: Vec<u8>,
    /// A socket that asked for stamps, kept so that stamping stays on.
    _switch: Option<UdpSocket>,
}

impl ArrivalClock {
    /// Also switches the kernel's stamping on before the first connect
    /// (see [`switch_on_stamping`]).
    pub(crate) fn new() -> ArrivalClock {
        ArrivalClock {
            _switch: switch_on_stamping(),
            ..ArrivalClock::unswitched()
        }
    }

    fn unswitched() -> ArrivalClock {
        ArrivalClock {
            timed: 0,
            untimed: 0,
            control: nix::cmsg_space!(TimeSpec),
            _switch: None,
        }
    }

    /// One read of `socket` into `buf`: its length and when its bytes
    /// arrived, on the loop's clock.
    pub(crate) fn read(
        &mut self,
        socket: &impl AsRawFd,
        buf: &mut [u8],
    ) -> io::Result<(usize, Instant)> {
        let (read, stamp) = recv_stamped(socket, buf, &mut self.control)?;
        let (wall, at) = (SystemTime::now(), Instant::now());
        if read == 0 {
            // The peer's FIN: when it came, no stamp says.
            self.untimed += 1;
            return Ok((0, at));
        }
        Ok((read, self.arrival(stamp, wall, at)))
    }

    /// When a read's bytes arrived: `read_at` less the stamp's age on the
    /// wall clock read with it (`read_wall`), so that a step of the wall
    /// clock before the read moves nothing; `read_at` without a stamp to
    /// believe (none, one after the read, or one older than
    /// [`OLDEST_STAMP`]).
    fn arrival(
        &mut self,
        stamp: Option<SystemTime>,
        read_wall: SystemTime,
        read_at: Instant,
    ) -> Instant {
        let age = stamp.and_then(|stamp| read_wall.duration_since(stamp).ok());
        match age.filter(|age| *age <= OLDEST_STAMP) {
            Some(age) => {
                self.timed += 1;
                read_at.checked_sub(age).unwrap_or(read_at)
            }
            None => {
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

/// The kernel turns receive stamping on in deferred work when the first
/// socket asks, so the first packets after that may come unstamped. A UDP
/// socket that asks sends itself a datagram until one comes back stamped
/// (up to [`SWITCH_ON_LIMIT`]), and is kept: stamping stays on while a
/// socket wants it. `None` where loopback cannot be used (a namespace
/// whose `lo` is down): the first reads may then go untimed, and are
/// counted so.
fn switch_on_stamping() -> Option<UdpSocket> {
    let socket = UdpSocket::bind("127.0.0.1:0").ok()?;
    socket.connect(socket.local_addr().ok()?).ok()?;
    stamp_reads(&socket).ok()?;
    let mut control = nix::cmsg_space!(TimeSpec);
    let started = Instant::now();
    while started.elapsed() < SWITCH_ON_LIMIT {
        socket.send(&[0]).ok()?;
        if let Ok((_, Some(_))) = recv_stamped(&socket, &mut [0], &mut control) {
            return Some(socket);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Some(socket)
}

/// One read of `socket` into `buf`: its length and its receive stamp, if
/// the kernel gave one.
fn recv_stamped(
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
    fn a_stamp_is_placed_by_its_age_at_the_read_and_counts_as_timed() {
        let mut clock = ArrivalClock::unswitched();
        let (wall, read_at) = (SystemTime::now(), Instant::now());
        assert_eq!(
            clock.arrival(Some(wall - 3 * MS), wall, read_at),
            read_at - 3 * MS
        );
        assert_eq!((clock.timed, clock.untimed), (1, 0));
    }

    #[test]
    fn a_wall_clock_step_before_the_read_moves_no_arrival() {
        let mut clock = ArrivalClock::unswitched();
        let read_at = Instant::now();
        // The wall clock stepped 500 ms back at some point before the
        // read: a stamp taken after the step is 3 ms old all the same.
        let stepped = SystemTime::now() - 500 * MS;
        assert_eq!(
            clock.arrival(Some(stepped - 3 * MS), stepped, read_at),
            read_at - 3 * MS
        );
        assert_eq!(clock.timed, 1);
    }

    #[test]
    fn no_stamp_a_stamp_after_the_read_or_a_stale_one_is_the_read_and_counts_as_untimed() {
        let mut clock = ArrivalClock::unswitched();
        let (wall, read_at) = (SystemTime::now(), Instant::now());
        assert_eq!(clock.arrival(None, wall, read_at), read_at);
        assert_eq!(clock.arrival(Some(wall + MS), wall, read_at), read_at);
        let stale = wall - OLDEST_STAMP - MS;
        assert_eq!(clock.arrival(Some(stale), wall, read_at), read_at);
        assert_eq!((clock.timed, clock.untimed), (0, 3));
    }

    #[test]
    fn a_loopback_read_is_timed_by_its_last_segments_arrival() {
        use std::io::Write;
        let mut clock = ArrivalClock::new();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        stamp_reads(&client).unwrap();
        server.write_all(b"first").unwrap();
        std::thread::sleep(20 * MS);
        let before_second = Instant::now();
        server.write_all(b"second").unwrap();
        let after_second = Instant::now();
        std::thread::sleep(20 * MS);
        let mut buf = [0; 64];
        let (read, arrived) = clock.read(&client, &mut buf).unwrap();
        assert_eq!(&buf[..read], b"firstsecond");
        assert_eq!(
            (clock.timed, clock.untimed),
            (1, 0),
            "TCP stamps a read once asked"
        );
        // The wall and monotonic clocks are read a few ns apart: a µs of
        // slack either side.
        assert!(
            arrived + MS / 1000 >= before_second && arrived <= after_second + MS / 1000,
            "{arrived:?} is not the second write's arrival, between {before_second:?} and \
             {after_second:?}"
        );
        drop(server);
        // Blocks until the FIN is in: the read below finds it.
        assert_eq!(client.peek(&mut buf).unwrap(), 0);
        let (read, _) = clock.read(&client, &mut buf).unwrap();
        assert_eq!(read, 0);
        assert_eq!(clock.untimed, 1, "a FIN has no stamp");
    }
}
