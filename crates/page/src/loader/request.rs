//! One resource's request on the built-in loader: from its connection to
//! its last byte, with the browser's headers it sends and the body kept
//! for scanning where the page needs it (documents, stylesheets, module
//! scripts).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h3lab_client::{OriginConnector, RequestNumbers, RequestTemplate, Sender, Target};
use h3lab_results::page::ResourceTiming;
use h3lab_results::{Proto, ResourceKind};
use http::header::{
    HeaderMap, HeaderValue, ACCEPT, ACCEPT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, LOCATION,
};
use http::Method;
use tokio::sync::mpsc;
use url::Url;

use crate::decode::{self, ContentDecoder};
use crate::discover::{module_imports, Discovery, Findings, HtmlScanner};
use crate::schedule::urgency;
use crate::style::Sheet;

use super::{Connection, Event, MAX_SCANNED_BYTES};

/// One resource's request, from connection to last byte.
pub(super) struct ResourceRequest {
    pub(super) resource: usize,
    pub(super) connection_id: u64,
    pub(super) discovery: Discovery,
    pub(super) connector: Arc<OriginConnector>,
    pub(super) early: bool,
    pub(super) started: Instant,
    pub(super) events: mpsc::UnboundedSender<Event>,
    pub(super) path_rtts: Arc<std::sync::Mutex<Vec<Duration>>>,
    pub(super) browser_numbers: Option<RequestNumbers>,
}

impl ResourceRequest {
    pub(super) async fn run(self, connection: Connection) {
        let resource = self.resource;
        let events = self.events.clone();
        if let Err(error) = self.fetch(connection).await {
            let _ = events.send(Event::Failed { resource, error });
        }
    }

    fn since_start(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1e3
    }

    async fn fetch(self, connection: Connection) -> Result<(), String> {
        let start_ms = self.since_start();
        let mut sender = self.sender(connection).await?;
        let target = Target::parse(self.discovery.url.as_str()).map_err(|err| err.to_string())?;
        let (method, body) = match &self.discovery.replayed {
            Some(request) => (
                Method::from_bytes(request.method.as_bytes()).map_err(|err| err.to_string())?,
                request
                    .body
                    .as_ref()
                    .map(|b| b.to_send())
                    .unwrap_or_default(),
            ),
            None => (Method::GET, Vec::new()),
        };
        let template = RequestTemplate::new(&target, method, self.headers(), Bytes::from(body));
        let template = match &self.browser_numbers {
            Some(numbers) => template.with_browser_headers(numbers),
            None => template,
        };
        let mut response = sender
            .send(&template)
            .await
            .map_err(|err| err.to_string())?;
        let ttfb_ms = self.since_start();
        let proto = sender.proto();
        self.connector.observe(proto, response.headers());
        let status = response.status().as_u16();
        let stream = response.stream_id();
        self.report(self.redirect(status, response.headers()));
        let mut body = Body::for_resource(&self.discovery, status, response.headers());
        let mut decoder = ContentDecoder::for_headers(response.headers())?;
        let mut bytes = 0u64;
        while let Some(chunk) = response.chunk().await.map_err(|err| err.to_string())? {
            bytes += chunk.len() as u64;
            self.report(body.feed(&decoder.feed(&chunk)?));
        }
        self.report(body.feed(&decoder.finish()?));
        self.report(body.finish());
        let timing = ResourceTiming {
            url: self.discovery.url.to_string(),
            method: self.discovery.method().to_string(),
            kind: self.discovery.kind,
            render_blocking: self.discovery.render_blocking,
            status,
            protocol: Some(proto.alpn_name().to_string()),
            start_ms,
            ttfb_ms,
            end_ms: self.since_start(),
            bytes,
            connection: Some(self.connection_id),
            stream,
        };
        let h1 = (proto == Proto::H1).then_some(sender);
        let _ = self.events.send(Event::Done {
            resource: self.resource,
            timing,
            h1,
        });
        Ok(())
    }

    /// A redirect's target, fetched next as the same kind of resource, as
    /// a browser follows it (a replayed page that starts at
    /// `https://example.com/` and moves to `https://www.example.com/`).
    fn redirect(&self, status: u16, headers: &HeaderMap) -> Findings {
        let redirects = matches!(status, 301 | 302 | 303 | 307 | 308);
        let location = headers.get(LOCATION).and_then(|v| v.to_str().ok());
        let target = location
            .filter(|_| redirects)
            .and_then(|to| self.discovery.url.join(to).ok());
        let Some(mut url) = target else {
            return Findings::default();
        };
        url.set_fragment(None);
        Findings {
            discoveries: vec![Discovery {
                url,
                ..self.discovery.clone()
            }],
            ..Findings::default()
        }
    }

    fn report(&self, found: Findings) {
        if !found.is_empty() {
            let _ = self.events.send(Event::Found(found));
        }
    }

    async fn sender(&self, connection: Connection) -> Result<Sender, String> {
        match connection {
            Connection::H1(sender) => Ok(sender),
            Connection::NewH1 => self.open().await,
            Connection::Shared(cell) => {
                let shared = cell.get_or_init(|| self.open()).await;
                let sender = shared.as_ref().map_err(Clone::clone)?;
                sender
                    .try_clone()
                    .ok_or_else(|| "a multiplexed connection can be shared".to_string())
            }
        }
    }

    async fn open(&self) -> Result<Sender, String> {
        let connection =
            (self.connector.connect(self.early).await).map_err(|err| err.to_string())?;
        if let Some(rtt) = connection.timing.path_rtt {
            self.path_rtts
                .lock()
                .expect("no fetch panics holding it")
                .push(rtt);
        }
        Ok(connection.sender)
    }

    /// A browser's request headers, with the RFC 9218 priority the
    /// schedule ordered the request by.
    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let accept = match self.discovery.kind {
            ResourceKind::Document => "text/html,application/xhtml+xml,*/*;q=0.8",
            ResourceKind::Stylesheet => "text/css,*/*;q=0.1",
            ResourceKind::Image => "image/avif,image/webp,image/png,image/*,*/*;q=0.8",
            _ => "*/*",
        };
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        headers.insert(ACCEPT_ENCODING, HeaderValue::from_static(decode::ACCEPTED));
        let urgency = urgency(&self.discovery);
        let priority = match self.discovery.kind {
            ResourceKind::Image => format!("u={urgency}, i"),
            _ => format!("u={urgency}"),
        };
        headers.insert(
            "priority",
            HeaderValue::from_str(&priority).expect("a priority is a valid header value"),
        );
        // A replayed body goes with the headers a browser sends with it,
        // over every protocol (h3 adds no length of its own).
        if let Some(body) = (self.discovery.replayed.as_ref()).and_then(|r| r.body.as_ref()) {
            headers.insert(CONTENT_LENGTH, HeaderValue::from(body.size()));
            let content_type =
                (body.content_type.as_deref()).and_then(|value| HeaderValue::from_str(value).ok());
            if let Some(content_type) = content_type {
                headers.insert(CONTENT_TYPE, content_type);
            }
        }
        if self.browser_numbers.is_some() {
            let (mode, dest) = fetch_metadata(self.discovery.kind);
            headers.insert("sec-fetch-mode", HeaderValue::from_static(mode));
            headers.insert("sec-fetch-dest", HeaderValue::from_static(dest));
        }
        headers
    }
}

/// The Fetch Metadata a browser sends for a resource of `kind`: its mode
/// and destination (`Sec-Fetch-Mode`, `Sec-Fetch-Dest`).
fn fetch_metadata(kind: ResourceKind) -> (&'static str, &'static str) {
    match kind {
        ResourceKind::Document => ("navigate", "document"),
        ResourceKind::Stylesheet => ("no-cors", "style"),
        ResourceKind::Script => ("no-cors", "script"),
        ResourceKind::Font => ("cors", "font"),
        ResourceKind::Image => ("no-cors", "image"),
        ResourceKind::Other => ("cors", "empty"),
    }
}

/// What the loader does with a body while it arrives.
enum Body {
    /// HTML, scanned chunk by chunk and kept for the style engine.
    Html {
        scanner: Box<HtmlScanner>,
        text: Vec<u8>,
        url: Url,
    },
    /// A stylesheet or module script, scanned once whole.
    Whole { text: Vec<u8>, base: Url, css: bool },
    /// Counted only.
    Opaque,
}

impl Body {
    /// A redirect's body is not parsed, as a browser does not.
    fn for_resource(discovery: &Discovery, status: u16, headers: &HeaderMap) -> Body {
        let content_type = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let base = discovery.url.clone();
        if (300..400).contains(&status) {
            return Body::Opaque;
        }
        match discovery.kind {
            ResourceKind::Document if content_type.is_empty() || content_type.contains("html") => {
                Body::Html {
                    scanner: Box::new(HtmlScanner::new(&base)),
                    text: Vec::new(),
                    url: base,
                }
            }
            ResourceKind::Stylesheet => Body::Whole {
                text: Vec::new(),
                base,
                css: true,
            },
            ResourceKind::Script if discovery.module => Body::Whole {
                text: Vec::new(),
                base,
                css: false,
            },
            _ => Body::Opaque,
        }
    }

    fn feed(&mut self, chunk: &[u8]) -> Findings {
        match self {
            Body::Html { scanner, text, .. } => {
                keep(text, chunk);
                scanner.feed(chunk)
            }
            Body::Whole { text, .. } => {
                keep(text, chunk);
                Findings::default()
            }
            Body::Opaque => Findings::default(),
        }
    }

    fn finish(self) -> Findings {
        match self {
            Body::Html { scanner, text, url } => Findings {
                document: Some((url, String::from_utf8_lossy(&text).into_owned())),
                ..scanner.finish()
            },
            Body::Whole { text, base, css } => {
                let text = String::from_utf8_lossy(&text);
                match css {
                    true => {
                        let sheet = Sheet::parse(&text, &base);
                        let imports = (sheet.imports.iter())
                            .map(|url| Discovery::recorded(url.clone(), ResourceKind::Stylesheet))
                            .collect();
                        Findings {
                            discoveries: imports,
                            stylesheet: Some((base, sheet)),
                            ..Findings::default()
                        }
                    }
                    false => Findings {
                        discoveries: module_imports(&text, &base),
                        ..Findings::default()
                    },
                }
            }
            Body::Opaque => Findings::default(),
        }
    }
}

/// Keeps a body's bytes for scanning once whole, up to a bound.
fn keep(text: &mut Vec<u8>, chunk: &[u8]) {
    let room = MAX_SCANNED_BYTES.saturating_sub(text.len());
    text.extend_from_slice(&chunk[..chunk.len().min(room)]);
}
