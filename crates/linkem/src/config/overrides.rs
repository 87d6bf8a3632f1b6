//! Changes to a profile, from the command line or a suite file.

use super::direction::LossDirection;
use super::parse::parse_loss_model;
use super::settings::LinkSettings;
use crate::model::{Jitter, LossModel, Nanos, QueueLimit, RateSpec, ReorderSpec, Trace};

/// Changes to a profile, as given on the command line (`h3lab net run
/// --rtt ...`) or in a suite file's `[[profile]]` table. Each `Some` field
/// replaces the profile's value.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Round-trip time, in nanoseconds.
    pub rtt: Option<Nanos>,
    /// Fixed server-to-client rate, in bits/s.
    pub down: Option<u64>,
    /// Fixed client-to-server rate, in bits/s.
    pub up: Option<u64>,
    /// Bernoulli loss probability (a fraction, 0 to 1) in the loss direction.
    pub loss: Option<f64>,
    /// `bernoulli` (probability from `loss`, else the profile's mean loss) or
    /// `gilbert:p,r,1-h,1-k` (four percentages, as in netem's gemodel).
    pub loss_model: Option<String>,
    /// Which way the loss drops packets; the profile's when `None`.
    pub loss_direction: Option<LossDirection>,
    /// Jitter of the one-way delay, per direction.
    pub jitter: Option<Jitter>,
    /// Drop-tail queue limit per direction.
    pub queue: Option<QueueLimit>,
    /// Reordering per direction.
    pub reorder: Option<ReorderSpec>,
    /// Duplication probability per direction (a fraction, 0 to 1).
    pub duplicate: Option<f64>,
    /// Mahimahi trace files; each replaces the fixed rate of its direction.
    pub trace_down: Option<std::path::PathBuf>,
    /// Upstream Mahimahi trace file (see `trace_down`).
    pub trace_up: Option<std::path::PathBuf>,
    /// Seed of every random choice on the path.
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
        settings.seed = self.seed.unwrap_or(settings.seed);
        Ok(Some(settings))
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
}
