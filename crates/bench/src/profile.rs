//! The link settings of a cell's profile: a built-in one, or a suite's
//! `[[profile]]` table applied over its `base`.

use anyhow::Context;
use linkem::config::{
    parse_jitter, parse_loss_model, parse_percent, parse_queue, parse_rate, parse_time,
};
use linkem::model::{LossModel, Trace};
use linkem::{LinkSettings, RateSpec};

use crate::suite::{CustomProfile, Suite};

/// Settings for `name` with `seed`; `None` means plain loopback.
pub fn settings(suite: &Suite, name: &str, seed: u64) -> anyhow::Result<Option<LinkSettings>> {
    let settings = match suite.custom_profile(name) {
        Some(custom) => Some(
            custom_settings(custom).with_context(|| format!("profile `{name}` in the suite"))?,
        ),
        None => linkem::profile(name)?.settings,
    };
    Ok(settings.map(|s| LinkSettings { seed, ..s }))
}

fn custom_settings(custom: &CustomProfile) -> anyhow::Result<LinkSettings> {
    let base = match &custom.base {
        Some(base) => linkem::profile(base)?.settings.unwrap_or_default(),
        None => LinkSettings::default(),
    };
    let mut settings = base;
    if let Some(rtt) = &custom.rtt {
        settings.rtt = parse_time(rtt)?;
    }
    if let Some(down) = &custom.down {
        settings.down = RateSpec::Fixed {
            bits_per_sec: parse_rate(down)?,
        };
    }
    if let Some(up) = &custom.up {
        settings.up = RateSpec::Fixed {
            bits_per_sec: parse_rate(up)?,
        };
    }
    if let Some(path) = &custom.trace_down {
        settings.down = RateSpec::Trace(Trace::load(path.as_ref())?);
    }
    if let Some(path) = &custom.trace_up {
        settings.up = RateSpec::Trace(Trace::load(path.as_ref())?);
    }
    let loss = custom.loss.as_deref().map(parse_percent).transpose()?;
    settings.loss = match (&custom.loss_model, loss) {
        (Some(model), loss) => parse_loss_model(model, loss.unwrap_or(settings.loss.mean_loss()))?,
        (None, Some(p)) => LossModel::Bernoulli { p },
        (None, None) => settings.loss,
    };
    if let Some(jitter) = &custom.jitter {
        settings.jitter = Some(parse_jitter(jitter)?);
    }
    if let Some(queue) = &custom.queue {
        settings.queue = Some(parse_queue(queue)?);
    }
    Ok(settings)
}
