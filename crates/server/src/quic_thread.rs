//! QUIC's own thread: the endpoint, every connection and every HTTP/3
//! request task run on one current-thread runtime.
//!
//! Why: quinn splits a connection into an endpoint driver, a connection
//! driver and a task per request, which wake each other for every batch
//! of datagrams. On tokio's multi-thread runtime each of those wake-ups
//! can cross to the other worker (a futex wake and a context switch);
//! profiles of a 1 GB download put them at a third of the server's
//! wake-ups (docs/performance.md). One event loop for QUIC, as h2o and
//! nginx run one per worker, keeps them on one core. TCP (h1, h2) keeps
//! the multi-thread runtime, where the kernel does its per-packet work.

use std::thread::JoinHandle;

use anyhow::{Context, Result};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// The thread and a handle to spawn on its runtime. Dropping it stops
/// the runtime, which drops whatever still runs there, and joins the
/// thread.
pub struct QuicThread {
    handle: Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl QuicThread {
    pub fn start() -> Result<QuicThread> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the QUIC runtime")?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        // QUIC logs where the code that started the server logs, a
        // test's scoped subscriber included.
        let logging = tracing::dispatcher::get_default(|current| current.clone());
        let thread = std::thread::Builder::new()
            .name("h3lab-quic".into())
            .spawn(move || {
                let _logging = tracing::dispatcher::set_default(&logging);
                runtime.block_on(async {
                    let _ = stopped.await;
                })
            })
            .context("cannot start the QUIC thread")?;
        Ok(QuicThread {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The runtime to create the endpoint in (its socket and driver
    /// belong to the runtime current at creation) and to spawn on.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }
}

impl Drop for QuicThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
