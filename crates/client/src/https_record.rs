//! A host's DNS `HTTPS` record (RFC 9460): the ALPN ids its origin
//! advertises before any connection is made. Chromium asks for it beside
//! the address, and with `h3` listed, tries QUIC from its first
//! connection; without a record it learns of HTTP/3 from `Alt-Svc` only.
//!
//! Plain DNS over UDP (TCP when an answer is truncated) to one given
//! server. Only the record for the host name itself is asked, which is
//! the name for an origin on port 443 (other ports' records are named
//! `_PORT._https.HOST`, RFC 9460 9.1), and `AliasMode` records are not
//! followed.

use std::net::SocketAddr;

use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::rdata::svcb::{SvcParamValue, SVCB};
use hickory_resolver::proto::rr::{RData, Record, RecordType};
use hickory_resolver::{Resolver, TokioResolver};

use h3lab_results::ErrorKind;

use crate::error::ClientError;

/// Asks one DNS server for hosts' `HTTPS` records.
pub struct HttpsRecords {
    resolver: TokioResolver,
}

impl HttpsRecords {
    /// A resolver that asks the DNS server at `server` only: over UDP,
    /// and over TCP for answers too long for a datagram.
    pub fn at(server: SocketAddr) -> Result<HttpsRecords, ClientError> {
        let connections = [ConnectionConfig::udp(), ConnectionConfig::tcp()]
            .into_iter()
            .map(|mut connection| {
                connection.port = server.port();
                connection
            })
            .collect();
        let name_server = NameServerConfig::new(server.ip(), true, connections);
        let config = ResolverConfig::from_parts(None, vec![], vec![name_server]);
        let resolver = Resolver::builder_with_config(config, TokioRuntimeProvider::default())
            .build()
            .map_err(|err| {
                ClientError::new(
                    ErrorKind::Connect,
                    format!("cannot make a DNS resolver for {server}: {err}"),
                )
            })?;
        Ok(HttpsRecords { resolver })
    }

    /// The ALPN ids `host`'s `HTTPS` record advertises, in its order of
    /// preference (`["h3", "h2"]`). `None` when the DNS answer has no such
    /// record, whether the name has other records or none: then nothing
    /// is known. An error when no answer came (a timeout, a server
    /// failure), which is not the same as "no record".
    pub async fn alpn(&self, host: &str) -> Result<Option<Vec<String>>, ClientError> {
        // Fully qualified: the host itself, never a search domain's name.
        let name = format!("{}.", host.trim_end_matches('.'));
        match self.resolver.lookup(name.as_str(), RecordType::HTTPS).await {
            Ok(lookup) => Ok(advertised_alpn(lookup.answers())),
            Err(err) if err.is_no_records_found() => Ok(None),
            Err(err) => Err(ClientError::new(
                ErrorKind::Connect,
                format!("cannot ask DNS for the HTTPS record of `{host}`: {err}"),
            )),
        }
    }
}

/// The ALPN ids of the preferred `HTTPS` record among `answers` (the
/// lowest `SvcPriority`): an empty list when it has no `alpn` parameter;
/// `None` when there is no record, or an `AliasMode` one (priority 0),
/// which makes the others void (RFC 9460 2.4.1) and is not followed here.
fn advertised_alpn(answers: &[Record]) -> Option<Vec<String>> {
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
    let ids = preferred
        .svc_params
        .iter()
        .find_map(|(_, value)| match value {
            SvcParamValue::Alpn(alpn) => Some(alpn.0.clone()),
            _ => None,
        });
    Some(ids.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use hickory_resolver::proto::rr::rdata::svcb::{Alpn, SvcParamKey};
    use hickory_resolver::proto::rr::rdata::HTTPS;
    use hickory_resolver::proto::rr::Name;

    use super::*;

    fn https(priority: u16, alpn: Option<&[&str]>) -> Record {
        let params = alpn
            .map(|ids| {
                let ids = ids.iter().map(|id| id.to_string()).collect();
                vec![(SvcParamKey::Alpn, SvcParamValue::Alpn(Alpn(ids)))]
            })
            .unwrap_or_default();
        let svcb = SVCB::new(priority, Name::root(), params);
        let owner = Name::from_ascii("www.site.test.").unwrap();
        Record::from_rdata(owner, 60, RData::HTTPS(HTTPS(svcb)))
    }

    #[test]
    fn the_preferred_service_record_gives_the_ids() {
        let answers = [https(2, Some(&["h2"])), https(1, Some(&["h3", "h2"]))];
        assert_eq!(
            advertised_alpn(&answers),
            Some(vec!["h3".to_string(), "h2".to_string()])
        );
    }

    #[test]
    fn no_record_or_an_alias_is_unknown_and_a_record_without_alpn_lists_none() {
        assert_eq!(advertised_alpn(&[]), None);
        let with_alias = [https(1, Some(&["h3"])), https(0, None)];
        assert_eq!(advertised_alpn(&with_alias), None);
        assert_eq!(advertised_alpn(&[https(1, None)]), Some(vec![]));
    }
}
