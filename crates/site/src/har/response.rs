//! What the replay sends for a HAR entry: its body (as recorded, encoded
//! again to its recorded size, or filler where the HAR kept none) and the
//! headers that go with it.

use std::path::Path;

use anyhow::{Context, Result};
use base64::Engine;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::encode::{self, Encoding};
use super::format::{self, known, Entry};
use super::upgrade;

/// The body the HAR holds (embedded, or in Playwright's file beside it).
fn recorded_body(
    index: usize,
    response: &format::Response,
    har_dir: &Path,
) -> Result<Option<Vec<u8>>> {
    let Some(content) = &response.content else {
        return Ok(None);
    };
    if let Some(text) = &content.text {
        if content.encoding.as_deref() == Some("base64") {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .with_context(|| {
                    format!("entry {index}: its body says base64 but is not; export the HAR again")
                })?;
            return Ok(Some(bytes));
        }
        return Ok(Some(text.clone().into_bytes()));
    }
    if let Some(file) = &content.file {
        let path = har_dir.join(file);
        let bytes = std::fs::read(&path).with_context(|| {
            format!(
                "entry {index}: its body is in {}, which cannot be read; keep the HAR's attachments beside it",
                path.display()
            )
        })?;
        return Ok(Some(bytes));
    }
    Ok(None)
}

/// Deterministic filler of `size` bytes for a body the HAR does not hold.
fn filler(index: usize, size: u64) -> Vec<u8> {
    let mut bytes = vec![0; size as usize];
    ChaCha8Rng::seed_from_u64(index as u64).fill_bytes(&mut bytes);
    bytes
}

/// RFC 9110: a name is a token; a value has no control characters but tab.
fn valid_header(name: &str, value: &str) -> bool {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    !name.is_empty()
        && name.chars().all(token)
        && value.chars().all(|c| c == '\t' || !c.is_control())
}

impl super::Builder {
    /// The body as it goes on the wire (`recorded` bytes long where the
    /// HAR says and the encoding allows), whether it is filler, and the
    /// encoding it carries.
    pub(super) fn body(
        &mut self,
        index: usize,
        entry: &Entry,
        recorded: Option<u64>,
        har_dir: &Path,
    ) -> Result<(Vec<u8>, bool, Option<Encoding>)> {
        let response = entry.response.as_ref().expect("checked by add");
        let Some(mut decoded) = recorded_body(index, response, har_dir)? else {
            let size = recorded
                .or_else(|| known(response.content.as_ref()?.size).map(|s| s as u64))
                .unwrap_or(0);
            return Ok((filler(index, size), true, None));
        };
        let text = response
            .header("content-type")
            .is_some_and(upgrade::is_text);
        if let Some(upgrade) = self.upgrade.as_mut().filter(|_| text) {
            let (upgraded, rewritten) = upgrade.text(&decoded);
            upgrade.rewritten += rewritten;
            decoded = upgraded;
        }
        let header = response.header("content-encoding");
        let Some(value) = header.filter(|v| !v.trim().eq_ignore_ascii_case("identity")) else {
            return Ok((decoded, false, None));
        };
        match Encoding::from_header(value) {
            Some(encoding) => {
                let encoded = encode::encode(&decoded, encoding, recorded)
                    .with_context(|| format!("entry {index}: encoding its body as {value}"))?;
                Ok((encoded, false, Some(encoding)))
            }
            None => {
                let url = entry.request.as_ref().and_then(|r| r.url.clone());
                self.decoded.push(format!(
                    "entry {index} ({value}): {}",
                    url.unwrap_or_default()
                ));
                Ok((decoded, false, None))
            }
        }
    }

    /// The recorded headers a replay can send: framing and connection
    /// headers go (the server sets its own), and `content-encoding` stays
    /// only when the body carries it.
    pub(super) fn headers(
        &mut self,
        index: usize,
        response: &format::Response,
        encoding: Option<Encoding>,
    ) -> Vec<(String, String)> {
        const FRAMING: [&str; 10] = [
            "content-length",
            "transfer-encoding",
            "connection",
            "keep-alive",
            "proxy-connection",
            "upgrade",
            "te",
            "trailer",
            "alt-svc",
            "content-encoding",
        ];
        let mut kept = Vec::new();
        for header in &response.headers {
            let name = header.name.to_ascii_lowercase();
            if name.starts_with(':') || FRAMING.contains(&name.as_str()) {
                continue;
            }
            if !valid_header(&name, &header.value) {
                self.dropped_headers
                    .push(format!("entry {index}: `{}`", header.name));
                continue;
            }
            let value = match self.upgrade.as_mut() {
                Some(upgrade) if ["location", "link"].contains(&name.as_str()) => {
                    let (value, rewritten) = upgrade.text(header.value.as_bytes());
                    upgrade.rewritten += rewritten;
                    String::from_utf8_lossy(&value).into_owned()
                }
                _ => header.value.clone(),
            };
            kept.push((name, value));
        }
        if encoding.is_some() {
            let value = response.header("content-encoding").unwrap_or_default();
            kept.push(("content-encoding".into(), value.trim().to_string()));
        }
        kept
    }
}
