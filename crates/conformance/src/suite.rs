//! The cases: what the client sends, the RFC text it checks, and what a
//! conforming server does with it. Each case runs on a connection of its
//! own; its request stream is 0 and the client's control stream 2.

use h3i::actions::h3::{send_headers_frame_literal, Action, ExpectedStreamSendResult};
use h3i::quiche;
use h3i::quiche::h3::{Header, NameValue};
use h3lab_results::conformance::Expected;

use crate::codes::*;
use crate::wire::*;

mod http3;
mod messages;
mod qpack;
mod transport;

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
    how: How,
}

/// How a case reaches the server.
pub(crate) enum How {
    /// HTTP/3 streams and frames, sent by h3i on an established connection.
    Http3 {
        /// Whether the client opens its control stream with an empty
        /// SETTINGS before the case: every case but those about that stream.
        control_stream: bool,
        send: fn(&Origin) -> Vec<Action>,
    },
    /// The client's transport parameters, bent by this before the
    /// handshake (`transport`).
    TransportParameters(fn(&mut quiche::Config)),
    /// A QUIC frame as raw bytes (`transport`).
    Frame(RawFrame),
    /// Requests as raw bytes, built from the server's SETTINGS (`qpack`).
    AfterSettings(RawRequests),
}

/// The requests a case sends once the server's SETTINGS have come: each a
/// client-initiated bidirectional stream (not 0, where the plain GET
/// after the case goes) and its bytes, which end it; built from the
/// connection (the server's limits) and the SETTINGS (identifier and value,
/// as sent), or why the server leaves no way to run the case.
pub(crate) type RawRequests =
    fn(&quiche::Connection, &[(u64, u64)]) -> Result<Vec<(u64, Vec<u8>)>, String>;

/// A QUIC frame the client sends as given, whatever RFC 9000 says.
#[derive(Clone, Copy)]
pub(crate) struct RawFrame {
    /// The packet it goes in: `Handshake`, as soon as the client has the
    /// server's transport parameters, or `Short` (1-RTT), once the
    /// handshake is done.
    pub packet: quiche::Type,
    /// Its bytes, from the connection as the client sees it (the server's
    /// limits), or why the server leaves no way to run the case.
    pub build: fn(&quiche::Connection) -> Result<Vec<u8>, String>,
}

/// What a conforming server does, with the codes the RFC allows.
#[derive(Clone, Copy)]
enum Expect {
    /// An HTTP/3 (application) connection error.
    Connection(&'static [u64]),
    /// A QUIC transport connection error.
    Transport(&'static [u64]),
    Stream(&'static [u64]),
    /// A stream error whose defect is in the body or trailers.
    StreamInBody(&'static [u64]),
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
            Expect::Transport(codes) => Expected::TransportError {
                codes: codes.iter().map(|&code| named(code, false)).collect(),
            },
            Expect::Stream(codes) => Expected::StreamError {
                codes: named_all(codes),
                in_body: false,
            },
            Expect::StreamInBody(codes) => Expected::StreamError {
                codes: named_all(codes),
                in_body: true,
            },
            Expect::Ignore => Expected::Ignore,
        }
    }

    /// Whether the case bends QUIC rather than HTTP/3.
    pub fn is_transport(&self) -> bool {
        matches!(self.how, How::TransportParameters(_) | How::Frame(_))
    }

    pub(crate) fn how(&self) -> &How {
        &self.how
    }
}

/// Everything the client sends for an HTTP/3 case, in order: its control
/// stream (if `control_stream`), the case, then a plain GET on
/// [`FOLLOW_UP_STREAM`]. All of it goes out before the client reads
/// anything (but for a case that waits for an answer first,
/// `control.reset`), so no send can fail because the server already
/// closed.
pub(crate) fn http3_actions(
    origin: &Origin,
    control_stream: bool,
    send: fn(&Origin) -> Vec<Action>,
) -> Vec<Action> {
    let mut actions = Vec::new();
    if control_stream {
        actions.extend(open_control_stream());
    }
    actions.extend(send(origin));
    actions.push(headers(FOLLOW_UP_STREAM, request(origin), true));
    actions
}

/// The client's control stream and a plain GET, nothing else: whether the
/// server answers at all.
pub(crate) fn plain_request(origin: &Origin) -> Vec<Action> {
    let mut actions = open_control_stream();
    actions.push(headers(FOLLOW_UP_STREAM, request(origin), true));
    actions
}

fn open_control_stream() -> Vec<Action> {
    control_stream_carrying(settings(&[]), false)
}

/// The client's control stream with `first` as its first bytes, for the
/// cases about that stream.
fn control_stream_carrying(first: Vec<u8>, fin_stream: bool) -> Vec<Action> {
    vec![
        open_uni(CONTROL, CONTROL_STREAM),
        bytes(CONTROL, first, fin_stream),
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
pub(crate) fn request(origin: &Origin) -> Vec<Header> {
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
pub fn cases() -> impl Iterator<Item = &'static Case> {
    [
        http3::CONTROL_AND_SETTINGS,
        http3::FRAMES,
        http3::STREAMS,
        messages::MESSAGES,
        qpack::QPACK,
        transport::TRANSPORT_PARAMETERS,
        transport::FRAMES,
    ]
    .into_iter()
    .flatten()
}

#[cfg(test)]
mod tests {
    use h3lab_results::conformance::CONFORMANCE_CASES;

    use super::cases;

    #[test]
    fn the_case_count_h3lab_estimates_with_is_the_suites() {
        assert_eq!(cases().count(), CONFORMANCE_CASES);
    }

    #[test]
    fn case_ids_are_unique() {
        let mut ids: Vec<&str> = cases().map(|case| case.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), cases().count());
    }
}
