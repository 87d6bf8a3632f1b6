//! The DNS server at the server end of an emulated path, asked by a
//! program in the client namespace through the system resolver
//! (`/etc/resolv.conf`, as glibc and Chromium read it). Needs root: it
//! skips without it, and fails in CI.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::mpsc;

use h3lab_dns::{DnsServer, Host, Publish, ZoneConfig};
use linkem::run::{Placement, Side};
use linkem::{EmulatedPath, LinkSettings};

/// The port resolv.conf's name servers are asked on.
const DNS_PORT: u16 = 53;

#[test]
fn a_client_namespace_resolves_the_site_through_the_paths_dns_server() {
    if !h3lab_testenv::root() {
        return;
    }
    let mut path = EmulatedPath::start(LinkSettings::default().build()).unwrap();
    path.set_client_resolver(path.server_ip()).unwrap();
    let zone = ZoneConfig {
        hosts: vec![Host {
            name: "www.site.test".into(),
            address: Ipv4Addr::new(198, 18, 0, 10),
            publish: Publish::ARecordsOnly,
        }],
        origin_port: 443,
    };
    let listen = SocketAddr::from((path.server_ip(), DNS_PORT));
    let (ready, started) = mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let dns = path
        .spawn_in_server(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let server = DnsServer::start(listen, &zone).await.unwrap();
                ready.send(()).unwrap();
                // Serves until the test is done, then drops the server.
                let _ = stopped.await;
                drop(server);
            })
        })
        .unwrap();
    started.recv().unwrap();
    let output = Placement::Emulated(&path)
        .command(Side::Client, "getent")
        .args(["ahostsv4", "www.site.test"])
        .output()
        .unwrap();
    let unknown = Placement::Emulated(&path)
        .command(Side::Client, "getent")
        .args(["ahostsv4", "other.test"])
        .output()
        .unwrap();
    stop.send(()).unwrap();
    dns.join().unwrap();
    let answer = String::from_utf8_lossy(&output.stdout);
    assert!(answer.starts_with("198.18.0.10 "), "{output:?}");
    // getent's exit code 2: the key was not found.
    assert_eq!(unknown.status.code(), Some(2), "{unknown:?}");
}
