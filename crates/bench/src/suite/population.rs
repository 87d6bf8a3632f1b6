//! `[population]`: the users a suite stands for, as groups that each hold
//! a share of them on a network of their own (docs/population.md).
//!
//! Each group becomes a profile named after it: its network with its UDP
//! policy and a DNS server that publishes what its discovery needs. Its
//! users run the suite's workloads with h3 off (h2, or h1) and with h3 on
//! (`auto`), so both sides of a group meet the same seeded path. A group
//! that chooses a loader or a visit gets its own copy of each page
//! workload, limited to its profile.

use anyhow::{bail, ensure};
use h3lab_results::population::PopulationMeasure;
use h3lab_results::population::{Group, Population, PublishedPopulationFigure};
use h3lab_results::{HeaderSet, Loader, Proto, Visit};
use serde::{Deserialize, Deserializer};
use toml::Spanned;

use super::workload::{Load, Workload};
use super::{CustomProfile, Suite};

/// How far from 100 the shares may add up to.
const SHARE_TOLERANCE: f64 = 0.1;

/// The `[population]` table as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PopulationTable {
    #[serde(rename = "group")]
    groups: Spanned<Vec<GroupTable>>,
    #[serde(default)]
    published: Vec<PublishedTable>,
}

/// A `[[population.group]]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupTable {
    name: Spanned<String>,
    /// Percent of the users.
    share: Spanned<f64>,
    /// A built-in profile or a `[[profile]]` (which may replay traces).
    profile: Spanned<String>,
    udp: Option<UdpText>,
    #[serde(default)]
    discovery: Discovery,
    #[serde(default)]
    h3_off: OffProtocol,
    loader: Option<Loader>,
    visit: Option<GroupVisit>,
    source: Option<String>,
    /// These users change networks mid-session: their handoffs run too.
    handoffs: Option<Spanned<bool>>,
}

/// A UDP policy, checked where it is written.
#[derive(Debug, Clone)]
struct UdpText(String);

impl<'de> Deserialize<'de> for UdpText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        linkem::config::parse_udp_policy(&text).map_err(serde::de::Error::custom)?;
        Ok(UdpText(text))
    }
}

/// How a group's browsers learn that the site offers h3.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Discovery {
    /// From the `Alt-Svc` header of a response over TCP; the path's DNS
    /// publishes the address alone.
    #[default]
    AltSvc,
    /// From a DNS `HTTPS` record listing h3, before the first connection.
    HttpsRecord,
}

impl Discovery {
    fn name(self) -> &'static str {
        match self {
            Discovery::AltSvc => "alt-svc",
            Discovery::HttpsRecord => "https-record",
        }
    }

    /// The `dns` setting of the group's profile.
    fn dns(self) -> &'static str {
        match self {
            Discovery::AltSvc => "a",
            Discovery::HttpsRecord => "https:h3,h2",
        }
    }
}

/// What a group gets with h3 off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
enum OffProtocol {
    #[serde(rename = "h1")]
    H1,
    #[default]
    #[serde(rename = "h2")]
    H2,
}

impl From<OffProtocol> for Proto {
    fn from(off: OffProtocol) -> Proto {
        match off {
            OffProtocol::H1 => Proto::H1,
            OffProtocol::H2 => Proto::H2,
        }
    }
}

/// A group's visit: a first one, or a returning browser's.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum GroupVisit {
    First,
    Repeat,
}

impl From<GroupVisit> for Visit {
    fn from(visit: GroupVisit) -> Visit {
        match visit {
            GroupVisit::First => Visit::Cold,
            GroupVisit::Repeat => Visit::Repeat,
        }
    }
}

/// A `[[population.published]]` table: a study's figure about a group or
/// the whole population.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PublishedTable {
    study: String,
    label: String,
    group: Option<Spanned<String>>,
    workload: Option<Spanned<String>>,
    measure: PopulationMeasure,
    off: Option<f64>,
    on: Option<f64>,
    change_percent: Option<f64>,
    unit: String,
    #[serde(default)]
    note: String,
}

impl Suite {
    /// Turns `[population]` into the profiles, protocols and workloads
    /// that run it, and the record the report reads; refuses, naming the
    /// line, a population whose shares do not add up, that names an
    /// unknown profile or group, or that has no group.
    pub(super) fn expand_population(&mut self) -> anyhow::Result<()> {
        let Some(table) = self.population_table.take() else {
            return Ok(());
        };
        let line = |offset: usize| line_at(&self.source, offset);
        ensure!(
            !table.groups.get_ref().is_empty(),
            "line {}: `[population]` has no group; add `[[population.group]]` tables with a \
             name, a share and a profile",
            line(table.groups.span().start)
        );
        self.check_groups(table.groups.get_ref(), &line)?;
        let groups = table.groups.into_inner();
        let population = Population {
            published: self.published_figures(table.published, &groups, &line)?,
            groups: groups.iter().map(GroupTable::record).collect(),
        };
        for group in &groups {
            let profile = self.group_profile(group);
            self.custom_profiles.push(profile);
            self.profiles.push(group.name.get_ref().clone());
        }
        self.add_population_protocols(&population)?;
        self.copy_page_workloads_for(&groups)?;
        self.population = Some(population);
        Ok(())
    }

    fn check_groups(
        &self,
        groups: &[GroupTable],
        line: &impl Fn(usize) -> usize,
    ) -> anyhow::Result<()> {
        let mut names = std::collections::BTreeSet::new();
        for group in groups {
            let name = group.name.get_ref();
            let at = line(group.name.span().start);
            ensure!(
                names.insert(name),
                "line {at}: two population groups are named `{name}`; give each its own name"
            );
            ensure!(
                self.custom_profile(name).is_none() && !self.profiles.contains(name),
                "line {at}: population group `{name}` has the name of one of the suite's \
                 profiles; each group runs on a profile of its own name, so rename the group"
            );
            let share = *group.share.get_ref();
            ensure!(
                share.is_finite() && share > 0.0 && share <= 100.0,
                "line {}: group `{name}` has a share of {share}; a share is a percentage of \
                 the users above 0 and at most 100",
                line(group.share.span().start)
            );
            if let Some(handoffs) = group.handoffs.as_ref().filter(|h| *h.get_ref()) {
                let udp = group.udp.as_ref().map_or("open", |udp| &udp.0);
                ensure!(
                    udp == "open",
                    "line {}: group `{name}` has handoffs on a network whose UDP is `{udp}`; a \
                     handoff follows one protocol's connection, and which one `auto` ends on \
                     where UDP is not open is not modelled: give the mobile users a group of \
                     their own with UDP open",
                    line(handoffs.span().start)
                );
            }
            let profile = group.profile.get_ref();
            if self.custom_profile(profile).is_none() {
                linkem::profile(profile).map_err(|e| {
                    anyhow::anyhow!(
                        "line {}: group `{name}`: {e} (or define it in a [[profile]] table)",
                        line(group.profile.span().start)
                    )
                })?;
            }
        }
        let total: f64 = groups.iter().map(|group| *group.share.get_ref()).sum();
        ensure!(
            (total - 100.0).abs() <= SHARE_TOLERANCE,
            "line {}: the population's shares add up to {total} %, not 100; make the groups' \
             `share`s add up to 100",
            line(groups[0].share.span().start)
        );
        Ok(())
    }

    /// The group's own profile: its network with its UDP policy and the
    /// DNS its discovery needs.
    fn group_profile(&self, group: &GroupTable) -> CustomProfile {
        let network = group.profile.get_ref();
        let mut profile = match self.custom_profile(network) {
            Some(custom) => custom.clone(),
            None => CustomProfile {
                base: Some(network.clone()),
                ..CustomProfile::default()
            },
        };
        profile.name = group.name.get_ref().clone();
        if let Some(udp) = &group.udp {
            profile.udp = Some(udp.0.clone());
        }
        profile.dns = Some(group.discovery.dns().to_string());
        profile
    }

    /// Each group's h3-off protocol and `auto`: added when the suite
    /// lists no protocols, required when it does.
    fn add_population_protocols(&mut self, population: &Population) -> anyhow::Result<()> {
        let mut needed: Vec<Proto> = Vec::new();
        for protocol in population.groups.iter().flat_map(|g| [g.off, g.on]) {
            if !needed.contains(&protocol) {
                needed.push(protocol);
            }
        }
        needed.sort();
        if self.protocols.is_empty() {
            self.protocols = needed;
            return Ok(());
        }
        if let Some(missing) = needed.iter().find(|p| !self.protocols.contains(p)) {
            bail!(
                "suite `{}`: the population's groups run {missing}, which `protocols` leaves \
                 out; add it, or leave `protocols` out to run what the groups need",
                self.name
            );
        }
        Ok(())
    }

    /// A copy of each page workload for each group that chose a loader or
    /// a visit, limited to its profile; the workload itself then runs on
    /// the other profiles only.
    fn copy_page_workloads_for(&mut self, groups: &[GroupTable]) -> anyhow::Result<()> {
        let choosing: Vec<&GroupTable> = (groups.iter())
            .filter(|group| group.loader.is_some() || group.visit.is_some())
            .collect();
        if choosing.is_empty() {
            return Ok(());
        }
        let others: Vec<String> = (self.profiles.iter())
            .filter(|profile| !choosing.iter().any(|g| g.name.get_ref() == *profile))
            .cloned()
            .collect();
        let mut workloads = Vec::new();
        for workload in std::mem::take(&mut self.workloads) {
            let is_page = matches!(workload.load, Load::Page { .. });
            if !is_page || !workload.profiles.is_empty() {
                workloads.push(workload);
                continue;
            }
            for group in &choosing {
                workloads.push(group.copy_of(&workload)?);
            }
            if !others.is_empty() {
                workloads.push(Workload {
                    profiles: others.clone(),
                    ..workload
                });
            }
        }
        self.workloads = workloads;
        Ok(())
    }
}

impl GroupTable {
    fn record(&self) -> Group {
        Group {
            name: self.name.get_ref().clone(),
            share: self.share.get_ref() / 100.0,
            network: self.profile.get_ref().clone(),
            udp: self.udp.as_ref().map_or("open", |udp| &udp.0).to_string(),
            discovery: self.discovery.name().to_string(),
            off: self.h3_off.into(),
            on: Proto::Auto,
            loader: self.loader,
            visit: self.visit.map(Visit::from),
            source: self.source.clone(),
            handoffs: self.has_handoffs(),
        }
    }

    fn has_handoffs(&self) -> bool {
        self.handoffs.as_ref().is_some_and(|h| *h.get_ref())
    }

    /// Page workload `workload` as this group's users load it.
    fn copy_of(&self, workload: &Workload) -> anyhow::Result<Workload> {
        let mut copy = workload.clone();
        copy.profiles = vec![self.name.get_ref().clone()];
        if let Load::Page {
            loader,
            visit,
            headers,
            ..
        } = &mut copy.load
        {
            *loader = self.loader.unwrap_or(*loader);
            *visit = self.visit.map_or(*visit, Visit::from);
            ensure!(
                !(*loader != Loader::Builtin && *headers == HeaderSet::Browser),
                "population group `{}` loads page workload `{}` in {}, which sends its \
                 own headers; drop `headers = \"browser\"` from the workload",
                self.name.get_ref(),
                workload.name,
                loader
            );
        }
        Ok(copy)
    }
}

impl Suite {
    /// The population's published figures, each naming one of its groups
    /// (or none, for everyone) and one of the suite's workloads (or none).
    fn published_figures(
        &self,
        tables: Vec<PublishedTable>,
        groups: &[GroupTable],
        line: &impl Fn(usize) -> usize,
    ) -> anyhow::Result<Vec<PublishedPopulationFigure>> {
        let mut figures = Vec::new();
        for table in tables {
            if let Some(group) = &table.group {
                ensure!(
                    groups.iter().any(|g| g.name.get_ref() == group.get_ref()),
                    "line {}: published figure `{}` names group `{}`, which the population does \
                     not have; name one of its groups, or leave `group` out for the whole population",
                    line(group.span().start),
                    table.label,
                    group.get_ref()
                );
            }
            if table.measure == PopulationMeasure::HandoffResets {
                check_handoff_figure(&table, groups, line)?;
            }
            if let Some(workload) = &table.workload {
                ensure!(
                    self.workloads
                        .iter()
                        .any(|w| w.name() == workload.get_ref()),
                    "line {}: published figure `{}` names workload `{}`, which the suite does not \
                     define; name one of its workloads, or leave `workload` out",
                    line(workload.span().start),
                    table.label,
                    workload.get_ref()
                );
            }
            figures.push(PublishedPopulationFigure {
                study: table.study,
                label: table.label,
                group: table.group.map(Spanned::into_inner),
                workload: table.workload.map(Spanned::into_inner),
                measure: table.measure,
                off: table.off,
                on: table.on,
                change_percent: table.change_percent,
                unit: table.unit,
                note: table.note,
            });
        }
        Ok(figures)
    }
}

/// A figure on handoffs matches the handoff runs, which no workload has,
/// of a group that has them (or of all such groups).
fn check_handoff_figure(
    table: &PublishedTable,
    groups: &[GroupTable],
    line: &impl Fn(usize) -> usize,
) -> anyhow::Result<()> {
    if let Some(workload) = &table.workload {
        bail!(
            "line {}: published figure `{}` on handoff resets names workload `{}`; handoffs \
             run apart from the workloads, so leave `workload` out",
            line(workload.span().start),
            table.label,
            workload.get_ref()
        );
    }
    let named = |group: &GroupTable| match &table.group {
        Some(name) => group.name.get_ref() == name.get_ref(),
        None => true,
    };
    ensure!(
        groups
            .iter()
            .filter(|g| named(g))
            .any(GroupTable::has_handoffs),
        "published figure `{}` on handoff resets matches no group with `handoffs = true`; \
         give the mobile users' group `handoffs = true`",
        table.label
    );
    Ok(())
}

/// The 1-based line of byte `offset` in `text`.
fn line_at(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::super::tests::error_of;
    use super::*;

    const POPULATION: &str = r#"name = "users"

[[workload]]
kind = "page"
name = "page"
site = "small"

[[population.group]]
name = "home"
share = 60
profile = "broadband"

[[population.group]]
name = "phones"
share = 30
profile = "lte"
visit = "repeat"

[[population.group]]
name = "office"
share = 10
profile = "broadband"
udp = "blocked"
discovery = "https-record"
h3_off = "h1"
"#;

    fn suite(text: &str) -> Suite {
        Suite::from_toml(text).unwrap()
    }

    #[test]
    fn each_group_runs_on_a_profile_of_its_own_with_both_sides() {
        let suite = suite(POPULATION);
        assert_eq!(suite.profiles, ["home", "phones", "office"]);
        assert_eq!(suite.protocols, [Proto::H1, Proto::H2, Proto::Auto]);
        let office = suite.custom_profile("office").unwrap();
        assert_eq!(office.base.as_deref(), Some("broadband"));
        assert_eq!(office.udp.as_deref(), Some("blocked"));
        assert_eq!(office.dns.as_deref(), Some("https:h3,h2"));
        assert_eq!(
            suite.custom_profile("home").unwrap().dns.as_deref(),
            Some("a")
        );
        let population = suite.population.as_ref().unwrap();
        let shares: Vec<f64> = population.groups.iter().map(|g| g.share).collect();
        assert_eq!(shares, [0.6, 0.3, 0.1]);
        assert_eq!(population.groups[2].off, Proto::H1);
        assert_eq!(population.groups[2].udp, "blocked");
        assert_eq!(population.groups[0].udp, "open");
    }

    #[test]
    fn a_group_that_chooses_its_visit_gets_its_own_copy_of_each_page_workload() {
        let suite = suite(POPULATION);
        let runs: Vec<(Vec<String>, Visit)> = (suite.workloads.iter())
            .map(|workload| match &workload.load {
                Load::Page { visit, .. } => (workload.profiles.clone(), *visit),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            runs,
            [
                (vec!["phones".to_string()], Visit::Repeat),
                (vec!["home".to_string(), "office".to_string()], Visit::Cold),
            ]
        );
        let cells = crate::runner::plan(&suite);
        let on_phones = cells.iter().filter(|cell| cell.profile == "phones");
        assert!(on_phones.clone().count() > 0);
        assert!(on_phones.into_iter().all(|cell| matches!(
            cell.workload.load,
            Load::Page {
                visit: Visit::Repeat,
                ..
            }
        )));
    }

    #[test]
    fn shares_must_add_up_to_100() {
        let err = error_of(&POPULATION.replace("share = 10", "share = 5"));
        assert!(
            err.contains("line 10") && err.contains("add up to 95 %"),
            "{err}"
        );
        let nearly = POPULATION.replace("share = 10", "share = 10.05");
        assert!(Suite::from_toml(&nearly).is_ok(), "within 0.1 of 100");
        let err = error_of(&POPULATION.replace("share = 30", "share = -30"));
        assert!(err.contains("line 15") && err.contains("above 0"), "{err}");
    }

    #[test]
    fn unknown_profiles_loaders_and_groups_are_refused_at_their_line() {
        let err = error_of(&POPULATION.replace("profile = \"lte\"", "profile = \"5g\""));
        assert!(
            err.contains("line 16") && err.contains("5g") && err.contains("[[profile]]"),
            "{err}"
        );
        let err = error_of(&POPULATION.replace("visit = \"repeat\"", "loader = \"netscape\""));
        assert!(err.contains("line 17") && err.contains("netscape"), "{err}");
        let err = error_of(&POPULATION.replace("udp = \"blocked\"", "udp = \"sometimes\""));
        assert!(
            err.contains("line 23") && err.contains("not a UDP policy"),
            "{err}"
        );
        let err = error_of(&format!(
            "{POPULATION}\n[[population.published]]\nstudy = \"B\"\nlabel = \"p99\"\n\
             group = \"mobile\"\nmeasure = \"p99\"\nunit = \"ms\"\n"
        ));
        assert!(err.contains("line 30") && err.contains("`mobile`"), "{err}");
    }

    #[test]
    fn handoffs_need_open_udp_and_their_figures_a_group_with_them() {
        let phones_move = POPULATION.replace("visit = \"repeat\"", "handoffs = true");
        let moving = suite(&phones_move);
        let handoffs: Vec<bool> = (moving.population.as_ref().unwrap().groups.iter())
            .map(|group| group.handoffs)
            .collect();
        assert_eq!(handoffs, [false, true, false]);
        let err =
            error_of(&POPULATION.replace("h3_off = \"h1\"", "h3_off = \"h1\"\nhandoffs = true"));
        assert!(
            err.contains("line 26") && err.contains("`blocked`") && err.contains("UDP open"),
            "{err}"
        );
        let figure = "\n[[population.published]]\nstudy = \"B\"\nlabel = \"resets\"\n\
                      measure = \"handoff_resets\"\nchange_percent = -40\nunit = \"%\"\n";
        let err = error_of(&format!("{POPULATION}{figure}"));
        assert!(
            err.contains("`resets`") && err.contains("handoffs = true"),
            "{err}"
        );
        let with_figure = suite(&format!("{phones_move}{figure}"));
        let published = &with_figure.population.as_ref().unwrap().published[0];
        assert_eq!(published.change_percent, Some(-40.0));
        let err = error_of(&format!("{phones_move}{figure}workload = \"page\"\n"));
        assert!(
            err.contains("line 33") && err.contains("leave `workload` out"),
            "{err}"
        );
    }

    #[test]
    fn an_empty_population_is_refused() {
        let empty = "name = \"users\"\nprotocols = [\"h2\"]\nprofiles = [\"broadband\"]\n\n\
                     [[workload]]\nkind = \"rps\"\nname = \"api\"\nduration = \"2s\"\n\n[population]\ngroup = []\n";
        let err = error_of(empty);
        assert!(err.contains("line 11") && err.contains("no group"), "{err}");
    }

    #[test]
    fn a_group_may_start_from_a_suites_own_profile_and_keeps_its_path() {
        let text = POPULATION.replace("profile = \"lte\"", "profile = \"train\"")
            + "\n[[profile]]\nname = \"train\"\nbase = \"lte\"\nloss = \"3%\"\n";
        let suite = suite(&text);
        let phones = suite.custom_profile("phones").unwrap();
        assert_eq!(phones.base.as_deref(), Some("lte"));
        assert_eq!(phones.loss.as_deref(), Some("3%"));
        assert!(!suite.profiles.contains(&"train".to_string()));
    }

    #[test]
    fn listed_protocols_must_cover_what_the_groups_need() {
        let text = POPULATION.replace(
            "name = \"users\"",
            "name = \"users\"\nprotocols = [\"h2\", \"auto\"]",
        );
        let err = error_of(&text);
        assert!(err.contains("h1") && err.contains("protocols"), "{err}");
    }
}
