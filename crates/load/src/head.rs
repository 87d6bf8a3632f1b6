//! The final response head as every engine's parser returns it (`quic`'s
//! HTTP/3 codec, `tcp`'s HTTP/1.1 one): the status and only the fields the
//! run reads, so that the rest of a head is neither decoded nor kept.

use http::header::{HeaderName, HeaderValue};
use http::StatusCode;

/// A final response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    pub status: StatusCode,
    /// The wanted fields, in the order the response has them.
    pub fields: Vec<(HeaderName, HeaderValue)>,
    /// Its content-length, which h2's and h3's parsers read (their DATA
    /// must add up to it); h1's uses it for framing and leaves it `None`.
    pub content_length: Option<u64>,
}
