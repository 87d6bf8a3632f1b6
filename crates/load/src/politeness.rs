//! How much `h3lab load` asks of a server outside this machine unless told
//! it may ask more (`--allow-heavy`): a load generator pointed at a site
//! someone else runs should not flood it by default. A server on this
//! machine (loopback, its own addresses, h3lab's emulated paths) and a
//! shard of a planned distributed test (`--shard`) are not held back.

use std::net::IpAddr;
use std::time::Duration;

use anyhow::bail;

use crate::LoadConfig;

/// Connections at most.
const CONNECTIONS: usize = 10;
/// Closed model: requests at most, and how long at most.
const CLOSED_REQUESTS: u64 = 1_000;
const CLOSED_DURATION: Duration = Duration::from_secs(10);
/// Open model: requests per second at most, and how long at most.
const OPEN_RATE: f64 = 100.0;
const OPEN_DURATION: Duration = Duration::from_secs(60);

/// h3lab's emulated paths: 198.18.0.0/15, the benchmarking range.
fn is_h3lab_path(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V4(v4) if v4.octets()[0] == 198 && (v4.octets()[1] & 0xfe) == 18)
}

/// Whether `ip` is on this machine: loopback, one of its interfaces'
/// addresses, or one of h3lab's emulated paths.
pub(crate) fn is_this_machine(ip: IpAddr) -> bool {
    if ip.is_loopback() || ip.is_unspecified() || is_h3lab_path(ip) {
        return true;
    }
    let Ok(interfaces) = nix::ifaddrs::getifaddrs() else {
        return false;
    };
    interfaces
        .filter_map(|interface| interface.address)
        .any(|address| {
            let own = match (address.as_sockaddr_in(), address.as_sockaddr_in6()) {
                (Some(v4), _) => IpAddr::V4(v4.ip()),
                (_, Some(v6)) => IpAddr::V6(v6.ip()),
                _ => return false,
            };
            own == ip
        })
}

/// Refuses a load beyond the caps against `ip` when it is outside this
/// machine, naming what is over and how to lift the caps.
pub(crate) fn check(config: &LoadConfig, ip: IpAddr) -> anyhow::Result<()> {
    if config.allow_heavy || config.shard.is_some() || is_this_machine(ip) {
        return Ok(());
    }
    let over = over_caps(config);
    if over.is_empty() {
        return Ok(());
    }
    bail!(
        "{ip} is outside this machine, and h3lab load holds back against a server it may not \
         own: {}; pass --allow-heavy for a server you run (docs/field.md#politeness)",
        over.join(", ")
    )
}

fn over_caps(config: &LoadConfig) -> Vec<String> {
    let mut over = Vec::new();
    if config.connections > CONNECTIONS {
        over.push(format!("-c {} is over {CONNECTIONS}", config.connections));
    }
    let seconds = |d: Duration| d.as_secs_f64();
    match config.rate {
        Some(rate) => {
            if rate > OPEN_RATE {
                over.push(format!(
                    "--rate {rate} is over {OPEN_RATE} requests per second"
                ));
            }
            if let Some(duration) = config.duration.filter(|d| *d > OPEN_DURATION) {
                over.push(format!(
                    "-z {}s is over {}s",
                    seconds(duration),
                    seconds(OPEN_DURATION)
                ));
            }
        }
        None => {
            if let Some(requests) = config.requests.filter(|n| *n > CLOSED_REQUESTS) {
                over.push(format!("-n {requests} is over {CLOSED_REQUESTS}"));
            }
            if let Some(duration) = config.duration.filter(|d| *d > CLOSED_DURATION) {
                over.push(format!(
                    "-z {}s as fast as the server answers is over {}s",
                    seconds(duration),
                    seconds(CLOSED_DURATION)
                ));
            }
        }
    }
    over
}

#[cfg(test)]
mod tests {
    use super::*;
    use h3lab_client::Target;

    fn config(edit: impl FnOnce(&mut LoadConfig)) -> LoadConfig {
        let mut config = LoadConfig::new(Target::parse("https://www.example.com/").unwrap());
        edit(&mut config);
        config
    }

    const OUTSIDE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 10));

    #[test]
    fn a_heavy_load_outside_this_machine_is_refused_naming_what_is_over() {
        assert!(
            check(&config(|_| {}), OUTSIDE).is_ok(),
            "the default 200 requests"
        );
        let heavy = config(|c| {
            c.connections = 50;
            c.duration = Some(Duration::from_secs(60));
        });
        let err = check(&heavy, OUTSIDE).unwrap_err().to_string();
        assert!(
            err.contains("-c 50 is over 10") && err.contains("-z 60s"),
            "{err}"
        );
        assert!(err.contains("--allow-heavy"), "{err}");
        let fast = config(|c| c.rate = Some(500.0));
        assert!(check(&fast, OUTSIDE)
            .unwrap_err()
            .to_string()
            .contains("--rate 500"));
        let polite = config(|c| {
            c.rate = Some(50.0);
            c.duration = Some(Duration::from_secs(60));
        });
        assert!(check(&polite, OUTSIDE).is_ok());
    }

    #[test]
    fn this_machine_an_emulated_path_a_shard_and_allow_heavy_are_not_held_back() {
        let heavy = |edit: fn(&mut LoadConfig)| {
            config(|c| {
                c.connections = 100;
                edit(c);
            })
        };
        assert!(check(&heavy(|_| {}), "127.0.0.1".parse().unwrap()).is_ok());
        assert!(check(&heavy(|_| {}), "198.18.0.2".parse().unwrap()).is_ok());
        assert!(check(&heavy(|_| {}), "198.19.3.2".parse().unwrap()).is_ok());
        assert!(check(&heavy(|_| {}), "198.20.0.1".parse().unwrap()).is_err());
        assert!(check(&heavy(|c| c.allow_heavy = true), OUTSIDE).is_ok());
        let shard = h3lab_results::load::Shard { index: 0, count: 4 };
        let sharded = config(|c| {
            c.connections = 100;
            c.shard = Some(shard);
        });
        assert!(check(&sharded, OUTSIDE).is_ok());
    }
}
