//! TLS record sizing on TCP. A TLS record decrypts only once all of it has
//! arrived. A 16 KB record is larger than TCP's initial congestion window
//! (10 segments, about 14 KB), so the first record of a large response, the
//! one that carries its headers, arrives a round trip later than its first
//! segment: h2's first byte took 2 RTT where h3's took 1 (QUIC packets
//! decrypt one at a time). Dynamic sizing sends small records first and
//! grows them, as Cloudflare's nginx patch does (`ssl_dyn_rec_*`, with the
//! same defaults): 40 records that each fit one segment, 40 of about three
//! segments, then the 16 KB maximum, and small again after a second idle,
//! when the congestion window may have shrunk.
//!
//! [`RecordSizer`] is the rule in virtual time; [`SizedRecords`] applies it
//! to a TLS stream by handing rustls at most one record's worth per write
//! (rustls turns each write into records of at most its maximum fragment).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// TLS 1.3's largest record payload.
pub const MAX_RECORD: usize = 16 * 1024;

/// How TLS records on TCP are sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsRecords {
    /// Small records first, growing to the maximum (the default).
    Dynamic(DynamicRecords),
    /// Every record as large as the data allows, up to 16 KB (rustls's and
    /// nginx's default behaviour).
    Max,
}

impl Default for TlsRecords {
    fn default() -> Self {
        TlsRecords::Dynamic(DynamicRecords::default())
    }
}

impl std::fmt::Display for TlsRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsRecords::Max => write!(f, "max ({MAX_RECORD} B)"),
            TlsRecords::Dynamic(d) => write!(
                f,
                "dynamic ({} x {} B, {} x {} B, then {MAX_RECORD} B; small again after {} ms idle)",
                d.records_per_step,
                d.small,
                d.records_per_step,
                d.medium,
                d.idle_reset.as_millis()
            ),
        }
    }
}

/// The steps of dynamic record sizing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DynamicRecords {
    /// Payload of the first records: one TCP segment's worth with room for
    /// IPv6, TCP options and the record's own 22 bytes (Cloudflare's 1369).
    pub small: usize,
    /// Payload of the next records: about three segments (Cloudflare's 4229).
    pub medium: usize,
    /// How many records each of the two small steps lasts.
    pub records_per_step: u32,
    /// Idle time after which sizing starts small again.
    pub idle_reset: Duration,
}

impl Default for DynamicRecords {
    fn default() -> Self {
        Self {
            small: 1369,
            medium: 4229,
            records_per_step: 40,
            idle_reset: Duration::from_secs(1),
        }
    }
}

/// Which record size comes next on one connection.
#[derive(Debug)]
pub struct RecordSizer {
    rule: TlsRecords,
    records_sent: u32,
    last_write: Option<Instant>,
}

impl RecordSizer {
    pub fn new(rule: TlsRecords) -> Self {
        Self {
            rule,
            records_sent: 0,
            last_write: None,
        }
    }

    /// The largest payload the next record may carry if written at `now`.
    pub fn next_record(&mut self, now: Instant) -> usize {
        let TlsRecords::Dynamic(steps) = self.rule else {
            return MAX_RECORD;
        };
        if self
            .last_write
            .is_some_and(|last| now.saturating_duration_since(last) >= steps.idle_reset)
        {
            self.records_sent = 0;
        }
        match self.records_sent / steps.records_per_step.max(1) {
            0 => steps.small,
            1 => steps.medium,
            _ => MAX_RECORD,
        }
    }

    /// Notes that a record of some payload went out at `now`.
    pub fn record_sent(&mut self, now: Instant) {
        self.records_sent = self.records_sent.saturating_add(1);
        self.last_write = Some(now);
    }
}

/// A TLS stream whose writes are cut to the record size [`RecordSizer`]
/// chooses. Reads pass through.
pub struct SizedRecords<S> {
    inner: S,
    sizer: RecordSizer,
}

impl<S> SizedRecords<S> {
    pub fn new(inner: S, rule: TlsRecords) -> Self {
        Self {
            inner,
            sizer: RecordSizer::new(rule),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for SizedRecords<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for SizedRecords<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let limit = this.sizer.next_record(Instant::now());
        let written = Pin::new(&mut this.inner).poll_write(cx, &buf[..buf.len().min(limit)]);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.sizer.record_sent(Instant::now());
        }
        written
    }

    /// Vectored writes keep hyper from copying its buffers together; rustls
    /// seals the slices given in one call into records across their bounds.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let limit = this.sizer.next_record(Instant::now());
        let cut = cut_slices(bufs, limit);
        let written = Pin::new(&mut this.inner).poll_write_vectored(cx, &cut);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.sizer.record_sent(Instant::now());
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The leading slices of `bufs`, the last one shortened, holding at most
/// `limit` bytes in all.
fn cut_slices<'b>(bufs: &'b [io::IoSlice<'_>], limit: usize) -> Vec<io::IoSlice<'b>> {
    let mut left = limit;
    let mut cut = Vec::new();
    for buf in bufs {
        if left == 0 {
            break;
        }
        let take = buf.len().min(left);
        cut.push(io::IoSlice::new(&buf[..take]));
        left -= take;
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn sizes(sizer: &mut RecordSizer, start: Instant, records: u32) -> Vec<usize> {
        (0..records)
            .map(|i| {
                let now = start + i * MS;
                let size = sizer.next_record(now);
                sizer.record_sent(now);
                size
            })
            .collect()
    }

    #[test]
    fn dynamic_records_start_small_and_grow_to_the_maximum() {
        let mut sizer = RecordSizer::new(TlsRecords::default());
        let sent = sizes(&mut sizer, Instant::now(), 100);
        assert!(sent[..40].iter().all(|&size| size == 1369), "{sent:?}");
        assert!(sent[40..80].iter().all(|&size| size == 4229), "{sent:?}");
        assert!(
            sent[80..].iter().all(|&size| size == MAX_RECORD),
            "{sent:?}"
        );
    }

    #[test]
    fn a_second_idle_starts_small_again_and_a_shorter_pause_does_not() {
        let mut sizer = RecordSizer::new(TlsRecords::default());
        let start = Instant::now();
        sizes(&mut sizer, start, 100);
        let last = start + 99 * MS;
        assert_eq!(sizer.next_record(last + 999 * MS), MAX_RECORD);
        assert_eq!(sizer.next_record(last + 1000 * MS), 1369);
    }

    #[test]
    fn max_records_are_always_the_largest() {
        let mut sizer = RecordSizer::new(TlsRecords::Max);
        let sent = sizes(&mut sizer, Instant::now(), 3);
        assert_eq!(sent, vec![MAX_RECORD; 3]);
    }

    #[test]
    fn vectored_writes_are_cut_across_slices() {
        let (a, b, c) = ([1u8; 9], [2u8; 2000], [3u8; 100]);
        let bufs = [
            io::IoSlice::new(&a),
            io::IoSlice::new(&b),
            io::IoSlice::new(&c),
        ];
        let lengths: Vec<usize> = cut_slices(&bufs, 1369).iter().map(|s| s.len()).collect();
        assert_eq!(lengths, vec![9, 1360]);
        let whole: usize = cut_slices(&bufs, MAX_RECORD).iter().map(|s| s.len()).sum();
        assert_eq!(whole, 2109);
    }
}
