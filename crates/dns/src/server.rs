//! Serving a zone on UDP and TCP, on one port. hickory-server's catalog
//! does the DNS (parsing, answering with authority, NXDOMAIN and NODATA
//! with the SOA, EDNS, truncation to TCP); this module only binds the
//! sockets and hands it the records.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{ensure, Context};
use hickory_server::net::runtime::TokioRuntimeProvider;
use hickory_server::proto::rr::{LowerName, Name};
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, ZoneType};
use hickory_server::Server;
use tokio::net::{TcpListener, UdpSocket};

use crate::zone::ZoneConfig;

/// How long a TCP client may stay silent before the server closes it.
const TCP_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Responses queued per TCP connection (hickory's own tests use 32).
const TCP_RESPONSE_BUFFER: usize = 32;
/// The zone's serial number: the zone never changes while it is served.
const SERIAL: u32 = 1;

/// A running DNS server. Dropping it stops it (its tasks are aborted and
/// its sockets closed).
pub struct DnsServer {
    local_addr: SocketAddr,
    // Held for its drop, which ends the serving tasks.
    _server: Server<Catalog>,
}

impl DnsServer {
    /// Serves `zone` on UDP and TCP at `addr`; port 0 picks a free port,
    /// the same for both. Must be called inside a tokio runtime, which
    /// then runs the server.
    pub async fn start(addr: SocketAddr, zone: &ZoneConfig) -> anyhow::Result<DnsServer> {
        let catalog = catalog(zone)?;
        let udp = UdpSocket::bind(addr)
            .await
            .with_context(|| format!("cannot serve DNS on UDP {addr}; is a DNS server already there? (port 53 needs root)"))?;
        let local_addr = udp.local_addr()?;
        let tcp = TcpListener::bind(local_addr).await.with_context(|| {
            format!("cannot serve DNS on TCP {local_addr}; is a DNS server already there?")
        })?;
        let mut server = Server::new(catalog);
        server.register_socket(udp);
        server.register_listener(tcp, TCP_IDLE_TIMEOUT, TCP_RESPONSE_BUFFER);
        Ok(DnsServer {
            local_addr,
            _server: server,
        })
    }

    /// Where the server listens (UDP and TCP).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

/// A catalog with one authoritative zone at the root, holding `zone`'s
/// records: the server answers for every name.
fn catalog(zone: &ZoneConfig) -> anyhow::Result<Catalog> {
    let mut handler = InMemoryZoneHandler::<TokioRuntimeProvider>::empty(
        Name::root(),
        ZoneType::Primary,
        AxfrPolicy::Deny,
    );
    for record in zone.records()? {
        let described = format!("{} {}", record.name, record.record_type());
        ensure!(
            handler.upsert_mut(record, SERIAL),
            "the DNS zone refused the record {described}"
        );
    }
    let mut catalog = Catalog::new();
    catalog.upsert(LowerName::new(&Name::root()), vec![Arc::new(handler)]);
    Ok(catalog)
}
