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
        Proto::H1 => {
            anyhow::bail!("`probe hol` compares h2 and h3; h1 has one stream per connection")
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
    };
    let ms = |nanos: u64| nanos as f64 / 1e6;
    match stream_hol(&timeline) {
        Ok(hol) => StreamResult {
            stream_id: response.stream_id,
            body_bytes: hol.body_bytes,
            stall_ms: Some(ms(hol.stall_ns)),
            completion_ms: Some(ms(hol.completion_ns)),
            unmeasured: None,
        },
        Err(why) => StreamResult {
            stream_id: response.stream_id,
            body_bytes: response.reads.last().map_or(0, |read| read.body_end),
            stall_ms: None,
            completion_ms: response
                .reads
                .last()
                .map(|read| ms(read.at.saturating_sub(response.requested_at))),
            unmeasured: Some(why.to_string()),
        },
    }
}
