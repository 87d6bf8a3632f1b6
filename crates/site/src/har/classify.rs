//! What each HAR entry is: its kind of resource, whether the page load
//! needed it, and why it cannot be replayed, if it cannot.

use std::time::SystemTime;

use h3lab_results::ResourceKind;
use url::Url;

use super::format::{self, Entry};
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
