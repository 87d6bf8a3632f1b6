//! What a cell's connections carried besides its payload: the header
//! blocks `h3lab serve` received and sent, and the bytes on the wire per
//! byte of payload, from the server's metrics and the path's counts.

use serde::{Deserialize, Serialize};

use super::LinkRecord;

/// `cells[].header_blocks`: the header blocks `h3lab serve` received
/// (requests) and sent (responses) over TLS, as the connection carried
/// them: an HTTP/1.1 message head, an HPACK block (h2), a QPACK block
/// (h3). The first block of a connection in each direction is apart from
/// later ones, since a dynamic table pays off only after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeaderBlocks {
    /// Each connection's first request block.
    pub request_first: BlockTally,
    /// Every other request block.
    pub request_later: BlockTally,
    /// Each connection's first response block.
    pub response_first: BlockTally,
    /// Every other response block.
    pub response_later: BlockTally,
}

/// Some header blocks: how many, and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockTally {
    /// Blocks.
    pub blocks: u64,
    /// Their bytes, on the connection.
    pub bytes: u64,
}

impl BlockTally {
    /// Bytes per block; `None` without a block.
    pub fn mean(&self) -> Option<f64> {
        (self.blocks > 0).then(|| self.bytes as f64 / self.blocks as f64)
    }
}

impl std::ops::Add for BlockTally {
    type Output = BlockTally;

    fn add(self, other: BlockTally) -> BlockTally {
        BlockTally {
            blocks: self.blocks + other.blocks,
            bytes: self.bytes + other.bytes,
        }
    }
}

/// Two cells' blocks added up: those of several repetitions.
impl std::ops::Add for HeaderBlocks {
    type Output = HeaderBlocks;

    fn add(self, other: HeaderBlocks) -> HeaderBlocks {
        HeaderBlocks {
            request_first: self.request_first + other.request_first,
            request_later: self.request_later + other.request_later,
            response_first: self.response_first + other.response_first,
            response_later: self.response_later + other.response_later,
        }
    }
}

impl HeaderBlocks {
    /// From `h3lab serve`'s `h3lab_http_header_blocks_total` and
    /// `h3lab_http_header_block_bytes_total`, summed over protocols;
    /// `None` when the server does not count them.
    pub fn from_metrics(
        metrics: Option<&std::collections::BTreeMap<String, f64>>,
    ) -> Option<HeaderBlocks> {
        let metrics = metrics?;
        metric_sum(metrics, "h3lab_http_header_blocks_total", &[])?;
        let tally = |direction: &str, position: &str| {
            let labels = [
                format!("direction=\"{direction}\""),
                format!("position=\"{position}\""),
            ];
            let sum = |name| metric_sum(metrics, name, &labels).unwrap_or(0);
            BlockTally {
                blocks: sum("h3lab_http_header_blocks_total"),
                bytes: sum("h3lab_http_header_block_bytes_total"),
            }
        };
        Some(HeaderBlocks {
            request_first: tally("request", "first"),
            request_later: tally("request", "later"),
            response_first: tally("response", "first"),
            response_later: tally("response", "later"),
        })
    }
}

/// `cells[].wire`: the bytes a cell put on the emulated link, from the
/// link's own counts, against the response bodies and requests the server
/// counted, warm-up included, so both cover the same traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireCost {
    /// IP bytes the client side sent (`link.up.bytes_in`).
    pub up_bytes: u64,
    /// IP bytes the server side sent (`link.down.bytes_in`).
    pub down_bytes: u64,
    /// Of those, bytes the link dropped (loss, a full queue, a UDP
    /// policy), which their senders had to send again: client side.
    pub up_dropped_bytes: u64,
    /// The same, server side.
    pub down_dropped_bytes: u64,
    /// Requests the server answered.
    pub requests: u64,
    /// Response body bytes the server handed to its transport.
    pub body_bytes: u64,
}

/// Two cells' counts added up: the cost of several repetitions.
impl std::ops::Add for WireCost {
    type Output = WireCost;

    fn add(self, other: WireCost) -> WireCost {
        WireCost {
            up_bytes: self.up_bytes + other.up_bytes,
            down_bytes: self.down_bytes + other.down_bytes,
            up_dropped_bytes: self.up_dropped_bytes + other.up_dropped_bytes,
            down_dropped_bytes: self.down_dropped_bytes + other.down_dropped_bytes,
            requests: self.requests + other.requests,
            body_bytes: self.body_bytes + other.body_bytes,
        }
    }
}

impl WireCost {
    /// IP bytes both ways.
    pub fn total_bytes(&self) -> u64 {
        self.up_bytes + self.down_bytes
    }

    /// Everything but the response bodies: request and response headers,
    /// framing, TLS records, QUIC, TCP and IP headers, acknowledgements,
    /// handshakes and what was sent again.
    pub fn overhead_bytes(&self) -> u64 {
        self.total_bytes().saturating_sub(self.body_bytes)
    }

    /// Bytes both ways per request; `None` without requests.
    pub fn bytes_per_request(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.total_bytes() as f64 / self.requests as f64)
    }

    /// Overhead bytes per request; `None` without requests.
    pub fn overhead_per_request(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.overhead_bytes() as f64 / self.requests as f64)
    }

    /// Overhead as a share of the body bytes; `None` without a body.
    pub fn overhead_share(&self) -> Option<f64> {
        (self.body_bytes > 0).then(|| self.overhead_bytes() as f64 / self.body_bytes as f64)
    }

    /// Bytes dropped and sent again, both ways, per MB (10^6 B) of
    /// response bodies; `None` without a body.
    pub fn resent_per_mb(&self) -> Option<f64> {
        let dropped = self.up_dropped_bytes + self.down_dropped_bytes;
        (self.body_bytes > 0).then(|| dropped as f64 * 1e6 / self.body_bytes as f64)
    }

    /// From a cell's link record and the server's metrics (`h3lab serve`'s
    /// `h3lab_http_requests_total` and `h3lab_http_response_body_bytes_total`,
    /// summed over protocols and statuses); `None` without either.
    pub fn from_counts(
        link: Option<&LinkRecord>,
        metrics: Option<&std::collections::BTreeMap<String, f64>>,
    ) -> Option<WireCost> {
        let (link, metrics) = (link?, metrics?);
        let sum = |name| metric_sum(metrics, name, &[]);
        Some(WireCost {
            up_bytes: link.up.bytes_in,
            down_bytes: link.down.bytes_in,
            up_dropped_bytes: link.up.bytes_dropped,
            down_dropped_bytes: link.down.bytes_dropped,
            requests: sum("h3lab_http_requests_total")?,
            body_bytes: sum("h3lab_http_response_body_bytes_total").unwrap_or(0),
        })
    }
}

/// The sum of the server's `name` series whose labels include each of
/// `labels` (e.g. `direction="request"`); `None` when it has no `name`
/// series at all, so that an uncounted figure is unknown, not 0.
fn metric_sum(
    metrics: &std::collections::BTreeMap<String, f64>,
    name: &str,
    labels: &[String],
) -> Option<u64> {
    let mut named = metrics
        .iter()
        .filter(|(key, _)| key.split('{').next() == Some(name))
        .peekable();
    named.peek()?;
    let labelled = named.filter(|(key, _)| labels.iter().all(|label| key.contains(label.as_str())));
    Some(labelled.map(|(_, value)| *value as u64).sum())
}
