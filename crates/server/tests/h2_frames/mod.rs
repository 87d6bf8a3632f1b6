//! A raw HTTP/2 client for the h2 abuse and conformance tests: TLS with ALPN h2 from the
//! attacker's address, the connection preface, frames written by hand (the
//! 9-byte frame header of RFC 9113 section 4.1, HPACK literals of RFC 7541
//! section 6.2), and a reader that records what the server answers. A real
//! client library would refuse to send most of these frame sequences.

#![allow(dead_code)] // the abuse and conformance tests each use their own subset

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Notify;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::attack_common::ATTACKER;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;

pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;

/// Error codes (RFC 9113 section 7) the tests expect.
pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const CANCEL: u32 = 0x8;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const FRAME_HEADER_LEN: usize = 9;

/// Appends one frame: 24-bit length, type, flags, 31-bit stream ID, payload.
pub fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

pub fn settings(out: &mut Vec<u8>, values: &[(u16, u32)]) {
    let payload: Vec<u8> = values
        .iter()
        .flat_map(|(id, value)| [id.to_be_bytes().as_slice(), &value.to_be_bytes()].concat())
        .collect();
    frame(out, SETTINGS, 0, 0, &payload);
}

/// HPACK integer with an `prefix`-bit prefix (RFC 7541 section 5.1).
fn integer(out: &mut Vec<u8>, high_bits: u8, prefix: u32, value: usize) {
    let max = (1usize << prefix) - 1;
    if value < max {
        out.push(high_bits | value as u8);
        return;
    }
    out.push(high_bits | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push(0x80 | (rest % 128) as u8);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// An HPACK string literal, not Huffman-coded.
fn string(out: &mut Vec<u8>, bytes: &[u8]) {
    integer(out, 0x00, 7, bytes.len());
    out.extend_from_slice(bytes);
}

/// Literal header field without indexing, new name (first byte 0x00).
pub fn literal(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.push(0x00);
    string(out, name.as_bytes());
    string(out, value);
}

/// Literal header field with incremental indexing, new name (0x40): the
/// field also enters the dynamic table, at index 62 while it is the newest.
pub fn literal_indexed(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.push(0x40);
    string(out, name.as_bytes());
    string(out, value);
}

/// Indexed header field: one byte naming the newest dynamic table entry.
pub const NEWEST_DYNAMIC_ENTRY: u8 = 0x80 | 62;

/// A GET's header block.
pub fn request(path: &str) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in [
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", path),
    ] {
        literal(&mut block, name, value.as_bytes());
    }
    block
}

/// What the server has sent on one connection, as the reader sees it.
#[derive(Default)]
pub struct Answers {
    /// The first GOAWAY's error code and when it arrived.
    pub goaway: Mutex<Option<(u32, Instant)>>,
    pub resets: AtomicU64,
    pub data_bytes: AtomicU64,
    /// The attacker's count of attack units when the first GOAWAY arrived.
    pub units_when_told: AtomicU64,
    /// Attack units the writer has sent; the reader snapshots it at GOAWAY.
    pub units: AtomicU64,
    /// Every frame the server sent, in order, for the conformance tests.
    pub frames: Mutex<Vec<Seen>>,
    server_settings: Notify,
}

/// One frame from the server: its type, flags and stream, and the error
/// code of a RST_STREAM or GOAWAY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub code: Option<u32>,
}

pub type Writer = WriteHalf<TlsStream<TcpStream>>;

/// One connection from [`ATTACKER`], past TLS, the preface, our SETTINGS and
/// our ACK of the server's SETTINGS (so its limits are in force); its reader
/// runs until the server closes. `None` if the server refused it.
pub async fn connect(
    addr: SocketAddr,
    tls: &TlsConnector,
    our_settings: &[(u16, u32)],
) -> Option<(Writer, Arc<Answers>, tokio::task::JoinHandle<Instant>)> {
    let socket = TcpSocket::new_v4().ok()?;
    socket.bind((ATTACKER, 0).into()).ok()?;
    let tcp = socket.connect(addr).await.ok()?;
    tcp.set_nodelay(true).ok()?;
    let stream = tls
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .ok()?;
    let (reader, mut writer) = tokio::io::split(stream);
    let answers = Arc::new(Answers::default());
    let reading = tokio::spawn(read_frames(reader, answers.clone()));
    let mut opening = PREFACE.to_vec();
    settings(&mut opening, our_settings);
    writer.write_all(&opening).await.ok()?;
    // A notification that came first is kept as a permit.
    answers.server_settings.notified().await;
    let mut ack = Vec::new();
    frame(&mut ack, SETTINGS, ACK, 0, &[]);
    writer.write_all(&ack).await.ok()?;
    Some((writer, answers, reading))
}

/// Reads frames until the server closes the connection; when it closed.
async fn read_frames(mut reader: ReadHalf<TlsStream<TcpStream>>, answers: Arc<Answers>) -> Instant {
    let mut header = [0u8; FRAME_HEADER_LEN];
    let mut payload = Vec::new();
    while reader.read_exact(&mut header).await.is_ok() {
        let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        payload.resize(len, 0);
        if reader.read_exact(&mut payload).await.is_err() {
            break;
        }
        let stream = u32::from_be_bytes(header[5..9].try_into().unwrap()) & 0x7fff_ffff;
        record(&answers, header[3], header[4], stream, &payload);
    }
    // The server's SETTINGS may never come (refused connection): wake the
    // connecting side anyway.
    answers.server_settings.notify_one();
    Instant::now()
}

fn record(answers: &Answers, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let code = match kind {
        RST_STREAM => payload.get(..4),
        GOAWAY => payload.get(4..8),
        _ => None,
    }
    .map(|code| u32::from_be_bytes(code.try_into().unwrap()));
    answers.frames.lock().unwrap().push(Seen {
        kind,
        flags,
        stream,
        code,
    });
    match kind {
        SETTINGS if flags & ACK == 0 => answers.server_settings.notify_one(),
        RST_STREAM => {
            answers.resets.fetch_add(1, Ordering::Relaxed);
        }
        DATA => {
            answers
                .data_bytes
                .fetch_add(payload.len() as u64, Ordering::Relaxed);
        }
        GOAWAY => {
            let code = u32::from_be_bytes(payload[4..8].try_into().unwrap());
            let mut goaway = answers.goaway.lock().unwrap();
            if goaway.is_none() {
                *goaway = Some((code, Instant::now()));
                let units = answers.units.load(Ordering::Relaxed);
                answers.units_when_told.store(units, Ordering::Relaxed);
            }
        }
        _ => {}
    }
}

/// How one attack connection ended, from the attacker's side.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Units sent when the first GOAWAY arrived.
    pub units_when_told: u64,
    /// The first GOAWAY's error code and how long after the connection was
    /// ready it arrived; `None` if the server sent none.
    pub goaway: Option<(u32, Duration)>,
    /// RST_STREAM frames from the server.
    pub resets: u64,
    /// DATA payload bytes from the server.
    pub data_bytes: u64,
    /// How long after the connection was ready the server closed it; `None`
    /// if it was still open when the attacker gave up.
    pub closed_after: Option<Duration>,
}

impl Outcome {
    pub fn new(answers: &Answers, ready: Instant, closed: Option<Instant>) -> Self {
        let goaway = *answers.goaway.lock().unwrap();
        Self {
            units_when_told: answers.units_when_told.load(Ordering::Relaxed),
            goaway: goaway.map(|(code, at)| (code, at - ready)),
            resets: answers.resets.load(Ordering::Relaxed),
            data_bytes: answers.data_bytes.load(Ordering::Relaxed),
            closed_after: closed.map(|closed| closed - ready),
        }
    }
}
