//! h3 as the client received it: the server's QUIC 1-RTT packets opened
//! with the logged traffic secret (RFC 9001), their STREAM frames, and the
//! HTTP/3 frames in each request stream. A packet is readable only whole,
//! so its frames count as arrived when the datagram did.

use std::collections::BTreeMap;

use super::keys::{next_quic_secret, Labels, Suite, TrafficKeys};
use super::timeline::{first_arrivals, Arrival, BodySpan, Nanos, Seen};

const SAMPLE_LEN: usize = 16;
const KEY_PHASE: u8 = 0x04;
const H3_DATA: u64 = 0;

/// A STREAM frame as received.
#[derive(Debug, Clone, PartialEq, Eq)]
struct StreamFrame {
    id: u64,
    offset: u64,
    data: Vec<u8>,
    at: Nanos,
}

/// Each client-initiated request stream's arrivals (at QUIC stream
/// offsets) and where its response body sits, from the server's
/// datagrams.
pub fn h3_streams(
    datagrams: &[(Nanos, &[u8])],
    secret: &[u8],
) -> anyhow::Result<BTreeMap<u64, Seen>> {
    for &suite in Suite::candidates(secret.len()) {
        let mut keys = KeyPhases::new(secret, suite);
        if let Some(frames) = stream_frames(datagrams, &mut keys)? {
            return Ok(request_streams(&frames));
        }
    }
    anyhow::bail!("no QUIC 1-RTT packet opened with the server's traffic secret")
}

/// The packet keys of each key phase so far, and which one is current:
/// quinn updates keys early (after 10 to 1000 packets) and then at the
/// confidentiality limit.
struct KeyPhases {
    suite: Suite,
    /// Header protection stays the first phase's.
    first: TrafficKeys,
    /// The secret of the newest phase derived.
    newest_secret: Vec<u8>,
    phases: Vec<TrafficKeys>,
    current: usize,
}

impl KeyPhases {
    fn new(secret: &[u8], suite: Suite) -> KeyPhases {
        KeyPhases {
            suite,
            first: TrafficKeys::derive(secret, suite, Labels::Quic),
            newest_secret: secret.to_vec(),
            phases: vec![TrafficKeys::derive(secret, suite, Labels::Quic)],
            current: 0,
        }
    }

    /// Opens a packet whose key-phase bit is `phase`: with the current
    /// keys when the bit matches, else the next phase's (a key update) or
    /// the previous one's (a packet sent before it).
    fn open(&mut self, phase: bool, number: u64, header: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        let candidates = if (self.current % 2 == 1) == phase {
            vec![self.current]
        } else {
            let mut others = vec![self.current + 1];
            others.extend(self.current.checked_sub(1));
            others
        };
        for generation in candidates {
            while self.phases.len() <= generation {
                self.newest_secret = next_quic_secret(&self.newest_secret, self.suite);
                self.phases.push(TrafficKeys::derive(
                    &self.newest_secret,
                    self.suite,
                    Labels::Quic,
                ));
            }
            let mut buffer = sealed.to_vec();
            if let Some(plain) = self.phases[generation].open(number, header, &mut buffer) {
                self.current = self.current.max(generation);
                return Some(plain.to_vec());
            }
        }
        None
    }
}

/// The STREAM frames of every 1-RTT packet; `None` when none opens (the
/// keys are another suite's), an error when some do and others do not.
fn stream_frames(
    datagrams: &[(Nanos, &[u8])],
    keys: &mut KeyPhases,
) -> anyhow::Result<Option<Vec<StreamFrame>>> {
    let mut cid_len = None;
    let mut largest = None;
    let mut frames = Vec::new();
    let mut unopened = 0;
    for &(at, datagram) in datagrams {
        let mut rest = datagram;
        while let Some(&first) = rest.first() {
            if first & 0x80 != 0 {
                let Some((dcid_len, len)) = long_header(rest) else {
                    break;
                };
                cid_len.get_or_insert(dcid_len);
                rest = &rest[len.min(rest.len())..];
                continue;
            }
            // A short-header packet runs to the end of the datagram.
            match cid_len.and_then(|cid_len| open_short(rest, cid_len, keys, &mut largest)) {
                Some(payload) => {
                    for (id, offset, data) in parse_stream_frames(&payload)? {
                        frames.push(StreamFrame {
                            id,
                            offset,
                            data: data.to_vec(),
                            at,
                        });
                    }
                }
                None => unopened += 1,
            }
            break;
        }
    }
    if largest.is_none() {
        return Ok(None);
    }
    anyhow::ensure!(
        unopened == 0,
        "{unopened} QUIC 1-RTT packet(s) did not open with the server's traffic secrets"
    );
    Ok(Some(frames))
}

/// The destination connection ID's length and the whole length of a
/// long-header packet (RFC 9000, 17.2); `None` for one that runs to the
/// end of the datagram or is malformed.
fn long_header(packet: &[u8]) -> Option<(usize, usize)> {
    let mut reader = Reader::new(packet);
    let first = reader.take(1)?[0];
    let version = reader.take(4)?;
    let dcid_len = usize::from(reader.take(1)?[0]);
    reader.take(dcid_len)?;
    let scid_len = usize::from(reader.take(1)?[0]);
    reader.take(scid_len)?;
    const INITIAL: u8 = 0;
    const RETRY: u8 = 3;
    let kind = (first >> 4) & 0x03;
    if version == [0; 4] || kind == RETRY {
        return None;
    }
    if kind == INITIAL {
        let token_len = reader.varint()?;
        reader.take(usize::try_from(token_len).ok()?)?;
    }
    let len = usize::try_from(reader.varint()?).ok()?;
    Some((dcid_len, reader.pos + len))
}

/// Removes header protection and opens a short-header packet; `None` if
/// it does not authenticate.
fn open_short(
    packet: &[u8],
    cid_len: usize,
    keys: &mut KeyPhases,
    largest: &mut Option<u64>,
) -> Option<Vec<u8>> {
    let pn_offset = 1 + cid_len;
    let sample = packet.get(pn_offset + 4..pn_offset + 4 + SAMPLE_LEN)?;
    let mask = keys.first.mask(sample)?;
    let first = packet[0] ^ (mask[0] & 0x1f);
    let pn_len = usize::from(first & 0x03) + 1;
    let mut header = packet[..pn_offset + pn_len].to_vec();
    header[0] = first;
    let mut truncated = 0u64;
    for (i, byte) in header[pn_offset..].iter_mut().enumerate() {
        *byte ^= mask[1 + i];
        truncated = truncated << 8 | u64::from(*byte);
    }
    let number = packet_number(*largest, truncated, pn_len * 8);
    let plain = keys.open(
        first & KEY_PHASE != 0,
        number,
        &header,
        &packet[pn_offset + pn_len..],
    )?;
    *largest = Some(largest.map_or(number, |largest: u64| largest.max(number)));
    Some(plain)
}

/// The full packet number nearest the next expected one (RFC 9000, A.3).
fn packet_number(largest: Option<u64>, truncated: u64, bits: usize) -> u64 {
    let expected = largest.map_or(0, |largest| largest + 1);
    let window = 1u64 << bits;
    let half = window / 2;
    let candidate = (expected & !(window - 1)) | truncated;
    if candidate + half <= expected && candidate < (1 << 62) - window {
        candidate + window
    } else if candidate > expected + half && candidate >= window {
        candidate - window
    } else {
        candidate
    }
}

/// The STREAM frames of a packet payload, skipping every other frame a
/// server sends (RFC 9000, 19; RFC 9221 DATAGRAM; ACK_FREQUENCY).
fn parse_stream_frames(payload: &[u8]) -> anyhow::Result<Vec<(u64, u64, &[u8])>> {
    let mut reader = Reader::new(payload);
    let mut frames = Vec::new();
    let malformed =
        |kind: u64| anyhow::anyhow!("a malformed or unknown QUIC frame (type {kind:#x})");
    while !reader.is_done() {
        let kind = reader.varint().ok_or_else(|| malformed(0))?;
        let parsed = match kind {
            0x08..=0x0f => reader.stream_frame(kind).map(|frame| frames.push(frame)),
            _ => reader.skip_frame(kind),
        };
        parsed.ok_or_else(|| malformed(kind))?;
    }
    Ok(frames)
}

/// A cursor over a packet or frame.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, pos: 0 }
    }

    fn is_done(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        let taken = self.bytes.get(self.pos..self.pos.checked_add(len)?)?;
        self.pos += len;
        Some(taken)
    }

    fn rest(&mut self) -> &'a [u8] {
        let rest = &self.bytes[self.pos.min(self.bytes.len())..];
        self.pos = self.bytes.len();
        rest
    }

    /// A variable-length integer (RFC 9000, 16).
    fn varint(&mut self) -> Option<u64> {
        let first = *self.take(1)?.first()?;
        let len = 1usize << (first >> 6);
        let rest = self.take(len - 1)?;
        Some(rest.iter().fold(u64::from(first & 0x3f), |value, &byte| {
            value << 8 | u64::from(byte)
        }))
    }

    fn varints(&mut self, count: usize) -> Option<()> {
        (0..count).try_for_each(|_| self.varint().map(drop))
    }

    fn counted(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.varint()?).ok()?;
        self.take(len)
    }

    fn stream_frame(&mut self, kind: u64) -> Option<(u64, u64, &'a [u8])> {
        let id = self.varint()?;
        let offset = if kind & 0x04 != 0 { self.varint()? } else { 0 };
        let data = if kind & 0x02 != 0 {
            self.counted()?
        } else {
            self.rest()
        };
        Some((id, offset, data))
    }

    fn skip_frame(&mut self, kind: u64) -> Option<()> {
        match kind {
            0x00 | 0x01 | 0x1e | 0x1f => Some(()),
            0x02 | 0x03 => {
                self.varint()?;
                self.varint()?;
                let ranges = usize::try_from(self.varint()?).ok()?;
                self.varint()?;
                self.varints(ranges * 2)?;
                if kind == 0x03 {
                    self.varints(3)?;
                }
                Some(())
            }
            0x04 => self.varints(3),
            0x05 | 0x11 | 0x15 => self.varints(2),
            0x06 => {
                self.varint()?;
                self.counted().map(drop)
            }
            0x07 => self.counted().map(drop),
            0x10 | 0x12 | 0x13 | 0x14 | 0x16 | 0x17 | 0x19 => self.varint().map(drop),
            0x18 => {
                self.varints(2)?;
                let len = usize::from(*self.take(1)?.first()?);
                self.take(len + 16).map(drop)
            }
            0x1a | 0x1b => self.take(8).map(drop),
            0x1c => {
                self.varints(2)?;
                self.counted().map(drop)
            }
            0x1d => {
                self.varint()?;
                self.counted().map(drop)
            }
            0x30 => {
                self.rest();
                Some(())
            }
            0x31 => self.counted().map(drop),
            0xaf => self.varints(4),
            _ => None,
        }
    }
}

/// Client-initiated bidirectional streams (the requests): arrivals at
/// stream offsets and the body inside their HTTP/3 DATA frames.
fn request_streams(frames: &[StreamFrame]) -> BTreeMap<u64, Seen> {
    let mut streams: BTreeMap<u64, (Vec<Arrival>, Vec<u8>)> = BTreeMap::new();
    for frame in frames.iter().filter(|frame| frame.id % 4 == 0) {
        let (arrivals, bytes) = streams.entry(frame.id).or_default();
        let end = frame.offset + frame.data.len() as u64;
        arrivals.push(Arrival {
            range: frame.offset..end,
            at: frame.at,
        });
        if bytes.len() < end as usize {
            bytes.resize(end as usize, 0);
        }
        bytes[frame.offset as usize..end as usize].copy_from_slice(&frame.data);
    }
    streams
        .into_iter()
        .map(|(id, (arrivals, bytes))| {
            let contiguous = contiguous_len(&arrivals);
            let body = h3_body(&bytes[..contiguous as usize]);
            (
                id,
                Seen {
                    arrivals,
                    body,
                    released: Vec::new(),
                },
            )
        })
        .collect()
}

/// How many bytes from offset 0 arrived without a gap.
fn contiguous_len(arrivals: &[Arrival]) -> u64 {
    let mut end = 0;
    for piece in first_arrivals(arrivals) {
        if piece.range.start != end {
            break;
        }
        end = piece.range.end;
    }
    end
}

/// Where the DATA frames' payloads sit in a request stream.
fn h3_body(stream: &[u8]) -> Vec<BodySpan> {
    let mut reader = Reader::new(stream);
    let mut body = Vec::new();
    let mut body_len = 0;
    while !reader.is_done() {
        let Some(kind) = reader.varint() else { break };
        let Some(len) = reader.varint() else { break };
        let start = reader.pos as u64;
        let Some(payload) = reader.take(len as usize) else {
            break;
        };
        if kind == H3_DATA {
            body.push(BodySpan {
                body_start: body_len,
                transport_start: start,
                len: payload.len() as u64,
            });
            body_len += len;
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_numbers_decode_as_rfc_9000_a3() {
        assert_eq!(packet_number(Some(0xa82f30ea), 0x9b32, 16), 0xa82f9b32);
        assert_eq!(packet_number(None, 0, 8), 0);
        assert_eq!(packet_number(Some(255), 0x00, 8), 256);
    }

    #[test]
    fn stream_frames_are_found_among_the_others() {
        let payload = [
            0x02, 0x05, 0x00, 0x00, 0x00, // ACK: largest 5, delay 0, 0 ranges, first 0
            0x0e, 0x04, 0x40, 0x10, 0x03, b'a', b'b', b'c', // STREAM id 4, offset 16, len 3
            0x1e, // HANDSHAKE_DONE
            0x08, 0x00, b'x', b'y', // STREAM id 0, offset 0, to the end
        ];
        let frames = parse_stream_frames(&payload).unwrap();
        assert_eq!(frames, vec![(4, 16, &b"abc"[..]), (0, 0, &b"xy"[..])]);
        assert!(parse_stream_frames(&[0x21]).is_err());
    }

    #[test]
    fn h3_body_is_the_data_frames_after_the_headers() {
        let stream = [
            0x01, 0x02, b'h', b'h', 0x00, 0x03, b'a', b'b', b'c', 0x00, 0x01, b'd',
        ];
        assert_eq!(
            h3_body(&stream),
            vec![
                BodySpan {
                    body_start: 0,
                    transport_start: 6,
                    len: 3
                },
                BodySpan {
                    body_start: 3,
                    transport_start: 11,
                    len: 1
                }
            ]
        );
    }

    #[test]
    fn request_streams_keep_arrivals_and_stop_the_body_at_a_gap() {
        let frame = |id, offset, data: &[u8], at| StreamFrame {
            id,
            offset,
            data: data.to_vec(),
            at,
        };
        let frames = vec![
            frame(0, 0, &[0x01, 0x00, 0x00, 0x02, b'a'], 5),
            frame(3, 0, &[0x00], 5),
            frame(0, 5, b"b", 9),
            frame(4, 0, &[0x00, 0x02], 6),
            frame(4, 3, b"z", 6),
        ];
        let streams = request_streams(&frames);
        assert_eq!(streams.keys().copied().collect::<Vec<_>>(), vec![0, 4]);
        assert_eq!(streams[&0].arrivals.len(), 2);
        assert_eq!(
            streams[&0].body,
            vec![BodySpan {
                body_start: 0,
                transport_start: 4,
                len: 2
            }]
        );
        assert!(streams[&4].body.is_empty());
    }
}

#[cfg(test)]
mod pipeline_tests {
    use super::*;
    use crate::hol::fixtures::{quic_initial, quic_short, udp};
    use crate::hol::packets::udp_datagrams;

    const CID: [u8; 8] = [7; 8];

    /// STREAM frames (type 0x0e: offset and length) of request stream 0.
    fn stream_frame(offset: u8, data: &[u8]) -> Vec<u8> {
        let mut frame = vec![0x0e, 0x00, offset, data.len() as u8];
        frame.extend(data);
        frame.extend([0u8; 20]); // PADDING, so the sample fits
        frame
    }

    #[test]
    fn packets_open_across_a_key_update_and_frames_keep_their_datagrams_time() {
        let secret = [5u8; 32];
        let phase0 = TrafficKeys::derive(&secret, Suite::Aes128Gcm, Labels::Quic);
        let next = next_quic_secret(&secret, Suite::Aes128Gcm);
        let phase1 = TrafficKeys::derive(&next, Suite::Aes128Gcm, Labels::Quic);
        // HEADERS (empty), then a DATA frame of 4 bytes: "abcd".
        let stream = [0x01, 0x00, 0x00, 0x04, b'a', b'b', b'c', b'd'];
        let mut first = quic_initial(&CID);
        first.extend(quic_short(
            &phase0,
            &phase0,
            false,
            &CID,
            0,
            &stream_frame(0, &stream[..5]),
        ));
        let captured = vec![
            udp(&first, 10),
            udp(
                &quic_short(
                    &phase0,
                    &phase1,
                    true,
                    &CID,
                    2,
                    &stream_frame(6, &stream[6..]),
                ),
                30,
            ),
            udp(
                &quic_short(
                    &phase0,
                    &phase0,
                    false,
                    &CID,
                    1,
                    &stream_frame(5, &stream[5..6]),
                ),
                40,
            ),
        ];
        let datagrams = udp_datagrams(&captured, crate::hol::fixtures::server());
        let streams = h3_streams(&datagrams, &secret).unwrap();
        let seen = &streams[&0];
        let times: Vec<(u64, Nanos)> = seen
            .arrivals
            .iter()
            .map(|a| (a.range.start, a.at))
            .collect();
        assert_eq!(times, vec![(0, 10), (6, 30), (5, 40)]);
        assert_eq!(
            seen.body,
            vec![BodySpan {
                body_start: 0,
                transport_start: 4,
                len: 4
            }]
        );
    }

    #[test]
    fn a_packet_under_unknown_keys_is_an_error_not_a_gap() {
        let secret = [5u8; 32];
        let keys = TrafficKeys::derive(&secret, Suite::Aes128Gcm, Labels::Quic);
        let stranger = TrafficKeys::derive(&[6u8; 32], Suite::Aes128Gcm, Labels::Quic);
        let mut first = quic_initial(&CID);
        first.extend(quic_short(
            &keys,
            &keys,
            false,
            &CID,
            0,
            &stream_frame(0, b"ab"),
        ));
        let captured = vec![
            udp(&first, 10),
            udp(
                &quic_short(&keys, &stranger, false, &CID, 1, &stream_frame(2, b"cd")),
                20,
            ),
        ];
        let datagrams = udp_datagrams(&captured, crate::hol::fixtures::server());
        let err = h3_streams(&datagrams, &secret).unwrap_err();
        assert!(
            err.to_string()
                .contains("1 QUIC 1-RTT packet(s) did not open"),
            "{err}"
        );
    }
}
