//! What a server did, read from what the client saw (`Transcript`), and
//! whether that is what the RFC requires. Pure: the runner fills a
//! transcript from h3i's connection summary.

use h3lab_results::conformance::{ErrorCode, Expected, Observed, Verdict};

use crate::codes::{named, H3_GENERAL_PROTOCOL_ERROR};

/// What one stream got from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamAnswer {
    /// A response's HEADERS with this `:status`.
    Status(u16),
    /// A RESET_STREAM with this code.
    Reset(u64),
}

/// What the client saw of one case's connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Transcript {
    /// The server's CONNECTION_CLOSE: application or transport, code,
    /// reason.
    pub(crate) closed_by_server: Option<(bool, u64, Vec<u8>)>,
    /// The case's own request stream, if it carried one and got anything.
    pub(crate) case_stream: Option<StreamAnswer>,
    /// The plain request sent after the case, to tell "ignored" from
    /// "stuck".
    pub(crate) follow_up: Option<StreamAnswer>,
    /// The status the server gives the URL's plain GET: the case stream
    /// answered with it was served as if nothing were wrong.
    pub(crate) plain_status: Option<u16>,
}

/// What the server did, as the report says it. A close outranks a reset,
/// which outranks an answer: each is the server's last word on the case. A
/// case request answered as the plain GET is (the same status) was served
/// as if nothing were wrong.
pub(crate) fn observe(transcript: &Transcript) -> Observed {
    if let Some((application, code, reason)) = &transcript.closed_by_server {
        return Observed::ConnectionClosed {
            error: named(*code, *application),
            application: *application,
            reason: String::from_utf8_lossy(reason).into_owned(),
        };
    }
    match (transcript.case_stream, transcript.follow_up) {
        (Some(StreamAnswer::Reset(code)), _) => Observed::StreamReset {
            error: named(code, true),
        },
        (Some(StreamAnswer::Status(status)), _) if Some(status) != transcript.plain_status => {
            Observed::Answered { status }
        }
        (Some(StreamAnswer::Status(_)), _) | (None, Some(StreamAnswer::Status(_))) => {
            Observed::CarriedOn
        }
        (None, Some(StreamAnswer::Reset(code))) => Observed::StreamReset {
            error: named(code, true),
        },
        (None, None) => Observed::TimedOut,
    }
}

/// Whether `observed` is what `expected` asks for. An error case may be
/// answered with its own code or the generic H3_GENERAL_PROTOCOL_ERROR
/// (RFC 9114 §8.1). A malformed request answered with 400 was refused; with
/// another 4xx or 5xx (a 405 for the method, a 404 for the path, a 501) it
/// may have been refused or simply served, so there is no verdict; nor when
/// the defect is in a body the server need not read before it answers.
pub(crate) fn judge(expected: &Expected, observed: &Observed) -> Verdict {
    let allowed = |codes: &[ErrorCode], error: &ErrorCode| {
        error.code == H3_GENERAL_PROTOCOL_ERROR || codes.contains(error)
    };
    let conforms = match (expected, observed) {
        (_, Observed::NotRun { .. }) => return Verdict::Unknown,
        (
            Expected::ConnectionError { codes } | Expected::StreamError { codes, .. },
            Observed::ConnectionClosed {
                error,
                application: true,
                ..
            },
        ) => allowed(codes, error),
        (Expected::StreamError { codes, .. }, Observed::StreamReset { error }) => {
            allowed(codes, error)
        }
        (
            Expected::TransportError { codes },
            Observed::ConnectionClosed {
                error,
                application: false,
                ..
            },
        ) => codes.contains(error),
        (
            Expected::StreamError { in_body: true, .. },
            Observed::Answered { .. } | Observed::CarriedOn,
        ) => return Verdict::Unknown,
        (Expected::StreamError { .. }, Observed::Answered { status: 400 }) => true,
        (Expected::StreamError { .. }, Observed::Answered { status }) if *status > 400 => {
            return Verdict::Unknown
        }
        (Expected::Ignore, Observed::CarriedOn) => true,
        _ => false,
    };
    if conforms {
        Verdict::Pass
    } else {
        Verdict::Fail
    }
}

#[cfg(test)]
mod tests {
    use h3lab_results::conformance::ErrorCode;

    use super::*;
    use crate::codes::{
        H3_FRAME_UNEXPECTED, H3_MESSAGE_ERROR, H3_NO_ERROR, TRANSPORT_PARAMETER_ERROR,
    };

    /// RFC 9000 §20.1.
    const PROTOCOL_VIOLATION: u64 = 0x0a;

    fn codes(codes: &[u64]) -> Vec<ErrorCode> {
        codes.iter().map(|&code| named(code, true)).collect()
    }

    fn closed(application: bool, code: u64) -> Transcript {
        Transcript {
            closed_by_server: Some((application, code, b"why".to_vec())),
            follow_up: Some(StreamAnswer::Status(200)),
            ..Transcript::default()
        }
    }

    #[test]
    fn a_connection_error_needs_an_application_close_with_an_allowed_code() {
        let expected = Expected::ConnectionError {
            codes: codes(&[H3_FRAME_UNEXPECTED]),
        };
        let verdict = |transcript: &Transcript| judge(&expected, &observe(transcript));
        assert_eq!(verdict(&closed(true, H3_FRAME_UNEXPECTED)), Verdict::Pass);
        assert_eq!(verdict(&closed(true, H3_MESSAGE_ERROR)), Verdict::Fail);
        // The same number as a QUIC transport code is a TLS alert.
        assert_eq!(verdict(&closed(false, H3_FRAME_UNEXPECTED)), Verdict::Fail);
        // RFC 9114 §8.1: an endpoint may decline the more specific code.
        assert_eq!(
            verdict(&closed(true, H3_GENERAL_PROTOCOL_ERROR)),
            Verdict::Pass
        );
        assert_eq!(verdict(&closed(true, H3_NO_ERROR)), Verdict::Fail);
        let carried_on = Transcript {
            follow_up: Some(StreamAnswer::Status(200)),
            ..Transcript::default()
        };
        assert_eq!(observe(&carried_on), Observed::CarriedOn);
        assert_eq!(verdict(&carried_on), Verdict::Fail);
        assert_eq!(verdict(&Transcript::default()), Verdict::Fail);
    }

    fn malformed(in_body: bool, case_stream: StreamAnswer) -> Verdict {
        let expected = Expected::StreamError {
            codes: codes(&[H3_MESSAGE_ERROR]),
            in_body,
        };
        let transcript = Transcript {
            case_stream: Some(case_stream),
            follow_up: Some(StreamAnswer::Status(200)),
            plain_status: Some(200),
            ..Transcript::default()
        };
        judge(&expected, &observe(&transcript))
    }

    #[test]
    fn a_malformed_request_may_be_reset_closed_or_answered_with_400() {
        let verdict = |answer| malformed(false, answer);
        assert_eq!(
            verdict(StreamAnswer::Reset(H3_MESSAGE_ERROR)),
            Verdict::Pass
        );
        assert_eq!(
            verdict(StreamAnswer::Reset(H3_GENERAL_PROTOCOL_ERROR)),
            Verdict::Pass
        );
        assert_eq!(verdict(StreamAnswer::Status(400)), Verdict::Pass);
        assert_eq!(
            verdict(StreamAnswer::Reset(H3_FRAME_UNEXPECTED)),
            Verdict::Fail
        );
        // Served: the URL's own status, or another success.
        assert_eq!(verdict(StreamAnswer::Status(200)), Verdict::Fail);
        assert_eq!(verdict(StreamAnswer::Status(204)), Verdict::Fail);
        // What the method or path gets anyway, or a 501, may or may not be
        // a refusal: no verdict.
        for status in [404, 405, 500, 501] {
            assert_eq!(verdict(StreamAnswer::Status(status)), Verdict::Unknown);
        }
        let expected = Expected::StreamError {
            codes: codes(&[H3_MESSAGE_ERROR]),
            in_body: false,
        };
        assert_eq!(
            judge(&expected, &observe(&closed(true, H3_MESSAGE_ERROR))),
            Verdict::Pass
        );
    }

    /// A server may answer before it reads a body (RFC 9114 §4.1), so an
    /// answer to a request whose defect is in its body says nothing.
    #[test]
    fn a_defect_in_the_body_is_judged_by_resets_and_closes_only() {
        let verdict = |answer| malformed(true, answer);
        assert_eq!(
            verdict(StreamAnswer::Reset(H3_MESSAGE_ERROR)),
            Verdict::Pass
        );
        assert_eq!(
            verdict(StreamAnswer::Reset(H3_FRAME_UNEXPECTED)),
            Verdict::Fail
        );
        assert_eq!(verdict(StreamAnswer::Status(200)), Verdict::Unknown);
        assert_eq!(verdict(StreamAnswer::Status(405)), Verdict::Unknown);
    }

    #[test]
    fn ignoring_means_no_close_and_the_next_request_answered() {
        let verdict = |transcript: &Transcript| judge(&Expected::Ignore, &observe(transcript));
        let answered = Transcript {
            case_stream: Some(StreamAnswer::Status(200)),
            follow_up: Some(StreamAnswer::Status(200)),
            plain_status: Some(200),
            ..Transcript::default()
        };
        assert_eq!(verdict(&answered), Verdict::Pass);
        assert_eq!(verdict(&closed(true, H3_FRAME_UNEXPECTED)), Verdict::Fail);
        let reset = Transcript {
            case_stream: Some(StreamAnswer::Reset(H3_FRAME_UNEXPECTED)),
            ..answered.clone()
        };
        assert_eq!(verdict(&reset), Verdict::Fail);
        let silent = Transcript::default();
        assert_eq!(observe(&silent), Observed::TimedOut);
        assert_eq!(verdict(&silent), Verdict::Fail);
    }

    /// A transport parameter case needs a QUIC close with its code: an
    /// HTTP/3 close with the same number, or a finished handshake, fails.
    #[test]
    fn a_transport_error_needs_a_quic_close_with_an_allowed_code() {
        let expected = Expected::TransportError {
            codes: vec![named(TRANSPORT_PARAMETER_ERROR, false)],
        };
        let verdict = |transcript: &Transcript| judge(&expected, &observe(transcript));
        assert_eq!(
            verdict(&closed(false, TRANSPORT_PARAMETER_ERROR)),
            Verdict::Pass
        );
        assert_eq!(verdict(&closed(false, PROTOCOL_VIOLATION)), Verdict::Fail);
        assert_eq!(
            verdict(&closed(true, TRANSPORT_PARAMETER_ERROR)),
            Verdict::Fail
        );
        // RFC 9114 §8.1's leave to decline the specific code is HTTP/3's.
        assert_eq!(
            verdict(&closed(true, H3_GENERAL_PROTOCOL_ERROR)),
            Verdict::Fail
        );
        let handshake_done = Transcript {
            follow_up: Some(StreamAnswer::Status(200)),
            ..Transcript::default()
        };
        assert_eq!(verdict(&handshake_done), Verdict::Fail);
        assert_eq!(verdict(&Transcript::default()), Verdict::Fail);
    }

    #[test]
    fn a_case_that_did_not_run_has_no_verdict() {
        let not_run = Observed::NotRun {
            detail: "handshake failed".into(),
        };
        assert_eq!(judge(&Expected::Ignore, &not_run), Verdict::Unknown);
    }
}
