//! `[[profile]]`: a path the suite defines, from a built-in profile.

use anyhow::bail;
use h3lab_dns::Publish;
use linkem::config::LossDirection;
use serde::Deserialize;

/// A path defined in the suite itself, starting from a built-in profile.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CustomProfile {
    pub(crate) name: String,
    /// Built-in profile to start from; every field below overrides it.
    pub(crate) base: Option<String>,
    pub(crate) rtt: Option<String>,
    pub(crate) down: Option<String>,
    pub(crate) up: Option<String>,
    pub(crate) loss: Option<String>,
    pub(crate) loss_model: Option<String>,
    /// `down`, `up` or `both`; checked here, so a bad one names its line.
    pub(crate) loss_direction: Option<LossDirection>,
    pub(crate) jitter: Option<String>,
    pub(crate) queue: Option<String>,
    pub(crate) trace_down: Option<String>,
    pub(crate) trace_up: Option<String>,
    /// `open`, `blocked`, `blocked-after:N` or `throttle:RATE`.
    pub(crate) udp: Option<String>,
    /// What the path's DNS server publishes for the site: `a` (its address
    /// alone) or `https:IDS` (an `HTTPS` record with those ALPN ids too).
    /// Without it there is no DNS server and clients use the address.
    pub(crate) dns: Option<String>,
}

impl CustomProfile {
    /// What its `dns` publishes, `None` without one; refused, naming the
    /// fix, when malformed or on a path that is not emulated.
    pub(crate) fn published_dns(&self) -> anyhow::Result<Option<Publish>> {
        let Some(text) = self.dns.as_deref() else {
            return Ok(None);
        };
        let publish = parse_dns(text)?;
        if let Some(base) = &self.base {
            if linkem::profile(base)?.settings.is_none() {
                bail!("`dns` needs an emulated path, and `{base}` is none; give a `base` such as broadband");
            }
        }
        Ok(Some(publish))
    }
}

/// The `dns` value that reads as `publish`, as a cell records it.
pub(crate) fn dns_setting(publish: &Publish) -> String {
    match publish {
        Publish::ARecordsOnly => "a".to_string(),
        Publish::WithHttps { alpn, .. } => format!("https:{}", alpn.join(",")),
    }
}

/// `a`, or `https:` and comma-separated ALPN ids.
fn parse_dns(text: &str) -> anyhow::Result<Publish> {
    let hint =
        "use `a` (the address alone) or `https:h3,h2` (an HTTPS record with those ALPN ids too)";
    if text == "a" {
        return Ok(Publish::ARecordsOnly);
    }
    let Some(ids) = text.strip_prefix("https:") else {
        bail!("`dns = \"{text}\"` is not a DNS setting; {hint}");
    };
    let alpn: Vec<String> = ids.split(',').map(|id| id.trim().to_string()).collect();
    if alpn.iter().any(String::is_empty) {
        bail!("`dns = \"{text}\"` has an empty ALPN id; {hint}");
    }
    Ok(Publish::WithHttps { alpn, port: None })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{error_of, MINIMAL};
    use super::super::Suite;
    use super::*;
    #[test]
    fn custom_profile_satisfies_the_reference() {
        let text = format!(
            "{}\n[[profile]]\nname = \"dialup\"\nbase = \"broadband\"\nrtt = \"300ms\"\n",
            MINIMAL.replace("broadband", "dialup")
        );
        let suite = Suite::from_toml(&text).unwrap();
        assert_eq!(
            suite.custom_profile("dialup").unwrap().rtt.as_deref(),
            Some("300ms")
        );
    }

    fn with_custom_profile(table: &str) -> String {
        format!(
            "{}\n[[profile]]\nname = \"dialup\"\n{table}",
            MINIMAL.replace("broadband", "dialup")
        )
    }

    #[test]
    fn custom_profile_takes_a_loss_direction() {
        for (value, expected) in [
            ("down", LossDirection::Down),
            ("up", LossDirection::Up),
            ("both", LossDirection::Both),
        ] {
            let text = with_custom_profile(&format!("loss_direction = \"{value}\"\n"));
            let suite = Suite::from_toml(&text).unwrap();
            let profile = suite.custom_profile("dialup").unwrap();
            assert_eq!(profile.loss_direction, Some(expected));
        }
        let suite = Suite::from_toml(&with_custom_profile("loss = \"1%\"\n")).unwrap();
        assert_eq!(suite.custom_profile("dialup").unwrap().loss_direction, None);
    }

    #[test]
    fn a_bad_loss_direction_is_rejected_with_its_line_and_the_accepted_values() {
        let err = error_of(&with_custom_profile("loss_direction = \"sideways\"\n"));
        assert!(
            err.contains("line 14")
                && err.contains("`sideways` is not a loss direction")
                && ["`down`", "`up`", "`both`"]
                    .iter()
                    .all(|name| err.contains(name)),
            "{err}"
        );
    }
}
