//! The error codes the cases expect, and the names of every code a server
//! may answer with (RFC 9000 §20.1, RFC 9114 §8.1, RFC 9204 §6).

use h3lab_results::conformance::ErrorCode;

/// RFC 9000 §20.1: QUIC transport error codes.
pub(crate) const FLOW_CONTROL_ERROR: u64 = 0x03;
pub(crate) const STREAM_LIMIT_ERROR: u64 = 0x04;
pub(crate) const STREAM_STATE_ERROR: u64 = 0x05;
pub(crate) const FRAME_ENCODING_ERROR: u64 = 0x07;
pub(crate) const TRANSPORT_PARAMETER_ERROR: u64 = 0x08;
pub(crate) const PROTOCOL_VIOLATION: u64 = 0x0a;
pub(crate) const H3_NO_ERROR: u64 = 0x100;
/// The application code of the RESET_STREAM and STOP_SENDING the transport
/// cases send.
pub(crate) const H3_REQUEST_CANCELLED: u64 = 0x10c;
/// RFC 9114 §8.1: for a violation "that does not match a more specific
/// error code", or when an endpoint "declines to use the more specific
/// error code": a conforming answer to any error case.
pub(crate) const H3_GENERAL_PROTOCOL_ERROR: u64 = 0x101;
pub(crate) const H3_ID_ERROR: u64 = 0x108;
pub(crate) const H3_STREAM_CREATION_ERROR: u64 = 0x103;
pub(crate) const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
pub(crate) const H3_FRAME_UNEXPECTED: u64 = 0x105;
pub(crate) const H3_FRAME_ERROR: u64 = 0x106;
pub(crate) const H3_SETTINGS_ERROR: u64 = 0x109;
pub(crate) const H3_MISSING_SETTINGS: u64 = 0x10a;
pub(crate) const H3_MESSAGE_ERROR: u64 = 0x10e;
pub(crate) const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;
pub(crate) const QPACK_ENCODER_STREAM_ERROR: u64 = 0x201;
pub(crate) const QPACK_DECODER_STREAM_ERROR: u64 = 0x202;

const APPLICATION: &[(u64, &str)] = &[
    (0x100, "H3_NO_ERROR"),
    (0x101, "H3_GENERAL_PROTOCOL_ERROR"),
    (0x102, "H3_INTERNAL_ERROR"),
    (0x103, "H3_STREAM_CREATION_ERROR"),
    (0x104, "H3_CLOSED_CRITICAL_STREAM"),
    (0x105, "H3_FRAME_UNEXPECTED"),
    (0x106, "H3_FRAME_ERROR"),
    (0x107, "H3_EXCESSIVE_LOAD"),
    (0x108, "H3_ID_ERROR"),
    (0x109, "H3_SETTINGS_ERROR"),
    (0x10a, "H3_MISSING_SETTINGS"),
    (0x10b, "H3_REQUEST_REJECTED"),
    (0x10c, "H3_REQUEST_CANCELLED"),
    (0x10d, "H3_REQUEST_INCOMPLETE"),
    (0x10e, "H3_MESSAGE_ERROR"),
    (0x10f, "H3_CONNECT_ERROR"),
    (0x110, "H3_VERSION_FALLBACK"),
    (0x200, "QPACK_DECOMPRESSION_FAILED"),
    (0x201, "QPACK_ENCODER_STREAM_ERROR"),
    (0x202, "QPACK_DECODER_STREAM_ERROR"),
];

const TRANSPORT: &[(u64, &str)] = &[
    (0x00, "NO_ERROR"),
    (0x01, "INTERNAL_ERROR"),
    (0x02, "CONNECTION_REFUSED"),
    (0x03, "FLOW_CONTROL_ERROR"),
    (0x04, "STREAM_LIMIT_ERROR"),
    (0x05, "STREAM_STATE_ERROR"),
    (0x06, "FINAL_SIZE_ERROR"),
    (0x07, "FRAME_ENCODING_ERROR"),
    (0x08, "TRANSPORT_PARAMETER_ERROR"),
    (0x09, "CONNECTION_ID_LIMIT_ERROR"),
    (0x0a, "PROTOCOL_VIOLATION"),
    (0x0b, "INVALID_TOKEN"),
    (0x0c, "APPLICATION_ERROR"),
    (0x0d, "CRYPTO_BUFFER_EXCEEDED"),
    (0x0e, "KEY_UPDATE_ERROR"),
    (0x0f, "AEAD_LIMIT_REACHED"),
    (0x10, "NO_VIEWPATH"),
];

/// A code with its registered name: an HTTP/3 or QPACK one when the
/// close was the application's, a QUIC one when it was the transport's.
/// Reserved codes (0x1f * N + 0x21, RFC 9114 §8.1) are `H3_GREASE`.
pub(crate) fn named(code: u64, application: bool) -> ErrorCode {
    let table = if application { APPLICATION } else { TRANSPORT };
    let name = match table.iter().find(|(known, _)| *known == code) {
        Some((_, name)) => (*name).to_string(),
        None if application && code >= 0x21 && (code - 0x21) % 0x1f == 0 => "H3_GREASE".into(),
        None if !application && (0x0100..=0x01ff).contains(&code) => {
            format!("CRYPTO_ERROR (TLS alert {})", code - 0x100)
        }
        None => "unknown".into(),
    };
    ErrorCode { code, name }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_named_by_the_layer_that_closed() {
        assert_eq!(named(0x105, true).name, "H3_FRAME_UNEXPECTED");
        assert_eq!(named(0x0a, false).name, "PROTOCOL_VIOLATION");
        assert_eq!(named(0x128, false).name, "CRYPTO_ERROR (TLS alert 40)");
        assert_eq!(named(0x1f * 3 + 0x21, true).name, "H3_GREASE");
        assert_eq!(named(0x105, false).name, "CRYPTO_ERROR (TLS alert 5)");
        assert_eq!(named(0x7777, true).name, "unknown");
    }

    #[test]
    fn the_expected_codes_have_the_names_the_rfcs_give_them() {
        for (code, name) in [
            (H3_NO_ERROR, "H3_NO_ERROR"),
            (H3_ID_ERROR, "H3_ID_ERROR"),
            (H3_STREAM_CREATION_ERROR, "H3_STREAM_CREATION_ERROR"),
            (H3_CLOSED_CRITICAL_STREAM, "H3_CLOSED_CRITICAL_STREAM"),
            (H3_FRAME_UNEXPECTED, "H3_FRAME_UNEXPECTED"),
            (H3_FRAME_ERROR, "H3_FRAME_ERROR"),
            (H3_SETTINGS_ERROR, "H3_SETTINGS_ERROR"),
            (H3_MISSING_SETTINGS, "H3_MISSING_SETTINGS"),
            (H3_MESSAGE_ERROR, "H3_MESSAGE_ERROR"),
            (QPACK_DECOMPRESSION_FAILED, "QPACK_DECOMPRESSION_FAILED"),
            (QPACK_ENCODER_STREAM_ERROR, "QPACK_ENCODER_STREAM_ERROR"),
            (QPACK_DECODER_STREAM_ERROR, "QPACK_DECODER_STREAM_ERROR"),
        ] {
            assert_eq!(named(code, true).name, name);
        }
        assert_eq!(
            named(TRANSPORT_PARAMETER_ERROR, false).name,
            "TRANSPORT_PARAMETER_ERROR"
        );
    }
}
