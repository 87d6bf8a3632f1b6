//! The header blocks the server counts, against what the client sent: a
//! load with a browser's headers, one connection per protocol. h2's blocks
//! must equal what an independent HPACK encoder (httlib-hpack) makes of the
//! same headers when told to index what h2 indexes.

use std::io::Write;
use std::time::Duration;

use bytes::Bytes;
use h3lab_client::{RequestNumbers, RequestTemplate, Target, TlsOptions};
use h3lab_load::{CancellationToken, LoadConfig};
use h3lab_results::bench::{BlockTally, HeaderBlocks};
use h3lab_results::server_output::metric_samples;
use h3lab_results::Proto;
use h3lab_server::{Limits, RunningServer};
use httlib_hpack::Encoder;
use http::{HeaderMap, Method};

use crate::common::start;

const REQUESTS: u64 = 10;
const PATH: &str = "/bytes/1000";

/// The server's count of each protocol's blocks, after one load each of
/// `REQUESTS` requests with a browser's headers over one connection.
async fn blocks_after_loads(protocols: &[Proto]) -> (RunningServer, Vec<HeaderBlocks>) {
    let server = start(None, Limits::default()).await;
    let mut ca = tempfile::NamedTempFile::new().unwrap();
    ca.write_all(server.cert_pem().unwrap().as_bytes()).unwrap();
    let mut counted = Vec::new();
    for &proto in protocols {
        let before = HeaderBlocks::from_metrics(Some(&metric_samples(&server.metrics_text())));
        let config = load_config(&server, ca.path(), proto);
        let report = tokio::task::spawn_blocking(move || {
            h3lab_load::run(&config, CancellationToken::new()).unwrap()
        })
        .await
        .unwrap();
        assert_eq!(
            report.failed, 0,
            "{proto}: every request succeeds\n{report}"
        );
        assert_eq!(report.completed, REQUESTS, "{proto}\n{report}");
        let after = HeaderBlocks::from_metrics(Some(&metric_samples(&server.metrics_text())));
        counted.push(since(
            before.unwrap_or_default(),
            after.expect("blocks are counted"),
        ));
    }
    (server, counted)
}

fn load_config(server: &RunningServer, ca: &std::path::Path, proto: Proto) -> LoadConfig {
    let url = format!("https://127.0.0.1:{}{PATH}", server.local_addr().port());
    let mut config = LoadConfig::new(Target::parse(&url).unwrap());
    config.proto = proto;
    config.connections = 1;
    config.threads = 1;
    config.requests = Some(REQUESTS);
    config.browser_headers = true;
    config.tls = TlsOptions {
        insecure: false,
        ca_file: Some(ca.to_path_buf()),
    };
    config.request_timeout = Duration::from_secs(10);
    config
}

/// The blocks counted between two readings.
fn since(before: HeaderBlocks, after: HeaderBlocks) -> HeaderBlocks {
    let minus = |a: BlockTally, b: BlockTally| BlockTally {
        blocks: a.blocks - b.blocks,
        bytes: a.bytes - b.bytes,
    };
    HeaderBlocks {
        request_first: minus(after.request_first, before.request_first),
        request_later: minus(after.request_later, before.request_later),
        response_first: minus(after.response_first, before.response_first),
        response_later: minus(after.response_later, before.response_later),
    }
}

/// h2's own rule (`Header::skip_value_index` in h2 0.4): these values are
/// sent as literals that are not indexed, so they never enter the table.
const NOT_INDEXED: [&str; 10] = [
    ":path",
    "age",
    "authorization",
    "content-length",
    "etag",
    "if-modified-since",
    "if-none-match",
    "location",
    "cookie",
    "set-cookie",
];

/// The HPACK blocks of the load's requests in order, from httlib-hpack:
/// pseudo-headers in h2's order, then the template's headers; every string
/// Huffman-coded, as h2 codes them.
fn independent_hpack_blocks(authority: &str) -> Vec<u64> {
    let target = Target::parse(&format!("https://{authority}{PATH}")).unwrap();
    let template = RequestTemplate::new(&target, Method::GET, HeaderMap::new(), Bytes::new())
        .with_browser_headers(&RequestNumbers::default());
    let mut encoder = Encoder::with_dynamic_size(4096);
    (0..REQUESTS)
        .map(|_| {
            let headers = template.next_headers();
            let pseudo = [
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", authority),
                (":path", PATH),
            ];
            let fields = pseudo.into_iter().chain(
                headers
                    .iter()
                    .map(|(name, value)| (name.as_str(), value.to_str().unwrap())),
            );
            let mut block = Vec::new();
            for (name, value) in fields {
                let mut flags =
                    Encoder::HUFFMAN_NAME | Encoder::HUFFMAN_VALUE | Encoder::BEST_FORMAT;
                if !NOT_INDEXED.contains(&name) {
                    flags |= Encoder::WITH_INDEXING;
                }
                let field = (name.as_bytes().to_vec(), value.as_bytes().to_vec(), flags);
                encoder.encode(field, &mut block).unwrap();
            }
            block.len() as u64
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_request_blocks_are_what_an_independent_hpack_encoder_makes() {
    let (server, counted) = blocks_after_loads(&[Proto::H2]).await;
    let authority = format!("127.0.0.1:{}", server.local_addr().port());
    let expected = independent_hpack_blocks(&authority);
    let h2 = counted[0];
    assert_eq!(
        h2.request_first,
        BlockTally {
            blocks: 1,
            bytes: expected[0]
        },
        "the first request's HPACK block"
    );
    assert_eq!(
        h2.request_later,
        BlockTally {
            blocks: REQUESTS - 1,
            bytes: expected[1..].iter().sum()
        },
        "the later requests' HPACK blocks (each: {:?})",
        &expected[1..]
    );
    // The table pays: later requests send indices for what the first sent.
    assert!(
        h2.request_later.mean().unwrap() < expected[0] as f64 - 100.0,
        "{h2:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_protocol_counts_one_block_per_request_and_response() {
    let protocols = [Proto::H1, Proto::H2, Proto::H3];
    let (_server, counted) = blocks_after_loads(&protocols).await;
    for (proto, blocks) in protocols.iter().zip(&counted) {
        for (first, later) in [
            (blocks.request_first, blocks.request_later),
            (blocks.response_first, blocks.response_later),
        ] {
            assert_eq!(first.blocks, 1, "{proto}: {blocks:?}");
            assert_eq!(later.blocks, REQUESTS - 1, "{proto}: {blocks:?}");
        }
        // A browser's request headers: the 1 kB cookie alone is over 700
        // bytes Huffman-coded.
        assert!(blocks.request_first.bytes > 700, "{proto}: {blocks:?}");
    }
    // HTTP/1.1 sends the same text every time (the changing ids keep
    // their length): no table, no saving.
    let h1 = counted[0];
    assert_eq!(
        h1.request_later.bytes,
        h1.request_first.bytes * (REQUESTS - 1),
        "{h1:?}"
    );
}
