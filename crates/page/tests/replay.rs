//! A captured page replayed: `site from-har` on a Chrome HAR of three
//! origins, an in-process `h3lab-server` answering for each origin on an
//! address of its own (127.0.0.10-12, the server on 0.0.0.0), and the
//! built-in loader reaching them through `--resolve` rules over h1, h2 and
//! h3. Every replayed response arrives with the HAR's URL and status and
//! its recorded size, over the connections a browser would open.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::path::Path;
use std::time::Duration;

use h3lab_client::{ResolveRule, TlsOptions};
use h3lab_page::loader::{load_page, LoaderOptions};
use h3lab_results::{Proto, Visit};
use h3lab_server::{ServerConfig, TlsSource};
use h3lab_site::har::{import, ImportOptions};
use h3lab_site::replay::{Replay, Think};

fn chrome_fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../site/tests/fixtures/har/chrome.har")
}

#[test]
fn a_replayed_har_loads_every_origin_from_its_own_address_over_each_protocol() {
    let site = tempfile::tempdir().unwrap();
    let options = ImportOptions {
        think: Think::None,
        page: None,
        keep_first_duplicate: false,
    };
    import(&chrome_fixture(), site.path(), &options).unwrap();
    let replay = Replay::read(site.path()).unwrap();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let config = ServerConfig {
        listen: SocketAddr::from(([0, 0, 0, 0], 0)),
        tls: TlsSource::SelfSigned,
        site: Some(site.path().to_path_buf()),
        ..ServerConfig::default()
    };
    let server = runtime.block_on(h3lab_server::start(config)).unwrap();
    let certs = tempfile::tempdir().unwrap();
    let ca = certs.path().join("cert.pem");
    std::fs::write(&ca, server.cert_pem().unwrap()).unwrap();
    let port = server.local_addr().port();
    let resolve: Vec<ResolveRule> = (replay.origins.iter().enumerate())
        .map(|(i, origin)| {
            let rule = format!("{}:443:127.0.0.{}:{port}", origin.host, 10 + i);
            rule.parse().unwrap()
        })
        .collect();

    let recorded_errors = replay.recorded_errors();
    assert_eq!(recorded_errors, ["https://img.example.test/missing.png"]);
    for proto in [Proto::H1, Proto::H2, Proto::H3] {
        let options = LoaderOptions {
            proto,
            tls: TlsOptions {
                insecure: false,
                ca_file: Some(ca.clone()),
            },
            visit: Visit::Cold,
            loads: 1,
            connect_timeout: Duration::from_secs(10),
            load_timeout: Duration::from_secs(60),
            h3_discovery: None,
            resolve: resolve.clone(),
            recorded_errors: recorded_errors.clone(),
        };
        let report = load_page(&replay.page, &options, &mut |_| ControlFlow::Continue(())).unwrap();
        let load = &report.loads[0];
        let fetched: BTreeMap<&str, _> =
            load.resources.iter().map(|r| (r.url.as_str(), r)).collect();
        assert_eq!(
            fetched.len(),
            replay.responses.len(),
            "{proto}: {:?}",
            fetched.keys()
        );
        for recorded in &replay.responses {
            let row = fetched[recorded.url.as_str()];
            assert_eq!(row.status, recorded.status, "{proto} {}", recorded.url);
            assert_eq!(row.bytes, recorded.body_bytes, "{proto} {}", recorded.url);
            assert_eq!(row.protocol.as_deref(), Some(proto.alpn_name()), "{proto}");
            if let Some(on_the_wire) = recorded.recorded_body_bytes {
                let off = row.bytes.abs_diff(on_the_wire) as f64 / on_the_wire as f64;
                assert!(
                    off <= 0.05,
                    "{proto} {}: {} B against {on_the_wire} B",
                    recorded.url,
                    row.bytes
                );
            }
        }
        let mut connections: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
        for row in &load.resources {
            let host = url::Url::parse(&row.url)
                .unwrap()
                .host_str()
                .unwrap()
                .to_string();
            connections.entry(host).or_default().extend(row.connection);
        }
        assert_eq!(connections.len(), 3, "{proto}: {connections:?}");
        for (host, ids) in &connections {
            match proto {
                Proto::H1 => assert!((1..=6).contains(&ids.len()), "{proto} {host}: {ids:?}"),
                _ => assert_eq!(ids.len(), 1, "{proto} {host}: {ids:?}"),
            }
        }
        let hosts_apart = connections
            .values()
            .flatten()
            .collect::<BTreeSet<_>>()
            .len();
        assert_eq!(
            hosts_apart,
            connections.values().map(BTreeSet::len).sum::<usize>()
        );
    }
    let served = server.requests_served();
    assert!(
        served.total() >= 3 * replay.responses.len() as u64,
        "{served:?}"
    );
    drop(server);
}
