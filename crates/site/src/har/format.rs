//! The parts of a HAR file (1.2, and 1.1 which it extends) that a replay
//! needs, with the private fields browsers and tools add.
//!
//! The `har` crate's types drop the underscore fields (`_initiator`,
//! `_transferSize`, Playwright's `_file`) and require fields that tools
//! leave out, so the import reads its own, lenient shapes: every field a
//! tool may omit is optional, and unknown fields are ignored.

use serde::Deserialize;
use serde_json::Value;

/// The file's top level.
#[derive(Debug, Deserialize)]
pub struct HarFile {
    pub log: Option<Log>,
}

#[derive(Debug, Deserialize)]
pub struct Log {
    pub version: Option<String>,
    pub creator: Option<Creator>,
    #[serde(default)]
    pub pages: Vec<Page>,
    pub entries: Option<Vec<Entry>>,
}

#[derive(Debug, Deserialize)]
pub struct Creator {
    pub name: Option<String>,
    pub version: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Page {
    pub id: Option<String>,
    /// Chrome and Playwright write the page's URL here; others a title.
    pub title: Option<String>,
    /// WebPageTest: the URL the test loaded.
    #[serde(rename = "_URL")]
    pub url: Option<String>,
    /// WebPageTest: the run, from 1.
    #[serde(rename = "_run")]
    pub run: Option<Value>,
    /// WebPageTest: 0 for the first view, 1 for the repeat view.
    #[serde(rename = "_cached")]
    pub cached: Option<Value>,
    #[serde(rename = "pageTimings")]
    pub page_timings: Option<PageTimings>,
    /// When the page load started (RFC 3339, with `Z` or an offset).
    #[serde(rename = "startedDateTime")]
    pub started: Option<String>,
}

impl Page {
    /// WebPageTest's run and view (0 first, 1 repeat), where it says.
    pub fn run_and_view(&self) -> Option<(u64, u64)> {
        let number = |value: &Value| match value {
            Value::Number(n) => n.as_u64(),
            Value::String(text) => text.parse().ok(),
            _ => None,
        };
        Some((number(self.run.as_ref()?)?, number(self.cached.as_ref()?)?))
    }
}

/// Milliseconds from the page's start; -1 (or absent) is unknown.
#[derive(Debug, Deserialize)]
pub struct PageTimings {
    #[serde(rename = "onContentLoad")]
    pub on_content_load: Option<f64>,
    #[serde(rename = "onLoad")]
    pub on_load: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub struct Entry {
    pub pageref: Option<String>,
    /// When the request started (RFC 3339, with `Z` or an offset).
    #[serde(rename = "startedDateTime")]
    pub started: Option<String>,
    /// From the request's start to the response's end, in ms.
    pub time: Option<f64>,
    pub request: Option<Request>,
    pub response: Option<Response>,
    pub timings: Option<Timings>,
    /// Chrome: `{type, url, stack}`; WebPageTest: the initiator's URL.
    #[serde(rename = "_initiator")]
    pub initiator: Option<Value>,
    /// Chrome's resource type (`document`, `websocket`, ...).
    #[serde(rename = "_resourceType")]
    pub resource_type: Option<String>,
    /// Chrome and Playwright: headers and body on the wire.
    #[serde(rename = "_transferSize")]
    pub transfer_size: Option<f64>,
    /// Chrome: `memory` or `disk` when the browser's cache answered.
    #[serde(rename = "_fromCache")]
    pub from_cache: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Request {
    pub method: Option<String>,
    pub url: Option<String>,
    #[serde(default)]
    pub headers: Vec<Header>,
    /// The body sent, where the tool kept it.
    #[serde(rename = "postData")]
    pub post_data: Option<PostData>,
    /// The body's size in bytes; -1 or absent when unknown.
    #[serde(rename = "bodySize")]
    pub body_size: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub struct PostData {
    #[serde(rename = "mimeType")]
    pub mime_type: Option<String>,
    pub text: Option<String>,
}

impl Request {
    /// The request's body as recorded: its size, its content type and its
    /// text where the HAR holds it. None for a request without a body.
    pub fn recorded_body(&self) -> Option<crate::replay::RequestBody> {
        let text = (self.post_data.as_ref()).and_then(|data| data.text.clone());
        let bytes = match &text {
            Some(text) => text.len() as u64,
            None => known(self.body_size).filter(|&size| size > 0.0)? as u64,
        };
        let declared = (self.headers.iter())
            .find(|h| h.name.eq_ignore_ascii_case("content-type"))
            .map(|h| h.value.clone());
        let content_type = (self.post_data.as_ref())
            .and_then(|data| data.mime_type.clone())
            .filter(|mime| !mime.is_empty())
            .or(declared);
        (bytes > 0 || text.is_some()).then_some(crate::replay::RequestBody {
            bytes,
            content_type,
            text,
        })
    }
}

#[derive(Debug, Deserialize)]
pub struct Response {
    pub status: Option<f64>,
    #[serde(rename = "httpVersion")]
    pub http_version: Option<String>,
    #[serde(default)]
    pub headers: Vec<Header>,
    pub content: Option<Content>,
    #[serde(rename = "bodySize")]
    pub body_size: Option<f64>,
    #[serde(rename = "headersSize")]
    pub headers_size: Option<f64>,
    /// Chrome and Playwright: headers and body on the wire.
    #[serde(rename = "_transferSize")]
    pub transfer_size: Option<f64>,
    /// Chrome: the network error of a failed request.
    #[serde(rename = "_error")]
    pub error: Option<String>,
}

impl Response {
    /// A header's value, the last of its name (in any case), if it has one.
    pub fn header(&self, name: &str) -> Option<&str> {
        (self.headers.iter().rev())
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value.as_str())
    }
}

#[derive(Debug, Deserialize)]
pub struct Header {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Deserialize)]
pub struct Content {
    /// The decoded body's length.
    pub size: Option<f64>,
    pub text: Option<String>,
    /// `base64` when `text` is.
    pub encoding: Option<String>,
    /// Playwright: the body in a file beside the HAR.
    #[serde(rename = "_file")]
    pub file: Option<String>,
}

/// Milliseconds; -1 (or absent) is unknown.
#[derive(Debug, Default, Deserialize)]
pub struct Timings {
    pub connect: Option<f64>,
    pub ssl: Option<f64>,
    pub wait: Option<f64>,
}

/// The protocol an `httpVersion` names, as ALPN spells it (`h3`, `h2`,
/// `http/1.1`): tools write `h2`, `http/2.0`, `HTTP/2`, `HTTP/2.0`.
pub fn protocol_name(http_version: &str) -> Option<String> {
    let version = http_version.trim().to_ascii_lowercase();
    let name = match version.as_str() {
        "" | "unknown" => return None,
        "h3" | "http/3" | "http/3.0" | "h3-29" => "h3",
        "h2" | "http/2" | "http/2.0" => "h2",
        "http/1.1" => "http/1.1",
        "http/1.0" => "http/1.0",
        other => other,
    };
    Some(name.to_string())
}

/// An RFC 3339 time as HAR writes it: `Z` (Chrome, Playwright) or an
/// offset (Firefox's local time, WebPageTest's `+00:00`); `None` if it is
/// neither.
pub fn instant(text: &str) -> Option<std::time::SystemTime> {
    let text = text.trim();
    if text.ends_with(['Z', 'z']) {
        return humantime::parse_rfc3339_weak(text).ok();
    }
    let (local, offset) = text.split_at(text.len().checked_sub(6)?);
    let (sign, hours_minutes) = offset.split_at(1);
    let (hours, minutes) = hours_minutes.split_once(':')?;
    let offset = std::time::Duration::from_secs(
        hours.parse::<u64>().ok()? * 3600 + minutes.parse::<u64>().ok()? * 60,
    );
    let as_utc = humantime::parse_rfc3339_weak(&format!("{local}Z")).ok()?;
    match sign {
        "+" => as_utc.checked_sub(offset),
        "-" => as_utc.checked_add(offset),
        _ => None,
    }
}

/// A non-negative recorded figure; HAR writes -1 for unknown.
pub fn known(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite() && *v >= 0.0)
}

impl Entry {
    /// The URL that caused this request, where the HAR names it: Chrome's
    /// initiator URL or the script at the top of its stack, or
    /// WebPageTest's string.
    pub fn initiator_url(&self) -> Option<String> {
        match self.initiator.as_ref()? {
            Value::String(url) if !url.is_empty() => Some(url.clone()),
            Value::Object(fields) => fields
                .get("url")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| stack_url(fields.get("stack")?)),
            _ => None,
        }
    }

    /// The body's bytes on the wire as recorded, if the HAR says. Firefox
    /// counts the response's header bytes in `bodySize`
    /// (`body_size_has_headers`); Chrome writes -1 there for HTTP/2 and
    /// HTTP/3 and leaves `_transferSize` less the headers.
    pub fn recorded_body_bytes(&self, body_size_has_headers: bool) -> Option<u64> {
        let response = self.response.as_ref()?;
        if let Some(size) = known(response.body_size).filter(|&size| size > 0.0) {
            let headers = match body_size_has_headers {
                true => known(response.headers_size).unwrap_or(0.0),
                false => 0.0,
            };
            return Some((size - headers).max(0.0) as u64);
        }
        let transfer = known(response.transfer_size.or(self.transfer_size))?;
        let headers = known(response.headers_size)?;
        (transfer > headers).then_some((transfer - headers) as u64)
    }
}

/// The first script URL in a Chrome initiator stack, its parents included.
fn stack_url(stack: &Value) -> Option<String> {
    let frames = stack.get("callFrames").and_then(Value::as_array);
    let own = frames.into_iter().flatten().find_map(|frame| {
        let url = frame.get("url")?.as_str()?;
        (!url.is_empty()).then(|| url.to_string())
    });
    own.or_else(|| stack_url(stack.get("parent")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn har_times_with_z_or_an_offset_name_the_same_instant() {
        let utc = instant("2026-11-20T09:15:30.123Z").unwrap();
        for text in [
            "2026-11-20T10:15:30.123+01:00",
            "2026-11-20T09:15:30.123+00:00",
            "2026-11-20T04:15:30.123-05:00",
        ] {
            assert_eq!(instant(text), Some(utc), "{text}");
        }
        for bad in ["", "yesterday", "2026-11-20T09:15:30.123*01:00"] {
            assert_eq!(instant(bad), None, "{bad}");
        }
    }
}
