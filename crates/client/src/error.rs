//! Errors sorted into the kinds a load report counts, with the fix named
//! where there is one.

use std::fmt;
use std::net::SocketAddr;

use h3lab_results::ErrorKind;

/// A classified failure with a one-line message for people.
#[derive(Debug, Clone)]
pub struct ClientError {
    kind: ErrorKind,
    message: String,
    unsent: bool,
}

impl ClientError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> ClientError {
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

    /// The kind a load report counts this failure under.
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

/// An HTTP/3 or QPACK error code as its RFC names it (`H3_INTERNAL_ERROR
/// (0x102)`), or in hex when it has no name (a reserved code, GREASE).
pub fn h3_code_name(code: u64) -> String {
    let named = h3::error::Code::from(code).to_string();
    if named.starts_with("0x") {
        named
    } else {
        format!("{named} ({code:#x})")
    }
}

/// QUIC carries TLS alerts as transport error codes 0x100-0x1ff.
fn is_crypto_code(code: quinn::TransportErrorCode) -> bool {
    (0x100..0x200).contains(&u64::from(code))
}

/// A QUIC handshake's failure, sorted: a TLS alert, a protocol error, or
/// no connection at all.
pub fn quic_connect_error(err: quinn::ConnectionError, addr: SocketAddr) -> ClientError {
    use quinn::ConnectionError as E;
    match &err {
        E::TransportError(transport) if is_crypto_code(transport.code) => {
            tls_failure(addr, &err.to_string())
        }
        E::ConnectionClosed(close) if is_crypto_code(close.error_code) => {
            tls_failure(addr, &err.to_string())
        }
        E::VersionMismatch | E::TransportError(_) => ClientError::new(
            ErrorKind::Protocol,
            format!("QUIC handshake with {addr}: {err}"),
        ),
        _ => ClientError::new(
            ErrorKind::Connect,
            format!("QUIC handshake with {addr}: {err}"),
        ),
    }
}

/// Certificate problems get their cause and the fix; other TLS failures
/// keep their detail.
pub fn tls_failure(addr: SocketAddr, detail: &str) -> ClientError {
    // rustls' wording (its `Display`) and, on QUIC, its `Debug` names.
    let lower = detail.to_ascii_lowercase();
    let hint = if lower.contains("not valid for name") || lower.contains("notvalidforname") {
        "; the certificate is not valid for the host name asked for (a name mismatch): \
         ask for a name it was issued for (--resolve HOST:PORT:ADDR keeps the name while \
         connecting elsewhere) or use --insecure"
    } else if lower.contains("expired") {
        "; the certificate has expired (or this machine's clock is wrong): renew it or use \
         --insecure"
    } else if lower.contains("unknownissuer") || lower.contains("unknown issuer") {
        "; its chain leads to no trusted root (the system's store, or SSL_CERT_FILE when \
         set): add the issuing CA with --ca FILE or use --insecure"
    } else if lower.contains("badsignature") || lower.contains("bad signature") {
        "; its chain does not verify: a trusted root has the issuer's name but did not sign \
         it (a replaced CA?): trust the CA that issued it with --ca FILE or use --insecure"
    } else if detail.contains("CaUsedAsEndEntity") {
        "; the server's certificate says it is a CA (basicConstraints CA:TRUE), which \
         TLS refuses as a server certificate even with --ca: give the server a leaf \
         certificate (e.g. openssl req -x509 ... -addext basicConstraints=critical,CA:FALSE) \
         or use --insecure"
    } else if lower.contains("certificate") {
        "; use --insecure or --ca FILE to trust the server's certificate"
    } else if lower.contains("application") {
        "; the server does not offer this protocol in ALPN, try another --proto"
    } else {
        ""
    };
    ClientError::new(
        ErrorKind::Tls,
        format!("TLS handshake with {addr} failed: {detail}{hint}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h3_codes_are_named_as_the_rfcs_name_them() {
        assert_eq!(h3_code_name(0x102), "H3_INTERNAL_ERROR (0x102)");
        assert_eq!(h3_code_name(0x200), "QPACK_DECOMPRESSION_FAILED (0x200)");
        assert_eq!(h3_code_name(0x1f * 3 + 0x21), "0x7e");
    }

    #[test]
    fn tls_failures_name_the_fix() {
        let addr: SocketAddr = "127.0.0.1:443".parse().unwrap();
        let ca = tls_failure(
            addr,
            "invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))",
        );
        assert!(ca.to_string().contains("CA:FALSE"), "{ca}");
        let unknown = tls_failure(addr, "invalid peer certificate: UnknownIssuer");
        assert!(
            unknown.to_string().contains("no trusted root")
                && unknown.to_string().contains("--ca FILE"),
            "{unknown}"
        );
        assert_eq!(unknown.kind(), ErrorKind::Tls);
        let name = tls_failure(
            addr,
            "invalid peer certificate: certificate not valid for name \"127.0.0.1\"; \
             certificate is only valid for DnsName(\"www.example.test\")",
        );
        assert!(name.to_string().contains("name mismatch"), "{name}");
        let expired = tls_failure(
            addr,
            "invalid peer certificate: certificate expired: verification time 1800000000 (UNIX), \
             but certificate is not valid after 1700000000 (100000000 seconds ago)",
        );
        assert!(expired.to_string().contains("has expired"), "{expired}");
    }
}
