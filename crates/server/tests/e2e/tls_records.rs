//! TLS record sizes as they cross the wire: a TCP relay between client and
//! server reads the record headers the server sends.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use h3lab_server::{Limits, TcpTuning, TlsRecords};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::{connect_tcp, tcp_tls, test_config, Proto};

/// A TLS 1.3 record's header, and what sealing adds to its payload (the
/// inner content type and a 16-byte AEAD tag).
const HEADER: usize = 5;
const SEALING: usize = 17;
const APPLICATION_DATA: u8 = 23;

/// Sizes of the payloads of the encrypted records the server sent while
/// answering a 300 KB h2 request.
async fn record_payloads(tls_records: TlsRecords) -> Vec<usize> {
    let config = h3lab_server::ServerConfig {
        tcp_tuning: TcpTuning {
            tls_records,
            ..TcpTuning::default()
        },
        ..test_config(None, Limits::default())
    };
    let server = h3lab_server::start(config).await.unwrap();
    let (relay, records) = start_relay(server.local_addr()).await;
    let mut client = connect_tcp(relay, tcp_tls(&server, Proto::H2), Proto::H2).await;
    let reply = client.get("/bytes/300000").await;
    assert_eq!(reply.body.len(), 300_000);
    drop(client);
    server.shutdown().await;
    let sizes = records.lock().unwrap().clone();
    sizes
}

#[tokio::test]
async fn dynamic_records_start_at_one_segment_and_grow_to_16_kb() {
    let sizes = record_payloads(TlsRecords::default()).await;
    let small = sizes.iter().take_while(|&&size| size <= 1369).count();
    assert!(small >= 40, "{small} small records first: {sizes:?}");
    assert!(sizes.contains(&4229), "{sizes:?}");
    assert!(sizes.contains(&16384), "{sizes:?}");
}

#[tokio::test]
async fn max_records_send_16_kb_from_the_first_response_record() {
    let sizes = record_payloads(TlsRecords::Max).await;
    assert!(
        sizes.iter().take(10).any(|&size| size == 16384),
        "{sizes:?}"
    );
}

/// Relays one connection to `server`, noting the payload size of every
/// encrypted record the server sends.
async fn start_relay(server: SocketAddr) -> (SocketAddr, Arc<Mutex<Vec<usize>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let records = Arc::new(Mutex::new(Vec::new()));
    let noted = records.clone();
    tokio::spawn(async move {
        let (client, _) = listener.accept().await.unwrap();
        let upstream = TcpStream::connect(server).await.unwrap();
        let (mut client_read, mut client_write) = client.into_split();
        let (mut server_read, mut server_write) = upstream.into_split();
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
            let _ = server_write.shutdown().await;
        });
        let mut stream = Vec::new();
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(read @ 1..) = server_read.read(&mut buffer).await {
            if client_write.write_all(&buffer[..read]).await.is_err() {
                break;
            }
            stream.extend_from_slice(&buffer[..read]);
            take_records(&mut stream, &mut noted.lock().unwrap());
        }
    });
    (addr, records)
}

/// Moves the complete records at the front of `stream` into `sizes`.
fn take_records(stream: &mut Vec<u8>, sizes: &mut Vec<usize>) {
    while stream.len() >= HEADER {
        let length = u16::from_be_bytes([stream[3], stream[4]]) as usize;
        if stream.len() < HEADER + length {
            return;
        }
        if stream[0] == APPLICATION_DATA {
            sizes.push(length - SEALING);
        }
        stream.drain(..HEADER + length);
    }
}
