//! The link flags, declared once for every command that emulates a path
//! (`net run`, `probe migrate`, `probe hol`): each replaces one setting of
//! the chosen profile.

use std::path::PathBuf;

use anyhow::Context;
use linkem::config::{
    parse_jitter, parse_percent, parse_queue, parse_rate, parse_time, LossDirection, Overrides,
    ReorderSpec,
};
use linkem::model::{Jitter, Nanos, QueueLimit};
use linkem::LinkSettings;

#[derive(clap::Args)]
pub struct LinkFlags {
    /// Round-trip time added by the path, split half per direction (e.g. 40ms).
    #[arg(long, value_parser = parse_time)]
    rtt: Option<Nanos>,
    /// Downstream (server to client) rate, e.g. 50mbit.
    #[arg(long, value_parser = parse_rate)]
    down: Option<u64>,
    /// Upstream (client to server) rate, e.g. 10mbit.
    #[arg(long, value_parser = parse_rate)]
    up: Option<u64>,
    /// Random loss, e.g. 1%, in the direction of --loss-direction.
    #[arg(long, value_parser = parse_percent)]
    loss: Option<f64>,
    /// `bernoulli` or `gilbert:P,R,LOSS_GOOD,LOSS_BAD` (four percentages).
    #[arg(long)]
    loss_model: Option<String>,
    /// Which way random loss drops packets: down (server to client), up
    /// (client to server) or both. Default: the profile's; without a
    /// profile, down (as `netem loss` on the server's egress).
    #[arg(long)]
    loss_direction: Option<LossDirection>,
    /// Jitter per direction: 5ms, 5ms:uniform or 5ms:normal. Never reorders.
    #[arg(long, value_parser = parse_jitter)]
    jitter: Option<Jitter>,
    /// Drop-tail queue per direction: 100p (packets) or 64kb (bytes).
    #[arg(long, value_parser = parse_queue)]
    queue: Option<QueueLimit>,
    /// Reordering: PERCENT:EXTRA_DELAY, e.g. 1%:10ms.
    #[arg(long, value_parser = parse_reorder)]
    reorder: Option<ReorderSpec>,
    /// Duplication per direction, e.g. 0.1%.
    #[arg(long, value_parser = parse_percent)]
    duplicate: Option<f64>,
    /// Downstream Mahimahi trace (replaces --down).
    #[arg(long)]
    trace_down: Option<PathBuf>,
    /// Upstream Mahimahi trace (replaces --up).
    #[arg(long)]
    trace_up: Option<PathBuf>,
    /// Seed of every random decision.
    #[arg(long)]
    seed: Option<u64>,
}

impl LinkFlags {
    /// `base` with the flags applied; `None` stays plain loopback when no
    /// flag asks for emulation.
    pub fn apply(&self, base: Option<LinkSettings>) -> anyhow::Result<Option<LinkSettings>> {
        let overrides = Overrides {
            rtt: self.rtt,
            down: self.down,
            up: self.up,
            loss: self.loss,
            loss_model: self.loss_model.clone(),
            loss_direction: self.loss_direction,
            jitter: self.jitter,
            queue: self.queue,
            reorder: self.reorder,
            duplicate: self.duplicate,
            trace_down: self.trace_down.clone(),
            trace_up: self.trace_up.clone(),
            seed: self.seed,
        };
        overrides.apply(base)
    }

    /// The built-in `profile` with the flags applied; it must emulate a
    /// path, which `purpose` needs.
    pub fn emulated(&self, profile: &str, purpose: &str) -> anyhow::Result<LinkSettings> {
        let base = linkem::profile(profile)?.settings.with_context(|| {
            format!(
                "profile `{profile}` emulates no path, and {purpose} needs one; pick another, e.g. `--profile broadband`"
            )
        })?;
        Ok(self
            .apply(Some(base))?
            .expect("a profile with settings stays emulated"))
    }
}

fn parse_reorder(text: &str) -> anyhow::Result<ReorderSpec> {
    let (share, delay) = text.split_once(':').with_context(|| {
        format!("`{text}` is not a reordering; write PERCENT:EXTRA_DELAY, e.g. `1%:10ms`")
    })?;
    Ok(ReorderSpec {
        probability: parse_percent(share)?,
        extra_delay: parse_time(delay)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use linkem::model::LossModel;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        link: LinkFlags,
    }

    fn emulated(flags: &[&str]) -> LinkSettings {
        let argv = ["probe"].iter().chain(flags);
        let cli = Cli::try_parse_from(argv).unwrap();
        cli.link.emulated("broadband", "a probe").unwrap()
    }

    #[test]
    fn every_link_flag_reaches_a_probes_path() {
        let plain = emulated(&[]);
        assert_eq!(plain.loss_direction, LossDirection::Down);
        assert!(matches!(plain.loss, LossModel::Bernoulli { .. }));
        let changed = emulated(&[
            "--loss-model",
            "gilbert:1%,20%,0%,50%",
            "--loss-direction",
            "up",
            "--rtt",
            "60ms",
        ]);
        assert_eq!(changed.loss_direction, LossDirection::Up);
        assert!(matches!(changed.loss, LossModel::Gilbert(_)));
        assert_eq!(changed.rtt, 60_000_000);
    }

    #[test]
    fn a_profile_without_a_path_names_the_need() {
        let cli = Cli::try_parse_from(["probe"]).unwrap();
        let err = cli.link.emulated("loopback", "a migration").unwrap_err();
        assert!(
            format!("{err:#}").contains("a migration needs one"),
            "{err:#}"
        );
    }
}
