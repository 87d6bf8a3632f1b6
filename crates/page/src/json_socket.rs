//! A websocket carrying one JSON message per text frame, read with a
//! deadline: the transport both browser protocols share, Chromium's
//! DevTools and Firefox's WebDriver BiDi. What the messages mean is each
//! protocol's own.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// How long a blocked read waits before it checks its deadline again.
const READ_SLICE: Duration = Duration::from_millis(100);

/// A connection to one browser's remote-control endpoint.
pub(crate) struct JsonSocket {
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    /// Who is at the other end, for errors: `Chromium's DevTools`.
    peer: &'static str,
}

impl JsonSocket {
    /// Connects to `ws_url`. The handshake carries no `Origin` header,
    /// which Firefox refuses (400).
    pub(crate) fn connect(ws_url: &str, peer: &'static str) -> Result<JsonSocket> {
        let (socket, _) = tungstenite::connect(ws_url)
            .with_context(|| format!("cannot connect to {peer} at {ws_url}"))?;
        if let MaybeTlsStream::Plain(tcp) = socket.get_ref() {
            // Reads wake up to check their deadline instead of blocking forever.
            tcp.set_read_timeout(Some(READ_SLICE))
                .with_context(|| format!("cannot set a read timeout on {peer}'s socket"))?;
        }
        Ok(JsonSocket { socket, peer })
    }

    /// Sends `message`; `what` names it in an error.
    pub(crate) fn send(&mut self, message: &Value, what: &str) -> Result<()> {
        let peer = self.peer;
        self.socket
            .send(Message::text(message.to_string()))
            .with_context(|| format!("cannot send {what} to {peer}"))
    }

    /// The next message, or `None` once `deadline` has passed.
    pub(crate) fn read_before(&mut self, deadline: Instant) -> Result<Option<Value>> {
        let peer = self.peer;
        while Instant::now() < deadline {
            match self.socket.read() {
                Ok(Message::Text(text)) => {
                    return serde_json::from_str(&text)
                        .map(Some)
                        .map_err(|err| anyhow!("{peer} sent a message that is not JSON: {err}"));
                }
                Ok(Message::Close(_)) => bail!("{peer} closed its connection"),
                Ok(_) => {}
                Err(tungstenite::Error::Io(err))
                    if matches!(
                        err.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(err) => return Err(err).with_context(|| format!("reading from {peer} failed")),
            }
        }
        Ok(None)
    }
}
