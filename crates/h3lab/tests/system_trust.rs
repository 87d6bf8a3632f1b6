//! The clients trust the system's certificate authorities, as curl and
//! oha do: a server whose chain leads to a root in `SSL_CERT_FILE` is
//! reached without `--ca` or `--insecure`, and a handshake that fails says
//! why (no trusted root, a name the certificate was not issued for, or
//! an expired certificate).

mod common;

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use common::{Server, EXE};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

/// How the server's leaf certificate is made.
struct Leaf<'a> {
    names: &'a [&'a str],
    expired: bool,
}

const FOR_THIS_ADDRESS: Leaf = Leaf {
    names: &["127.0.0.1"],
    expired: false,
};

/// A test certificate authority named `authority` and, signed by it,
/// `h3lab serve` with `leaf`, its files in `dir`.
fn serve_with_leaf_of_test_ca(dir: &Path, authority: &str, leaf: Leaf) -> Server {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, authority);
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let names: Vec<String> = leaf.names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).unwrap();
    if leaf.expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = params.signed_by(&leaf_key, &issuer).unwrap();
    let (cert, key) = (dir.join("leaf.pem"), dir.join("leaf.key"));
    std::fs::write(&cert, leaf.pem()).unwrap();
    std::fs::write(&key, leaf_key.serialize_pem()).unwrap();
    Server::start(&[
        OsStr::new("--cert"),
        cert.as_os_str(),
        OsStr::new("--key"),
        key.as_os_str(),
    ])
}

/// `h3lab load` of one small response over `proto`, with `SSL_CERT_FILE`
/// naming the system's trust store.
fn load(server: &Server, proto: &str, trust_store: &Path) -> Output {
    Command::new(EXE)
        .args(["load", "-n", "1", "--proto", proto])
        .arg(format!("https://{}/bytes/100", server.addr))
        .env("SSL_CERT_FILE", trust_store)
        .env_remove("SSL_CERT_DIR")
        .output()
        .unwrap()
}

#[test]
fn a_server_whose_root_is_in_the_system_store_is_trusted_without_flags() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve_with_leaf_of_test_ca(dir.path(), "h3lab test CA", FOR_THIS_ADDRESS);
    for proto in ["h1", "h2", "h3"] {
        let output = load(&server, proto, &dir.path().join("ca.pem"));
        assert!(
            output.status.success(),
            "{proto}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// `h3lab load` over h2 and h3 fails, and its message says `cause`.
fn refused_naming(server: &Server, trust_store: &Path, cause: &str) {
    for proto in ["h2", "h3"] {
        let output = load(server, proto, trust_store);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{proto}");
        assert!(stderr.contains(cause), "{proto}: {stderr}");
    }
}

#[test]
fn an_unknown_root_a_name_mismatch_and_an_expired_certificate_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve_with_leaf_of_test_ca(dir.path(), "h3lab test CA", FOR_THIS_ADDRESS);
    // A store holding only another authority.
    let elsewhere = tempfile::tempdir().unwrap();
    serve_with_leaf_of_test_ca(elsewhere.path(), "another CA", FOR_THIS_ADDRESS);
    refused_naming(&server, &elsewhere.path().join("ca.pem"), "no trusted root");

    let misnamed_dir = tempfile::tempdir().unwrap();
    let leaf = Leaf {
        names: &["www.example.test"],
        expired: false,
    };
    let misnamed = serve_with_leaf_of_test_ca(misnamed_dir.path(), "h3lab test CA", leaf);
    refused_naming(
        &misnamed,
        &misnamed_dir.path().join("ca.pem"),
        "name mismatch",
    );

    let expired_dir = tempfile::tempdir().unwrap();
    let leaf = Leaf {
        names: &["127.0.0.1"],
        expired: true,
    };
    let expired = serve_with_leaf_of_test_ca(expired_dir.path(), "h3lab test CA", leaf);
    refused_naming(&expired, &expired_dir.path().join("ca.pem"), "has expired");
}
