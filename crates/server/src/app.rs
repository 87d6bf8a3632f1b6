//! An application that answers every request in place of the built-in
//! endpoints: the seam through which the Node.js package hands requests to
//! a JavaScript handler. The protocol shells still own TLS, QUIC, framing,
//! limits and metrics; an application sees one request head, its body as a
//! stream of chunks, and gives back a response whose body is a stream too.

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::BoxStream;
use h3lab_results::Proto;
use http::{HeaderMap, Method, Response, Uri};

/// Chunks of a request or response body; an error ends the body abnormally
/// (the stream is reset rather than finished).
pub type BodyStream = BoxStream<'static, Result<Bytes, String>>;

/// One request as an application sees it.
pub struct AppRequest {
    /// The protocol it came over.
    pub protocol: Proto,
    /// The client's address (as the connection sees it now).
    pub peer: SocketAddr,
    /// Request method.
    pub method: Method,
    /// Request target (path and query; authority on h2 and h3).
    pub uri: Uri,
    /// Request headers (pseudo-headers excluded).
    pub headers: HeaderMap,
    /// The request body, read as the application asks for it.
    pub body: BodyStream,
}

/// The future of an application's response.
pub type AppResponse = Pin<Box<dyn Future<Output = Response<BodyStream>> + Send>>;

/// Answers requests. It is called once per request, on the server's
/// runtime; the returned future resolves when the response head is ready,
/// and the body may go on streaming after that.
pub trait App: Send + Sync + 'static {
    /// The response to `request`.
    fn call(&self, request: AppRequest) -> AppResponse;

    /// Whether this application answers a request for `path`; the built-in
    /// endpoints and the site answer the others (an edge that forwards
    /// documents and serves the rest itself). By default, every request.
    fn answers(&self, _method: &Method, _path: &str) -> bool {
        true
    }
}

/// What a connection's life reports to an observer (the Node package's
/// events).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerEvent {
    /// A connection is ready for requests.
    Session {
        /// Its protocol (h1 and h2 after ALPN).
        protocol: Proto,
        /// The client's address.
        peer: SocketAddr,
    },
    /// A connection has ended.
    SessionClosed {
        /// Its protocol.
        protocol: Proto,
        /// The client's address as the connection began.
        peer: SocketAddr,
    },
    /// A QUIC connection's client was seen from a new address.
    Migrate {
        /// The address it was seen from before.
        from: SocketAddr,
        /// The address it is seen from now.
        to: SocketAddr,
    },
    /// A client offered 0-RTT data, which the server accepted or rejected.
    ZeroRtt {
        /// Whether the early data was accepted.
        accepted: bool,
    },
}

/// Where events go; called on the server's runtime, so it must not block.
pub type EventSink = Arc<dyn Fn(ServerEvent) + Send + Sync>;

/// The application and event observer a server is built with, if any.
#[derive(Clone, Default)]
pub struct Hooks {
    /// Answers every request; `None` serves the built-in endpoints.
    pub app: Option<Arc<dyn App>>,
    /// Receives connection events; `None` reports none.
    pub events: Option<EventSink>,
}

impl Hooks {
    pub(crate) fn emit(&self, event: ServerEvent) {
        if let Some(events) = &self.events {
            events(event);
        }
    }
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks")
            .field("app", &self.app.is_some())
            .field("events", &self.events.is_some())
            .finish()
    }
}

/// Reports [`ServerEvent::SessionClosed`] when the connection's task lets
/// go of it, however the connection ended.
pub(crate) struct OpenSession {
    hooks: Hooks,
    protocol: Proto,
    peer: SocketAddr,
}

impl Hooks {
    /// Reports [`ServerEvent::Session`]; the guard reports its close.
    pub(crate) fn session(&self, protocol: Proto, peer: SocketAddr) -> OpenSession {
        self.emit(ServerEvent::Session { protocol, peer });
        OpenSession {
            hooks: self.clone(),
            protocol,
            peer,
        }
    }
}

impl Drop for OpenSession {
    fn drop(&mut self) {
        let (protocol, peer) = (self.protocol, self.peer);
        self.hooks
            .emit(ServerEvent::SessionClosed { protocol, peer });
    }
}
