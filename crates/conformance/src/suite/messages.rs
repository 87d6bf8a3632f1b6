//! Malformed requests and CONNECT (RFC 9114 §4): each to be refused on its
//! stream.

use super::*;

/// A malformed request.
const fn malformed(
    id: &'static str,
    title: &'static str,
    rfc: &'static str,
    must: &'static str,
    send: fn(&Origin) -> Vec<Action>,
) -> Case {
    Case {
        id,
        title,
        rfc,
        must,
        expect: Expect::Stream(&[H3_MESSAGE_ERROR]),
        how: How::Http3 {
            control_stream: true,
            send,
        },
    }
}

/// A malformed request whose defect is in the body or trailers, which a
/// server may answer without reading (RFC 9114 §4.1).
const IN_BODY: Expect = Expect::StreamInBody(&[H3_MESSAGE_ERROR]);

const REQUIRED: &str = "All HTTP/3 requests MUST include exactly one value for the :method, \
    :scheme, and :path pseudo-header fields, unless the request is a CONNECT request";
const CONNECT: &str = "A CONNECT request MUST be constructed as follows: The :method \
    pseudo-header field is set to \"CONNECT\" The :scheme and :path pseudo-header fields are \
    omitted The :authority pseudo-header field contains the host and port to connect to \
    ... A CONNECT request that does not conform to these restrictions is malformed.";

pub(super) const MESSAGES: &[Case] = &[
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
        // The same path again: served, it gets the plain GET's status.
        |origin| request_with(origin, |fields| fields.push(field(":path", &origin.path))),
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
        "...any message containing connection-specific fields MUST be treated as \
            malformed. The only exception to this is the TE header field, which MAY be \
            present in an HTTP/3 request header; when it is, it MUST NOT contain any value \
            other than \"trailers\".",
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
    Case {
        expect: IN_BODY,
        ..malformed(
            "message.content-length-mismatch",
            "a POST with content-length: 10 and 3 bytes of DATA",
            "RFC 9114 §4.1.2",
            "A request or response that is defined as having content when it contains a \
                Content-Length header field (Section 8.6 of [HTTP]) is malformed if the value of \
                the Content-Length header field does not equal the sum of the DATA frame lengths \
                received.",
            |origin| {
                let mut fields = request(origin);
                fields[0] = field(":method", "POST");
                fields.push(field("content-length", "10"));
                vec![
                    headers(CASE_STREAM, fields, false),
                    bytes(CASE_STREAM, frame(DATA, b"abc"), true),
                ]
            },
        )
    },
    Case {
        expect: IN_BODY,
        ..malformed(
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
        )
    },
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
];
