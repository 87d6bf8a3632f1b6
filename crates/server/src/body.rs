//! The one response body type every protocol sends: empty, in-memory, the
//! byte pattern, a file streamed from disk, or an application's stream.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::StreamExt;
use http_body::{Body, Frame, SizeHint};
use tokio::fs::File;
use tokio_util::io::ReaderStream;

use crate::app::BodyStream;
use crate::pattern::{PatternCursor, CHUNK_SIZE};

#[derive(Debug)]
pub enum ReplyBody {
    Full(Option<Bytes>),
    Pattern(PatternCursor),
    File {
        chunks: ReaderStream<File>,
        remaining: u64,
    },
    /// An application's body, of a length known only at its end unless
    /// the application declared it.
    App(AppBody),
}

/// An application's response body ([`crate::app::BodyStream`]) and, when
/// its `content-length` declared one, the bytes still to come. hyper stops
/// polling an HTTP/1.1 body at its declared last byte, so without the count
/// the body could not say it was complete, and its request would count as
/// cancelled for the rapid-reset defence.
pub struct AppBody {
    stream: BodyStream,
    remaining: Option<u64>,
}

impl AppBody {
    pub fn new(stream: BodyStream, declared: Option<u64>) -> Self {
        Self {
            stream,
            remaining: declared,
        }
    }
}

impl std::fmt::Debug for AppBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AppBody")
    }
}

impl ReplyBody {
    pub fn full(data: impl Into<Bytes>) -> Self {
        ReplyBody::Full(Some(data.into()))
    }

    pub fn file(file: File, len: u64) -> Self {
        ReplyBody::File {
            chunks: ReaderStream::with_capacity(file, CHUNK_SIZE),
            remaining: len,
        }
    }

    /// The bytes still to send, when known.
    fn remaining(&self) -> Option<u64> {
        match self {
            ReplyBody::Full(data) => Some(data.as_ref().map_or(0, |d| d.len() as u64)),
            ReplyBody::Pattern(cursor) => Some(cursor.remaining()),
            ReplyBody::File { remaining, .. } => Some(*remaining),
            ReplyBody::App(body) => body.remaining,
        }
    }
}

impl Body for ReplyBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let chunk = match self.get_mut() {
            ReplyBody::Full(data) => data.take().filter(|d| !d.is_empty()),
            ReplyBody::Pattern(cursor) => cursor.next_chunk(),
            ReplyBody::App(body) => {
                return match body.stream.poll_next_unpin(cx) {
                    Poll::Pending => Poll::Pending,
                    Poll::Ready(None) => Poll::Ready(None),
                    Poll::Ready(Some(Ok(data))) => {
                        if let Some(remaining) = &mut body.remaining {
                            *remaining = remaining.saturating_sub(data.len() as u64);
                        }
                        Poll::Ready(Some(Ok(Frame::data(data))))
                    }
                    Poll::Ready(Some(Err(reason))) => {
                        Poll::Ready(Some(Err(std::io::Error::other(reason))))
                    }
                }
            }
            ReplyBody::File { chunks, remaining } => {
                if *remaining == 0 {
                    None
                } else {
                    match chunks.poll_next_unpin(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Some(Err(err))) => return Poll::Ready(Some(Err(err))),
                        Poll::Ready(Some(Ok(data))) => {
                            *remaining = remaining.saturating_sub(data.len() as u64);
                            Some(data)
                        }
                        Poll::Ready(None) => {
                            return Poll::Ready(Some(Err(std::io::Error::new(
                                std::io::ErrorKind::UnexpectedEof,
                                "static file shrank while it was being served",
                            ))))
                        }
                    }
                }
            }
        };
        Poll::Ready(chunk.map(|data| Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining() == Some(0)
    }

    fn size_hint(&self) -> SizeHint {
        self.remaining()
            .map_or_else(SizeHint::default, SizeHint::with_exact)
    }
}
