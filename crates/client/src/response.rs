//! A response whose head has arrived: its status, and its body read to the
//! end without copying.

use bytes::{Buf, Bytes};
use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;

use crate::error::ClientError;

/// A response whose head has arrived; the body is still on the wire.
pub struct Response {
    status: StatusCode,
    headers: HeaderMap,
    stream_id: Option<u64>,
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
        let (head, body) = response.into_parts();
        Response {
            status: head.status,
            headers: head.headers,
            stream_id: None,
            body: Body::Hyper(body),
        }
    }

    pub(crate) fn h2(response: http::Response<h2::RecvStream>, stream_id: u32) -> Response {
        let (head, body) = response.into_parts();
        Response {
            status: head.status,
            headers: head.headers,
            stream_id: Some(stream_id.into()),
            body: Body::H2(body),
        }
    }

    pub(crate) fn h3(
        head: http::Response<()>,
        stream: h3::client::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>,
    ) -> Response {
        Response {
            status: head.status(),
            headers: head.into_parts().0.headers,
            stream_id: Some(stream.id().into_inner()),
            body: Body::H3(stream),
        }
    }

    /// The response's header fields.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The stream the response came on: the HTTP/2 or QUIC stream id;
    /// `None` for HTTP/1.1, which has no streams.
    pub fn stream_id(&self) -> Option<u64> {
        self.stream_id
    }

    /// The next piece of the body as it arrives; `None` at its end. For a
    /// caller that reads the body (a page loader parsing HTML as it
    /// streams in); [`Response::drain`] counts without keeping anything.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, ClientError> {
        match &mut self.body {
            Body::Hyper(body) => loop {
                let Some(frame) = body.frame().await else {
                    return Ok(None);
                };
                let frame = frame.map_err(ClientError::from_hyper)?;
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
            },
            Body::H2(body) => {
                let Some(data) = body.data().await else {
                    return Ok(None);
                };
                let data = data.map_err(ClientError::from_h2)?;
                body.flow_control()
                    .release_capacity(data.len())
                    .map_err(ClientError::from_h2)?;
                Ok(Some(data))
            }
            Body::H3(stream) => {
                let chunk = stream
                    .recv_data()
                    .await
                    .map_err(ClientError::from_h3_stream)?;
                Ok(chunk.map(|mut chunk| chunk.copy_to_bytes(chunk.remaining())))
            }
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
