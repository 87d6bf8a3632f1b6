//! A replay site: a captured page's responses, every origin's, as
//! `h3lab site from-har` writes them and `h3lab serve --site` answers them.
//!
//! The directory holds `replay.json` (this manifest) and `bodies/`, each
//! response's body exactly as it goes on the wire (already encoded with
//! the recorded `content-encoding`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::path::Path;

use anyhow::{bail, Context, Result};
use h3lab_results::ResourceKind;
use serde::{Deserialize, Serialize};

/// The manifest's file name inside a replay site.
pub const MANIFEST: &str = "replay.json";
/// The directory of bodies inside a replay site.
pub const BODIES: &str = "bodies";
/// The manifest's schema tag.
pub const SCHEMA: &str = "h3lab.replay/1";

/// Whether a response waits its recorded server think time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Think {
    /// Each response waits the part of its recorded wait that was not
    /// network round trips, so a slow backend stays slow.
    Recorded,
    /// Responses are sent as soon as they are asked for.
    None,
}

impl std::str::FromStr for Think {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "recorded" => Ok(Think::Recorded),
            "none" => Ok(Think::None),
            other => bail!("unknown think time `{other}`: use recorded or none"),
        }
    }
}

/// A replay site's manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Replay {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The HAR it came from and the tool that wrote it.
    pub source: String,
    /// The page's URL: where a load starts.
    pub page: String,
    /// Whether responses wait their recorded think time.
    pub think: Think,
    /// The page load as the HAR recorded it, on the network it was
    /// captured on.
    pub recorded: RecordedLoad,
    /// Every origin, in the order of its first request.
    pub origins: Vec<Origin>,
    /// Every replayed response.
    pub responses: Vec<RecordedResponse>,
    /// The HAR's entries that are not replayed, and why.
    pub skipped: Vec<Skipped>,
    /// A capture over `http://` replayed over https (`--upgrade-cleartext`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgraded: Option<UpgradedCleartext>,
}

/// What `--upgrade-cleartext` changed: the page as a TLS site would serve it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpgradedCleartext {
    /// The hosts the capture reached over `http://`, now over https.
    pub hosts: Vec<String>,
    /// Entries captured over `http://`, replayed over https.
    pub entries: usize,
    /// `http://` URLs of those hosts rewritten to `https://` in text bodies
    /// and `Location` and `Link` headers.
    pub urls_rewritten: usize,
    /// Redirects from a cleartext URL to its own https URL, dropped.
    pub redirects_dropped: usize,
}

/// The captured load's own figures; null where the HAR does not say.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedLoad {
    /// The tool that wrote the HAR.
    pub tool: String,
    /// The protocol the document came over (`h3`, `h2`, `http/1.1`).
    pub protocol: Option<String>,
    /// The load event, ms after the page's start.
    pub on_load_ms: Option<f64>,
    /// DOMContentLoaded, ms after the page's start.
    pub on_content_load_ms: Option<f64>,
}

/// One origin of the page: a host of its own when replayed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Origin {
    /// `scheme://host[:port]`, as the HAR's URLs spell it.
    pub origin: String,
    /// The host name, lower case.
    pub host: String,
    /// The port its URLs use.
    pub port: u16,
}

/// One response as recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordedResponse {
    /// The entry's position in the HAR's `entries`, from 0.
    pub entry: usize,
    /// The request's method.
    pub method: String,
    /// The request's URL.
    pub url: String,
    /// Its host, lower case.
    pub host: String,
    /// Its path and query, as the request line carries it.
    pub path: String,
    /// The recorded status.
    pub status: u16,
    /// The recorded response headers to send (framing headers removed).
    pub headers: Vec<(String, String)>,
    /// The body's file name in `bodies/`.
    pub body: String,
    /// The body's bytes on the wire, as replayed.
    pub body_bytes: u64,
    /// The body's bytes on the wire as the HAR recorded them, if it did.
    pub recorded_body_bytes: Option<u64>,
    /// Whether the body is filler of the recorded size, because the HAR
    /// holds no body.
    pub synthesized: bool,
    /// The recorded server think time: the wait less one round trip.
    pub think_ms: f64,
    /// Why the capture's page load did not need it, if it did not: it is
    /// replayed, but it is no resource of the page load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside_load: Option<OutsideLoad>,
    /// Which recorded request for this method and URL it answers, from 0:
    /// a request made again gets the next response, as recorded.
    #[serde(default, skip_serializing_if = "is_first")]
    pub repeat: u32,
    /// The URL that caused the request, where the HAR names it.
    pub initiator: Option<String>,
    /// What it is, from the HAR's resource type or the content type.
    pub kind: ResourceKind,
    /// The request's body, for a request that sent one (a POST beacon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_body: Option<RequestBody>,
}

/// A recorded request's body: a replay sends its text where the HAR holds
/// it, else filler of its size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestBody {
    /// Its size in bytes.
    pub bytes: u64,
    /// Its `content-type`, where recorded.
    pub content_type: Option<String>,
    /// Its text, where the HAR holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl RequestBody {
    /// The size of what [`RequestBody::to_send`] gives.
    pub fn size(&self) -> u64 {
        self.text
            .as_ref()
            .map_or(self.bytes, |text| text.len() as u64)
    }

    /// The bytes to send: the recorded text, or filler of the recorded size.
    pub fn to_send(&self) -> Vec<u8> {
        match &self.text {
            Some(text) => text.clone().into_bytes(),
            None => vec![b'x'; self.bytes as usize],
        }
    }
}

/// A request a page load made that a replay makes again, as the HAR's
/// initiator graph has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitiatedRequest {
    /// Its URL.
    pub url: String,
    /// What it is.
    pub kind: ResourceKind,
    /// Its method.
    pub method: String,
    /// Its body, if it sent one.
    pub body: Option<RequestBody>,
    /// The status recorded for it: the replay answers the same.
    pub status: u16,
    /// Which request of this method and URL it is, from 0.
    pub repeat: u32,
}

/// A recorded request a page load does not make: the browser's own, or
/// one made after the load was over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutsideLoad {
    /// The site's icon, which the browser asks for for its tab.
    Favicon,
    /// A prefetch for a later navigation.
    Prefetch,
    /// A web app manifest, which the browser reads for itself.
    Manifest,
    /// A request that started after the load event.
    AfterLoad,
}

impl std::fmt::Display for OutsideLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OutsideLoad::Favicon => "a favicon",
            OutsideLoad::Prefetch => "a prefetch",
            OutsideLoad::Manifest => "a web app manifest",
            OutsideLoad::AfterLoad => "started after the load event",
        })
    }
}

fn is_first(repeat: &u32) -> bool {
    *repeat == 0
}

/// An entry of the HAR that is not replayed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Skipped {
    /// The entry's position in the HAR's `entries`, from 0.
    pub entry: usize,
    /// Its URL (cut short if long).
    pub url: String,
    /// Why it is not replayed.
    pub reason: String,
}

impl Replay {
    /// Reads `DIR/replay.json`, checking its schema.
    pub fn read(dir: &Path) -> Result<Replay> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let replay: Replay = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a replay manifest; rebuild the site with `h3lab site from-har`",
                path.display()
            )
        })?;
        if replay.schema != SCHEMA {
            bail!(
                "{} has schema `{}`, not `{SCHEMA}`; rebuild the site with this h3lab's `site from-har`",
                path.display(),
                replay.schema
            );
        }
        Ok(replay)
    }

    /// Whether `dir` is a replay site.
    pub fn is_replay_site(dir: &Path) -> bool {
        dir.join(MANIFEST).is_file()
    }

    /// The URLs recorded with an error status: a replayed load that gets
    /// them so is as the page was.
    pub fn recorded_errors(&self) -> Vec<String> {
        (self.responses.iter())
            .filter(|r| r.status >= 400)
            .map(|r| r.url.clone())
            .collect()
    }

    /// Where each origin lives when replayed, in order: the server's
    /// extra addresses on an emulated path (`server_ips`), or else
    /// 127.0.0.10 on (loopback, where every 127/8 address is local).
    pub fn origin_addresses(&self, server_ips: Option<&[IpAddr]>) -> Result<Vec<IpAddr>> {
        let origins = self.origins.len();
        let Some(addresses) = server_ips else {
            anyhow::ensure!(
                origins <= 200,
                "a replay of more than 200 origins is not supported"
            );
            return Ok((0..origins)
                .map(|i| IpAddr::from([127, 0, 0, 10 + i as u8]))
                .collect());
        };
        if addresses.len() < origins {
            bail!(
                "the replay has {origins} origins but the server has {} extra addresses; run it with `h3lab net run --server-addresses {origins}`",
                addresses.len(),
            );
        }
        Ok(addresses[..origins].to_vec())
    }

    /// The initiator graph: for each URL, the recorded requests it caused,
    /// in order (none made outside the page load). A GET is made once
    /// however often it was asked for, as a browser's cache would; any
    /// other method as often as recorded, since a beacon sent twice is two
    /// requests.
    pub fn initiated(&self) -> HashMap<String, Vec<InitiatedRequest>> {
        let mut graph: HashMap<String, Vec<InitiatedRequest>> = HashMap::new();
        let in_load = |r: &&RecordedResponse| {
            (r.repeat == 0 || r.method != "GET") && r.outside_load.is_none()
        };
        for response in self.responses.iter().filter(in_load) {
            if let Some(parent) = &response.initiator {
                graph
                    .entry(parent.clone())
                    .or_default()
                    .push(InitiatedRequest {
                        url: response.url.clone(),
                        kind: response.kind,
                        method: response.method.clone(),
                        body: response.request_body.clone(),
                        status: response.status,
                        repeat: response.repeat,
                    });
            }
        }
        graph
    }

    /// How many replayed requests use each method other than GET.
    pub fn other_methods(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for response in self.responses.iter().filter(|r| r.method != "GET") {
            *counts.entry(response.method.clone()).or_default() += 1;
        }
        counts
    }

    /// The responses of the page load: those the capture's load made.
    pub fn in_load(&self) -> impl Iterator<Item = &RecordedResponse> {
        self.responses.iter().filter(|r| r.outside_load.is_none())
    }

    /// Every host name the replay answers for, for the certificate.
    pub fn hosts(&self) -> BTreeSet<String> {
        self.origins.iter().map(|o| o.host.clone()).collect()
    }
}
