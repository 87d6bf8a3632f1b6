//! `[[workload]]`: one measurement, its kind and the keys that kind takes.

use std::path::PathBuf;

use h3lab_results::{HeaderSet, Loader, Proto, TtfbMode, Visit, WorkloadKind};
use h3lab_site::replay::Think;
use h3lab_site::Shape;
use serde::{Deserialize, Deserializer};

use super::target::FieldUrl;
use super::values::{ByteSize, Count, HumanDuration};

/// One measurement of the suite: its name, where it runs and what it does.
#[derive(Debug, Clone)]
pub(crate) struct Workload {
    pub(crate) name: String,
    /// Profiles it runs on; empty means all of the suite's.
    pub(crate) profiles: Vec<String>,
    pub(crate) load: Load,
    /// What a field run requests (the page, or the URL of rps, ttfb and
    /// download); `None` in a lab run, where the server serves `/bytes/N`
    /// or the site.
    pub(crate) url: Option<FieldUrl>,
}

/// What a workload measures, with its parameters.
#[derive(Debug, Clone)]
pub(crate) enum Load {
    /// Requests per second for a payload size at a concurrency.
    Rps {
        /// Response body size; `None` in a field run, which requests a URL.
        size: Option<ByteSize>,
        connections: Count,
        /// Concurrent streams per connection (h2/h3; h1 uses one).
        streams: Count,
        duration: HumanDuration,
        /// What this workload's figure is: throughput or a latency quantile.
        metric: RpsMetric,
        /// An open model at this many requests per second (`h3lab load
        /// --rate`) instead of as fast as the connections go.
        rate: Option<Count>,
        /// The request headers sent (`headers = "browser"`: a browser's,
        /// whose compression then shows on the wire).
        headers: HeaderSet,
    },
    /// `streams` bodies of `size` downloaded in parallel.
    Download {
        /// Body size; `None` in a field run, which downloads a URL.
        size: Option<ByteSize>,
        streams: Count,
        /// Connections carrying the streams; default one for h2/h3 and one
        /// per stream for h1.
        connections: Option<Count>,
        metric: DownloadMetric,
    },
    /// Time to the first response byte on a new connection.
    Ttfb {
        modes: Vec<TtfbMode>,
        /// New connections measured per repetition.
        samples: Count,
    },
    /// Page loads of a site: its HTML and every asset it references.
    Page {
        site: Site,
        loader: Loader,
        visit: Visit,
        /// Page loads measured per repetition.
        loads: Count,
        /// The request headers the built-in loader sends (`headers =
        /// "browser"`: a browser's full set; Chromium always sends its own).
        headers: HeaderSet,
    },
    /// The HTTP/3 conformance suite (`h3lab probe conformance`) against
    /// the server, over h3 only: its figure is the cases failed.
    Conformance {
        /// Case id prefixes to run (`only = ["qpack."]`); all when empty.
        only: Vec<String>,
    },
}

/// The site a page workload loads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Site {
    /// A synthetic site of this shape, generated once per run from the
    /// suite's seed.
    Shape(Shape),
    /// A static site already on disk, served at `/`.
    Dir(PathBuf),
    /// A captured page (`har = "page.har"`), imported once per run as a
    /// replay site with every origin on an address of its own.
    Har(Har),
    /// A deployed page of a field run: the workload's `url`, or the
    /// target's.
    Remote,
}

/// A HAR a page workload replays, checked when the suite is read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Har {
    /// The HAR file.
    pub(crate) path: PathBuf,
    /// The page's URL.
    pub(crate) page: String,
    /// Its origins, each a host of its own in the replay.
    pub(crate) origins: usize,
    /// Responses replayed.
    pub(crate) responses: usize,
    /// Of those, the ones the captured load did not make.
    pub(crate) outside_load: usize,
    /// The replayed bodies' bytes on the wire.
    pub(crate) bytes: u64,
    /// What the capture recorded.
    pub(crate) recorded: h3lab_site::replay::RecordedLoad,
    /// How it is imported.
    pub(crate) import: HarImport,
    /// What the import made of it, as `site from-har` prints it.
    pub(crate) summary: String,
}

/// How a page workload imports its HAR: the keys `site from-har` takes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HarImport {
    /// The page, by its id in the HAR (`page`); `None` is the first.
    pub(crate) page_id: Option<String>,
    /// Whether responses wait their recorded server think time (`think`).
    pub(crate) think: Think,
    /// Whether a capture over `http://` is replayed over https.
    pub(crate) upgrade_cleartext: bool,
}

impl Har {
    /// Imports the HAR into a scratch directory to check it and learn its
    /// shape; a HAR that does not import is an error naming the entry.
    fn check(path: PathBuf, import: HarImport) -> Result<Har, String> {
        let scratch =
            tempfile::tempdir().map_err(|err| format!("cannot make a scratch directory: {err}"))?;
        let summary = import_har(&path, &import, scratch.path())
            .map_err(|err| format!("har `{}`: {err:#}", path.display()))?;
        let printed = summary.to_string();
        let replay = summary.replay;
        let outside_load = replay.responses.len() - replay.in_load().count();
        Ok(Har {
            path,
            page: replay.page,
            origins: replay.origins.len(),
            responses: replay.responses.len(),
            outside_load,
            bytes: replay.responses.iter().map(|r| r.body_bytes).sum(),
            recorded: replay.recorded,
            import,
            summary: printed,
        })
    }
}

/// Imports `har` into `out` as its page workload replays it.
pub(crate) fn import_har(
    har: &std::path::Path,
    import: &HarImport,
    out: &std::path::Path,
) -> anyhow::Result<h3lab_site::har::ImportSummary> {
    let options = h3lab_site::har::ImportOptions {
        think: import.think,
        page: import.page_id.clone(),
        keep_first_duplicate: false,
        upgrade_cleartext: import.upgrade_cleartext,
    };
    h3lab_site::har::import(har, out, &options)
}

impl Site {
    /// The page in words, for the results: two page workloads that load
    /// the same site (with different loaders) say the same.
    pub(crate) fn describe(&self) -> String {
        match self {
            Site::Shape(shape) => format!("site {}", shape.name()),
            Site::Dir(dir) => format!("site {}", dir.display()),
            Site::Har(har) => match &har.import.page_id {
                Some(id) => format!("har {} page {id}", har.path.display()),
                None => format!("har {}", har.path.display()),
            },
            Site::Remote => "deployed".to_string(),
        }
    }

    /// `small` etc. for a shape, or a directory holding a site; anything
    /// else is an error that says how to get one.
    fn parse(text: &str) -> Result<Site, String> {
        if let Ok(shape) = text.parse::<Shape>() {
            return Ok(Site::Shape(shape));
        }
        let dir = super::paths::resolve(text);
        if !dir.is_dir() {
            return Err(format!(
                "site `{}` is neither a shape (small, content, spa, cms) \
                 nor an existing directory (a path is relative to the suite file); name a \
                 shape, or generate a site with `h3lab site gen small --out DIR` and give \
                 its directory",
                dir.display()
            ));
        }
        if !dir.join("index.html").is_file() {
            return Err(format!(
                "site directory `{}` has no index.html, so `/` has no page; \
                 give the directory that holds the site's index.html",
                dir.display()
            ));
        }
        Ok(Site::Dir(dir))
    }
}

impl<'de> Deserialize<'de> for Site {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Site::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A `[[workload]]` table as written: one flat set of keys, so that toml
/// reports unknown keys and bad values at their own line (an internally
/// tagged enum would only know the table's line).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadTable {
    kind: WorkloadKind,
    name: String,
    #[serde(default)]
    profiles: Vec<String>,
    size: Option<ByteSize>,
    connections: Option<Count>,
    streams: Option<Count>,
    duration: Option<HumanDuration>,
    metric: Option<String>,
    modes: Option<Vec<TtfbMode>>,
    samples: Option<Count>,
    site: Option<Site>,
    har: Option<String>,
    page: Option<String>,
    think: Option<Think>,
    upgrade_cleartext: Option<bool>,
    loader: Option<Loader>,
    visit: Option<Visit>,
    loads: Option<Count>,
    url: Option<FieldUrl>,
    rate: Option<Count>,
    headers: Option<HeaderSet>,
    only: Option<Vec<String>>,
}

impl<'de> Deserialize<'de> for Workload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        WorkloadTable::deserialize(d)?
            .into_workload()
            .map_err(serde::de::Error::custom)
    }
}

impl WorkloadTable {
    fn into_workload(self) -> Result<Workload, String> {
        self.refuse_keys_its_kind_does_not_take()?;
        let load = match self.kind {
            WorkloadKind::Rps => self.rps()?,
            WorkloadKind::Download => self.download()?,
            WorkloadKind::Ttfb => self.ttfb()?,
            WorkloadKind::Page => self.page()?,
            WorkloadKind::Conformance => Load::Conformance {
                only: self.only.clone().unwrap_or_default(),
            },
        };
        Ok(Workload {
            name: self.name,
            profiles: self.profiles,
            load,
            url: self.url,
        })
    }

    /// Each key that only some kinds take, and whether the table gives it.
    fn given(&self) -> [(&'static str, bool); 18] {
        [
            ("size", self.size.is_some()),
            ("connections", self.connections.is_some()),
            ("streams", self.streams.is_some()),
            ("duration", self.duration.is_some()),
            ("metric", self.metric.is_some()),
            ("modes", self.modes.is_some()),
            ("samples", self.samples.is_some()),
            ("site", self.site.is_some()),
            ("har", self.har.is_some()),
            ("page", self.page.is_some()),
            ("think", self.think.is_some()),
            ("upgrade_cleartext", self.upgrade_cleartext.is_some()),
            ("loader", self.loader.is_some()),
            ("visit", self.visit.is_some()),
            ("loads", self.loads.is_some()),
            ("rate", self.rate.is_some()),
            ("headers", self.headers.is_some()),
            ("only", self.only.is_some()),
        ]
    }

    fn refuse_keys_its_kind_does_not_take(&self) -> Result<(), String> {
        let takes = keys_of(self.kind);
        match (self.given().iter()).find(|(key, present)| *present && !takes.contains(key)) {
            Some((key, _)) => Err(format!(
                "`{key}` does not apply to {} workload `{}`",
                self.kind, self.name
            )),
            None => Ok(()),
        }
    }

    /// The `metric` given, which must be one of `choices`, or the first.
    fn metric(&self, choices: &[&str]) -> Result<String, String> {
        match &self.metric {
            Some(m) if !choices.contains(&m.as_str()) => Err(format!(
                "{} workload `{}`: metric `{m}` is not one of {}",
                self.kind,
                self.name,
                choices.join(", ")
            )),
            m => Ok(m.clone().unwrap_or_else(|| choices[0].to_string())),
        }
    }

    fn rps(&self) -> Result<Load, String> {
        let needs = || format!("{} workload `{}` needs `duration`", self.kind, self.name);
        Ok(Load::Rps {
            size: self.size,
            connections: self.connections.unwrap_or(Count(10)),
            streams: self.streams.unwrap_or(Count(1)),
            duration: self.duration.ok_or_else(needs)?,
            metric: match self.metric(&["throughput", "p50", "p99"])?.as_str() {
                "p50" => RpsMetric::P50,
                "p99" => RpsMetric::P99,
                _ => RpsMetric::Throughput,
            },
            rate: self.rate,
            headers: self.headers.unwrap_or_default(),
        })
    }

    fn download(&self) -> Result<Load, String> {
        Ok(Load::Download {
            size: self.size,
            streams: self.streams.unwrap_or(Count(1)),
            connections: self.connections,
            metric: match self.metric(&["time", "rps"])?.as_str() {
                "rps" => DownloadMetric::RequestsPerSecond,
                _ => DownloadMetric::Time,
            },
        })
    }

    fn ttfb(&self) -> Result<Load, String> {
        let modes = (self.modes.clone())
            .unwrap_or_else(|| vec![TtfbMode::Cold, TtfbMode::Resumed, TtfbMode::ZeroRtt]);
        if modes.is_empty() {
            return Err(format!(
                "ttfb workload `{}` has no `modes`; use some of cold, resumed, 0rtt",
                self.name
            ));
        }
        Ok(Load::Ttfb {
            modes,
            samples: self.samples.unwrap_or(Count(5)),
        })
    }

    fn page(&self) -> Result<Load, String> {
        let name = &self.name;
        let har_only = ["page", "think", "upgrade_cleartext"];
        if let Some((key, _)) = (self.given().iter())
            .find(|(key, present)| *present && har_only.contains(key))
            .filter(|_| self.har.is_none())
        {
            return Err(format!(
                "page workload `{name}`: `{key}` applies to a `har`; add one or remove it"
            ));
        }
        let site = match (self.site.clone(), self.har.clone(), &self.url) {
            (Some(site), None, None) => site,
            (None, Some(har), None) => Site::Har(Har::check(
                super::paths::resolve(&har),
                HarImport {
                    page_id: self.page.clone(),
                    think: self.think.unwrap_or(Think::Recorded),
                    upgrade_cleartext: self.upgrade_cleartext.unwrap_or(false),
                },
            )?),
            (None, None, _) => Site::Remote,
            _ => {
                return Err(format!(
                    "page workload `{name}` names more than one of `site`, `har` and `url`; \
                     give one"
                ))
            }
        };
        let loader = self.loader.unwrap_or_default();
        let headers = self.headers.unwrap_or_default();
        if loader != Loader::Builtin && headers == HeaderSet::Browser {
            return Err(format!(
                "page workload `{name}`: `headers = \"browser\"` is for the built-in loader; \
                 {loader} sends its own headers"
            ));
        }
        Ok(Load::Page {
            site,
            loader,
            visit: self.visit.unwrap_or_default(),
            loads: self.loads.unwrap_or(Count(20)),
            headers,
        })
    }
}

/// The keys of a `[[workload]]` table only some kinds take: those `kind`
/// takes.
fn keys_of(kind: WorkloadKind) -> &'static [&'static str] {
    match kind {
        WorkloadKind::Rps => &[
            "size",
            "connections",
            "streams",
            "duration",
            "metric",
            "rate",
            "headers",
        ],
        WorkloadKind::Download => &["size", "connections", "streams", "metric"],
        WorkloadKind::Ttfb => &["modes", "samples"],
        WorkloadKind::Page => &[
            "site",
            "har",
            "page",
            "think",
            "upgrade_cleartext",
            "loader",
            "visit",
            "loads",
            "headers",
        ],
        WorkloadKind::Conformance => &["only"],
    }
}

impl Workload {
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn kind(&self) -> WorkloadKind {
        match self.load {
            Load::Rps { .. } => WorkloadKind::Rps,
            Load::Download { .. } => WorkloadKind::Download,
            Load::Ttfb { .. } => WorkloadKind::Ttfb,
            Load::Page { .. } => WorkloadKind::Page,
            Load::Conformance { .. } => WorkloadKind::Conformance,
        }
    }

    /// Whether this workload has cells over `protocol`: the conformance
    /// suite is HTTP/3's alone.
    pub(crate) fn runs_over(&self, protocol: Proto) -> bool {
        match self.load {
            Load::Conformance { .. } => protocol == Proto::H3,
            _ => true,
        }
    }

    /// Whether this workload runs on `profile`.
    pub(crate) fn runs_on(&self, profile: &str) -> bool {
        self.profiles.is_empty() || self.profiles.iter().any(|p| p == profile)
    }
}

/// The figure a download workload reports per repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DownloadMetric {
    /// Seconds until every stream finished.
    Time,
    /// Streams finished per second: `streams / time`.
    RequestsPerSecond,
}

/// The figure an rps workload reports per repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RpsMetric {
    Throughput,
    P50,
    P99,
}

#[cfg(test)]
mod tests {
    use super::super::tests::{error_of, MINIMAL, PAGE};
    use super::super::Suite;
    use super::*;
    #[test]
    fn workload_keys_must_fit_the_kind() {
        let err = error_of(&MINIMAL.replace("duration = \"2s\"", "duration = \"2s\"\nsamples = 3"));
        assert!(
            err.contains("line 6") && err.contains("`samples` does not apply"),
            "{err}"
        );
        let err = error_of(&MINIMAL.replace("size = \"1KB\"\n", ""));
        assert!(err.contains("needs `size`"), "{err}");
    }

    #[test]
    fn a_conformance_workload_runs_over_h3_only_and_against_lab_servers_only() {
        let conformance =
            "\n[[workload]]\nkind = \"conformance\"\nname = \"c\"\nonly = [\"qpack.\"]\n";
        let suite = Suite::from_toml(&format!("{MINIMAL}{conformance}")).unwrap();
        let Load::Conformance { only } = &suite.workloads[1].load else {
            panic!("{:?}", suite.workloads[1].load);
        };
        assert_eq!(only, &["qpack."]);
        let cells = crate::runner::plan(&suite);
        let protocols_of = |name: &str| -> std::collections::BTreeSet<Proto> {
            (cells.iter())
                .filter(|cell| cell.workload.name() == name)
                .map(|cell| cell.protocol)
                .collect()
        };
        assert_eq!(protocols_of("c"), [Proto::H3].into());
        assert_eq!(protocols_of("api"), [Proto::H2, Proto::H3].into());

        let err = error_of(&format!("{MINIMAL}{conformance}size = \"1KB\"\n"));
        assert!(
            err.contains("`size` does not apply to conformance"),
            "{err}"
        );
        let h2_only = MINIMAL.replace("[\"h2\", \"h3\"]", "[\"h2\"]");
        let err = error_of(&format!("{h2_only}{conformance}"));
        assert!(
            err.contains("runs over h3 only") && err.contains("add \"h3\""),
            "{err}"
        );
        let field = "name = \"f\"\nprotocols = [\"h3\"]\nprofiles = [\"real\"]\n\
                     [target]\nurl = \"https://www.example.com/\"\n";
        let err = error_of(&format!("{field}{conformance}"));
        assert!(err.contains("h3lab probe conformance URL"), "{err}");
    }

    #[test]
    fn metrics_must_fit_the_kind() {
        let text = format!("{MINIMAL}\n[[workload]]\nkind = \"download\"\nname = \"dl\"\nsize = \"1MB\"\nstreams = 4\nmetric = \"rps\"\n");
        let suite = Suite::from_toml(&text).unwrap();
        match &suite.workloads[1].load {
            Load::Download {
                streams,
                metric,
                connections,
                ..
            } => {
                assert_eq!(
                    (*streams, *metric, *connections),
                    (Count(4), DownloadMetric::RequestsPerSecond, None)
                );
            }
            other => panic!("parsed as {other:?}"),
        }
        let err = error_of(&text.replace("metric = \"rps\"", "metric = \"p99\""));
        assert!(
            err.contains("metric `p99` is not one of time, rps"),
            "{err}"
        );
    }

    #[test]
    fn browser_headers_are_for_the_builtin_loader_only() {
        let page = format!("{PAGE}headers = \"browser\"\n");
        let suite = Suite::from_toml(&page).unwrap();
        assert!(matches!(
            suite.workloads[0].load,
            Load::Page {
                headers: HeaderSet::Browser,
                ..
            }
        ));
        for loader in ["chromium", "firefox"] {
            let err = error_of(&format!("{page}loader = \"{loader}\"\n"));
            assert!(
                err.contains(&format!("{loader} sends its own headers")),
                "{err}"
            );
        }
        let download = "[[workload]]\nkind = \"download\"\nname = \"d\"\nsize = \"1KB\"\n";
        let err = error_of(&format!("{MINIMAL}{download}headers = \"browser\"\n"));
        assert!(err.contains("`headers` does not apply"), "{err}");
    }

    /// The page settings of a suite's first workload, which must be a page.
    fn page_settings(text: &str) -> (Site, Loader, Visit, Count) {
        let suite = Suite::from_toml(text).unwrap();
        assert_eq!(suite.workloads[0].kind(), WorkloadKind::Page);
        match &suite.workloads[0].load {
            Load::Page {
                site,
                loader,
                visit,
                loads,
                ..
            } => (site.clone(), *loader, *visit, *loads),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn page_workload_gets_defaults() {
        assert_eq!(
            page_settings(PAGE),
            (
                Site::Shape(Shape::Small),
                Loader::Builtin,
                Visit::Cold,
                Count(20)
            )
        );
        let text = PAGE.replace(
            "site = \"small\"",
            "site = \"cms\"\nloader = \"chromium\"\nvisit = \"warm\"\nloads = 3",
        );
        assert_eq!(
            page_settings(&text),
            (
                Site::Shape(Shape::Cms),
                Loader::Chromium,
                Visit::Warm,
                Count(3)
            )
        );
    }

    #[test]
    fn page_workload_takes_a_site_directory() {
        let dir = std::env::temp_dir().join(format!("h3lab-suite-site-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = PAGE.replace("\"small\"", &format!("{:?}", dir.display().to_string()));
        let err = error_of(&text);
        assert!(err.contains("has no index.html"), "{err}");
        std::fs::write(dir.join("index.html"), "<html></html>").unwrap();
        let suite = Suite::from_toml(&text).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        match &suite.workloads[0].load {
            Load::Page { site, .. } => assert_eq!(*site, Site::Dir(dir)),
            other => panic!("parsed as {other:?}"),
        }
    }

    /// `cd / && h3lab bench /some/dir/mine.toml` finds `har = "page.har"`
    /// and `site = "site"` in /some/dir, where the suite is.
    #[test]
    fn paths_in_a_suite_file_are_relative_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../site/tests/fixtures/har/chrome.har");
        std::fs::copy(fixture, dir.path().join("page.har")).unwrap();
        std::fs::create_dir(dir.path().join("site")).unwrap();
        std::fs::write(dir.path().join("site/index.html"), "<html></html>").unwrap();
        let text = format!(
            "{}\n[[workload]]\nkind = \"page\"\nname = \"dir\"\nsite = \"site\"\n",
            PAGE.replace("site = \"small\"", "har = \"page.har\"")
        );
        let file = dir.path().join("mine.toml");
        std::fs::write(&file, &text).unwrap();
        let suite = Suite::from_file(&file).unwrap();
        let sites: Vec<&Site> = suite
            .workloads
            .iter()
            .map(|workload| match &workload.load {
                Load::Page { site, .. } => site,
                other => panic!("parsed as {other:?}"),
            })
            .collect();
        match sites[..] {
            [Site::Har(har), Site::Dir(site)] => {
                assert_eq!(har.path, dir.path().join("page.har"));
                assert_eq!(*site, dir.path().join("site"));
            }
            _ => panic!("parsed as {sites:?}"),
        }
        // Read from its text alone, the same suite looks in the current
        // directory, and says where it looked.
        let err = format!("{:#}", Suite::from_toml(&text).unwrap_err());
        assert!(err.contains("har `page.har`"), "{err}");
    }

    #[test]
    fn page_workload_takes_a_har_and_checks_it_when_the_suite_is_read() {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../site/tests/fixtures/har");
        let har = |name: &str| format!("har = {:?}", fixtures.join(name).display().to_string());
        let suite =
            Suite::from_toml(&PAGE.replace("site = \"small\"", &har("chrome.har"))).unwrap();
        match &suite.workloads[0].load {
            Load::Page {
                site: Site::Har(har),
                ..
            } => {
                assert_eq!((har.origins, har.responses), (3, 5));
                assert_eq!(har.page, "https://www.example.test/");
                assert_eq!(har.recorded.protocol.as_deref(), Some("h2"));
            }
            other => panic!("parsed as {other:?}"),
        }
        let err = error_of(&PAGE.replace("site = \"small\"", &har("bad/no-response.har")));
        assert!(
            err.contains("line 6") && err.contains("has no `response`"),
            "{err}"
        );
        let both = PAGE.replace(
            "site = \"small\"",
            &format!("site = \"small\"\n{}", har("chrome.har")),
        );
        assert!(error_of(&both).contains("more than one of `site`, `har` and `url`"));
        let neither = PAGE.replace("site = \"small\"\n", "");
        assert!(error_of(&neither).contains("or `har` (a captured page)"));
    }

    /// The page and think time, as `site from-har --page --think` take them.
    #[test]
    fn a_har_workload_takes_the_page_and_think_time_to_import() {
        let har = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../site/tests/fixtures/har/webpagetest.har");
        let with = |keys: &str| {
            PAGE.replace(
                "site = \"small\"",
                &format!("har = {:?}\n{keys}", har.display().to_string()),
            )
        };
        let imported = |keys: &str| match Suite::from_toml(&with(keys)).unwrap().workloads[0].load {
            Load::Page {
                site: Site::Har(ref har),
                ..
            } => har.clone(),
            ref other => panic!("parsed as {other:?}"),
        };
        let first = imported("");
        assert_eq!(first.import.page_id, None);
        assert_eq!(first.import.think, Think::Recorded);
        let keys = "page = \"page_1_1_1\"\nthink = \"none\"";
        let repeat = imported(keys);
        assert_eq!(repeat.import.page_id.as_deref(), Some("page_1_1_1"));
        assert_eq!(repeat.import.think, Think::None);
        assert_ne!(
            (first.responses, first.bytes),
            (repeat.responses, repeat.bytes),
            "the repeat view is another page load"
        );
        let printed = Suite::from_toml(&with(keys)).unwrap().har_imports();
        assert_eq!(printed.len(), 1);
        assert!(
            printed[0].starts_with("page workload `pages` replays ")
                && printed[0].contains("webpagetest.har (no server think time):\npage: ")
                && printed[0].contains("\nresponses: "),
            "{}",
            printed[0]
        );
        let err = error_of(&with("page = \"page_9\""));
        assert!(
            err.contains("no page `page_9`") && err.contains("page_1_0_1"),
            "{err}"
        );
        let err = error_of(&with("think = \"later\""));
        assert!(err.contains("line 10") && err.contains("recorded"), "{err}");
        let err = error_of(&PAGE.replace("site = \"small\"", "site = \"small\"\nthink = \"none\""));
        assert!(err.contains("`think` applies to a `har`"), "{err}");
    }

    #[test]
    fn bad_page_workloads_are_rejected_with_their_line() {
        let err = error_of(&PAGE.replace("\"small\"", "\"/no/such/site\""));
        assert!(
            err.contains("line 9")
                && err.contains("neither a shape")
                && err.contains("h3lab site gen"),
            "{err}"
        );
        let err = error_of(&PAGE.replace("site = \"small\"", "site = \"small\"\nloads = 0"));
        assert!(err.contains("line 10") && err.contains("positive"), "{err}");
        let err =
            error_of(&PAGE.replace("site = \"small\"", "site = \"small\"\nloader = \"webkit\""));
        assert!(err.contains("line 10") && err.contains("webkit"), "{err}");
        let err = error_of(&PAGE.replace("site = \"small\"", "site = \"small\"\nvisit = \"hot\""));
        assert!(err.contains("line 10") && err.contains("hot"), "{err}");
        let err = error_of(&PAGE.replace("site = \"small\"", "site = \"small\"\npages = 3"));
        assert!(err.contains("line 10") && err.contains("pages"), "{err}");
        let err = error_of(&PAGE.replace("site = \"small\"", "site = \"small\"\nsize = \"1KB\""));
        assert!(
            err.contains("line 6") && err.contains("`size` does not apply to page workload"),
            "{err}"
        );
        let err = error_of(&PAGE.replace("site = \"small\"\n", ""));
        assert!(err.contains("needs `site`"), "{err}");
        let err = error_of(&MINIMAL.replace("duration = \"2s\"", "duration = \"2s\"\nloads = 3"));
        assert!(err.contains("`loads` does not apply to rps"), "{err}");
    }
}
