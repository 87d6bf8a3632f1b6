//! One HTTP/1.1 client connection, sans I/O: one request at a time, its
//! response read through `h1codec`, the connection kept alive unless the
//! server says otherwise.

use std::time::{Duration, Instant};

use h3lab_results::ErrorKind;
use http::HeaderName;

use super::h1codec::{H1Error, ResponseReader};
use crate::books::{Outcome, Pending};
use crate::schedule::Ticket;

/// The response fields the load report reads.
static WANTED: [HeaderName; 1] = [HeaderName::from_static("server-timing")];

pub(crate) struct H1Conn {
    reader: ResponseReader,
    head_request: bool,
    request: Option<Pending>,
    /// The server will close it after this response, or a request timed
    /// out mid-response: no new requests.
    pub(crate) draining: bool,
    pub(crate) answered: bool,
    pub(crate) sent: u64,
}

impl H1Conn {
    pub(crate) fn new(head_request: bool) -> H1Conn {
        H1Conn {
            reader: ResponseReader::new(&WANTED, head_request),
            head_request,
            request: None,
            draining: false,
            answered: false,
            sent: 0,
        }
    }

    pub(crate) fn in_flight(&self) -> usize {
        usize::from(self.request.is_some())
    }

    /// Queues one request, already encoded whole in `bytes`.
    pub(crate) fn send(&mut self, ticket: Ticket, now: Instant, bytes: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(bytes);
        self.request = Some(Pending::new(ticket, now));
        self.sent += 1;
    }

    /// Reads the response at the start of `input`; returns the bytes used.
    /// An error ends the connection (the caller fails what is in flight).
    pub(crate) fn receive(
        &mut self,
        mut input: &[u8],
        now: Instant,
        outcomes: &mut Vec<Outcome>,
    ) -> Result<usize, H1Error> {
        let mut used = 0;
        while !input.is_empty() {
            let Some(request) = self.request.as_mut() else {
                return Err(H1Error::new(
                    "bytes from the server with no request outstanding",
                ));
            };
            let step = self.reader.feed(input)?;
            used += step.consumed;
            input = &input[step.consumed..];
            request.body_bytes += step.body_bytes;
            if let Some(head) = step.head {
                request.set_head(&head, now, self.head_request);
                self.draining |= !step.keep_alive;
            }
            if step.complete {
                self.complete(now, outcomes);
            } else if step.consumed == 0 {
                break;
            }
        }
        Ok(used)
    }

    /// The server closed its side: a response read until the close ends
    /// here; any other in flight fails.
    pub(crate) fn end_of_input(
        &mut self,
        now: Instant,
        outcomes: &mut Vec<Outcome>,
    ) -> Result<(), H1Error> {
        self.draining = true;
        if self.request.is_none() {
            return Ok(());
        }
        self.reader.end_of_input()?;
        self.complete(now, outcomes);
        Ok(())
    }

    fn complete(&mut self, now: Instant, outcomes: &mut Vec<Outcome>) {
        let request = self.request.take().expect("a request in flight");
        self.answered = true;
        self.reader.reset(self.head_request);
        outcomes.push(request.response(now).expect("a final head before the end"));
    }

    /// The request, if past its deadline: the connection is stuck
    /// mid-response and takes no more.
    pub(crate) fn expire(&mut self, now: Instant, timeout: Duration) -> Option<Ticket> {
        let request = self
            .request
            .take_if(|request| now >= request.deadline(timeout))?;
        self.draining = true;
        Some(request.ticket)
    }

    pub(crate) fn next_expiry(&self, timeout: Duration) -> Option<Instant> {
        self.request
            .as_ref()
            .map(|request| request.deadline(timeout))
    }

    /// The request in flight, failed with the connection's end.
    pub(crate) fn fail_all(&mut self, kind: ErrorKind, message: &str, outcomes: &mut Vec<Outcome>) {
        if let Some(request) = self.request.take() {
            outcomes.push(request.failed(kind, message.to_string(), false));
        }
    }
}
