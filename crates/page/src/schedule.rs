//! Which request goes next, and on which connection: the loader's
//! connection rules as a pure state machine. No I/O and no clock, so the
//! rules are tested exactly.
//!
//! The rules are a browser's: every URL is fetched once; HTTP/1.1 opens at
//! most six connections per origin, each carrying one request at a time;
//! HTTP/2 and HTTP/3 use one connection per origin. Requests wait in
//! priority order, render-blocking first, and delayable ones (images,
//! deferred scripts) are held back as Chromium holds them: one at a time
//! while render-blocking resources load, at most ten at once after.

use std::collections::{BTreeSet, HashMap, HashSet};

use h3lab_results::{Proto, ResourceKind};

use crate::discover::Discovery;

/// Browsers open at most this many HTTP/1.1 connections to one origin.
pub const H1_CONNECTIONS_PER_ORIGIN: usize = 6;

/// Delayable requests in flight at once, as Chromium's resource scheduler
/// allows (`kDefaultMaxNumDelayableRequestsPerClient`).
pub const DELAYABLE_IN_FLIGHT: usize = 10;

/// ... and while render-blocking resources are still loading
/// (`kMaxNumDelayableWhileLayoutBlocking`).
pub const DELAYABLE_WHILE_LAYOUT_BLOCKED: usize = 1;

/// A request a browser holds back while more important ones load: images
/// and classic scripts that block nothing (`async`, `defer`). Chromium
/// gives them low priority; module scripts, fonts and stylesheets it sends
/// at once.
pub fn delayable(discovery: &Discovery) -> bool {
    match discovery.kind {
        ResourceKind::Image | ResourceKind::Other => true,
        ResourceKind::Script => !discovery.module && !discovery.render_blocking,
        ResourceKind::Document | ResourceKind::Stylesheet | ResourceKind::Font => false,
    }
}

/// A request's urgency, as in RFC 9218 (0 is the most urgent). The loader
/// sends it as the `priority` header and orders its queues by it.
pub fn urgency(discovery: &Discovery) -> u8 {
    if discovery.render_blocking {
        return 0;
    }
    match discovery.kind {
        ResourceKind::Document | ResourceKind::Stylesheet => 0,
        ResourceKind::Font => 1,
        ResourceKind::Script => 2,
        ResourceKind::Other => 3,
        ResourceKind::Image => 4,
    }
}

/// A request to make now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dispatch {
    /// Index of the resource, in order of discovery.
    pub resource: usize,
    /// The connection to send it on, numbered from 1 within the load.
    pub connection: u64,
    /// The connection is new: open it first (for h2/h3 only the first
    /// request on it says so; later ones wait for it to open).
    pub opens: bool,
}

#[derive(Default)]
struct Origin {
    /// (urgency, resource index) of requests waiting for a connection.
    waiting: BTreeSet<(u8, usize)>,
    /// Every connection opened to this origin.
    connections: Vec<u64>,
    /// h1 connections with no request in flight.
    idle: Vec<u64>,
}

/// The requests of one page load, from discovery to completion.
pub struct Schedule {
    multiplexed: bool,
    origins: HashMap<String, Origin>,
    seen: HashSet<String>,
    resources: Vec<Discovery>,
    /// The connection each in-flight resource uses, by resource index.
    in_flight: HashMap<usize, u64>,
    next_connection: u64,
}

impl Schedule {
    /// An empty schedule for `proto`'s connection rules.
    pub fn new(proto: Proto) -> Schedule {
        Schedule {
            multiplexed: proto != Proto::H1,
            origins: HashMap::new(),
            seen: HashSet::new(),
            resources: Vec::new(),
            in_flight: HashMap::new(),
            next_connection: 1,
        }
    }

    /// Queues a discovered resource, unless its URL was seen before; its
    /// index when queued.
    pub fn discover(&mut self, discovery: Discovery) -> Option<usize> {
        if !self.seen.insert(discovery.key()) {
            return None;
        }
        let index = self.resources.len();
        let origin = discovery.url.origin().ascii_serialization();
        self.origins
            .entry(origin)
            .or_default()
            .waiting
            .insert((urgency(&discovery), index));
        self.resources.push(discovery);
        Some(index)
    }

    /// The resource at `index`.
    pub fn resource(&self, index: usize) -> &Discovery {
        &self.resources[index]
    }

    /// Every resource discovered so far, in order.
    pub fn resources(&self) -> &[Discovery] {
        &self.resources
    }

    /// The next request the rules allow now, if any.
    pub fn next(&mut self) -> Option<Dispatch> {
        let delayable_allowed = self.delayable_budget() > 0;
        let multiplexed = self.multiplexed;
        let next_connection = &mut self.next_connection;
        let resources = &self.resources;
        for origin in self.origins.values_mut() {
            let Some(&(urgency, resource)) = origin
                .waiting
                .iter()
                .find(|(_, r)| delayable_allowed || !delayable(&resources[*r]))
            else {
                continue;
            };
            let (connection, opens) = if multiplexed {
                match origin.connections.first() {
                    Some(&id) => (id, false),
                    None => (open(origin, next_connection), true),
                }
            } else if let Some(id) = origin.idle.pop() {
                (id, false)
            } else if origin.connections.len() < H1_CONNECTIONS_PER_ORIGIN {
                (open(origin, next_connection), true)
            } else {
                continue;
            };
            origin.waiting.remove(&(urgency, resource));
            self.in_flight.insert(resource, connection);
            return Some(Dispatch {
                resource,
                connection,
                opens,
            });
        }
        None
    }

    /// How many more delayable requests may start now: Chromium's resource
    /// scheduler lets one at a time through while render-blocking resources
    /// are still loading, and ten at once after.
    fn delayable_budget(&self) -> usize {
        let blocking = |r: &usize| self.resources[*r].render_blocking;
        let layout_blocked = self.in_flight.keys().any(blocking)
            || self
                .origins
                .values()
                .any(|o| o.waiting.iter().any(|(_, r)| blocking(r)));
        let limit = match layout_blocked {
            true => DELAYABLE_WHILE_LAYOUT_BLOCKED,
            false => DELAYABLE_IN_FLIGHT,
        };
        let flying = self
            .in_flight
            .keys()
            .filter(|r| delayable(&self.resources[**r]))
            .count();
        limit.saturating_sub(flying)
    }

    /// The request for `resource` is complete (or failed): its h1
    /// connection is free again.
    pub fn finished(&mut self, resource: usize) {
        let Some(connection) = self.in_flight.remove(&resource) else {
            return;
        };
        if !self.multiplexed {
            let origin = self.resources[resource].url.origin().ascii_serialization();
            if let Some(origin) = self.origins.get_mut(&origin) {
                origin.idle.push(connection);
            }
        }
    }

    /// Nothing waits and nothing is in flight: the page is loaded.
    pub fn is_done(&self) -> bool {
        self.in_flight.is_empty() && self.origins.values().all(|o| o.waiting.is_empty())
    }
}

fn open(origin: &mut Origin, next_connection: &mut u64) -> u64 {
    let id = *next_connection;
    *next_connection += 1;
    origin.connections.push(id);
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use url::Url;

    fn found(url: &str, kind: ResourceKind, render_blocking: bool) -> Discovery {
        Discovery {
            render_blocking,
            ..Discovery::recorded(Url::parse(url).unwrap(), kind)
        }
    }

    /// A render-blocking stylesheet.
    fn stylesheet() -> Discovery {
        found("https://a.test/a.css", ResourceKind::Stylesheet, true)
    }

    fn image(n: usize) -> Discovery {
        found(
            &format!("https://a.test/img/{n}.png"),
            ResourceKind::Image,
            false,
        )
    }

    fn module(n: usize) -> Discovery {
        let mut script = found(
            &format!("https://a.test/js/{n}.js"),
            ResourceKind::Script,
            false,
        );
        script.module = true;
        script
    }

    fn drain(schedule: &mut Schedule) -> Vec<Dispatch> {
        std::iter::from_fn(|| schedule.next()).collect()
    }

    #[test]
    fn a_url_is_fetched_once() {
        let mut schedule = Schedule::new(Proto::H2);
        assert_eq!(schedule.discover(image(1)), Some(0));
        assert_eq!(schedule.discover(image(1)), None);
        assert_eq!(schedule.discover(image(2)), Some(1));
        assert_eq!(drain(&mut schedule).len(), 2);
    }

    #[test]
    fn multiplexed_protocols_send_everything_on_one_connection_per_origin() {
        for proto in [Proto::H2, Proto::H3] {
            let mut schedule = Schedule::new(proto);
            for n in 0..50 {
                schedule.discover(module(n));
            }
            schedule.discover(found(
                "https://b.test/x.css",
                ResourceKind::Stylesheet,
                false,
            ));
            let sent = drain(&mut schedule);
            assert_eq!(sent.len(), 51);
            let opened: Vec<_> = sent.iter().filter(|d| d.opens).collect();
            assert_eq!(opened.len(), 2, "{proto}: one connection per origin");
            let on_a: HashSet<u64> = sent
                .iter()
                .filter(|d| schedule.resource(d.resource).url.host_str() == Some("a.test"))
                .map(|d| d.connection)
                .collect();
            assert_eq!(on_a.len(), 1);
        }
    }

    #[test]
    fn h1_opens_at_most_six_connections_and_reuses_them() {
        let mut schedule = Schedule::new(Proto::H1);
        for n in 0..20 {
            schedule.discover(image(n));
        }
        let first = drain(&mut schedule);
        assert_eq!(first.len(), H1_CONNECTIONS_PER_ORIGIN);
        assert!(first.iter().all(|d| d.opens));
        assert_eq!(schedule.next(), None);
        schedule.finished(first[2].resource);
        let reused = schedule.next().unwrap();
        assert_eq!(
            (reused.connection, reused.opens),
            (first[2].connection, false)
        );
        assert_eq!(schedule.next(), None);
        let mut flying = first;
        flying.remove(2);
        flying.push(reused);
        let mut sent = flying.len() + 1;
        while let Some(done) = flying.pop() {
            schedule.finished(done.resource);
            while let Some(d) = schedule.next() {
                assert!(!d.opens && d.connection <= 6, "{d:?}");
                flying.push(d);
                sent += 1;
            }
        }
        assert_eq!(sent, 20);
        assert!(schedule.is_done());
    }

    #[test]
    fn render_blocking_resources_go_first() {
        let mut schedule = Schedule::new(Proto::H1);
        for n in 0..8 {
            schedule.discover(image(n));
        }
        let css = schedule.discover(stylesheet()).unwrap();
        let font = schedule
            .discover(found("https://a.test/f.woff2", ResourceKind::Font, false))
            .unwrap();
        let order: Vec<usize> = drain(&mut schedule).iter().map(|d| d.resource).collect();
        // One image may go while the stylesheet blocks rendering.
        assert_eq!(order, [css, font, 0]);
        schedule.finished(css);
        let order: Vec<usize> = drain(&mut schedule).iter().map(|d| d.resource).collect();
        assert_eq!(
            order,
            [1, 2, 3, 4],
            "the stylesheet's connection and three new ones"
        );
    }

    #[test]
    fn delayable_requests_wait_for_render_blocking_ones_then_go_ten_at_a_time() {
        let mut schedule = Schedule::new(Proto::H2);
        let css = schedule.discover(stylesheet()).unwrap();
        for n in 0..30 {
            schedule.discover(image(n));
        }
        schedule.discover(module(1));
        let deferred = schedule
            .discover(found("https://a.test/d.js", ResourceKind::Script, false))
            .unwrap();
        let first: Vec<usize> = drain(&mut schedule).iter().map(|d| d.resource).collect();
        // The module is not delayable; the deferred script, more urgent than
        // the images, takes the one delayable slot.
        assert_eq!(first, [css, 31, deferred]);
        schedule.finished(deferred);
        assert_eq!(
            drain(&mut schedule).len(),
            1,
            "still one delayable at a time"
        );
        schedule.finished(css);
        let burst = drain(&mut schedule);
        assert_eq!(burst.len(), DELAYABLE_IN_FLIGHT - 1, "ten in flight in all");
        assert!(burst
            .iter()
            .all(|d| schedule.resource(d.resource).kind == ResourceKind::Image));
        schedule.finished(burst[0].resource);
        assert_eq!(drain(&mut schedule).len(), 1);
    }

    #[test]
    fn the_load_is_done_when_nothing_waits_or_flies() {
        let mut schedule = Schedule::new(Proto::H3);
        assert!(schedule.is_done());
        schedule.discover(image(1));
        assert!(!schedule.is_done());
        let sent = schedule.next().unwrap();
        assert!(!schedule.is_done());
        schedule.finished(sent.resource);
        assert!(schedule.is_done());
    }
}
