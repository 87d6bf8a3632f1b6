//! A request built once per run and turned into per-protocol requests
//! cheaply (shared `Bytes`, reference-counted URI parts).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue, HOST};
use http::{Method, Request, Uri};
use http_body_util::Full;

use crate::browser_headers;
use crate::target::Target;

/// Method, URL, headers and body of the request a run repeats.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    method: Method,
    absolute_uri: Uri,
    origin_uri: Uri,
    host: HeaderValue,
    headers: HeaderMap,
    body: Bytes,
    /// With a browser's headers: what numbers each request's varying ones.
    numbers: Option<RequestNumbers>,
}

/// Numbers the requests of a run (or a page load) for their varying
/// browser headers; clones share the count, so that requests built from
/// several templates still differ.
#[derive(Debug, Clone, Default)]
pub struct RequestNumbers(Arc<AtomicU64>);

impl RequestNumbers {
    fn next(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

impl RequestTemplate {
    /// The request for `target` with this method, these extra headers and
    /// this body.
    pub fn new(
        target: &Target,
        method: Method,
        headers: HeaderMap,
        body: Bytes,
    ) -> RequestTemplate {
        let origin_uri = Uri::from(target.path_and_query().clone());
        let host = HeaderValue::from_str(target.authority().as_str())
            .expect("a validated authority is a valid header value");
        RequestTemplate {
            method,
            absolute_uri: target.absolute_uri(),
            origin_uri,
            host,
            headers,
            body,
            numbers: None,
        }
    }

    /// The same request with a browser's headers (see `browser_headers`):
    /// a recorded Chromium set with a 1 kB cookie, and a trace id and a
    /// request id that change per request, numbered by `numbers`. This
    /// template's own headers replace the browser's of the same name.
    pub fn with_browser_headers(mut self, numbers: &RequestNumbers) -> RequestTemplate {
        let uri = &self.absolute_uri;
        let scheme = uri.scheme_str().unwrap_or("https");
        let authority = uri.authority().map_or("", |authority| authority.as_str());
        self.headers = browser_headers::fixed(&format!("{scheme}://{authority}"), &self.headers);
        self.numbers = Some(numbers.clone());
        self
    }

    /// The headers of the next request built from this template (with a
    /// browser's, each call numbers one request).
    pub fn next_headers(&self) -> HeaderMap {
        let mut headers = self.headers.clone();
        if let Some(numbers) = &self.numbers {
            browser_headers::varying(numbers.next(), &mut headers);
        }
        headers
    }

    /// Whether each request from this template differs (a browser's
    /// numbered headers), so that its head cannot be encoded once for all.
    pub fn varies(&self) -> bool {
        self.numbers.is_some()
    }

    /// The request's method.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// The request's body, sent after its head.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// HTTP/1.1 form: origin-form target plus a Host header.
    pub(crate) fn h1(&self) -> Request<Full<Bytes>> {
        self.h1_head().map(|()| Full::new(self.body.clone()))
    }

    /// The HTTP/1.1 form's head, for clients that write the request line
    /// and header fields themselves and send [`body`](Self::body) after
    /// them: origin-form target (RFC 9112 §3.2.1), and the target's
    /// authority as Host unless this template's headers have one (each
    /// call numbers a request, as [`next_headers`](Self::next_headers)).
    pub fn h1_head(&self) -> Request<()> {
        let mut request = Request::new(());
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.origin_uri.clone();
        *request.headers_mut() = self.next_headers();
        if !self.headers.contains_key(HOST) {
            request.headers_mut().insert(HOST, self.host.clone());
        }
        request
    }

    /// HTTP/2 and HTTP/3 form: headers only, the absolute URI supplies
    /// :scheme and :authority; the body is sent as DATA afterwards.
    pub fn multiplexed(&self) -> Request<()> {
        let mut request = Request::new(());
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.absolute_uri.clone();
        *request.headers_mut() = self.next_headers();
        request
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(headers: HeaderMap) -> RequestTemplate {
        let target = Target::parse("https://example.test:4433/echo?x=1").unwrap();
        RequestTemplate::new(&target, Method::POST, headers, Bytes::from_static(b"hi"))
    }

    #[test]
    fn h1_uses_origin_form_and_host() {
        let request = template(HeaderMap::new()).h1();
        assert_eq!(request.uri().to_string(), "/echo?x=1");
        assert_eq!(request.headers()[HOST], "example.test:4433");
        assert_eq!(request.method(), Method::POST);
    }

    #[test]
    fn user_host_header_wins_on_h1() {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_static("other.test"));
        let request = template(headers).h1();
        assert_eq!(request.headers().get_all(HOST).iter().count(), 1);
        assert_eq!(request.headers()[HOST], "other.test");
    }

    #[test]
    fn h1_head_is_h1_without_the_body() {
        let template = template(HeaderMap::new());
        let (head, ()) = template.h1_head().into_parts();
        let (full, _) = template.h1().into_parts();
        assert_eq!(head.method, full.method);
        assert_eq!(head.uri, full.uri);
        assert_eq!(head.headers, full.headers);
        assert_eq!(head.uri.to_string(), "/echo?x=1");
        assert_eq!(head.headers[HOST], "example.test:4433");
    }

    #[test]
    fn browser_headers_go_on_every_form_and_vary_per_request() {
        let numbers = RequestNumbers::default();
        let browser = template(HeaderMap::new()).with_browser_headers(&numbers);
        let first = browser.h1();
        let second = browser.multiplexed();
        assert_eq!(first.headers()["referer"], "https://example.test:4433/");
        assert_eq!(first.headers()["cookie"], second.headers()["cookie"]);
        assert_ne!(
            first.headers()["x-request-id"],
            second.headers()["x-request-id"]
        );
        assert!(!browser.clone().multiplexed().headers().contains_key(HOST));
        // Another template on the same numbers goes on counting.
        let other = template(HeaderMap::new()).with_browser_headers(&numbers);
        let third = other.h1().headers()["x-request-id"].clone();
        assert_ne!(third, first.headers()["x-request-id"]);
        assert_ne!(third, second.headers()["x-request-id"]);
    }

    #[test]
    fn multiplexed_form_carries_the_absolute_uri() {
        let template = template(HeaderMap::new());
        assert_eq!(
            template.multiplexed().uri().to_string(),
            "https://example.test:4433/echo?x=1"
        );
        assert_eq!(
            template.multiplexed().uri().authority().unwrap().as_str(),
            "example.test:4433"
        );
        assert!(!template.multiplexed().headers().contains_key(HOST));
    }
}
