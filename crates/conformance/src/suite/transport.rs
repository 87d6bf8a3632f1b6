//! QUIC transport parameters (RFC 9000 §7.4, §18.2): the client offers one
//! with a value the RFC calls invalid, and the server must refuse the
//! handshake. quiche sends these values as set, which is as far as it
//! bends QUIC; `run` drives these cases on quiche directly, because h3i
//! builds its own quiche configuration and reports nothing of a handshake
//! that fails, which is where these cases end.

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
];
