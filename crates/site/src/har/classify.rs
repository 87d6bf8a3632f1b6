//! What each HAR entry is: its parts, its kind of resource, whether the
//! page load needed it, where the replay serves it, and why the replay
//! leaves it out, if it does (unsupported, a moot redirect, another port,
//! a repeat the browser's cache answered).

use std::time::SystemTime;

use anyhow::{bail, Result};
use h3lab_results::ResourceKind;
use url::Url;

use super::format::{self, known, Entry};
use crate::replay::OutsideLoad;

/// What a response is: Chrome's resource type where the HAR has it, else
/// its content type.
pub(super) fn resource_kind(entry: &Entry, response: &format::Response) -> ResourceKind {
    let by_type = match entry.resource_type.as_deref().unwrap_or("") {
        "document" => Some(ResourceKind::Document),
        "stylesheet" => Some(ResourceKind::Stylesheet),
        "script" => Some(ResourceKind::Script),
        "font" => Some(ResourceKind::Font),
        "image" => Some(ResourceKind::Image),
        "" => None,
        _ => Some(ResourceKind::Other),
    };
    let content_type = response
        .header("content-type")
        .unwrap_or("")
        .to_ascii_lowercase();
    by_type.unwrap_or(match content_type.as_str() {
        t if t.starts_with("text/html") => ResourceKind::Document,
        t if t.starts_with("text/css") => ResourceKind::Stylesheet,
        t if t.contains("javascript") || t.contains("ecmascript") => ResourceKind::Script,
        t if t.starts_with("font/") || t.contains("font-") => ResourceKind::Font,
        t if t.starts_with("image/") => ResourceKind::Image,
        _ => ResourceKind::Other,
    })
}

/// Why the captured page load did not need an entry, if it did not: the
/// browser's own requests (its tab's icon, a prefetch, a manifest) and
/// requests that started after the load event.
pub(super) fn outside_load(
    entry: &Entry,
    url: &Url,
    load_end: Option<SystemTime>,
) -> Option<OutsideLoad> {
    let name = (url.path_segments())
        .and_then(|mut segments| segments.next_back())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let kind = entry.resource_type.as_deref().unwrap_or_default();
    let started = entry.started.as_deref().and_then(format::instant);
    if name.starts_with("favicon") || name.starts_with("apple-touch-icon") || name.ends_with(".ico")
    {
        Some(OutsideLoad::Favicon)
    } else if kind.eq_ignore_ascii_case("prefetch") {
        Some(OutsideLoad::Prefetch)
    } else if kind.eq_ignore_ascii_case("manifest") {
        Some(OutsideLoad::Manifest)
    } else if started
        .zip(load_end)
        .is_some_and(|(started, end)| started > end)
    {
        Some(OutsideLoad::AfterLoad)
    } else {
        None
    }
}

/// Why an entry cannot be replayed, if it cannot.
pub(super) fn unsupported(entry: &Entry, url: &Url, status: u16) -> Option<String> {
    let response = entry.response.as_ref()?;
    let websocket = entry.resource_type.as_deref() == Some("websocket") || status == 101;
    match url.scheme() {
        "https" if websocket => Some("a WebSocket (not replayed)".into()),
        "https" => match (&response.error, status) {
            (Some(error), _) if !error.is_empty() => {
                Some(format!("failed when recorded ({error})"))
            }
            (_, 0) => Some("failed when recorded (no status)".into()),
            _ => None,
        },
        "http" => Some(
            "cleartext http:// (the replay serves https only; --upgrade-cleartext replays it over https)"
                .into(),
        ),
        "ws" | "wss" => Some("a WebSocket (not replayed)".into()),
        "data" | "blob" => Some(format!("a {}: URL (never on the network)", url.scheme())),
        other => Some(format!("a {other}: URL")),
    }
}

/// An entry's request, its URL and its response, which every entry must
/// have.
pub(super) fn parts(
    index: usize,
    entry: &Entry,
) -> Result<(&format::Request, &str, &format::Response)> {
    let Some(request) = &entry.request else {
        bail!("entry {index} has no `request`; remove the entry or export the HAR again");
    };
    let Some(url_text) = request.url.as_deref() else {
        bail!("entry {index} has no `request.url`; remove the entry or export the HAR again");
    };
    let Some(response) = &entry.response else {
        bail!(
            "entry {index} ({url_text}) has no `response`; export the HAR again after the page has finished loading, or remove the entry"
        );
    };
    Ok((request, url_text, response))
}

/// A HAR entry's request as it was made: what decides whether and where
/// the replay serves it.
pub(super) struct Place<'a> {
    pub(super) entry: &'a Entry,
    pub(super) response: &'a format::Response,
    pub(super) url: &'a Url,
    pub(super) status: u16,
    /// Its `http://` URL was upgraded to `https://`.
    pub(super) upgraded: bool,
    /// Why it falls outside the page load, if it does.
    pub(super) outside: Option<&'a OutsideLoad>,
}

/// The TCP connect time of an entry, without the TLS handshake that
/// Chromium counts inside it (Firefox does not).
pub(super) fn connect_ms(timings: &format::Timings, firefox: bool) -> Option<f64> {
    let connect = known(timings.connect)?;
    let ssl = match firefox {
        true => 0.0,
        false => known(timings.ssl).unwrap_or(0.0),
    };
    (connect > ssl).then_some(connect - ssl)
}

/// When the entry's request started and its response ended.
pub(super) fn span(entry: &Entry) -> Option<(SystemTime, SystemTime)> {
    let start = format::instant(entry.started.as_deref()?)?;
    let took = std::time::Duration::from_secs_f64(known(entry.time)? / 1e3);
    Some((start, start + took))
}

impl super::Builder {
    /// Where `at`'s entry is served, its host and port, or why the replay
    /// leaves it out.
    pub(super) fn served_at(&mut self, at: &Place<'_>) -> Result<(String, u16), String> {
        if let Some(mut reason) = unsupported(at.entry, at.url, at.status) {
            if let Some(outside) = at.outside {
                reason.push_str(&format!("; {outside}, outside the page load"));
            }
            return Err(reason);
        }
        if at.upgraded && self.redirects_to_itself(at.response, at.url, at.status) {
            self.moot_redirects += 1;
            return Err(
                "a redirect from http:// to its own https:// URL, moot once upgraded".into(),
            );
        }
        let Some(host) = at.url.host_str().map(str::to_ascii_lowercase) else {
            return Err("a URL without a host".into());
        };
        let port = at.url.port_or_known_default().unwrap_or(443);
        match self.origins.first() {
            Some(first) if first.port != port => Err(format!(
                "port {port} differs from the page's port {}; the replay serves one port",
                first.port
            )),
            _ => Ok((host, port)),
        }
    }

    /// How many times the request `key` (method, URL) came before, or why
    /// this repeat is left out: the browser's cache answered it, or only
    /// the first of each is kept.
    pub(super) fn repeat(&self, entry: &Entry, key: &(String, String)) -> Result<usize, String> {
        let Some(earlier) = self.by_request.get(key) else {
            return Ok(0);
        };
        let first = self.pending[earlier[0]].response.entry;
        if let Some(cache) = entry.from_cache.as_deref().filter(|c| !c.is_empty()) {
            return Err(format!(
                "a repeat of entry {first} answered by the browser's {cache} cache (no request on the network)"
            ));
        }
        if self.keep_first_duplicate {
            return Err(format!(
                "a repeat of entry {first} (--keep-first-duplicate)"
            ));
        }
        Ok(earlier.len())
    }
}
