//! `--qlog DIR`: one qlog file per QUIC connection, written by quinn's own
//! qlog support (JSON-SEQ, `.sqlog`, which qvis loads).
//!
//! quinn takes a qlog stream per transport configuration, so each
//! connection is accepted with a configuration of its own that carries a
//! fresh stream to a new file.

use std::fs::File;
use std::io::BufWriter;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use quinn::{QlogConfig, TransportConfig};

/// Where qlog files go, and how to build each connection's configuration.
pub struct QlogDir {
    dir: PathBuf,
    server: quinn::ServerConfig,
    transport: Box<dyn Fn() -> Result<TransportConfig> + Send + Sync>,
    connections: AtomicU64,
}

impl QlogDir {
    /// `server` is the endpoint's configuration; `transport` builds its
    /// transport settings afresh (quinn's `TransportConfig` cannot be cloned).
    pub fn new(
        dir: PathBuf,
        server: quinn::ServerConfig,
        transport: impl Fn() -> Result<TransportConfig> + Send + Sync + 'static,
    ) -> Result<Self> {
        std::fs::create_dir_all(&dir).with_context(|| {
            format!(
                "cannot create the qlog directory {}; pass a writable --qlog DIR",
                dir.display()
            )
        })?;
        Ok(Self {
            dir,
            server,
            transport: Box::new(transport),
            connections: AtomicU64::new(0),
        })
    }

    /// The configuration to accept the connection from `peer` with: the
    /// endpoint's, logging to `server-N-PEER.sqlog`.
    pub fn config_for(&self, peer: SocketAddr) -> Result<Arc<quinn::ServerConfig>> {
        let n = self.connections.fetch_add(1, Ordering::Relaxed) + 1;
        let path = self.dir.join(format!(
            "server-{n:06}-{}.sqlog",
            peer.to_string().replace(':', "_")
        ));
        let file = File::create(&path)
            .with_context(|| format!("cannot create the qlog file {}", path.display()))?;
        let mut qlog = QlogConfig::default();
        qlog.writer(Box::new(BufWriter::new(file)))
            .title(Some(format!("h3lab serve: connection {n} from {peer}")));
        let mut transport = (self.transport)()?;
        transport.qlog_stream(qlog.into_stream());
        let mut server = self.server.clone();
        server.transport_config(Arc::new(transport));
        Ok(Arc::new(server))
    }
}
