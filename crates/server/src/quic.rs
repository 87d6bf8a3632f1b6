//! The QUIC shell: HTTP/3 over quinn and h3, tuned for high bandwidth-delay
//! paths and accepting 0-RTT.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Result};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use h3::error::Code;
use h3::server::{RequestResolver, RequestStream};
use http::Response;
use http_body_util::BodyExt;
use quinn::congestion::{BbrConfig, ControllerFactory, CubicConfig, NewRenoConfig};
use quinn::{Endpoint, EndpointConfig, Incoming, TransportConfig, VarInt};
use tokio::sync::OwnedSemaphorePermit;
use tracing::debug;

use crate::body::ReplyBody;
use crate::config::{Limits, QuicCongestion};
use crate::lifecycle::{Admission, Lifecycle};
use crate::respond::{declared_length, EchoBody, Handler};
use crate::routes::Protocol;

/// Per-stream and send windows sized above a 1 Gbit/s x 100 ms path (12.5 MB)
/// so a single transfer is not window-limited.
const STREAM_WINDOW: u32 = 16 * 1024 * 1024;
const SEND_WINDOW: u64 = 64 * 1024 * 1024;
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

type H3Connection = h3::server::Connection<h3_quinn::Connection, Bytes>;
type H3Stream = RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// A quinn endpoint on `socket` serving `crypto` with throughput-oriented transport settings.
pub fn endpoint(
    socket: std::net::UdpSocket,
    crypto: quinn::crypto::rustls::QuicServerConfig,
    limits: &Limits,
    congestion: QuicCongestion,
) -> Result<Endpoint> {
    let mut transport = TransportConfig::default();
    transport.congestion_controller_factory(congestion_factory(congestion));
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(limits.max_streams_per_connection))
        .stream_receive_window(VarInt::from_u32(STREAM_WINDOW))
        .send_window(SEND_WINDOW)
        .max_idle_timeout(Some(IDLE_TIMEOUT.try_into()?));
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    server.transport_config(Arc::new(transport));
    let runtime = quinn::default_runtime()
        .ok_or_else(|| anyhow!("the QUIC endpoint needs a tokio runtime"))?;
    Ok(Endpoint::new(
        EndpointConfig::default(),
        Some(server),
        socket,
        runtime,
    )?)
}

fn congestion_factory(congestion: QuicCongestion) -> Arc<dyn ControllerFactory + Send + Sync> {
    match congestion {
        QuicCongestion::Cubic => Arc::new(CubicConfig::default()),
        QuicCongestion::NewReno => Arc::new(NewRenoConfig::default()),
        QuicCongestion::Bbr => Arc::new(BbrConfig::default()),
    }
}

pub struct QuicShell {
    pub handler: Arc<Handler>,
    pub admission: Admission,
    pub lifecycle: Lifecycle,
}

impl QuicShell {
    /// Accepts connections until graceful shutdown starts, then refuses new ones.
    pub async fn accept_loop(self: Arc<Self>, endpoint: Endpoint) {
        loop {
            let incoming = tokio::select! {
                _ = self.lifecycle.graceful.cancelled() => break,
                incoming = endpoint.accept() => incoming,
            };
            let Some(incoming) = incoming else { break };
            let Some(slot) = self.admission.admit_quic() else {
                debug!("connection limit reached; refusing QUIC connection");
                incoming.refuse();
                continue;
            };
            let shell = self.clone();
            self.lifecycle
                .tasks
                .spawn(async move { shell.serve(incoming, slot).await });
        }
        endpoint.set_server_config(None);
    }

    async fn serve(&self, incoming: Incoming, _slot: OwnedSemaphorePermit) {
        let connecting = match incoming.accept() {
            Ok(connecting) => connecting,
            Err(err) => return debug!(%err, "QUIC connection failed before the handshake"),
        };
        // 0.5-RTT: answer requests (including 0-RTT ones) before the client's
        // Finished arrives, which is what makes resumed requests fast.
        let connection = match connecting.into_0rtt() {
            Ok((connection, _accepted)) => connection,
            Err(connecting) => match connecting.await {
                Ok(connection) => connection,
                Err(err) => return debug!(%err, "QUIC handshake failed"),
            },
        };
        let h3 = h3::server::builder()
            .max_field_section_size(self.handler.limits.max_header_bytes as u64)
            .build(h3_quinn::Connection::new(connection.clone()))
            .await;
        match h3 {
            Ok(h3) => self.serve_requests(h3).await,
            Err(err) => return debug!(%err, "HTTP/3 setup failed"),
        }
        // GOAWAY is sent and every request answered. Closing now would discard
        // response bytes still queued in quinn, so let the client close first.
        tokio::select! {
            _ = connection.closed() => {}
            _ = self.lifecycle.hard.cancelled() => {}
        }
    }

    async fn serve_requests(&self, mut h3: H3Connection) {
        let mut draining = false;
        loop {
            tokio::select! {
                accepted = h3.accept() => match accepted {
                    Ok(Some(resolver)) => {
                        let handler = self.handler.clone();
                        self.lifecycle.tasks.spawn(serve_request(handler, resolver));
                    }
                    Ok(None) => return,
                    Err(err) => return debug!(%err, "HTTP/3 connection ended"),
                },
                _ = self.lifecycle.graceful.cancelled(), if !draining => {
                    draining = true;
                    if let Err(err) = h3.shutdown(0).await {
                        return debug!(%err, "HTTP/3 GOAWAY failed");
                    }
                }
                _ = self.lifecycle.hard.cancelled() => return,
            }
        }
    }
}

async fn serve_request(
    handler: Arc<Handler>,
    resolver: RequestResolver<h3_quinn::Connection, Bytes>,
) {
    let (request, mut stream) = match resolver.resolve_request().await {
        Ok(resolved) => resolved,
        Err(err) => return debug!(%err, "HTTP/3 request headers unreadable"),
    };
    let declared = declared_length(request.headers());
    let response = handler
        .handle(
            Protocol::H3,
            request.method(),
            request.uri(),
            request.headers(),
            |limit| collect(&mut stream, declared, limit),
        )
        .await;
    if let Err(err) = send(&mut stream, response).await {
        debug!("HTTP/3 response not sent: {err:#}");
    }
}

/// Reads the body up to `limit`. Over it, the unread rest is abandoned:
/// dropping the stream sends STOP_SENDING, which QUIC clients handle cleanly.
async fn collect(stream: &mut H3Stream, declared: Option<u64>, limit: u64) -> EchoBody {
    if declared.is_some_and(|len| len > limit) {
        return EchoBody::TooLarge;
    }
    let mut body = BytesMut::new();
    loop {
        match stream.recv_data().await {
            Ok(Some(chunk)) => {
                if (body.len() + chunk.remaining()) as u64 > limit {
                    return EchoBody::TooLarge;
                }
                body.put(chunk);
            }
            Ok(None) => return EchoBody::Complete(body.freeze()),
            Err(err) => return EchoBody::Failed(err.to_string()),
        }
    }
}

async fn send(stream: &mut H3Stream, response: Response<ReplyBody>) -> Result<()> {
    let (parts, mut body) = response.into_parts();
    stream
        .send_response(Response::from_parts(parts, ()))
        .await?;
    while let Some(frame) = body.frame().await {
        let data = match frame {
            Ok(frame) => frame.into_data().unwrap_or_default(),
            Err(err) => {
                // Reset rather than finish, so the client cannot take a short body as complete.
                stream.stop_stream(Code::H3_INTERNAL_ERROR);
                return Err(err.into());
            }
        };
        stream.send_data(data).await?;
    }
    stream.finish().await?;
    Ok(())
}
