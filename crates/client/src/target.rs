//! The URL under test: parsing, validation and address resolution.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use anyhow::{anyhow, bail, Context};
use http::uri::{Authority, PathAndQuery, Uri};

use h3lab_results::{ErrorKind, Proto};

use crate::error::ClientError;

/// The URL's scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Cleartext `http://` (HTTP/1.1 only).
    Http,
    /// `https://`: TLS on TCP, or QUIC.
    Https,
}

impl Scheme {
    /// The protocol used when the user does not choose one: h2 for
    /// `https://` (what browsers negotiate first), h1 for cleartext `http://`.
    pub fn default_proto(self) -> Proto {
        match self {
            Scheme::Https => Proto::H2,
            Scheme::Http => Proto::H1,
        }
    }
}

/// A validated `http(s)://host[:port]/path?query` URL.
#[derive(Debug, Clone)]
pub struct Target {
    scheme: Scheme,
    host: String,
    port: u16,
    authority: Authority,
    path_and_query: PathAndQuery,
}

impl Target {
    /// Parses and validates a URL, naming the fix when it is unusable.
    pub fn parse(input: &str) -> anyhow::Result<Target> {
        let hint = "expected a URL like https://127.0.0.1:4433/bytes/1000";
        let url =
            url::Url::parse(input).map_err(|err| anyhow!("bad URL `{input}`: {err}; {hint}"))?;
        let scheme = match url.scheme() {
            "https" => Scheme::Https,
            "http" => Scheme::Http,
            other => bail!(
                "bad URL `{input}`: scheme `{other}` is not supported; use https:// (or http:// for cleartext HTTP/1.1)"
            ),
        };
        let host = match url.host() {
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            Some(host) => host.to_string(),
            None => bail!("bad URL `{input}`: it names no host; {hint}"),
        };
        if !url.username().is_empty() || url.password().is_some() {
            bail!("bad URL `{input}`: credentials in the URL are not supported; send them with -H \"Authorization: ...\"");
        }
        let port = url
            .port_or_known_default()
            .with_context(|| format!("bad URL `{input}`: no port; {hint}"))?;
        let authority_text = match url.port() {
            Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        let authority = Authority::from_str(&authority_text)
            .map_err(|err| anyhow!("bad URL `{input}`: host `{authority_text}`: {err}"))?;
        let path_text = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        };
        let path_and_query = PathAndQuery::from_str(&path_text)
            .map_err(|err| anyhow!("bad URL `{input}`: path `{path_text}`: {err}"))?;
        Ok(Target {
            scheme,
            host,
            port,
            authority,
            path_and_query,
        })
    }

    /// Rejects protocol/scheme pairs that cannot work, e.g. h2 over `http://`.
    pub fn check_proto(&self, proto: Proto) -> anyhow::Result<()> {
        if self.scheme == Scheme::Http && proto != Proto::H1 {
            bail!(
                "`http://` is cleartext and works only with --proto h1; use an https:// URL for {proto}"
            );
        }
        Ok(())
    }

    /// The URL's scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// Host name or IP address (no brackets), used for DNS and TLS SNI.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The origin, `scheme://host:port` (RFC 6454): what `Alt-Svc`
    /// advertisements and broken marks are kept by.
    pub fn origin(&self) -> String {
        let scheme = match self.scheme {
            Scheme::Https => "https",
            Scheme::Http => "http",
        };
        format!("{scheme}://{}:{}", self.authority.host(), self.port)
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// `host[:port]` as written in the URL: the Host / :authority value.
    pub fn authority(&self) -> &Authority {
        &self.authority
    }

    /// The path and query, as the request carries them.
    pub fn path_and_query(&self) -> &PathAndQuery {
        &self.path_and_query
    }

    /// The absolute URI, as HTTP/2 and HTTP/3 requests carry it.
    pub(crate) fn absolute_uri(&self) -> Uri {
        let scheme = match self.scheme {
            Scheme::Https => "https",
            Scheme::Http => "http",
        };
        Uri::builder()
            .scheme(scheme)
            .authority(self.authority.clone())
            .path_and_query(self.path_and_query.clone())
            .build()
            .expect("scheme, authority and path were validated by Target::parse")
    }

    /// Resolves the host once, so DNS stays out of every timed connection.
    /// A rule for the host and port wins over DNS, as with curl's `--resolve`.
    pub async fn resolve(&self, rules: &[ResolveRule]) -> Result<SocketAddr, ClientError> {
        let ruled = rules
            .iter()
            .find(|rule| rule.host.eq_ignore_ascii_case(&self.host) && rule.port == self.port);
        if let Some(rule) = ruled {
            return Ok(rule.socket_addr());
        }
        let mut addrs = tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .map_err(|err| {
                ClientError::new(
                    ErrorKind::Connect,
                    format!(
                        "cannot resolve `{}`: {err}; check the host name in the URL",
                        self.host
                    ),
                )
            })?;
        addrs.next().ok_or_else(|| {
            ClientError::new(
                ErrorKind::Connect,
                format!(
                    "`{}` resolves to no address; check the host name in the URL",
                    self.host
                ),
            )
        })
    }
}

/// `HOST:PORT:ADDR`, curl's `--resolve`: connections to `HOST` on `PORT`
/// go to `ADDR`, while TLS and the request still name `HOST`. `ADDR` may
/// carry a port of its own (`127.0.0.10:4433`, `[::1]:4433`), as curl's
/// `--connect-to` does, for a server that is not on the URL's port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveRule {
    /// The host name, lower case.
    pub host: String,
    /// The port the rule applies to.
    pub port: u16,
    /// Where connections go.
    pub addr: IpAddr,
    /// The port connections go to, if not `port`.
    pub connect_port: Option<u16>,
}

impl ResolveRule {
    /// Where a connection for the rule's host goes.
    pub fn socket_addr(&self) -> SocketAddr {
        SocketAddr::new(self.addr, self.connect_port.unwrap_or(self.port))
    }

    /// The address, with its port if it has one of its own, as Chromium's
    /// host resolver rules take it.
    pub fn destination(&self) -> String {
        match (self.addr, self.connect_port) {
            (IpAddr::V6(addr), None) => format!("[{addr}]"),
            (IpAddr::V4(addr), None) => addr.to_string(),
            (addr, Some(port)) => SocketAddr::new(addr, port).to_string(),
        }
    }
}

impl FromStr for ResolveRule {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<ResolveRule> {
        let hint = "expected HOST:PORT:ADDR, e.g. www.example.com:443:127.0.0.10 (or ADDR:PORT for another port)";
        let mut parts = text.splitn(3, ':');
        let (Some(host), Some(port), Some(addr)) = (parts.next(), parts.next(), parts.next())
        else {
            bail!("bad --resolve `{text}`; {hint}");
        };
        if host.is_empty() {
            bail!("bad --resolve `{text}`: no host; {hint}");
        }
        let port = port
            .parse()
            .map_err(|_| anyhow!("bad --resolve `{text}`: `{port}` is not a port; {hint}"))?;
        let (addr, connect_port) = match addr.parse::<SocketAddr>() {
            Ok(socket) => (socket.ip(), Some(socket.port())),
            Err(_) => {
                let bare = addr.trim_start_matches('[').trim_end_matches(']');
                let ip = bare.parse().map_err(|_| {
                    anyhow!("bad --resolve `{text}`: `{addr}` is not an IP address; {hint}")
                })?;
                (ip, None)
            }
        };
        Ok(ResolveRule {
            host: host.to_ascii_lowercase(),
            port,
            addr,
            connect_port,
        })
    }
}

impl fmt::Display for ResolveRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.host, self.port, self.destination())
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.absolute_uri())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_rules_parse_as_curl_writes_them_and_refuse_the_rest() {
        let rule: ResolveRule = "WWW.Example.test:443:127.0.0.10".parse().unwrap();
        assert_eq!(rule.host, "www.example.test");
        assert_eq!(rule.port, 443);
        assert_eq!(rule.to_string(), "www.example.test:443:127.0.0.10");
        let v6: ResolveRule = "cdn.example.test:8443:[::1]".parse().unwrap();
        assert_eq!(v6.addr, "::1".parse::<IpAddr>().unwrap());
        assert_eq!(v6.to_string(), "cdn.example.test:8443:[::1]");
        let moved: ResolveRule = "www.example.test:443:127.0.0.10:4433".parse().unwrap();
        assert_eq!(moved.socket_addr(), "127.0.0.10:4433".parse().unwrap());
        assert_eq!(moved.to_string(), "www.example.test:443:127.0.0.10:4433");
        for bad in [
            "example.test",
            "example.test:443",
            ":443:127.0.0.1",
            "h:x:127.0.0.1",
            "h:443:nowhere",
        ] {
            let err = bad.parse::<ResolveRule>().unwrap_err().to_string();
            assert!(err.contains("HOST:PORT:ADDR") && err.contains(bad), "{err}");
        }
    }

    #[tokio::test]
    async fn a_rule_for_the_host_and_port_wins_over_dns() {
        let rules = ["www.example.test:443:198.18.0.10".parse().unwrap()];
        let target = Target::parse("https://WWW.example.test/").unwrap();
        let addr = target.resolve(&rules).await.unwrap();
        assert_eq!(addr, "198.18.0.10:443".parse().unwrap());
        let moved = ["www.example.test:443:[::1]:4433".parse().unwrap()];
        let addr = target.resolve(&moved).await.unwrap();
        assert_eq!(addr, "[::1]:4433".parse().unwrap());
        let other_port = Target::parse("https://127.0.0.1:8443/").unwrap();
        assert_eq!(other_port.resolve(&rules).await.unwrap().port(), 8443);
    }

    #[test]
    fn parses_https_url_with_port_and_query() {
        let target = Target::parse("https://example.test:4433/bytes/10?x=1").unwrap();
        assert_eq!(target.scheme(), Scheme::Https);
        assert_eq!(target.host(), "example.test");
        assert_eq!(target.port(), 4433);
        assert_eq!(target.authority().as_str(), "example.test:4433");
        assert_eq!(target.path_and_query().as_str(), "/bytes/10?x=1");
        assert_eq!(
            target.absolute_uri().to_string(),
            "https://example.test:4433/bytes/10?x=1"
        );
    }

    #[test]
    fn default_ports_stay_out_of_the_authority() {
        let target = Target::parse("https://example.test").unwrap();
        assert_eq!(target.port(), 443);
        assert_eq!(target.authority().as_str(), "example.test");
        assert_eq!(target.path_and_query().as_str(), "/");
    }

    #[test]
    fn ipv6_host_is_bracketed_only_in_the_authority() {
        let target = Target::parse("https://[::1]:8443/health").unwrap();
        assert_eq!(target.host(), "::1");
        assert_eq!(target.authority().as_str(), "[::1]:8443");
    }

    #[test]
    fn bad_urls_name_the_fix() {
        let err = Target::parse("localhost:4433").unwrap_err().to_string();
        assert!(err.contains("use https://"), "{err}");
        let err = Target::parse("not a url").unwrap_err().to_string();
        assert!(err.contains("expected a URL like https://"), "{err}");
        let err = Target::parse("ftp://host/x").unwrap_err().to_string();
        assert!(err.contains("scheme `ftp`"), "{err}");
    }

    #[test]
    fn cleartext_only_allows_h1() {
        let target = Target::parse("http://127.0.0.1:8080/").unwrap();
        assert!(target.check_proto(Proto::H1).is_ok());
        let err = target.check_proto(Proto::H3).unwrap_err().to_string();
        assert!(err.contains("use an https:// URL"), "{err}");
        assert_eq!(target.scheme().default_proto(), Proto::H1);
        assert_eq!(Scheme::Https.default_proto(), Proto::H2);
    }
}
