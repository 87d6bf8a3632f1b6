//! What a probe's QUIC socket saw arrive, and the one datagram it marks
//! once a response is under way: from it, or a while after dropping it (a
//! loss the server must answer), the socket goes silent, so what the server
//! sends after is its congestion window. `probe offer` reads how a server's
//! congestion controller answers one loss from the two.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use quinn::udp::RecvMeta;

/// The switch of a probe socket's sends (`crate::mute::MutedSocket`);
/// clones switch the same socket.
#[derive(Clone, Default, Debug)]
pub(crate) struct Mute(Arc<AtomicBool>);

impl Mute {
    /// Drops the socket's sends from now on (`true`), or sends again.
    pub(crate) fn set(&self, muted: bool) {
        self.0.store(muted, Ordering::Relaxed);
    }

    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// One read of the socket: when, and how many bytes of UDP payload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Arrival {
    pub(crate) at: Instant,
    pub(crate) bytes: u64,
}

/// What happens at the marked datagram.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum AtMark {
    /// The socket goes silent from it on (its acknowledgement included).
    Mute,
    /// It is dropped (quinn never sees it, so it is never acknowledged),
    /// and the socket goes silent at the first read this long after it.
    DropThenMute(Duration),
}

#[derive(Debug, Default)]
struct Record {
    /// Every read since the socket was armed, in order.
    received: Vec<Arrival>,
    /// The mark: the first read after this many bytes, and what to do.
    mark: Option<(u64, AtMark)>,
    /// When the marked read came.
    marked_at: Option<Instant>,
    /// When the socket went silent.
    muted_at: Option<Instant>,
    /// The size of the last datagram of [`FULL_DATAGRAM`] bytes or more.
    last_full: usize,
    counted: u64,
}

/// The record and mute of one probe socket; clones share them.
#[derive(Clone, Default, Debug)]
pub(crate) struct Marks {
    record: Arc<Mutex<Record>>,
    mute: Mute,
}

impl Marks {
    /// The switch of the socket's sends.
    pub(crate) fn mute(&self) -> &Mute {
        &self.mute
    }

    /// Forgets what came so far, and marks the datagram that arrives once
    /// `after_bytes` more have.
    pub(crate) fn arm(&self, after_bytes: u64, at_mark: AtMark) {
        *self.lock() = Record {
            mark: Some((after_bytes, at_mark)),
            ..Record::default()
        };
    }

    /// When the socket went silent, if it has.
    pub(crate) fn muted_at(&self) -> Option<Instant> {
        self.lock().muted_at
    }

    /// The bytes that arrived from `from` until the first silence of
    /// `quiet`; `None` while that silence has not come by `now`.
    pub(crate) fn until_silence(
        &self,
        from: Instant,
        quiet: Duration,
        now: Instant,
    ) -> Option<u64> {
        until_silence(&self.lock().received, from, quiet, now)
    }

    fn lock(&self) -> MutexGuard<'_, Record> {
        self.record
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Counts one read of `meta.len` bytes of `buf` and acts at the mark,
    /// on a read that opens with a datagram of [`FULL_DATAGRAM`] bytes or
    /// more and of the size of the full datagram before it: one that
    /// carries data, not a lone acknowledgement or a path MTU probe (larger
    /// than the data around it, and sent alone), whose loss no controller
    /// answers. A read may hold several datagrams of `meta.stride` bytes
    /// (coalesced by GRO); a drop takes out the first.
    pub(crate) fn observe(&self, meta: &mut RecvMeta, buf: &mut [u8], at: Instant) {
        let mut record = self.lock();
        let Some((after_bytes, at_mark)) = record.mark else {
            return;
        };
        let first = meta.stride.min(meta.len);
        let full = first >= FULL_DATAGRAM;
        let like_the_last = full && record.last_full == first;
        if full {
            record.last_full = first;
        }
        if record.marked_at.is_none() && record.counted >= after_bytes && like_the_last {
            record.marked_at = Some(at);
            match at_mark {
                AtMark::Mute => {}
                AtMark::DropThenMute(_) => {
                    buf.copy_within(first..meta.len, 0);
                    meta.len -= first;
                }
            }
        }
        let mute_from = match (at_mark, record.marked_at) {
            (AtMark::Mute, Some(marked)) => Some(marked),
            (AtMark::DropThenMute(wait), Some(marked)) => Some(marked + wait),
            (_, None) => None,
        };
        if record.muted_at.is_none() && mute_from.is_some_and(|from| at >= from) {
            record.muted_at = Some(at);
            self.mute.set(true);
        }
        record.counted += meta.len as u64;
        record.received.push(Arrival {
            at,
            bytes: meta.len as u64,
        });
    }
}

/// The least datagram a mark falls on: QUIC's smallest full datagram is
/// 1,200 bytes (RFC 9000 §14), and a lone acknowledgement is far shorter.
const FULL_DATAGRAM: usize = 1_000;

/// The bytes of the reads from `from` on, up to the first gap of `quiet`
/// between two of them (or between `from` and the first); `None` when no
/// such gap has come by `now`.
fn until_silence(
    received: &[Arrival],
    from: Instant,
    quiet: Duration,
    now: Instant,
) -> Option<u64> {
    let mut last = from;
    let mut bytes = 0;
    for read in received.iter().filter(|read| read.at >= from) {
        if read.at.duration_since(last) >= quiet {
            return Some(bytes);
        }
        bytes += read.bytes;
        last = read.at;
    }
    (now.duration_since(last) >= quiet).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(len: usize, stride: usize) -> RecvMeta {
        RecvMeta {
            len,
            stride,
            ..RecvMeta::default()
        }
    }

    /// Reads `lens` (each `(len, stride)`, filled with its index) one
    /// millisecond apart; returns what quinn is left with of each.
    fn observe_all(marks: &Marks, start: Instant, lens: &[(usize, usize)]) -> Vec<Vec<u8>> {
        let mut left = Vec::new();
        for (i, &(len, stride)) in lens.iter().enumerate() {
            let mut buf = vec![i as u8; len];
            for (n, byte) in buf.iter_mut().enumerate() {
                *byte = (n / stride) as u8;
            }
            let mut read = meta(len, stride);
            marks.observe(&mut read, &mut buf, start + Duration::from_millis(i as u64));
            buf.truncate(read.len);
            left.push(buf);
        }
        left
    }

    #[test]
    fn the_first_full_datagram_of_the_first_read_past_the_mark_is_dropped_and_no_other() {
        let marks = Marks::default();
        let start = Instant::now();
        // Before it is armed nothing is counted or cut.
        assert_eq!(observe_all(&marks, start, &[(1200, 1200)])[0].len(), 1200);
        marks.arm(2000, AtMark::DropThenMute(Duration::from_millis(1)));
        // Past 2000 B: a lone 40-byte acknowledgement, a 1452-byte MTU
        // probe and the 1200-byte datagram after it are passed over; the
        // next read (1200, 1200 and 600 B by GRO) loses its first.
        let reads = [
            (1200, 1200),
            (1200, 1200),
            (40, 40),
            (1452, 1452),
            (1200, 1200),
            (3000, 1200),
            (1200, 1200),
        ];
        let left = observe_all(&marks, start, &reads);
        let lens: Vec<usize> = left.iter().map(Vec::len).collect();
        assert_eq!(lens, [1200, 1200, 40, 1452, 1200, 1800, 1200]);
        // What is left of the cut read is its second and third datagrams.
        assert_eq!(left[5][0], 1);
        assert_eq!(left[5][1200], 2);
        // Silent from the first read a millisecond after the drop on.
        assert_eq!(marks.muted_at(), Some(start + Duration::from_millis(6)));
        assert!(marks.mute().is_set());
    }

    #[test]
    fn a_mute_mark_silences_the_socket_from_the_marked_datagram_on() {
        let marks = Marks::default();
        let start = Instant::now();
        marks.arm(1000, AtMark::Mute);
        observe_all(&marks, start, &[(1200, 1200)]);
        assert!(!marks.mute().is_set());
        let left = observe_all(&marks, start, &[(1200, 1200)]);
        assert!(marks.mute().is_set());
        assert_eq!(marks.muted_at(), Some(start));
        assert_eq!(left[0].len(), 1200);
    }

    #[test]
    fn a_window_is_what_arrives_from_the_mark_until_the_first_silence() {
        let start = Instant::now();
        let ms = |n: u64| start + Duration::from_millis(n);
        let read = |at: u64, bytes: u64| Arrival { at: ms(at), bytes };
        let quiet = Duration::from_millis(20);
        // 3,000 B from 100 ms on, 19 ms apart at most; then the server
        // waits, and a probe timeout's packet comes 45 ms later.
        let received = [
            read(90, 9_000),
            read(100, 1_000),
            read(119, 1_000),
            read(120, 1_000),
            read(165, 1_200),
        ];
        assert_eq!(
            until_silence(&received, ms(100), quiet, ms(300)),
            Some(3_000)
        );
        // Not silent yet by 130 ms.
        assert_eq!(until_silence(&received[..4], ms(100), quiet, ms(130)), None);
        assert_eq!(
            until_silence(&received[..4], ms(100), quiet, ms(140)),
            Some(3_000)
        );
        // Nothing came at all.
        assert_eq!(until_silence(&[], ms(100), quiet, ms(120)), Some(0));
    }
}
