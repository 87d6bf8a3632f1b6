//! `h3lab site from-har`: a captured page (HAR 1.2, or 1.1) rebuilt as a
//! [replay site](crate::replay) that `h3lab serve --site` answers for
//! every origin the page used.

mod classify;
mod encode;
mod format;
mod response;
mod summary;
mod upgrade;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::SystemTime;

use anyhow::{bail, Context, Result};
use h3lab_results::ResourceKind;
use url::Url;

use crate::replay::{
    Origin, RecordedLoad, RecordedResponse, Replay, Skipped, Think, UpgradedCleartext, BODIES,
    MANIFEST, SCHEMA,
};
use classify::{connect_ms, outside_load, parts, resource_kind, span, Place};
use format::{known, Entry, HarFile, Log};
pub use summary::{off_size, ImportSummary};
use upgrade::Upgrade;

/// Where a recorded redirect points, resolved against its URL.
fn location(response: &RecordedResponse) -> Option<Url> {
    let (_, value) = response
        .headers
        .iter()
        .find(|(name, _)| name == "location")?;
    Url::parse(&response.url).ok()?.join(value).ok()
}

/// Redirects followed from the capture's URL to its page, at most (as
/// browsers stop at about 20).
const MAX_REDIRECTS: usize = 20;

/// How to import a HAR.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Whether the replay waits each response's recorded think time.
    pub think: Think,
    /// The page to import, by its `pages[].id`; `None` is the first.
    pub page: Option<String>,
    /// Of a request made more than once, keep only the first response
    /// (by default each is kept and replayed in recorded order).
    pub keep_first_duplicate: bool,
    /// Replay a capture's cleartext `http://` entries over https, their
    /// URLs upgraded (by default they are skipped).
    pub upgrade_cleartext: bool,
}

/// Reads the HAR at `har`, writes the replay site to `out`.
pub fn import(har: &Path, out: &Path, options: &ImportOptions) -> Result<ImportSummary> {
    let log = read_log(har)?;
    let creator = log
        .creator
        .as_ref()
        .map(|c| {
            let version = c.version.as_deref().unwrap_or("");
            format!("{} {version}", c.name.as_deref().unwrap_or("unknown tool"))
        })
        .unwrap_or_else(|| "unknown tool".into());
    let (page_id, page_note) = choose_page(&log.pages, options.page.as_deref())?;
    let chosen = (log.pages.iter())
        .find(|p| p.id.is_some() && p.id == page_id)
        .or(log.pages.first());
    let timings = chosen.and_then(|p| p.page_timings.as_ref());
    // The URL the capture loaded, where the HAR says: WebPageTest's `_URL`,
    // or a title that is a URL (Chrome and Playwright write the URL there).
    let mut page_url = chosen
        .and_then(|p| {
            p.url
                .iter()
                .chain(&p.title)
                .find_map(|t| Url::parse(t).ok())
        })
        .filter(|url| matches!(url.scheme(), "http" | "https"));
    let recorded = RecordedLoad {
        tool: creator.trim().to_string(),
        protocol: None,
        on_load_ms: timings.and_then(|t| known(t.on_load)),
        on_content_load_ms: timings.and_then(|t| known(t.on_content_load)),
    };
    let entries = log.entries.unwrap_or_default();
    let har_dir = har.parent().unwrap_or(Path::new("."));
    let firefox = creator.starts_with("Firefox");
    let on_page = |entry: &&Entry| match (&page_id, &entry.pageref) {
        (Some(page), Some(pageref)) => page == pageref,
        _ => true,
    };
    let upgrade = (options.upgrade_cleartext)
        .then(|| Upgrade::new(cleartext_hosts(entries.iter().filter(on_page))));
    if let (Some(upgrade), Some(url)) = (&upgrade, &mut page_url) {
        upgrade.url(url);
    }
    let load_end = chosen.and_then(|page| {
        let started = format::instant(page.started.as_deref()?)?;
        let on_load = known(page.page_timings.as_ref()?.on_load)?;
        Some(started + std::time::Duration::from_secs_f64(on_load / 1000.0))
    });
    let mut builder = Builder::new(options.keep_first_duplicate, firefox, upgrade);
    builder.load_end = load_end;
    for (index, entry) in entries.iter().enumerate() {
        if on_page(&entry) {
            builder.add(index, entry, har_dir)?;
        }
    }
    let source = format!(
        "{} ({})",
        har.file_name().unwrap_or_default().to_string_lossy(),
        creator.trim()
    );
    builder.finish(source, options.think, recorded, page_note, page_url, out)
}

/// The `log` of the HAR at `har`, of a version h3lab reads.
fn read_log(har: &Path) -> Result<Log> {
    let text =
        std::fs::read_to_string(har).with_context(|| format!("cannot read {}", har.display()))?;
    let file: HarFile = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not JSON a HAR reader understands; export the page again as HAR",
            har.display()
        )
    })?;
    let Some(log) = file.log else {
        bail!(
            "{} has no `log` object, so it is not a HAR file; export one from the browser's DevTools (Network → Save all as HAR)",
            har.display()
        );
    };
    match log.version.as_deref() {
        Some("1.2") | Some("1.1") => {}
        Some(other) => bail!(
            "{} is HAR version {other}; h3lab reads HAR 1.2 (and 1.1, which it extends); export the page again from a current browser or tool",
            har.display()
        ),
        None => bail!(
            "{} has no `log.version`; a HAR 1.2 file says \"version\": \"1.2\"",
            har.display()
        ),
    }
    Ok(log)
}

/// A URL's path with its query: what a request asks for.
fn path_and_query(url: &Url) -> String {
    match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_string(),
    }
}

/// The hosts of the entries captured over `http://`, lower case.
fn cleartext_hosts<'a>(entries: impl Iterator<Item = &'a Entry>) -> BTreeSet<String> {
    let urls = entries.filter_map(|entry| Url::parse(entry.request.as_ref()?.url.as_deref()?).ok());
    let cleartext = urls.filter(|url| url.scheme() == "http");
    cleartext
        .filter_map(|url| Some(url.host_str()?.to_ascii_lowercase()))
        .collect()
}

/// The page whose entries to import: the one asked for, or else the
/// first view of the first run (WebPageTest), or else the first listed.
fn choose_page(
    pages: &[format::Page],
    wanted: Option<&str>,
) -> Result<(Option<String>, Option<String>)> {
    let ids: Vec<&str> = pages.iter().filter_map(|p| p.id.as_deref()).collect();
    let first_view = (pages.iter().filter(|p| p.id.is_some()))
        .filter_map(|p| Some((p.run_and_view()?, p)))
        .filter(|((_, view), _)| *view == 0)
        .min_by_key(|((run, _), _)| *run)
        .map(|(_, page)| page);
    let default = first_view.or(pages.iter().find(|p| p.id.is_some()));
    match wanted {
        Some(wanted) if ids.contains(&wanted) => Ok((Some(wanted.to_string()), None)),
        Some(wanted) => bail!(
            "the HAR has no page `{wanted}`; its pages are: {}",
            if ids.is_empty() {
                "none".to_string()
            } else {
                ids.join(", ")
            }
        ),
        None => {
            let Some(page) = default else {
                return Ok((None, None));
            };
            let id = page.id.clone();
            if ids.len() < 2 {
                return Ok((id, None));
            }
            let which = match first_view {
                Some(_) => "the first view of the first run",
                None => "the first",
            };
            let title = page.title.as_deref().unwrap_or("");
            let note = format!(
                "the HAR has {} pages ({}); imported {which}, `{}` {title} (choose with --page)",
                ids.len(),
                ids.join(", "),
                id.as_deref().unwrap_or_default()
            );
            Ok((id, Some(note)))
        }
    }
}

/// One response on its way into the manifest.
struct Pending {
    response: RecordedResponse,
    /// The protocol it was recorded over.
    protocol: Option<String>,
    body: Vec<u8>,
    connect_ms: Option<f64>,
    wait_ms: Option<f64>,
    /// When the request started and its response ended, where recorded.
    span: Option<(SystemTime, SystemTime)>,
}

struct Builder {
    keep_first_duplicate: bool,
    /// Firefox's HAR: `bodySize` counts the header bytes, and `connect`
    /// leaves out TLS (the others count TLS in `connect`).
    firefox: bool,
    origins: Vec<Origin>,
    pending: Vec<Pending>,
    /// Each method and URL's responses, in recorded order.
    by_request: HashMap<(String, String), Vec<usize>>,
    skipped: Vec<Skipped>,
    dropped_headers: Vec<String>,
    decoded: Vec<String>,
    /// With `--upgrade-cleartext`: the capture's cleartext hosts.
    upgrade: Option<Upgrade>,
    /// Redirects from a cleartext URL to its own https URL, dropped.
    moot_redirects: usize,
    /// When the captured load's load event fired, where the HAR says.
    load_end: Option<std::time::SystemTime>,
}

impl Builder {
    fn new(keep_first_duplicate: bool, firefox: bool, upgrade: Option<Upgrade>) -> Builder {
        Builder {
            keep_first_duplicate,
            firefox,
            upgrade,
            moot_redirects: 0,
            load_end: None,
            origins: Vec::new(),
            pending: Vec::new(),
            by_request: HashMap::new(),
            skipped: Vec::new(),
            dropped_headers: Vec::new(),
            decoded: Vec::new(),
        }
    }

    fn skip(&mut self, entry: usize, url: &str, reason: impl Into<String>) {
        let mut url = url.to_string();
        if url.len() > 100 {
            let cut = (0..=97)
                .rev()
                .find(|&i| url.is_char_boundary(i))
                .unwrap_or(0);
            url.truncate(cut);
            url.push_str("...");
        }
        self.skipped.push(Skipped {
            entry,
            url,
            reason: reason.into(),
        });
    }

    fn add(&mut self, index: usize, entry: &Entry, har_dir: &Path) -> Result<()> {
        let (request, url_text, response) = parts(index, entry)?;
        let Ok(mut url) = Url::parse(url_text) else {
            self.skip(index, url_text, "not a URL");
            return Ok(());
        };
        url.set_fragment(None);
        let upgraded = self.upgrade.as_ref().is_some_and(|u| u.url(&mut url));
        let status = known(response.status).unwrap_or(0.0) as u16;
        let outside = outside_load(entry, &url, self.load_end);
        let at = Place {
            entry,
            response,
            url: &url,
            status,
            upgraded,
            outside: outside.as_ref(),
        };
        let (host, port) = match self.served_at(&at) {
            Ok(place) => place,
            Err(reason) => {
                self.skip(index, url_text, reason);
                return Ok(());
            }
        };
        let method = request.method.clone().unwrap_or_else(|| "GET".into());
        let recorded_body_bytes = entry.recorded_body_bytes(self.firefox);
        let (body, synthesized, encoding) =
            self.body(index, entry, recorded_body_bytes, har_dir)?;
        let key = (method.clone(), url.to_string());
        let repeat = match self.repeat(entry, &key) {
            Ok(repeat) => repeat,
            Err(reason) => {
                self.skip(index, url_text, reason);
                return Ok(());
            }
        };
        self.note_origin(&url, &host, port);
        if let Some(upgrade) = self.upgrade.as_mut().filter(|_| upgraded) {
            upgrade.entries += 1;
        }
        let headers = self.headers(index, response, encoding);
        let path = path_and_query(&url);
        let timings = entry.timings.as_ref();
        let connect_ms = timings.and_then(|t| connect_ms(t, self.firefox));
        self.by_request
            .entry(key)
            .or_default()
            .push(self.pending.len());
        self.pending.push(Pending {
            response: RecordedResponse {
                entry: index,
                method,
                url: url.to_string(),
                host,
                path,
                status,
                headers,
                body: format!("{index:05}"),
                body_bytes: body.len() as u64,
                recorded_body_bytes,
                synthesized,
                think_ms: 0.0,
                outside_load: outside,
                repeat: repeat as u32,
                initiator: entry.initiator_url().map(|url| match &self.upgrade {
                    Some(upgrade) => upgrade.url_text(&url),
                    None => url,
                }),
                kind: resource_kind(entry, response),
                request_body: request.recorded_body(),
            },
            body,
            protocol: (response.http_version.as_deref()).and_then(format::protocol_name),
            connect_ms,
            wait_ms: timings.and_then(|t| known(t.wait)),
            span: span(entry),
        });
        Ok(())
    }

    /// Records `url`'s origin, the first time it comes.
    fn note_origin(&mut self, url: &Url, host: &str, port: u16) {
        let origin = url.origin().ascii_serialization();
        if !self.origins.iter().any(|o| o.origin == origin) {
            self.origins.push(Origin {
                origin,
                host: host.to_string(),
                port,
            });
        }
    }

    fn finish(
        mut self,
        source: String,
        think: Think,
        mut recorded: RecordedLoad,
        page_note: Option<String>,
        page_url: Option<Url>,
        out: &Path,
    ) -> Result<ImportSummary> {
        if self.pending.is_empty() {
            bail!("the HAR has no response h3lab can replay (see the entries it skipped: {} of them); export the page again with its requests", self.skipped.len());
        }
        let (start, document) = self.page(page_url.as_ref())?;
        let page = self.pending[start].response.url.clone();
        recorded.protocol = self.pending[document].protocol.clone();
        self.set_think_times();
        let inferred_initiators = self.infer_script_initiators(document);
        prepare(out)?;
        let bodies = out.join(BODIES);
        std::fs::create_dir_all(&bodies)
            .with_context(|| format!("cannot create {}", bodies.display()))?;
        for pending in &self.pending {
            let path = bodies.join(&pending.response.body);
            std::fs::write(&path, &pending.body)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        let replay = Replay {
            schema: SCHEMA.into(),
            source,
            page,
            think,
            recorded,
            origins: self.origins,
            responses: self.pending.into_iter().map(|p| p.response).collect(),
            skipped: self.skipped,
            upgraded: self.upgrade.map(|upgrade| UpgradedCleartext {
                hosts: upgrade.hosts().iter().cloned().collect(),
                entries: upgrade.entries,
                urls_rewritten: upgrade.rewritten,
                redirects_dropped: self.moot_redirects,
            }),
        };
        let manifest = out.join(MANIFEST);
        let text = serde_json::to_string_pretty(&replay).context("writing the manifest")?;
        std::fs::write(&manifest, text)
            .with_context(|| format!("cannot write {}", manifest.display()))?;
        Ok(ImportSummary {
            replay,
            page_note,
            dropped_headers: self.dropped_headers,
            decoded: self.decoded,
            inferred_initiators,
        })
    }

    /// A request other than GET comes only from a script, and a replay
    /// sends it after the response that caused it. Where the HAR names no
    /// initiator (Playwright's names none), it is the last script to have
    /// arrived before the request started, else the page's document.
    /// Returns how many it named.
    fn infer_script_initiators(&mut self, document: usize) -> usize {
        let scripts: Vec<(SystemTime, String)> = (self.pending.iter())
            .filter(|p| p.response.kind == ResourceKind::Script)
            .filter_map(|p| Some((p.span?.1, p.response.url.clone())))
            .collect();
        let page = self.pending[document].response.url.clone();
        let mut named = 0;
        for pending in &mut self.pending {
            let response = &mut pending.response;
            if response.method == "GET" || response.initiator.is_some() {
                continue;
            }
            let started = pending.span.map(|(start, _)| start);
            let script = (scripts.iter())
                .filter(|(arrived, _)| started.is_some_and(|start| *arrived <= start))
                .max_by_key(|(arrived, _)| *arrived);
            response.initiator = Some(script.map_or(page.clone(), |(_, url)| url.clone()));
            named += 1;
        }
        named
    }

    /// The response a load starts at (the URL the capture loaded, or else
    /// the first document recorded), and the document its recorded
    /// redirects end at, which the loaders follow as a browser does.
    /// Never a subresource that happened to come first: timing a logo and
    /// calling it the page would be a wrong result.
    fn page(&self, page_url: Option<&Url>) -> Result<(usize, usize)> {
        let start = match page_url {
            Some(url) => {
                let mut url = url.clone();
                url.set_fragment(None);
                let found = self
                    .pending
                    .iter()
                    .position(|p| p.response.url == url.as_str());
                match found {
                    Some(found) => found,
                    None => bail!(
                        "the HAR's page {url} is not among the responses h3lab can replay{}; \
                         export the page again from a browser over https",
                        self.skipped_because(url.as_str())
                    ),
                }
            }
            None => self
                .pending
                .iter()
                .position(|p| p.response.kind == ResourceKind::Document)
                .context(
                    "the HAR names no page and records no document h3lab can replay; \
                     export the page again from a browser over https",
                )?,
        };
        // A capture that was redirected to its page (a title naming where
        // it ended) starts where the recorded redirects into it start.
        let mut start = start;
        while let Some(earlier) = self.redirect_to(start) {
            start = earlier;
        }
        let mut at = start;
        for _ in 0..MAX_REDIRECTS {
            let response = &self.pending[at].response;
            if !(300..400).contains(&response.status) {
                anyhow::ensure!(
                    (200..300).contains(&response.status)
                        && response.kind == ResourceKind::Document,
                    "the HAR's page {} answered {} with a {:?}, not a document; \
                     export the page again after it has loaded",
                    response.url,
                    response.status,
                    response.kind
                );
                return Ok((start, at));
            }
            let location = location(response).with_context(|| {
                format!(
                    "the page's redirect at {} has no usable Location",
                    response.url
                )
            })?;
            at = match self
                .pending
                .iter()
                .position(|p| p.response.url == location.as_str())
            {
                Some(next) => next,
                None => bail!(
                    "the page's redirect at {} leads to {location}, which is not among the \
                     responses h3lab can replay{}",
                    response.url,
                    self.skipped_because(location.as_str())
                ),
            };
        }
        bail!("the page's redirects recorded in the HAR go on for more than {MAX_REDIRECTS}")
    }

    /// Whether a response redirects to `url` itself: a cleartext URL's
    /// redirect to https, once both are upgraded.
    fn redirects_to_itself(&self, response: &format::Response, url: &Url, status: u16) -> bool {
        let location = response.header("location").and_then(|l| url.join(l).ok());
        let upgraded = |mut location: Url| {
            if let Some(upgrade) = &self.upgrade {
                upgrade.url(&mut location);
            }
            location
        };
        (300..400).contains(&status) && location.map(upgraded).as_ref() == Some(url)
    }

    /// The recorded redirect, before response `to`, whose Location is it.
    fn redirect_to(&self, to: usize) -> Option<usize> {
        let target = &self.pending[to].response.url;
        self.pending[..to].iter().position(|p| {
            (300..400).contains(&p.response.status)
                && location(&p.response).is_some_and(|l| l.as_str() == target)
        })
    }

    /// `: skipped (REASON)` when the import skipped an entry for `url`.
    fn skipped_because(&self, url: &str) -> String {
        self.skipped
            .iter()
            .find(|s| s.url == url || Url::parse(&s.url).is_ok_and(|u| u.as_str() == url))
            .map(|s| format!(": entry {} was skipped ({})", s.entry, s.reason))
            .unwrap_or_default()
    }

    /// Each response's think time: its wait less one round trip to its
    /// origin. The round trip is the origin's fastest TCP handshake, or,
    /// where the HAR has none, its fastest wait.
    fn set_think_times(&mut self) {
        let mut round_trip: BTreeMap<String, f64> = BTreeMap::new();
        for pending in &self.pending {
            if let Some(connect) = pending.connect_ms {
                let rtt = round_trip
                    .entry(pending.response.host.clone())
                    .or_insert(connect);
                *rtt = rtt.min(connect);
            }
        }
        for pending in &self.pending {
            if let (None, Some(wait)) = (round_trip.get(&pending.response.host), pending.wait_ms) {
                let fastest = self
                    .pending
                    .iter()
                    .filter(|p| p.response.host == pending.response.host)
                    .filter_map(|p| p.wait_ms)
                    .fold(wait, f64::min);
                round_trip.insert(pending.response.host.clone(), fastest);
            }
        }
        for pending in &mut self.pending {
            let rtt = round_trip.get(&pending.response.host).copied();
            if let (Some(rtt), Some(wait)) = (rtt, pending.wait_ms) {
                pending.response.think_ms = ((wait - rtt).max(0.0) * 10.0).round() / 10.0;
            }
        }
    }
}

/// Creates `out`, or empties it if it holds an earlier replay site.
fn prepare(out: &Path) -> Result<()> {
    if !out.exists() {
        return std::fs::create_dir_all(out)
            .with_context(|| format!("cannot create the site directory {}", out.display()));
    }
    let empty = std::fs::read_dir(out)
        .with_context(|| format!("cannot read {}", out.display()))?
        .next()
        .is_none();
    if empty {
        return Ok(());
    }
    if !Replay::is_replay_site(out) {
        bail!(
            "{} is not empty and does not hold a replay site; pass a new or empty directory with --out (or remove this one)",
            out.display()
        );
    }
    crate::remove_entries(out, &[MANIFEST, BODIES])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages(json: &str) -> Vec<format::Page> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn the_default_page_is_the_first_view_of_the_first_run_wherever_it_is_listed() {
        // As a merged or hand-edited WebPageTest export may list them.
        let wpt = pages(
            r#"[{"id":"page_2_0","_run":2,"_cached":0},{"id":"page_1_1","_run":"1","_cached":"1"},
                {"id":"page_1_0","_run":1,"_cached":0,"title":"Run 1, First View"}]"#,
        );
        let (id, note) = choose_page(&wpt, None).unwrap();
        assert_eq!(id.as_deref(), Some("page_1_0"));
        let note = note.unwrap();
        assert!(note.contains("the first view of the first run"), "{note}");
        assert_eq!(
            choose_page(&wpt, Some("page_2_0")).unwrap(),
            (Some("page_2_0".into()), None)
        );
        // Without WebPageTest's fields, the first listed.
        let chrome = pages(r#"[{"id":"page_3"},{"id":"page_4"}]"#);
        let (id, note) = choose_page(&chrome, None).unwrap();
        assert_eq!(id.as_deref(), Some("page_3"));
        assert!(note.unwrap().contains("imported the first,"));
        let one = pages(r#"[{"id":"page_1"}]"#);
        assert_eq!(
            choose_page(&one, None).unwrap(),
            (Some("page_1".into()), None)
        );
    }
}
