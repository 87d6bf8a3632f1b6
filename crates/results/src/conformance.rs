//! `h3lab.conformance/1`: what a server did with each case of `h3lab probe
//! conformance`, the HTTP/3 and QPACK error-handling suite.

use serde::{Deserialize, Serialize};

/// Schema tag of [`ConformanceReport`].
pub const CONFORMANCE_SCHEMA: &str = "h3lab.conformance/1";

/// How many cases the suite has: for the time a run takes, which h3lab's
/// bench estimates without the helper that runs them (a project of its
/// own). The helper's tests check it against its cases.
pub const CONFORMANCE_CASES: usize = 71;

/// One server's run of the suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConformanceReport {
    /// Always [`CONFORMANCE_SCHEMA`].
    pub schema: String,
    /// The URL asked, as given.
    pub target: String,
    /// The address its QUIC packets went to, `ip:port`.
    pub address: String,
    /// The client that sent the cases, with its version (`h3i 0.7.0,
    /// quiche 0.30.0`).
    pub client: String,
    /// How long a case waited for the server's answer.
    pub case_timeout_ms: u64,
    /// The status the server gives the URL's plain GET. A malformed
    /// request answered with the same status was served as if it were
    /// valid, not refused.
    pub plain_status: u16,
    /// How many cases the run set out to run; fewer in `cases` means it
    /// stopped early (Ctrl-C, or the helper died). `None` in a report
    /// written before the field existed.
    #[serde(default)]
    pub planned: Option<usize>,
    /// One per case, in the suite's order.
    pub cases: Vec<CaseResult>,
    /// What the suite does not check, one line each, so a clean table is
    /// not read as more than it is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_covered: Vec<String>,
}

impl ConformanceReport {
    /// Whether every case it set out to run has a result (unknown, so
    /// `false`, when the report does not say how many it planned).
    pub fn is_complete(&self) -> bool {
        self.planned == Some(self.cases.len())
    }

    /// Cases the server failed.
    pub fn failures(&self) -> impl Iterator<Item = &CaseResult> {
        self.cases
            .iter()
            .filter(|case| case.verdict == Verdict::Fail)
    }
}

/// One case: what was sent, what the RFC requires, and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// Stable name, e.g. `control.data-frame`.
    pub id: String,
    /// What the client does, in a line.
    pub title: String,
    /// Where the requirement is, e.g. `RFC 9114 §7.2.1`.
    pub rfc: String,
    /// The requirement, quoted from the RFC.
    pub must: String,
    /// What a conforming server does.
    pub expected: Expected,
    /// What this server did.
    pub observed: Observed,
    /// Whether that conforms.
    pub verdict: Verdict,
    /// From the first packet sent to the answer (or the timeout).
    pub elapsed_ms: u64,
}

/// What a conforming server does with a case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Expected {
    /// Closes the connection with one of these HTTP/3 or QPACK error codes.
    ConnectionError {
        /// The codes the RFC allows.
        codes: Vec<ErrorCode>,
    },
    /// Closes the connection with one of these QUIC transport error codes
    /// (a transport CONNECTION_CLOSE, frame type 0x1c), most often during
    /// the handshake.
    TransportError {
        /// The codes the RFC allows.
        codes: Vec<ErrorCode>,
    },
    /// Treats the request as malformed: resets its stream or closes the
    /// connection with one of these codes, or answers it with 400 (RFC 9114
    /// §4.1.2 lets a server say why before it closes the stream; another
    /// 4xx or 5xx does not say the request was seen as malformed, so it
    /// gives no verdict, and with the defect in the body no answer does).
    StreamError {
        /// The codes the RFC allows.
        codes: Vec<ErrorCode>,
        /// The defect is in the body or trailers, which a server may answer
        /// without reading (RFC 9114 §4.1): an answer gives no verdict.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        in_body: bool,
    },
    /// Ignores what it does not know and answers the next request on the
    /// same connection.
    Ignore,
}

/// An HTTP/3, QPACK or QUIC error code with its name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCode {
    /// The code as sent.
    pub code: u64,
    /// Its name in the RFC's registry (`H3_FRAME_UNEXPECTED`), or
    /// `unknown` for a code the registries do not have.
    pub name: String,
}

/// What the server did, from the client's side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Observed {
    /// It closed the connection.
    ConnectionClosed {
        /// Its error code.
        error: ErrorCode,
        /// An application (HTTP/3) close rather than a QUIC transport one.
        application: bool,
        /// Its reason phrase, as sent (lossily decoded).
        reason: String,
    },
    /// It reset the case's request stream.
    StreamReset {
        /// Its error code.
        error: ErrorCode,
    },
    /// It answered the case's request with this status.
    Answered {
        /// The `:status` it sent.
        status: u16,
    },
    /// It went on as if nothing happened: the request after the case was
    /// answered and the connection stayed open.
    CarriedOn,
    /// No close and no answer within the case's timeout.
    TimedOut,
    /// After a case that timed out, a new connection got no answer within
    /// the timeout either: the server crashed, or was stuck at least that
    /// long (a later case may find it answering again).
    Crashed,
    /// The case could not be run (the handshake failed, or the client
    /// could not send what the case needs); the detail says why.
    NotRun {
        /// Why.
        detail: String,
    },
}

/// Whether what the server did conforms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// It did what the RFC requires.
    Pass,
    /// It did something else.
    Fail,
    /// Unknown: the case did not run, or what the server did neither
    /// refuses nor serves it (a 405 to a malformed request).
    Unknown,
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({:#x})", self.name, self.code)
    }
}

fn one_of(codes: &[ErrorCode]) -> String {
    let names: Vec<String> = codes.iter().map(ToString::to_string).collect();
    names.join(" or ")
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expected::ConnectionError { codes } => {
                write!(f, "connection closed with {}", one_of(codes))
            }
            Expected::TransportError { codes } => {
                write!(f, "connection closed (QUIC) with {}", one_of(codes))
            }
            Expected::StreamError { codes, in_body } => {
                let codes = one_of(codes);
                match in_body {
                    false => write!(
                        f,
                        "request stream reset or connection closed with {codes}, or a 400 answer"
                    ),
                    true => write!(
                        f,
                        "request stream reset or connection closed with {codes} (an answer gives \
                         no verdict: a server need not read a body before it answers)"
                    ),
                }
            }
            Expected::Ignore => write!(f, "ignored: the next request answered"),
        }
    }
}

impl Observed {
    /// In a few words, for a table cell: `reset H3_FRAME_UNEXPECTED`,
    /// `closed QPACK_DECOMPRESSION_FAILED`, `answered 405`, `carried on`.
    pub fn short(&self) -> String {
        match self {
            Observed::ConnectionClosed {
                error,
                application: true,
                ..
            } => format!("closed {}", error.name),
            Observed::ConnectionClosed { error, .. } => format!("closed {} (QUIC)", error.name),
            Observed::StreamReset { error } => format!("reset {}", error.name),
            Observed::Answered { status } => format!("answered {status}"),
            Observed::CarriedOn => "carried on".to_string(),
            Observed::TimedOut => "timed out".to_string(),
            Observed::Crashed => "crashed".to_string(),
            Observed::NotRun { .. } => "not run".to_string(),
        }
    }
}

impl std::fmt::Display for Observed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Observed::ConnectionClosed {
                error,
                application,
                reason,
            } => {
                let layer = if *application { "HTTP/3" } else { "QUIC" };
                write!(f, "connection closed ({layer}) with {error}")?;
                if !reason.is_empty() {
                    write!(f, ": \"{reason}\"")?;
                }
                Ok(())
            }
            Observed::StreamReset { error } => write!(f, "request stream reset with {error}"),
            Observed::Answered { status } => write!(f, "answered the request with {status}"),
            Observed::CarriedOn => write!(f, "carried on: the next request answered"),
            Observed::TimedOut => write!(f, "no answer and no close: timed out"),
            Observed::Crashed => {
                write!(f, "crashed or stuck: a new connection got no answer either")
            }
            Observed::NotRun { detail } => write!(f, "not run: {detail}"),
        }
    }
}

impl std::fmt::Display for CaseResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let word = match self.verdict {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Unknown => "  ? ",
        };
        write!(
            f,
            "{word}  {:<42} {:<18} {}",
            self.id, self.rfc, self.observed
        )?;
        if self.verdict == Verdict::Fail {
            write!(f, "\n      {}; expected {}", self.title, self.expected)?;
        }
        Ok(())
    }
}

impl std::fmt::Display for ConformanceReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = |verdict| {
            self.cases
                .iter()
                .filter(|case| case.verdict == verdict)
                .count()
        };
        write!(
            f,
            "{} ({}): {} cases, {} passed, {} failed",
            self.target,
            self.address,
            self.cases.len(),
            count(Verdict::Pass),
            count(Verdict::Fail)
        )?;
        let unknown = count(Verdict::Unknown);
        if unknown > 0 {
            write!(f, ", {unknown} without a verdict")?;
        }
        for line in &self.not_covered {
            write!(f, "\n  not covered: {line}")?;
        }
        Ok(())
    }
}
