//! h2 as the client received it: the server's TLS 1.3 records opened with
//! the logged traffic secret, then the HTTP/2 frames in their plaintext.
//! A record is readable only whole, so each plaintext byte counts as
//! arrived when its record was complete.

use std::collections::BTreeMap;
use std::ops::Range;

use super::keys::{Labels, Suite, TrafficKeys};
use super::packets::TcpStream;
use super::timeline::{complete_at, Arrival, BodySpan, Nanos, Seen};

const APPLICATION_DATA: u8 = 23;
const RECORD_HEADER: usize = 5;
const FRAME_HEADER: u64 = 9;
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const CONTINUATION: u8 = 9;
const PADDED: u8 = 0x8;

/// Application plaintext of one record and when the record was complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plaintext {
    /// What the record carried for the application.
    pub bytes: Vec<u8>,
    /// When its last byte had arrived.
    pub at: Nanos,
    /// When TCP could release it: every byte of the connection up to its
    /// end had arrived.
    pub released_at: Nanos,
}

/// The server's application data, record by record, up to the first
/// record not wholly seen.
pub fn application_data(stream: &TcpStream, secret: &[u8]) -> anyhow::Result<Vec<Plaintext>> {
    for &suite in Suite::candidates(secret.len()) {
        let keys = TrafficKeys::derive(secret, suite, Labels::Tls);
        let records = open_records(stream, &keys)?;
        if !records.is_empty() {
            return Ok(records);
        }
    }
    anyhow::bail!("no TLS record opened with the server's traffic secret")
}

/// Opens every record under `keys`. Records before the first that opens
/// are the handshake's (other keys), so under another suite's keys none
/// opens and the result is empty; after one opened, one that does not is
/// an error.
fn open_records(stream: &TcpStream, keys: &TrafficKeys) -> anyhow::Result<Vec<Plaintext>> {
    let bytes = &stream.bytes;
    let mut records = Vec::new();
    let mut start = 0;
    let mut sequence = 0;
    while let Some(header) = bytes.get(start..start + RECORD_HEADER) {
        let end = start + RECORD_HEADER + usize::from(u16::from_be_bytes([header[3], header[4]]));
        let (Some(at), Some(released_at)) = (
            complete_at(&stream.arrived, start as u64..end as u64),
            complete_at(&stream.arrived, 0..end as u64),
        ) else {
            break;
        };
        if header[0] == APPLICATION_DATA {
            let mut sealed = bytes[start + RECORD_HEADER..end].to_vec();
            match keys.open(sequence, header, &mut sealed) {
                Some(plain) => {
                    sequence += 1;
                    if let Some((APPLICATION_DATA, content)) = inner_content(plain) {
                        records.push(Plaintext {
                            bytes: content.to_vec(),
                            at,
                            released_at,
                        });
                    }
                }
                None if sequence == 0 => {}
                None => anyhow::bail!(
                    "TLS record {sequence} at stream byte {start} does not open with the \
                     server's first traffic secret (a key update is not supported)"
                ),
            }
        }
        start = end;
    }
    Ok(records)
}

/// The inner content type and content of a TLS 1.3 plaintext (the type
/// is the last non-zero byte; zeros after it are padding).
fn inner_content(plain: &[u8]) -> Option<(u8, &[u8])> {
    let last = plain.iter().rposition(|&byte| byte != 0)?;
    Some((plain[last], &plain[..last]))
}

/// A record's place in the plaintext, when it was complete and when TCP
/// could release it.
type Piece = (Range<u64>, Nanos, Nanos);

/// Each stream's frames (HEADERS, CONTINUATION, DATA) laid end to end as
/// its transport bytes, with their records' arrival and release times,
/// and where its response body sits in them.
pub fn h2_streams(records: &[Plaintext]) -> BTreeMap<u64, Seen> {
    let mut plaintext = Vec::new();
    let mut pieces: Vec<Piece> = Vec::new();
    for record in records {
        let start = plaintext.len() as u64;
        plaintext.extend_from_slice(&record.bytes);
        pieces.push((start..plaintext.len() as u64, record.at, record.released_at));
    }
    let mut streams: BTreeMap<u64, (Seen, u64, u64)> = BTreeMap::new();
    let mut start = 0usize;
    while let Some(header) = plaintext.get(start..start + FRAME_HEADER as usize) {
        let len = u64::from(u32::from_be_bytes([0, header[0], header[1], header[2]]));
        let (kind, flags) = (header[3], header[4]);
        let id =
            u64::from(u32::from_be_bytes(header[5..9].try_into().expect("4 bytes")) & 0x7fff_ffff);
        let frame = start as u64..start as u64 + FRAME_HEADER + len;
        if frame.end > plaintext.len() as u64 {
            break;
        }
        if id != 0 && matches!(kind, DATA | HEADERS | CONTINUATION) {
            let (seen, cursor, body) = streams.entry(id).or_default();
            for (arrival, released) in arrivals_of(&frame, *cursor, &pieces) {
                seen.arrivals.push(arrival);
                seen.released.push(released);
            }
            if kind == DATA {
                let padding = if flags & PADDED != 0 {
                    1 + u64::from(plaintext[start + FRAME_HEADER as usize])
                } else {
                    0
                };
                let data_len = len.saturating_sub(padding);
                seen.body.push(BodySpan {
                    body_start: *body,
                    transport_start: *cursor + FRAME_HEADER + u64::from(padding > 0),
                    len: data_len,
                });
                *body += data_len;
            }
            *cursor += frame.end - frame.start;
        }
        start = frame.end as usize;
    }
    streams
        .into_iter()
        .map(|(id, (seen, _, _))| (id, seen))
        .collect()
}

/// The parts of plaintext `frame` in each record, at the stream's
/// transport offsets from `cursor`: when each arrived, and when TCP could
/// release it.
fn arrivals_of(frame: &Range<u64>, cursor: u64, pieces: &[Piece]) -> Vec<(Arrival, Arrival)> {
    pieces
        .iter()
        .filter(|(range, _, _)| range.start < frame.end && range.end > frame.start)
        .map(|(range, at, released_at)| {
            let range = cursor + range.start.max(frame.start) - frame.start
                ..cursor + range.end.min(frame.end) - frame.start;
            let arrival = |at: Nanos| Arrival {
                range: range.clone(),
                at,
            };
            (arrival(*at), arrival(*released_at))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hol::fixtures::h2_frame as frame;

    #[test]
    fn data_frames_of_two_streams_split_across_records() {
        let mut plaintext = frame(HEADERS, 4, 1, b"hh");
        plaintext.extend(frame(DATA, 0, 1, b"abcd"));
        plaintext.extend(frame(DATA, PADDED, 3, &[2, b'x', b'y', 0, 0]));
        plaintext.extend(frame(DATA, 0, 1, b"ef"));
        // Records: [0, 15) at 10, [15, 40) at 20, the rest at 30.
        let records = vec![
            Plaintext {
                bytes: plaintext[..15].to_vec(),
                at: 10,
                released_at: 10,
            },
            Plaintext {
                bytes: plaintext[15..40].to_vec(),
                at: 20,
                released_at: 25,
            },
            Plaintext {
                bytes: plaintext[40..].to_vec(),
                at: 30,
                released_at: 30,
            },
        ];
        let streams = h2_streams(&records);
        let one = &streams[&1];
        // HEADERS 0..11, DATA 11..24 (body at 20), DATA 24..35 (body at 33).
        assert_eq!(
            one.body,
            vec![
                BodySpan {
                    body_start: 0,
                    transport_start: 20,
                    len: 4
                },
                BodySpan {
                    body_start: 4,
                    transport_start: 33,
                    len: 2
                }
            ]
        );
        let arrivals: Vec<(Range<u64>, Nanos)> = one
            .arrivals
            .iter()
            .map(|a| (a.range.clone(), a.at))
            .collect();
        assert_eq!(
            arrivals,
            vec![
                (0..11, 10),
                (11..15, 10),
                (15..24, 20),
                (24..26, 20),
                (26..35, 30)
            ]
        );
        let released: Vec<Nanos> = one.released.iter().map(|a| a.at).collect();
        assert_eq!(released, vec![10, 10, 25, 25, 30]);
        let three = &streams[&3];
        assert_eq!(
            three.body,
            vec![BodySpan {
                body_start: 0,
                transport_start: 10,
                len: 2
            }]
        );
    }

    #[test]
    fn inner_content_strips_padding_and_reads_the_type() {
        assert_eq!(inner_content(b"data\x17\0\0"), Some((23, &b"data"[..])));
        assert_eq!(inner_content(b"\0\0"), None);
    }
}
