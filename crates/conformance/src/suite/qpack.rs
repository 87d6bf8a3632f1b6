//! QPACK field sections and the encoder and decoder streams (RFC 9204).

use super::*;

const QPACK_STREAM_CLOSED: &str =
    "Closure of either unidirectional stream type MUST be treated as a \
    connection error of type H3_CLOSED_CRITICAL_STREAM.";

pub(super) const QPACK: &[Case] = &[
    Case {
        id: "qpack.static-index-out-of-range",
        title: "a field line referring to static table entry 99 (the table has 0 to 98)",
        rfc: "RFC 9204 §3.1",
        must: "When the decoder encounters an invalid static table index in a field line \
            representation, it MUST treat this as a connection error of type \
            QPACK_DECOMPRESSION_FAILED.",
        expect: Expect::Connection(&[QPACK_DECOMPRESSION_FAILED]),
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                raw_section([section_prefix(0), indexed_static(17), indexed_static(99)].concat())
            },
        },
    },
    Case {
        id: "qpack.dynamic-reference-without-inserts",
        title: "a field line referring to the dynamic table in a section that needs no inserts",
        rfc: "RFC 9204 §2.2.1",
        must: "If it encounters a Required Insert Count smaller than expected, it MUST treat \
            this as a connection error of type QPACK_DECOMPRESSION_FAILED",
        expect: Expect::Connection(&[QPACK_DECOMPRESSION_FAILED]),
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                raw_section([section_prefix(0), indexed_static(17), indexed_dynamic(0)].concat())
            },
        },
    },
    Case {
        id: "qpack.required-insert-count-impossible",
        title: "a field section whose Encoded Required Insert Count no encoder could produce",
        rfc: "RFC 9204 §4.5.1.1",
        must: "If the decoder encounters a value of EncodedInsertCount that could not have \
            been produced by a conformant encoder, it MUST treat this as a connection error \
            of type QPACK_DECOMPRESSION_FAILED.",
        expect: Expect::Connection(&[QPACK_DECOMPRESSION_FAILED]),
        how: How::Http3 {
            control_stream: true,
            // Larger than twice the entries of any table under 32 MiB.
            send: |_| raw_section([section_prefix(1 << 21), indexed_static(17)].concat()),
        },
    },
    Case {
        id: "qpack.encoder-capacity-too-large",
        title: "an encoder stream setting a table capacity of 2^30",
        rfc: "RFC 9204 §4.3.1",
        must: "The decoder MUST treat a new dynamic table capacity value that exceeds this \
            limit as a connection error of type QPACK_ENCODER_STREAM_ERROR.",
        expect: Expect::Connection(&[QPACK_ENCODER_STREAM_ERROR]),
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                vec![
                    open_uni(UNI_A, ENCODER_STREAM),
                    bytes(UNI_A, prefixed_int(0b0010_0000, 5, 1 << 30), false),
                ]
            },
        },
    },
    Case {
        id: "qpack.encoder-static-index-out-of-range",
        title: "an encoder stream inserting with the name of static entry 200",
        rfc: "RFC 9204 §3.1",
        must: "If this index is received on the encoder stream, this MUST be treated as a \
            connection error of type QPACK_ENCODER_STREAM_ERROR.",
        expect: Expect::Connection(&[QPACK_ENCODER_STREAM_ERROR]),
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                let insert = [prefixed_int(0b1100_0000, 6, 200), vec![0x01, b'x']].concat();
                vec![open_uni(UNI_A, ENCODER_STREAM), bytes(UNI_A, insert, false)]
            },
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
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                let ack = prefixed_int(0b1000_0000, 7, CASE_STREAM);
                vec![open_uni(UNI_A, DECODER_STREAM), bytes(UNI_A, ack, false)]
            },
        },
    },
    Case {
        id: "qpack.decoder-zero-increment",
        title: "a decoder stream's Insert Count Increment of 0",
        rfc: "RFC 9204 §4.4.3",
        must: "An encoder that receives an Increment field equal to zero, or one that \
            increases the Known Received Count beyond what the encoder has sent, MUST treat \
            this as a connection error of type QPACK_DECODER_STREAM_ERROR.",
        expect: Expect::Connection(&[QPACK_DECODER_STREAM_ERROR]),
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                vec![
                    open_uni(UNI_A, DECODER_STREAM),
                    bytes(UNI_A, vec![0x00], false),
                ]
            },
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
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                vec![
                    open_uni(UNI_A, ENCODER_STREAM),
                    open_uni(UNI_B, ENCODER_STREAM),
                ]
            },
        },
    },
    Case {
        id: "qpack.encoder-stream-closed",
        title: "the QPACK encoder stream ended (FIN)",
        rfc: "RFC 9204 §4.2",
        must: QPACK_STREAM_CLOSED,
        expect: Expect::Connection(&[H3_CLOSED_CRITICAL_STREAM]),
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                vec![
                    open_uni(UNI_A, ENCODER_STREAM),
                    bytes(UNI_A, Vec::new(), true),
                ]
            },
        },
    },
    Case {
        id: "qpack.decoder-stream-closed",
        title: "the QPACK decoder stream ended (FIN)",
        rfc: "RFC 9204 §4.2",
        must: QPACK_STREAM_CLOSED,
        expect: Expect::Connection(&[H3_CLOSED_CRITICAL_STREAM]),
        how: How::Http3 {
            control_stream: true,
            send: |_| {
                vec![
                    open_uni(UNI_A, DECODER_STREAM),
                    bytes(UNI_A, Vec::new(), true),
                ]
            },
        },
    },
    Case {
        id: "qpack.blocked-streams-overflow",
        title: "requests blocked on a table insert never sent, one more than \
            SETTINGS_QPACK_BLOCKED_STREAMS allows",
        rfc: "RFC 9204 §2.1.2",
        must: "If a decoder encounters more blocked streams than it promised to support, it \
            MUST treat this as a connection error of type QPACK_DECOMPRESSION_FAILED.",
        expect: Expect::Connection(&[QPACK_DECOMPRESSION_FAILED]),
        how: How::AfterSettings(blocked_requests),
    },
];

/// RFC 9204 §5: the SETTINGS a QPACK decoder announces.
const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
const QPACK_BLOCKED_STREAMS: u64 = 0x07;

/// One request more than the server's SETTINGS_QPACK_BLOCKED_STREAMS, each
/// a field section that refers to the first entry of the dynamic table,
/// which the client never inserts, so each blocks (RFC 9204 §2.1.2).
fn blocked_requests(
    connection: &quiche::Connection,
    settings: &[(u64, u64)],
) -> Result<Vec<(u64, Vec<u8>)>, String> {
    let setting = |id| {
        let sent = settings.iter().rev().find(|(key, _)| *key == id);
        sent.map_or(0, |(_, value)| *value)
    };
    // RFC 9204 §3.2.2: the table holds at most capacity / 32 entries.
    let max_entries = setting(QPACK_MAX_TABLE_CAPACITY) / 32;
    if max_entries == 0 {
        return Err("the server's QPACK dynamic table holds no entry \
            (SETTINGS_QPACK_MAX_TABLE_CAPACITY under 32), so no request can block on it; \
            qpack.required-insert-count-impossible covers references to it"
            .to_string());
    }
    let blocked = setting(QPACK_BLOCKED_STREAMS);
    let requests = blocked.saturating_add(1);
    let with_the_get = requests.saturating_add(1);
    let allowed = connection.peer_streams_left_bidi();
    if with_the_get > allowed {
        return Err(format!(
            "SETTINGS_QPACK_BLOCKED_STREAMS is {blocked}: one more blocked request and the \
             GET after them take {with_the_get} bidirectional streams, and the server allows \
             {allowed} at first (the case does not wait for it to allow more)"
        ));
    }
    // Required Insert Count 1, encoded as 1 mod (2 * MaxEntries) + 1
    // (§4.5.1.1), with a Base of 1, so relative index 0 is entry 0.
    let section = [
        section_prefix(1 % (2 * max_entries) + 1),
        indexed_dynamic(0),
    ]
    .concat();
    let request = frame(HEADERS, &section);
    Ok((1..=requests).map(|n| (4 * n, request.clone())).collect())
}
