//! What the codecs' tests share: a random generator, request and response
//! heads as the tests write them.

use http::header::{HeaderName, HeaderValue};
use http::request::Parts;
use http::StatusCode;

use crate::head::Head;

/// A little pseudo-random generator, so tests need no crate for it.
pub(crate) struct Lcg(pub u64);

impl Lcg {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    pub(crate) fn bytes(&mut self, len: usize, alphabet: u64) -> Vec<u8> {
        (0..len).map(|_| (self.next() % alphabet) as u8).collect()
    }
}

/// A request head the way h3lab builds one.
pub(crate) fn parts(method: &str, uri: &str, headers: &[(&str, &str)]) -> Parts {
    let mut request = http::Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(()).unwrap().into_parts().0
}

/// A final head of this status and wanted fields.
pub(crate) fn head(status: u16, fields: &[(&str, &str)]) -> Option<Head> {
    Some(Head {
        status: StatusCode::from_u16(status).unwrap(),
        fields: fields
            .iter()
            .map(|(name, value)| {
                (
                    HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    HeaderValue::from_str(value).unwrap(),
                )
            })
            .collect(),
        content_length: None,
    })
}

/// A request with every kind of header a codec treats apart (static table
/// entries, names only, neither, a long value, the connection-specific
/// ones to leave out), and the field lines a server must decode from it.
pub(crate) fn busy_request() -> (Parts, Vec<(String, String)>) {
    let long = "v".repeat(20_000);
    let request = parts(
        "PUT",
        "http://u:p@example.com:8443/a/b?c=d",
        &[
            ("user-agent", "h3lab"),
            ("accept", "*/*"),
            ("content-type", "application/json"),
            ("x-frame-options", "sameorigin"),
            ("x-long", &long),
            ("te", "trailers"),
            ("keep-alive", "5"),
            ("te", "gzip"),
            ("transfer-encoding", "chunked"),
            ("upgrade", "h2c"),
            ("proxy-connection", "x"),
        ],
    );
    let expected = [
        (":method", "PUT"),
        (":scheme", "http"),
        (":authority", "example.com:8443"),
        (":path", "/a/b?c=d"),
        ("user-agent", "h3lab"),
        ("accept", "*/*"),
        ("content-type", "application/json"),
        ("x-frame-options", "sameorigin"),
        ("x-long", &long),
        ("te", "trailers"),
    ];
    let expected = expected
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    (request, expected)
}
