//! What an h3 server does beyond the handshake, each read from what it
//! sends: its `server` header, whether it takes 0-RTT early data, the
//! QPACK dynamic table its SETTINGS offer, whether a connection carries on
//! when the client moves to a new UDP port, how much of a response it
//! sends in the first round trip (its initial window), and how it cuts its
//! sending after one lost datagram (its congestion controller's family).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h3lab_results::offer::{H3Features, LossWindows};
use h3lab_results::Proto;
use http::header::SERVER;
use http::{HeaderMap, Method};
use tokio::time::timeout;

use crate::connect::{Connection, Connector};
use crate::error::ClientError;
use crate::marks::{AtMark, Marks, Mute};
use crate::request::RequestTemplate;
use crate::response::Response;
use crate::target::{ResolveRule, Target};
use crate::tls::{client_tls_config, TlsOptions};

/// Asks the h3 server of `url` (pinned by `resolve`) each question on
/// connections of its own, each within `wait`. The first round trip is
/// counted on `window_url`, a response on the same origin larger than the
/// server's initial window.
pub async fn check_h3_features(
    url: &str,
    window_url: &str,
    resolve: &[ResolveRule],
    tls: &TlsOptions,
    wait: Duration,
) -> anyhow::Result<H3Features> {
    let target = Arc::new(Target::parse(url)?);
    let addr = target.resolve(resolve).await?;
    let tls_config = client_tls_config(tls, Proto::H3)?;
    let connector = Connector::new(target.clone(), addr, Proto::H3, tls_config.clone(), wait)?;
    let get = RequestTemplate::new(&target, Method::GET, HeaderMap::new(), Bytes::new());
    let mut features = H3Features {
        qpack_max_table_capacity: qpack_table_capacity(&connector, wait).await,
        ..H3Features::default()
    };
    let window_target = Target::parse(window_url)?;
    let window_get =
        RequestTemplate::new(&window_target, Method::GET, HeaderMap::new(), Bytes::new());
    let path_rtt = long_path_round_trip(&connector, &get, wait).await;
    let counted = match path_rtt {
        Ok(rtt) => first_round_trip(&target, addr, &tls_config, &window_get, wait, rtt).await,
        Err(ref why) => Err(why.clone()),
    };
    features.first_round_trip_bytes = match counted {
        Ok(bytes) => Some(bytes),
        Err(why) => {
            features.notes.push(format!("initial window: {why}"));
            None
        }
    };
    for attempt in 1..=LOSS_TRIES {
        let windows = match path_rtt {
            Ok(rtt) => loss_windows(&target, addr, &tls_config, &window_get, wait, rtt).await,
            Err(ref why) => Err(why.clone()),
        };
        match windows {
            Ok(windows) => features.loss_windows.push(windows),
            // What failed once (a path too short, a body too small, a
            // server that stalls) would fail again: no more tries.
            Err(why) => {
                let note = format!("after one loss: try {attempt} of {LOSS_TRIES} failed: {why}");
                features.notes.push(note);
                break;
            }
        }
    }
    // This connection also leaves the session ticket 0-RTT needs.
    let mut primed = false;
    if let Ok(connection) = connector.connect().await {
        let mut sender = connection.sender;
        if let Ok(Ok(response)) = timeout(wait, sender.send(&get)).await {
            primed = true;
            features.server_header = (response.headers().get(SERVER))
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
            let _ = timeout(wait, response.drain()).await;
            let moved = connector.rebind(SocketAddr::new(unspecified(addr.ip()), 0));
            let answered = match moved {
                Ok(()) => matches!(timeout(wait, sender.send(&get)).await, Ok(Ok(_))),
                Err(_) => false,
            };
            features.survives_new_port = Some(answered);
        }
    }
    features.zero_rtt = match connector.connect_h3_early(&get).await {
        Ok(Some((_, _sender, _, accepted))) => Some(accepted),
        // A ticket allowing early data would have come with the answer.
        Ok(None) if primed => Some(false),
        Ok(None) => None,
        Err(err) => {
            features
                .notes
                .push(format!("0-RTT: the attempt failed: {err}"));
            None
        }
    };
    connector.close().await;
    Ok(features)
}

/// Below this round trip one flight cannot be told from the next: the
/// server's own turnaround and the client's reading take a good part of it.
const SHORTEST_RTT_FOR_FLIGHTS: Duration = Duration::from_millis(5);

/// Tries of the loss probe, each on two connections of their own: windows
/// at the same point of the same response differ by a tenth or so from one
/// connection to the next, and a path that loses packets itself may add a
/// loss to a try, so the family is read from the median windows.
const LOSS_TRIES: usize = 5;

/// Requests whose round trips sample the path before the flights are
/// counted.
const ROUND_TRIP_SAMPLES: usize = 8;

/// The loss probe marks the datagram that arrives once this much of the
/// response came: well past the first flight of every stack measured (45
/// KB at 32 packets), so the window is large against the few datagrams by
/// which a count may be off (at 64 KB, CUBIC read 0.60 to 0.68 on
/// `broadband` and NewReno up to 0.64), while small against the path's
/// (broadband carries 250 KB a round trip, and queues as much), so the
/// window the server sends when the client falls silent gets through.
const MARK_AFTER_BYTES: u64 = 150_000;

/// The response body bytes the server sends before it hears back, on a
/// connection of its own: what its initial congestion window allows, less
/// what of its handshake is still unacknowledged and the framing. Half a
/// round trip after the request leaves, before any of the response can
/// arrive, the client goes silent; the server sends its window (paced or
/// not) and waits, a whole probe timeout, for acknowledgements that never
/// come. The first silence of half a round trip ends the count, so a busy
/// client that reads late still counts only the first flight. (A cut at a
/// time after the response's head, which this replaced, counted part of
/// the next flight in CI.) The error says why there is no figure.
async fn first_round_trip(
    target: &Arc<Target>,
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
    get: &RequestTemplate,
    wait: Duration,
    rtt: Duration,
) -> Result<u64, String> {
    let count = async |connector: &Connector, marks: &Marks| {
        first_flight(connector, marks.mute(), get, wait, rtt).await
    };
    on_a_marked_connector(target, addr, tls, wait, count).await
}

/// What `count` counts on a connector of its own, whose socket its
/// [`Marks`] record and mute; then the socket sends again, so the server
/// hears the close and frees the connection at once.
async fn on_a_marked_connector(
    target: &Arc<Target>,
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
    wait: Duration,
    count: impl AsyncFnOnce(&Connector, &Marks) -> Result<u64, String>,
) -> Result<u64, String> {
    let (connector, marks) = Connector::new_marking(target.clone(), addr, tls.clone(), wait)
        .map_err(|err| format!("no client: {err:#}"))?;
    let counted = count(&connector, &marks).await;
    marks.mute().set(false);
    connector.close().await;
    counted
}

async fn first_flight(
    connector: &Connector,
    mute: &Mute,
    get: &RequestTemplate,
    wait: Duration,
    rtt: Duration,
) -> Result<u64, String> {
    let mut connection = fresh_connection(connector).await?;
    let quiet = rtt / 2;
    let silence = async {
        tokio::time::sleep(quiet).await;
        mute.set(true);
    };
    let (answer, ()) = tokio::join!(timeout(wait, connection.sender.send(get)), silence);
    let mut response = successful(answer)?;
    let mut bytes = 0;
    loop {
        match timeout(quiet, response.chunk()).await {
            Err(_) if bytes == 0 => return Err("no body came before the server waited".to_string()),
            Err(_) => return Ok(bytes),
            Ok(Ok(Some(chunk))) => bytes += chunk.len() as u64,
            Ok(Ok(None)) => {
                return Err(format!(
                    "the whole body ({bytes} B) came in the first flight; probe a larger response"
                ))
            }
            Ok(Err(err)) => return Err(format!("the body failed: {err}")),
        }
    }
}

/// Requests on one connection whose round trips sample the path: its
/// least round trip is the path's, once a busy machine has let one of
/// them through without delay (a handshake's alone, on loopback in CI,
/// read 5 ms). An error when no sample came or the path is too short to
/// tell one flight from the next.
async fn long_path_round_trip(
    connector: &Connector,
    get: &RequestTemplate,
    wait: Duration,
) -> Result<Duration, String> {
    let mut connection = fresh_connection(connector).await?;
    for _ in 0..ROUND_TRIP_SAMPLES {
        if let Ok(response) = successful(timeout(wait, connection.sender.send(get)).await) {
            let _ = timeout(wait, response.drain()).await;
        }
    }
    let rtt = (connection.sender.close_quic()).ok_or("no round-trip estimate")?;
    if rtt < SHORTEST_RTT_FOR_FLIGHTS {
        return Err(format!(
            "the path's round trip ({:.1} ms) is too short to tell one flight from the next; \
             probe over a path of {} ms or more",
            rtt.as_secs_f64() * 1e3,
            SHORTEST_RTT_FOR_FLIGHTS.as_millis()
        ));
    }
    Ok(rtt)
}

async fn fresh_connection(connector: &Connector) -> Result<Connection, String> {
    (connector.connect().await).map_err(|err| format!("no connection: {err}"))
}

/// The response to a probe's request, when it came in time and succeeded.
fn successful(
    answer: Result<Result<Response, ClientError>, tokio::time::error::Elapsed>,
) -> Result<Response, String> {
    let response = match answer {
        Ok(Ok(response)) => response,
        Ok(Err(err)) => return Err(format!("the request failed: {err}")),
        Err(_) => return Err("no answer (lost on the way?)".to_string()),
    };
    match response.status().is_success() {
        true => Ok(response),
        false => Err(format!("the server answered {}", response.status())),
    }
}

/// The server's window where the client drops a datagram, and once it
/// knew of that loss, each read on a connection of its own.
async fn loss_windows(
    target: &Arc<Target>,
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
    get: &RequestTemplate,
    wait: Duration,
    rtt: Duration,
) -> Result<LossWindows, String> {
    let window = |lose_one| window_at_mark(target, addr, tls, get, wait, lose_one, rtt);
    Ok(LossWindows {
        before_bytes: window(false).await?,
        after_bytes: window(true).await?,
    })
}

/// What the server sends once the client falls silent, as in the first
/// flight: at the datagram that arrives [`MARK_AFTER_BYTES`] into the
/// response, or, to `lose_one`, a round trip and a quarter after the
/// client dropped that datagram. Half a round trip after the drop the
/// server heard of the gap (a client acknowledges the datagram after one
/// at once, RFC 9000 §13.2.1) and cut its window; a round trip later its
/// recovery is over, and it sends up to the new window, however it spread
/// its sending during recovery (quiche's proportional rate reduction holds
/// it below the window until then). A controller that grows slowly after
/// a cut (Reno, CUBIC) has grown little in the quarter after.
async fn window_at_mark(
    target: &Arc<Target>,
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
    get: &RequestTemplate,
    wait: Duration,
    lose_one: bool,
    rtt: Duration,
) -> Result<u64, String> {
    let count = async |connector: &Connector, marks: &Marks| {
        count_window_at_mark(connector, marks, get, wait, lose_one, rtt).await
    };
    on_a_marked_connector(target, addr, tls, wait, count).await
}

async fn count_window_at_mark(
    connector: &Connector,
    marks: &Marks,
    get: &RequestTemplate,
    wait: Duration,
    lose_one: bool,
    rtt: Duration,
) -> Result<u64, String> {
    let mut connection = fresh_connection(connector).await?;
    let at_mark = match lose_one {
        true => AtMark::DropThenMute(rtt * 5 / 4),
        false => AtMark::Mute,
    };
    marks.arm(MARK_AFTER_BYTES, at_mark);
    let mut response = successful(timeout(wait, connection.sender.send(get)).await)?;
    // A server that halves its window waits half a round trip before it
    // sends again (while half its flight is still out); one that sent its
    // window waits a probe timeout, more than a round trip.
    let quiet = rtt * 4 / 5;
    // Enough for the slowest of slow starts to pass the mark on a long path.
    let budget = wait.max(20 * rtt);
    let deadline = tokio::time::Instant::now() + budget;
    loop {
        let now = Instant::now();
        match (marks.muted_at()).and_then(|from| marks.until_silence(from, quiet, now)) {
            Some(0) => return Err("nothing came once the client fell silent".to_string()),
            Some(bytes) => return Ok(bytes),
            None => {}
        }
        // Wakes at least four times a quiet spell to look again.
        let look_again = deadline.min(tokio::time::Instant::now() + quiet / 4);
        match tokio::time::timeout_at(look_again, response.chunk()).await {
            Err(_) if tokio::time::Instant::now() >= deadline => {
                return Err(format!(
                    "the server had not fallen silent {:.1} s into the response",
                    budget.as_secs_f64()
                ))
            }
            Err(_) | Ok(Ok(Some(_))) => {}
            Ok(Ok(None)) => {
                return Err(format!(
                    "the body ended before the window was counted ({MARK_AFTER_BYTES} B in); \
                     probe a larger response"
                ))
            }
            Ok(Err(err)) => return Err(format!("the body failed: {err}")),
        }
    }
}

fn unspecified(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

/// The server's `SETTINGS_QPACK_MAX_TABLE_CAPACITY`, from its control
/// stream on a QUIC connection of its own, where h3 would consume it.
async fn qpack_table_capacity(connector: &Connector, wait: Duration) -> Option<u64> {
    let conn = connector.connect_quic().await.ok()?;
    let settings = timeout(wait, async {
        loop {
            let mut stream = conn.accept_uni().await.ok()?;
            let mut received = Vec::new();
            loop {
                match control_stream_settings(&received) {
                    ControlStream::Settings(settings) => return Some(settings),
                    ControlStream::Other => break,
                    ControlStream::Incomplete => {}
                }
                let chunk = stream.read_chunk(4096, true).await.ok()??;
                received.extend_from_slice(&chunk.bytes);
            }
        }
    })
    .await;
    conn.close(0u32.into(), b"");
    let settings = settings.ok()??;
    // RFC 9204 §5: an absent setting is its default, 0.
    Some(
        settings
            .get(&QPACK_MAX_TABLE_CAPACITY)
            .copied()
            .unwrap_or(0),
    )
}

const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;

/// What the start of a unidirectional stream says.
#[derive(Debug, PartialEq)]
enum ControlStream {
    /// A control stream opening with its SETTINGS frame, as RFC 9114
    /// §6.2.1 requires: each setting's identifier and value.
    Settings(std::collections::BTreeMap<u64, u64>),
    /// Another stream type, or a control stream that does not open with
    /// SETTINGS.
    Other,
    /// More bytes are needed.
    Incomplete,
}

fn control_stream_settings(bytes: &[u8]) -> ControlStream {
    const CONTROL: u64 = 0x00;
    const SETTINGS: u64 = 0x04;
    let mut rest = bytes;
    match varint(&mut rest) {
        None => return ControlStream::Incomplete,
        Some(CONTROL) => {}
        // A QPACK or reserved stream may send nothing more: decide now.
        Some(_) => return ControlStream::Other,
    }
    let Some((frame_type, length)) = varint(&mut rest).zip(varint(&mut rest)) else {
        return ControlStream::Incomplete;
    };
    if frame_type != SETTINGS {
        return ControlStream::Other;
    }
    let Some(mut payload) = usize::try_from(length).ok().and_then(|n| rest.get(..n)) else {
        return ControlStream::Incomplete;
    };
    let mut settings = std::collections::BTreeMap::new();
    while !payload.is_empty() {
        match (varint(&mut payload), varint(&mut payload)) {
            (Some(id), Some(value)) => settings.insert(id, value),
            _ => return ControlStream::Other,
        };
    }
    ControlStream::Settings(settings)
}

/// Reads a QUIC variable-length integer (RFC 9000 §16) off the front of
/// `bytes`; `None` when it is cut short.
fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let first = *bytes.first()?;
    let length = 1usize << (first >> 6);
    let encoded = bytes.get(..length)?;
    let value = (encoded[1..].iter()).fold(u64::from(first & 0x3f), |value, byte| {
        (value << 8) | u64::from(*byte)
    });
    *bytes = &bytes[length..];
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_of_every_length_decode() {
        // RFC 9000 §A.1's examples.
        for (encoded, value) in [
            (&[0x25][..], 37),
            (&[0x7b, 0xbd][..], 15_293),
            (&[0x9d, 0x7f, 0x3e, 0x7d][..], 494_878_333),
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..],
                151_288_809_941_952_652,
            ),
        ] {
            let mut bytes = encoded;
            assert_eq!(varint(&mut bytes), Some(value));
            assert!(bytes.is_empty());
            assert_eq!(varint(&mut &encoded[..encoded.len() - 1]), None);
        }
    }

    #[test]
    fn a_control_streams_settings_are_read_and_other_streams_are_not() {
        // Control stream, SETTINGS of 8 bytes: QPACK table 4096 (a 2-byte
        // varint), blocked streams 100, and a GREASE setting 0x21 = 0.
        let stream = [
            0x00, 0x04, 0x08, 0x01, 0x50, 0x00, 0x07, 0x40, 0x64, 0x21, 0x00,
        ];
        let settings = [(0x01, 4096), (0x07, 100), (0x21, 0)].into();
        assert_eq!(
            control_stream_settings(&stream),
            ControlStream::Settings(settings)
        );
        for cut in 0..stream.len() {
            assert_eq!(
                control_stream_settings(&stream[..cut]),
                ControlStream::Incomplete
            );
        }
        // A QPACK encoder stream (0x02) is told at its first byte; a
        // control stream whose first frame is not SETTINGS is not read on.
        assert_eq!(control_stream_settings(&[0x02]), ControlStream::Other);
        assert_eq!(
            control_stream_settings(&[0x00, 0x07, 0x01, 0x00]),
            ControlStream::Other
        );
    }
}
