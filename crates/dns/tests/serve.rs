//! The DNS server on loopback, asked by hickory-resolver over UDP and TCP:
//! what a browser's resolver in the client namespace will be told.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use h3lab_dns::{DnsServer, Host, Publish, ZoneConfig};
use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::NetError;
use hickory_resolver::proto::rr::rdata::svcb::SvcParamValue;
use hickory_resolver::proto::rr::{RData, RecordType};
use hickory_resolver::{Resolver, TokioResolver};

/// A loopback address of its own, so a parallel test's server is not asked.
const SERVER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 53);

fn zone(publish: Publish) -> ZoneConfig {
    ZoneConfig {
        hosts: vec![Host {
            name: "www.site.test".into(),
            address: Ipv4Addr::new(198, 18, 0, 10),
            publish,
        }],
        origin_port: 443,
    }
}

/// A resolver that asks only `server`, over `connection` (UDP or TCP).
fn resolver(server: SocketAddr, mut connection: ConnectionConfig) -> TokioResolver {
    connection.port = server.port();
    let name_server = NameServerConfig::new(server.ip(), true, vec![connection]);
    let config = ResolverConfig::from_parts(None, vec![], vec![name_server]);
    Resolver::builder_with_config(config, TokioRuntimeProvider::default())
        .build()
        .unwrap()
}

async fn lookup(
    resolver: &TokioResolver,
    name: &str,
    kind: RecordType,
) -> Result<Vec<RData>, NetError> {
    let lookup = resolver.lookup(name, kind).await?;
    Ok(lookup
        .answers()
        .iter()
        .map(|record| record.data.clone())
        .collect())
}

fn alpn_ids(data: &RData) -> Vec<String> {
    let RData::HTTPS(https) = data else {
        panic!("not an HTTPS record: {data:?}")
    };
    let (priority, target) = (https.0.svc_priority, &https.0.target_name);
    assert_eq!((priority, target.to_string()), (1, ".".to_string()));
    https
        .0
        .svc_params
        .iter()
        .find_map(|(_, value)| match value {
            SvcParamValue::Alpn(alpn) => Some(alpn.0.clone()),
            _ => None,
        })
        .expect("an alpn parameter")
}

#[tokio::test]
async fn a_and_https_records_are_answered_over_udp_and_tcp() {
    let publish = Publish::WithHttps {
        alpn: vec!["h3".into(), "h2".into()],
        port: None,
    };
    let server = DnsServer::start(SocketAddr::new(IpAddr::V4(SERVER), 0), &zone(publish))
        .await
        .unwrap();
    for connection in [ConnectionConfig::udp(), ConnectionConfig::tcp()] {
        let resolver = resolver(server.local_addr(), connection);
        let addresses = lookup(&resolver, "WWW.site.test.", RecordType::A).await;
        assert_eq!(
            addresses.unwrap(),
            [RData::A(Ipv4Addr::new(198, 18, 0, 10).into())]
        );
        let https = lookup(&resolver, "www.site.test.", RecordType::HTTPS)
            .await
            .unwrap();
        assert_eq!(https.len(), 1, "{https:?}");
        assert_eq!(alpn_ids(&https[0]), ["h3", "h2"]);
    }
}

#[tokio::test]
async fn a_records_only_leave_the_https_question_empty_and_other_names_unknown() {
    let server = DnsServer::start(
        SocketAddr::new(IpAddr::V4(SERVER), 0),
        &zone(Publish::ARecordsOnly),
    )
    .await
    .unwrap();
    let resolver = resolver(server.local_addr(), ConnectionConfig::udp());
    let addresses = lookup(&resolver, "www.site.test.", RecordType::A).await;
    assert_eq!(addresses.unwrap().len(), 1);
    // The name exists: no HTTPS record (NODATA), not NXDOMAIN.
    let https = lookup(&resolver, "www.site.test.", RecordType::HTTPS)
        .await
        .unwrap_err();
    assert!(
        https.is_no_records_found() && !https.is_nx_domain(),
        "{https}"
    );
    let unknown = lookup(&resolver, "other.test.", RecordType::A)
        .await
        .unwrap_err();
    assert!(unknown.is_nx_domain(), "{unknown}");
}

#[tokio::test]
async fn a_zone_that_cannot_be_served_is_refused_before_binding() {
    let mut bad = zone(Publish::ARecordsOnly);
    bad.hosts.clear();
    let error = DnsServer::start(SocketAddr::new(IpAddr::V4(SERVER), 0), &bad)
        .await
        .err()
        .expect("an empty zone is refused");
    assert!(
        error.to_string().contains("at least one host name"),
        "{error}"
    );
}
