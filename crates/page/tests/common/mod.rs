//! What the page tests share: an in-process server's certificate and
//! configuration, and the runtime it runs on.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use h3lab_server::{ServerConfig, TlsSource};

/// The host name tests resolve to the server through a DNS server of
/// their own; the certificate covers it.
#[allow(dead_code)]
pub const SITE_HOST: &str = "www.site.test";

/// A server configuration on 127.0.0.1 (port 0) with a self-signed
/// certificate and key written into `dir`, and the certificate's path,
/// which clients trust with `--ca`.
pub fn server_config(dir: &Path) -> (ServerConfig, PathBuf) {
    let names = vec!["127.0.0.1".into(), "localhost".into(), SITE_HOST.into()];
    let generated = rcgen::generate_simple_self_signed(names).unwrap();
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, generated.cert.pem()).unwrap();
    std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
    let config = ServerConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        tls: TlsSource::PemFiles {
            cert: cert.clone(),
            key,
        },
        ..ServerConfig::default()
    };
    (config, cert)
}

/// As [`server_config`], with a certificate signed by a test certificate
/// authority, and the authority's certificate's path instead.
#[allow(dead_code)]
pub fn server_config_under_authority(dir: &Path) -> (ServerConfig, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    (ca_params.distinguished_name).push(DnType::CommonName, "h3lab page test CA");
    let ca_key = KeyPair::generate().unwrap();
    let authority = dir.join("authority.pem");
    std::fs::write(&authority, ca_params.self_signed(&ca_key).unwrap().pem()).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let names = vec!["127.0.0.1".into(), "localhost".into(), SITE_HOST.into()];
    let key = KeyPair::generate().unwrap();
    let leaf = (CertificateParams::new(names).unwrap())
        .signed_by(&key, &issuer)
        .unwrap();
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, leaf.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    let config = ServerConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        tls: TlsSource::PemFiles {
            cert: cert_path,
            key: key_path,
        },
        ..ServerConfig::default()
    };
    (config, authority)
}

/// The runtime servers run on; a test keeps it until its servers drop.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}
