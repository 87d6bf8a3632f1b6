//! rustls client configuration: ring provider, ALPN per protocol, trust
//! from `--ca FILE` or none at all with `--insecure`, and an in-memory
//! session-ticket store shared by every connection made from one config.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{self, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::target::Proto;

/// How the server's certificate is trusted.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// Accept any certificate (signatures are still checked).
    pub insecure: bool,
    /// Trust the certificates in this PEM file.
    pub ca_file: Option<PathBuf>,
}

/// Builds the rustls config for `proto`. Reuse the returned `Arc` for every
/// connection of a run: its session store is what makes resumption work.
pub fn client_tls_config(
    options: &TlsOptions,
    proto: Proto,
) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let provider = Arc::new(crypto::ring::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] = match proto {
        Proto::H3 => &[&rustls::version::TLS13],
        Proto::H1 | Proto::H2 => &[&rustls::version::TLS13, &rustls::version::TLS12],
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .context("building the TLS configuration")?;
    let mut config = if options.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate { provider }))
            .with_no_client_auth()
    } else {
        builder
            .with_root_certificates(load_roots(options)?)
            .with_no_client_auth()
    };
    config.alpn_protocols = vec![proto.alpn().to_vec()];
    config.enable_early_data = proto == Proto::H3;
    Ok(Arc::new(config))
}

/// Roots from `--ca`; without it the store is empty, so a handshake fails
/// with a message that points at `--insecure` or `--ca`.
fn load_roots(options: &TlsOptions) -> anyhow::Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
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

/// `--insecure`: trust any certificate but still verify handshake signatures.
#[derive(Debug)]
struct AcceptAnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
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
