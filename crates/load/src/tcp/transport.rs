//! A TCP connection's bytes, in the clear or through rustls' sans-I/O
//! client: everything the socket holds is read in one go and its plaintext
//! handed on; what the protocol queued is written (encrypted) as far as the
//! socket takes it, and the rest kept for when it has room.

use std::io::{self, BufRead, Read, Write};
use std::time::Instant;

use mio::net::TcpStream;
use rustls::{ClientConnection, HandshakeKind};

use super::arrival::ArrivalClock;

/// One read from the socket. rustls reads 4 KiB a call on its own; one
/// large read handed to it from memory costs a copy instead of a syscall
/// per 4 KiB of a download.
pub(crate) const SOCKET_READ: usize = 256 * 1024;

/// Socket reads one `read` makes at most, so that one fast download does
/// not keep the loop from the other connections, their timers and Ctrl-C.
const READS_PER_CALL: usize = 8;

/// Where a `read` left the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadEnd {
    /// Nothing more to read until epoll says so.
    Drained,
    /// More may wait: read again next turn (epoll will not say so again).
    More,
    /// The peer closed its side.
    Closed,
}

/// Why a connection's bytes stopped.
#[derive(Debug)]
pub(crate) enum TransportError {
    Io(io::Error),
    Tls(rustls::Error),
}

pub(crate) struct Transport {
    pub(crate) stream: TcpStream,
    tls: Option<Box<ClientConnection>>,
    /// Cleartext bytes the socket has not taken yet (rustls keeps its own).
    unsent: Vec<u8>,
}

impl Transport {
    pub(crate) fn new(stream: TcpStream, tls: Option<ClientConnection>) -> Transport {
        Transport {
            stream,
            tls: tls.map(Box::new),
            unsent: Vec::new(),
        }
    }

    /// TLS from here on; its ClientHello goes with the next write.
    pub(crate) fn start_tls(&mut self, mut tls: ClientConnection) {
        // What the connection queues is bounded by its streams; rustls'
        // default 64 KiB limit would refuse a larger body or batch.
        tls.set_buffer_limit(None);
        self.tls = Some(Box::new(tls));
    }

    pub(crate) fn is_handshaking(&self) -> bool {
        self.tls.as_ref().is_some_and(|tls| tls.is_handshaking())
    }

    /// The protocol TLS agreed on (`None` in the clear or without ALPN).
    pub(crate) fn alpn(&self) -> Option<&[u8]> {
        self.tls.as_ref().and_then(|tls| tls.alpn_protocol())
    }

    /// Whether TLS resumed an earlier session (`None` in the clear).
    pub(crate) fn resumed(&self) -> Option<bool> {
        let tls = self.tls.as_ref()?;
        Some(tls.handshake_kind() == Some(HandshakeKind::Resumed))
    }

    /// Reads what the socket holds (up to [`READS_PER_CALL`] reads) and
    /// hands its plaintext to `sink` (`scratch` holds the ciphertext), a
    /// piece at a time, where it lies in rustls' buffers, with when it
    /// arrived: by the kernel's stamp with a `clock` (`--linger`), else
    /// `now`. Also returns when the last read's bytes (or the peer's end)
    /// arrived.
    pub(crate) fn read(
        &mut self,
        scratch: &mut [u8],
        mut clock: Option<&mut ArrivalClock>,
        now: Instant,
        sink: &mut dyn FnMut(&[u8], Instant),
    ) -> Result<(ReadEnd, Instant), TransportError> {
        let mut last = now;
        for _ in 0..READS_PER_CALL {
            let read = match clock.as_deref_mut() {
                Some(clock) => clock.read(&self.stream, scratch),
                None => self.stream.read(scratch).map(|read| (read, now)),
            };
            let (read, arrived) = match read {
                Ok((0, arrived)) => return Ok((ReadEnd::Closed, arrived)),
                Ok(read) => read,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    return Ok((ReadEnd::Drained, last))
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(TransportError::Io(err)),
            };
            last = arrived;
            let sink = &mut |plain: &[u8]| sink(plain, arrived);
            match self.tls.as_deref_mut() {
                Some(tls) => {
                    if decrypt(tls, &scratch[..read], sink)? {
                        return Ok((ReadEnd::Closed, arrived));
                    }
                }
                None => sink(&scratch[..read]),
            }
            // A short read emptied the socket; bytes arriving after it
            // raise a new edge.
            if read < scratch.len() {
                return Ok((ReadEnd::Drained, arrived));
            }
        }
        Ok((ReadEnd::More, last))
    }

    /// Queues `out` (emptied) and writes what the socket takes.
    /// `Ok(false)`: some is left for when the socket has room.
    pub(crate) fn write(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        match self.tls.as_deref_mut() {
            Some(tls) => {
                if !out.is_empty() {
                    tls.writer().write_all(out)?;
                    out.clear();
                }
                while tls.wants_write() {
                    match tls.write_tls(&mut self.stream) {
                        Ok(_) => {}
                        Err(err) if err.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                        Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                        Err(err) => return Err(err),
                    }
                }
                Ok(true)
            }
            None => {
                if self.unsent.is_empty() {
                    std::mem::swap(&mut self.unsent, out);
                } else {
                    self.unsent.append(out);
                }
                self.flush_clear()
            }
        }
    }

    fn flush_clear(&mut self) -> io::Result<bool> {
        let mut written = 0;
        while written < self.unsent.len() {
            match self.stream.write(&self.unsent[written..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => written += n,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
        self.unsent.drain(..written);
        Ok(self.unsent.is_empty())
    }

    /// Whether bytes wait for the socket to have room.
    pub(crate) fn has_unsent(&self) -> bool {
        match &self.tls {
            Some(tls) => tls.wants_write(),
            None => !self.unsent.is_empty(),
        }
    }

    /// Ends the connection politely: TLS's close_notify, then FIN.
    pub(crate) fn close(&mut self) {
        if let Some(tls) = self.tls.as_deref_mut() {
            tls.send_close_notify();
        }
        let _ = self.write(&mut Vec::new());
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
    }
}

/// Hands `ciphertext` to rustls and what it decrypts to `sink`; true once
/// the peer sent close_notify. On an error, rustls queues its alert, which
/// the caller's last write sends.
fn decrypt(
    tls: &mut ClientConnection,
    mut ciphertext: &[u8],
    sink: &mut dyn FnMut(&[u8]),
) -> Result<bool, TransportError> {
    let mut closed = false;
    while !ciphertext.is_empty() && !closed {
        // After close_notify rustls takes nothing more: what follows it
        // is dropped.
        if tls.read_tls(&mut ciphertext).map_err(TransportError::Io)? == 0 {
            break;
        }
        let state = tls.process_new_packets().map_err(TransportError::Tls)?;
        closed |= state.peer_has_closed();
        let mut reader = tls.reader();
        loop {
            let len = match reader.fill_buf() {
                Ok([]) => break,
                Ok(chunk) => {
                    sink(chunk);
                    chunk.len()
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
                Err(err) => return Err(TransportError::Io(err)),
            };
            reader.consume(len);
        }
    }
    Ok(closed)
}
