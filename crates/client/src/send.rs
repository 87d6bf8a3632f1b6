//! Sending requests on an open connection: one handle type over hyper's
//! HTTP/1.1, h2 and h3.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1;

use crate::error::{error_chain, ClientError};
use crate::request::RequestTemplate;
use crate::response::Response;
use h3lab_results::Proto;

/// Sends requests on one connection. h2 and h3 handles can be cloned to run
/// concurrent streams; an h1 handle carries one request at a time.
pub struct Sender {
    pub(crate) inner: SenderInner,
}

pub(crate) enum SenderInner {
    H1(http1::SendRequest<Full<Bytes>>),
    /// h2 directly rather than through hyper: hyper's client spawns a task
    /// and passes two channels per request, which cost more CPU than the
    /// whole HTTP/2 exchange. `closed` is set when the connection ends.
    H2 {
        send: h2::client::SendRequest<Bytes>,
        closed: Arc<AtomicBool>,
    },
    H3 {
        send: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
        conn: quinn::Connection,
    },
}

/// Counts of a QUIC connection's path-validation frames (RFC 9000 8.2):
/// a server that sees the client at a new address sends PATH_CHALLENGE
/// there, and the client answers with PATH_RESPONSE.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathFrames {
    /// PATH_CHALLENGE frames received from the server.
    pub challenges_received: u64,
    /// PATH_RESPONSE frames sent to the server.
    pub responses_sent: u64,
}

impl Sender {
    /// Another handle on the same connection (h2/h3); `None` for h1.
    pub fn try_clone(&self) -> Option<Sender> {
        let inner = match &self.inner {
            SenderInner::H1(_) => return None,
            SenderInner::H2 { send, closed } => SenderInner::H2 {
                send: send.clone(),
                closed: closed.clone(),
            },
            SenderInner::H3 { send, conn } => SenderInner::H3 {
                send: send.clone(),
                conn: conn.clone(),
            },
        };
        Some(Sender { inner })
    }

    /// The path-validation frames this QUIC connection has exchanged so
    /// far; `None` for TCP.
    pub fn path_frames(&self) -> Option<PathFrames> {
        let SenderInner::H3 { conn, .. } = &self.inner else {
            return None;
        };
        let stats = conn.stats();
        Some(PathFrames {
            challenges_received: stats.frame_rx.path_challenge,
            responses_sent: stats.frame_tx.path_response,
        })
    }

    /// The HTTP version this connection speaks.
    pub fn proto(&self) -> Proto {
        match &self.inner {
            SenderInner::H1(_) => Proto::H1,
            SenderInner::H2 { .. } => Proto::H2,
            SenderInner::H3 { .. } => Proto::H3,
        }
    }

    /// QUIC's current smoothed RTT estimate; `None` for TCP.
    pub fn quic_rtt(&self) -> Option<Duration> {
        match &self.inner {
            SenderInner::H3 { conn, .. } => Some(conn.rtt()),
            _ => None,
        }
    }

    /// Closes a QUIC connection now, with code 0, rather than when its
    /// handles drop (later, and while whatever comes next runs); `None`
    /// for TCP, whose connections close when their handles drop. Returns
    /// the least round trip it sampled, before ack delays: unlike the
    /// smoothed estimate, a handshake the server was slow to answer (a busy
    /// machine, a slow signature) does not raise it.
    pub fn close_quic(&self) -> Option<Duration> {
        match &self.inner {
            SenderInner::H3 { conn, .. } => {
                conn.close(0u32.into(), b"done");
                Some(conn.stats().path.min_rtt)
            }
            _ => None,
        }
    }

    /// True once the connection can carry no more requests.
    pub fn is_closed(&self) -> bool {
        match &self.inner {
            SenderInner::H1(send) => send.is_closed(),
            SenderInner::H2 { closed, .. } => closed.load(Ordering::Relaxed),
            SenderInner::H3 { conn, .. } => conn.close_reason().is_some(),
        }
    }

    /// Sends one request and waits for the response head (its first byte).
    pub async fn send(&mut self, template: &RequestTemplate) -> Result<Response, ClientError> {
        match &mut self.inner {
            SenderInner::H1(send) => {
                send.ready().await.map_err(closed_before_send)?;
                let response = send
                    .send_request(template.h1())
                    .await
                    .map_err(ClientError::from_hyper)?;
                Ok(Response::h1(response))
            }
            SenderInner::H2 { send, .. } => send_h2(send, template).await,
            SenderInner::H3 { send, .. } => send_h3(send, template).await,
        }
    }
}

async fn send_h2(
    send: &mut h2::client::SendRequest<Bytes>,
    template: &RequestTemplate,
) -> Result<Response, ClientError> {
    std::future::poll_fn(|cx| send.poll_ready(cx))
        .await
        .map_err(|err| {
            ClientError::closed_before_send(format!("HTTP/2 connection closed: {err}"))
        })?;
    let end_of_stream = template.body().is_empty();
    let (response, mut body) = send
        .send_request(template.multiplexed(), end_of_stream)
        .map_err(|err| match err.is_go_away() || err.is_io() {
            true => ClientError::closed_before_send(format!("HTTP/2 connection closed: {err}")),
            false => ClientError::from_h2(err),
        })?;
    if !end_of_stream {
        // h2 queues what the peer's window does not admit yet.
        body.send_data(template.body().clone(), true)
            .map_err(ClientError::from_h2)?;
    }
    let stream_id = u32::from(response.stream_id());
    let response = response.await.map_err(|err| {
        if err.is_remote() && (err.is_go_away() || err.reason() == Some(h2::Reason::REFUSED_STREAM))
        {
            // Above the GOAWAY's last stream id, or refused: the server
            // did not process it (RFC 9113 8.7), so it may go elsewhere.
            // nginx does this after keepalive_requests.
            ClientError::closed_before_send(format!("HTTP/2 request not processed: {err}"))
        } else {
            ClientError::from_h2(err)
        }
    })?;
    Ok(Response::h2(response, stream_id))
}

fn closed_before_send(err: hyper::Error) -> ClientError {
    ClientError::closed_before_send(format!("connection closed: {}", error_chain(&err)))
}

async fn send_h3(
    send: &mut h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    template: &RequestTemplate,
) -> Result<Response, ClientError> {
    let mut stream = send
        .send_request(template.multiplexed())
        .await
        .map_err(ClientError::from_h3_stream)?;
    if !template.body().is_empty() {
        stream
            .send_data(template.body().clone())
            .await
            .map_err(ClientError::from_h3_stream)?;
    }
    stream.finish().await.map_err(ClientError::from_h3_stream)?;
    let head = stream
        .recv_response()
        .await
        .map_err(ClientError::from_h3_stream)?;
    Ok(Response::h3(head, stream))
}
