//! From a run's capture, secret and reads to each stream's stall and
//! completion. Pure: no clock, no socket.

use std::collections::BTreeMap;
use std::net::SocketAddrV4;

use h3lab_results::Proto;

use super::packets::{tcp_stream, udp_datagrams, Captured};
use super::report::StreamResult;
use super::timeline::{stream_hol, Seen, StreamTimeline};
use super::{drive::ReadLog, quic, tls};

/// Each stream's figures, in stream order.
pub fn analyse(
    proto: Proto,
    server: SocketAddrV4,
    captured: &[Captured],
    secret: &[u8],
    responses: &[ReadLog],
) -> anyhow::Result<Vec<StreamResult>> {
    let seen = match proto {
        Proto::H3 => quic::h3_streams(&udp_datagrams(captured, server), secret)?,
        Proto::H2 => {
            let stream = tcp_stream(captured, server)?;
            tls::h2_streams(&tls::application_data(&stream, secret)?)
        }
        Proto::H1 | Proto::Auto => {
            anyhow::bail!("`probe hol` compares h2 and h3, each on one connection")
        }
    };
    Ok(responses
        .iter()
        .map(|response| stream_result(response, &seen))
        .collect())
}

fn stream_result(response: &ReadLog, seen: &BTreeMap<u64, Seen>) -> StreamResult {
    let seen = seen.get(&response.stream_id).cloned().unwrap_or_default();
    let timeline = StreamTimeline {
        requested_at: response.requested_at,
        arrivals: seen.arrivals,
        body: seen.body,
        reads: response.reads.clone(),
        released: seen.released,
    };
    let ms = |nanos: u64| nanos as f64 / 1e6;
    match stream_hol(&timeline) {
        Ok(hol) => StreamResult {
            stream_id: response.stream_id,
            body_bytes: hol.body_bytes,
            stall_ms: Some(ms(hol.stall_ns)),
            transport_order_wait_ms: hol.transport_order_wait_ns.map(ms),
            completion_ms: Some(ms(hol.completion_ns)),
            unmeasured: None,
        },
        Err(why) => StreamResult {
            stream_id: response.stream_id,
            body_bytes: response.reads.last().map_or(0, |read| read.body_end),
            stall_ms: None,
            transport_order_wait_ms: None,
            completion_ms: response
                .reads
                .last()
                .map(|read| ms(read.at.saturating_sub(response.requested_at))),
            unmeasured: Some(why.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hol::fixtures::{h2_frame, server, tcp, tls_record};
    use crate::hol::keys::{Labels, Suite, TrafficKeys};
    use crate::hol::timeline::Read;

    const MS: u64 = 1_000_000;
    const DATA: u8 = 0;
    const HEADERS: u8 = 1;
    const END_HEADERS: u8 = 4;

    /// One 100-byte response on stream `id`: its HEADERS and DATA frames.
    fn response(id: u32) -> Vec<u8> {
        let mut frames = h2_frame(HEADERS, END_HEADERS, id, b"\x88");
        frames.extend(h2_frame(DATA, 0, id, &[b'x'; 100]));
        frames
    }

    fn read_at(stream_id: u64, at_ms: u64) -> ReadLog {
        ReadLog {
            stream_id,
            requested_at: 0,
            reads: vec![Read {
                body_end: 100,
                at: at_ms * MS,
            }],
        }
    }

    /// Stream 1's record is lost and comes again at 80 ms; stream 3's,
    /// behind it on the connection, arrived at 40 ms. TCP hands both over
    /// at 80 ms, the application reads both at 81 ms: stream 3 waited
    /// 41 ms for another stream's loss, stream 1 only 1 ms.
    #[test]
    fn an_h2_stream_behind_another_streams_loss_stalls_and_that_one_does_not() {
        let secret = [9u8; 48];
        let keys = TrafficKeys::derive(&secret, Suite::Aes256Gcm, Labels::Tls);
        let handshake_keys = TrafficKeys::derive(&[1u8; 48], Suite::Aes256Gcm, Labels::Tls);
        let handshake = tls_record(&handshake_keys, 0, 22, b"finished");
        let ticket = tls_record(&keys, 0, 22, b"ticket");
        let first = tls_record(&keys, 1, 23, &response(1));
        let second = tls_record(&keys, 2, 23, &response(3));
        let isn = 1000u32;
        let at = |offset: usize| isn.wrapping_add(1 + offset as u32);
        let mut offset = 0;
        let mut next = |bytes: &[u8]| {
            let seq = at(offset);
            offset += bytes.len();
            seq
        };
        let (handshake_seq, ticket_seq) = (next(&handshake), next(&ticket));
        let (first_seq, second_seq) = (next(&first), next(&second));
        let captured = vec![
            tcp(isn, 0x12, b"", 0),
            tcp(handshake_seq, 0x10, &handshake, 10 * MS),
            tcp(ticket_seq, 0x10, &ticket, 20 * MS),
            tcp(second_seq, 0x10, &second, 40 * MS),
            tcp(first_seq, 0x10, &first, 80 * MS),
        ];
        let reads = [read_at(1, 81), read_at(3, 81)];
        let streams = analyse(Proto::H2, server(), &captured, &secret, &reads).unwrap();
        let order: Vec<Option<f64>> = streams.iter().map(|s| s.transport_order_wait_ms).collect();
        assert_eq!(order, vec![Some(0.0), Some(40.0)]);
        let stalls: Vec<(u64, Option<f64>)> =
            streams.iter().map(|s| (s.stream_id, s.stall_ms)).collect();
        assert_eq!(stalls, vec![(1, Some(1.0)), (3, Some(41.0))]);
        assert!(streams
            .iter()
            .all(|s| s.body_bytes == 100 && s.completion_ms == Some(81.0)));
    }

    #[test]
    fn a_capture_without_the_streams_bytes_leaves_them_unmeasured() {
        let secret = [9u8; 48];
        let keys = TrafficKeys::derive(&secret, Suite::Aes256Gcm, Labels::Tls);
        let only = tls_record(&keys, 0, 23, &response(1));
        let captured = vec![tcp(7, 0x12, b"", 0), tcp(8, 0x10, &only, 5 * MS)];
        let reads = [read_at(1, 6), read_at(3, 9)];
        let streams = analyse(Proto::H2, server(), &captured, &secret, &reads).unwrap();
        assert_eq!(streams[0].stall_ms, Some(1.0));
        assert_eq!(streams[1].stall_ms, None);
        assert_eq!(streams[1].completion_ms, Some(9.0));
        assert!(
            streams[1]
                .unmeasured
                .as_deref()
                .unwrap()
                .contains("no frame"),
            "{:?}",
            streams[1]
        );
    }
}
