//! A minimal synchronous client of the Chrome DevTools protocol over its
//! websocket: send a command, wait for its reply with a deadline, read
//! events with a deadline. Events that arrive while a reply is awaited are
//! kept, in order, for the next [`DevTools::next_event`].

use std::collections::VecDeque;
use std::time::Instant;

use anyhow::{bail, Result};
use serde_json::{json, Value};

use crate::json_socket::JsonSocket;

/// A connection to one browser's DevTools endpoint.
pub struct DevTools {
    socket: JsonSocket,
    next_id: u64,
    backlog: VecDeque<Value>,
}

impl DevTools {
    /// Connects to `ws_url` (`ws://127.0.0.1:PORT/devtools/browser/...`).
    pub fn connect(ws_url: &str) -> Result<DevTools> {
        Ok(DevTools {
            socket: JsonSocket::connect(ws_url, "Chromium's DevTools")?,
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
        self.socket.send(&message, method)?;
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
        self.socket.read_before(deadline)
    }
}
