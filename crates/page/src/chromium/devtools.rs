//! A minimal synchronous client of the Chrome DevTools protocol over its
//! websocket: send a command, wait for its reply with a deadline, read
//! events with a deadline. Events that arrive while a reply is awaited are
//! kept, in order, for the next [`DevTools::next_event`].

use std::collections::VecDeque;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// How long a blocked read waits before it checks its deadline again.
const READ_SLICE: Duration = Duration::from_millis(100);

/// A connection to one browser's DevTools endpoint.
pub struct DevTools {
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    backlog: VecDeque<Value>,
}

impl DevTools {
    /// Connects to `ws_url` (`ws://127.0.0.1:PORT/devtools/browser/...`).
    pub fn connect(ws_url: &str) -> Result<DevTools> {
        let (socket, _) = tungstenite::connect(ws_url)
            .with_context(|| format!("cannot connect to Chromium's DevTools at {ws_url}"))?;
        if let MaybeTlsStream::Plain(tcp) = socket.get_ref() {
            // Reads wake up to check their deadline instead of blocking forever.
            tcp.set_read_timeout(Some(READ_SLICE))
                .context("cannot set a read timeout on the DevTools socket")?;
        }
        Ok(DevTools {
            socket,
            next_id: 0,
            backlog: VecDeque::new(),
        })
    }

    /// Sends a command (to the page `session`, or the browser when `None`)
    /// and returns its id; the reply comes later as a message with that id.
    pub fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Result<u64> {
        self.next_id += 1;
        let mut message = json!({"id": self.next_id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .with_context(|| format!("cannot send {method} to Chromium's DevTools"))?;
        Ok(self.next_id)
    }

    /// Sends a command and waits until `deadline` for its result.
    pub fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Value> {
        let id = self.send(session, method, params)?;
        loop {
            let Some(message) = self.read_before(deadline)? else {
                bail!("Chromium's DevTools did not answer {method} in time");
            };
            if message["id"].as_u64() == Some(id) {
                if let Some(error) = message.get("error") {
                    bail!("DevTools command {method} failed: {error}");
                }
                return Ok(message["result"].clone());
            }
            if message.get("method").is_some() {
                self.backlog.push_back(message);
            }
        }
    }

    /// The next message (event, or reply to a [`DevTools::send`]), or
    /// `None` once `deadline` has passed.
    pub fn next_message(&mut self, deadline: Instant) -> Result<Option<Value>> {
        match self.backlog.pop_front() {
            Some(event) => Ok(Some(event)),
            None => self.read_before(deadline),
        }
    }

    /// Forgets the events read so far and not yet taken.
    pub fn forget_events(&mut self) {
        self.backlog.clear();
    }

    fn read_before(&mut self, deadline: Instant) -> Result<Option<Value>> {
        while Instant::now() < deadline {
            match self.socket.read() {
                Ok(Message::Text(text)) => {
                    return serde_json::from_str(&text)
                        .map(Some)
                        .map_err(|err| anyhow!("DevTools sent a message that is not JSON: {err}"));
                }
                Ok(Message::Close(_)) => bail!("Chromium closed its DevTools connection"),
                Ok(_) => {}
                Err(tungstenite::Error::Io(err))
                    if matches!(
                        err.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(err) => {
                    return Err(err).context("reading from Chromium's DevTools failed");
                }
            }
        }
        Ok(None)
    }
}
