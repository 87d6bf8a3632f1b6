//! rustls client configuration: ring provider, ALPN per protocol, trust in
//! the system's certificate authorities plus `--ca FILE` (or in anything
//! with `--insecure`), and an in-memory session-ticket store shared by
//! every connection made from one config.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::{bail, Context};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{
    ClientSessionMemoryCache, ClientSessionStore, Resumption, Tls12ClientSessionValue,
    Tls13ClientSessionValue, WebPkiServerVerifier,
};
use rustls::crypto::{self, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, NamedGroup, RootCertStore, SignatureScheme};
use tokio::sync::Notify;

use h3lab_results::Proto;

/// How the server's certificate is trusted.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// Accept any certificate (signatures are still checked).
    pub insecure: bool,
    /// Trust the certificates in this PEM file too, beside the system's.
    pub ca_file: Option<PathBuf>,
}

/// Builds the rustls config for `proto`. Reuse the returned `Arc` for every
/// connection of a run: its session store is what makes resumption work.
pub fn client_tls_config(
    options: &TlsOptions,
    proto: Proto,
) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    Ok(counted_client_tls_config(options, proto)?.0)
}

/// What the connections made with one client config went through.
///
/// Full handshakes: rustls checks the server's certificate only when the
/// server sends one, and a resumed TLS 1.3 handshake sends none. So a
/// handshake during which the count did not move was resumed: a fact from
/// the handshake itself, for QUIC too, where quinn does not expose rustls'
/// handshake kind.
///
/// Session tickets: what servers left in the session store, so a server
/// that offers no resumption is told from one whose ticket went unused.
///
/// Meaningful only while one handshake at a time runs on the config.
#[derive(Debug, Clone, Default)]
pub(crate) struct HandshakeCounts {
    full_handshakes: Arc<AtomicU64>,
    tickets: Arc<AtomicU64>,
    ticket_arrived: Arc<Notify>,
}

impl HandshakeCounts {
    pub(crate) fn full_handshakes(&self) -> u64 {
        self.full_handshakes.load(Ordering::SeqCst)
    }

    pub(crate) fn tickets(&self) -> u64 {
        self.tickets.load(Ordering::SeqCst)
    }

    /// Waits until a server has left a ticket or `deadline` passes; true
    /// if one has.
    pub(crate) async fn wait_for_ticket(&self, deadline: tokio::time::Instant) -> bool {
        loop {
            let arrived = self.ticket_arrived.notified();
            tokio::pin!(arrived);
            // Registered before the check, so a ticket landing in between
            // still wakes us.
            arrived.as_mut().enable();
            if self.tickets() > 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return self.tickets() > 0;
            }
        }
    }
}

/// [`client_tls_config`], with what its handshakes went through.
pub(crate) fn counted_client_tls_config(
    options: &TlsOptions,
    proto: Proto,
) -> anyhow::Result<(Arc<rustls::ClientConfig>, HandshakeCounts)> {
    let provider = Arc::new(crypto::ring::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] = match proto {
        Proto::H3 => &[&rustls::version::TLS13],
        // `auto`'s configuration is for its TCP side; its QUIC side asks for h3's.
        Proto::H1 | Proto::H2 | Proto::Auto => &[&rustls::version::TLS13, &rustls::version::TLS12],
    };
    let trust = match options.insecure {
        true => Trust::Any,
        false => Trust::from_roots(load_roots(options)?, &provider)?,
    };
    let counts = HandshakeCounts::default();
    let verifier = CountingVerifier {
        trust,
        provider: provider.clone(),
        full_handshakes: counts.full_handshakes.clone(),
    };
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .context("building the TLS configuration")?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![proto.alpn().to_vec()];
    config.enable_early_data = proto == Proto::H3;
    config.resumption = Resumption::store(Arc::new(CountingStore {
        inner: ClientSessionMemoryCache::new(SESSIONS_KEPT),
        tickets: counts.tickets.clone(),
        ticket_arrived: counts.ticket_arrived.clone(),
    }));
    Ok((Arc::new(config), counts))
}

/// rustls' default number of sessions kept in memory.
const SESSIONS_KEPT: usize = 256;

/// rustls' in-memory session store, counting the TLS 1.3 tickets and TLS
/// 1.2 sessions servers leave in it.
#[derive(Debug)]
struct CountingStore {
    inner: ClientSessionMemoryCache,
    tickets: Arc<AtomicU64>,
    ticket_arrived: Arc<Notify>,
}

impl CountingStore {
    fn count_ticket(&self) {
        self.tickets.fetch_add(1, Ordering::SeqCst);
        self.ticket_arrived.notify_waiters();
    }
}

impl ClientSessionStore for CountingStore {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.inner.set_kx_hint(server_name, group);
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.inner.kx_hint(server_name)
    }

    fn set_tls12_session(&self, server_name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.count_ticket();
        self.inner.set_tls12_session(server_name, value);
    }

    fn tls12_session(&self, server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.inner.tls12_session(server_name)
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.inner.remove_tls12_session(server_name);
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        self.count_ticket();
        self.inner.insert_tls13_ticket(server_name, value);
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        self.inner.take_tls13_ticket(server_name)
    }
}

/// The system's roots, as curl, h2load and oha trust them, and `--ca`'s.
fn load_roots(options: &TlsOptions) -> anyhow::Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(system_roots().iter().cloned());
    let Some(path) = &options.ca_file else {
        return Ok(roots);
    };
    let file = File::open(path)
        .with_context(|| format!("cannot open --ca file {}: check the path", path.display()))?;
    let certs = rustls_pemfile::certs(&mut BufReader::new(file))
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("--ca file {} is not valid PEM", path.display()))?;
    if certs.is_empty() {
        bail!(
            "--ca file {} holds no CERTIFICATE block: pass the server's PEM certificate",
            path.display()
        );
    }
    for cert in certs {
        roots.add(cert).with_context(|| {
            format!("--ca file {} holds an unusable certificate", path.display())
        })?;
    }
    Ok(roots)
}

/// The system's certificate authorities, read once per process:
/// `SSL_CERT_FILE` or `SSL_CERT_DIR` when set (as OpenSSL reads them), else
/// the platform's store (`/etc/ssl/certs` on Debian). A store that cannot
/// be read counts as empty: the handshake then fails naming the fixes.
pub fn system_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| rustls_native_certs::load_native_certs().certs)
}

/// Which server certificates are trusted.
#[derive(Debug)]
enum Trust {
    /// `--insecure`: any certificate (handshake signatures are still checked).
    Any,
    /// Certificates that chain to the system's or `--ca`'s roots.
    Roots(Arc<WebPkiServerVerifier>),
    /// No system store and no `--ca`: none, so the handshake fails with an
    /// unknown-issuer error whose message names the fixes.
    Nothing,
}

impl Trust {
    fn from_roots(roots: RootCertStore, provider: &Arc<CryptoProvider>) -> anyhow::Result<Trust> {
        if roots.is_empty() {
            return Ok(Trust::Nothing);
        }
        let verifier =
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .context("building the certificate verifier from the trusted roots")?;
        Ok(Trust::Roots(verifier))
    }
}

/// Checks the server's certificate as [`Trust`] says, and counts the checks.
#[derive(Debug)]
struct CountingVerifier {
    trust: Trust,
    provider: Arc<CryptoProvider>,
    full_handshakes: Arc<AtomicU64>,
}

impl ServerCertVerifier for CountingVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.full_handshakes.fetch_add(1, Ordering::SeqCst);
        match &self.trust {
            Trust::Any => Ok(ServerCertVerified::assertion()),
            Trust::Roots(roots) => {
                roots.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            }
            Trust::Nothing => Err(rustls::Error::InvalidCertificate(
                CertificateError::UnknownIssuer,
            )),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpn_follows_the_protocol() {
        for proto in [Proto::H1, Proto::H2, Proto::H3] {
            let config = client_tls_config(&TlsOptions::default(), proto).unwrap();
            assert_eq!(config.alpn_protocols, vec![proto.alpn().to_vec()]);
        }
    }

    #[test]
    fn missing_ca_file_names_the_flag() {
        let options = TlsOptions {
            insecure: false,
            ca_file: Some("/nonexistent/ca.pem".into()),
        };
        let err = client_tls_config(&options, Proto::H2).unwrap_err();
        assert!(format!("{err:#}").contains("--ca file /nonexistent/ca.pem"));
    }

    #[test]
    fn ca_file_without_certificates_is_rejected() {
        let path = std::env::temp_dir().join(format!("h3lab-empty-ca-{}.pem", std::process::id()));
        std::fs::write(&path, "not a certificate\n").unwrap();
        let options = TlsOptions {
            insecure: false,
            ca_file: Some(path.clone()),
        };
        let err = client_tls_config(&options, Proto::H1).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(
            format!("{err:#}").contains("no CERTIFICATE block"),
            "{err:#}"
        );
    }
}
