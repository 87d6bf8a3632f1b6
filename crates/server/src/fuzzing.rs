//! One request answered exactly as the server's routing and responders
//! answer it, without a connection: the entry point of `h3lab-fuzz`'s
//! routing target (feature `fuzzing`).
//!
//! Not for serving: admission, the header-size limit and the HTTP framing
//! of hyper, h2 and h3 are not involved; the request arrives already parsed.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use http_body_util::BodyExt;

use crate::metrics::Metrics;
use crate::respond::{declared_length, EchoBody, Handler};
use crate::Limits;
use h3lab_results::Proto;

/// The `Alt-Svc` value TCP responses carry here, as a server on port 443
/// would send it.
pub const ALT_SVC: &str = "h3=\":443\"; ma=86400";

/// What the server answered: status, headers and the whole body.
#[derive(Debug)]
pub struct Answer {
    /// The response status.
    pub status: StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    /// The response body, read to its end.
    pub body: Bytes,
}

/// The server's request handling over a static root and a site directory.
#[derive(Debug)]
pub struct Responder {
    handler: Handler,
}

impl Responder {
    /// Serves `root` under `/static/` and `site` at `/` (each optional, each
    /// an existing directory) with `limits`.
    pub fn new(
        root: Option<&Path>,
        site: Option<&Path>,
        limits: Limits,
    ) -> std::io::Result<Responder> {
        let canonical = |dir: Option<&Path>| dir.map(std::fs::canonicalize).transpose();
        Ok(Responder {
            handler: Handler {
                root: canonical(root)?,
                site: canonical(site)?,
                replay: None,
                limits,
                alt_svc: Some(HeaderValue::from_static(ALT_SVC)),
                stats: Arc::default(),
                metrics: Arc::new(Metrics::new(Arc::default(), Default::default())),
                hooks: Default::default(),
            },
        })
    }

    /// Answers one request whose whole body is `body`. An `/echo` body is
    /// refused over the limit as the protocol shells refuse it: by its
    /// declared `content-length` first, then by its actual size.
    pub async fn answer(
        &self,
        protocol: Proto,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: Bytes,
    ) -> std::io::Result<Answer> {
        let declared = declared_length(headers);
        let read_body = |limit: u64| async move {
            let too_large = declared.is_some_and(|len| len > limit) || body.len() as u64 > limit;
            match too_large {
                true => EchoBody::TooLarge,
                false => EchoBody::Complete(body),
            }
        };
        let response = self
            .handler
            .handle(protocol, method, uri, headers, read_body)
            .await;
        let (parts, body) = response.into_parts();
        Ok(Answer {
            status: parts.status,
            headers: parts.headers,
            body: body.collect().await?.to_bytes(),
        })
    }
}
