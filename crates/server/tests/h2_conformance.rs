//! HTTP/2 conformance cases that h2spec runs (RFC 9113), written as raw
//! frames against the live server: a malformed request earns a stream error
//! of the right type, not a response. They regressed once because the
//! server answered built-in endpoints before the request had ended, which
//! made it reset the stream with NO_ERROR after its answer and ignore what
//! the client sent next.

mod attack_common;
mod h2_frames;

use std::time::{Duration, Instant};

use h2_frames::*;
use h3lab_server::{Limits, RunningServer, ServerConfig};
use tokio::io::AsyncWriteExt;

/// How long the server may take to answer a case; it answers in
/// milliseconds, so this only bounds a server that never does.
const ANSWER_LIMIT: Duration = Duration::from_secs(10);
/// How long a request's first frames stand alone, for a server that
/// answers too early to show it.
const EARLY_ANSWER_WINDOW: Duration = Duration::from_millis(500);
const STREAM: u32 = 1;

async fn start() -> RunningServer {
    let config = ServerConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        limits: Limits::default(),
        ..ServerConfig::default()
    };
    h3lab_server::start(config).await.unwrap()
}

/// A POST's header block, with `extra` fields after the pseudo-headers.
fn post(extra: &[(&str, &str)]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in [
        (":method", "POST"),
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", "/"),
    ]
    .iter()
    .chain(extra)
    {
        literal(&mut block, name, value.as_bytes());
    }
    block
}

fn trailers(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in fields {
        literal(&mut block, name, value.as_bytes());
    }
    block
}

/// Sends the request's `head` on a fresh connection, gives the server time
/// to answer it early, then sends the `rest`; returns what the server sent
/// on stream 1, and its GOAWAY if any, up to and including whichever ends
/// the exchange first: a RST_STREAM on stream 1, a GOAWAY, or the end of a
/// response (or all it sent, if none came).
async fn answer(server: &RunningServer, head: &[u8], rest: &[u8]) -> Vec<Seen> {
    let tls = attack_common::tls_connector(server.cert_pem().unwrap(), b"h2");
    let (mut writer, answers, _reading) = connect(server.local_addr(), &tls, &[])
        .await
        .expect("the server accepts the connection");
    let response = |seen: &Seen| seen.kind == HEADERS && seen.stream == STREAM;
    let ends = |seen: &Seen| {
        let on_stream = seen.stream == STREAM;
        let finished =
            on_stream && matches!(seen.kind, HEADERS | DATA) && seen.flags & END_STREAM != 0;
        seen.kind == GOAWAY || (seen.kind == RST_STREAM && on_stream) || finished
    };
    writer.write_all(head).await.unwrap();
    // A server that answers before the request ends does so within
    // milliseconds; one that waits gives no sign, so this only bounds the
    // wait (sent together, the frames would reach the server before its
    // answer, and the early answer would go unseen).
    until(&answers, EARLY_ANSWER_WINDOW, response).await;
    writer.write_all(rest).await.unwrap();
    until(&answers, ANSWER_LIMIT, ends).await;
    let frames = answers.frames.lock().unwrap();
    let relevant = frames
        .iter()
        .filter(|seen| seen.stream == STREAM || seen.kind == GOAWAY);
    let mut answer = Vec::new();
    for seen in relevant {
        answer.push(*seen);
        if ends(seen) {
            break;
        }
    }
    answer
}

/// Returns once the server has sent a frame matching `wanted`, or after `limit`.
async fn until(answers: &Answers, limit: Duration, wanted: impl Fn(&Seen) -> bool) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline && !answers.frames.lock().unwrap().iter().any(&wanted) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The server answered with a stream (or connection) error of type `code`
/// and sent no response on the stream first.
fn assert_error(answer: &[Seen], code: u32) {
    let last = answer.last().copied();
    assert!(
        last.is_some_and(|seen| seen.code == Some(code)),
        "expected RST_STREAM or GOAWAY with error {code:#x}; the server sent {answer:?}"
    );
    assert_eq!(
        answer.len(),
        1,
        "the server answered before its error: {answer:?}"
    );
}

/// RFC 9113 section 6.9.1 (h2spec 6.9.1/3).
#[tokio::test]
async fn a_stream_window_pushed_past_its_maximum_is_a_flow_control_error() {
    let server = start().await;
    let (mut head, mut rest) = (Vec::new(), Vec::new());
    frame(&mut head, HEADERS, END_HEADERS, STREAM, &request("/"));
    let increment = 0x7fff_ffffu32.to_be_bytes();
    for _ in 0..2 {
        frame(&mut rest, WINDOW_UPDATE, 0, STREAM, &increment);
    }
    assert_error(&answer(&server, &head, &rest).await, FLOW_CONTROL_ERROR);
}

/// A POST with a 4-byte body whose trailers carry `fields` and `flags`;
/// what the server answers.
async fn post_with_trailers(fields: &[(&str, &str)], flags: u8) -> Vec<Seen> {
    let server = start().await;
    let (mut head, mut rest) = (Vec::new(), Vec::new());
    frame(&mut head, HEADERS, END_HEADERS, STREAM, &post(&[]));
    frame(&mut head, DATA, 0, STREAM, b"test");
    frame(&mut rest, HEADERS, flags, STREAM, &trailers(fields));
    answer(&server, &head, &rest).await
}

/// RFC 9113 section 8.1 (h2spec 8.1/1): trailers must end the stream.
#[tokio::test]
async fn a_second_headers_frame_without_end_stream_is_a_protocol_error() {
    let answer = post_with_trailers(&[("x-test", "ok")], END_HEADERS).await;
    assert_error(&answer, PROTOCOL_ERROR);
}

/// RFC 9113 section 8.1.1 (h2spec 8.1.2.6/1).
#[tokio::test]
async fn a_content_length_that_disagrees_with_the_data_is_a_protocol_error() {
    let server = start().await;
    let (mut head, mut rest) = (Vec::new(), Vec::new());
    let block = post(&[("content-length", "1")]);
    frame(&mut head, HEADERS, END_HEADERS, STREAM, &block);
    frame(&mut rest, DATA, END_STREAM, STREAM, b"test");
    assert_error(&answer(&server, &head, &rest).await, PROTOCOL_ERROR);
}

/// RFC 9113 section 8.3 (h2spec 8.1.2.1/3): no pseudo-header in trailers.
/// h2spec's trailers lack END_STREAM, which the h2 crate rejects first.
#[tokio::test]
async fn a_pseudo_header_in_trailers_without_end_stream_is_a_protocol_error() {
    let answer = post_with_trailers(&[(":method", "POST")], END_HEADERS).await;
    assert_error(&answer, PROTOCOL_ERROR);
}

/// The known upstream gap: trailers that do end the stream are not checked
/// for pseudo-headers by the h2 crate (0.4.20, `Recv::recv_trailers`), which
/// drops them, so the request is answered. RFC 9113 section 8.3 makes it
/// malformed. When this fails, h2 has closed the gap: expect PROTOCOL_ERROR
/// here as above, and drop the note in docs/hardening.md.
#[tokio::test]
async fn upstream_gap_a_pseudo_header_in_trailers_that_end_the_stream_is_answered() {
    let answer = post_with_trailers(&[(":method", "POST")], END_HEADERS | END_STREAM).await;
    assert!(
        answer.first().is_some_and(|seen| seen.kind == HEADERS),
        "h2 now rejects the request (see this test's comment): {answer:?}"
    );
    assert!(answer.iter().all(|seen| seen.code.is_none()), "{answer:?}");
}
