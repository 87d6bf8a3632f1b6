//! `DnsResolver` against h3lab's own DNS server on loopback: the record
//! a path publishes is the one the client reads back, and a zone without
//! one leaves HTTP/3 unknown.

use std::net::{Ipv4Addr, SocketAddr};

use h3lab_client::DnsResolver;
use h3lab_dns::{DnsServer, Host, Publish, ZoneConfig};

async fn server(publish: Publish) -> DnsServer {
    let zone = ZoneConfig {
        hosts: vec![Host {
            name: "www.site.test".into(),
            address: Ipv4Addr::new(198, 18, 0, 10),
            publish,
        }],
        origin_port: 443,
    };
    // An address of its own on loopback, apart from other tests' servers.
    let addr = SocketAddr::from((Ipv4Addr::new(127, 0, 0, 54), 0));
    DnsServer::start(addr, &zone).await.unwrap()
}

#[tokio::test]
async fn a_published_record_gives_its_alpn_ids_in_order() {
    let publish = Publish::WithHttps {
        alpn: vec!["h3".into(), "h2".into()],
        port: None,
    };
    let server = server(publish).await;
    let dns = DnsResolver::at(server.local_addr()).unwrap();
    let record = dns
        .https_record("www.site.test", 443)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.alpn, ["h3", "h2"]);
    assert!(record.lists_h3());
    assert_eq!(record.port, None);
    assert!(record.ttl.as_secs() <= 60, "{:?}", record.ttl);
    let address = dns.address("www.site.test").await.unwrap();
    assert_eq!(address, Ipv4Addr::new(198, 18, 0, 10));
}

#[tokio::test]
async fn without_a_record_nothing_is_known() {
    let server = server(Publish::ARecordsOnly).await;
    let dns = DnsResolver::at(server.local_addr()).unwrap();
    assert_eq!(dns.https_record("www.site.test", 443).await.unwrap(), None);
    assert_eq!(dns.https_record("other.test", 443).await.unwrap(), None);
    let unknown = dns.address("other.test").await.unwrap_err();
    assert!(
        unknown.to_string().contains("cannot resolve `other.test`"),
        "{unknown}"
    );
}
