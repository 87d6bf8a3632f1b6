//! The I/O around the cases: each one on a fresh h3i connection, what came
//! back read into a `Transcript`, and a check after a silent case that the
//! server still answers at all.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::bail;
use h3i::actions::h3::{Action, StreamEvent, StreamEventType, WaitType};
use h3i::client::connection_summary::ConnectionSummary;
use h3i::client::sync_client;
use h3i::frame::H3iFrame;
use h3i::quiche::ConnectionError;
use h3lab_results::conformance::{CaseResult, ConformanceReport, Observed, CONFORMANCE_SCHEMA};

use crate::codes::H3_NO_ERROR;
use crate::handshake;
use crate::judge::{judge, observe, StreamAnswer, Transcript};
use crate::options::Options;
use crate::suite::{http3_actions, plain_request, Case, How, CASE_STREAM, FOLLOW_UP_STREAM};

/// The client, as the report names it.
const CLIENT: &str = "h3i 0.7.0 (quiche 0.30.0, patched: vendor/patches)";

/// How long the first plain request, before any case, may wait for its
/// answer: as long as `probe ttfb` waits for a connection.
const FIRST_ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// What the suite does not check yet, as the report says it.
const NOT_COVERED: &[&str] = &[
    "a duplicate transport parameter (RFC 9000 §7.4 asks a server to refuse it with \
     SHOULD, not MUST)",
    "answers that come later than the settle time after the follow-up request's",
];

/// The server did not answer a plain GET over HTTP/3, so no case can run.
#[derive(Debug)]
pub struct NoHttp3 {
    /// The URL probed.
    pub target: String,
    /// What happened instead.
    pub why: String,
}

impl std::fmt::Display for NoHttp3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} does not answer a plain GET over HTTP/3: {}",
            self.target, self.why
        )
    }
}

impl std::error::Error for NoHttp3 {}

/// Runs every selected case against the server, handing the report so far
/// to `on_case` as each case ends (so a caller can print it and keep it on
/// disk: an interrupted run loses only the case under way); fails at once
/// if the server does not answer a plain request over HTTP/3.
pub fn run_suite(
    options: &Options,
    mut on_case: impl FnMut(&ConformanceReport),
) -> anyhow::Result<ConformanceReport> {
    let selected = options.selected();
    if selected.is_empty() {
        bail!(
            "no case's id starts with {}; `h3lab probe conformance --list` lists them",
            options.only.join(" or ")
        );
    }
    // A server may bind its UDP port well before it answers on it (a JVM
    // starting): the first request waits longer than a case does.
    let first = Options {
        case_timeout: options.case_timeout.max(FIRST_ANSWER_TIMEOUT),
        ..options.clone()
    };
    let plain_status = answers_plain_request(&first).map_err(|err| NoHttp3 {
        target: options.target.clone(),
        why: format!("{err:#}"),
    })?;
    let mut report = ConformanceReport {
        schema: CONFORMANCE_SCHEMA.to_string(),
        target: options.target.clone(),
        address: options.address.to_string(),
        client: CLIENT.to_string(),
        case_timeout_ms: options.case_timeout.as_millis() as u64,
        plain_status,
        planned: Some(selected.len()),
        cases: Vec::new(),
        not_covered: NOT_COVERED.iter().map(|line| line.to_string()).collect(),
    };
    for &case in &selected {
        report.cases.push(run_case(options, case, plain_status));
        on_case(&report);
    }
    Ok(report)
}

fn run_case(options: &Options, case: &Case, plain_status: u16) -> CaseResult {
    let started = Instant::now();
    let seen = match *case.how() {
        How::Http3 {
            control_stream,
            send,
        } => exchange(
            options,
            http3_actions(&options.origin, control_stream, send),
        )
        .map(|summary| transcript(&summary)),
        ref quiche_direct => handshake::exchange(options, quiche_direct),
    };
    let mut observed = match seen {
        Ok(seen) => observe(&Transcript {
            plain_status: Some(plain_status),
            ..seen
        }),
        Err(detail) => Observed::NotRun { detail },
    };
    if observed == Observed::TimedOut && answers_plain_request(options).is_err() {
        observed = Observed::Crashed;
    }
    let expected = case.expected();
    let verdict = judge(&expected, &observed);
    CaseResult {
        id: case.id.to_string(),
        title: case.title.to_string(),
        rfc: case.rfc.to_string(),
        must: case.must.to_string(),
        expected,
        observed,
        verdict,
        elapsed_ms: started.elapsed().as_millis() as u64,
    }
}

/// The status of a plain GET on a fresh connection.
fn answers_plain_request(options: &Options) -> anyhow::Result<u16> {
    let summary = exchange(options, plain_request(&options.origin)).map_err(anyhow::Error::msg)?;
    let transcript = transcript(&summary);
    match (transcript.follow_up, transcript.closed_by_server) {
        (Some(StreamAnswer::Status(status)), _) => Ok(status),
        (_, Some((_, code, reason))) => bail!(
            "it closed the connection with code {code:#x} ({})",
            String::from_utf8_lossy(&reason)
        ),
        _ => bail!("no response within {:?}", options.case_timeout),
    }
}

/// Sends `actions` on a new connection, waits for the follow-up request's
/// answer (or a close, or the idle timeout), listens for the settle time,
/// and closes. h3i's client blocks and panics when a send it was told to
/// make fails, so it runs on a thread of its own, which is left behind if
/// it outlives twice the idle timeout.
fn exchange(options: &Options, mut actions: Vec<Action>) -> Result<ConnectionSummary, String> {
    let config = options.h3i_config().map_err(|err| format!("{err:#}"))?;
    actions.extend([
        Action::Wait {
            wait_type: WaitType::StreamEvent(StreamEvent {
                stream_id: FOLLOW_UP_STREAM,
                event_type: StreamEventType::Headers,
            }),
        },
        Action::Wait {
            wait_type: WaitType::WaitDuration(options.settle),
        },
        Action::ConnectionClose {
            error: ConnectionError {
                is_app: true,
                error_code: H3_NO_ERROR,
                reason: b"case over".to_vec(),
            },
        },
    ]);
    let (sender, receiver) = mpsc::channel();
    std::thread::Builder::new()
        .name("h3lab-conformance-case".into())
        .spawn(move || {
            let _ = sender.send(sync_client::connect(config, actions, None));
        })
        .map_err(|err| format!("starting the client thread: {err}"))?;
    match receiver.recv_timeout(options.case_timeout * 2 + options.settle) {
        Ok(Ok(summary)) => Ok(summary),
        Ok(Err(err)) => Err(format!("the QUIC connection failed: {err:?}")),
        Err(mpsc::RecvTimeoutError::Timeout) => Ok(ConnectionSummary::default()),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err("the client could not send the case (h3i stopped; its message is above)".into())
        }
    }
}

fn transcript(summary: &ConnectionSummary) -> Transcript {
    let closed_by_server = summary
        .conn_close_details
        .peer_error()
        .map(|error| (error.is_app, error.error_code, error.reason.clone()));
    Transcript {
        closed_by_server,
        case_stream: stream_answer(summary, CASE_STREAM),
        follow_up: stream_answer(summary, FOLLOW_UP_STREAM),
        plain_status: None,
    }
}

/// The first response HEADERS or reset the stream got.
fn stream_answer(summary: &ConnectionSummary, stream_id: u64) -> Option<StreamAnswer> {
    summary
        .stream_map
        .stream(stream_id)
        .iter()
        .find_map(|frame| match frame {
            H3iFrame::ResetStream(reset) => Some(StreamAnswer::Reset(reset.error_code)),
            H3iFrame::Headers(headers) => {
                let status = headers.status_code()?;
                let status = std::str::from_utf8(status).ok()?.parse().ok()?;
                Some(StreamAnswer::Status(status))
            }
            H3iFrame::QuicheH3(_) => None,
        })
}

#[cfg(test)]
mod tests {
    use super::CLIENT;

    /// The report names the client by the versions Cargo.lock builds, so
    /// an update of h3i or quiche that forgets the name fails here; and
    /// the quiche built is the vendored one (a path dependency, which
    /// Cargo.lock gives no `source`).
    #[test]
    fn the_client_named_is_the_one_locked() {
        let lock = include_str!("../Cargo.lock");
        let entry_of = |name: &str| {
            let entry = format!("[[package]]\nname = \"{name}\"\nversion = \"");
            let start = lock.find(&entry).expect("in Cargo.lock") + entry.len();
            lock[start..].split("\n\n").next().unwrap()
        };
        let version_of = |name| entry_of(name).split('"').next().unwrap().to_string();
        let expected = format!(
            "h3i {} (quiche {}, patched: vendor/patches)",
            version_of("h3i"),
            version_of("quiche")
        );
        assert_eq!(CLIENT, expected);
        assert!(!entry_of("quiche").contains("\nsource = "));
    }
}
