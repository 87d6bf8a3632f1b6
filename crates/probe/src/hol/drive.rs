//! The client side of one `probe hol` run, inside the client namespace:
//! the capture, one connection, N parallel GETs on it, and every body
//! read with its time.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use h3lab_client::{Connector, RequestTemplate, Sender};
use h3lab_results::Proto;
use http::{HeaderMap, Method};
use tokio::task::JoinSet;

use super::capture::{self, Capture};
use super::keys::SecretLog;
use super::packets::Captured;
use super::timeline::{Nanos, Read};
use crate::shell::ConnectorParts;

/// What the client needs; moved onto the client namespace's thread.
pub struct HolJob {
    pub proto: Proto,
    pub parts: ConnectorParts,
    pub streams: u32,
    /// Connection set-up timeout.
    pub connect_timeout: Duration,
    /// The whole exchange must end within this.
    pub deadline: Duration,
}

/// One response as the application read it.
#[derive(Debug, Clone)]
pub struct ReadLog {
    /// The transport's stream ID (h2 stream, QUIC stream).
    pub stream_id: u64,
    /// When the request was handed to the connection.
    pub requested_at: Nanos,
    /// Every body read, in order.
    pub reads: Vec<Read>,
}

/// What one run gathered.
pub struct Gathered {
    pub captured: Vec<Captured>,
    /// The server's first application traffic secret.
    pub secret: Vec<u8>,
    pub responses: Vec<ReadLog>,
    /// From connecting to the last body byte read.
    pub wall_s: f64,
    /// The client's thread meanwhile (its runtime runs the whole client
    /// stack: TLS, h2, quinn, h3): CPU seconds, and seconds it was ready
    /// but waited for a CPU.
    pub client_schedstat: Option<(f64, f64)>,
}

impl HolJob {
    /// Runs on a fresh single-threaded runtime (its threads stay in this
    /// thread's namespace).
    pub fn run(self) -> anyhow::Result<Gathered> {
        let capture = Capture::start().context("cannot open the packet capture")?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the tokio runtime")?;
        let secrets = SecretLog::shared();
        let (started, before) = (std::time::Instant::now(), thread_schedstat());
        let responses = runtime.block_on(self.exchange(secrets.clone()));
        let wall_s = started.elapsed().as_secs_f64();
        let client_schedstat = thread_schedstat()
            .zip(before)
            .map(|(after, before)| (after.0 - before.0, after.1 - before.1));
        let captured = capture.finish()?;
        Ok(Gathered {
            captured,
            secret: secrets.server_secret()?,
            responses: responses?,
            wall_s,
            client_schedstat,
        })
    }

    async fn exchange(&self, secrets: Arc<SecretLog>) -> anyhow::Result<Vec<ReadLog>> {
        let mut tls = (*self.parts.tls).clone();
        tls.key_log = secrets;
        let connector = Connector::new(
            self.parts.target.clone(),
            self.parts.addr,
            self.proto,
            Arc::new(tls),
            self.connect_timeout,
        )?;
        let connection = connector
            .connect()
            .await
            .map_err(|err| anyhow::anyhow!("the connection failed: {err}"))?;
        let template = Arc::new(RequestTemplate::new(
            &self.parts.target,
            Method::GET,
            HeaderMap::new(),
            Bytes::new(),
        ));
        let mut tasks = JoinSet::new();
        for _ in 0..self.streams {
            let sender = connection
                .sender
                .try_clone()
                .context("h2 and h3 handles clone")?;
            tasks.spawn(fetch(sender, template.clone()));
        }
        let responses = tokio::time::timeout(self.deadline, collect(&mut tasks))
            .await
            .map_err(|_| {
                anyhow::anyhow!(
                    "the responses did not complete within {:?}; lower --size or --streams, or check the path",
                    self.deadline
                )
            })?;
        connector.close().await;
        responses
    }
}

async fn collect(tasks: &mut JoinSet<anyhow::Result<ReadLog>>) -> anyhow::Result<Vec<ReadLog>> {
    let mut responses = Vec::new();
    while let Some(response) = tasks.join_next().await {
        responses.push(response.context("a request task panicked")??);
    }
    responses.sort_by_key(|log| log.stream_id);
    Ok(responses)
}

/// One GET, its body read chunk by chunk with the time of each chunk.
async fn fetch(mut sender: Sender, template: Arc<RequestTemplate>) -> anyhow::Result<ReadLog> {
    let requested_at = capture::now();
    let mut response = sender.send(&template).await?;
    anyhow::ensure!(
        response.status().is_success(),
        "the server answered {}",
        response.status()
    );
    let stream_id = response
        .stream_id()
        .context("an h2 or h3 response has a stream ID")?;
    let mut reads = Vec::new();
    let mut body_end = 0;
    while let Some(chunk) = response.chunk().await? {
        let at = capture::now();
        body_end += chunk.len() as u64;
        reads.push(Read { body_end, at });
    }
    Ok(ReadLog {
        stream_id,
        requested_at,
        reads,
    })
}

/// The calling thread's CPU seconds and seconds spent ready to run but
/// waiting for a CPU, from /proc/thread-self/schedstat; `None` if it
/// cannot be read.
fn thread_schedstat() -> Option<(f64, f64)> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
    let running = fields.next()??;
    let waiting = fields.next()??;
    Some((running as f64 / 1e9, waiting as f64 / 1e9))
}
