//! The field lines of a request head, in the order and form HTTP/2
//! (RFC 9113 §8.3.1) and HTTP/3 (RFC 9114 §4.3.1) send them, for either
//! codec to encode.

use std::borrow::Cow;

use http::header::{HeaderName, HeaderValue, HOST};
use http::request::Parts;
use http::uri::{Authority, PathAndQuery, Uri};

/// Hands each field line of `parts` to `field`: `:method`, `:scheme`
/// (`https` when the URI has none), `:authority` (the URI's, else the Host
/// header's), `:path`, then the headers the protocols allow (see
/// [`is_dropped`]). Not for CONNECT, whose pseudo-headers differ
/// (RFC 9113 §8.5, RFC 9114 §4.4): a load generator does not tunnel.
pub(crate) fn request_fields(parts: &Parts, mut field: impl FnMut(&str, &[u8])) {
    let uri = &parts.uri;
    field(":method", parts.method.as_str().as_bytes());
    field(":scheme", uri.scheme_str().unwrap_or("https").as_bytes());
    if let Some(authority) = authority(parts) {
        field(":authority", authority.as_bytes());
    }
    field(":path", request_path(uri).as_bytes());
    for (name, value) in &parts.headers {
        if !is_dropped(name, value) {
            field(name.as_str(), value.as_bytes());
        }
    }
}

/// `:authority`: the URI's without userinfo, which it must not carry
/// (RFC 9113 §8.3.1, RFC 9114 §4.3.1), else the Host header's.
fn authority(parts: &Parts) -> Option<&str> {
    match parts.uri.authority().map(Authority::as_str) {
        Some(authority) => Some(
            authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host),
        ),
        None => parts
            .headers
            .get(HOST)
            .map(HeaderValue::to_str)
            .and_then(Result::ok),
    }
}

/// `:path`: the URI's path and query, with the `/` that an empty path
/// stands for (`https://a.test?q` has path-and-query `?q`).
fn request_path(uri: &Uri) -> Cow<'_, str> {
    match uri.path_and_query().map(PathAndQuery::as_str) {
        Some(path) if path.starts_with('/') || path == "*" => Cow::Borrowed(path),
        Some(path) => Cow::Owned(format!("/{path}")),
        None => Cow::Borrowed("/"),
    }
}

/// Whether a request header stays out of an HTTP/2 or HTTP/3 request: the
/// connection-specific ones (RFC 9113 §8.2.2, RFC 9114 §4.2), `te` unless
/// it is `trailers`, and `host`, whose value `:authority` carries.
fn is_dropped(name: &HeaderName, value: &HeaderValue) -> bool {
    match name.as_str() {
        "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "upgrade"
        | "host" => true,
        "te" => value != "trailers",
        _ => false,
    }
}
