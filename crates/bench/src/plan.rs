//! A cell's plan: what its run needs from the suite, resolved once and
//! before anything starts (the link at the cell's seed, an edge and its
//! origin leg, the TCP initial window asked of the path, the DNS the path
//! publishes, the target). Pure: nothing below it asks the suite again.

use std::time::Duration;

use anyhow::bail;
use h3lab_dns::Publish;
use linkem::LinkSettings;

use crate::spec::CellSpec;
use crate::suite::{Edge, Suite, Target};
use crate::sweep::Setting;

/// One cell, ready to run.
pub(crate) struct CellPlan {
    pub(crate) spec: CellSpec,
    /// A field run's cell: no server of h3lab's, a deployed one's URL.
    pub(crate) field: bool,
    /// The suite's seed, which the generated site is built from.
    pub(crate) site_seed: u64,
    /// The client's path at the cell's seed (the same for every protocol
    /// of a repetition, so the same loss pattern); `None`: loopback, or in
    /// a field run the real path alone.
    pub(crate) link: Option<LinkSettings>,
    /// The swept edge in front of the target, with its origin leg.
    pub(crate) edge: Option<EdgePlan>,
    /// The TCP initial window the path's routes are given, in segments:
    /// the swept value's, or `[target] initial_window`.
    pub(crate) tcp_window: Option<u32>,
    /// The DNS the path's server publishes.
    pub(crate) publish: Option<Publish>,
    /// The suite's `[target]`: the built-in server's settings, or the
    /// commands of the servers it names.
    pub(crate) target: Target,
    /// The client's warm-up before it measures.
    pub(crate) warmup: Duration,
    /// Whether the cell first asks its server what its h3 does: once per
    /// row of a `server` sweep and profile, before its first workload's
    /// first h3 repetition.
    pub(crate) probes_features: bool,
}

/// An edge in front of the target, and the link between it and the origin.
pub(crate) struct EdgePlan {
    pub(crate) name: String,
    pub(crate) edge: Edge,
    pub(crate) origin_link: LinkSettings,
}

impl CellPlan {
    /// The plan of `spec`, a cell of `suite`; an error for settings that
    /// cannot be resolved (a profile's trace that cannot be read).
    pub(crate) fn new(suite: &Suite, spec: &CellSpec) -> anyhow::Result<CellPlan> {
        // A lab cell's seed is its repetition's; in a field run each load
        // or sample has its own, the same for every protocol of that load.
        let repetition = match suite.is_field() {
            true => spec.record_repetition(),
            false => spec.repetition,
        };
        let seed = suite.seed.wrapping_add(u64::from(repetition));
        let link = crate::profile::settings(suite, &spec.profile, seed)?;
        let edge = (spec.setting.as_ref())
            .and_then(Setting::edge)
            .and_then(|name| Some((name, suite.target.edges.get(name)?)));
        let edge = match (edge, &link) {
            (None, _) => None,
            (Some((name, edge)), Some(_)) => Some(EdgePlan {
                name: name.to_string(),
                edge: edge.clone(),
                origin_link: crate::profile::origin_settings(suite, edge, seed)?,
            }),
            (Some(_), None) => {
                bail!("an edge needs an emulated path (the suite's check names it)")
            }
        };
        let tcp_window = (spec.setting.as_ref())
            .and_then(Setting::tcp_initial_window)
            .or(suite.target.initial_window.map(|packets| packets.0));
        Ok(CellPlan {
            spec: spec.clone(),
            field: suite.is_field(),
            site_seed: suite.seed,
            link,
            edge,
            tcp_window,
            publish: suite.published_dns(&spec.profile)?,
            target: suite.target.clone(),
            warmup: suite.warmup.0,
            probes_features: probes_features(suite, spec),
        })
    }

    /// The path's round trip in ms, as a record says it (0 on loopback).
    pub(crate) fn path_rtt_ms(&self) -> f64 {
        self.link.as_ref().map_or(0.0, |link| link.rtt as f64 / 1e6)
    }
}

fn probes_features(suite: &Suite, spec: &CellSpec) -> bool {
    let server_row = spec.setting.as_ref().and_then(Setting::server).is_some();
    let first_workload = suite.workloads.first().map(|w| w.name()) == Some(spec.workload.name());
    server_row
        && first_workload
        && spec.protocol == h3lab_results::Proto::H3
        && spec.repetition == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use h3lab_results::Proto;

    fn plans(text: &str) -> Vec<CellPlan> {
        let suite = Suite::from_toml(text).unwrap();
        let cells = crate::runner::plan(&suite);
        (cells.iter())
            .map(|spec| CellPlan::new(&suite, spec).unwrap())
            .collect()
    }

    #[test]
    fn every_protocol_of_a_repetition_gets_its_seed_and_the_next_repetition_the_next() {
        let plans = plans(
            "name = \"t\"\nprotocols = [\"h2\", \"h3\"]\nprofiles = [\"cellular\"]\n\
             repetitions = 2\nseed = 40\n\
             [target]\ninitial_window = 32\n\
             [[workload]]\nkind = \"ttfb\"\nname = \"hs\"\nmodes = [\"cold\"]\n",
        );
        let seeds: Vec<(u32, Proto, u64)> = (plans.iter())
            .map(|plan| {
                let link = plan.link.as_ref().unwrap();
                (plan.spec.repetition, plan.spec.protocol, link.seed)
            })
            .collect();
        assert_eq!(
            seeds,
            [
                (0, Proto::H2, 40),
                (0, Proto::H3, 40),
                (1, Proto::H2, 41),
                (1, Proto::H3, 41)
            ]
        );
        assert!(plans.iter().all(|plan| plan.tcp_window == Some(32)));
        assert!(plans.iter().all(|plan| plan.site_seed == 40));
        assert_eq!(plans[0].path_rtt_ms(), 50.0);
        assert!(plans.iter().all(|plan| !plan.probes_features));
    }

    #[test]
    fn a_server_row_probes_its_features_once_before_its_first_h3_cell() {
        let plans = plans(
            "name = \"t\"\nprotocols = [\"h2\", \"h3\"]\nprofiles = [\"broadband\"]\n\
             repetitions = 2\n\
             [target.servers]\ncaddy = \"caddy run {ip} {port}\"\n\
             [[workload]]\nkind = \"ttfb\"\nname = \"hs\"\nmodes = [\"cold\"]\n\
             [[workload]]\nkind = \"ttfb\"\nname = \"hs2\"\nmodes = [\"cold\"]\n\
             [sweep]\ntunable = \"server\"\nvalues = [\"builtin\", \"caddy\"]\n",
        );
        let probing: Vec<String> = (plans.iter())
            .filter(|plan| plan.probes_features)
            .map(|plan| plan.spec.label())
            .collect();
        assert_eq!(
            probing,
            [
                "broadband hs [server=builtin] cold h3 #1",
                "broadband hs [server=caddy] cold h3 #1"
            ]
        );
    }
}
