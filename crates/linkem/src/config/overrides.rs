//! Changes to a profile, from the command line or a suite file.

use super::direction::LossDirection;
use super::parse::parse_loss_model;
#[cfg(feature = "clap")]
use super::parse::{
    parse_jitter, parse_percent, parse_queue, parse_rate, parse_reorder, parse_time,
};
use super::settings::LinkSettings;
use crate::model::{Jitter, LossModel, Nanos, QueueLimit, RateSpec, ReorderSpec, Trace, UdpPolicy};

/// Changes to a profile, as given on the command line (`h3lab net run
/// --rtt ...`, `h3lab probe migrate ...`; with the `clap` feature these are
/// the flags) or in a suite file's `[[profile]]` table. Each `Some` field
/// replaces the profile's value.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args, serde::Serialize))]
pub struct Overrides {
    /// Round-trip time added by the path, split half per direction (e.g. 40ms).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_time))]
    #[cfg_attr(feature = "clap", serde(serialize_with = "text::time"))]
    pub rtt: Option<Nanos>,
    /// Downstream (server to client) rate, e.g. 50mbit.
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_rate))]
    #[cfg_attr(feature = "clap", serde(serialize_with = "text::rate"))]
    pub down: Option<u64>,
    /// Upstream (client to server) rate, e.g. 10mbit.
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_rate))]
    #[cfg_attr(feature = "clap", serde(serialize_with = "text::rate"))]
    pub up: Option<u64>,
    /// Random loss, e.g. 1%, in the direction of --loss-direction.
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_percent))]
    #[cfg_attr(feature = "clap", serde(serialize_with = "text::percent"))]
    pub loss: Option<f64>,
    /// `bernoulli` (probability from --loss, else the profile's mean loss)
    /// or `gilbert:P,R,LOSS_GOOD,LOSS_BAD` (four percentages, as netem's
    /// gemodel).
    #[cfg_attr(feature = "clap", arg(long))]
    pub loss_model: Option<String>,
    /// Which way random loss drops packets: down (server to client), up
    /// (client to server) or both. Default: the profile's; without a
    /// profile, down (as `netem loss` on the server's egress).
    #[cfg_attr(feature = "clap", arg(long))]
    pub loss_direction: Option<LossDirection>,
    /// Jitter per direction: 5ms, 5ms:uniform or 5ms:normal. Never reorders.
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_jitter))]
    #[cfg_attr(feature = "clap", serde(serialize_with = "text::jitter"))]
    pub jitter: Option<Jitter>,
    /// Drop-tail queue per direction: packets (100p) or bytes (64kb is
    /// 64,000 bytes, 64kib 65,536).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_queue))]
    #[cfg_attr(feature = "clap", serde(serialize_with = "text::queue"))]
    pub queue: Option<QueueLimit>,
    /// Reordering: PERCENT:EXTRA_DELAY, e.g. 1%:10ms.
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_reorder))]
    #[cfg_attr(feature = "clap", serde(serialize_with = "text::reorder"))]
    pub reorder: Option<ReorderSpec>,
    /// Duplication per direction, e.g. 0.1%.
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_percent))]
    #[cfg_attr(feature = "clap", serde(serialize_with = "text::percent"))]
    pub duplicate: Option<f64>,
    /// What the path does to UDP in each direction while TCP passes: open,
    /// blocked, blocked-after:N (the first N packets each way pass) or
    /// throttle:RATE (policed to RATE, e.g. throttle:1mbit).
    #[cfg_attr(feature = "clap", arg(long, value_parser = super::udp::parse_udp_policy))]
    pub udp: Option<UdpPolicy>,
    /// Downstream Mahimahi trace (replaces --down).
    #[cfg_attr(feature = "clap", arg(long))]
    pub trace_down: Option<std::path::PathBuf>,
    /// Upstream Mahimahi trace (replaces --up).
    #[cfg_attr(feature = "clap", arg(long))]
    pub trace_up: Option<std::path::PathBuf>,
    /// Seed of every random decision.
    #[cfg_attr(feature = "clap", arg(long))]
    pub seed: Option<u64>,
}

impl Overrides {
    fn is_empty(&self) -> bool {
        self.rtt.is_none()
            && self.down.is_none()
            && self.up.is_none()
            && self.loss.is_none()
            && self.loss_model.is_none()
            && self.loss_direction.is_none()
            && self.jitter.is_none()
            && self.queue.is_none()
            && self.reorder.is_none()
            && self.duplicate.is_none()
            && self.udp.is_none()
            && self.trace_down.is_none()
            && self.trace_up.is_none()
            && self.seed.is_none()
    }

    /// `base` with these changes; `None` (plain loopback) stays `None` unless
    /// something is overridden, which then starts from no impairment.
    pub fn apply(&self, base: Option<LinkSettings>) -> anyhow::Result<Option<LinkSettings>> {
        let mut settings = match base {
            Some(settings) => settings,
            None if self.is_empty() => return Ok(None),
            None => LinkSettings::default(),
        };
        settings.rtt = self.rtt.unwrap_or(settings.rtt);
        if let Some(bits_per_sec) = self.down {
            settings.down = RateSpec::Fixed { bits_per_sec };
        }
        if let Some(bits_per_sec) = self.up {
            settings.up = RateSpec::Fixed { bits_per_sec };
        }
        if let Some(path) = &self.trace_down {
            settings.down = RateSpec::Trace(Trace::load(path)?);
        }
        if let Some(path) = &self.trace_up {
            settings.up = RateSpec::Trace(Trace::load(path)?);
        }
        settings.loss = self.loss_model(settings.loss)?;
        settings.loss_direction = self.loss_direction.unwrap_or(settings.loss_direction);
        settings.jitter = self.jitter.or(settings.jitter);
        settings.queue = self.queue.or(settings.queue);
        settings.reorder = self.reorder.or(settings.reorder);
        settings.duplicate = self.duplicate.unwrap_or(settings.duplicate);
        settings.udp = self.udp.unwrap_or(settings.udp);
        settings.seed = self.seed.unwrap_or(settings.seed);
        Ok(Some(settings))
    }

    /// The built-in `profile` with these changes; it must emulate a path,
    /// which `purpose` (e.g. "a migration") needs.
    pub fn emulated(&self, profile: &str, purpose: &str) -> anyhow::Result<LinkSettings> {
        let base = crate::profile(profile)?.settings.ok_or_else(|| {
            anyhow::anyhow!(
                "profile `{profile}` emulates no path, and {purpose} needs one; pick another, e.g. `--profile broadband`"
            )
        })?;
        Ok(self
            .apply(Some(base))?
            .expect("a profile with settings stays emulated"))
    }

    fn loss_model(&self, profile_loss: LossModel) -> anyhow::Result<LossModel> {
        match (&self.loss_model, self.loss) {
            (None, None) => Ok(profile_loss),
            (None, Some(p)) => Ok(LossModel::Bernoulli { p }),
            (Some(model), loss) => {
                let model = parse_loss_model(model, loss.unwrap_or(profile_loss.mean_loss()))?;
                if matches!(model, LossModel::Gilbert(_)) && loss.is_some() {
                    anyhow::bail!(
                        "loss and a gilbert:... loss model both set the loss; \
                         give the loss through the four gilbert parameters only"
                    );
                }
                Ok(model)
            }
        }
    }
}

/// The overrides' values as their flags' parsers read them back, for
/// the command lines h3lab_results' `CommandFlags` derives.
#[cfg(feature = "clap")]
mod text {
    use serde::Serializer;

    use super::super::parse::{
        format_jitter, format_percent, format_queue, format_rate, format_reorder, format_time,
    };
    use crate::model::{Jitter, Nanos, QueueLimit, ReorderSpec};

    fn written<S: Serializer, T: Copy>(
        value: &Option<T>,
        serializer: S,
        format: fn(T) -> String,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => serializer.serialize_str(&format(*value)),
            None => serializer.serialize_none(),
        }
    }

    pub fn time<S: Serializer>(value: &Option<Nanos>, serializer: S) -> Result<S::Ok, S::Error> {
        written(value, serializer, format_time)
    }

    pub fn rate<S: Serializer>(value: &Option<u64>, serializer: S) -> Result<S::Ok, S::Error> {
        written(value, serializer, format_rate)
    }

    pub fn percent<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
        written(value, serializer, format_percent)
    }

    pub fn jitter<S: Serializer>(value: &Option<Jitter>, serializer: S) -> Result<S::Ok, S::Error> {
        written(value, serializer, format_jitter)
    }

    pub fn queue<S: Serializer>(
        value: &Option<QueueLimit>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        written(value, serializer, format_queue)
    }

    pub fn reorder<S: Serializer>(
        value: &Option<ReorderSpec>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        written(value, serializer, format_reorder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_keep_the_profile_direction_unless_given() {
        let cellular = crate::profile("cellular").unwrap().settings;
        let more_loss = Overrides {
            loss: Some(0.02),
            ..Overrides::default()
        };
        let settings = more_loss.apply(cellular.clone()).unwrap().unwrap();
        assert_eq!(settings.loss_direction, LossDirection::Down);
        let both = Overrides {
            loss_direction: Some(LossDirection::Both),
            ..more_loss.clone()
        };
        let settings = both.apply(cellular).unwrap().unwrap();
        assert_eq!(settings.loss_direction, LossDirection::Both);
        // Ad hoc loss on plain loopback starts from no impairment: down.
        let ad_hoc = more_loss.apply(None).unwrap().unwrap();
        assert_eq!(ad_hoc.loss_direction, LossDirection::Down);
    }

    #[test]
    fn a_profile_without_a_path_names_the_need() {
        let err = Overrides::default()
            .emulated("loopback", "a migration")
            .unwrap_err();
        assert!(
            format!("{err:#}").contains("a migration needs one"),
            "{err:#}"
        );
    }

    /// The flags, as the commands that emulate a path take them.
    #[cfg(feature = "clap")]
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        link: Overrides,
    }

    #[cfg(feature = "clap")]
    fn parse(flags: &[&str]) -> Result<Overrides, clap::Error> {
        use clap::Parser;
        Cli::try_parse_from(["probe"].iter().chain(flags)).map(|cli| cli.link)
    }

    #[cfg(feature = "clap")]
    #[test]
    fn every_flag_reaches_the_path() {
        let emulated = |flags: &[&str]| {
            let link = parse(flags).unwrap();
            link.emulated("broadband", "a probe").unwrap()
        };
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
            "--reorder",
            "1%:10ms",
        ]);
        assert_eq!(changed.loss_direction, LossDirection::Up);
        assert!(matches!(changed.loss, LossModel::Gilbert(_)));
        assert_eq!(changed.rtt, 60_000_000);
        assert!(changed.reorder.is_some());
    }

    #[cfg(feature = "clap")]
    #[test]
    fn a_bad_loss_direction_names_the_accepted_values() {
        let Err(err) = parse(&["--loss", "1%", "--loss-direction", "sideways"]) else {
            panic!("`sideways` was accepted as a loss direction");
        };
        let message = err.to_string();
        assert!(
            message.contains("--loss-direction")
                && message.contains("`sideways` is not a loss direction")
                && ["`down`", "`up`", "`both`"]
                    .iter()
                    .all(|name| message.contains(name)),
            "{message}"
        );
    }
}
