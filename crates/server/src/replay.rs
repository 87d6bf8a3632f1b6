//! Answers from a replay site (`h3lab site from-har`): each request by its
//! host, method and path, with the recorded status, headers and body, after
//! the recorded think time when the site keeps it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};

use h3lab_site::replay::{Replay, Think, BODIES};

/// The recorded responses of a replay site, ready to send.
#[derive(Debug)]
pub struct ReplaySite {
    page: String,
    hosts: Vec<String>,
    by_request: HashMap<RequestKey, Arc<Reply>>,
}

/// Host (lower case, no port), method and path with query.
type RequestKey = (String, Method, String);

/// One recorded response.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: PathBuf,
    pub think: Duration,
}

impl ReplaySite {
    /// Reads the manifest in `dir` and checks every response can be sent.
    pub fn load(dir: &Path) -> Result<ReplaySite> {
        let replay = Replay::read(dir)?;
        let mut by_request = HashMap::new();
        for recorded in &replay.responses {
            let entry = recorded.entry;
            let fix = "rebuild the site with `h3lab site from-har`";
            let status = StatusCode::from_u16(recorded.status).with_context(|| {
                format!(
                    "entry {entry}: status {} is not valid; {fix}",
                    recorded.status
                )
            })?;
            let method = Method::from_bytes(recorded.method.as_bytes()).with_context(|| {
                format!(
                    "entry {entry}: method `{}` is not valid; {fix}",
                    recorded.method
                )
            })?;
            let mut headers = HeaderMap::new();
            for (name, value) in &recorded.headers {
                let (Ok(name), Ok(value)) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(value),
                ) else {
                    bail!("entry {entry}: header `{name}` is not valid HTTP; {fix}");
                };
                headers.append(name, value);
            }
            let body = dir.join(BODIES).join(&recorded.body);
            if !body.is_file() {
                bail!(
                    "entry {entry}: its body {} is missing; {fix}",
                    body.display()
                );
            }
            let think = match replay.think {
                Think::Recorded => Duration::from_secs_f64(recorded.think_ms.max(0.0) / 1000.0),
                Think::None => Duration::ZERO,
            };
            let reply = Reply {
                status,
                headers,
                body,
                think,
            };
            let key = (recorded.host.clone(), method, recorded.path.clone());
            by_request.insert(key, Arc::new(reply));
        }
        Ok(ReplaySite {
            page: replay.page.clone(),
            hosts: replay.hosts().into_iter().collect(),
            by_request,
        })
    }

    /// The host names the site answers for.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// One line for the banner.
    pub fn describe(&self) -> String {
        format!(
            "replay: {} ({} responses, hosts {})",
            self.page,
            self.by_request.len(),
            self.hosts.join(", ")
        )
    }

    /// The recorded response to a request; HEAD finds GET's.
    pub fn find(&self, method: &Method, host: &str, path: &str) -> Option<Arc<Reply>> {
        let method = match *method {
            Method::HEAD => Method::GET,
            ref other => other.clone(),
        };
        let key = (host.to_ascii_lowercase(), method, path.to_string());
        self.by_request.get(&key).cloned()
    }
}

/// The host a request names: its URI's authority (h2, h3), else `Host`
/// (h1), without the port.
pub fn request_host<'a>(uri: &'a http::Uri, headers: &'a HeaderMap) -> Option<&'a str> {
    let authority = match uri.authority() {
        Some(authority) => authority.as_str(),
        None => headers.get(http::header::HOST)?.to_str().ok()?,
    };
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host,
        _ => authority,
    };
    Some(host.trim_start_matches('[').trim_end_matches(']'))
}
