//! The checks that need the whole suite: names that refer to each other
//! (profiles, workloads, published figures, the sweep, the target's
//! servers), which no single table can check while it deserializes.

use h3lab_results::{Proto, Visit};

use super::published::PublishedFigure;
use super::workload::{Load, Site};
use super::Suite;
use crate::sweep::{Sets, Setting, Sweep, BUILTIN_SERVER, DIRECT};

impl Suite {
    /// `auto` runs cold (first) and repeat page visits, not warm ones.
    fn check_auto(&self) -> anyhow::Result<()> {
        if !self.protocols.contains(&Proto::Auto) {
            return Ok(());
        }
        let warm = self.workloads.iter().find(|w| {
            matches!(
                w.load,
                Load::Page {
                    visit: Visit::Warm,
                    ..
                }
            )
        });
        if let Some(warm) = warm {
            anyhow::bail!(
                "suite `{}`: page workload `{}` runs warm visits, and auto has none (its repeat \
                 visit opens new connections); use visit = \"repeat\" or run auto in another suite",
                self.name,
                warm.name
            );
        }
        Ok(())
    }

    /// The conformance suite is HTTP/3's: a suite with such a workload
    /// runs h3.
    fn check_conformance(&self) -> anyhow::Result<()> {
        let conformance = (self.workloads.iter())
            .find(|workload| matches!(workload.load, Load::Conformance { .. }));
        match conformance {
            Some(workload) if !self.protocols.contains(&Proto::H3) => anyhow::bail!(
                "suite `{}`: conformance workload `{}` runs over h3 only, and the suite's \
                 `protocols` has no h3; add \"h3\"",
                self.name,
                workload.name()
            ),
            _ => Ok(()),
        }
    }

    /// Two workloads may share a name only when no profile runs both (a
    /// population's per-group copies of a page workload).
    fn check_workload_names(&self) -> anyhow::Result<()> {
        for (at, workload) in self.workloads.iter().enumerate() {
            let same_cells = |other: &&super::Workload| {
                other.name() == workload.name()
                    && (other.profiles.is_empty()
                        || workload.profiles.is_empty()
                        || other.profiles.iter().any(|p| workload.profiles.contains(p)))
            };
            anyhow::ensure!(
                !self.workloads[..at].iter().any(|other| same_cells(&other)),
                "suite `{}`: two workloads are named `{}`; give each a unique name",
                self.name,
                workload.name()
            );
        }
        Ok(())
    }

    /// Checks that need the whole suite: names that refer to each other.
    pub(super) fn check_cross_references(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.protocols.is_empty(),
            "suite `{}`: `protocols` is empty; list at least one of h1, h2, h3, auto",
            self.name
        );
        anyhow::ensure!(
            !self.profiles.is_empty(),
            "suite `{}`: `profiles` is empty; list at least one (see `h3lab net profiles`)",
            self.name
        );
        anyhow::ensure!(
            !self.workloads.is_empty(),
            "suite `{}`: no [[workload]]; add at least one",
            self.name
        );
        for profile in &self.profiles {
            self.published_dns(profile)?;
        }
        self.check_workload_names()?;
        for workload in &self.workloads {
            if let Some(stray) = workload
                .profiles
                .iter()
                .find(|p| !self.profiles.contains(p))
            {
                anyhow::bail!(
                    "suite `{}`: workload `{}` names profile `{stray}`, which is not in the suite's `profiles`",
                    self.name,
                    workload.name
                );
            }
        }
        self.check_field()?;
        self.check_auto()?;
        self.check_conformance()?;
        self.check_sweep()?;
        if let Some(command) = &self.target.server_cmd {
            self.check_pages_on(command)?;
        }
        for profile in &self.profiles {
            if self.custom_profile(profile).is_none() && !self.is_field_profile(profile) {
                linkem::profile(profile).map_err(|e| {
                    anyhow::anyhow!(
                        "suite `{}`: {e} (or define it in a [[profile]] table)",
                        self.name
                    )
                })?;
            }
        }
        for figure in &self.published {
            self.check_published(figure)?;
        }
        Ok(())
    }

    /// A published figure names a profile, a workload and protocols the
    /// suite runs.
    fn check_published(&self, figure: &PublishedFigure) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.profiles.contains(&figure.profile),
            "suite `{}`: published figure `{}` names profile `{}`, which the suite does not run",
            self.name,
            figure.label,
            figure.profile
        );
        anyhow::ensure!(
            self.workloads.iter().any(|w| w.name() == figure.workload),
            "suite `{}`: published figure `{}` names workload `{}`, which the suite does not define",
            self.name,
            figure.label,
            figure.workload
        );
        if let Some(difference) = &figure.difference {
            anyhow::ensure!(
                difference.subject != difference.other,
                "suite `{}`: published figure `{}` has a difference of {} against itself; \
                 name two protocols, e.g. subject = \"h3\", other = \"h2\"",
                self.name,
                figure.label,
                difference.subject
            );
            for proto in [difference.subject, difference.other] {
                anyhow::ensure!(
                    self.protocols.contains(&proto),
                    "suite `{}`: published figure `{}` compares {proto}, which the suite does not run",
                    self.name,
                    figure.label
                );
            }
        }
        self.check_published_sweep(figure)
    }

    /// A figure about the swept tunable names its values and a swept
    /// workload; a figure about protocols names a workload that is not.
    fn check_published_sweep(&self, figure: &PublishedFigure) -> anyhow::Result<()> {
        let label = &figure.label;
        let swept = self.sweep.as_ref().filter(|sweep| {
            sweep.workloads.is_empty() || sweep.workloads.contains(&figure.workload)
        });
        if let Some(row) = &figure.row {
            let runs = swept.is_some_and(|sweep| sweep.value_named(row).is_some());
            anyhow::ensure!(
                runs && figure.sweep.is_none(),
                "suite `{}`: published figure `{label}` names row `{row}`, but [sweep] runs no such \
                 value for workload `{}` (or the figure also has `sweep`); `row` picks one value's \
                 row of a swept workload for figures per protocol",
                self.name,
                figure.workload
            );
            return Ok(());
        }
        let (published, sweep) = match (&figure.sweep, swept) {
            (None, None) => return Ok(()),
            (None, Some(_)) => anyhow::bail!(
                "suite `{}`: published figure `{label}` compares protocols in workload `{}`, \
                 which is swept; give it a `sweep = {{ baseline, values }}`, name the value's \
                 `row`, or compare an unswept workload",
                self.name,
                figure.workload
            ),
            (Some(_), None) => anyhow::bail!(
                "suite `{}`: published figure `{label}` has `sweep`, but workload `{}` is not swept; \
                 add a [sweep] that covers it",
                self.name,
                figure.workload
            ),
            (Some(published), Some(sweep)) => (published, sweep),
        };
        let others = [figure.h1, figure.h2, figure.h3];
        anyhow::ensure!(
            others.iter().all(Option::is_none) && figure.difference.is_none(),
            "suite `{}`: published figure `{label}` has `sweep` and also h1/h2/h3 or `difference`; \
             a figure compares either protocols or the swept values",
            self.name
        );
        anyhow::ensure!(
            published.values.len() >= 2 && published.values.contains_key(&published.baseline),
            "suite `{}`: published figure `{label}`: `sweep.values` needs two values or more, \
             the baseline `{}` among them",
            self.name,
            published.baseline
        );
        if let Some(stray) = published
            .values
            .keys()
            .find(|value| sweep.value_named(value).is_none())
        {
            anyhow::bail!(
                "suite `{}`: published figure `{label}` names `{stray}`, which [sweep] does not run \
                 (it runs {})",
                self.name,
                sweep.value_texts().join(", ")
            );
        }
        Ok(())
    }

    /// A sweep sets the built-in server's flags, and names real workloads.
    fn check_sweep(&self) -> anyhow::Result<()> {
        let sweeps_server = self.sweep.as_ref().map(|s| s.tunable.sets()) == Some(Sets::Server);
        if !self.target.servers.is_empty() && !sweeps_server {
            anyhow::bail!(
                "suite `{}`: [target.servers] names servers for a `server` sweep; add \
                 [sweep] tunable = \"server\" with their names as `values`, or remove it",
                self.name
            );
        }
        let sweeps_edge = self.sweep.as_ref().map(|s| s.tunable.sets()) == Some(Sets::Edge);
        if !self.target.edges.is_empty() && !sweeps_edge {
            anyhow::bail!(
                "suite `{}`: [target.edges] names edges for an `edge` sweep; add \
                 [sweep] tunable = \"edge\" with their names (and `{DIRECT}`) as `values`, or remove it",
                self.name
            );
        }
        let Some(sweep) = &self.sweep else {
            return Ok(());
        };
        if let Some(window) = self.target.initial_window {
            anyhow::ensure!(
                !sweep.tunable.sets_initial_window(),
                "suite `{}`: [target] initial_window = {} and [sweep] `{}` both set the initial \
                 window; keep one",
                self.name,
                window.0,
                sweep.tunable.name()
            );
        }
        if sweep.tunable.sets() == Sets::Server {
            self.check_server_sweep(sweep)?;
        } else if sweep.tunable.sets() == Sets::Edge {
            self.check_edge_sweep(sweep)?;
        } else if let Some(command) = &self.target.server_cmd {
            anyhow::bail!(
                "suite `{}`: [sweep] sets flags of the built-in server, but [target] runs `{command}`; \
                 remove `server_cmd`, or run one suite per setting of your server",
                self.name
            );
        }
        if let Some(stray) = sweep
            .workloads
            .iter()
            .find(|name| !self.workloads.iter().any(|w| w.name() == name.as_str()))
        {
            anyhow::bail!(
                "suite `{}`: [sweep] names workload `{stray}`, which is not a [[workload]] of the suite",
                self.name
            );
        }
        Ok(())
    }

    /// A server command can serve a page workload's site only when it is
    /// told where the site is (`{site}`); a captured page needs the
    /// built-in server, which replays its think time and recorded
    /// encodings and gives each origin an address of its own.
    fn check_pages_on(&self, command: &str) -> anyhow::Result<()> {
        for workload in &self.workloads {
            let Load::Page { site, .. } = &workload.load else {
                continue;
            };
            if matches!(site, Site::Har(_)) {
                anyhow::bail!(
                    "suite `{}`: page workload `{}` replays a HAR, which needs the built-in server \
                     (it replays the recorded think time and encodings, one address per origin), \
                     but a server command `{command}` would answer it; move it to a suite of its own",
                    self.name,
                    workload.name
                );
            }
            if !command.contains("{site}") {
                anyhow::bail!(
                    "suite `{}`: page workload `{}` needs its site served, but the server command \
                     `{command}` has no `{{site}}`; put `{{site}}` where the command takes the \
                     directory to serve at `/`",
                    self.name,
                    workload.name
                );
            }
        }
        Ok(())
    }

    /// A `server` sweep names servers the suite defines, and replaces `server_cmd`.
    fn check_server_sweep(&self, sweep: &Sweep) -> anyhow::Result<()> {
        if self.target.server_cmd.is_some() {
            anyhow::bail!(
                "suite `{}`: [sweep] tunable = \"server\" picks the server per row, so [target] \
                 cannot also have `server_cmd`; move the command into [target.servers]",
                self.name
            );
        }
        let names = || sweep.values.iter().filter_map(Setting::server);
        if let Some(unknown) =
            names().find(|v| *v != BUILTIN_SERVER && !self.target.servers.contains_key(*v))
        {
            anyhow::bail!(
                "suite `{}`: [sweep] names server `{unknown}`, which is neither `{BUILTIN_SERVER}` \
                 nor a key of [target.servers]",
                self.name
            );
        }
        for (name, server) in names().filter_map(|v| Some((v, self.target.servers.get(v)?))) {
            self.check_pages_on(server.command())?;
            if !server.document().starts_with('/') {
                anyhow::bail!(
                    "suite `{}`: [target.servers] {name} has document = \"{}\"; give a path \
                     from the server's root, such as \"/index.html\"",
                    self.name,
                    server.document()
                );
            }
        }
        Ok(())
    }

    /// An `edge` sweep names edges the suite defines, each able to do what
    /// the suite asks of it, on emulated paths (the origin's leg is one of
    /// its own, emulated likewise) and generated sites.
    fn check_edge_sweep(&self, sweep: &Sweep) -> anyhow::Result<()> {
        let names = || sweep.values.iter().filter_map(Setting::edge);
        if let Some(unknown) = names().find(|v| !self.target.edges.contains_key(*v)) {
            anyhow::bail!(
                "suite `{}`: [sweep] names edge `{unknown}`, which is neither `{DIRECT}` nor a key \
                 of [target.edges]",
                self.name
            );
        }
        let has_pages = self
            .workloads
            .iter()
            .any(|w| matches!(w.load, Load::Page { .. }));
        for (name, edge) in &self.target.edges {
            edge.check(name, has_pages)?;
            if let Some(profile) = &edge.origin_profile {
                anyhow::ensure!(
                    self.link_settings(profile)?.is_some(),
                    "suite `{}`: [target.edges.{name}] origin_profile `{profile}` is not an \
                 emulated path; name one such as broadband, or give origin_rtt",
                    self.name
                );
            }
        }
        if !self.target.url.is_empty() {
            anyhow::bail!(
                "suite `{}`: an `edge` sweep starts the edge and the origin itself, and a field \
                 run measures servers h3lab does not start; remove [target] url or the sweep",
                self.name
            );
        }
        for profile in &self.profiles {
            anyhow::ensure!(
                self.link_settings(profile)?.is_some(),
                "suite `{}`: an `edge` sweep needs emulated paths (the origin sits behind a link \
                 of its own), and profile `{profile}` is none; use one such as broadband",
                self.name
            );
        }
        for workload in &self.workloads {
            if let Load::Page {
                site: Site::Har(_), ..
            } = &workload.load
            {
                anyhow::bail!(
                    "suite `{}`: page workload `{}` replays a HAR, whose origins an edge does not \
                 stand in front of yet; move it to a suite without the `edge` sweep",
                    self.name,
                    workload.name()
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use h3lab_results::Proto;

    use super::super::tests::{error_of, MINIMAL, PAGE};
    use super::*;
    #[test]
    fn unknown_profile_names_the_builtin_ones() {
        let err = error_of(&MINIMAL.replace("broadband", "dialup"));
        assert!(err.contains("dialup") && err.contains("cellular"), "{err}");
    }

    #[test]
    fn workload_profiles_must_be_suite_profiles() {
        let text = MINIMAL.replace(
            "duration = \"2s\"",
            "duration = \"2s\"\nprofiles = [\"satellite\"]",
        );
        let err = error_of(&text);
        assert!(
            err.contains("workload `api` names profile `satellite`"),
            "{err}"
        );
        let ok = Suite::from_toml(&text.replace(
            "profiles = [\"broadband\"]",
            "profiles = [\"broadband\", \"satellite\"]",
        ))
        .unwrap();
        assert!(ok.workloads[0].runs_on("satellite") && !ok.workloads[0].runs_on("broadband"));
    }

    #[test]
    fn duplicate_workload_names_are_rejected() {
        let text = format!("{MINIMAL}\n[[workload]]\nkind = \"ttfb\"\nname = \"api\"\n");
        assert!(error_of(&text).contains("two workloads"));
    }

    #[test]
    fn page_workloads_on_a_server_command_need_its_site_placeholder() {
        let text = format!("{PAGE}\n[target]\nserver_cmd = \"caddy run\"\n");
        let err = error_of(&text);
        assert!(
            err.contains("page workload `pages` needs its site served")
                && err.contains("`caddy run` has no `{site}`"),
            "{err}"
        );
        let served = text.replace("caddy run", "serve {ip} {port} {site}");
        assert!(Suite::from_toml(&served).is_ok());
        let swept = format!(
            "{PAGE}\n[target.servers]\ncaddy = \"caddy run\"\n\
             [sweep]\ntunable = \"server\"\nvalues = [\"builtin\", \"caddy\"]\n"
        );
        assert!(error_of(&swept).contains("has no `{site}`"));
        assert!(Suite::from_toml(&swept.replace("caddy run", "caddy {site}")).is_ok());
    }

    #[test]
    fn a_captured_page_needs_the_builtin_server() {
        let har = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../site/tests/fixtures/har/chrome.har"
        );
        let text = PAGE.replace("site = \"small\"", &format!("har = \"{har}\""));
        assert!(Suite::from_toml(&text).is_ok(), "{}", error_of(&text));
        let err = error_of(&format!(
            "{text}\n[target]\nserver_cmd = \"caddy {{site}}\"\n"
        ));
        assert!(
            err.contains("replays a HAR, which needs the built-in server"),
            "{err}"
        );
    }

    #[test]
    fn a_published_row_names_one_value_of_a_swept_workload() {
        let sweep = "\n[sweep]\ntunable = \"cc\"\nvalues = [\"cubic\", \"bbr\"]\n";
        let figure = "\n[[published]]\nstudy = \"A\"\nlabel = \"rps\"\nprofile = \"broadband\"\n\
                      workload = \"api\"\nrow = \"bbr\"\nunit = \"req/s\"\nhigher_is_better = true\n\
                      h2 = 1.0\nh3 = 2.0\ncaveat = \"\"\n";
        let ok = format!("{MINIMAL}{sweep}{figure}");
        let suite = Suite::from_toml(&ok).unwrap();
        let claims = crate::runner::study_claims(&suite);
        assert_eq!(claims[0].workload, "api [cc=bbr]");
        let err = error_of(&ok.replace("row = \"bbr\"", "row = \"reno\""));
        assert!(err.contains("names row `reno`"), "{err}");
        let err = error_of(&format!("{MINIMAL}{figure}"));
        assert!(err.contains("names row `bbr`"), "{err}");
    }

    #[test]
    fn a_target_initial_window_is_in_packets_and_not_swept_as_well() {
        let text = format!("{MINIMAL}\n[target]\ninitial_window = \"32 packets\"\n");
        let suite = Suite::from_toml(&text).unwrap();
        assert_eq!(suite.target.initial_window.map(|p| p.0), Some(32));
        let err = error_of(&text.replace("\"32 packets\"", "0"));
        assert!(err.contains("not a number of packets"), "{err}");
        let swept = format!(
            "{text}\n[sweep]\ntunable = \"quic_initial_window\"\nvalues = [14720, 47104]\n"
        );
        assert!(error_of(&swept).contains("both set the initial window"));
    }

    #[test]
    fn a_server_table_limits_its_rows_to_the_protocols_it_offers() {
        let text = format!(
            "{MINIMAL}\n[target.servers]\nngtcp2 = {{ cmd = \"gtlsserver {{ip}} {{port}}\", protocols = [\"h3\"] }}\n\
             [sweep]\ntunable = \"server\"\nvalues = [\"builtin\", \"ngtcp2\"]\n"
        );
        let suite = Suite::from_toml(&text).unwrap();
        let rows: Vec<(String, Proto)> = crate::runner::plan(&suite)
            .into_iter()
            .filter(|cell| cell.repetition == 0)
            .map(|cell| (cell.workload_label(), cell.protocol))
            .collect();
        let ngtcp2: Vec<Proto> = rows
            .iter()
            .filter(|(label, _)| label.ends_with("[server=ngtcp2]"))
            .map(|(_, protocol)| *protocol)
            .collect();
        assert_eq!(ngtcp2, [Proto::H3]);
        assert!(
            rows.iter()
                .filter(|(l, _)| l.ends_with("[server=builtin]"))
                .count()
                > 1
        );
        let bad = text.replace("protocols = [\"h3\"]", "protocols = [\"h4\"]");
        assert!(error_of(&bad).contains("a server command (a string), or a table"));
    }

    #[test]
    fn a_server_table_names_the_document_of_a_server_with_no_index() {
        let text = format!(
            "{MINIMAL}\n[target.servers]\ntquic = {{ cmd = \"tquic {{ip}} {{port}}\", document = \"/index.html\" }}\n\
             [sweep]\ntunable = \"server\"\nvalues = [\"builtin\", \"tquic\"]\n"
        );
        let suite = Suite::from_toml(&text).unwrap();
        assert_eq!(suite.target.servers["tquic"].document(), "/index.html");
        let relative = text.replace("\"/index.html\"", "\"index.html\"");
        let error = error_of(&relative);
        assert!(
            error.contains("tquic has document = \"index.html\""),
            "{error}"
        );
    }

    #[test]
    fn published_sweep_figures_name_swept_values_of_a_swept_workload() {
        let sweep = "\n[sweep]\ntunable = \"cc\"\nvalues = [\"cubic\", \"bbr\"]\n";
        let figure = "\n[[published]]\nstudy = \"A\"\nlabel = \"bbr\"\nprofile = \"broadband\"\n\
                      workload = \"pages\"\nunit = \"%\"\nhigher_is_better = true\ncaveat = \"\"\n";
        let claim = "sweep = { baseline = \"cubic\", values = { cubic = 100.0, bbr = 118.0 } }\n";
        let ok = format!("{PAGE}{sweep}{figure}{claim}");
        assert!(Suite::from_toml(&ok).is_ok());
        let err = error_of(&ok.replace("bbr = 118.0", "reno = 118.0"));
        assert!(
            err.contains("names `reno`, which [sweep] does not run"),
            "{err}"
        );
        let err = error_of(&ok.replace("baseline = \"cubic\"", "baseline = \"vegas\""));
        assert!(err.contains("the baseline `vegas` among them"), "{err}");
        let err = error_of(&format!("{PAGE}{figure}{claim}"));
        assert!(err.contains("is not swept"), "{err}");
        let err = error_of(&format!("{PAGE}{sweep}{figure}h3 = 1.0\n"));
        assert!(err.contains("which is swept"), "{err}");
    }

    #[test]
    fn published_differences_name_two_run_protocols() {
        let figure = "\n[[published]]\nstudy = \"C\"\nlabel = \"small\"\nprofile = \"broadband\"\n\
                      workload = \"pages\"\nunit = \"ms\"\nhigher_is_better = false\ncaveat = \"\"\n";
        let ok = format!(
            "{PAGE}{figure}difference = {{ subject = \"h3\", other = \"h2\", value = -200.0 }}\n"
        );
        let suite = Suite::from_toml(&ok).unwrap();
        let difference = suite.published[0].difference.unwrap();
        assert_eq!(
            (difference.subject, difference.other, difference.value),
            (Proto::H3, Proto::H2, -200.0)
        );
        let err = error_of(&ok.replace("\"h2\", value", "\"h1\", value"));
        assert!(
            err.contains("compares h1, which the suite does not run"),
            "{err}"
        );
        let err = error_of(&ok.replace("\"h2\", value", "\"h3\", value"));
        assert!(err.contains("against itself"), "{err}");
        let err = error_of(&ok.replace("value = ", "amount = "));
        assert!(err.contains("amount"), "{err}");
    }

    #[test]
    fn a_server_sweep_names_servers_the_target_defines() {
        let servers = "\n[target.servers]\nnode = \"node server.js --port {port}\"\n";
        let sweep = "\n[sweep]\ntunable = \"server\"\nvalues = [\"node\", \"builtin\"]\n";
        let suite = Suite::from_toml(&format!("{MINIMAL}{servers}{sweep}")).unwrap();
        assert_eq!(suite.sweep.unwrap().value_texts(), ["node", "builtin"]);

        let err = error_of(&format!(
            "{MINIMAL}{servers}{}",
            sweep.replace("node\"", "deno\"")
        ));
        assert!(err.contains("names server `deno`"), "{err}");
        let err = error_of(&format!("{MINIMAL}{servers}"));
        assert!(err.contains("add [sweep] tunable = \"server\""), "{err}");
        let with_cmd = servers.replace(
            "[target.servers]",
            "[target]\nserver_cmd = \"caddy run\"\n[target.servers]",
        );
        let err = error_of(&format!("{MINIMAL}{with_cmd}{sweep}"));
        assert!(err.contains("cannot also have `server_cmd`"), "{err}");
    }

    #[test]
    fn an_edge_sweep_names_edges_that_can_do_what_the_suite_asks() {
        let edges = "\n[target.edges.far]\nserver = \"h3lab\"\norigin_rtt = \"80ms\"\n";
        let sweep = "\n[sweep]\ntunable = \"edge\"\nvalues = [\"direct\", \"far\"]\n";
        let ok = format!("{PAGE}{edges}{sweep}");
        assert!(Suite::from_toml(&ok).is_ok(), "{}", error_of(&ok));
        let err = error_of(&format!("{PAGE}{edges}"));
        assert!(
            err.contains("[target.edges] names edges for an `edge` sweep"),
            "{err}"
        );
        let err = error_of(&ok.replace("\"direct\", \"far\"", "\"direct\", \"near\""));
        assert!(
            err.contains("names edge `near`, which is neither `direct`"),
            "{err}"
        );
        let nginx = ok.replace("server = \"h3lab\"", "server = \"nginx\"");
        let err = error_of(&nginx);
        assert!(
            err.contains("nginx cannot speak h2 to its origin (it speaks h1)")
                && err.contains("origin_protocol = \"h1\""),
            "{err}"
        );
        let haproxy = ok.replace("server = \"h3lab\"", "server = \"haproxy\"");
        let err = error_of(&haproxy);
        assert!(
            err.contains("haproxy cannot serve the site's files itself"),
            "{err}"
        );
        assert!(
            Suite::from_toml(&haproxy.replace("origin_rtt", "forward = \"all\"\norigin_rtt"))
                .is_ok()
        );
        let err = error_of(&ok.replace("origin_rtt = \"80ms\"", ""));
        assert!(
            err.contains("origin_rtt = \"80ms\" or as origin_profile"),
            "{err}"
        );
        let err = error_of(&ok.replace("origin_rtt", "origin_profile = \"loopback\"\norigin_rtt"));
        assert!(err.contains("one of the two"), "{err}");
        let err = error_of(&ok.replace("origin_rtt = \"80ms\"", "origin_profile = \"loopback\""));
        assert!(
            err.contains("origin_profile `loopback` is not an emulated path"),
            "{err}"
        );
        let err = error_of(&ok.replace("[\"broadband\"]", "[\"loopback\"]"));
        assert!(err.contains("profile `loopback` is none"), "{err}");
        let err = error_of(&ok.replace("server = \"h3lab\"", "server = \"envoy\""));
        assert!(err.contains("unknown variant `envoy`"), "{err}");
    }
}
