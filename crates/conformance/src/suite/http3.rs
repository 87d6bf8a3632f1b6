//! The control stream, SETTINGS, frames on the wrong stream and stream
//! types (RFC 9114 §6, §7).

use h3i::actions::h3::{StreamEvent, StreamEventType, WaitType};

use super::*;

/// A reserved HTTP/2 frame type on the control stream.
const fn http2_frame(
    id: &'static str,
    title: &'static str,
    send: fn(&Origin) -> Vec<Action>,
) -> Case {
    Case {
        id,
        title,
        rfc: "RFC 9114 §7.2.8",
        must: HTTP2_FRAME,
        expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
        how: How::Http3 {
            control_stream: true,
            send,
        },
    }
}

const ONE_CONTROL: &str = "Only one control stream per peer is permitted; receipt of a second \
    stream claiming to be a control stream MUST be treated as a connection error of type \
    H3_STREAM_CREATION_ERROR.";
const CLOSED: &str = "If either control stream is closed at any point, this MUST be treated \
    as a connection error of type H3_CLOSED_CRITICAL_STREAM.";
const HTTP2_SETTING: &str = "Setting identifiers that were defined in [HTTP/2] where there is \
    no corresponding HTTP/3 setting have also been reserved (Section 11.2.2). These reserved \
    settings MUST NOT \
    be sent, and their receipt MUST be treated as a connection error of type \
    H3_SETTINGS_ERROR.";

pub(super) const CONTROL_AND_SETTINGS: &[Case] = &[
    Case {
        id: "control.second-stream",
        title: "a second control stream",
        rfc: "RFC 9114 §6.2.1",
        must: ONE_CONTROL,
        expect: Expect::Connection(&[H3_STREAM_CREATION_ERROR]),
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                vec![
                    open_uni(UNI_A, CONTROL_STREAM),
                    bytes(UNI_A, settings(&[]), false),
                ]
            },
        },
    },
    Case {
        id: "control.first-frame-not-settings",
        title: "a control stream that starts with MAX_PUSH_ID, not SETTINGS",
        rfc: "RFC 9114 §6.2.1",
        must: "If the first frame of the control stream is any other frame type, this MUST \
            be treated as a connection error of type H3_MISSING_SETTINGS.",
        expect: Expect::Connection(&[H3_MISSING_SETTINGS]),
        how: How::Http3 {
            control_stream: false,
            send: |_| control_stream_carrying(frame(MAX_PUSH_ID, &varint(0)), false),
        },
    },
    Case {
        id: "control.closed",
        title: "the control stream ended (FIN) after its SETTINGS",
        rfc: "RFC 9114 §6.2.1",
        must: CLOSED,
        expect: Expect::Connection(&[H3_CLOSED_CRITICAL_STREAM]),
        how: How::Http3 {
            control_stream: false,
            send: |_| control_stream_carrying(settings(&[]), true),
        },
    },
    Case {
        id: "control.reset",
        title: "the control stream reset (RESET_STREAM) after its SETTINGS and a request's answer",
        rfc: "RFC 9114 §6.2.1",
        must: CLOSED,
        expect: Expect::Connection(&[H3_CLOSED_CRITICAL_STREAM]),
        how: How::Http3 {
            control_stream: true,
            // A stream reset before its type is read is one the server
            // must tolerate (RFC 9114 §6.2), and a QUIC stack may drop a
            // reset stream's unread bytes (quinn does): the reset waits
            // for the answer to a GET sent after the SETTINGS, by which
            // time the server has read what came before it.
            send: |origin| {
                vec![
                    headers(CASE_STREAM, request(origin), true),
                    Action::Wait {
                        wait_type: WaitType::StreamEvent(StreamEvent {
                            stream_id: CASE_STREAM,
                            event_type: StreamEventType::Headers,
                        }),
                    },
                    Action::ResetStream {
                        stream_id: CONTROL,
                        error_code: H3_NO_ERROR,
                    },
                ]
            },
        },
    },
    Case {
        id: "settings.repeated",
        title: "a second SETTINGS frame on the control stream",
        rfc: "RFC 9114 §7.2.4",
        must: "If an endpoint receives a second SETTINGS frame on the control stream, the \
            endpoint MUST respond with a connection error of type H3_FRAME_UNEXPECTED.",
        expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
        how: How::Http3 {
            control_stream: true,
            send: |_| vec![bytes(CONTROL, settings(&[]), false)],
        },
    },
    Case {
        id: "settings.on-request-stream",
        title: "a SETTINGS frame on a request stream",
        rfc: "RFC 9114 §7.2.4",
        must: "If an endpoint receives a SETTINGS frame on a different stream, the endpoint \
            MUST respond with a connection error of type H3_FRAME_UNEXPECTED.",
        expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
        how: How::Http3 {
            control_stream: true,
            send: |_| vec![bytes(CASE_STREAM, settings(&[]), true)],
        },
    },
    Case {
        id: "settings.http2-enable-push",
        title: "SETTINGS with HTTP/2's SETTINGS_ENABLE_PUSH (0x02)",
        rfc: "RFC 9114 §7.2.4.1",
        must: HTTP2_SETTING,
        expect: Expect::Connection(&[H3_SETTINGS_ERROR]),
        how: How::Http3 {
            control_stream: false,
            send: |_| control_stream_carrying(settings(&[(0x02, 0)]), false),
        },
    },
    Case {
        id: "settings.http2-max-concurrent-streams",
        title: "SETTINGS with HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS (0x03)",
        rfc: "RFC 9114 §7.2.4.1",
        must: HTTP2_SETTING,
        expect: Expect::Connection(&[H3_SETTINGS_ERROR]),
        how: How::Http3 {
            control_stream: false,
            send: |_| control_stream_carrying(settings(&[(0x03, 100)]), false),
        },
    },
    Case {
        id: "settings.reserved-identifier",
        title: "SETTINGS with a reserved identifier (0x1f * N + 0x21)",
        rfc: "RFC 9114 §7.2.4.1",
        must: "Setting identifiers of the format 0x1f * N + 0x21 for non-negative integer \
            values of N are reserved to exercise the requirement that unknown identifiers be \
            ignored. ... Endpoints MUST NOT consider such settings to have any meaning upon \
            receipt.",
        expect: Expect::Ignore,
        how: How::Http3 {
            control_stream: false,
            send: |_| control_stream_carrying(settings(&[(RESERVED, 7)]), false),
        },
    },
];

const HTTP2_FRAME: &str = "Frame types that were used in HTTP/2 where there is no \
    corresponding HTTP/3 frame have also been reserved (Section 11.2.1). These frame types \
    MUST NOT be sent, and their receipt MUST be treated as a connection error of type \
    H3_FRAME_UNEXPECTED.";
const UNKNOWN: &str = "Implementations MUST ignore unknown or unsupported values in all \
    extensible protocol elements.";

pub(super) const FRAMES: &[Case] = &[
    Case {
        id: "control.data-frame",
        title: "a DATA frame on the control stream",
        rfc: "RFC 9114 §7.2.1",
        must: "If a DATA frame is received on a control stream, the recipient MUST respond \
            with a connection error of type H3_FRAME_UNEXPECTED.",
        expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
        how: How::Http3 {
            control_stream: true,
            send: |_| vec![bytes(CONTROL, frame(DATA, b"data"), false)],
        },
    },
    Case {
        id: "control.headers-frame",
        title: "a HEADERS frame on the control stream",
        rfc: "RFC 9114 §7.2.2",
        must: "If a HEADERS frame is received on a control stream, the recipient MUST \
            respond with a connection error of type H3_FRAME_UNEXPECTED.",
        expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
        how: How::Http3 {
            control_stream: true,
            send: |_| vec![bytes(CONTROL, frame(HEADERS, &[0, 0, 0xd1]), false)],
        },
    },
    Case {
        id: "request.data-before-headers",
        title: "a DATA frame before HEADERS on a request stream",
        rfc: "RFC 9114 §4.1",
        must: "Receipt of an invalid sequence of frames MUST be treated as a connection \
            error of type H3_FRAME_UNEXPECTED.",
        expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
        how: How::Http3 {
            control_stream: true,
            send: |origin| {
                let mut actions = vec![bytes(CASE_STREAM, frame(DATA, b"early"), false)];
                actions.push(headers(CASE_STREAM, request(origin), true));
                actions
            },
        },
    },
    Case {
        id: "request.push-promise",
        title: "a PUSH_PROMISE frame from the client",
        rfc: "RFC 9114 §7.2.5",
        must: "A client MUST NOT send a PUSH_PROMISE frame. A server MUST treat the receipt \
            of a PUSH_PROMISE frame as a connection error of type H3_FRAME_UNEXPECTED.",
        expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                vec![bytes(
                    CASE_STREAM,
                    frame(PUSH_PROMISE, &[0, 0, 0, 0xd1]),
                    true,
                )]
            },
        },
    },
    Case {
        id: "request.max-push-id",
        title: "a MAX_PUSH_ID frame on a request stream",
        rfc: "RFC 9114 §7.2.7",
        must: "The MAX_PUSH_ID frame is always sent on the control stream. Receipt of a \
            MAX_PUSH_ID frame on any other stream MUST be treated as a connection error of \
            type H3_FRAME_UNEXPECTED.",
        expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
        how: How::Http3 {
            control_stream: true,
            send: |_| vec![bytes(CASE_STREAM, frame(MAX_PUSH_ID, &varint(4)), true)],
        },
    },
    Case {
        id: "request.cancel-push",
        title: "a CANCEL_PUSH frame on a request stream",
        rfc: "RFC 9114 §7.2.3",
        must: "A CANCEL_PUSH frame is sent on the control stream. Receiving a CANCEL_PUSH \
            frame on a stream other than the control stream MUST be treated as a connection \
            error of type H3_FRAME_UNEXPECTED.",
        expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
        how: How::Http3 {
            control_stream: true,
            send: |_| vec![bytes(CASE_STREAM, frame(CANCEL_PUSH, &varint(0)), true)],
        },
    },
    Case {
        id: "control.max-push-id-reduced",
        title: "MAX_PUSH_ID 8, then MAX_PUSH_ID 4",
        rfc: "RFC 9114 §7.2.7",
        must: "A MAX_PUSH_ID frame cannot reduce the maximum push ID; receipt of a \
            MAX_PUSH_ID frame that contains a smaller value than previously received MUST be \
            treated as a connection error of type H3_ID_ERROR.",
        expect: Expect::Connection(&[H3_ID_ERROR]),
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                vec![
                    bytes(CONTROL, frame(MAX_PUSH_ID, &varint(8)), false),
                    bytes(CONTROL, frame(MAX_PUSH_ID, &varint(4)), false),
                ]
            },
        },
    },
    Case {
        id: "control.goaway-increased",
        title: "GOAWAY 4, then GOAWAY 8",
        rfc: "RFC 9114 §5.2",
        must: "Receiving a GOAWAY containing a larger identifier than previously received \
            MUST be treated as a connection error of type H3_ID_ERROR.",
        expect: Expect::Connection(&[H3_ID_ERROR]),
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                vec![
                    bytes(CONTROL, frame(GOAWAY, &varint(4)), false),
                    bytes(CONTROL, frame(GOAWAY, &varint(8)), false),
                ]
            },
        },
    },
    http2_frame(
        "frame.http2-priority",
        "HTTP/2's PRIORITY frame (0x02) on the control stream",
        |_| vec![bytes(CONTROL, frame(0x02, &[0x00; 5]), false)],
    ),
    http2_frame(
        "frame.http2-ping",
        "HTTP/2's PING frame (0x06) on the control stream",
        |_| vec![bytes(CONTROL, frame(0x06, &[0x00; 8]), false)],
    ),
    http2_frame(
        "frame.http2-window-update",
        "HTTP/2's WINDOW_UPDATE frame (0x08) on the control stream",
        |_| vec![bytes(CONTROL, frame(0x08, &[0x00; 4]), false)],
    ),
    http2_frame(
        "frame.http2-continuation",
        "HTTP/2's CONTINUATION frame (0x09) on the control stream",
        |_| vec![bytes(CONTROL, frame(0x09, &[]), false)],
    ),
    Case {
        id: "frame.reserved-on-control",
        title: "a frame of a reserved type (0x1f * N + 0x21) on the control stream",
        rfc: "RFC 9114 §9",
        must: UNKNOWN,
        expect: Expect::Ignore,
        how: How::Http3 {
            control_stream: true,
            send: |_| vec![bytes(CONTROL, frame(RESERVED, b"grease"), false)],
        },
    },
    Case {
        id: "frame.reserved-on-request",
        title: "a frame of a reserved type before a request's HEADERS",
        rfc: "RFC 9114 §9",
        must: UNKNOWN,
        expect: Expect::Ignore,
        how: How::Http3 {
            control_stream: true,
            send: |origin| {
                vec![
                    bytes(CASE_STREAM, frame(RESERVED, b"grease"), false),
                    headers(CASE_STREAM, request(origin), true),
                ]
            },
        },
    },
    Case {
        id: "frame.truncated",
        title: "a request stream that ends inside a HEADERS frame",
        rfc: "RFC 9114 §7.1",
        must: "When a stream terminates cleanly, if the last frame on the stream was \
            truncated, this MUST be treated as a connection error of type H3_FRAME_ERROR.",
        expect: Expect::Connection(&[H3_FRAME_ERROR]),
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                vec![bytes(
                    CASE_STREAM,
                    frame_claiming(HEADERS, 40, &[0, 0, 0xd1]),
                    true,
                )]
            },
        },
    },
    Case {
        id: "frame.extra-payload",
        title: "a MAX_PUSH_ID frame with a byte after its push ID",
        rfc: "RFC 9114 §7.1",
        must: "A frame payload that contains additional bytes after the identified fields or \
            a frame payload that terminates before the end of the identified fields MUST be \
            treated as a connection error of type H3_FRAME_ERROR.",
        expect: Expect::Connection(&[H3_FRAME_ERROR]),
        how: How::Http3 {
            control_stream: true,
            send: |_| vec![bytes(CONTROL, frame(MAX_PUSH_ID, &[0x04, 0x00]), false)],
        },
    },
];

pub(super) const STREAMS: &[Case] = &[
    Case {
        id: "stream.reserved-type",
        title: "a unidirectional stream of a reserved type (0x1f * N + 0x21)",
        rfc: "RFC 9114 §6.2",
        must: "Recipients of unknown stream types MUST either abort reading of the stream or \
            discard incoming data without further processing.",
        expect: Expect::Ignore,
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                vec![
                    open_uni(UNI_A, RESERVED),
                    bytes(UNI_A, b"grease".to_vec(), false),
                ]
            },
        },
    },
    Case {
        id: "stream.push-from-client",
        title: "a push stream opened by the client",
        rfc: "RFC 9114 §6.2.2",
        must: "Only servers can push; if a server receives a client-initiated push stream, \
            this MUST be treated as a connection error of type H3_STREAM_CREATION_ERROR.",
        expect: Expect::Connection(&[H3_STREAM_CREATION_ERROR]),
        how: How::Http3 {
            control_stream: true,
            send: |_| vec![open_uni(UNI_A, PUSH_STREAM), bytes(UNI_A, varint(0), false)],
        },
    },
];
