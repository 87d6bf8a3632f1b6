//! A response whose head has arrived: its status, and its body read to the
//! end without copying.

use bytes::{Buf, Bytes};
use http::StatusCode;
use http_body_util::BodyExt;

use crate::error::ClientError;

/// A response whose head has arrived; the body is still on the wire.
pub struct Response {
    status: StatusCode,
    body: Body,
}

// Boxing the h3 stream would add an allocation per request; a response
// is moved only once, so its size costs less than that.
#[allow(clippy::large_enum_variant)]
enum Body {
    Hyper(hyper::body::Incoming),
    H2(h2::RecvStream),
    H3(h3::client::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>),
}

impl Response {
    pub(crate) fn h1(response: http::Response<hyper::body::Incoming>) -> Response {
        Response {
            status: response.status(),
            body: Body::Hyper(response.into_body()),
        }
    }

    pub(crate) fn h2(response: http::Response<h2::RecvStream>) -> Response {
        Response {
            status: response.status(),
            body: Body::H2(response.into_body()),
        }
    }

    pub(crate) fn h3(
        status: StatusCode,
        stream: h3::client::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>,
    ) -> Response {
        Response {
            status,
            body: Body::H3(stream),
        }
    }

    /// The response's status code.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// Reads the body to its end without copying it and returns its length.
    pub async fn drain(self) -> Result<u64, ClientError> {
        let mut received = 0u64;
        match self.body {
            Body::Hyper(mut body) => {
                while let Some(frame) = body.frame().await {
                    let frame = frame.map_err(ClientError::from_hyper)?;
                    if let Some(data) = frame.data_ref() {
                        received += data.len() as u64;
                    }
                }
            }
            Body::H2(mut body) => {
                while let Some(data) = body.data().await {
                    let data = data.map_err(ClientError::from_h2)?;
                    received += data.len() as u64;
                    // Hand the window back so the peer may send on.
                    body.flow_control()
                        .release_capacity(data.len())
                        .map_err(ClientError::from_h2)?;
                }
            }
            Body::H3(mut stream) => {
                while let Some(chunk) = stream
                    .recv_data()
                    .await
                    .map_err(ClientError::from_h3_stream)?
                {
                    received += chunk.remaining() as u64;
                }
            }
        }
        Ok(received)
    }
}
