//! The cases: what the client sends, the RFC text it checks, and what a
//! conforming server does with it. Each case runs on a connection of its
//! own; its request stream is 0 and the client's control stream 2.

use h3i::actions::h3::{send_headers_frame_literal, Action, ExpectedStreamSendResult};
use h3i::quiche::h3::{Header, NameValue};
use h3lab_results::conformance::Expected;

use crate::codes::*;
use crate::wire::*;

/// One case of the suite.
pub struct Case {
    /// Stable name, e.g. `control.data-frame`.
    pub id: &'static str,
    /// What the client does, in a line.
    pub title: &'static str,
    /// Where the requirement is.
    pub rfc: &'static str,
    /// The requirement, from the RFC.
    pub must: &'static str,
    expect: Expect,
    /// Whether the client opens its control stream with an empty SETTINGS
    /// before the case: every case but those about that stream.
    control_stream: bool,
    send: fn(&Origin) -> Vec<Action>,
}

/// What a conforming server does, with the codes the RFC allows.
#[derive(Clone, Copy)]
enum Expect {
    Connection(&'static [u64]),
    Stream(&'static [u64]),
    Ignore,
}

/// Where requests go: a valid request's `:authority` and `:path`.
#[derive(Debug, Clone)]
pub struct Origin {
    /// `host:port`.
    pub authority: String,
    /// The path of the URL probed.
    pub path: String,
}

/// The request stream of each case.
pub(crate) const CASE_STREAM: u64 = 0;
/// The plain request after the case's: answered means the server carried on.
pub(crate) const FOLLOW_UP_STREAM: u64 = 4;
const CONTROL: u64 = 2;
/// The case's own unidirectional streams, after the control stream.
const UNI_A: u64 = 6;
const UNI_B: u64 = 10;

impl Case {
    /// What a conforming server does, with the codes named.
    pub fn expected(&self) -> Expected {
        let named_all = |codes: &[u64]| codes.iter().map(|&code| named(code, true)).collect();
        match self.expect {
            Expect::Connection(codes) => Expected::ConnectionError {
                codes: named_all(codes),
            },
            Expect::Stream(codes) => Expected::StreamError {
                codes: named_all(codes),
            },
            Expect::Ignore => Expected::Ignore,
        }
    }

    /// Everything the client sends, in order: its control stream, the
    /// case, then a plain GET on [`FOLLOW_UP_STREAM`]. All of it goes out
    /// before the client reads anything, so no send can fail because the
    /// server already closed.
    pub(crate) fn actions(&self, origin: &Origin) -> Vec<Action> {
        let mut actions = Vec::new();
        if self.control_stream {
            actions.extend(open_control_stream());
        }
        actions.extend((self.send)(origin));
        actions.push(headers(FOLLOW_UP_STREAM, request(origin), true));
        actions
    }

    /// The client's control stream and a plain GET, nothing else: whether
    /// the server answers at all.
    pub(crate) fn plain_request(origin: &Origin) -> Vec<Action> {
        let mut actions = open_control_stream();
        actions.push(headers(FOLLOW_UP_STREAM, request(origin), true));
        actions
    }
}

fn open_control_stream() -> Vec<Action> {
    vec![
        open_uni(CONTROL, CONTROL_STREAM),
        bytes(CONTROL, settings(&[]), false),
    ]
}

fn open_uni(stream_id: u64, stream_type: u64) -> Action {
    Action::OpenUniStream {
        stream_id,
        fin_stream: false,
        stream_type,
        expected_result: ExpectedStreamSendResult::Ok,
    }
}

fn bytes(stream_id: u64, bytes: Vec<u8>, fin_stream: bool) -> Action {
    Action::StreamBytes {
        stream_id,
        fin_stream,
        bytes,
        expected_result: ExpectedStreamSendResult::Ok,
    }
}

/// A HEADERS frame with these fields exactly, in this order and case.
fn headers(stream_id: u64, fields: Vec<Header>, fin_stream: bool) -> Action {
    send_headers_frame_literal(stream_id, fin_stream, fields)
}

fn field(name: &str, value: &str) -> Header {
    Header::new(name.as_bytes(), value.as_bytes())
}

/// A valid GET of the probed URL.
fn request(origin: &Origin) -> Vec<Header> {
    vec![
        field(":method", "GET"),
        field(":scheme", "https"),
        field(":authority", &origin.authority),
        field(":path", &origin.path),
    ]
}

/// The valid GET with `change` made to its fields.
fn request_with(origin: &Origin, change: impl FnOnce(&mut Vec<Header>)) -> Vec<Action> {
    let mut fields = request(origin);
    change(&mut fields);
    vec![headers(CASE_STREAM, fields, true)]
}

fn without(fields: &mut Vec<Header>, name: &str) {
    fields.retain(|field| field.name() != name.as_bytes());
}

/// A HEADERS frame carrying this raw QPACK field section.
fn raw_section(section: Vec<u8>) -> Vec<Action> {
    vec![bytes(CASE_STREAM, frame(HEADERS, &section), true)]
}

/// The suite, in the order it runs.
pub fn cases() -> Vec<Case> {
    [
        control_and_settings(),
        frames(),
        streams(),
        messages(),
        qpack(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn control_and_settings() -> Vec<Case> {
    const ONE_CONTROL: &str = "Only one control stream per peer is permitted; receipt of a second \
        stream claiming to be a control stream MUST be treated as a connection error of type \
        H3_STREAM_CREATION_ERROR.";
    const CLOSED: &str = "If either control stream is closed at any point, this MUST be treated \
        as a connection error of type H3_CLOSED_CRITICAL_STREAM.";
    const HTTP2_SETTING: &str = "Setting identifiers that were defined in [HTTP/2] where there is \
        no corresponding HTTP/3 setting have also been reserved. These reserved settings MUST NOT \
        be sent, and their receipt MUST be treated as a connection error of type \
        H3_SETTINGS_ERROR.";
    vec![
        Case {
            id: "control.second-stream",
            title: "a second control stream",
            rfc: "RFC 9114 §6.2.1",
            must: ONE_CONTROL,
            expect: Expect::Connection(&[H3_STREAM_CREATION_ERROR]),
            control_stream: true,
            send: |_| {
                vec![
                    open_uni(UNI_A, CONTROL_STREAM),
                    bytes(UNI_A, settings(&[]), false),
                ]
            },
        },
        Case {
            id: "control.first-frame-not-settings",
            title: "a control stream that starts with MAX_PUSH_ID, not SETTINGS",
            rfc: "RFC 9114 §6.2.1",
            must: "If the first frame of the control stream is any other frame type, this MUST \
                be treated as a connection error of type H3_MISSING_SETTINGS.",
            expect: Expect::Connection(&[H3_MISSING_SETTINGS]),
            control_stream: false,
            send: |_| {
                vec![
                    open_uni(CONTROL, CONTROL_STREAM),
                    bytes(CONTROL, frame(MAX_PUSH_ID, &varint(0)), false),
                ]
            },
        },
        Case {
            id: "control.closed",
            title: "the control stream ended (FIN) after its SETTINGS",
            rfc: "RFC 9114 §6.2.1",
            must: CLOSED,
            expect: Expect::Connection(&[H3_CLOSED_CRITICAL_STREAM]),
            control_stream: false,
            send: |_| {
                vec![
                    open_uni(CONTROL, CONTROL_STREAM),
                    bytes(CONTROL, settings(&[]), true),
                ]
            },
        },
        Case {
            id: "control.reset",
            title: "the control stream reset (RESET_STREAM) after its SETTINGS",
            rfc: "RFC 9114 §6.2.1",
            must: CLOSED,
            expect: Expect::Connection(&[H3_CLOSED_CRITICAL_STREAM]),
            control_stream: true,
            send: |_| {
                vec![Action::ResetStream {
                    stream_id: CONTROL,
                    error_code: H3_NO_ERROR,
                }]
            },
        },
        Case {
            id: "settings.repeated",
            title: "a second SETTINGS frame on the control stream",
            rfc: "RFC 9114 §7.2.4",
            must: "If an endpoint receives a second SETTINGS frame on the control stream, the \
                endpoint MUST respond with a connection error of type H3_FRAME_UNEXPECTED.",
            expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
            control_stream: true,
            send: |_| vec![bytes(CONTROL, settings(&[]), false)],
        },
        Case {
            id: "settings.on-request-stream",
            title: "a SETTINGS frame on a request stream",
            rfc: "RFC 9114 §7.2.4",
            must: "If an endpoint receives a SETTINGS frame on a different stream, the endpoint \
                MUST respond with a connection error of type H3_FRAME_UNEXPECTED.",
            expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
            control_stream: true,
            send: |_| vec![bytes(CASE_STREAM, settings(&[]), true)],
        },
        Case {
            id: "settings.http2-enable-push",
            title: "SETTINGS with HTTP/2's SETTINGS_ENABLE_PUSH (0x02)",
            rfc: "RFC 9114 §7.2.4.1",
            must: HTTP2_SETTING,
            expect: Expect::Connection(&[H3_SETTINGS_ERROR]),
            control_stream: false,
            send: |_| {
                vec![
                    open_uni(CONTROL, CONTROL_STREAM),
                    bytes(CONTROL, settings(&[(0x02, 0)]), false),
                ]
            },
        },
        Case {
            id: "settings.http2-max-concurrent-streams",
            title: "SETTINGS with HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS (0x03)",
            rfc: "RFC 9114 §7.2.4.1",
            must: HTTP2_SETTING,
            expect: Expect::Connection(&[H3_SETTINGS_ERROR]),
            control_stream: false,
            send: |_| {
                vec![
                    open_uni(CONTROL, CONTROL_STREAM),
                    bytes(CONTROL, settings(&[(0x03, 100)]), false),
                ]
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
            control_stream: false,
            send: |_| {
                vec![
                    open_uni(CONTROL, CONTROL_STREAM),
                    bytes(CONTROL, settings(&[(RESERVED, 7)]), false),
                ]
            },
        },
    ]
}

fn frames() -> Vec<Case> {
    const HTTP2_FRAME: &str = "Frame types that were used in HTTP/2 where there is no \
        corresponding HTTP/3 frame have also been reserved. ... Receipt of these frames MUST be \
        treated as a connection error of type H3_FRAME_UNEXPECTED.";
    const UNKNOWN: &str = "Implementations MUST ignore unknown or unsupported values in all \
        extensible protocol elements.";
    let http2_frame = |id, title, frame_type: u64| Case {
        id,
        title,
        rfc: "RFC 9114 §7.2.8",
        must: HTTP2_FRAME,
        expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
        control_stream: true,
        send: match frame_type {
            0x02 => |_| vec![bytes(CONTROL, frame(0x02, &[0x00; 5]), false)],
            0x06 => |_| vec![bytes(CONTROL, frame(0x06, &[0x00; 8]), false)],
            0x08 => |_| vec![bytes(CONTROL, frame(0x08, &[0x00; 4]), false)],
            _ => |_| vec![bytes(CONTROL, frame(0x09, &[]), false)],
        },
    };
    vec![
        Case {
            id: "control.data-frame",
            title: "a DATA frame on the control stream",
            rfc: "RFC 9114 §7.2.1",
            must: "If a DATA frame is received on a control stream, the recipient MUST respond \
                with a connection error of type H3_FRAME_UNEXPECTED.",
            expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
            control_stream: true,
            send: |_| vec![bytes(CONTROL, frame(DATA, b"data"), false)],
        },
        Case {
            id: "control.headers-frame",
            title: "a HEADERS frame on the control stream",
            rfc: "RFC 9114 §7.2.2",
            must: "If a HEADERS frame is received on a control stream, the recipient MUST \
                respond with a connection error of type H3_FRAME_UNEXPECTED.",
            expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
            control_stream: true,
            send: |_| vec![bytes(CONTROL, frame(HEADERS, &[0, 0, 0xd1]), false)],
        },
        Case {
            id: "request.data-before-headers",
            title: "a DATA frame before HEADERS on a request stream",
            rfc: "RFC 9114 §4.1",
            must: "Receipt of an invalid sequence of frames MUST be treated as a connection \
                error of type H3_FRAME_UNEXPECTED.",
            expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
            control_stream: true,
            send: |origin| {
                let mut actions = vec![bytes(CASE_STREAM, frame(DATA, b"early"), false)];
                actions.push(headers(CASE_STREAM, request(origin), true));
                actions
            },
        },
        Case {
            id: "request.push-promise",
            title: "a PUSH_PROMISE frame from the client",
            rfc: "RFC 9114 §7.2.5",
            must: "A client MUST NOT send a PUSH_PROMISE frame. A server MUST treat the receipt \
                of a PUSH_PROMISE frame as a connection error of type H3_FRAME_UNEXPECTED.",
            expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
            control_stream: true,
            send: |_| {
                vec![bytes(
                    CASE_STREAM,
                    frame(PUSH_PROMISE, &[0, 0, 0, 0xd1]),
                    true,
                )]
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
            control_stream: true,
            send: |_| vec![bytes(CASE_STREAM, frame(MAX_PUSH_ID, &varint(4)), true)],
        },
        Case {
            id: "request.cancel-push",
            title: "a CANCEL_PUSH frame on a request stream",
            rfc: "RFC 9114 §7.2.3",
            must: "A CANCEL_PUSH frame is sent on the control stream. Receiving a CANCEL_PUSH \
                frame on a stream other than the control stream MUST be treated as a connection \
                error of type H3_FRAME_UNEXPECTED.",
            expect: Expect::Connection(&[H3_FRAME_UNEXPECTED]),
            control_stream: true,
            send: |_| vec![bytes(CASE_STREAM, frame(CANCEL_PUSH, &varint(0)), true)],
        },
        Case {
            id: "control.max-push-id-reduced",
            title: "MAX_PUSH_ID 8, then MAX_PUSH_ID 4",
            rfc: "RFC 9114 §7.2.7",
            must: "A MAX_PUSH_ID frame cannot reduce the maximum push ID; receipt of a \
                MAX_PUSH_ID frame that contains a smaller value than previously received MUST be \
                treated as a connection error of type H3_ID_ERROR.",
            expect: Expect::Connection(&[H3_ID_ERROR]),
            control_stream: true,
            send: |_| {
                vec![
                    bytes(CONTROL, frame(MAX_PUSH_ID, &varint(8)), false),
                    bytes(CONTROL, frame(MAX_PUSH_ID, &varint(4)), false),
                ]
            },
        },
        Case {
            id: "control.goaway-increased",
            title: "GOAWAY 4, then GOAWAY 8",
            rfc: "RFC 9114 §5.2",
            must: "Receiving a GOAWAY containing a larger identifier than previously received \
                MUST be treated as a connection error of type H3_ID_ERROR.",
            expect: Expect::Connection(&[H3_ID_ERROR]),
            control_stream: true,
            send: |_| {
                vec![
                    bytes(CONTROL, frame(GOAWAY, &varint(4)), false),
                    bytes(CONTROL, frame(GOAWAY, &varint(8)), false),
                ]
            },
        },
        http2_frame(
            "frame.http2-priority",
            "HTTP/2's PRIORITY frame (0x02) on the control stream",
            0x02,
        ),
        http2_frame(
            "frame.http2-ping",
            "HTTP/2's PING frame (0x06) on the control stream",
            0x06,
        ),
        http2_frame(
            "frame.http2-window-update",
            "HTTP/2's WINDOW_UPDATE frame (0x08) on the control stream",
            0x08,
        ),
        http2_frame(
            "frame.http2-continuation",
            "HTTP/2's CONTINUATION frame (0x09) on the control stream",
            0x09,
        ),
        Case {
            id: "frame.reserved-on-control",
            title: "a frame of a reserved type (0x1f * N + 0x21) on the control stream",
            rfc: "RFC 9114 §9",
            must: UNKNOWN,
            expect: Expect::Ignore,
            control_stream: true,
            send: |_| vec![bytes(CONTROL, frame(RESERVED, b"grease"), false)],
        },
        Case {
            id: "frame.reserved-on-request",
            title: "a frame of a reserved type before a request's HEADERS",
            rfc: "RFC 9114 §9",
            must: UNKNOWN,
            expect: Expect::Ignore,
            control_stream: true,
            send: |origin| {
                vec![
                    bytes(CASE_STREAM, frame(RESERVED, b"grease"), false),
                    headers(CASE_STREAM, request(origin), true),
                ]
            },
        },
        Case {
            id: "frame.truncated",
            title: "a request stream that ends inside a HEADERS frame",
            rfc: "RFC 9114 §7.1",
            must: "When a stream terminates cleanly, if the last frame on the stream was \
                truncated, this MUST be treated as a connection error of type H3_FRAME_ERROR.",
            expect: Expect::Connection(&[H3_FRAME_ERROR]),
            control_stream: true,
            send: |_| {
                vec![bytes(
                    CASE_STREAM,
                    frame_claiming(HEADERS, 40, &[0, 0, 0xd1]),
                    true,
                )]
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
            control_stream: true,
            send: |_| vec![bytes(CONTROL, frame(MAX_PUSH_ID, &[0x04, 0x00]), false)],
        },
    ]
}

fn streams() -> Vec<Case> {
    vec![
        Case {
            id: "stream.reserved-type",
            title: "a unidirectional stream of a reserved type (0x1f * N + 0x21)",
            rfc: "RFC 9114 §6.2",
            must: "Recipients of unknown stream types MUST either abort reading of the stream or \
                discard incoming data without further processing.",
            expect: Expect::Ignore,
            control_stream: true,
            send: |_| {
                vec![
                    open_uni(UNI_A, RESERVED),
                    bytes(UNI_A, b"grease".to_vec(), false),
                ]
            },
        },
        Case {
            id: "stream.push-from-client",
            title: "a push stream opened by the client",
            rfc: "RFC 9114 §6.2.2",
            must: "Only servers can push; if a server receives a client-initiated push stream, \
                this MUST be treated as a connection error of type H3_STREAM_CREATION_ERROR.",
            expect: Expect::Connection(&[H3_STREAM_CREATION_ERROR]),
            control_stream: true,
            send: |_| vec![open_uni(UNI_A, PUSH_STREAM), bytes(UNI_A, varint(0), false)],
        },
    ]
}

fn messages() -> Vec<Case> {
    const REQUIRED: &str = "All HTTP/3 requests MUST include exactly one value for the :method, \
        :scheme, and :path pseudo-header fields, unless the request is a CONNECT request";
    const CONNECT: &str = "A CONNECT request MUST be constructed as follows: The :method \
        pseudo-header field is set to \"CONNECT\"; The :scheme and :path pseudo-header fields are \
        omitted; The :authority pseudo-header field contains the host and port to connect to \
        ... A CONNECT request that does not conform to these restrictions is malformed.";
    let malformed = |id, title, rfc, must, send| Case {
        id,
        title,
        rfc,
        must,
        expect: Expect::Stream(&[H3_MESSAGE_ERROR]),
        control_stream: true,
        send,
    };
    vec![
        malformed(
            "message.missing-method",
            "a request without :method",
            "RFC 9114 §4.3.1",
            REQUIRED,
            |origin| request_with(origin, |fields| without(fields, ":method")),
        ),
        malformed(
            "message.missing-scheme",
            "a request without :scheme",
            "RFC 9114 §4.3.1",
            REQUIRED,
            |origin| request_with(origin, |fields| without(fields, ":scheme")),
        ),
        malformed(
            "message.missing-path",
            "a request without :path",
            "RFC 9114 §4.3.1",
            REQUIRED,
            |origin| request_with(origin, |fields| without(fields, ":path")),
        ),
        malformed(
            "message.repeated-path",
            "a request with :path twice",
            "RFC 9114 §4.3.1",
            REQUIRED,
            |origin| request_with(origin, |fields| fields.push(field(":path", "/other"))),
        ),
        malformed(
            "message.empty-path",
            "a request whose :path is empty",
            "RFC 9114 §4.3.1",
            "This pseudo-header field MUST NOT be empty for \"http\" or \"https\" URIs",
            |origin| {
                request_with(origin, |fields| {
                    without(fields, ":path");
                    fields.push(field(":path", ""));
                })
            },
        ),
        malformed(
            "message.unknown-pseudo-header",
            "a request with a pseudo-header :foo",
            "RFC 9114 §4.3",
            "Endpoints MUST treat a request or response that contains undefined or invalid \
                pseudo-header fields as malformed.",
            |origin| request_with(origin, |fields| fields.push(field(":foo", "bar"))),
        ),
        malformed(
            "message.response-pseudo-header",
            "a request with the response's :status",
            "RFC 9114 §4.3",
            "Pseudo-header fields defined for requests MUST NOT appear in responses; \
                pseudo-header fields defined for responses MUST NOT appear in requests.",
            |origin| request_with(origin, |fields| fields.push(field(":status", "200"))),
        ),
        malformed(
            "message.pseudo-header-after-field",
            "a request whose :path comes after a regular field",
            "RFC 9114 §4.3",
            "All pseudo-header fields MUST appear in the header section before regular header \
                fields. Any request or response that contains a pseudo-header field that appears \
                in a header section after a regular header field MUST be treated as malformed.",
            |origin| {
                request_with(origin, |fields| {
                    let path = fields.pop().expect("the request has a :path");
                    fields.push(field("accept", "*/*"));
                    fields.push(path);
                })
            },
        ),
        malformed(
            "message.uppercase-field-name",
            "a request with a field name in capitals (Accept)",
            "RFC 9114 §4.2",
            "Characters in field names MUST be converted to lowercase prior to their encoding. \
                A request or response containing uppercase characters in field names MUST be \
                treated as malformed.",
            |origin| request_with(origin, |fields| fields.push(field("Accept", "*/*"))),
        ),
        malformed(
            "message.connection-specific-field",
            "a request with connection: keep-alive",
            "RFC 9114 §4.2",
            "An endpoint MUST NOT generate an HTTP/3 field section containing \
                connection-specific fields; any message containing connection-specific fields \
                MUST be treated as malformed.",
            |origin| {
                request_with(origin, |fields| {
                    fields.push(field("connection", "keep-alive"))
                })
            },
        ),
        malformed(
            "message.te-not-trailers",
            "a request with te: gzip",
            "RFC 9114 §4.2",
            "The only exception to this is the TE header field, which MAY be present in an \
                HTTP/3 request header; when it is, it MUST NOT contain any value other than \
                \"trailers\".",
            |origin| request_with(origin, |fields| fields.push(field("te", "gzip"))),
        ),
        malformed(
            "message.newline-in-value",
            "a request with a line feed in a field value",
            "RFC 9114 §10.3",
            "Any request or response that contains a character not permitted in a field value \
                MUST be treated as malformed.",
            |origin| request_with(origin, |fields| fields.push(field("x-h3lab", "a\nb"))),
        ),
        malformed(
            "message.content-length-mismatch",
            "a POST with content-length: 10 and 3 bytes of DATA",
            "RFC 9114 §4.1.2",
            "A request or response that is defined as having content when it contains a \
                Content-Length header field is malformed if the value of the Content-Length \
                header field does not equal the sum of the DATA frame lengths received.",
            |origin| {
                let mut fields = request(origin);
                fields[0] = field(":method", "POST");
                fields.push(field("content-length", "10"));
                vec![
                    headers(CASE_STREAM, fields, false),
                    bytes(CASE_STREAM, frame(DATA, b"abc"), true),
                ]
            },
        ),
        malformed(
            "message.pseudo-header-in-trailers",
            "a POST whose trailers carry :path",
            "RFC 9114 §4.3",
            "Pseudo-header fields MUST NOT appear in trailer sections.",
            |origin| {
                let mut fields = request(origin);
                fields[0] = field(":method", "POST");
                vec![
                    headers(CASE_STREAM, fields, false),
                    bytes(CASE_STREAM, frame(DATA, b"abc"), false),
                    headers(CASE_STREAM, vec![field(":path", "/")], true),
                ]
            },
        ),
        malformed(
            "connect.with-scheme-and-path",
            "a CONNECT request with :scheme and :path",
            "RFC 9114 §4.4",
            CONNECT,
            |origin| request_with(origin, |fields| fields[0] = field(":method", "CONNECT")),
        ),
        malformed(
            "connect.without-authority",
            "a CONNECT request without :authority",
            "RFC 9114 §4.4",
            CONNECT,
            |_| {
                vec![headers(
                    CASE_STREAM,
                    vec![field(":method", "CONNECT")],
                    true,
                )]
            },
        ),
    ]
}

fn qpack() -> Vec<Case> {
    const CLOSED: &str = "Closure of either unidirectional stream type MUST be treated as a \
        connection error of type H3_CLOSED_CRITICAL_STREAM.";
    const DECOMPRESSION: &str = "If the decoder encounters a reference in a field line \
        representation to a dynamic table entry that has already been evicted or that has an \
        absolute index greater than or equal to the declared Required Insert Count, it MUST \
        treat this as a connection error of type QPACK_DECOMPRESSION_FAILED.";
    vec![
        Case {
            id: "qpack.static-index-out-of-range",
            title: "a field line referring to static table entry 99 (the table has 0 to 98)",
            rfc: "RFC 9204 §3.1",
            must: "If the decoder encounters a reference in a field line representation to a \
                static table entry that does not exist, it MUST treat this as a connection error \
                of type QPACK_DECOMPRESSION_FAILED.",
            expect: Expect::Connection(&[QPACK_DECOMPRESSION_FAILED]),
            control_stream: true,
            send: |_| {
                raw_section([section_prefix(0), indexed_static(17), indexed_static(99)].concat())
            },
        },
        Case {
            id: "qpack.dynamic-reference-without-inserts",
            title: "a field line referring to the dynamic table in a section that needs no inserts",
            rfc: "RFC 9204 §3.2.6",
            must: DECOMPRESSION,
            expect: Expect::Connection(&[QPACK_DECOMPRESSION_FAILED]),
            control_stream: true,
            send: |_| {
                raw_section([section_prefix(0), indexed_static(17), indexed_dynamic(0)].concat())
            },
        },
        Case {
            id: "qpack.required-insert-count-impossible",
            title: "a field section whose Encoded Required Insert Count no encoder could produce",
            rfc: "RFC 9204 §4.5.1.1",
            must: "If the decoder encounters a value of Encoded Required Insert Count that could \
                not have been produced by a conforming encoder, it MUST treat this as a \
                connection error of type QPACK_DECOMPRESSION_FAILED.",
            expect: Expect::Connection(&[QPACK_DECOMPRESSION_FAILED]),
            control_stream: true,
            // Larger than twice the entries of any table under 32 MiB.
            send: |_| raw_section([section_prefix(1 << 21), indexed_static(17)].concat()),
        },
        Case {
            id: "qpack.encoder-capacity-too-large",
            title: "an encoder stream setting a table capacity of 2^30",
            rfc: "RFC 9204 §4.3.1",
            must: "The decoder MUST treat a new dynamic table capacity value that exceeds this \
                limit as a connection error of type QPACK_ENCODER_STREAM_ERROR.",
            expect: Expect::Connection(&[QPACK_ENCODER_STREAM_ERROR]),
            control_stream: true,
            send: |_| {
                vec![
                    open_uni(UNI_A, ENCODER_STREAM),
                    bytes(UNI_A, prefixed_int(0b0010_0000, 5, 1 << 30), false),
                ]
            },
        },
        Case {
            id: "qpack.encoder-static-index-out-of-range",
            title: "an encoder stream inserting with the name of static entry 200",
            rfc: "RFC 9204 §3.1",
            must: "If the decoder encounters a reference in an encoder instruction to a static \
                table entry that does not exist, it MUST treat this as a connection error of \
                type QPACK_ENCODER_STREAM_ERROR.",
            expect: Expect::Connection(&[QPACK_ENCODER_STREAM_ERROR]),
            control_stream: true,
            send: |_| {
                let insert = [prefixed_int(0b1100_0000, 6, 200), vec![0x01, b'x']].concat();
                vec![open_uni(UNI_A, ENCODER_STREAM), bytes(UNI_A, insert, false)]
            },
        },
        Case {
            id: "qpack.decoder-unknown-section-ack",
            title: "a decoder stream acknowledging a field section never sent",
            rfc: "RFC 9204 §4.4.1",
            must: "If an encoder receives a Section Acknowledgment instruction referring to a \
                stream on which every encoded field section with a non-zero Required Insert \
                Count has already been acknowledged, this MUST be treated as a connection error \
                of type QPACK_DECODER_STREAM_ERROR.",
            expect: Expect::Connection(&[QPACK_DECODER_STREAM_ERROR]),
            control_stream: true,
            send: |_| {
                let ack = prefixed_int(0b1000_0000, 7, CASE_STREAM);
                vec![open_uni(UNI_A, DECODER_STREAM), bytes(UNI_A, ack, false)]
            },
        },
        Case {
            id: "qpack.decoder-zero-increment",
            title: "a decoder stream's Insert Count Increment of 0",
            rfc: "RFC 9204 §4.4.3",
            must: "If the encoder receives an Insert Count Increment instruction whose Increment \
                field is zero, or one that increases the Known Received Count beyond what the \
                encoder has sent, it MUST treat this as a connection error of type \
                QPACK_DECODER_STREAM_ERROR.",
            expect: Expect::Connection(&[QPACK_DECODER_STREAM_ERROR]),
            control_stream: true,
            send: |_| {
                vec![
                    open_uni(UNI_A, DECODER_STREAM),
                    bytes(UNI_A, vec![0x00], false),
                ]
            },
        },
        Case {
            id: "qpack.second-encoder-stream",
            title: "a second QPACK encoder stream",
            rfc: "RFC 9204 §4.2",
            must: "Each endpoint MUST initiate, at most, one encoder stream and, at most, one \
                decoder stream. Receipt of a second instance of either stream type MUST be \
                treated as a connection error of type H3_STREAM_CREATION_ERROR.",
            expect: Expect::Connection(&[H3_STREAM_CREATION_ERROR]),
            control_stream: true,
            send: |_| {
                vec![
                    open_uni(UNI_A, ENCODER_STREAM),
                    open_uni(UNI_B, ENCODER_STREAM),
                ]
            },
        },
        Case {
            id: "qpack.encoder-stream-closed",
            title: "the QPACK encoder stream ended (FIN)",
            rfc: "RFC 9204 §4.2",
            must: CLOSED,
            expect: Expect::Connection(&[H3_CLOSED_CRITICAL_STREAM]),
            control_stream: true,
            send: |_| {
                vec![
                    open_uni(UNI_A, ENCODER_STREAM),
                    bytes(UNI_A, Vec::new(), true),
                ]
            },
        },
        Case {
            id: "qpack.decoder-stream-closed",
            title: "the QPACK decoder stream ended (FIN)",
            rfc: "RFC 9204 §4.2",
            must: CLOSED,
            expect: Expect::Connection(&[H3_CLOSED_CRITICAL_STREAM]),
            control_stream: true,
            send: |_| {
                vec![
                    open_uni(UNI_A, DECODER_STREAM),
                    bytes(UNI_A, Vec::new(), true),
                ]
            },
        },
    ]
}
