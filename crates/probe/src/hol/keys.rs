//! The server's traffic keys, from the client's TLS key log, so the probe
//! can read what arrived in its own capture: TLS 1.3 records (h2) and QUIC
//! 1-RTT packets (h3). Only the server-to-client direction is needed.

use std::sync::{Arc, Mutex, PoisonError};

use ring::aead::{self, quic, Aad, LessSafeKey, Nonce, UnboundKey, NONCE_LEN};
use ring::hkdf;

/// The key-log label of the server's first application traffic secret,
/// the same for TLS over TCP and for QUIC (RFC 9001, 5.1).
const SERVER_TRAFFIC_SECRET: &str = "SERVER_TRAFFIC_SECRET_0";

/// Collects the secrets rustls logs; set as the client's `key_log`.
#[derive(Debug, Default)]
pub struct SecretLog(Mutex<Vec<Vec<u8>>>);

impl rustls::KeyLog for SecretLog {
    fn log(&self, label: &str, _client_random: &[u8], secret: &[u8]) {
        if label == SERVER_TRAFFIC_SECRET {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(secret.to_vec());
        }
    }

    fn will_log(&self, label: &str) -> bool {
        label == SERVER_TRAFFIC_SECRET
    }
}

impl SecretLog {
    /// A shared log, to hand to rustls and read afterwards.
    pub fn shared() -> Arc<SecretLog> {
        Arc::new(SecretLog::default())
    }

    /// The server's traffic secret of the one connection made.
    pub fn server_secret(&self) -> anyhow::Result<Vec<u8>> {
        let secrets = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match secrets.as_slice() {
            [secret] => Ok(secret.clone()),
            other => anyhow::bail!(
                "expected the server traffic secret of one connection, found {}",
                other.len()
            ),
        }
    }
}

/// Which TLS 1.3 cipher suite a set of keys is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    /// TLS_AES_128_GCM_SHA256.
    Aes128Gcm,
    /// TLS_AES_256_GCM_SHA384.
    Aes256Gcm,
    /// TLS_CHACHA20_POLY1305_SHA256.
    Chacha20,
}

impl Suite {
    /// The suites whose hash makes a secret of `len` bytes: the key log
    /// does not name the suite, so the reader tries each.
    pub fn candidates(len: usize) -> &'static [Suite] {
        match len {
            48 => &[Suite::Aes256Gcm],
            _ => &[Suite::Aes128Gcm, Suite::Chacha20],
        }
    }

    fn hkdf(self) -> hkdf::Algorithm {
        match self {
            Suite::Aes256Gcm => hkdf::HKDF_SHA384,
            Suite::Aes128Gcm | Suite::Chacha20 => hkdf::HKDF_SHA256,
        }
    }

    fn aead(self) -> &'static aead::Algorithm {
        match self {
            Suite::Aes128Gcm => &aead::AES_128_GCM,
            Suite::Aes256Gcm => &aead::AES_256_GCM,
            Suite::Chacha20 => &aead::CHACHA20_POLY1305,
        }
    }

    fn header_protection(self) -> &'static quic::Algorithm {
        match self {
            Suite::Aes128Gcm => &quic::AES_128,
            Suite::Aes256Gcm => &quic::AES_256,
            Suite::Chacha20 => &quic::CHACHA20,
        }
    }
}

/// Which protocol's key derivation labels to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Labels {
    /// TLS 1.3 records: "key", "iv".
    Tls,
    /// QUIC packets: "quic key", "quic iv", "quic hp" (RFC 9001, 5.1).
    Quic,
}

/// Keys for one direction of one connection.
pub struct TrafficKeys {
    key: LessSafeKey,
    iv: [u8; NONCE_LEN],
    header: Option<quic::HeaderProtectionKey>,
}

impl TrafficKeys {
    /// Derives the keys from a traffic secret.
    pub fn derive(secret: &[u8], suite: Suite, labels: Labels) -> TrafficKeys {
        let (key_label, iv_label) = match labels {
            Labels::Tls => ("key", "iv"),
            Labels::Quic => ("quic key", "quic iv"),
        };
        let key_len = suite.aead().key_len();
        let key = expand_label(suite.hkdf(), secret, key_label, key_len);
        let iv = expand_label(suite.hkdf(), secret, iv_label, NONCE_LEN);
        let header = (labels == Labels::Quic).then(|| {
            let hp = expand_label(suite.hkdf(), secret, "quic hp", key_len);
            quic::HeaderProtectionKey::new(suite.header_protection(), &hp)
                .expect("the key length is the suite's")
        });
        TrafficKeys {
            key: LessSafeKey::new(
                UnboundKey::new(suite.aead(), &key).expect("the key length is the suite's"),
            ),
            iv: iv.try_into().expect("NONCE_LEN bytes"),
            header,
        }
    }

    /// Opens a sealed record or packet in place: `None` when it does not
    /// authenticate (another key, or corrupt).
    pub fn open<'a>(&self, sequence: u64, aad: &[u8], sealed: &'a mut [u8]) -> Option<&'a [u8]> {
        self.key
            .open_in_place(self.nonce(sequence), Aad::from(aad), sealed)
            .ok()
            .map(|plain| &*plain)
    }

    /// Seals `plain` as the server would: for tests' made-up captures.
    #[cfg(test)]
    pub fn seal(&self, sequence: u64, aad: &[u8], plain: &[u8]) -> Vec<u8> {
        let mut sealed = plain.to_vec();
        self.key
            .seal_in_place_append_tag(self.nonce(sequence), Aad::from(aad), &mut sealed)
            .expect("a short test payload");
        sealed
    }

    /// The IV with the record sequence or packet number XORed in.
    fn nonce(&self, sequence: u64) -> Nonce {
        let mut nonce = self.iv;
        for (byte, seq) in nonce[NONCE_LEN - 8..]
            .iter_mut()
            .zip(sequence.to_be_bytes())
        {
            *byte ^= seq;
        }
        Nonce::assume_unique_for_key(nonce)
    }

    /// The QUIC header-protection mask for a 16-byte sample.
    pub fn mask(&self, sample: &[u8]) -> Option<[u8; 5]> {
        self.header.as_ref()?.new_mask(sample).ok()
    }
}

/// The QUIC traffic secret of the next key phase (RFC 9001, 6.1); the
/// header-protection key does not change with it.
pub fn next_quic_secret(secret: &[u8], suite: Suite) -> Vec<u8> {
    expand_label(suite.hkdf(), secret, "quic ku", secret.len())
}

/// HKDF-Expand-Label with an empty context (RFC 8446, 7.1).
fn expand_label(algorithm: hkdf::Algorithm, secret: &[u8], label: &str, len: usize) -> Vec<u8> {
    struct Len(usize);
    impl hkdf::KeyType for Len {
        fn len(&self) -> usize {
            self.0
        }
    }
    let full_label = format!("tls13 {label}");
    let length = (len as u16).to_be_bytes();
    let label_len = [full_label.len() as u8];
    let info: [&[u8]; 4] = [&length, &label_len, full_label.as_bytes(), &[0]];
    let prk = hkdf::Prk::new_less_safe(algorithm, secret);
    let mut out = vec![0; len];
    prk.expand(&info, Len(len))
        .and_then(|okm| okm.fill(&mut out))
        .expect("lengths within HKDF's limit");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    /// RFC 9001 A.1: the server's Initial secret gives these keys; checked
    /// through a packet sealed with the derived key and opened again, and
    /// the derivation itself against the RFC's IV and hp.
    #[test]
    fn quic_labels_derive_the_rfc_9001_keys() {
        let server_initial =
            hex("3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b");
        let iv = expand_label(hkdf::HKDF_SHA256, &server_initial, "quic iv", 12);
        assert_eq!(iv, hex("0ac1493ca1905853b0bba03e"));
        let hp = expand_label(hkdf::HKDF_SHA256, &server_initial, "quic hp", 16);
        assert_eq!(hp, hex("c206b8d9b9f0f37644430b490eeaa314"));
        let keys = TrafficKeys::derive(&server_initial, Suite::Aes128Gcm, Labels::Quic);
        // RFC 9001 A.3's sample and the mask it gives.
        let mask = keys.mask(&hex("2cd0991cd25b0aac406a5816b6394100")).unwrap();
        assert_eq!(mask.to_vec(), hex("2ec0d8356a"));
    }

    #[test]
    fn opening_with_the_wrong_sequence_or_header_fails() {
        let keys = TrafficKeys::derive(&[7u8; 32], Suite::Aes128Gcm, Labels::Tls);
        let sealed = keys.seal(3, b"hdr", b"hello");
        assert_eq!(
            keys.open(3, b"hdr", &mut sealed.clone()),
            Some(&b"hello"[..])
        );
        assert_eq!(keys.open(4, b"hdr", &mut sealed.clone()), None);
        assert_eq!(keys.open(3, b"hdx", &mut sealed.clone()), None);
    }
}
