//! The head-of-line stall of one stream, from what arrived when and what
//! the application read when. Pure: times are plain nanoseconds, no clock.
//!
//! A stream's transport bytes are QUIC stream offsets for h3, and for h2
//! the stream's own frames laid end to end. Each body byte sits at one
//! transport offset. A byte *could have been read* once it and every
//! earlier transport byte of the same stream had arrived (each piece
//! counts from the moment its whole unit, a QUIC packet or a TLS record,
//! was in); it *was read* when the application got it. A read's wait
//! counts from when its last byte could have been read, so waiting for
//! the rest of one's own frame is not counted: what remains is time spent
//! behind something else (on TCP, a loss on another stream; on both, the
//! receiver's own processing). It is a lower bound for the read's first
//! bytes.

use std::ops::Range;

/// Nanoseconds on one clock shared by the capture and the reads.
pub type Nanos = u64;

/// Transport bytes of a stream that were complete at the receiver at `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    /// Stream transport offsets.
    pub range: Range<u64>,
    /// When the unit carrying them had wholly arrived.
    pub at: Nanos,
}

/// `len` body bytes from `body_start` sit at transport offsets from
/// `transport_start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodySpan {
    /// First body byte.
    pub body_start: u64,
    /// Its transport offset.
    pub transport_start: u64,
    /// Bytes in the span.
    pub len: u64,
}

/// The application had body bytes up to `body_end` at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// Body bytes read so far, this read included.
    pub body_end: u64,
    /// When this read returned.
    pub at: Nanos,
}

/// What the capture showed of one stream: its arrivals and where its body
/// sits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    /// As in [`StreamTimeline::arrivals`].
    pub arrivals: Vec<Arrival>,
    /// As in [`StreamTimeline::body`].
    pub body: Vec<BodySpan>,
    /// As in [`StreamTimeline::released`].
    pub released: Vec<Arrival>,
}

/// Everything seen of one stream.
#[derive(Debug, Clone, Default)]
pub struct StreamTimeline {
    /// When the request was sent.
    pub requested_at: Nanos,
    /// What arrived, in any order, repeats (retransmissions) included.
    pub arrivals: Vec<Arrival>,
    /// Where the body sits in the transport bytes, in body order.
    pub body: Vec<BodySpan>,
    /// The application's reads, in order.
    pub reads: Vec<Read>,
    /// When a transport that orders the whole connection released each
    /// piece to the layer above (TCP: once every earlier byte of the
    /// connection was in), at the same offsets as `arrivals`; empty for
    /// one that releases each stream on its own (QUIC).
    pub released: Vec<Arrival>,
}

/// One stream's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamHol {
    /// The longest time a read's bytes, all of them in (with everything
    /// before them on the stream), waited before the application got them.
    pub stall_ns: Nanos,
    /// The part of that wait spent in the transport's connection-wide
    /// order: the longest time a read's bytes, all in, waited for earlier
    /// bytes of other streams before the transport released them; `None`
    /// for a transport without that order.
    pub transport_order_wait_ns: Option<Nanos>,
    /// Request sent to last body byte read.
    pub completion_ns: Nanos,
    /// Body bytes read.
    pub body_bytes: u64,
}

/// Why a stream's stall cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unmeasured {
    /// No transport byte at this offset was seen arriving (a capture gap).
    NotSeen(u64),
    /// This body byte was read but is in no body span.
    NotMapped(u64),
    /// Nothing was read.
    NoRead,
}

impl std::fmt::Display for Unmeasured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unmeasured::NotSeen(offset) => {
                write!(f, "transport byte {offset} was never seen arriving")
            }
            Unmeasured::NotMapped(byte) => write!(f, "body byte {byte} was found in no frame"),
            Unmeasured::NoRead => f.write_str("no body byte was read"),
        }
    }
}

/// The stall and completion of one stream.
pub fn stream_hol(timeline: &StreamTimeline) -> Result<StreamHol, Unmeasured> {
    let last = timeline.reads.last().ok_or(Unmeasured::NoRead)?;
    let in_order = in_order_arrivals(&timeline.arrivals);
    let released = first_arrivals(&timeline.released);
    let ordered = !released.is_empty();
    let mut stall_ns = 0;
    let mut order_wait_ns = 0;
    let mut read_from = 0;
    for read in &timeline.reads {
        if read.body_end > read_from {
            // A read hands over its bytes together, so it could have come
            // once its last byte (and so every earlier one) was in: what
            // it waited beyond that was not for its own stream's bytes.
            // A receiver that delivers whole frames thus shows no stall
            // for the frame's own tail.
            let offset = transport_offset(&timeline.body, read.body_end - 1)?;
            let could = piece_time(&in_order, offset)?;
            stall_ns = stall_ns.max(read.at.saturating_sub(could));
            if ordered {
                let release = piece_time(&released, offset)?.min(read.at);
                order_wait_ns = order_wait_ns.max(release.saturating_sub(could));
            }
            read_from = read.body_end;
        }
    }
    Ok(StreamHol {
        stall_ns,
        transport_order_wait_ns: ordered.then_some(order_wait_ns),
        completion_ns: last.at.saturating_sub(timeline.requested_at),
        body_bytes: last.body_end,
    })
}

/// The transport offset of body byte `byte`.
fn transport_offset(body: &[BodySpan], byte: u64) -> Result<u64, Unmeasured> {
    body.iter()
        .find(|span| (span.body_start..span.body_start + span.len).contains(&byte))
        .map(|span| span.transport_start + (byte - span.body_start))
        .ok_or(Unmeasured::NotMapped(byte))
}

/// The time of the piece holding byte `offset`.
fn piece_time(pieces: &[Arrival], offset: u64) -> Result<Nanos, Unmeasured> {
    let gap = || Unmeasured::NotSeen(pieces.last().map_or(0, |piece| piece.range.end));
    pieces
        .iter()
        .find(|piece| piece.range.contains(&offset))
        .map(|piece| piece.at)
        .ok_or_else(gap)
}

/// The contiguous prefix of the stream from offset 0, cut into pieces
/// each labelled with when it and everything before it had arrived.
pub fn in_order_arrivals(arrivals: &[Arrival]) -> Vec<Arrival> {
    let mut in_order = Vec::new();
    let mut latest = 0;
    let mut expected = 0;
    for piece in first_arrivals(arrivals) {
        if piece.range.start != expected {
            break;
        }
        latest = latest.max(piece.at);
        expected = piece.range.end;
        in_order.push(Arrival {
            range: piece.range,
            at: latest,
        });
    }
    in_order
}

/// Each transport byte once, at its first arrival: disjoint pieces in
/// offset order.
pub fn first_arrivals(arrivals: &[Arrival]) -> Vec<Arrival> {
    let mut by_time: Vec<&Arrival> = arrivals.iter().filter(|a| !a.range.is_empty()).collect();
    by_time.sort_by_key(|arrival| arrival.at);
    let mut covered: Vec<Arrival> = Vec::new();
    for arrival in by_time {
        let mut fresh = Vec::new();
        let mut from = arrival.range.start;
        for piece in &covered {
            if piece.range.end <= from {
                continue;
            }
            if piece.range.start >= arrival.range.end {
                break;
            }
            if piece.range.start > from {
                fresh.push(from..piece.range.start);
            }
            from = from.max(piece.range.end);
        }
        if from < arrival.range.end {
            fresh.push(from..arrival.range.end);
        }
        covered.extend(fresh.into_iter().map(|range| Arrival {
            range,
            at: arrival.at,
        }));
        covered.sort_by_key(|piece| piece.range.start);
    }
    covered
}

/// When every byte of `range` had arrived, from disjoint first arrivals in
/// offset order; `None` if part of it never did.
pub fn complete_at(first: &[Arrival], range: Range<u64>) -> Option<Nanos> {
    let mut expected = range.start;
    let mut latest = 0;
    for piece in first
        .iter()
        .filter(|p| p.range.end > range.start && p.range.start < range.end)
    {
        if piece.range.start > expected {
            return None;
        }
        latest = latest.max(piece.at);
        expected = piece.range.end;
    }
    (expected >= range.end).then_some(latest)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn arrival(range: Range<u64>, at_ms: u64) -> Arrival {
        Arrival {
            range,
            at: at_ms * MS,
        }
    }

    fn read(body_end: u64, at_ms: u64) -> Read {
        Read {
            body_end,
            at: at_ms * MS,
        }
    }

    /// A body of `len` bytes right after a 10-byte header.
    fn after_header(len: u64) -> Vec<BodySpan> {
        vec![BodySpan {
            body_start: 0,
            transport_start: 10,
            len,
        }]
    }

    #[test]
    fn first_arrival_wins_and_later_copies_fill_only_gaps() {
        let first = first_arrivals(&[arrival(0..100, 5), arrival(50..200, 3), arrival(0..300, 9)]);
        assert_eq!(
            first,
            vec![arrival(0..50, 5), arrival(50..200, 3), arrival(200..300, 9)]
        );
        assert_eq!(complete_at(&first, 10..60), Some(5 * MS));
        assert_eq!(complete_at(&first, 150..250), Some(9 * MS));
        assert_eq!(complete_at(&first, 250..301), None);
    }

    #[test]
    fn in_order_times_carry_the_latest_earlier_arrival_and_stop_at_a_gap() {
        let pieces = in_order_arrivals(&[
            arrival(0..10, 1),
            arrival(10..20, 8),
            arrival(20..30, 2),
            arrival(40..50, 3),
        ]);
        assert_eq!(
            pieces,
            vec![arrival(0..10, 1), arrival(10..20, 8), arrival(20..30, 8)]
        );
    }

    #[test]
    fn data_read_as_soon_as_it_could_be_has_no_stall() {
        let timeline = StreamTimeline {
            requested_at: 0,
            released: Vec::new(),
            arrivals: vec![arrival(0..60, 20), arrival(60..110, 21)],
            body: after_header(100),
            reads: vec![read(50, 20), read(100, 21)],
        };
        let hol = stream_hol(&timeline).unwrap();
        assert_eq!(hol.stall_ns, 0);
        assert_eq!(hol.completion_ns, 21 * MS);
        assert_eq!(hol.body_bytes, 100);
    }

    #[test]
    fn a_loss_on_the_same_stream_is_no_stall() {
        // Bytes 10..60 came late (this stream's own loss): 60..110 had to
        // wait for them, which in-order delivery of one stream requires.
        let timeline = StreamTimeline {
            requested_at: 0,
            released: Vec::new(),
            arrivals: vec![
                arrival(0..10, 19),
                arrival(60..110, 21),
                arrival(10..60, 70),
            ],
            body: after_header(100),
            reads: vec![read(100, 70)],
        };
        assert_eq!(stream_hol(&timeline).unwrap().stall_ns, 0);
    }

    #[test]
    fn data_held_back_after_it_arrived_counts_from_when_it_could_be_read() {
        // Everything was in at 21 ms; the second half came out at 75 ms,
        // behind something that was not this stream's.
        let timeline = StreamTimeline {
            requested_at: 2 * MS,
            released: Vec::new(),
            arrivals: vec![arrival(0..60, 20), arrival(60..110, 21)],
            body: after_header(100),
            reads: vec![read(50, 20), read(100, 75)],
        };
        let hol = stream_hol(&timeline).unwrap();
        assert_eq!(hol.stall_ns, 54 * MS);
        assert_eq!(hol.completion_ns, 73 * MS);
    }

    #[test]
    fn tcp_order_is_the_part_of_the_wait_before_the_transport_released_the_bytes() {
        // In at 21 ms, released by TCP at 60 ms (a loss earlier on the
        // connection), read at 62 ms: 39 ms of the 41 ms stall was the
        // connection's order, the rest the receiver's.
        let arrivals = vec![arrival(0..60, 20), arrival(60..110, 21)];
        let timeline = StreamTimeline {
            requested_at: 0,
            released: vec![arrival(0..60, 20), arrival(60..110, 60)],
            arrivals,
            body: after_header(100),
            reads: vec![read(50, 20), read(100, 62)],
        };
        let hol = stream_hol(&timeline).unwrap();
        assert_eq!(hol.stall_ns, 41 * MS);
        assert_eq!(hol.transport_order_wait_ns, Some(39 * MS));
        let unordered = StreamTimeline {
            released: Vec::new(),
            ..timeline
        };
        assert_eq!(
            stream_hol(&unordered).unwrap().transport_order_wait_ns,
            None
        );
    }

    #[test]
    fn a_read_waiting_for_its_own_tail_is_no_stall() {
        // One 100-byte frame delivered whole once its tail came, 50 ms
        // after its head: the wait was for this stream's own bytes.
        let timeline = StreamTimeline {
            requested_at: 0,
            released: Vec::new(),
            arrivals: vec![arrival(0..60, 20), arrival(60..110, 70)],
            body: after_header(100),
            reads: vec![read(100, 71)],
        };
        assert_eq!(stream_hol(&timeline).unwrap().stall_ns, MS);
    }

    #[test]
    fn body_spans_skip_frame_headers_between_data() {
        // Two DATA frames: 5 body bytes at 10..15, a 3-byte header, 5 at 18..23.
        let body = vec![
            BodySpan {
                body_start: 0,
                transport_start: 10,
                len: 5,
            },
            BodySpan {
                body_start: 5,
                transport_start: 18,
                len: 5,
            },
        ];
        let timeline = StreamTimeline {
            requested_at: 0,
            released: Vec::new(),
            arrivals: vec![arrival(0..15, 4), arrival(15..23, 6)],
            body,
            reads: vec![read(5, 4), read(10, 9)],
        };
        assert_eq!(stream_hol(&timeline).unwrap().stall_ns, 3 * MS);
    }

    #[test]
    fn unseen_bytes_and_unmapped_reads_are_reported_not_guessed() {
        let unseen = StreamTimeline {
            requested_at: 0,
            released: Vec::new(),
            arrivals: vec![arrival(0..60, 20)],
            body: after_header(100),
            reads: vec![read(50, 20), read(100, 30)],
        };
        assert_eq!(stream_hol(&unseen), Err(Unmeasured::NotSeen(60)));
        let unmapped = StreamTimeline {
            reads: vec![read(50, 20), read(100, 30), read(120, 31)],
            arrivals: vec![arrival(0..200, 1)],
            ..unseen.clone()
        };
        assert_eq!(stream_hol(&unmapped), Err(Unmeasured::NotMapped(119)));
        let unread = StreamTimeline {
            reads: Vec::new(),
            ..unseen
        };
        assert_eq!(stream_hol(&unread), Err(Unmeasured::NoRead));
    }
}
