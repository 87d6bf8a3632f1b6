//! The `/metrics` endpoint: plain HTTP/1.1 on its own listener, as
//! Prometheus scrapes it, apart from the benchmarked ports.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tracing::debug;

use super::Metrics;
use crate::lifecycle::Lifecycle;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serves `GET /metrics` on `listener` until graceful shutdown starts.
pub async fn serve_metrics(listener: TcpListener, metrics: Arc<Metrics>, lifecycle: Lifecycle) {
    loop {
        let accepted = tokio::select! {
            _ = lifecycle.graceful.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else { continue };
        let metrics = metrics.clone();
        let service = service_fn(move |request| {
            let response = answer(&metrics, &request);
            async move { Ok::<_, Infallible>(response) }
        });
        lifecycle.tasks.spawn(async move {
            let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            if let Err(err) = connection.await {
                debug!(%err, "metrics connection ended");
            }
        });
    }
}

fn answer(metrics: &Metrics, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match (request.method(), request.uri().path()) {
        (&Method::GET, "/metrics") => (StatusCode::OK, OPENMETRICS, metrics.encode()),
        (_, "/metrics") => (
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "use GET\n".to_string(),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain",
            "the metrics are at /metrics\n".to_string(),
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    response
}
