//! Name resolution as a browser on the path does it: a host's address,
//! and beside it the host's DNS `HTTPS` record (RFC 9460), which names the
//! ALPN ids its origin speaks before any connection is made. Chromium asks
//! for both at once; with `h3` in the record it tries QUIC from its first
//! connection, and without one it learns of HTTP/3 from `Alt-Svc` only.
//!
//! Plain DNS over UDP (TCP when an answer is truncated), to one given
//! server or to the system's (`/etc/resolv.conf`). An origin on port 443
//! asks for the host's own name, any other port for `_PORT._https.HOST`
//! (RFC 9460 9.1). `AliasMode` records are not followed.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use hickory_resolver::config::{
    ConnectionConfig, LookupIpStrategy, NameServerConfig, ResolverConfig,
};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::rdata::svcb::{SvcParamValue, SVCB};
use hickory_resolver::proto::rr::{RData, Record, RecordType};
use hickory_resolver::{Resolver, ResolverBuilder, TokioResolver};

use h3lab_results::ErrorKind;

use crate::error::ClientError;
use crate::target::{ResolveRule, Target};

/// Which DNS server a client asks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NameServer {
    /// The system's resolver: addresses as the C library finds them
    /// (`/etc/hosts`, then `/etc/resolv.conf`'s servers), `HTTPS` records
    /// from `/etc/resolv.conf`'s servers.
    #[default]
    System,
    /// One DNS server, such as an emulated path's, for both.
    At(SocketAddr),
}

/// Finds origins as a browser does: an address, and beside it, when
/// asked, the origin's `HTTPS` record.
pub struct OriginLookup {
    /// Asked for addresses; `None` is the system's resolver.
    addresses: Option<DnsResolver>,
    /// Asked for `HTTPS` records; `None` asks for none.
    https: Option<DnsResolver>,
}

impl OriginLookup {
    /// Asks `server`, and for `HTTPS` records only when `with_https`.
    /// Must be called inside a tokio runtime.
    pub fn new(server: NameServer, with_https: bool) -> Result<OriginLookup, ClientError> {
        Ok(OriginLookup {
            addresses: match server {
                NameServer::System => None,
                NameServer::At(addr) => Some(DnsResolver::at(addr)?),
            },
            https: match (with_https, server) {
                (false, _) => None,
                (true, NameServer::At(addr)) => Some(DnsResolver::at(addr)?),
                // Without a readable /etc/resolv.conf no record can be
                // asked for: none is known, as for a browser without one.
                (true, NameServer::System) => DnsResolver::system().ok(),
            },
        })
    }

    /// Where `target` is, and its origin's `HTTPS` record, asked at once
    /// as Chromium asks them. A `--resolve` rule, an IP address or
    /// `localhost` needs no DNS, and has no record. A record that cannot
    /// be had (no answer in time) is taken as none, as a browser goes on
    /// without it.
    pub async fn locate(
        &self,
        target: &Target,
        rules: &[ResolveRule],
    ) -> Result<(SocketAddr, Option<HttpsRecord>), ClientError> {
        let host = target.host();
        let named = !rules
            .iter()
            .any(|rule| rule.host.eq_ignore_ascii_case(host) && rule.port == target.port())
            && host.parse::<IpAddr>().is_err()
            && !host.eq_ignore_ascii_case("localhost");
        let address = async {
            match &self.addresses {
                Some(dns) if named => dns
                    .address(host)
                    .await
                    .map(|ip| SocketAddr::new(ip, target.port())),
                _ => target.resolve(rules).await,
            }
        };
        let https = async {
            match &self.https {
                Some(dns) if named => dns.https_record(host, target.port()).await.ok().flatten(),
                _ => None,
            }
        };
        let (address, https) = tokio::join!(address, https);
        Ok((address?, https))
    }
}

/// What an origin's `HTTPS` record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpsRecord {
    /// The ALPN ids, in the server's order of preference (`["h3", "h2"]`);
    /// empty when the record has no `alpn` parameter.
    pub alpn: Vec<String>,
    /// The `port` parameter: where the service listens, when not on the
    /// origin's own port.
    pub port: Option<u16>,
    /// How long the answer may be kept (its TTL).
    pub ttl: Duration,
}

impl HttpsRecord {
    /// Whether the record lists HTTP/3.
    pub fn lists_h3(&self) -> bool {
        self.alpn.iter().any(|id| id == "h3")
    }
}

/// Asks DNS for hosts' addresses and `HTTPS` records.
pub struct DnsResolver {
    resolver: TokioResolver,
}

impl DnsResolver {
    /// A resolver that asks the DNS server at `server` only: over UDP,
    /// and over TCP for answers too long for a datagram.
    pub fn at(server: SocketAddr) -> Result<DnsResolver, ClientError> {
        let connections = [ConnectionConfig::udp(), ConnectionConfig::tcp()]
            .into_iter()
            .map(|mut connection| {
                connection.port = server.port();
                connection
            })
            .collect();
        let name_server = NameServerConfig::new(server.ip(), true, connections);
        let config = ResolverConfig::from_parts(None, vec![], vec![name_server]);
        let builder = Resolver::builder_with_config(config, TokioRuntimeProvider::default());
        Self::build(builder, &server.to_string())
    }

    /// A resolver that asks the system's DNS servers (`/etc/resolv.conf`).
    pub fn system() -> Result<DnsResolver, ClientError> {
        let builder = Resolver::builder_tokio().map_err(|err| {
            ClientError::new(
                ErrorKind::Connect,
                format!("cannot read the system's DNS configuration (/etc/resolv.conf): {err}"),
            )
        })?;
        Self::build(builder, "the system's DNS servers")
    }

    fn build(
        mut builder: ResolverBuilder<TokioRuntimeProvider>,
        servers: &str,
    ) -> Result<DnsResolver, ClientError> {
        builder.options_mut().ip_strategy = LookupIpStrategy::Ipv4thenIpv6;
        let resolver = builder.build().map_err(|err| {
            ClientError::new(
                ErrorKind::Connect,
                format!("cannot make a DNS resolver for {servers}: {err}"),
            )
        })?;
        Ok(DnsResolver { resolver })
    }

    /// `host`'s address (IPv4 first).
    pub async fn address(&self, host: &str) -> Result<IpAddr, ClientError> {
        let failed = |why: String| {
            ClientError::new(
                ErrorKind::Connect,
                format!("cannot resolve `{host}`: {why}; check the host name in the URL"),
            )
        };
        let lookup = self
            .resolver
            .lookup_ip(fully_qualified(host))
            .await
            .map_err(|err| failed(err.to_string()))?;
        lookup
            .iter()
            .next()
            .ok_or_else(|| failed("DNS gave no address".to_string()))
    }

    /// The `HTTPS` record of the origin `host`:`port`. `None` when the DNS
    /// answer has no such record, whether the name has other records or
    /// none: then nothing is known. An error when no answer came (a
    /// timeout, a server failure), which is not the same as "no record".
    pub async fn https_record(
        &self,
        host: &str,
        port: u16,
    ) -> Result<Option<HttpsRecord>, ClientError> {
        let name = https_record_name(host, port);
        match self.resolver.lookup(name.as_str(), RecordType::HTTPS).await {
            Ok(lookup) => {
                let ttl = lookup
                    .valid_until()
                    .saturating_duration_since(Instant::now());
                Ok(
                    advertised(lookup.answers()).map(|(alpn, port)| HttpsRecord {
                        alpn,
                        port,
                        ttl,
                    }),
                )
            }
            Err(err) if err.is_no_records_found() => Ok(None),
            Err(err) => Err(ClientError::new(
                ErrorKind::Connect,
                format!("cannot ask DNS for the HTTPS record `{name}`: {err}"),
            )),
        }
    }
}

/// The name whose `HTTPS` record describes the origin `host`:`port`:
/// the host itself for 443, `_PORT._https.HOST` for any other port
/// (RFC 9460 9.1); fully qualified, so no search domain is tried.
pub fn https_record_name(host: &str, port: u16) -> String {
    match port {
        443 => fully_qualified(host),
        port => format!("_{port}._https.{}", fully_qualified(host)),
    }
}

fn fully_qualified(host: &str) -> String {
    format!("{}.", host.trim_end_matches('.'))
}

/// The ALPN ids and `port` of the preferred `HTTPS` record among
/// `answers` (the lowest `SvcPriority`): no ids when it has no `alpn`
/// parameter; `None` when there is no record, or an `AliasMode` one
/// (priority 0), which makes the others void (RFC 9460 2.4.1) and is not
/// followed here.
fn advertised(answers: &[Record]) -> Option<(Vec<String>, Option<u16>)> {
    let records: Vec<&SVCB> = answers
        .iter()
        .filter_map(|record| match &record.data {
            RData::HTTPS(https) => Some(&https.0),
            _ => None,
        })
        .collect();
    if records.iter().any(|svcb| svcb.svc_priority == 0) {
        return None;
    }
    let preferred = records.into_iter().min_by_key(|svcb| svcb.svc_priority)?;
    let (mut ids, mut port) = (Vec::new(), None);
    for (_, value) in &preferred.svc_params {
        match value {
            SvcParamValue::Alpn(alpn) => ids = alpn.0.clone(),
            SvcParamValue::Port(number) => port = Some(*number),
            _ => {}
        }
    }
    Some((ids, port))
}

#[cfg(test)]
mod tests {
    use hickory_resolver::proto::rr::rdata::svcb::{Alpn, SvcParamKey};
    use hickory_resolver::proto::rr::rdata::HTTPS;
    use hickory_resolver::proto::rr::Name;

    use super::*;

    fn https(priority: u16, alpn: Option<&[&str]>, port: Option<u16>) -> Record {
        let mut params = Vec::new();
        if let Some(ids) = alpn {
            let ids = ids.iter().map(|id| id.to_string()).collect();
            params.push((SvcParamKey::Alpn, SvcParamValue::Alpn(Alpn(ids))));
        }
        if let Some(port) = port {
            params.push((SvcParamKey::Port, SvcParamValue::Port(port)));
        }
        let svcb = SVCB::new(priority, Name::root(), params);
        let owner = Name::from_ascii("www.site.test.").unwrap();
        Record::from_rdata(owner, 60, RData::HTTPS(HTTPS(svcb)))
    }

    fn ids(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|id| id.to_string()).collect()
    }

    #[test]
    fn the_preferred_service_record_gives_the_ids_and_port() {
        let answers = [
            https(2, Some(&["h2"]), None),
            https(1, Some(&["h3", "h2"]), Some(8443)),
        ];
        assert_eq!(advertised(&answers), Some((ids(&["h3", "h2"]), Some(8443))));
    }

    #[test]
    fn no_record_or_an_alias_is_unknown_and_a_record_without_alpn_lists_none() {
        assert_eq!(advertised(&[]), None);
        let with_alias = [https(1, Some(&["h3"]), None), https(0, None, None)];
        assert_eq!(advertised(&with_alias), None);
        assert_eq!(advertised(&[https(1, None, None)]), Some((vec![], None)));
    }

    #[test]
    fn other_ports_than_443_ask_for_their_own_name() {
        assert_eq!(https_record_name("www.site.test", 443), "www.site.test.");
        assert_eq!(
            https_record_name("www.site.test.", 8443),
            "_8443._https.www.site.test."
        );
    }
}
