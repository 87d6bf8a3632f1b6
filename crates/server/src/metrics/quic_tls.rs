//! What the QUIC TLS session tells: whether the client offered 0-RTT and
//! whether it was accepted, and when the handshake completed.
//!
//! quinn does not tell a server whether a client offered 0-RTT, so the QUIC
//! TLS session is wrapped. The offer is the `early_data` extension in the
//! ClientHello, read from the handshake bytes the session is given. The
//! answer is whether rustls produced 0-RTT keys: for QUIC it does so only
//! when it accepts early data, and quinn asks for them exactly once, right
//! after the ClientHello.

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use quinn::crypto::rustls::QuicServerConfig;
use quinn::crypto::{
    ExportKeyingMaterialError, HeaderKey, KeyPair, Keys, PacketKey, ServerConfig, Session,
    UnsupportedVersion,
};
use quinn::{ConnectionId, Side};
use quinn_proto::transport_parameters::TransportParameters;
use quinn_proto::TransportError;

use super::{HandshakeResult, Metrics, Transport};

/// TLS extension number of `early_data` (RFC 8446, section 4.2).
const EARLY_DATA: u16 = 42;
/// A ClientHello larger than this is not read (real ones are a few KB).
const MAX_CLIENT_HELLO: usize = 64 * 1024;

#[derive(Debug, Default)]
pub(super) struct ZeroRttCounts {
    offered: AtomicU64,
    accepted: AtomicU64,
    rejected: AtomicU64,
}

impl Collector for ZeroRttCounts {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let read = |count: &AtomicU64| count.load(Ordering::Relaxed);
        let outcomes = [
            ("offered", read(&self.offered)),
            ("accepted", read(&self.accepted)),
            ("rejected", read(&self.rejected)),
        ];
        let help = "QUIC handshakes whose client offered 0-RTT, and whether the server accepted it";
        super::encode_counts(encoder, "quic_zero_rtt", help, "outcome", &outcomes)
    }
}

/// The server's QUIC TLS configuration, metering every session.
pub struct MeteredQuicConfig {
    inner: Arc<QuicServerConfig>,
    metrics: Arc<Metrics>,
}

impl MeteredQuicConfig {
    pub(super) fn new(inner: QuicServerConfig, metrics: Arc<Metrics>) -> Self {
        Self {
            inner: Arc::new(inner),
            metrics,
        }
    }
}

impl ServerConfig for MeteredQuicConfig {
    fn initial_keys(
        &self,
        version: u32,
        dst_cid: &ConnectionId,
    ) -> Result<Keys, UnsupportedVersion> {
        self.inner.initial_keys(version, dst_cid)
    }

    fn retry_tag(&self, version: u32, orig_dst_cid: &ConnectionId, packet: &[u8]) -> [u8; 16] {
        self.inner.retry_tag(version, orig_dst_cid, packet)
    }

    fn start_session(
        self: Arc<Self>,
        version: u32,
        params: &TransportParameters,
    ) -> Box<dyn Session> {
        Box::new(MeteredSession {
            inner: self.inner.clone().start_session(version, params),
            hello: ClientHelloReader::default(),
            metrics: self.metrics.clone(),
            started: Instant::now(),
            handshake_over: AtomicBool::new(false),
        })
    }
}

/// A server session that notes the ClientHello's 0-RTT offer, the answer,
/// and the handshake's end. quinn starts a session as it accepts a
/// connection, and asks `is_handshaking` as handshake messages arrive.
struct MeteredSession {
    inner: Box<dyn Session>,
    hello: ClientHelloReader,
    metrics: Arc<Metrics>,
    started: Instant,
    handshake_over: AtomicBool,
}

impl MeteredSession {
    fn end_handshake(&self, result: HandshakeResult) {
        if !self.handshake_over.swap(true, Ordering::Relaxed) {
            self.metrics
                .handshake(Transport::quic, result, self.started);
        }
    }
}

impl Drop for MeteredSession {
    /// A session dropped mid-handshake: the handshake failed or timed out.
    fn drop(&mut self) {
        self.end_handshake(HandshakeResult::failed);
    }
}

impl Session for MeteredSession {
    fn initial_keys(&self, dst_cid: &ConnectionId, side: Side) -> Keys {
        self.inner.initial_keys(dst_cid, side)
    }

    fn handshake_data(&self) -> Option<Box<dyn Any>> {
        self.inner.handshake_data()
    }

    fn peer_identity(&self) -> Option<Box<dyn Any>> {
        self.inner.peer_identity()
    }

    fn early_crypto(&self) -> Option<(Box<dyn HeaderKey>, Box<dyn PacketKey>)> {
        let keys = self.inner.early_crypto();
        if self.hello.offers_early_data() == Some(true) {
            let counts = &self.metrics.zero_rtt;
            counts.offered.fetch_add(1, Ordering::Relaxed);
            let outcome = match keys {
                Some(_) => &counts.accepted,
                None => &counts.rejected,
            };
            outcome.fetch_add(1, Ordering::Relaxed);
            let accepted = keys.is_some();
            self.metrics
                .hooks
                .emit(crate::app::ServerEvent::ZeroRtt { accepted });
        }
        keys
    }

    fn early_data_accepted(&self) -> Option<bool> {
        self.inner.early_data_accepted()
    }

    fn is_handshaking(&self) -> bool {
        let handshaking = self.inner.is_handshaking();
        if !handshaking {
            self.end_handshake(HandshakeResult::ok);
        }
        handshaking
    }

    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, TransportError> {
        self.hello.push(buf);
        self.inner.read_handshake(buf)
    }

    fn transport_parameters(&self) -> Result<Option<TransportParameters>, TransportError> {
        self.inner.transport_parameters()
    }

    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        self.inner.write_handshake(buf)
    }

    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn PacketKey>>> {
        self.inner.next_1rtt_keys()
    }

    fn is_valid_retry(&self, orig_dst_cid: &ConnectionId, header: &[u8], payload: &[u8]) -> bool {
        self.inner.is_valid_retry(orig_dst_cid, header, payload)
    }

    fn export_keying_material(
        &self,
        output: &mut [u8],
        label: &[u8],
        context: &[u8],
    ) -> Result<(), ExportKeyingMaterialError> {
        self.inner.export_keying_material(output, label, context)
    }
}

/// Collects the first handshake message (the ClientHello) from the bytes
/// of the client's CRYPTO frames, which may come in several pieces.
#[derive(Default)]
struct ClientHelloReader {
    bytes: Vec<u8>,
    done: bool,
}

impl ClientHelloReader {
    fn push(&mut self, data: &[u8]) {
        if self.done {
            return;
        }
        self.bytes.extend_from_slice(data);
        if self.complete().is_some() || self.bytes.len() > MAX_CLIENT_HELLO {
            self.done = true;
        }
    }

    /// The whole ClientHello body, once it is in.
    fn complete(&self) -> Option<&[u8]> {
        let (&kind, rest) = self.bytes.split_first()?;
        let length = rest.get(..3)?;
        let length = u32::from_be_bytes([0, length[0], length[1], length[2]]) as usize;
        let body = rest.get(3..3 + length)?;
        (kind == 1).then_some(body)
    }

    /// Whether the ClientHello carries `early_data`; `None` until it is
    /// complete, or when it cannot be read.
    fn offers_early_data(&self) -> Option<bool> {
        let extensions = extensions(self.complete()?)?;
        Some(extensions.contains(&EARLY_DATA))
    }
}

/// The extension numbers of a ClientHello body (RFC 8446, section 4.1.2).
fn extensions(body: &[u8]) -> Option<Vec<u16>> {
    let mut reader = Reader(body);
    reader.skip(2 + 32)?; // legacy_version, random
    let session_id = reader.u8()? as usize;
    reader.skip(session_id)?;
    let suites = reader.u16()? as usize;
    reader.skip(suites)?;
    let compression = reader.u8()? as usize;
    reader.skip(compression)?;
    let length = reader.u16()? as usize;
    let mut extensions = Reader(reader.take(length)?);
    let mut found = Vec::new();
    while !extensions.0.is_empty() {
        found.push(extensions.u16()?);
        let length = extensions.u16()? as usize;
        extensions.skip(length)?;
    }
    Some(found)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(taken)
    }

    fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(drop)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello with the given extensions (each empty).
    fn client_hello(extensions: &[u16]) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend([7u8; 32]);
        body.extend([32]);
        body.extend([9u8; 32]); // session id
        body.extend([0, 2, 0x13, 0x01]); // one cipher suite
        body.extend([1, 0]); // null compression
        let mut exts = Vec::new();
        for &ext in extensions {
            exts.extend(ext.to_be_bytes());
            exts.extend([0, 0]);
        }
        body.extend((exts.len() as u16).to_be_bytes());
        body.extend(exts);
        let mut message = vec![1];
        message.extend(&(body.len() as u32).to_be_bytes()[1..]);
        message.extend(body);
        message
    }

    #[test]
    fn finds_early_data_in_a_client_hello_that_arrives_in_pieces() {
        let hello = client_hello(&[0, 43, EARLY_DATA, 51]);
        let mut reader = ClientHelloReader::default();
        let (first, second) = hello.split_at(50);
        reader.push(first);
        assert_eq!(reader.offers_early_data(), None, "incomplete");
        reader.push(second);
        assert_eq!(reader.offers_early_data(), Some(true));
    }

    #[test]
    fn a_client_hello_without_early_data_offers_none() {
        let mut reader = ClientHelloReader::default();
        reader.push(&client_hello(&[0, 43, 51]));
        assert_eq!(reader.offers_early_data(), Some(false));
    }

    #[test]
    fn later_handshake_messages_do_not_change_the_answer() {
        let mut reader = ClientHelloReader::default();
        reader.push(&client_hello(&[EARLY_DATA]));
        reader.push(&client_hello(&[]));
        assert_eq!(reader.offers_early_data(), Some(true));
    }

    #[test]
    fn a_truncated_extension_list_is_unreadable_not_a_panic() {
        let mut hello = client_hello(&[EARLY_DATA]);
        let last = hello.len() - 1;
        hello[last - 1] = 0xff; // the extension's length now overruns
        let mut reader = ClientHelloReader::default();
        reader.push(&hello);
        assert_eq!(reader.offers_early_data(), None);
    }
}
