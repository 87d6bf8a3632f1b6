//! The I/O of the cases h3i cannot send: one QUIC connection on quiche
//! itself, with the client's transport parameters bent by the case, or a
//! raw frame of the case's sent in a packet of the case's type (both
//! through h3lab's patch of quiche, vendor/README.md), or raw requests
//! built from the server's SETTINGS; then, if the server lets the
//! connection live, a plain GET over quiche's HTTP/3 to tell "carried on"
//! from "stuck". h3i builds its own quiche configuration, a handshake that
//! fails comes back from it as an error without the server's close, and it
//! does not read the server's control stream.

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use h3i::quiche;
use h3i::quiche::h3::NameValue;
use ring::rand::{SecureRandom, SystemRandom};

use crate::codes::H3_NO_ERROR;
use crate::judge::{StreamAnswer, Transcript};
use crate::options::Options;
use crate::suite::{request, How, RawFrame, RawRequests};

/// The largest UDP payload the client sends, as h3i's.
const DATAGRAM: usize = 1350;

/// The client's side of the connection: its own transport parameters as
/// h3i sets them, then the case's `bend`.
fn client_config(
    options: &Options,
    bend: fn(&mut quiche::Config),
) -> quiche::Result<quiche::Config> {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION)?;
    config.verify_peer(false);
    config.set_application_protos(quiche::h3::APPLICATION_PROTOCOL)?;
    config.set_max_idle_timeout(options.case_timeout.as_millis() as u64);
    config.set_max_recv_udp_payload_size(DATAGRAM);
    config.set_max_send_udp_payload_size(DATAGRAM);
    config.set_initial_max_data(10_000_000);
    config.set_initial_max_stream_data_bidi_local(1_000_000);
    config.set_initial_max_stream_data_bidi_remote(1_000_000);
    config.set_initial_max_stream_data_uni(1_000_000);
    config.set_initial_max_streams_bidi(100);
    config.set_initial_max_streams_uni(100);
    config.set_disable_active_migration(true);
    // No GREASE transport parameter, frame or stream: the GET after the
    // case is plain, so a server that stumbles on GREASE is not taken
    // for one that refused the case.
    config.grease(false);
    bend(&mut config);
    Ok(config)
}

/// Connects (with the case's transport parameters), sends the case's raw
/// frame or requests, and reads what the server did: closed (with which
/// code), or answered a GET sent once the handshake is done, or neither
/// within the case timeout. An error means the case could not run.
pub(crate) fn exchange(options: &Options, how: &How) -> Result<Transcript, String> {
    let (bend, mut plan) = match *how {
        How::Http3 { .. } => return Err("an HTTP/3 case goes through h3i".to_string()),
        How::TransportParameters(bend) => (bend, Plan::default()),
        How::Frame(frame) => (
            leave_as_is as _,
            Plan {
                frame: Some(frame),
                requests: None,
            },
        ),
        How::AfterSettings(requests) => (
            leave_as_is as _,
            Plan {
                frame: None,
                requests: Some(requests),
            },
        ),
    };
    let mut config = client_config(options, bend).map_err(|err| format!("quiche: {err}"))?;
    let bind: SocketAddr = match options.address {
        SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(bind).map_err(|err| format!("binding {bind}: {err}"))?;
    let local = socket.local_addr().map_err(|err| err.to_string())?;
    let mut scid = [0; quiche::MAX_CONN_ID_LEN];
    SystemRandom::new()
        .fill(&mut scid)
        .map_err(|_| "no random bytes for a connection ID".to_string())?;
    let mut connection = quiche::connect(
        options.sni(),
        &quiche::ConnectionId::from_ref(&scid),
        local,
        options.address,
        &mut config,
    )
    .map_err(|err| format!("quiche: {err}"))?;
    let answer = drive(options, &socket, &mut connection, &mut plan)?;
    if answer.is_some() {
        let _ = connection.close(true, H3_NO_ERROR, b"case over");
        let _ = flush(&socket, &mut connection);
    }
    Ok(Transcript {
        closed_by_server: (connection.peer_error())
            .map(|error| (error.is_app, error.error_code, error.reason.clone())),
        case_stream: None,
        follow_up: answer,
        plain_status: None,
    })
}

fn leave_as_is(_: &mut quiche::Config) {}

/// What the client sends beside its transport parameters, each taken (set
/// to `None`) once sent.
#[derive(Default)]
struct Plan {
    frame: Option<RawFrame>,
    requests: Option<RawRequests>,
}

/// Sends and receives until the server closes, answers the GET sent once
/// the handshake is done (and the case is out), or the case timeout
/// passes.
fn drive(
    options: &Options,
    socket: &UdpSocket,
    connection: &mut quiche::Connection,
    plan: &mut Plan,
) -> Result<Option<StreamAnswer>, String> {
    let mut get = None;
    let deadline = Instant::now() + options.case_timeout;
    let mut buf = vec![0; 65_535];
    while !connection.is_closed() {
        flush(socket, connection)?;
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let wait = connection.timeout().unwrap_or(left).min(left);
        let wait = wait.max(Duration::from_millis(1));
        socket
            .set_read_timeout(Some(wait))
            .map_err(|err| err.to_string())?;
        match socket.recv_from(&mut buf) {
            Ok((len, from)) => {
                let info = quiche::RecvInfo {
                    from,
                    to: socket.local_addr().map_err(|err| err.to_string())?,
                };
                // A packet quiche cannot use is the server's problem, not
                // the case's: the close or the timeout will say so.
                let _ = connection.recv(&mut buf[..len], info);
            }
            Err(err) if matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                connection.on_timeout();
            }
            Err(err) => return Err(format!("receiving: {err}")),
        }
        if let Some(raw) = plan.frame.filter(|raw| is_due(raw, connection)) {
            send_raw(socket, connection, raw)?;
            plan.frame = None;
        }
        if connection.is_established() && plan.frame.is_none() {
            if let Some(answer) = follow_up(options, connection, &mut get, &mut plan.requests)? {
                return Ok(Some(answer));
            }
        }
    }
    if connection.peer_error().is_some() {
        return Ok(None);
    }
    if let Some(error) = connection.local_error() {
        // quiche closed it on something the server sent, such as a frame
        // for the raw frame's stream, which quiche never opened: the server
        // did not close, but neither did the case get to see it carry on.
        return Err(format!(
            "the client closed the connection (QUIC code {:#x}) on a frame from the server \
             before the server closed it or answered the GET after the case",
            error.error_code
        ));
    }
    if plan.requests.is_some() && get.is_some() {
        return Err(format!(
            "the server sent no SETTINGS within {:?}, and the case is built from them",
            options.case_timeout
        ));
    }
    Ok(None)
}

/// Whether the client can send the raw frame now: it has the server's
/// transport parameters (so the keys of Handshake packets), and for a
/// 1-RTT frame, the handshake is done.
fn is_due(frame: &RawFrame, connection: &quiche::Connection) -> bool {
    connection.peer_transport_params().is_some()
        && (frame.packet != quiche::Type::Short || connection.is_established())
}

/// Queues the raw frame and sends it at once, before any HTTP/3 stream
/// opens, so the server reads it first.
fn send_raw(
    socket: &UdpSocket,
    connection: &mut quiche::Connection,
    frame: RawFrame,
) -> Result<(), String> {
    let bytes = (frame.build)(connection)?;
    let quiche_failed = |err: quiche::Error| format!("quiche: {err}");
    connection
        .h3lab_send_raw_frame(frame.packet, bytes)
        .map_err(quiche_failed)?;
    connection.send_ack_eliciting().map_err(quiche_failed)?;
    flush(socket, connection)
}

/// The client's HTTP/3 side, and the plain GET's stream once sent.
struct FollowUp {
    h3: quiche::h3::Connection,
    get: Option<u64>,
}

/// Opens HTTP/3, sends the case's raw requests once the server's SETTINGS
/// have come, then the plain GET, and reads its answer if it has come.
fn follow_up(
    options: &Options,
    connection: &mut quiche::Connection,
    state: &mut Option<FollowUp>,
    requests: &mut Option<RawRequests>,
) -> Result<Option<StreamAnswer>, String> {
    let failed = |err: quiche::h3::Error| format!("HTTP/3 after the handshake: {err}");
    if state.is_none() {
        let config = quiche::h3::Config::new().map_err(failed)?;
        let h3 = quiche::h3::Connection::with_transport(connection, &config).map_err(failed)?;
        *state = Some(FollowUp { h3, get: None });
    }
    let Some(FollowUp { h3, get }) = state.as_mut() else {
        return Ok(None);
    };
    if let Some(build) = *requests {
        let Some(settings) = read_settings(connection, h3)? else {
            return Ok(None);
        };
        for (stream_id, bytes) in build(connection, &settings)? {
            (connection.stream_send(stream_id, &bytes, true))
                .map_err(|err| format!("sending on stream {stream_id}: {err}"))?;
        }
        *requests = None;
    }
    if get.is_none() {
        let stream =
            (h3.send_request(connection, &request(&options.origin), true)).map_err(failed)?;
        *get = Some(stream);
    }
    let Some(stream) = get else {
        return Ok(None);
    };
    loop {
        match h3.poll(connection) {
            Ok((id, quiche::h3::Event::Headers { list, .. })) if id == *stream => {
                let status = list.iter().find(|field| field.name() == b":status");
                let status = status.and_then(|field| std::str::from_utf8(field.value()).ok());
                let status = status.and_then(|status| status.parse().ok()).unwrap_or(0);
                return Ok(Some(StreamAnswer::Status(status)));
            }
            Ok((id, quiche::h3::Event::Reset(code))) if id == *stream => {
                return Ok(Some(StreamAnswer::Reset(code)));
            }
            Ok(_) => continue,
            Err(quiche::h3::Error::Done) => return Ok(None),
            Err(err) => return Err(failed(err)),
        }
    }
}

/// The server's SETTINGS (identifier and value, as sent), once they have
/// come; the events read meanwhile are none of the case's.
fn read_settings(
    connection: &mut quiche::Connection,
    h3: &mut quiche::h3::Connection,
) -> Result<Option<Vec<(u64, u64)>>, String> {
    loop {
        if let Some(settings) = h3.peer_settings_raw() {
            return Ok(Some(settings.to_vec()));
        }
        match h3.poll(connection) {
            Ok(_) => continue,
            Err(quiche::h3::Error::Done) => return Ok(None),
            Err(err) => return Err(format!("HTTP/3 before the server's SETTINGS: {err}")),
        }
    }
}

/// Sends every packet quiche has ready.
fn flush(socket: &UdpSocket, connection: &mut quiche::Connection) -> Result<(), String> {
    let mut out = [0; DATAGRAM];
    loop {
        match connection.send(&mut out) {
            Ok((len, info)) => {
                socket
                    .send_to(&out[..len], info.to)
                    .map_err(|err| format!("sending to {}: {err}", info.to))?;
            }
            Err(quiche::Error::Done) => return Ok(()),
            Err(err) => return Err(format!("quiche: {err}")),
        }
    }
}
