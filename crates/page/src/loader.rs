//! The built-in loader: loads a page the way a browser's network stack
//! does, with no browser. The document is parsed as it streams in, its
//! stylesheets and module scripts once they arrive, and each discovery is
//! queued at once; [`crate::schedule`] decides which request goes out on
//! which connection. This file is the I/O shell around those pure parts.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, bail, Context};
use h3lab_client::alt_svc::H3Discovery;
use h3lab_client::{
    client_tls_config, AutoConnector, Connector, NameServer, OriginConnector, OriginLookup,
    RequestNumbers, ResolveRule, Sender, SharedDiscovery, Target, TlsOptions,
};
use h3lab_results::page::{blocks_the_page, FailedResource, PageLoad, PageReport, ResourceTiming};
use h3lab_results::{Loader, Proto, ResourceKind, Visit};
use h3lab_site::replay::InitiatedRequest;
use tokio::sync::{mpsc, OnceCell};
use url::Url;

use crate::discover::{Discovery, Findings};
use crate::schedule::{Dispatch, Schedule};
use crate::style::{self, Sheet};

mod request;

use request::ResourceRequest;

/// A page with more resources than this is refused rather than loaded
/// without end.
const MAX_RESOURCES: usize = 10_000;

/// Stylesheets and module scripts are kept whole to be scanned; a bigger
/// one is scanned no further.
const MAX_SCANNED_BYTES: usize = 16 << 20;

/// How the built-in loader loads a page.
#[derive(Debug, Clone)]
pub struct LoaderOptions {
    /// The protocol of every request.
    pub proto: Proto,
    /// How the server's certificate is trusted.
    pub tls: TlsOptions,
    /// Cold: new connections and no session to resume. Warm: one priming
    /// load first, then every load resumes its TLS session, and h3 sends
    /// its requests in 0-RTT.
    pub visit: Visit,
    /// Loads to measure.
    pub loads: u32,
    /// Set-up of one connection may take this long.
    pub connect_timeout: Duration,
    /// One whole page load may take this long.
    pub load_timeout: Duration,
    /// Under `auto`, what the browser knows before its first visit;
    /// `None` is nothing. Each origin starts on h2 and moves to h3 as its
    /// `Alt-Svc` and the race of QUIC against TCP decide. A cold visit
    /// starts every load from this; a repeat visit first makes one
    /// unmeasured visit, and every load after it shares what the browser
    /// has learned, as a returning user's browser does.
    pub h3_discovery: Option<H3Discovery>,
    /// Host names resolved to these addresses instead of by DNS (curl's
    /// `--resolve`), as a replayed page's origins are.
    pub resolve: Vec<ResolveRule>,
    /// The DNS server other host names are resolved by. Under `auto` it is
    /// also asked for each origin's `HTTPS` record, as Chromium asks, and
    /// one that lists `h3` makes QUIC a candidate from the first
    /// connection (docs/discovery.md).
    pub name_server: NameServer,
    /// URLs the captured page recorded with an error status (a replay's
    /// 404s): answered so, they do not fail the load.
    pub recorded_errors: Vec<String>,
    /// A replayed page's recorded requests, which bound what is fetched;
    /// its hosts without a `--resolve` rule are found through
    /// `name_server`.
    pub recorded: Option<RecordedPage>,
    /// Send a browser's request headers (`h3lab page --browser-headers`):
    /// a 1 kB cookie and the rest of Chromium's recorded set, with each
    /// resource's own accept, priority and fetch metadata.
    pub browser_headers: bool,
}

/// A replayed page's recorded requests. The loader fetches only those (a
/// reference the browser did not follow, such as a lazy image, is listed
/// as skipped), and after each response the requests it initiated that its
/// body did not reveal (a script's fetches), as the HAR's initiator graph
/// says. What bodies reveal is still found as they stream in, as a
/// browser's preload scanner finds it.
#[derive(Debug, Clone, Default)]
pub struct RecordedPage {
    /// Every recorded URL.
    pub urls: std::collections::HashSet<String>,
    /// The requests each URL initiated, as recorded.
    pub initiated: HashMap<String, Vec<InitiatedRequest>>,
}

impl RecordedPage {
    /// The hosts of its URLs, lower case.
    fn hosts(&self) -> impl Iterator<Item = String> + '_ {
        (self.urls.iter()).filter_map(|url| {
            Url::parse(url)
                .ok()?
                .host_str()
                .map(str::to_ascii_lowercase)
        })
    }
}

/// Loads the page at `url` `options.loads` times; `on_load` sees each load
/// as it completes, and stops the run early by breaking.
pub fn load_page(
    url: &str,
    options: &LoaderOptions,
    on_load: &mut dyn FnMut(&PageLoad) -> ControlFlow<()>,
) -> anyhow::Result<PageReport> {
    let page = Url::parse(url)
        .with_context(|| format!("`{url}` is not a URL; pass an absolute https:// URL"))?;
    Target::parse(url)?.check_proto(options.proto)?;
    anyhow::ensure!(
        options.h3_discovery.is_none() || options.proto == Proto::Auto,
        "a discovery to start from is for the auto protocol only"
    );
    crate::check_visit(options.proto, options.visit)?;
    let known = options.h3_discovery.clone().unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    let mut report = PageReport::new(url, options.proto, Loader::Builtin, options.visit);
    runtime.block_on(async {
        let auto = options.proto == Proto::Auto;
        let fresh = || Arc::new(std::sync::Mutex::new(known.clone()));
        // A warm or repeat run starts with a load it does not measure: it
        // leaves TLS sessions to resume (warm), or what auto learned (repeat).
        let (warm, returning) = match options.visit {
            Visit::Cold => (None, None),
            Visit::Warm | Visit::Repeat => {
                let tls = client_tls_config(&options.tls, options.proto)?;
                let returning = (options.visit == Visit::Repeat && auto).then(fresh);
                load_once(&page, options, &tls, false, returning.as_ref())
                    .await
                    .with_context(|| {
                        format!("the unmeasured first load of a {} run", options.visit)
                    })?;
                ((options.visit == Visit::Warm).then_some(tls), returning)
            }
        };
        for n in 1..=options.loads {
            let (tls, early) = match &warm {
                Some(tls) => (tls.clone(), true),
                None => (client_tls_config(&options.tls, options.proto)?, false),
            };
            let h3_discovery = returning.clone().or_else(|| auto.then(fresh));
            let load = load_once(&page, options, &tls, early, h3_discovery.as_ref())
                .await
                .with_context(|| format!("load {n} of {}", options.loads))?;
            let flow = on_load(&load);
            report.loads.push(load);
            if flow.is_break() {
                break;
            }
        }
        anyhow::Ok(())
    })?;
    Ok(report)
}

async fn load_once(
    page: &Url,
    options: &LoaderOptions,
    tls: &Arc<rustls::ClientConfig>,
    early: bool,
    h3_discovery: Option<&SharedDiscovery>,
) -> anyhow::Result<PageLoad> {
    let started_at = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    let mut load = PageLoader::new(options, tls.clone(), early, h3_discovery)?;
    let outcome = tokio::time::timeout(options.load_timeout, load.run(page)).await;
    load.close().await;
    let (rows, skipped) = match outcome {
        Err(_) => bail!(
            "the page did not finish loading within {:?} ({} of {} resources complete)",
            options.load_timeout,
            load.complete(),
            load.schedule.resources().len()
        ),
        Ok(result) => result?,
    };
    let load_ms = rows.iter().map(|r| r.end_ms).fold(0.0, f64::max);
    Ok(PageLoad {
        started_at,
        load_ms,
        resources: rows,
        browser: None,
        skipped,
        path_rtt_ms: load.path_rtt_ms(),
        failed: std::mem::take(&mut load.failed),
    })
}

/// What a fetch reports back to the load's loop.
enum Event {
    /// Resources the body revealed.
    Found(Findings),
    /// The resource is complete; an h1 connection comes back for reuse.
    Done {
        resource: usize,
        timing: ResourceTiming,
        h1: Option<Sender>,
    },
    Failed {
        resource: usize,
        error: String,
    },
}

/// How a fetch gets its connection.
enum Connection {
    /// Open a new h1 connection.
    NewH1,
    /// An idle h1 connection.
    H1(Sender),
    /// The origin's one h2/h3 connection, opened by whichever fetch gets
    /// to it first.
    Shared(Arc<OnceCell<Result<Sender, String>>>),
}

struct PageLoader {
    proto: Proto,
    tls: Arc<rustls::ClientConfig>,
    /// For `auto`: what the browser knows of HTTP/3, and the TLS
    /// configuration offering h3.
    auto: Option<(SharedDiscovery, Arc<rustls::ClientConfig>)>,
    early: bool,
    connect_timeout: Duration,
    schedule: Schedule,
    connectors: HashMap<String, Arc<OriginConnector>>,
    shared: HashMap<u64, Arc<OnceCell<Result<Sender, String>>>>,
    idle_h1: HashMap<u64, Sender>,
    /// Rows by resource index, in dispatch order once complete.
    rows: Vec<(usize, ResourceTiming)>,
    /// The page's host, those `--resolve` names and a replay's recorded
    /// ones: the only ones requests go to.
    hosts: Vec<String>,
    /// Host names resolved without DNS.
    resolve: Vec<ResolveRule>,
    /// Finds other hosts, and under auto their `HTTPS` records.
    lookup: OriginLookup,
    recorded_errors: Vec<String>,
    recorded: Option<RecordedPage>,
    /// URLs on other hosts, each once.
    skipped: Vec<String>,
    /// Resources the load went on without.
    failed: Vec<FailedResource>,
    /// What the style engine decides from.
    styles: Styles,
    started: Instant,
    /// The path's round trip as each connection measured it after set-up.
    path_rtts: Arc<std::sync::Mutex<Vec<Duration>>>,
    /// With a browser's headers: what numbers the load's requests.
    browser_numbers: Option<RequestNumbers>,
}

impl PageLoader {
    fn new(
        options: &LoaderOptions,
        tls: Arc<rustls::ClientConfig>,
        early: bool,
        h3_discovery: Option<&SharedDiscovery>,
    ) -> anyhow::Result<PageLoader> {
        let auto = match h3_discovery {
            Some(shared) => Some((shared.clone(), client_tls_config(&options.tls, Proto::H3)?)),
            None => None,
        };
        Ok(PageLoader {
            proto: options.proto,
            tls,
            auto,
            early,
            connect_timeout: options.connect_timeout,
            schedule: Schedule::new(options.proto),
            connectors: HashMap::new(),
            shared: HashMap::new(),
            idle_h1: HashMap::new(),
            rows: Vec::new(),
            hosts: (options.resolve.iter())
                .map(|rule| rule.host.clone())
                .chain(options.recorded.iter().flat_map(RecordedPage::hosts))
                .collect(),
            resolve: options.resolve.clone(),
            lookup: OriginLookup::new(options.name_server, options.proto == Proto::Auto)?,
            recorded_errors: options.recorded_errors.clone(),
            recorded: options.recorded.clone(),
            skipped: Vec::new(),
            failed: Vec::new(),
            styles: Styles::default(),
            started: Instant::now(),
            path_rtts: Arc::default(),
            browser_numbers: options.browser_headers.then(RequestNumbers::default),
        })
    }

    /// The median of the connections' measured round trips, in ms.
    fn path_rtt_ms(&self) -> Option<f64> {
        let mut rtts = self
            .path_rtts
            .lock()
            .expect("no fetch panics holding it")
            .clone();
        rtts.sort();
        rtts.get(rtts.len() / 2).map(|rtt| rtt.as_secs_f64() * 1e3)
    }

    fn complete(&self) -> usize {
        self.rows.len()
    }

    /// Loads the page; its waterfall in dispatch order, and the URLs on
    /// other hosts that were left alone.
    async fn run(&mut self, page: &Url) -> anyhow::Result<(Vec<ResourceTiming>, Vec<String>)> {
        let (events, mut inbox) = mpsc::unbounded_channel();
        self.hosts
            .extend(page.host_str().map(str::to_ascii_lowercase));
        self.schedule.discover(Discovery {
            render_blocking: true,
            ..Discovery::recorded(page.clone(), ResourceKind::Document)
        });
        let mut order = Vec::new();
        loop {
            while let Some(dispatch) = self.schedule.next() {
                order.push(dispatch.resource);
                self.start(dispatch, &events).await?;
            }
            if self.schedule.is_done() {
                break;
            }
            let event = inbox.recv().await.expect("the loop holds a sender");
            self.handle(event)?;
        }
        self.check_statuses()?;
        let mut rows: HashMap<usize, ResourceTiming> =
            std::mem::take(&mut self.rows).into_iter().collect();
        let rows = order.iter().filter_map(|i| rows.remove(i)).collect();
        Ok((rows, std::mem::take(&mut self.skipped)))
    }

    fn handle(&mut self, event: Event) -> anyhow::Result<()> {
        match event {
            Event::Found(found) => {
                self.discover_all(found.discoveries)?;
                let document = found.document.is_some();
                self.styles.take_in(found.document, found.stylesheet);
                if document {
                    self.restyle()?;
                }
            }
            Event::Done {
                resource,
                timing,
                h1,
            } => {
                self.schedule.finished(resource);
                if let (Some(sender), Some(connection)) = (h1, timing.connection) {
                    self.idle_h1.insert(connection, sender);
                }
                self.rows.push((resource, timing));
                self.discover_initiated(resource);
                if self.styles.awaited.remove(&resource) {
                    self.restyle()?;
                }
            }
            Event::Failed { resource, error } => {
                let discovery = self.schedule.resource(resource);
                if blocks_the_page(discovery.kind, discovery.render_blocking) {
                    bail!("fetching {}: {error}", discovery.url);
                }
                self.failed.push(FailedResource {
                    method: discovery.method().to_string(),
                    url: discovery.url.to_string(),
                    why: error,
                });
                self.schedule.finished(resource);
            }
        }
        Ok(())
    }

    /// Schedules what may be fetched and lists the rest.
    fn discover_all(&mut self, discoveries: Vec<Discovery>) -> anyhow::Result<()> {
        for discovery in discoveries {
            if !self.may_fetch(&discovery.url) {
                self.skip(discovery.url);
                continue;
            }
            let stylesheet = discovery.kind == ResourceKind::Stylesheet;
            if let Some(resource) = self.schedule.discover(discovery) {
                if stylesheet {
                    self.styles.awaited.insert(resource);
                }
            }
        }
        if self.schedule.resources().len() > MAX_RESOURCES {
            bail!("the page has more than {MAX_RESOURCES} resources; h3lab loads pages up to that size");
        }
        Ok(())
    }

    /// Styles the page once its document and every stylesheet found so
    /// far are in, as a browser styles it once nothing blocks rendering,
    /// and again after each later stylesheet; fetches what that styling
    /// uses.
    fn restyle(&mut self) -> anyhow::Result<()> {
        let styled = self.styles.fetched();
        self.discover_all(styled)
    }

    /// Whether a discovered URL is fetched: it is on the page's host or
    /// one `--resolve` names, and, in a replay, it was recorded (its host
    /// found by a rule or, without one, by DNS).
    fn may_fetch(&self, url: &Url) -> bool {
        let host = url.host_str().unwrap_or_default();
        let reachable = self
            .hosts
            .iter()
            .any(|known| known.eq_ignore_ascii_case(host));
        let recorded = (self.recorded.as_ref()).is_none_or(|page| page.urls.contains(url.as_str()));
        reachable && recorded
    }

    /// The recorded requests `resource` initiated that are not yet known.
    fn discover_initiated(&mut self, resource: usize) {
        let Some(page) = &self.recorded else {
            return;
        };
        let url = self.schedule.resource(resource).url.as_str();
        let children = page.initiated.get(url).cloned().unwrap_or_default();
        for child in children {
            if let Ok(url) = Url::parse(&child.url) {
                self.schedule.discover(Discovery::initiated(url, child));
            }
        }
    }

    /// h3lab sends traffic only to the host under test, and a replay only
    /// what was recorded: anything else is listed, not fetched.
    fn skip(&mut self, url: Url) {
        let url = url.to_string();
        if !self.skipped.contains(&url) {
            self.skipped.push(url);
        }
    }

    /// A page whose document or render-blocking resources failed is no
    /// page load to time; any other resource that failed is listed with
    /// the load, as a browser shows the page without it. In a replay a
    /// status is a failure when it differs from the one recorded.
    fn check_statuses(&mut self) -> anyhow::Result<()> {
        let mut blocking = Vec::new();
        for (resource, row) in &self.rows {
            let discovery = self.schedule.resource(*resource);
            let why = match discovery.replayed.as_ref().map(|r| r.status) {
                Some(recorded) if recorded != row.status => {
                    format!("answered {}, recorded {recorded}", row.status)
                }
                Some(_) => continue,
                None if row.status >= 400 && !self.recorded_errors.contains(&row.url) => {
                    format!("answered {}", row.status)
                }
                None => continue,
            };
            match blocks_the_page(discovery.kind, discovery.render_blocking) {
                true => blocking.push(format!("{} ({why})", row.url)),
                false => self.failed.push(FailedResource {
                    method: row.method.clone(),
                    url: row.url.clone(),
                    why,
                }),
            }
        }
        if blocking.is_empty() {
            return Ok(());
        }
        Err(anyhow!(
            "{} resource(s) the page cannot show without failed: {}",
            blocking.len(),
            blocking.join(", ")
        ))
    }

    async fn start(
        &mut self,
        dispatch: Dispatch,
        events: &mpsc::UnboundedSender<Event>,
    ) -> anyhow::Result<()> {
        let discovery = self.schedule.resource(dispatch.resource).clone();
        let connector = self.connector(&discovery.url).await?;
        let connection = if self.proto != Proto::H1 {
            let cell = self.shared.entry(dispatch.connection).or_default().clone();
            Connection::Shared(cell)
        } else if dispatch.opens {
            Connection::NewH1
        } else {
            let sender = self
                .idle_h1
                .remove(&dispatch.connection)
                .context("an idle h1 connection")?;
            Connection::H1(sender)
        };
        let request = ResourceRequest {
            resource: dispatch.resource,
            connection_id: dispatch.connection,
            discovery,
            connector,
            early: self.early,
            started: self.started,
            events: events.clone(),
            path_rtts: self.path_rtts.clone(),
            browser_numbers: self.browser_numbers.clone(),
        };
        tokio::spawn(request.run(connection));
        Ok(())
    }

    async fn connector(&mut self, url: &Url) -> anyhow::Result<Arc<OriginConnector>> {
        let origin = url.origin().ascii_serialization();
        if let Some(connector) = self.connectors.get(&origin) {
            return Ok(connector.clone());
        }
        let target = Arc::new(Target::parse(url.as_str())?);
        let (addr, https_record) =
            (self.lookup.locate(&target, &self.resolve).await).map_err(|err| anyhow!("{err}"))?;
        let connector = match &self.auto {
            None => OriginConnector::Fixed(Box::new(Connector::new(
                target,
                addr,
                self.proto,
                self.tls.clone(),
                self.connect_timeout,
            )?)),
            Some((shared, quic_tls)) => {
                let auto = AutoConnector::new(
                    target,
                    addr,
                    self.tls.clone(),
                    quic_tls.clone(),
                    self.connect_timeout,
                    shared.clone(),
                )?;
                if let Some(record) = &https_record {
                    auto.observe_https_record(record);
                }
                OriginConnector::Auto(Box::new(auto))
            }
        };
        let connector = Arc::new(connector);
        self.connectors.insert(origin, connector.clone());
        Ok(connector)
    }

    /// Closes the QUIC connections at once, so the server does not wait
    /// out its idle timeout; TCP connections close as their handles drop.
    async fn close(&mut self) {
        self.idle_h1.clear();
        self.shared.clear();
        for connector in self.connectors.values() {
            connector.close().await;
        }
    }
}

/// The page's HTML and the stylesheets in so far: what the style engine
/// decides a stylesheet's images and fonts from.
#[derive(Default)]
struct Styles {
    document: Option<(Url, String)>,
    sheets: HashMap<Url, Sheet>,
    /// Stylesheets requested and not yet in, by resource.
    awaited: HashSet<usize>,
}

impl Styles {
    fn take_in(&mut self, document: Option<(Url, String)>, sheet: Option<(Url, Sheet)>) {
        if self.document.is_none() {
            self.document = document;
        }
        self.sheets.extend(sheet);
    }

    /// What styling uses, once the document and every awaited
    /// stylesheet are in.
    fn fetched(&self) -> Vec<Discovery> {
        match &self.document {
            Some((url, html)) if self.awaited.is_empty() => style::fetched(html, url, &self.sheets)
                .into_iter()
                .map(|used| Discovery::recorded(used.url, used.kind))
                .collect(),
            _ => Vec::new(),
        }
    }
}
