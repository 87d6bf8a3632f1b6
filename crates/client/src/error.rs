//! Errors sorted into the kinds a load report counts.

use std::fmt;

use h3lab_results::ErrorKind;

/// A classified failure with a one-line message for people.
#[derive(Debug, Clone)]
pub struct ClientError {
    kind: ErrorKind,
    message: String,
    unsent: bool,
}

impl ClientError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ClientError {
        ClientError {
            kind,
            message: message.into(),
            unsent: false,
        }
    }

    /// The connection was already closed (idle close, GOAWAY) before the
    /// request left: retrying on a new connection is safe.
    pub(crate) fn closed_before_send(message: impl Into<String>) -> ClientError {
        ClientError {
            kind: ErrorKind::Reset,
            message: message.into(),
            unsent: true,
        }
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// True when the request never reached the peer because the connection
    /// had been closed gracefully first.
    pub fn is_unsent(&self) -> bool {
        self.unsent
    }

    pub(crate) fn from_hyper(err: hyper::Error) -> ClientError {
        let kind = if err.is_parse() || err.is_parse_status() || err.is_user() {
            ErrorKind::Protocol
        } else if err.is_timeout() {
            ErrorKind::Timeout
        } else {
            ErrorKind::Reset
        };
        ClientError::new(kind, error_chain(&err))
    }

    pub(crate) fn from_h2(err: h2::Error) -> ClientError {
        let kind = if err.is_io() || err.is_remote() {
            ErrorKind::Reset
        } else {
            // h2 found the peer breaking the protocol, or refused a request
            // it could not encode.
            ErrorKind::Protocol
        };
        ClientError::new(kind, format!("HTTP/2: {}", error_chain(&err)))
    }

    pub(crate) fn from_h3_stream(err: h3::error::StreamError) -> ClientError {
        use h3::error::{ConnectionError, StreamError};
        let kind = match &err {
            StreamError::HeaderTooBig { .. } | StreamError::StreamError { .. } => {
                ErrorKind::Protocol
            }
            StreamError::ConnectionError {
                0: ConnectionError::Timeout { .. },
                ..
            } => ErrorKind::Timeout,
            _ => ErrorKind::Reset,
        };
        if matches!(err, StreamError::RemoteClosing { .. }) {
            return ClientError::closed_before_send(format!("HTTP/3 GOAWAY: {err}"));
        }
        ClientError::new(kind, format!("HTTP/3: {err}"))
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ClientError {}

/// `outer: inner: innermost`, as `anyhow`'s `{:#}` prints it.
pub(crate) fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        let inner_text = inner.to_string();
        if !text.ends_with(&inner_text) {
            text.push_str(": ");
            text.push_str(&inner_text);
        }
        source = inner.source();
    }
    text
}
