//! Built-in network profiles from the published studies (see DESIGN.md).

use serde::Serialize;

use crate::config::{LinkSettings, LossDirection};
use crate::model::{Jitter, JitterShape, LossModel, Nanos, RateSpec, UdpPolicy, MILLI};

/// A named network condition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    /// The name `--profile` takes, e.g. `cellular`.
    pub name: &'static str,
    /// Where the figures come from.
    pub(crate) source: &'static str,
    /// `None` for `loopback`: no emulation, no namespaces.
    pub settings: Option<LinkSettings>,
}

impl Profile {
    /// One line: the figures and the source.
    pub fn describe(&self) -> String {
        let Some(settings) = &self.settings else {
            return format!("{:<17} no emulation (plain loopback)", self.name);
        };
        let rate = |spec: &RateSpec| match spec.mean_bits_per_sec() {
            Some(bits) => format!("{} Mbit/s", bits / 1e6),
            None => "unlimited".to_string(),
        };
        let jitter = settings
            .jitter
            .map(|j| format!(" +-{} ms jitter each way", j.amount as f64 / 1e6))
            .unwrap_or_default();
        let udp = match settings.udp {
            UdpPolicy::Open => String::new(),
            policy => format!(", UDP {policy}"),
        };
        format!(
            "{:<17} down {}, up {}, RTT {} ms{}, {}{}   [{}]",
            self.name,
            rate(&settings.down),
            rate(&settings.up),
            settings.rtt as f64 / 1e6,
            jitter,
            describe_loss(settings),
            udp,
            self.source
        )
    }
}

/// `loss 1% (down: server to client)`, or `no loss`.
fn describe_loss(settings: &LinkSettings) -> String {
    let share = settings.loss.mean_loss();
    if share == 0.0 {
        return "no loss".to_string();
    }
    format!(
        "loss {}% ({})",
        share * 100.0,
        settings.loss_direction.describe()
    )
}

const HOME_STUDY: &str = "home broadband study (Node.js+quiche benchmark 2024-25); it does not \
     say which way packets were lost: we assume downstream, as a netem loss on the server's egress";
const MOBILE_STUDY: &str = "production mobile API study (tc: 200 ms RTT, 2 % loss); tc's loss \
     sits on one interface's egress and the study does not say which: we assume the server's \
     (downstream)";
const PAGE_LOAD_STUDY: &str = "page-load conditions study (Kiwee)";
const LTE_POOR: &str = "same page-load study (tc: +100 ms, ~15 % loss); tc's loss sits on one \
     interface's egress and the study does not say which: we assume the server's (downstream)";
const DISTANCE_STUDY: &str = "page-load distance study (Request Metrics)";
const REGIONAL: &str = "page-load distance study (Request Metrics): Minnesota to New York, \
     ~30 ms RTT as the study estimated it, on its 200 Mbit/s line";
const DC_LOCAL: &str = "page-load conditions study (Kiwee), Nuernberg DC client, same region \
     as the server; the study gives no RTT or rate: ~5 ms and 1 Gbit/s are our estimates \
     for a data-centre link";
const DC_NORDIC: &str = "page-load conditions study (Kiwee), Helsinki DC client; the study \
     gives no RTT or rate: ~25 ms (Nuernberg-Helsinki) and 1 Gbit/s are our estimates";
const DC_TRANSATLANTIC: &str = "page-load conditions study (Kiwee), Virginia DC client; the study \
     gives no RTT or rate: ~95 ms (Nuernberg-Virginia) and 1 Gbit/s are our estimates";
const FIBER: &str = "page-load conditions study (Kiwee), Wroclaw fiber home line; the study \
     gives no RTT or rate: 300/50 Mbit/s and ~20 ms to Nuernberg are our estimates";

fn emulated(
    name: &'static str,
    source: &'static str,
    down_mbit: u64,
    up_mbit: u64,
    rtt_ms: Nanos,
    loss: f64,
) -> Profile {
    Profile {
        name,
        source,
        settings: Some(LinkSettings {
            rtt: rtt_ms * MILLI,
            down: RateSpec::Fixed {
                bits_per_sec: down_mbit * 1_000_000,
            },
            up: RateSpec::Fixed {
                bits_per_sec: up_mbit * 1_000_000,
            },
            loss: LossModel::Bernoulli { p: loss },
            // Every lossy source's direction (see the sources), set here so
            // the ad-hoc default can change without moving the profiles.
            loss_direction: LossDirection::Down,
            ..LinkSettings::default()
        }),
    }
}

/// All built-in profiles: loopback, then by study (DESIGN.md's table, with
/// the page-load studies' data-centre, fiber and regional paths beside
/// their other conditions), each study's paths nearest first.
pub fn profiles() -> Vec<Profile> {
    let mut lte = emulated("lte", PAGE_LOAD_STUDY, 30, 10, 60, 0.0);
    // "60 ms +- jitter": uniform +-5 ms on each one-way delay.
    if let Some(settings) = &mut lte.settings {
        settings.jitter = Some(Jitter {
            amount: 5 * MILLI,
            shape: JitterShape::Uniform,
        });
    }
    vec![
        Profile {
            name: "loopback",
            source: "no emulation (no namespaces)",
            settings: None,
        },
        emulated("broadband", HOME_STUDY, 100, 20, 20, 0.001),
        emulated("cellular", HOME_STUDY, 50, 10, 50, 0.01),
        emulated("satellite", HOME_STUDY, 10, 2, 500, 0.05),
        emulated("mobile-lossy", MOBILE_STUDY, 20, 5, 200, 0.02),
        emulated("dc-local", DC_LOCAL, 1000, 1000, 5, 0.0),
        emulated("dc-nordic", DC_NORDIC, 1000, 1000, 25, 0.0),
        emulated("dc-transatlantic", DC_TRANSATLANTIC, 1000, 1000, 95, 0.0),
        emulated("fiber", FIBER, 300, 50, 20, 0.0),
        lte,
        emulated("lte-poor", LTE_POOR, 30, 10, 160, 0.15),
        emulated("regional", REGIONAL, 200, 200, 30, 0.0),
        emulated("transatlantic", DISTANCE_STUDY, 200, 200, 110, 0.0),
        emulated("intercontinental", DISTANCE_STUDY, 200, 200, 250, 0.0),
        emulated(
            "fast-1g",
            "large-transfer study (arXiv 2310.09423)",
            1000,
            1000,
            2,
            0.0,
        ),
    ]
}

/// A profile by name; the error lists the valid names.
pub fn profile(name: &str) -> anyhow::Result<Profile> {
    let all = profiles();
    all.iter()
        .find(|p| p.name.eq_ignore_ascii_case(name))
        .cloned()
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|p| p.name).collect();
            anyhow::anyhow!(
                "unknown profile `{name}`; choose one of: {}",
                names.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_is_found_by_name_and_unknown_names_list_them() {
        for p in profiles() {
            assert_eq!(profile(p.name).unwrap(), p);
        }
        let err = profile("dialup").unwrap_err().to_string();
        assert!(err.contains("dialup") && err.contains("cellular") && err.contains("fast-1g"));
    }

    #[test]
    fn profiles_match_the_design_table() {
        let cellular = profile("cellular").unwrap().settings.unwrap().build();
        assert_eq!(cellular.down.delay + cellular.up.delay, 50 * MILLI);
        assert_eq!(
            cellular.down.rate,
            RateSpec::Fixed {
                bits_per_sec: 50_000_000
            }
        );
        assert_eq!(cellular.down.loss, LossModel::Bernoulli { p: 0.01 });
        assert_eq!(cellular.up.loss, LossModel::NONE);
        assert!(profile("loopback").unwrap().settings.is_none());
        assert!(profile("lte").unwrap().settings.unwrap().jitter.is_some());
    }

    #[test]
    fn page_load_study_paths_have_their_estimated_figures() {
        let figures = |name: &str| {
            let settings = profile(name).unwrap().settings.unwrap();
            let mbit = |spec: &RateSpec| spec.mean_bits_per_sec().unwrap() / 1e6;
            (
                mbit(&settings.down),
                mbit(&settings.up),
                settings.rtt / MILLI,
                settings.loss.mean_loss(),
            )
        };
        assert_eq!(figures("regional"), (200.0, 200.0, 30, 0.0));
        assert_eq!(figures("dc-local"), (1000.0, 1000.0, 5, 0.0));
        assert_eq!(figures("dc-nordic"), (1000.0, 1000.0, 25, 0.0));
        assert_eq!(figures("dc-transatlantic"), (1000.0, 1000.0, 95, 0.0));
        assert_eq!(figures("fiber"), (300.0, 50.0, 20, 0.0));
        for name in ["dc-local", "dc-nordic", "dc-transatlantic", "fiber"] {
            let source = profile(name).unwrap().source;
            assert!(source.contains("estimate"), "{name}: {source}");
        }
    }

    #[test]
    fn lossy_profiles_lose_downstream_and_say_why() {
        let lossy: Vec<Profile> = profiles()
            .into_iter()
            .filter(|p| {
                p.settings
                    .as_ref()
                    .is_some_and(|s| s.loss.mean_loss() > 0.0)
            })
            .collect();
        let names: Vec<&str> = lossy.iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "broadband",
                "cellular",
                "satellite",
                "mobile-lossy",
                "lte-poor"
            ]
        );
        for profile in &lossy {
            let settings = profile.settings.as_ref().unwrap();
            assert_eq!(
                settings.loss_direction,
                LossDirection::Down,
                "{}",
                profile.name
            );
            assert!(
                profile.source.contains("we assume"),
                "{}: {}",
                profile.name,
                profile.source
            );
        }
    }

    #[test]
    fn the_listing_shows_the_loss_direction() {
        let line = profile("cellular").unwrap().describe();
        assert!(line.contains("loss 1% (down: server to client)"), "{line}");
        let mut both = profile("cellular").unwrap();
        both.settings.as_mut().unwrap().loss_direction = LossDirection::Both;
        assert!(both.describe().contains("loss 1% (both: each way)"));
        let lossless = profile("fiber").unwrap().describe();
        assert!(lossless.contains("no loss"), "{lossless}");
    }
}
