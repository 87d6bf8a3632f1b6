//! Certificates and rustls configurations for TCP (h1/h2) and QUIC (h3).

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use sha2::{Digest, Sha256};

use crate::config::TlsSource;

/// The certificate chain and key the server presents, plus what clients need to trust it.
pub struct TlsMaterial {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    /// Base64 SHA-256 of the leaf's SubjectPublicKeyInfo (Chromium's SPKI pin format).
    pub spki_sha256_base64: String,
    /// The chain as PEM, for clients' `--ca`.
    pub cert_pem: String,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl TlsMaterial {
    pub fn load(source: &TlsSource, listen: SocketAddr, extra_sans: &[String]) -> Result<Self> {
        let key_option = match source {
            TlsSource::Pem { .. } => "the key option",
            _ => "--key",
        };
        let (chain, key, cert_pem) = match source {
            TlsSource::SelfSigned => self_signed(listen, extra_sans)?,
            TlsSource::PemFiles { cert, key } => from_pem_files(cert, key)?,
            TlsSource::Pem { cert, key } => {
                let names = PemNames {
                    cert: "the certificate".into(),
                    key: "the private key".into(),
                    cert_option: "the cert option",
                    key_option: "the key option",
                };
                from_pem(cert.clone(), key, &names)?
            }
        };
        let certified = rustls::sign::CertifiedKey::from_der(chain.clone(), key.clone_key(), &provider())
            .map_err(|err| match err {
                rustls::Error::InconsistentKeys(_) => {
                    anyhow!("the certificate does not match the private key; pass the key that belongs to the certificate with {key_option}")
                }
                other => anyhow!("cannot use the private key ({other}); pass an RSA, ECDSA or Ed25519 PEM key with {key_option}"),
            })?;
        let spki = certified.key.public_key().ok_or_else(|| {
            anyhow!("cannot derive the public key from --key; pass an RSA, ECDSA or Ed25519 key")
        })?;
        let spki_sha256_base64 =
            base64::engine::general_purpose::STANDARD.encode(Sha256::digest(spki.as_ref()));
        Ok(Self {
            chain,
            key,
            spki_sha256_base64,
            cert_pem,
        })
    }

    fn server_config(&self, alpn: &[&[u8]]) -> Result<rustls::ServerConfig> {
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_no_client_auth()
            .with_single_cert(self.chain.clone(), self.key.clone_key())?;
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(config)
    }

    /// TLS 1.3 for TCP: ALPN h2 then http/1.1, stateless session tickets for resumption.
    pub fn tcp_config(&self) -> Result<Arc<rustls::ServerConfig>> {
        let mut config = self.server_config(&[b"h2", b"http/1.1"])?;
        config.ticketer = rustls::crypto::ring::Ticketer::new()?;
        Ok(Arc::new(config))
    }

    /// TLS 1.3 for QUIC: ALPN h3, resumption and 0-RTT.
    pub fn quic_config(&self) -> Result<quinn::crypto::rustls::QuicServerConfig> {
        quinn::crypto::rustls::QuicServerConfig::try_from(self.quic_tls()?)
            .map_err(|err| anyhow!("cannot use this TLS configuration for QUIC: {err}"))
    }

    fn quic_tls(&self) -> Result<rustls::ServerConfig> {
        let mut config = self.server_config(&[b"h3"])?;
        // rustls allows 0-RTT only with stateful, single-use tickets (RFC 8446 8.1
        // replay protection), so QUIC keeps sessions in memory instead of a ticketer.
        config.session_storage = rustls::server::ServerSessionMemoryCache::new(QUIC_SESSION_CACHE);
        // QUIC requires exactly this value to accept 0-RTT (RFC 9001 4.6.1).
        config.max_early_data_size = u32::MAX;
        Ok(config)
    }
}

/// Resumable QUIC sessions kept; each issued ticket takes one entry.
const QUIC_SESSION_CACHE: usize = 16 * 1024;

type Material = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>, String);

/// Names for a generated certificate: loopback, the listen address and any extras.
fn subject_alt_names(listen: SocketAddr, extra_sans: &[String]) -> Result<Vec<String>> {
    let mut names: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    if !listen.ip().is_unspecified() {
        names.push(listen.ip().to_string());
    }
    for name in extra_sans {
        names.push(normalize_san(name)?);
    }
    let mut unique = Vec::with_capacity(names.len());
    for name in names {
        if !unique.contains(&name) {
            unique.push(name);
        }
    }
    Ok(unique)
}

fn normalize_san(name: &str) -> Result<String> {
    if let Ok(ip) = name.parse::<IpAddr>() {
        return Ok(ip.to_string());
    }
    ServerName::try_from(name)
        .map_err(|_| anyhow!("--san {name:?} is neither a DNS name nor an IP address; pass e.g. --san example.test or --san 198.18.0.2"))?;
    Ok(name.to_ascii_lowercase())
}

fn self_signed(listen: SocketAddr, extra_sans: &[String]) -> Result<Material> {
    let names = subject_alt_names(listen, extra_sans)?;
    let generated = rcgen::generate_simple_self_signed(names.clone())
        .with_context(|| format!("cannot make a self-signed certificate for {names:?}"))?;
    let key = PrivateKeyDer::Pkcs8(generated.signing_key.serialize_der().into());
    let pem = generated.cert.pem();
    Ok((vec![generated.cert.der().clone()], key, pem))
}

fn from_pem_files(cert_path: &Path, key_path: &Path) -> Result<Material> {
    let cert_pem = std::fs::read_to_string(cert_path).with_context(|| {
        format!(
            "cannot read certificate {}; pass a readable PEM file with --cert",
            cert_path.display()
        )
    })?;
    let key_pem = std::fs::read_to_string(key_path).with_context(|| {
        format!(
            "cannot read private key {}; pass a readable PEM file with --key",
            key_path.display()
        )
    })?;
    let names = PemNames {
        cert: format!("{}", cert_path.display()),
        key: format!("{}", key_path.display()),
        cert_option: "--cert",
        key_option: "--key",
    };
    from_pem(cert_pem, &key_pem, &names)
}

/// What the PEM texts are called in errors: where each came from, and the
/// option that passes it.
struct PemNames {
    cert: String,
    key: String,
    cert_option: &'static str,
    key_option: &'static str,
}

fn from_pem(cert_pem: String, key_pem: &str, names: &PemNames) -> Result<Material> {
    let PemNames {
        cert,
        key,
        cert_option,
        key_option,
    } = names;
    let chain = rustls_pemfile::certs(&mut cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| {
            format!("{cert} is not valid PEM; pass a PEM certificate with {cert_option}")
        })?;
    if chain.is_empty() {
        bail!("{cert} holds no CERTIFICATE block; pass a PEM certificate with {cert_option}");
    }
    let key = rustls_pemfile::private_key(&mut key_pem.as_bytes())
        .with_context(|| {
            format!("{key} is not valid PEM; pass a PEM private key with {key_option}")
        })?
        .ok_or_else(|| {
            anyhow!("{key} holds no private key block; pass a PEM private key with {key_option}")
        })?;
    Ok((chain, key, cert_pem))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::PublicKeyData;

    fn loopback() -> SocketAddr {
        "127.0.0.1:0".parse().unwrap()
    }

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("h3lab-tls-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn sans_cover_loopback_listen_address_and_extras_once() {
        let listen: SocketAddr = "198.18.0.2:8443".parse().unwrap();
        let names =
            subject_alt_names(listen, &["Example.test".into(), "127.0.0.1".into()]).unwrap();
        assert_eq!(
            names,
            [
                "localhost",
                "127.0.0.1",
                "::1",
                "198.18.0.2",
                "example.test"
            ]
        );
    }

    #[test]
    fn unspecified_listen_address_is_not_a_san() {
        let names = subject_alt_names("0.0.0.0:0".parse().unwrap(), &[]).unwrap();
        assert_eq!(names, ["localhost", "127.0.0.1", "::1"]);
    }

    #[test]
    fn invalid_san_is_a_clear_error() {
        let err = TlsMaterial::load(&TlsSource::SelfSigned, loopback(), &["bad name!".into()])
            .err()
            .unwrap();
        assert!(format!("{err:#}").contains("--san"), "{err:#}");
    }

    #[test]
    fn pem_files_load_and_spki_pin_matches_the_key() {
        let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let dir = temp_dir("pem");
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, generated.cert.pem()).unwrap();
        std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
        let material =
            TlsMaterial::load(&TlsSource::PemFiles { cert, key }, loopback(), &[]).unwrap();
        let spki = generated.signing_key.subject_public_key_info();
        let expected = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(&spki));
        assert_eq!(material.spki_sha256_base64, expected);
        assert_eq!(material.cert_pem, generated.cert.pem());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn mismatched_key_names_the_flag() {
        let first = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let second = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let dir = temp_dir("mismatch");
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, first.cert.pem()).unwrap();
        std::fs::write(&key, second.signing_key.serialize_pem()).unwrap();
        let err = TlsMaterial::load(&TlsSource::PemFiles { cert, key }, loopback(), &[])
            .err()
            .unwrap();
        assert!(format!("{err:#}").contains("with --key"), "{err:#}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn missing_pem_file_names_the_flag() {
        let source = TlsSource::PemFiles {
            cert: "/nonexistent/cert.pem".into(),
            key: "/nonexistent/key.pem".into(),
        };
        let err = TlsMaterial::load(&source, loopback(), &[]).err().unwrap();
        assert!(format!("{err:#}").contains("--cert"), "{err:#}");
    }

    #[test]
    fn both_configs_build_with_tickets() {
        let material = TlsMaterial::load(&TlsSource::SelfSigned, loopback(), &[]).unwrap();
        let tcp = material.tcp_config().unwrap();
        assert_eq!(tcp.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);
        assert!(tcp.ticketer.enabled());
        let quic = material.quic_tls().unwrap();
        assert_eq!(quic.alpn_protocols, [b"h3".to_vec()]);
        assert_eq!(quic.max_early_data_size, u32::MAX);
        assert!(!quic.ticketer.enabled(), "0-RTT needs stateful tickets");
        material.quic_config().unwrap();
    }
}
