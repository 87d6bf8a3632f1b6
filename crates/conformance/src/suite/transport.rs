//! QUIC transport cases (RFC 9000): transport parameters a server must
//! refuse (§7.4, §18.2), and frames it must refuse: of an unknown type,
//! in a packet type that may not carry them, that only a server may send,
//! on a stream in the wrong direction, past its own limits. quiche sends
//! the invalid parameter values as set; the rest go through h3lab's patch
//! of quiche (raw transport parameters and raw frames, vendor/README.md).
//! `handshake` drives these cases on quiche directly, because h3i builds
//! its own quiche configuration and reports nothing of a handshake that
//! fails, which is where many of them end.

use super::*;

const STREAM_COUNT: &str = "If a max_streams transport parameter or a MAX_STREAMS frame is \
    received with a value greater than 2^60, ... the connection MUST be closed immediately with \
    a connection error of type TRANSPORT_PARAMETER_ERROR if the offending value was received \
    in a transport parameter";
/// One more than the most streams of a type a peer may allow (RFC 9000 §4.6).
const TOO_MANY_STREAMS: u64 = (1 << 60) + 1;

pub(super) const TRANSPORT_PARAMETERS: &[Case] = &[
    Case {
        id: "transport.max-udp-payload-size-below-1200",
        title: "the client's max_udp_payload_size is 1199",
        rfc: "RFC 9000 §7.4, §18.2",
        must: "[max_udp_payload_size] Values below 1200 are invalid. (§18.2) An endpoint MUST \
            treat receipt of a transport parameter with an invalid value as a connection error \
            of type TRANSPORT_PARAMETER_ERROR. (§7.4)",
        expect: Expect::Transport(&[TRANSPORT_PARAMETER_ERROR]),
        how: How::TransportParameters(|config| config.set_max_recv_udp_payload_size(1199)),
    },
    Case {
        id: "transport.max-ack-delay-2^14",
        title: "the client's max_ack_delay is 2^14 ms",
        rfc: "RFC 9000 §7.4, §18.2",
        must: "[max_ack_delay] Values of 2^14 or greater are invalid. (§18.2) An endpoint MUST \
            treat receipt of a transport parameter with an invalid value as a connection error \
            of type TRANSPORT_PARAMETER_ERROR. (§7.4)",
        expect: Expect::Transport(&[TRANSPORT_PARAMETER_ERROR]),
        how: How::TransportParameters(|config| config.set_max_ack_delay(1 << 14)),
    },
    Case {
        id: "transport.max-streams-bidi-over-2^60",
        title: "the client's initial_max_streams_bidi is 2^60 + 1",
        rfc: "RFC 9000 §4.6",
        must: STREAM_COUNT,
        expect: Expect::Transport(&[TRANSPORT_PARAMETER_ERROR]),
        how: How::TransportParameters(|config| {
            config.set_initial_max_streams_bidi(TOO_MANY_STREAMS)
        }),
    },
    Case {
        id: "transport.max-streams-uni-over-2^60",
        title: "the client's initial_max_streams_uni is 2^60 + 1",
        rfc: "RFC 9000 §4.6",
        must: STREAM_COUNT,
        expect: Expect::Transport(&[TRANSPORT_PARAMETER_ERROR]),
        how: How::TransportParameters(|config| {
            config.set_initial_max_streams_uni(TOO_MANY_STREAMS)
        }),
    },
    Case {
        id: "transport.reset-token-from-client",
        title: "the client's transport parameters carry a stateless_reset_token",
        rfc: "RFC 9000 §18.2",
        must: SERVER_ONLY_PARAMETER,
        expect: Expect::Transport(&[TRANSPORT_PARAMETER_ERROR]),
        how: How::TransportParameters(|config| {
            config.h3lab_raw_transport_parameters(&parameter(0x02, &[0x5a; 16]))
        }),
    },
    Case {
        id: "transport.original-dcid-from-client",
        title: "the client's transport parameters carry an original_destination_connection_id",
        rfc: "RFC 9000 §18.2",
        must: SERVER_ONLY_PARAMETER,
        expect: Expect::Transport(&[TRANSPORT_PARAMETER_ERROR]),
        how: How::TransportParameters(|config| {
            config.h3lab_raw_transport_parameters(&parameter(0x00, &[0x5a; 8]))
        }),
    },
];

const SERVER_ONLY_PARAMETER: &str = "A client MUST NOT include any server-only transport \
    parameter: original_destination_connection_id, preferred_address, \
    retry_source_connection_id, or stateless_reset_token. A server MUST treat receipt of any of \
    these transport parameters as a connection error of type TRANSPORT_PARAMETER_ERROR.";

/// One encoded transport parameter: id, length, value (RFC 9000 §18), the
/// layout of an HTTP/3 frame.
fn parameter(id: u64, value: &[u8]) -> Vec<u8> {
    frame(id, value)
}

pub(super) const FRAMES: &[Case] = &[
    Case {
        id: "transport.unknown-frame-type",
        title: "a frame of a type no RFC or extension defines, in a 1-RTT packet",
        rfc: "RFC 9000 §12.4",
        must: "An endpoint MUST treat the receipt of a frame of unknown type as a connection \
            error of type FRAME_ENCODING_ERROR.",
        expect: Expect::Transport(&[FRAME_ENCODING_ERROR]),
        how: one_rtt(|_| Ok(varint(UNKNOWN_FRAME_TYPE))),
    },
    Case {
        id: "transport.max-data-in-handshake-packet",
        title: "a MAX_DATA frame in a Handshake packet",
        rfc: "RFC 9000 §12.4, §17.2.4",
        must: "An endpoint MUST treat receipt of a frame in a packet type that is not permitted \
            as a connection error of type PROTOCOL_VIOLATION. (§12.4; a Handshake packet \
            carries CRYPTO, ACK, PING, PADDING and CONNECTION_CLOSE frames only, Table 3)",
        expect: Expect::Transport(&[PROTOCOL_VIOLATION]),
        how: How::Frame(RawFrame {
            packet: quiche::Type::Handshake,
            build: |_| Ok([varint(MAX_DATA), varint(10_000_000)].concat()),
        }),
    },
    Case {
        id: "transport.new-token-from-client",
        title: "a NEW_TOKEN frame from the client",
        rfc: "RFC 9000 §19.7",
        must: "Clients MUST NOT send NEW_TOKEN frames. A server MUST treat receipt of a \
            NEW_TOKEN frame as a connection error of type PROTOCOL_VIOLATION.",
        expect: Expect::Transport(&[PROTOCOL_VIOLATION]),
        how: one_rtt(|_| Ok([varint(NEW_TOKEN), varint(16), vec![0x5a; 16]].concat())),
    },
    Case {
        id: "transport.handshake-done-from-client",
        title: "a HANDSHAKE_DONE frame from the client",
        rfc: "RFC 9000 §19.20",
        must: "A server MUST treat receipt of a HANDSHAKE_DONE frame as a connection error of \
            type PROTOCOL_VIOLATION.",
        expect: Expect::Transport(&[PROTOCOL_VIOLATION]),
        how: one_rtt(|_| Ok(varint(HANDSHAKE_DONE))),
    },
    Case {
        id: "transport.stream-over-limit-bidi",
        title: "a STREAM frame on the first bidirectional stream past the server's limit",
        rfc: "RFC 9000 §4.6",
        must: STREAM_OVER_LIMIT,
        expect: Expect::Transport(&[STREAM_LIMIT_ERROR]),
        how: one_rtt(|connection| {
            let allowed = connection.peer_streams_left_bidi();
            Ok(stream_frame(first_stream_past(allowed, 0)?, 0, b"x"))
        }),
    },
    Case {
        id: "transport.stream-over-limit-uni",
        title: "a STREAM frame on the first unidirectional stream past the server's limit",
        rfc: "RFC 9000 §4.6",
        must: STREAM_OVER_LIMIT,
        expect: Expect::Transport(&[STREAM_LIMIT_ERROR]),
        how: one_rtt(|connection| {
            let allowed = connection.peer_streams_left_uni();
            Ok(stream_frame(first_stream_past(allowed, 2)?, 0, b"x"))
        }),
    },
    Case {
        id: "transport.stream-data-over-limit",
        title: "a STREAM frame ending one byte past the server's initial_max_stream_data",
        rfc: "RFC 9000 §4.1",
        must: "A receiver MUST close the connection with an error of type FLOW_CONTROL_ERROR if \
            the sender violates the advertised connection or stream data limits",
        expect: Expect::Transport(&[FLOW_CONTROL_ERROR]),
        how: one_rtt(|connection| {
            let limit = (connection.peer_transport_params())
                .map(|params| params.initial_max_stream_data_bidi_remote)
                .ok_or("no transport parameters from the server")?;
            let streams = connection.peer_streams_left_bidi();
            if limit >= MAX_VARINT || streams < 2 {
                return Err(format!(
                    "the server allows {limit} bytes a stream (RFC 9000's most is 2^62 - 1) and \
                     {streams} bidirectional streams: none of its limits can be passed on stream 4"
                ));
            }
            Ok(stream_frame(RAW_BIDI_STREAM, limit, b"x"))
        }),
    },
    Case {
        id: "transport.reset-stream-on-send-only",
        title: "a RESET_STREAM frame for the server's control stream (3), which only it sends on",
        rfc: "RFC 9000 §19.4",
        must: "An endpoint that receives a RESET_STREAM frame for a send-only stream MUST \
            terminate the connection with error STREAM_STATE_ERROR.",
        expect: Expect::Transport(&[STREAM_STATE_ERROR]),
        how: one_rtt(|_| {
            let cancelled = varint(H3_REQUEST_CANCELLED);
            Ok([varint(RESET_STREAM), varint(3), cancelled, varint(0)].concat())
        }),
    },
    Case {
        id: "transport.stop-sending-on-receive-only",
        title: "a STOP_SENDING frame for the client's first unidirectional stream (2)",
        rfc: "RFC 9000 §19.5",
        must: "An endpoint that receives a STOP_SENDING frame for a receive-only stream MUST \
            terminate the connection with error STREAM_STATE_ERROR.",
        expect: Expect::Transport(&[STREAM_STATE_ERROR]),
        how: one_rtt(|_| {
            let cancelled = varint(H3_REQUEST_CANCELLED);
            Ok([varint(STOP_SENDING), varint(2), cancelled].concat())
        }),
    },
    Case {
        id: "transport.new-cid-length-21",
        title: "a NEW_CONNECTION_ID frame whose connection ID is 21 bytes long",
        rfc: "RFC 9000 §19.15",
        must: "[Length:] An 8-bit unsigned integer containing the length of the connection ID. \
            Values less than 1 and greater than 20 are invalid and MUST be treated as a \
            connection error of type FRAME_ENCODING_ERROR.",
        expect: Expect::Transport(&[FRAME_ENCODING_ERROR]),
        how: one_rtt(|_| Ok(new_connection_id(1, 0, 21))),
    },
    Case {
        id: "transport.new-cid-retire-prior-to-ahead",
        title: "a NEW_CONNECTION_ID frame whose Retire Prior To is above its Sequence Number",
        rfc: "RFC 9000 §19.15",
        must: "Receiving a value in the Retire Prior To field that is greater than that in the \
            Sequence Number field MUST be treated as a connection error of type \
            FRAME_ENCODING_ERROR.",
        expect: Expect::Transport(&[FRAME_ENCODING_ERROR]),
        how: one_rtt(|_| Ok(new_connection_id(1, 2, 20))),
    },
];

const STREAM_OVER_LIMIT: &str = "An endpoint that receives a frame with a stream ID exceeding \
    the limit it has sent MUST treat this as a connection error of type STREAM_LIMIT_ERROR";

/// RFC 9000 §19: the frame types the cases send.
const RESET_STREAM: u64 = 0x04;
const STOP_SENDING: u64 = 0x05;
const NEW_TOKEN: u64 = 0x07;
/// A STREAM frame with the OFF and LEN bits set (§19.8).
const STREAM_WITH_OFFSET_AND_LENGTH: u64 = 0x0e;
const MAX_DATA: u64 = 0x10;
const NEW_CONNECTION_ID: u64 = 0x18;
const HANDSHAKE_DONE: u64 = 0x1e;
/// Registered nowhere (IANA's QUIC frame types, December 2026), and a
/// 4-byte varint unlike any extension's so far.
const UNKNOWN_FRAME_TYPE: u64 = 0x2d0d_1e77;
/// One more than the largest varint (RFC 9000 §16).
const MAX_VARINT: u64 = 1 << 62;
/// The bidirectional stream a raw frame uses: the follow-up GET is on 0.
const RAW_BIDI_STREAM: u64 = 4;

/// A case whose raw frame goes in a 1-RTT packet once the handshake is done.
const fn one_rtt(build: fn(&quiche::Connection) -> Result<Vec<u8>, String>) -> How {
    How::Frame(RawFrame {
        packet: quiche::Type::Short,
        build,
    })
}

fn stream_frame(stream_id: u64, offset: u64, data: &[u8]) -> Vec<u8> {
    let header = [
        varint(STREAM_WITH_OFFSET_AND_LENGTH),
        varint(stream_id),
        varint(offset),
        varint(data.len() as u64),
    ];
    [header.concat(), data.to_vec()].concat()
}

/// The first client-initiated stream of the type `kind` (0 bidirectional,
/// 2 unidirectional) past the `allowed` the client may open, none of which
/// it has (RFC 9000 §2.1).
fn first_stream_past(allowed: u64, kind: u64) -> Result<u64, String> {
    let id = allowed.saturating_mul(4).saturating_add(kind);
    if id >= MAX_VARINT {
        return Err(format!(
            "the server allows {allowed} streams, so no stream ID can pass its limit"
        ));
    }
    Ok(id)
}

fn new_connection_id(sequence: u64, retire_prior_to: u64, length: u8) -> Vec<u8> {
    let fields = [
        varint(NEW_CONNECTION_ID),
        varint(sequence),
        varint(retire_prior_to),
        vec![length],
        vec![0x5a; length as usize],
        vec![0xa5; 16],
    ];
    fields.concat()
}
