//! The link settings of a cell's profile: a built-in one, or a suite's
//! `[[profile]]` table applied over its `base`.

use anyhow::Context;
use linkem::config::{
    parse_jitter, parse_percent, parse_queue, parse_rate, parse_time, parse_udp_policy, Overrides,
};
use linkem::LinkSettings;

use crate::suite::{CustomProfile, Edge, Suite};

impl Suite {
    /// The link settings of profile `name` (built-in or a `[[profile]]`
    /// table) at the suite's seed; `None` means plain loopback. The suite's
    /// profile values are only parsed here, so this is how to check them.
    pub fn link_settings(&self, name: &str) -> anyhow::Result<Option<LinkSettings>> {
        settings(self, name, self.seed)
    }
}

/// Settings for `name` with `seed`; `None` means plain loopback.
pub(crate) fn settings(
    suite: &Suite,
    name: &str,
    seed: u64,
) -> anyhow::Result<Option<LinkSettings>> {
    if suite.is_field() && name == crate::suite::REAL {
        return Ok(None);
    }
    let settings = match suite.custom_profile(name) {
        Some(custom) => {
            custom_settings(custom).with_context(|| format!("profile `{name}` in the suite"))?
        }
        None => linkem::profile(name)?.settings,
    };
    Ok(settings.map(|s| LinkSettings { seed, ..s }))
}

/// The link of an edge's origin leg, with `seed`: its profile's, or a
/// round trip alone (no rate limit, no loss).
pub(crate) fn origin_settings(
    suite: &Suite,
    edge: &Edge,
    seed: u64,
) -> anyhow::Result<LinkSettings> {
    match (&edge.origin_profile, &edge.origin_rtt) {
        (Some(profile), _) => settings(suite, profile, seed)?
            .with_context(|| format!("the origin profile `{profile}` is not an emulated path")),
        (None, Some(rtt)) => Ok(LinkSettings {
            rtt: rtt.0.as_nanos() as u64,
            seed,
            ..LinkSettings::default()
        }),
        (None, None) => anyhow::bail!("the edge gives no origin leg (the suite's check names it)"),
    }
}

fn custom_settings(custom: &CustomProfile) -> anyhow::Result<Option<LinkSettings>> {
    let base = match &custom.base {
        Some(base) => linkem::profile(base)?.settings,
        None => Some(LinkSettings::default()),
    };
    let overrides = Overrides {
        rtt: custom.rtt.as_deref().map(parse_time).transpose()?,
        down: custom.down.as_deref().map(parse_rate).transpose()?,
        up: custom.up.as_deref().map(parse_rate).transpose()?,
        loss: custom.loss.as_deref().map(parse_percent).transpose()?,
        loss_model: custom.loss_model.clone(),
        loss_direction: custom.loss_direction,
        jitter: custom.jitter.as_deref().map(parse_jitter).transpose()?,
        queue: custom.queue.as_deref().map(parse_queue).transpose()?,
        trace_down: custom.trace_down.as_ref().map(Into::into),
        trace_up: custom.trace_up.as_ref().map(Into::into),
        udp: custom
            .udp
            .as_deref()
            .map(parse_udp_policy)
            .transpose()
            .map_err(anyhow::Error::msg)?,
        ..Overrides::default()
    };
    overrides.apply(base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::dns_setting;
    use h3lab_dns::Publish;
    use linkem::config::LossDirection;
    use linkem::model::UdpPolicy;

    fn suite_text(profile_table: &str) -> String {
        format!(
            "name = \"t\"\nprotocols = [\"h2\"]\nprofiles = [\"p\"]\n\
             [[workload]]\nkind = \"ttfb\"\nname = \"hs\"\n\
             [[profile]]\nname = \"p\"\n{profile_table}"
        )
    }

    fn suite_with(profile_table: &str) -> Suite {
        Suite::from_toml(&suite_text(profile_table)).unwrap()
    }

    #[test]
    fn a_profile_publishes_the_address_alone_or_an_https_record() {
        let suite = suite_with("base = \"broadband\"\ndns = \"https:h3,h2\"\n");
        let expected = Publish::WithHttps {
            alpn: vec!["h3".into(), "h2".into()],
            port: None,
        };
        assert_eq!(dns_setting(&expected), "https:h3,h2");
        assert_eq!(suite.published_dns("p").unwrap(), Some(expected));
        let suite = suite_with("base = \"broadband\"\ndns = \"a\"\n");
        assert_eq!(dns_setting(&Publish::ARecordsOnly), "a");
        assert_eq!(
            suite.published_dns("p").unwrap(),
            Some(Publish::ARecordsOnly)
        );
        let suite = suite_with("base = \"broadband\"\n");
        assert_eq!(suite.published_dns("p").unwrap(), None);
    }

    #[test]
    fn a_bad_dns_setting_is_refused_with_the_suite_naming_the_fix() {
        let error =
            |table: &str| format!("{:#}", Suite::from_toml(&suite_text(table)).unwrap_err());
        let bad = error("base = \"broadband\"\ndns = \"aaaa\"\n");
        assert!(
            bad.contains("https:h3,h2") && bad.contains("profile `p`"),
            "{bad}"
        );
        let empty = error("base = \"broadband\"\ndns = \"https:h3,\"\n");
        assert!(empty.contains("empty ALPN id"), "{empty}");
        let loopback = error("base = \"loopback\"\ndns = \"a\"\n");
        assert!(loopback.contains("needs an emulated path"), "{loopback}");
    }

    #[test]
    fn custom_profile_sets_a_udp_policy_over_its_base() {
        let suite = suite_with("base = \"broadband\"\nudp = \"throttle:1mbit\"\n");
        let throttled = settings(&suite, "p", 1).unwrap().unwrap();
        let policy = UdpPolicy::Throttle {
            bits_per_sec: 1_000_000,
        };
        assert_eq!(throttled.udp, policy);
        let bad = suite_with("base = \"broadband\"\nudp = \"firewalled\"\n");
        let err = format!("{:#}", settings(&bad, "p", 1).unwrap_err());
        assert!(
            err.contains("profile `p`") && err.contains("use open, blocked"),
            "{err}"
        );
    }

    #[test]
    fn custom_profile_overrides_its_base_and_takes_the_cell_seed() {
        let suite = suite_with("base = \"cellular\"\nrtt = \"100ms\"\nloss = \"0%\"\n");
        let settings = settings(&suite, "p", 7).unwrap().unwrap();
        let cellular = linkem::profile("cellular").unwrap().settings.unwrap();
        assert_eq!(settings.rtt, 100_000_000);
        assert_eq!(settings.loss.mean_loss(), 0.0);
        assert_eq!(settings.down, cellular.down);
        assert_eq!(settings.seed, 7);
    }

    #[test]
    fn custom_profile_keeps_its_base_direction_unless_it_names_one() {
        let direction = |table: &str| settings(&suite_with(table), "p", 1).unwrap().unwrap();
        let over_base = direction("base = \"cellular\"\nloss = \"3%\"\n");
        assert_eq!(over_base.loss_direction, LossDirection::Down);
        let named = direction("base = \"cellular\"\nloss_direction = \"both\"\n");
        assert_eq!(named.loss_direction, LossDirection::Both);
        assert_eq!(named.loss.mean_loss(), 0.01);
        let ad_hoc = direction("loss = \"1%\"\nloss_direction = \"up\"\n");
        assert_eq!(ad_hoc.loss_direction, LossDirection::Up);
    }

    #[test]
    fn bad_values_name_the_profile() {
        let suite = suite_with("rtt = \"soon\"\n");
        let err = format!("{:#}", settings(&suite, "p", 1).unwrap_err());
        assert!(err.contains("profile `p`") && err.contains("soon"), "{err}");
    }

    #[test]
    fn loopback_stays_unemulated() {
        let suite = Suite::from_toml(
            "name = \"t\"\nprotocols = [\"h2\"]\nprofiles = [\"loopback\"]\n[[workload]]\nkind = \"ttfb\"\nname = \"hs\"\n",
        )
        .unwrap();
        assert!(settings(&suite, "loopback", 1).unwrap().is_none());
    }
}
