//! What a cell's run gives back ([`CellOutcome`], typed: the servers'
//! side, the link's statistics, the client's run, and where the run
//! stopped short) and the record made of it with its plan ([`record`]),
//! pure: a failed run keeps what it measured until it failed.

use std::collections::BTreeMap;

use anyhow::{bail, Context};
use h3lab_client::ModeNotOffered;
use h3lab_results::bench::{
    CellRecord, CpuUse, EdgeRecord, HeaderBlocks, InitialWindows, Outcome, WireCost,
};
use h3lab_results::offer::H3Features;
use linkem::model::LinkStats;

use super::{check_whole_site, empty_record, fill_from_client, link_record};
use crate::client::ClientRun;
use crate::plan::CellPlan;
use crate::suite::dns_setting;

/// What a cell's run gave back.
#[derive(Default)]
pub(crate) struct CellOutcome {
    /// Why the run stopped short of the client's end (the path or a
    /// server did not start, a server could not be stopped cleanly).
    pub(crate) failure: Option<anyhow::Error>,
    /// Ctrl-C came while it ran: what the client measured is cut short.
    pub(crate) interrupted: bool,
    /// Wall time of the run, in seconds.
    pub(crate) elapsed_s: f64,
    /// A lab run's servers, once they started.
    pub(crate) server: Option<ServerSide>,
    /// What the server's h3 does, when the plan asked.
    pub(crate) h3_features: Option<H3Features>,
    /// CPU over the client's run (the client's own is its run's).
    pub(crate) cpu: CpuUse,
    /// The client leg's statistics, and behind an edge the origin leg's.
    pub(crate) link: Option<LinkStats>,
    pub(crate) origin_link: Option<LinkStats>,
    /// The edge's record, with its origin's metrics.
    pub(crate) edge: Option<EdgeRecord>,
    /// The client's run, or why it failed.
    pub(crate) client: Option<anyhow::Result<ClientRun>>,
}

/// A lab run's servers: what they started with and left.
pub(crate) struct ServerSide {
    /// The target's tuning lines (the built-in server's; `None` for a
    /// command's), which the run's environment records once.
    pub(crate) tuning: Option<BTreeMap<String, String>>,
    /// The server's QUIC initial window in bytes, if it says.
    pub(crate) quic_initial_window: Option<u64>,
    /// `HOST:PORT` the client reached it at.
    pub(crate) authority: String,
    /// What the target counted (`None` when a server exited or serves
    /// no metrics), or why it could not be read.
    pub(crate) metrics: anyhow::Result<Option<BTreeMap<String, f64>>>,
    /// Why the cell cannot stand: a server exited while the client ran.
    pub(crate) ended: Option<String>,
}

/// Linux's `TCP_INIT_CWND`, in segments, since 2.6.39.
const LINUX_TCP_INITIAL_WINDOW: u32 = 10;

/// The record of `plan`'s run: its figure when the run stood, else why
/// not, with what was measured until then.
pub(crate) fn record(plan: &CellPlan, outcome: CellOutcome) -> CellRecord {
    let mut record = empty_record(&plan.spec);
    record.path_rtt_ms = plan.path_rtt_ms();
    record.elapsed_s = outcome.elapsed_s;
    let interrupted = outcome.interrupted;
    let filled = fill(plan, outcome, &mut record);
    // Ctrl-C cuts the client short, so what it measured is not the cell's
    // figure, and whatever error that caused is not the cell's either.
    if interrupted {
        record.outcome = Outcome::Interrupted;
        record.metric.samples.clear();
    } else if let Err(err) = filled {
        record.outcome = match err.downcast_ref::<ModeNotOffered>() {
            Some(lacking) => Outcome::NotOffered {
                reason: lacking.0.clone(),
            },
            None => Outcome::Failed {
                error: format!("{err:#}"),
            },
        };
        record.metric.samples.clear();
    }
    record
}

fn fill(plan: &CellPlan, outcome: CellOutcome, record: &mut CellRecord) -> anyhow::Result<()> {
    record.cpu = outcome.cpu;
    record.h3_features = outcome.h3_features;
    if !plan.field {
        record.dns = plan.publish.as_ref().map(dns_setting);
    }
    record.initial_windows = outcome.server.as_ref().map(|server| InitialWindows {
        tcp_segments: (plan.link.as_ref())
            .map(|_| plan.tcp_window.unwrap_or(LINUX_TCP_INITIAL_WINDOW)),
        tcp_set: plan.tcp_window.is_some(),
        quic_bytes: server.quic_initial_window,
    });
    if let (Some(stats), Some(settings)) = (outcome.link, &plan.link) {
        record.link = Some(link_record(stats, settings)?);
    }
    let mut edge = outcome.edge;
    let origin = plan.edge.as_ref().map(|edge| &edge.origin_link);
    if let (Some(edge), Some(stats), Some(link)) = (&mut edge, outcome.origin_link, origin) {
        edge.origin_link = Some(link_record(stats, link)?);
    }
    record.edge = edge;
    if let Some(failure) = outcome.failure {
        return Err(failure);
    }
    let client = outcome.client.context("the cell's client did not run")?;
    let Some(server) = outcome.server else {
        let run = client?;
        record.cpu.client_s = run.cpu_s();
        return fill_from_client(&plan.spec, run, record);
    };
    // A failed cell keeps what the server counted of the failure.
    record.server_metrics = match (&client, server.metrics) {
        (Err(_), metrics) => metrics.ok().flatten(),
        (Ok(_), metrics) => metrics?,
    };
    if let (Err(err), Some(why)) = (&client, &server.ended) {
        bail!("{why}; the client: {err:#}");
    }
    let run = client?;
    if let ClientRun::Page { report, .. } = &run {
        check_whole_site(plan, report, &server.authority)?;
    }
    record.wire = WireCost::from_counts(record.link.as_ref(), record.server_metrics.as_ref());
    record.header_blocks = HeaderBlocks::from_metrics(record.server_metrics.as_ref());
    record.cpu.client_s = run.cpu_s();
    let filled = fill_from_client(&plan.spec, run, record);
    match server.ended {
        Some(why) => bail!(why),
        None => filled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::Suite;
    use h3lab_results::ttfb::{TtfbReport, TtfbSample, TTFB_SCHEMA};
    use h3lab_results::{Proto, TtfbMode};

    fn plan(extra: &str) -> CellPlan {
        let suite = Suite::from_toml(&format!(
            "name = \"t\"\nprotocols = [\"h3\"]\nprofiles = [\"cellular\"]\n{extra}\n\
             [[workload]]\nkind = \"ttfb\"\nname = \"hs\"\nmodes = [\"cold\"]\n"
        ))
        .unwrap();
        let spec = crate::runner::plan(&suite).remove(0);
        CellPlan::new(&suite, &spec).unwrap()
    }

    fn server(ended: Option<&str>) -> ServerSide {
        ServerSide {
            tuning: None,
            quic_initial_window: Some(14_720),
            authority: "198.18.0.2:443".into(),
            metrics: Ok(Some([("h3lab_requests_total".to_string(), 3.0)].into())),
            ended: ended.map(str::to_string),
        }
    }

    fn ttfb_run(samples: &[f64]) -> ClientRun {
        let sample = |ttfb_ms: f64| TtfbSample {
            ttfb_ms,
            tcp_connect_ms: None,
            handshake_ms: None,
            resumed: None,
            early_data_accepted: None,
            status: 200,
            body_bytes: 1,
            path_rtt_ms: None,
        };
        let probe = TtfbReport {
            schema: TTFB_SCHEMA.to_string(),
            url: "https://a/".to_string(),
            proto: Proto::H3,
            mode: TtfbMode::Cold,
            samples: samples.iter().map(|&ms| sample(ms)).collect(),
            not_offered: None,
        };
        ClientRun::Ttfb { probe, cpu_s: 0.25 }
    }

    #[test]
    fn a_run_that_stood_gives_its_figure_and_what_the_server_and_plan_say() {
        let plan = plan("[target]\ninitial_window = 32");
        let outcome = CellOutcome {
            server: Some(server(None)),
            client: Some(Ok(ttfb_run(&[12.0, 14.0]))),
            link: Some(LinkStats::default()),
            elapsed_s: 2.5,
            ..CellOutcome::default()
        };
        let record = record(&plan, outcome);
        assert_eq!(record.outcome, Outcome::Ok);
        assert_eq!(record.metric.samples, [12.0, 14.0]);
        assert_eq!((record.path_rtt_ms, record.elapsed_s), (50.0, 2.5));
        assert_eq!(record.cpu.client_s, 0.25);
        let windows = record.initial_windows.unwrap();
        assert_eq!(windows.tcp_segments, Some(32));
        assert!(windows.tcp_set);
        assert_eq!(windows.quic_bytes, Some(14_720));
        assert_eq!(record.server_metrics.unwrap()["h3lab_requests_total"], 3.0);
        assert_eq!(record.link.unwrap().settings.unwrap().rtt_ns, 50_000_000);
    }

    #[test]
    fn a_failed_client_keeps_the_servers_count_and_names_a_server_that_ended() {
        let outcome = CellOutcome {
            server: Some(server(Some("the server exited (code 1)"))),
            client: Some(Err(anyhow::anyhow!("connection reset"))),
            ..CellOutcome::default()
        };
        let record = record(&plan(""), outcome);
        let Outcome::Failed { error } = &record.outcome else {
            panic!("{:?}", record.outcome);
        };
        assert_eq!(
            error,
            "the server exited (code 1); the client: connection reset"
        );
        assert!(record.server_metrics.is_some(), "what it counted is kept");
        assert!(record.metric.samples.is_empty());
    }

    #[test]
    fn a_mode_not_offered_an_early_failure_and_ctrl_c_are_told_apart() {
        let not_offered = CellOutcome {
            server: Some(server(None)),
            client: Some(Err(ModeNotOffered("no session ticket".into()).into())),
            ..CellOutcome::default()
        };
        let offered = record(&plan(""), not_offered);
        assert_eq!(
            offered.outcome,
            Outcome::NotOffered {
                reason: "no session ticket".into()
            }
        );
        let early = CellOutcome {
            failure: Some(anyhow::anyhow!("the server did not start")),
            ..CellOutcome::default()
        };
        let failed = record(&plan(""), early);
        assert!(failed.initial_windows.is_none(), "no server started");
        assert!(
            matches!(&failed.outcome, Outcome::Failed { error } if error == "the server did not start")
        );
        let cut = CellOutcome {
            interrupted: true,
            server: Some(server(None)),
            client: Some(Ok(ttfb_run(&[9.0]))),
            ..CellOutcome::default()
        };
        let stopped = record(&plan(""), cut);
        assert_eq!(stopped.outcome, Outcome::Interrupted);
        assert!(stopped.metric.samples.is_empty());
    }
}
