//! Turns a routed request into a response the same way for h1, h2 and h3.
//! The protocol shells only read the request and write the response.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::{
    HeaderValue, ALLOW, ALT_SVC, CACHE_CONTROL, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, LOCATION,
    RETRY_AFTER, SERVER,
};
use http::{HeaderMap, Method, Response, StatusCode, Uri};
use http_body::Body;

use crate::app::{App, AppRequest, Hooks};
use crate::body::{AppBody, ReplyBody};
use crate::config::Limits;
use crate::metrics::{MeteredBody, Metrics};
use crate::pattern::PatternCursor;
use crate::replay::{request_host, ReplaySite, Reply};
use h3lab_results::Proto;

use crate::routes::{route, Rejection, Route, RouteLimits, StaticPath};
use crate::ServeSummary;

const SERVER_NAME: &str = concat!("h3lab/", env!("CARGO_PKG_VERSION"));

/// A response to HEAD keeps its headers (`content-length` included) and
/// sends no body (RFC 9110 section 9.3.2); hyper leaves that to the
/// service on HTTP/2.
fn without_body_for_head(method: &Method, response: &mut Response<ReplyBody>) {
    if method == Method::HEAD {
        *response.body_mut() = ReplyBody::Full(None);
    }
}

/// The outcome of reading an `/echo` request body under the body limit.
pub enum EchoBody {
    Complete(Bytes),
    TooLarge,
    Failed(String),
}

/// The request's `content-length`, if it has a valid one.
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

/// Requests answered per protocol, and requests being handled now.
#[derive(Debug, Default)]
pub struct Stats {
    h1: AtomicU64,
    h2: AtomicU64,
    h3: AtomicU64,
    in_flight: AtomicU64,
}

/// Counts one request as in flight until dropped (also when its task is cancelled).
struct InFlight<'a>(&'a AtomicU64);

impl<'a> InFlight<'a> {
    fn enter(counter: &'a AtomicU64) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        Self(counter)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Stats {
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    fn record(&self, protocol: Proto) {
        let counter = match protocol {
            Proto::H1 => &self.h1,
            // `auto` is a client's choice between these, never a connection's.
            Proto::H2 | Proto::Auto => &self.h2,
            Proto::H3 => &self.h3,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> ServeSummary {
        ServeSummary {
            h1: self.h1.load(Ordering::Relaxed),
            h2: self.h2.load(Ordering::Relaxed),
            h3: self.h3.load(Ordering::Relaxed),
        }
    }
}

/// Shared, read-only request handling state.
#[derive(Debug)]
pub struct Handler {
    /// Canonical static root, served under `/static/`.
    pub root: Option<PathBuf>,
    /// Canonical site directory, served at `/`.
    pub site: Option<PathBuf>,
    /// A replay site's recorded responses, answered for every host it
    /// recorded (in place of `site`).
    pub replay: Option<Arc<ReplaySite>>,
    pub limits: Limits,
    /// `Alt-Svc` value for TCP responses; `None` when there is no HTTP/3.
    pub alt_svc: Option<HeaderValue>,
    pub stats: Arc<Stats>,
    pub metrics: Arc<Metrics>,
    /// An application answering in place of the built-in endpoints, and
    /// the observer of connection events.
    pub hooks: Hooks,
}

impl Handler {
    /// Answers one request. `read_body(limit)` reads the body of an `/echo`
    /// request or of a replayed one that is not a GET; it is not called
    /// for other routes.
    pub async fn handle<F, Fut>(
        &self,
        protocol: Proto,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        read_body: F,
    ) -> Response<MeteredBody>
    where
        F: FnOnce(u64) -> Fut,
        Fut: Future<Output = EchoBody>,
    {
        let started = Instant::now();
        let _in_flight = InFlight::enter(&self.stats.in_flight);
        let route_limits = RouteLimits {
            max_response_bytes: self.limits.max_response_bytes,
            max_delay: self.limits.max_delay,
            site: self.site.is_some() || self.replay.is_some(),
        };
        let recorded = self.replay.as_ref().and_then(|replay| {
            let path = uri.path_and_query().map_or("/", |p| p.as_str());
            replay.find(method, request_host(uri, headers)?, path)
        });
        if let Some(reply) = recorded {
            // A beacon's payload is read, as its server would read it.
            let body_bytes = match *method == Method::GET || *method == Method::HEAD {
                true => 0,
                false => match read_body(self.limits.max_body_bytes).await {
                    EchoBody::Complete(data) => data.len() as u64,
                    EchoBody::TooLarge | EchoBody::Failed(_) => 0,
                },
            };
            self.metrics.replayed(method, body_bytes);
            let mut response = replayed(&reply).await;
            self.finish_headers(protocol, &mut response);
            without_body_for_head(method, &mut response);
            self.stats.record(protocol);
            return self.metered(protocol, started, response);
        }
        let mut response = match route(method, uri.path(), &route_limits) {
            Route::Health => health(protocol),
            Route::Bytes(n) => with_type(
                Response::new(ReplyBody::Pattern(PatternCursor::new(n))),
                "application/octet-stream",
            ),
            Route::Delay(delay) => {
                tokio::time::sleep(delay).await;
                json(format!("{{\"delay_ms\":{}}}\n", delay.as_millis()))
            }
            Route::Echo => self.echo(headers, read_body).await,
            Route::Static(path) => self.static_file(&path).await,
            Route::Site(path) => self.site_file(&path, uri).await,
            Route::Reject(rejection) => reject(rejection),
        };
        self.finish_headers(protocol, &mut response);
        without_body_for_head(method, &mut response);
        self.stats.record(protocol);
        self.metered(protocol, started, response)
    }

    /// The application that answers this request, if one does (see
    /// [`Handler::handle_app`]).
    pub fn app_for(&self, method: &Method, path: &str) -> Option<&Arc<dyn App>> {
        self.hooks
            .app
            .as_ref()
            .filter(|app| app.answers(method, path))
    }

    /// Answers one request through the application, with the same headers,
    /// counts and metrics as the built-in endpoints.
    pub async fn handle_app(
        &self,
        app: &Arc<dyn App>,
        request: AppRequest,
    ) -> Response<MeteredBody> {
        let started = Instant::now();
        let _in_flight = InFlight::enter(&self.stats.in_flight);
        let protocol = request.protocol;
        let method = request.method.clone();
        let response = app.call(request).await;
        let declared = declared_length(response.headers());
        let mut response = response.map(|body| ReplyBody::App(AppBody::new(body, declared)));
        self.finish_headers(protocol, &mut response);
        without_body_for_head(&method, &mut response);
        self.stats.record(protocol);
        self.metered(protocol, started, response)
    }

    /// Counts the response in the metrics, which time it until its body is sent.
    fn metered(
        &self,
        protocol: Proto,
        started: Instant,
        response: Response<ReplyBody>,
    ) -> Response<MeteredBody> {
        let status = response.status().as_u16();
        response.map(|body| self.metrics.meter(protocol, status, started, body))
    }

    /// The answer on a TCP connection beyond the connection limit.
    pub fn busy(&self, protocol: Proto) -> Response<MeteredBody> {
        let started = Instant::now();
        let mut response = plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "server is at its TCP connection limit or this address's share of it; retry later or raise --max-tcp-connections or --max-tcp-connections-per-peer",
        );
        let headers = response.headers_mut();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("1"));
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
        self.finish_headers(protocol, &mut response);
        self.metered(protocol, started, response)
    }

    fn finish_headers(&self, protocol: Proto, response: &mut Response<ReplyBody>) {
        let length = response.body().size_hint().exact();
        let headers = response.headers_mut();
        headers.insert(SERVER, HeaderValue::from_static(SERVER_NAME));
        if let Some(length) = length {
            headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
        }
        if let (Some(alt_svc), true) = (&self.alt_svc, protocol != Proto::H3) {
            headers.insert(ALT_SVC, alt_svc.clone());
        }
    }

    async fn echo<F, Fut>(&self, headers: &HeaderMap, read_body: F) -> Response<ReplyBody>
    where
        F: FnOnce(u64) -> Fut,
        Fut: Future<Output = EchoBody>,
    {
        let limit = self.limits.max_body_bytes;
        let outcome = read_body(limit).await;
        match outcome {
            EchoBody::Complete(data) => {
                let content_type = headers
                    .get(CONTENT_TYPE)
                    .cloned()
                    .unwrap_or(HeaderValue::from_static("application/octet-stream"));
                let mut response = Response::new(ReplyBody::full(data));
                response.headers_mut().insert(CONTENT_TYPE, content_type);
                response
            }
            EchoBody::TooLarge => plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("request body exceeds {limit} bytes; send less or raise --max-body-bytes"),
            ),
            EchoBody::Failed(reason) => plain(
                StatusCode::BAD_REQUEST,
                &format!("could not read the request body: {reason}"),
            ),
        }
    }

    async fn static_file(&self, path: &StaticPath) -> Response<ReplyBody> {
        let Some(root) = &self.root else {
            return plain(
                StatusCode::NOT_FOUND,
                "no static root; start the server with --root DIR",
            );
        };
        let mut candidate = below(root, path);
        let mut found = lookup(root, &candidate).await;
        if let Ok(Lookup::Directory) = found {
            candidate.push("index.html");
            found = lookup(root, &candidate).await;
        }
        match found {
            Ok(Lookup::File(file, len, real)) => file_response(file, len, &real, false),
            Ok(_) => plain(StatusCode::NOT_FOUND, "no such file under the static root"),
            Err(err) => unreadable(err),
        }
    }

    /// A file of the site, every answer `no-store`. A directory named
    /// without its trailing slash is redirected (301) to the slash form, as
    /// nginx does, so the relative links of its `index.html` resolve.
    async fn site_file(&self, path: &StaticPath, uri: &Uri) -> Response<ReplyBody> {
        if self.replay.is_some() {
            return plain(
                StatusCode::NOT_FOUND,
                "the replayed page recorded no such request (host, method and path)",
            );
        }
        let Some(site) = &self.site else {
            return plain(
                StatusCode::NOT_FOUND,
                "no site; start the server with --site DIR",
            );
        };
        let mut response = match lookup(site, &below(site, path)).await {
            Ok(Lookup::File(file, len, real)) => file_response(file, len, &real, true),
            Ok(Lookup::Directory) if !path.wants_index => slash_redirect(uri),
            Ok(_) => plain(StatusCode::NOT_FOUND, "no such file in the site"),
            Err(err) => unreadable(err),
        };
        let headers = response.headers_mut();
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

/// A recorded response, sent after its think time.
async fn replayed(reply: &Reply) -> Response<ReplyBody> {
    if !reply.think.is_zero() {
        tokio::time::sleep(reply.think).await;
    }
    let file = match tokio::fs::File::open(&reply.body).await {
        Ok(file) => file,
        Err(err) => return unreadable(err),
    };
    let len = match file.metadata().await {
        Ok(metadata) => metadata.len(),
        Err(err) => return unreadable(err),
    };
    let mut response = Response::new(ReplyBody::file(file, len));
    *response.status_mut() = reply.status;
    *response.headers_mut() = reply.headers.clone();
    response
}

/// The file `path` names below `dir`; a trailing slash names its `index.html`.
fn below(dir: &Path, path: &StaticPath) -> PathBuf {
    let mut candidate = dir.to_path_buf();
    candidate.extend(&path.segments);
    if path.wants_index {
        candidate.push("index.html");
    }
    candidate
}

/// What a path resolves to inside a served directory.
enum Lookup {
    File(tokio::fs::File, u64, PathBuf),
    Directory,
    /// Missing, or resolving (through symlinks) outside the directory.
    Missing,
}

/// Resolves `candidate` (symlinks included) and opens it if it is a regular
/// file inside `dir` (which is canonical).
async fn lookup(dir: &Path, candidate: &Path) -> std::io::Result<Lookup> {
    let Ok(real) = tokio::fs::canonicalize(candidate).await else {
        return Ok(Lookup::Missing);
    };
    if !real.starts_with(dir) {
        return Ok(Lookup::Missing);
    }
    let metadata = tokio::fs::metadata(&real).await?;
    if metadata.is_dir() {
        return Ok(Lookup::Directory);
    }
    let file = tokio::fs::File::open(&real).await?;
    Ok(Lookup::File(file, metadata.len(), real))
}

fn file_response(
    file: tokio::fs::File,
    len: u64,
    real: &Path,
    charset: bool,
) -> Response<ReplyBody> {
    let mut response = Response::new(ReplyBody::file(file, len));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, content_type(real, charset));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The type for a file's extension (`application/octet-stream` if unknown).
/// `.js` and `.mjs` are `text/javascript` (RFC 9239), `.woff2` `font/woff2`;
/// with `charset`, HTML, CSS and JavaScript say `; charset=utf-8`.
fn content_type(path: &Path, charset: bool) -> HeaderValue {
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let essence = match extension.to_ascii_lowercase().as_str() {
        "js" | "mjs" => "text/javascript".to_string(),
        "woff2" => "font/woff2".to_string(),
        _ => mime_guess::from_path(path)
            .first_or_octet_stream()
            .essence_str()
            .to_string(),
    };
    let text = matches!(
        essence.as_str(),
        "text/html" | "text/css" | "text/javascript"
    );
    let value = match charset && text {
        true => format!("{essence}; charset=utf-8"),
        false => essence,
    };
    HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("application/octet-stream"))
}

/// 301 to the same path with a trailing slash, the query kept.
fn slash_redirect(uri: &Uri) -> Response<ReplyBody> {
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    let target = format!("{}/{query}", uri.path());
    let Ok(location) = HeaderValue::from_str(&target) else {
        return plain(StatusCode::NOT_FOUND, "no such file in the site");
    };
    let mut response = plain(StatusCode::MOVED_PERMANENTLY, &format!("moved to {target}"));
    response.headers_mut().insert(LOCATION, location);
    response
}

fn unreadable(err: std::io::Error) -> Response<ReplyBody> {
    plain(
        StatusCode::INTERNAL_SERVER_ERROR,
        &format!("could not read the file: {err}"),
    )
}

fn with_type(mut response: Response<ReplyBody>, content_type: &'static str) -> Response<ReplyBody> {
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn json(text: String) -> Response<ReplyBody> {
    with_type(Response::new(ReplyBody::full(text)), "application/json")
}

fn health(protocol: Proto) -> Response<ReplyBody> {
    let body = serde_json::json!({
        "status": "ok",
        "protocol": protocol.name(),
        "version": env!("CARGO_PKG_VERSION"),
    });
    json(format!("{body}\n"))
}

fn plain(status: StatusCode, message: &str) -> Response<ReplyBody> {
    let mut response = with_type(
        Response::new(ReplyBody::full(format!("{message}\n"))),
        "text/plain; charset=utf-8",
    );
    *response.status_mut() = status;
    response
}

fn reject(rejection: Rejection) -> Response<ReplyBody> {
    match rejection {
        Rejection::NotFound => plain(
            StatusCode::NOT_FOUND,
            "no such endpoint; try /health, /bytes/{n}, /delay/{ms}, POST /echo or /static/...",
        ),
        Rejection::MethodNotAllowed { allow } => {
            let mut response = plain(
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("this endpoint only answers {allow}"),
            );
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static(allow));
            response
        }
        Rejection::BadRequest(message) => plain(StatusCode::BAD_REQUEST, &message),
    }
}
