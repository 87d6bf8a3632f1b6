//! A UDP relay between one QUIC client and the server that holds back the
//! client's second datagram, so a ClientHello spread over two Initial
//! packets reaches the server in two parts with time between them, as
//! Chromium's post-quantum ClientHello does.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::UdpSocket;
use tokio::task::JoinHandle;

pub struct SplitFlightRelay {
    /// Where the client sends.
    pub addr: SocketAddr,
    second_was_initial: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl SplitFlightRelay {
    pub async fn start(server: SocketAddr, delay: Duration) -> SplitFlightRelay {
        let front = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let back = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        back.connect(server).await.unwrap();
        let addr = front.local_addr().unwrap();
        let second_was_initial = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(relay(
            front,
            Arc::new(back),
            delay,
            second_was_initial.clone(),
        ));
        SplitFlightRelay {
            addr,
            second_was_initial,
            task,
        }
    }

    /// True once the client's second datagram was held back and it carried
    /// a QUIC Initial packet: the client's first flight really was split.
    pub fn split_an_initial_flight(&self) -> bool {
        self.second_was_initial.load(Ordering::SeqCst)
    }
}

impl Drop for SplitFlightRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn relay(
    front: UdpSocket,
    back: Arc<UdpSocket>,
    delay: Duration,
    second_was_initial: Arc<AtomicBool>,
) {
    let mut client = None;
    let mut from_client = 0u64;
    let mut up = vec![0u8; 65536];
    let mut down = vec![0u8; 65536];
    loop {
        tokio::select! {
            received = front.recv_from(&mut up) => {
                let Ok((len, peer)) = received else { return };
                client = Some(peer);
                from_client += 1;
                let datagram = up[..len].to_vec();
                if from_client == 2 {
                    second_was_initial.store(is_initial(&datagram), Ordering::SeqCst);
                    let back = back.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(delay).await;
                        let _ = back.send(&datagram).await;
                    });
                } else {
                    let _ = back.send(&datagram).await;
                }
            }
            received = back.recv(&mut down) => {
                let Ok(len) = received else { return };
                if let Some(client) = client {
                    let _ = front.send_to(&down[..len], client).await;
                }
            }
        }
    }
}

/// A QUIC v1 long-header packet of type Initial (RFC 9000, 17.2.2).
fn is_initial(datagram: &[u8]) -> bool {
    datagram
        .first()
        .is_some_and(|first| first & 0x80 != 0 && (first >> 4) & 0x03 == 0)
}
