//! What the event loop asks of a connection once open, whichever its
//! protocol: h1's one request at a time or h2's streams.

use std::time::{Duration, Instant};

use bytes::Bytes;
use h3lab_client::ClientError;
use h3lab_results::ErrorKind;
use http::request::Parts;

use super::h1::H1Conn;
use super::h1codec::H1Error;
use super::h2::H2Conn;
use crate::books::Outcome;
use crate::schedule::Ticket;

/// The protocol a connection speaks once open.
pub(crate) enum Http {
    H1(H1Conn),
    H2(H2Conn),
}

/// Why a connection ended.
/// A request as its protocol takes it.
pub(crate) enum RequestHead<'a> {
    /// HTTP/1.1: the whole request, body included.
    H1(&'a [u8]),
    /// HTTP/2: the request's fields; `fixed`: the same for every request.
    H2 { parts: &'a Parts, fixed: bool },
}

pub(crate) enum Failure {
    /// It never came up.
    SetUp(ClientError),
    /// The server broke the protocol: closed with this code (h2).
    Protocol(ErrorKind, String, u32),
    /// It went away.
    Lost(ErrorKind, String),
}

impl Http {
    pub(crate) fn in_flight(&self) -> usize {
        match self {
            Http::H1(h1) => h1.in_flight(),
            Http::H2(h2) => h2.in_flight(),
        }
    }

    pub(crate) fn stream_limit(&self, streams: usize) -> usize {
        match self {
            Http::H1(_) => 1,
            Http::H2(h2) => h2.stream_limit(streams),
        }
    }

    pub(crate) fn draining(&self) -> bool {
        match self {
            Http::H1(h1) => h1.draining,
            Http::H2(h2) => h2.draining,
        }
    }

    pub(crate) fn answered(&self) -> bool {
        match self {
            Http::H1(h1) => h1.answered,
            Http::H2(h2) => h2.answered,
        }
    }

    pub(crate) fn sent(&self) -> u64 {
        match self {
            Http::H1(h1) => h1.sent,
            Http::H2(h2) => h2.sent,
        }
    }

    /// Why a connection drained before it carried a request.
    pub(crate) fn unused_because(&self) -> String {
        match self {
            Http::H1(_) => "HTTP/1.1: the server closed the connection before any request",
            Http::H2(h2) if h2.goaway_seen() => "HTTP/2: the server sent GOAWAY before any request",
            Http::H2(_) => "HTTP/2: the server closed the connection before any request",
        }
        .to_string()
    }

    /// Queues a request: h1's bytes whole, or h2's head (encoded by the
    /// connection) and body.
    pub(crate) fn send(
        &mut self,
        ticket: Ticket,
        now: Instant,
        request: RequestHead<'_>,
        body: &Bytes,
        out: &mut Vec<u8>,
    ) {
        match (self, request) {
            (Http::H1(h1), RequestHead::H1(bytes)) => h1.send(ticket, now, bytes, out),
            (Http::H2(h2), RequestHead::H2 { parts, fixed }) => {
                h2.send_request(ticket, now, parts, fixed, body, out)
            }
            _ => unreachable!("a request in its connection's protocol"),
        }
    }

    pub(crate) fn receive(
        &mut self,
        input: &[u8],
        now: Instant,
        outcomes: &mut Vec<Outcome>,
        out: &mut Vec<u8>,
    ) -> Result<usize, Failure> {
        match self {
            Http::H1(h1) => h1
                .receive(input, now, outcomes)
                .map_err(|err| Failure::Protocol(ErrorKind::Protocol, h1_message(&err), 0)),
            Http::H2(h2) => h2.receive(input, now, outcomes, out).map_err(|err| {
                Failure::Protocol(ErrorKind::Protocol, format!("HTTP/2: {err}"), err.code)
            }),
        }
    }

    /// The server closed its side.
    pub(crate) fn end_of_input(
        &mut self,
        now: Instant,
        outcomes: &mut Vec<Outcome>,
    ) -> Result<(), Failure> {
        match self {
            Http::H1(h1) => h1
                .end_of_input(now, outcomes)
                .map_err(|err| Failure::Lost(ErrorKind::Reset, h1_message(&err))),
            Http::H2(h2) => {
                h2.draining = true;
                if h2.in_flight() == 0 {
                    return Ok(());
                }
                Err(Failure::Lost(
                    ErrorKind::Reset,
                    "HTTP/2: the server closed the connection before the response ended".into(),
                ))
            }
        }
    }

    pub(crate) fn expire(
        &mut self,
        now: Instant,
        timeout: Duration,
        out: &mut Vec<u8>,
    ) -> Vec<Ticket> {
        match self {
            Http::H1(h1) => h1.expire(now, timeout).into_iter().collect(),
            Http::H2(h2) => h2.expire(now, timeout, out),
        }
    }

    pub(crate) fn next_expiry(&self, timeout: Duration) -> Option<Instant> {
        match self {
            Http::H1(h1) => h1.next_expiry(timeout),
            Http::H2(h2) => h2.next_expiry(timeout),
        }
    }

    pub(crate) fn fail_all(&mut self, kind: ErrorKind, message: &str, outcomes: &mut Vec<Outcome>) {
        match self {
            Http::H1(h1) => h1.fail_all(kind, message, outcomes),
            Http::H2(h2) => h2.fail_all(kind, message, outcomes),
        }
    }
}

fn h1_message(err: &H1Error) -> String {
    format!("HTTP/1.1: {}", err.reason)
}
