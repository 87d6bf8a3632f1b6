//! `--upgrade-cleartext`: a page captured over `http://` replayed over
//! https, as it would be served over TLS. h2 and h3 need TLS, and someone
//! asking about h3 wants the page as a TLS site would serve it.
//!
//! The capture's cleartext URLs become `https://` on the same host (port
//! 80 becomes 443); so do the `http://` URLs of those hosts in text bodies
//! and in `Location` and `Link` headers. URLs of other hosts stay as they
//! are: the capture never fetched them.

use std::collections::BTreeSet;

use url::Url;

/// The cleartext hosts of a capture, and what upgrading them changed.
#[derive(Debug, Default)]
pub struct Upgrade {
    hosts: BTreeSet<String>,
    /// Entries captured over `http://` that are replayed over https.
    pub entries: usize,
    /// `http://` URLs rewritten in bodies and headers.
    pub rewritten: usize,
}

/// Bytes that may belong to a host name.
fn is_host_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'.'
}

impl Upgrade {
    /// Upgrades the URLs of `hosts` (lower case).
    pub fn new(hosts: BTreeSet<String>) -> Upgrade {
        Upgrade {
            hosts,
            ..Upgrade::default()
        }
    }

    /// The hosts upgraded.
    pub fn hosts(&self) -> &BTreeSet<String> {
        &self.hosts
    }

    /// Makes a cleartext URL of the capture https; says whether it did.
    pub fn url(&self, url: &mut Url) -> bool {
        let cleartext = url.scheme() == "http"
            && (url.host_str()).is_some_and(|host| self.hosts.contains(&host.to_ascii_lowercase()));
        if !cleartext {
            return false;
        }
        // Between special schemes, which url allows; port 80 is the default
        // and so absent, and becomes 443.
        url.set_scheme("https").is_ok()
    }

    /// A URL's text, upgraded where it is one of the capture's.
    pub fn url_text(&self, text: &str) -> String {
        let Ok(mut url) = Url::parse(text) else {
            return text.to_string();
        };
        match self.url(&mut url) {
            true => url.to_string(),
            false => text.to_string(),
        }
    }

    /// `text` with every `http://` URL of the capture's hosts made
    /// `https://`, JSON's escaped `http:\/\/` too (and `:80` dropped), and
    /// the count of URLs changed.
    pub fn text(&self, text: &[u8]) -> (Vec<u8>, usize) {
        const SEPARATORS: [&[u8]; 2] = [b"://", br":\/\/"];
        let mut out = Vec::with_capacity(text.len() + 64);
        let mut count = 0;
        let mut at = 0;
        while at < text.len() {
            let rest = &text[at..];
            let separator = (rest.starts_with(b"http"))
                .then(|| SEPARATORS.into_iter().find(|s| rest[4..].starts_with(s)))
                .flatten();
            let Some(separator) = separator else {
                out.push(text[at]);
                at += 1;
                continue;
            };
            let host_start = 4 + separator.len();
            let host_len = (rest[host_start..].iter())
                .take_while(|&&b| is_host_byte(b))
                .count();
            let host = &rest[host_start..host_start + host_len];
            let host = String::from_utf8_lossy(host).to_ascii_lowercase();
            if !self.hosts.contains(&host) {
                out.extend_from_slice(&rest[..host_start]);
                at += host_start;
                continue;
            }
            out.extend_from_slice(b"https");
            out.extend_from_slice(&rest[4..host_start + host_len]);
            at += host_start + host_len;
            let after = &text[at..];
            let default_port =
                after.starts_with(b":80") && !after.get(3).is_some_and(u8::is_ascii_digit);
            if default_port {
                at += 3;
            }
            count += 1;
        }
        (out, count)
    }
}

/// Whether a body of this content type is text whose URLs can be upgraded.
pub fn is_text(content_type: &str) -> bool {
    let content_type = content_type.to_ascii_lowercase();
    content_type.starts_with("text/")
        || ["json", "javascript", "ecmascript", "xml", "svg"]
            .iter()
            .any(|kind| content_type.contains(kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn news() -> Upgrade {
        let hosts = ["news.test", "static.news.test"].map(String::from);
        Upgrade::new(hosts.into_iter().collect())
    }

    #[test]
    fn only_the_captures_hosts_are_upgraded_in_text() {
        let cases: [(&str, &str, usize); 7] = [
            (
                r#"<img src="http://static.news.test/a.png">"#,
                r#"<img src="https://static.news.test/a.png">"#,
                1,
            ),
            (
                "url(http://NEWS.test:80/bg.png)",
                "url(https://NEWS.test/bg.png)",
                1,
            ),
            ("http://news.test:8080/x", "https://news.test:8080/x", 1),
            (
                r#"{"u":"http:\/\/news.test\/x"}"#,
                r#"{"u":"https:\/\/news.test\/x"}"#,
                1,
            ),
            // Other hosts, and longer names that start with one, stay.
            (
                "http://other.example/ http://news.test.evil/",
                "http://other.example/ http://news.test.evil/",
                0,
            ),
            (
                "https://news.test/ and http:/news.test",
                "https://news.test/ and http:/news.test",
                0,
            ),
            ("a http://news.test", "a https://news.test", 1),
        ];
        for (text, upgraded, count) in cases {
            let (out, changed) = news().text(text.as_bytes());
            assert_eq!(
                (String::from_utf8(out).unwrap().as_str(), changed),
                (upgraded, count),
                "{text}"
            );
        }
    }

    #[test]
    fn a_cleartext_url_becomes_https_on_the_same_host() {
        let upgrade = news();
        let cases = [
            ("http://news.test/", Some("https://news.test/")),
            ("http://news.test:80/a?b", Some("https://news.test/a?b")),
            ("http://news.test:8080/", Some("https://news.test:8080/")),
            ("http://other.example/", None),
            ("https://news.test/", None),
        ];
        for (text, upgraded) in cases {
            let mut url = Url::parse(text).unwrap();
            let changed = upgrade.url(&mut url);
            assert_eq!(
                changed.then(|| url.to_string()).as_deref(),
                upgraded,
                "{text}"
            );
        }
    }
}
