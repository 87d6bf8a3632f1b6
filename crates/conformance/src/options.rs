//! Where and how to run the suite: the URL's address, name and path, the
//! timeouts, and which cases.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;

use crate::suite::{cases, Case, Origin};

/// Where and how to run the suite.
#[derive(Debug, Clone)]
pub struct Options {
    /// The URL probed, as given.
    pub target: String,
    /// Its origin and path, for valid requests.
    pub origin: Origin,
    /// The TLS server name (SNI).
    pub server_name: String,
    /// Where the packets go.
    pub address: SocketAddr,
    /// How long a case waits for any answer: the QUIC idle timeout.
    pub case_timeout: Duration,
    /// How long after the follow-up request's answer the client still
    /// listens for a late reset or close.
    pub settle: Duration,
    /// Run only the cases whose id starts with one of these (all if empty).
    pub only: Vec<String>,
}

impl Options {
    pub(crate) fn h3i_config(&self) -> anyhow::Result<h3i::config::Config> {
        let config = h3i::config::Config::new()
            .with_host_port(format!("{}:{}", self.server_name, self.address.port()))
            .with_connect_to(self.address.to_string())
            .verify_peer(false)
            .with_idle_timeout(self.case_timeout.as_millis() as u64);
        let config = match self.sni() {
            Some(_) => config,
            None => config.omit_sni(),
        };
        config.build().context("configuring the h3i client")
    }

    /// The name to send in TLS's server_name: none for an IP address,
    /// which is no server name (RFC 6066 §3).
    pub(crate) fn sni(&self) -> Option<&str> {
        let is_address = self.server_name.parse::<std::net::IpAddr>().is_ok();
        (!is_address).then_some(self.server_name.as_str())
    }

    pub(crate) fn selected(&self) -> Vec<&'static Case> {
        cases()
            .filter(|case| {
                self.only.is_empty() || self.only.iter().any(|p| case.id.starts_with(p.as_str()))
            })
            .collect()
    }
}
