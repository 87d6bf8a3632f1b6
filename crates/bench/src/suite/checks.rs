//! The checks that need the whole suite: names that refer to each other
//! (profiles, workloads, published figures, the sweep, the target's
//! servers), which no single table can check while it deserializes.

use h3lab_results::{Proto, Visit};

use super::published::PublishedFigure;
use super::workload::Load;
use super::Suite;
use crate::sweep::{Sweep, Tunable, BUILTIN_SERVER};

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
        let mut seen = std::collections::BTreeSet::new();
        for workload in &self.workloads {
            anyhow::ensure!(
                seen.insert(workload.name()),
                "suite `{}`: two workloads are named `{}`; give each a unique name",
                self.name,
                workload.name()
            );
        }
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
        self.check_auto()?;
        self.check_sweep()?;
        if let Some(command) = &self.target.server_cmd {
            if let Some(page) = self
                .workloads
                .iter()
                .find(|w| matches!(w.load, Load::Page { .. }))
            {
                anyhow::bail!(
                    "suite `{}`: page workload `{}` needs the built-in server, which serves its site, \
                     but [target] runs `{command}`; remove `server_cmd` or move the page workload \
                     to a suite of its own",
                    self.name,
                    page.name
                );
            }
        }
        for profile in &self.profiles {
            if self.custom_profile(profile).is_none() {
                linkem::profile(profile).map_err(|e| {
                    anyhow::anyhow!(
                        "suite `{}`: {e} (or define it in a [[profile]] table)",
                        self.name
                    )
                })?;
            }
        }
        for figure in &self.published {
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
            self.check_published_sweep(figure)?;
        }
        Ok(())
    }

    /// A figure about the swept tunable names its values and a swept
    /// workload; a figure about protocols names a workload that is not.
    fn check_published_sweep(&self, figure: &PublishedFigure) -> anyhow::Result<()> {
        let label = &figure.label;
        let swept = self.sweep.as_ref().filter(|sweep| {
            sweep.workloads.is_empty() || sweep.workloads.contains(&figure.workload)
        });
        let (published, sweep) = match (&figure.sweep, swept) {
            (None, None) => return Ok(()),
            (None, Some(_)) => anyhow::bail!(
                "suite `{}`: published figure `{label}` compares protocols in workload `{}`, \
                 which is swept; give it a `sweep = {{ baseline, values }}` or compare an unswept workload",
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
            .find(|value| !sweep.values.contains(value))
        {
            anyhow::bail!(
                "suite `{}`: published figure `{label}` names `{stray}`, which [sweep] does not run \
                 (it runs {})",
                self.name,
                sweep.values.join(", ")
            );
        }
        Ok(())
    }

    /// A sweep sets the built-in server's flags, and names real workloads.
    fn check_sweep(&self) -> anyhow::Result<()> {
        let sweeps_server = self.sweep.as_ref().map(|s| s.tunable) == Some(Tunable::Server);
        if !self.target.servers.is_empty() && !sweeps_server {
            anyhow::bail!(
                "suite `{}`: [target.servers] names servers for a `server` sweep; add \
                 [sweep] tunable = \"server\" with their names as `values`, or remove it",
                self.name
            );
        }
        let Some(sweep) = &self.sweep else {
            return Ok(());
        };
        if sweep.tunable == Tunable::Server {
            self.check_server_sweep(sweep)?;
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

    /// A `server` sweep names servers the suite defines, and replaces `server_cmd`.
    fn check_server_sweep(&self, sweep: &Sweep) -> anyhow::Result<()> {
        if self.target.server_cmd.is_some() {
            anyhow::bail!(
                "suite `{}`: [sweep] tunable = \"server\" picks the server per row, so [target] \
                 cannot also have `server_cmd`; move the command into [target.servers]",
                self.name
            );
        }
        if let Some(unknown) = sweep
            .values
            .iter()
            .find(|v| *v != BUILTIN_SERVER && !self.target.servers.contains_key(v.as_str()))
        {
            anyhow::bail!(
                "suite `{}`: [sweep] names server `{unknown}`, which is neither `{BUILTIN_SERVER}` \
                 nor a key of [target.servers]",
                self.name
            );
        }
        if self
            .workloads
            .iter()
            .any(|w| matches!(w.load, Load::Page { .. }))
        {
            anyhow::bail!(
                "suite `{}`: page workloads need the built-in server, so they cannot be in a \
                 suite that sweeps `server`; move them to a suite of their own",
                self.name
            );
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
    fn page_workloads_need_the_builtin_server() {
        let text = format!("{PAGE}\n[target]\nserver_cmd = \"caddy run\"\n");
        let err = error_of(&text);
        assert!(
            err.contains("page workload `pages` needs the built-in server")
                && err.contains("server_cmd"),
            "{err}"
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
        assert_eq!(suite.sweep.unwrap().values, ["node", "builtin"]);

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
}
