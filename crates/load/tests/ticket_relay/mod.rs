//! A UDP relay between QUIC clients and the server, with a fixed delay each
//! way, that cuts the 1-RTT packets out of one server datagram per
//! connection: the one in which quinn sends the session ticket, so that
//! the ticket arrives only after QUIC has resent it, after the response.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::UdpSocket;
use tokio::task::JoinHandle;

/// Which of a connection's server datagrams carrying 1-RTT packets loses
/// them: h3lab's server (quinn) sends the session ticket in the third.
/// Without the priming connection's wait for a ticket, cutting the third
/// failed 10 measurements in 10, cutting the first, second, fourth or fifth
/// none in 10 each.
const CUT_ONE_RTT_DATAGRAM: u64 = 3;

pub struct TicketRelay {
    /// Where clients send.
    pub addr: SocketAddr,
    cuts: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl TicketRelay {
    pub async fn start(server: SocketAddr, one_way: Duration) -> TicketRelay {
        let front = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let addr = front.local_addr().unwrap();
        let cuts = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn(upstream(front, server, one_way, cuts.clone()));
        TicketRelay { addr, cuts, task }
    }

    /// How many server datagrams lost their 1-RTT packets.
    pub fn cuts(&self) -> u64 {
        self.cuts.load(Ordering::SeqCst)
    }
}

impl Drop for TicketRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Client to server: each client address gets a socket of its own towards
/// the server, and a task relaying what comes back on it.
async fn upstream(
    front: Arc<UdpSocket>,
    server: SocketAddr,
    one_way: Duration,
    cuts: Arc<AtomicU64>,
) {
    let mut backs: HashMap<SocketAddr, Arc<UdpSocket>> = HashMap::new();
    let mut buf = vec![0u8; 65536];
    while let Ok((len, client)) = front.recv_from(&mut buf).await {
        let back = match backs.get(&client) {
            Some(back) => back.clone(),
            None => {
                let back = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
                back.connect(server).await.unwrap();
                let (front, cuts) = (front.clone(), cuts.clone());
                tokio::spawn(downstream(back.clone(), front, client, one_way, cuts));
                backs.insert(client, back.clone());
                back
            }
        };
        let datagram = buf[..len].to_vec();
        tokio::spawn(async move {
            tokio::time::sleep(one_way).await;
            let _ = back.send(&datagram).await;
        });
    }
}

async fn downstream(
    back: Arc<UdpSocket>,
    front: Arc<UdpSocket>,
    client: SocketAddr,
    one_way: Duration,
    cuts: Arc<AtomicU64>,
) {
    let mut buf = vec![0u8; 65536];
    let mut with_one_rtt = 0;
    while let Ok(len) = back.recv(&mut buf).await {
        let mut keep = len;
        if let Some(start) = one_rtt_start(&buf[..len]) {
            with_one_rtt += 1;
            if with_one_rtt == CUT_ONE_RTT_DATAGRAM {
                keep = start;
                cuts.fetch_add(1, Ordering::SeqCst);
            }
        }
        if keep == 0 {
            continue;
        }
        let (datagram, front) = (buf[..keep].to_vec(), front.clone());
        tokio::spawn(async move {
            tokio::time::sleep(one_way).await;
            let _ = front.send_to(&datagram, client).await;
        });
    }
}

/// Where the 1-RTT (short header) packet of a datagram starts, after any
/// coalesced long-header packets (RFC 9000, section 17.2); `None` if it has
/// none.
fn one_rtt_start(datagram: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at < datagram.len() {
        let first = datagram[at];
        if first & 0x80 == 0 {
            return Some(at);
        }
        // Version, then the destination and source connection IDs, each
        // after its length byte.
        let mut cursor = at + 5;
        for _ in 0..2 {
            cursor += 1 + usize::from(*datagram.get(cursor)?);
        }
        let initial = (first >> 4) & 0x03 == 0;
        if initial {
            let (token_len, used) = varint(datagram.get(cursor..)?)?;
            cursor += used + token_len;
        }
        let (length, used) = varint(datagram.get(cursor..)?)?;
        at = cursor + used + length;
    }
    None
}

/// A QUIC variable-length integer and the bytes it took.
fn varint(bytes: &[u8]) -> Option<(usize, usize)> {
    let first = *bytes.first()?;
    let used = 1 << (first >> 6);
    let mut value = u64::from(first & 0x3f);
    for byte in bytes.get(1..used)? {
        value = value << 8 | u64::from(*byte);
    }
    Some((usize::try_from(value).ok()?, used))
}
