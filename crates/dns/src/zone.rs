//! The records a site publishes: an `A` record for each host, and, when
//! asked, an `HTTPS` record for each host. Pure: it builds records and
//! never touches a socket, so what a path's DNS says is tested here.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};

use anyhow::{bail, ensure, Context};
use hickory_server::proto::rr::rdata::svcb::{Alpn, SvcParamKey, SvcParamValue, SVCB};
use hickory_server::proto::rr::rdata::{A, HTTPS, SOA};
use hickory_server::proto::rr::{Name, RData, Record};

/// How long a resolver may keep an answer, and a negative one (the SOA's
/// minimum). Short: each run starts its browser and resolver afresh, so
/// caching only matters within a run.
pub const TTL_SECONDS: u32 = 60;

/// The `SvcPriority` of the published record: ServiceMode, the only
/// alternative (RFC 9460 2.4.3). 0 would be AliasMode.
const SERVICE_PRIORITY: u16 = 1;

/// The longest ALPN id the record's wire format can carry (a length byte).
const MAX_ALPN_ID_BYTES: usize = 255;

/// One host name of the site, the address it is served on, and what is
/// published for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// A DNS name such as `www.site.test` (a trailing dot is optional).
    pub name: String,
    /// Where the name leads: one of the server's addresses on the path.
    pub address: Ipv4Addr,
    /// Whether it also gets an `HTTPS` record.
    pub publish: Publish,
}

/// What the zone says about HTTP/3 besides the addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Publish {
    /// `A` records only: a browser learns of HTTP/3 from `Alt-Svc` alone.
    ARecordsOnly,
    /// `A` records and, per host, `HTTPS 1 . alpn="…"` (RFC 9460): a
    /// browser may use the listed protocols from its first connection.
    WithHttps {
        /// ALPN ids in the server's order of preference, e.g. `h3`, `h2`.
        alpn: Vec<String>,
        /// The `port` parameter: where the alternative endpoint listens,
        /// when not on the origin's own port.
        port: Option<u16>,
    },
}

/// The whole zone: the site's hosts and what is published for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneConfig {
    /// The site's host names.
    pub hosts: Vec<Host>,
    /// The port the site's origins are served on: 443 names each `HTTPS`
    /// record for its host, another port `_PORT._https.HOST` (RFC 9460
    /// 9.1), as a client asks for it.
    pub origin_port: u16,
}

impl ZoneConfig {
    /// The zone's records: the root's SOA (the server answers for every
    /// name, so it is the root's authority, and NXDOMAIN for names it does
    /// not know is an authoritative answer), then each host's `A` record
    /// and, when published, its `HTTPS` record. Refuses host names that are
    /// not DNS names and ALPN lists an `HTTPS` record cannot carry.
    pub fn records(&self) -> anyhow::Result<Vec<Record>> {
        ensure!(
            !self.hosts.is_empty(),
            "a DNS zone needs at least one host name; give the site's host names"
        );
        let mut records = vec![root_soa()];
        let mut seen = HashSet::new();
        for host in &self.hosts {
            let name = host_name(&host.name)?;
            ensure!(
                seen.insert(name.clone()),
                "host name `{}` is listed twice; list each host once, with one address",
                host.name
            );
            records.push(Record::from_rdata(
                name.clone(),
                TTL_SECONDS,
                RData::A(A(host.address)),
            ));
            if let Publish::WithHttps { alpn, port } = &host.publish {
                let https = https_record_data(alpn, *port)?;
                let (owner, rdata) = self.https_for(&name, &https)?;
                records.push(Record::from_rdata(owner, TTL_SECONDS, rdata));
            }
        }
        Ok(records)
    }
}

impl ZoneConfig {
    /// Where `host`'s `HTTPS` record goes and what it holds. On port 443
    /// its target is `.`, the host itself. Under `_PORT._https.HOST` the
    /// target is named, since `.` would mean that owner name (RFC 9460
    /// 2.5.2), which has no address.
    fn https_for(&self, host: &Name, https: &RData) -> anyhow::Result<(Name, RData)> {
        if self.origin_port == 443 {
            return Ok((host.clone(), https.clone()));
        }
        let prefix = Name::from_ascii(format!("_{}._https", self.origin_port))
            .context("a port's record name")?;
        let owner = prefix.append_domain(host).context("a port's record name")?;
        let mut rdata = https.clone();
        if let RData::HTTPS(HTTPS(svcb)) = &mut rdata {
            svcb.target_name = host.clone();
        }
        Ok((owner, rdata))
    }
}

/// The root's SOA record. Its names are placeholders in a reserved
/// top-level domain: nothing looks them up.
pub(crate) fn root_soa() -> Record {
    let placeholder = |name: &str| Name::from_ascii(name).expect("a valid constant name");
    let soa = SOA::new(
        placeholder("ns.h3lab.test."),
        placeholder("hostmaster.h3lab.test."),
        1,
        3600,
        600,
        86_400,
        TTL_SECONDS,
    );
    Record::from_rdata(Name::root(), TTL_SECONDS, RData::SOA(soa))
}

/// `text` as a fully qualified, lower-case DNS name.
fn host_name(text: &str) -> anyhow::Result<Name> {
    if text.parse::<IpAddr>().is_ok() {
        bail!("`{text}` is an IP address, not a host name; a DNS zone publishes names such as www.site.test");
    }
    ensure!(
        !text.trim_end_matches('.').is_empty(),
        "an empty host name cannot be published; give a name such as www.site.test"
    );
    let mut name = Name::from_ascii(text)
        .with_context(|| format!("`{text}` is not a DNS host name; use letters, digits, `-` and dots, such as www.site.test"))?;
    name.set_fqdn(true);
    Ok(name.to_lowercase())
}

/// `1 . alpn="…"[ port=…]`: ServiceMode, the origin's own name as target.
fn https_record_data(alpn: &[String], port: Option<u16>) -> anyhow::Result<RData> {
    ensure!(
        !alpn.is_empty(),
        "an HTTPS record needs at least one ALPN id; give e.g. alpn=h3,h2"
    );
    for id in alpn {
        ensure!(
            !id.is_empty() && id.len() <= MAX_ALPN_ID_BYTES && id.is_ascii(),
            "ALPN id `{id}` cannot go in an HTTPS record: give 1 to {MAX_ALPN_ID_BYTES} ASCII characters, such as h3 or h2"
        );
    }
    // RFC 9460 2.2: parameters in increasing key order (alpn is 1, port 3).
    let mut params = vec![(SvcParamKey::Alpn, SvcParamValue::Alpn(Alpn(alpn.to_vec())))];
    if let Some(port) = port {
        params.push((SvcParamKey::Port, SvcParamValue::Port(port)));
    }
    let svcb = SVCB::new(SERVICE_PRIORITY, Name::root(), params);
    Ok(RData::HTTPS(HTTPS(svcb)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(publish: Publish) -> ZoneConfig {
        ZoneConfig {
            hosts: vec![
                Host {
                    name: "WWW.site.test".into(),
                    address: Ipv4Addr::new(198, 18, 0, 10),
                    publish: publish.clone(),
                },
                Host {
                    name: "cdn.site.test.".into(),
                    address: Ipv4Addr::new(198, 18, 0, 11),
                    publish,
                },
            ],
            origin_port: 443,
        }
    }

    /// Each record as `name type data`, as a zone file would show it.
    fn lines(config: &ZoneConfig) -> Vec<String> {
        config.records().unwrap().iter().map(describe).collect()
    }

    fn describe(record: &Record) -> String {
        let name = &record.name;
        match &record.data {
            RData::SOA(_) => format!("{name} SOA"),
            RData::A(address) => format!("{name} A {}", address.0),
            RData::HTTPS(HTTPS(svcb)) => {
                let params: Vec<String> = svcb.svc_params.iter().map(describe_param).collect();
                let (priority, target) = (svcb.svc_priority, &svcb.target_name);
                format!("{name} HTTPS {priority} {target} {}", params.join(" "))
            }
            other => panic!("unexpected record {other:?}"),
        }
    }

    fn describe_param((key, value): &(SvcParamKey, SvcParamValue)) -> String {
        match value {
            SvcParamValue::Alpn(Alpn(ids)) => format!("alpn={}", ids.join(",")),
            SvcParamValue::Port(port) => format!("port={port}"),
            other => panic!("unexpected parameter {key} {other:?}"),
        }
    }

    #[test]
    fn a_records_only_publish_one_address_per_host_and_no_https() {
        let lines = lines(&site(Publish::ARecordsOnly));
        assert_eq!(
            lines[1..],
            [
                "www.site.test. A 198.18.0.10",
                "cdn.site.test. A 198.18.0.11"
            ]
        );
        assert!(lines[0].starts_with(". SOA"), "{lines:?}");
    }

    #[test]
    fn with_https_every_host_gets_a_service_mode_record_with_the_alpn_ids() {
        let publish = Publish::WithHttps {
            alpn: vec!["h3".into(), "h2".into()],
            port: None,
        };
        let lines = lines(&site(publish));
        assert_eq!(
            lines[1..],
            [
                "www.site.test. A 198.18.0.10",
                "www.site.test. HTTPS 1 . alpn=h3,h2",
                "cdn.site.test. A 198.18.0.11",
                "cdn.site.test. HTTPS 1 . alpn=h3,h2",
            ]
        );
    }

    #[test]
    fn each_host_publishes_its_own_records() {
        let mut zone = site(Publish::ARecordsOnly);
        zone.hosts[1].publish = Publish::WithHttps {
            alpn: vec!["h3".into()],
            port: None,
        };
        assert_eq!(
            lines(&zone)[1..],
            [
                "www.site.test. A 198.18.0.10",
                "cdn.site.test. A 198.18.0.11",
                "cdn.site.test. HTTPS 1 . alpn=h3",
            ]
        );
    }

    #[test]
    fn a_port_goes_after_the_alpn_ids() {
        let publish = Publish::WithHttps {
            alpn: vec!["h3".into()],
            port: Some(8443),
        };
        let lines = lines(&site(publish));
        assert_eq!(lines[2], "www.site.test. HTTPS 1 . alpn=h3 port=8443");
    }

    #[test]
    fn another_origin_port_names_the_record_for_the_port_and_targets_the_host() {
        let publish = Publish::WithHttps {
            alpn: vec!["h3".into()],
            port: None,
        };
        let zone = ZoneConfig {
            origin_port: 8443,
            ..site(publish)
        };
        let lines = lines(&zone);
        assert_eq!(lines[1], "www.site.test. A 198.18.0.10");
        assert_eq!(
            lines[2],
            "_8443._https.www.site.test. HTTPS 1 www.site.test. alpn=h3"
        );
    }

    #[test]
    fn names_outside_the_site_have_no_records() {
        let records = site(Publish::ARecordsOnly).records().unwrap();
        let other = Name::from_ascii("other.test.").unwrap();
        assert!(records.iter().all(|record| record.name != other));
    }

    #[test]
    fn bad_zones_are_refused_naming_the_fix() {
        let error = |config: ZoneConfig| config.records().unwrap_err().to_string();
        let mut config = site(Publish::ARecordsOnly);
        config.hosts.clear();
        assert!(error(config).contains("at least one host name"));
        let mut config = site(Publish::ARecordsOnly);
        config.hosts[0].name = "198.18.0.10".into();
        assert!(error(config).contains("is an IP address"));
        let mut config = site(Publish::ARecordsOnly);
        config.hosts[0].name = "www site.test".into();
        assert!(error(config).contains("is not a DNS host name"));
        let mut config = site(Publish::ARecordsOnly);
        config.hosts[1].name = "www.SITE.test.".into();
        assert!(error(config).contains("is listed twice"));
        let no_alpn = Publish::WithHttps {
            alpn: vec![],
            port: None,
        };
        assert!(error(site(no_alpn)).contains("alpn=h3,h2"));
        let empty_id = Publish::WithHttps {
            alpn: vec!["h3".into(), String::new()],
            port: None,
        };
        assert!(error(site(empty_id)).contains("ALPN id ``"));
    }
}
