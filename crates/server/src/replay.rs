//! Answers from a replay site (`h3lab site from-har`): each request by its
//! host, method and path, with the recorded status, headers and body, after
//! the recorded think time when the site keeps it.
//!
//! A request the page made more than once gets its recorded responses in
//! order, and the last one beyond them; a request for the page itself
//! starts every count again, so each page load replays from the top (loads
//! of one replay are taken one at a time).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};

use h3lab_site::replay::{Replay, Think, BODIES};

/// The recorded responses of a replay site, ready to send.
#[derive(Debug)]
pub struct ReplaySite {
    page: String,
    hosts: Vec<String>,
    /// Each request's recorded responses, in recorded order.
    by_request: HashMap<RequestKey, Vec<Arc<Reply>>>,
    /// The page's own request, which starts a load.
    page_request: Option<RequestKey>,
    /// How often each repeated request was answered in this load.
    answered: Mutex<HashMap<RequestKey, usize>>,
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
        let mut by_request: HashMap<RequestKey, Vec<Arc<Reply>>> = HashMap::new();
        let mut page_request = None;
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
            if recorded.url == replay.page {
                page_request = Some(key.clone());
            }
            by_request.entry(key).or_default().push(Arc::new(reply));
        }
        Ok(ReplaySite {
            page: replay.page.clone(),
            hosts: replay.hosts().into_iter().collect(),
            by_request,
            page_request,
            answered: Mutex::default(),
        })
    }

    /// The host names the site answers for.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// One line for the banner.
    pub fn describe(&self) -> String {
        let responses: usize = self.by_request.values().map(Vec::len).sum();
        format!(
            "replay: {} ({responses} responses, hosts {})",
            self.page,
            self.hosts.join(", ")
        )
    }

    /// The recorded response to a request: for a repeated request, the
    /// next in recorded order. HEAD finds GET's without taking a turn.
    pub fn find(&self, method: &Method, host: &str, path: &str) -> Option<Arc<Reply>> {
        let head = *method == Method::HEAD;
        let method = if head { Method::GET } else { method.clone() };
        let key = (host.to_ascii_lowercase(), method, path.to_string());
        let replies = self.by_request.get(&key)?;
        let starts_a_load = !head && self.page_request.as_ref() == Some(&key);
        if starts_a_load {
            self.answered
                .lock()
                .expect("no panic while counting")
                .clear();
        }
        if replies.len() == 1 {
            return replies.first().cloned();
        }
        let mut answered = self.answered.lock().expect("no panic while counting");
        let turn = answered.entry(key).or_default();
        let reply = &replies[(*turn).min(replies.len() - 1)];
        if !head {
            *turn += 1;
        }
        Some(reply.clone())
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
