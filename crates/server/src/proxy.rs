//! The server as an edge: a reverse proxy that answers the client over h1,
//! h2 or h3 and forwards to an origin over h1 or h2 on a pooled upstream,
//! as a CDN, load balancer or nginx in front of an application does.
//!
//! It is an [`App`]: the protocol shells keep TLS, QUIC, limits and
//! metrics, and the proxy sees each forwarded request's head and body.
//! With [`Forward::Documents`] it forwards only documents and the built-in
//! handler serves the site's other files itself, as a CDN with the site
//! cached would.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::Bytes;
use futures::StreamExt;
use http::header::{HeaderName, HeaderValue, CONNECTION, HOST, TRANSFER_ENCODING, UPGRADE};
use http::uri::{Authority, Scheme};
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri};
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Empty, StreamBody};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::app::{App, AppRequest, AppResponse, BodyStream};
use crate::config::{Forward, TcpTuning, Upstream, UpstreamProtocol, UPSTREAM_POOL_IDLE};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type UpstreamBody = UnsyncBoxBody<Bytes, BoxError>;

/// The reverse proxy, an [`App`] over a pooled upstream client.
pub struct Proxy {
    client: Client<HttpsConnector<HttpConnector>, UpstreamBody>,
    scheme: Scheme,
    authority: Authority,
    forward: Forward,
    timeout: Duration,
}

impl Proxy {
    /// A proxy to `upstream`, its h2 windows those the server's own h2
    /// uses (`tuning`), so both legs are tuned alike.
    pub fn new(upstream: &Upstream, tuning: &TcpTuning) -> anyhow::Result<Proxy> {
        let (scheme, authority) = match (upstream.origin.scheme(), upstream.origin.authority()) {
            (Some(scheme), Some(authority)) if upstream.origin.path() == "/" => {
                (scheme.clone(), authority.clone())
            }
            _ => bail!(
                "--upstream {} is not an origin: give https://ADDR:PORT or http://ADDR:PORT, with no path",
                upstream.origin
            ),
        };
        let tls = match (scheme.as_str(), &upstream.ca) {
            ("https", Some(ca)) => tls_config(ca)?,
            ("https", None) => bail!(
                "--upstream {} is https: give --upstream-ca PEM, the origin's certificate or its CA",
                upstream.origin
            ),
            ("http", _) => tls_config_without_roots(),
            (other, _) => bail!("--upstream's scheme {other} is neither https nor http"),
        };
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        // As nginx's tcp_nodelay (on) for keep-alive upstream connections.
        http.set_nodelay(true);
        let builder = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http();
        let connector = match upstream.protocol {
            UpstreamProtocol::H1 => builder.enable_http1().wrap_connector(http),
            UpstreamProtocol::H2 => builder.enable_http2().wrap_connector(http),
        };
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(UPSTREAM_POOL_IDLE)
            .http2_only(upstream.protocol == UpstreamProtocol::H2)
            .http2_initial_stream_window_size(tuning.h2_stream_window)
            .http2_initial_connection_window_size(tuning.h2_connection_window)
            .build(connector);
        Ok(Proxy {
            client,
            scheme,
            authority,
            forward: upstream.forward,
            timeout: upstream.timeout,
        })
    }

    fn upstream_request(&self, request: AppRequest) -> anyhow::Result<Request<UpstreamBody>> {
        let path = request
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string();
        let uri = Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query(path)
            .build()?;
        let host = request
            .uri
            .authority()
            .map(|a| a.to_string())
            .or_else(|| host_header(&request.headers));
        let mut headers = request.headers;
        strip_hop_by_hop(&mut headers);
        // The origin is addressed by its own authority (as nginx's default
        // `Host: $proxy_host`); what the client asked for goes in Forwarded.
        headers.remove(HOST);
        let forwarded = match host {
            Some(host) => format!("for={};host={host};proto=https", request.peer.ip()),
            None => format!("for={};proto=https", request.peer.ip()),
        };
        if let Ok(value) = HeaderValue::from_str(&forwarded) {
            headers.append(HeaderName::from_static("forwarded"), value);
        }
        let body = match has_body(&request.method, &headers) {
            true => stream_body(request.body),
            false => Empty::new().map_err(|never| match never {}).boxed_unsync(),
        };
        let mut upstream = Request::builder()
            .method(request.method)
            .uri(uri)
            .body(body)?;
        *upstream.headers_mut() = headers;
        Ok(upstream)
    }
}

impl App for Proxy {
    fn answers(&self, _method: &Method, path: &str) -> bool {
        self.forward.wants(path)
    }

    fn call(&self, request: AppRequest) -> AppResponse {
        let upstream = self.upstream_request(request);
        let client = self.client.clone();
        let (timeout, origin) = (self.timeout, self.authority.clone());
        Box::pin(async move {
            let upstream = match upstream {
                Ok(upstream) => upstream,
                Err(err) => return failure(StatusCode::BAD_REQUEST, &format!("{err:#}")),
            };
            let asked = Instant::now();
            match tokio::time::timeout(timeout, client.request(upstream)).await {
                Ok(Ok(response)) => relayed(response, asked.elapsed()),
                Ok(Err(err)) => failure(
                    StatusCode::BAD_GATEWAY,
                    &format!("the origin {origin} did not answer: {}", chain(&err)),
                ),
                Err(_) => failure(
                    StatusCode::GATEWAY_TIMEOUT,
                    &format!("the origin {origin} sent no response head within {timeout:?}"),
                ),
            }
        })
    }
}

/// The origin's response as the client gets it, with the time the edge
/// waited for its head in `Server-Timing` (`origin;dur=MS`), so a client
/// can split a request's time between the two legs.
fn relayed(response: Response<hyper::body::Incoming>, waited: Duration) -> Response<BodyStream> {
    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    // The edge advertises its own h3 (the server adds its Alt-Svc).
    parts.headers.remove(http::header::ALT_SVC);
    let timing = format!("origin;dur={:.3}", waited.as_secs_f64() * 1000.0);
    if let Ok(value) = HeaderValue::from_str(&timing) {
        parts
            .headers
            .append(HeaderName::from_static("server-timing"), value);
    }
    let body = body
        .into_data_stream()
        .map(|chunk| chunk.map_err(|err| format!("the origin's body broke off: {err}")))
        .boxed();
    Response::from_parts(parts, body)
}

fn failure(status: StatusCode, message: &str) -> Response<BodyStream> {
    let body = Bytes::from(format!("{message}\n"));
    let mut response = Response::new(futures::stream::iter([Ok(body)]).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// An error with its causes, which hyper's client keeps apart.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn host_header(headers: &HeaderMap) -> Option<String> {
    headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Whether the request carries a body to forward: one it declares, or
/// any method but GET and HEAD (whose absent body must not become an
/// empty chunked one on h1).
fn has_body(method: &Method, headers: &HeaderMap) -> bool {
    headers.contains_key(http::header::CONTENT_LENGTH)
        || headers.contains_key(TRANSFER_ENCODING)
        || !matches!(*method, Method::GET | Method::HEAD)
}

fn stream_body(body: BodyStream) -> UpstreamBody {
    let frames = body.map(|chunk| chunk.map(http_body::Frame::data).map_err(BoxError::from));
    StreamBody::new(frames).boxed_unsync()
}

/// Removes the headers that describe one connection (RFC 9110 section
/// 7.6.1), and those the `Connection` header names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
    ] {
        headers.remove(name);
    }
    headers.remove(UPGRADE);
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// TLS 1.3 to the origin, its certificate verified against `ca`.
fn tls_config(ca: &std::path::Path) -> anyhow::Result<rustls::ClientConfig> {
    let pem =
        std::fs::read(ca).with_context(|| format!("cannot read --upstream-ca {}", ca.display()))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
        let cert = cert.with_context(|| format!("--upstream-ca {} is not PEM", ca.display()))?;
        roots
            .add(cert)
            .with_context(|| format!("--upstream-ca {} holds a bad certificate", ca.display()))?;
    }
    if roots.is_empty() {
        bail!(
            "--upstream-ca {} holds no certificate; give the origin's certificate or its CA as PEM",
            ca.display()
        );
    }
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// A configuration for an `http://` origin, which never uses it.
fn tls_config_without_roots() -> rustls::ClientConfig {
    rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("ring supports TLS 1.3")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn documents_are_the_pages_and_everything_else_stays_at_the_edge() {
        for path in ["/", "/blog/", "/index.html", "/a/b.html"] {
            assert!(Forward::Documents.wants(path), "{path}");
        }
        for path in ["/app.js", "/style.css", "/img/a.png", "/bytes/100", "/blog"] {
            assert!(!Forward::Documents.wants(path), "{path}");
            assert!(Forward::All.wants(path), "{path}");
        }
    }

    #[test]
    fn hop_by_hop_headers_and_the_ones_connection_names_are_not_forwarded() {
        let mut headers = HeaderMap::new();
        headers.insert(CONNECTION, HeaderValue::from_static("close, x-private"));
        headers.insert("x-private", HeaderValue::from_static("1"));
        headers.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        headers.insert(TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
        headers.insert("priority", HeaderValue::from_static("u=1"));
        strip_hop_by_hop(&mut headers);
        let left: Vec<_> = headers.keys().map(|k| k.as_str()).collect();
        assert_eq!(left, ["priority"]);
    }

    #[test]
    fn a_get_without_a_declared_body_sends_none() {
        let empty = HeaderMap::new();
        assert!(!has_body(&Method::GET, &empty));
        assert!(has_body(&Method::POST, &empty));
        let mut declared = HeaderMap::new();
        declared.insert(http::header::CONTENT_LENGTH, HeaderValue::from_static("3"));
        assert!(has_body(&Method::GET, &declared));
    }

    #[test]
    fn an_origin_needs_a_scheme_an_authority_no_path_and_for_https_a_ca() {
        let upstream = |origin: &str, ca: Option<&str>| Upstream {
            origin: origin.parse().unwrap(),
            protocol: UpstreamProtocol::H2,
            ca: ca.map(PathBuf::from),
            forward: Forward::All,
            timeout: Duration::from_secs(1),
        };
        let tuning = TcpTuning::default();
        let message = |u: Upstream| Proxy::new(&u, &tuning).err().unwrap().to_string();
        assert!(message(upstream("https://10.0.0.1:443/api", None)).contains("no path"));
        assert!(message(upstream("https://10.0.0.1:443", None)).contains("--upstream-ca"));
        assert!(message(upstream("ftp://10.0.0.1:21", None)).contains("neither https nor http"));
        assert!(
            message(upstream("https://10.0.0.1:443", Some("/nonexistent.pem")))
                .contains("cannot read --upstream-ca")
        );
        assert!(Proxy::new(&upstream("http://10.0.0.1:80", None), &tuning).is_ok());
    }
}
