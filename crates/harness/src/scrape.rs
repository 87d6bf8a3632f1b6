//! Reading the built-in server's Prometheus metrics after a run (a bench
//! cell's, or a probe's), from the server's side of the path.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{bail, Context};
use h3lab_results::server_output::metric_samples;
use linkem::run::Placement;

use crate::End;

const TIMEOUT: Duration = Duration::from_secs(5);

/// `GET /metrics` from the server's side of the path (its own loopback), as
/// `name{labels}` → value without histogram buckets.
pub fn scrape(
    placement: &Placement<'_>,
    addr: SocketAddr,
) -> anyhow::Result<BTreeMap<String, f64>> {
    scrape_at(placement, End::Server, addr)
}

/// [`scrape`] of a server at `end` (an origin behind an edge, on its own
/// loopback).
pub fn scrape_at(
    placement: &Placement<'_>,
    end: End,
    addr: SocketAddr,
) -> anyhow::Result<BTreeMap<String, f64>> {
    let text = end.run_at(placement, move || get_metrics(addr))??;
    Ok(metric_samples(&text))
}

fn get_metrics(addr: SocketAddr) -> anyhow::Result<String> {
    let context = || format!("cannot read the server's metrics at http://{addr}/metrics");
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT).with_context(context)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    let request = format!("GET /metrics HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).with_context(context)?;
    let mut response = String::new();
    stream.read_to_string(&mut response).with_context(context)?;
    let Some((head, body)) = response.split_once("\r\n\r\n") else {
        bail!("{}: no complete HTTP response", context());
    };
    if !head.starts_with("HTTP/1.1 200") {
        bail!("{}: {}", context(), head.lines().next().unwrap_or(head));
    }
    Ok(body.to_string())
}
