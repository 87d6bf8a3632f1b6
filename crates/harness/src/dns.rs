//! A path's DNS server: `h3lab-dns` on a thread of its own in the server
//! namespace, so the client namespace asks it across the emulated link as
//! a browser asks its resolver.

use std::net::SocketAddr;
use std::sync::mpsc;
use std::thread::JoinHandle;

use anyhow::{anyhow, Context};
use h3lab_dns::{DnsServer, ZoneConfig};
use linkem::EmulatedPath;
use tokio::sync::oneshot;

/// The name a path's DNS server gives the site, which every certificate
/// h3lab makes for a server covers.
pub const SITE_HOST: &str = "www.site.test";

/// DNS's port: `/etc/resolv.conf` names no other.
const DNS_PORT: u16 = 53;

/// A DNS server at the server end of a path. Dropping it stops the server
/// and waits for its thread, so no socket outlives it.
pub struct PathDns {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl PathDns {
    /// Serves `zone` on the server's address at DNS's port, which the
    /// client namespace's `/etc/resolv.conf` names, once it listens.
    pub fn start(path: &EmulatedPath, zone: ZoneConfig) -> anyhow::Result<PathDns> {
        let listen = SocketAddr::from((path.server_ip(), DNS_PORT));
        let (ready, started) = mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = path.spawn_in_server(move || {
            let serve = async {
                let server = DnsServer::start(listen, &zone).await?;
                let _ = ready.send(Ok(server.local_addr()));
                // Serves until stopped, then drops the server.
                let _ = stopped.await;
                anyhow::Ok(())
            };
            let outcome = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("cannot start the DNS server's runtime")
                .and_then(|runtime| runtime.block_on(serve));
            if let Err(err) = outcome {
                let _ = ready.send(Err(err));
            }
        })?;
        let addr = started
            .recv()
            .map_err(|_| anyhow!("the DNS server's thread ended before it served"))
            .and_then(|served| served)
            .with_context(|| format!("cannot start the path's DNS server on {listen}"))?;
        Ok(PathDns {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Where it listens, on UDP and TCP.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for PathDns {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
