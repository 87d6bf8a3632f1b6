//! Link settings as people write them (RTT, rates, loss...), turned into the
//! configuration the model runs, plus the parsers for the command-line
//! forms (`50mbit`, `20ms`, `1%`, `100p`, `gilbert:...`, `down`).

use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use crate::model::ReorderSpec;
use crate::model::{
    DirectionConfig, GilbertElliott, Jitter, JitterShape, LossModel, Nanos, QueueLimit, RateSpec,
    Trace, Way,
};

/// Both directions of a path and the seed of every random choice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkConfig {
    /// Client to server.
    pub(crate) up: DirectionConfig,
    /// Server to client.
    pub(crate) down: DirectionConfig,
    /// Seed of every random choice on the path.
    pub(crate) seed: u64,
}

/// Smallest default queue, so low-BDP paths still absorb a burst.
pub const DEFAULT_QUEUE_FLOOR_BYTES: u64 = 64 * 1024;

/// Fastest rate [`parse_rate`] accepts: 1 Tbit/s.
pub const MAX_RATE_BITS: u64 = 1_000_000_000_000;

/// Longest duration [`parse_time`] accepts: one hour, in nanoseconds.
pub const MAX_TIME: Nanos = 3_600_000_000_000;

/// Which way random loss drops packets. A `tc netem` loss sits on one
/// interface's egress, so a published loss figure is one direction's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum LossDirection {
    /// Server to client only, as netem on the server's egress: the default.
    #[default]
    Down,
    /// Client to server only.
    Up,
    /// Each direction independently: a round trip sees about twice the loss.
    Both,
}

impl LossDirection {
    fn applies_to(self, way: Way) -> bool {
        match self {
            LossDirection::Down => way == Way::Down,
            LossDirection::Up => way == Way::Up,
            LossDirection::Both => true,
        }
    }

    /// The value's name and what it means, e.g. `down: server to client`.
    pub fn describe(self) -> &'static str {
        match self {
            LossDirection::Down => "down: server to client",
            LossDirection::Up => "up: client to server",
            LossDirection::Both => "both: each way",
        }
    }
}

impl FromStr for LossDirection {
    type Err = anyhow::Error;

    /// `down`, `up` or `both`, in any case.
    fn from_str(text: &str) -> anyhow::Result<LossDirection> {
        match text.trim().to_ascii_lowercase().as_str() {
            "down" => Ok(LossDirection::Down),
            "up" => Ok(LossDirection::Up),
            "both" => Ok(LossDirection::Both),
            _ => anyhow::bail!(
                "`{text}` is not a loss direction; write `down` (server to client), \
                 `up` (client to server) or `both`"
            ),
        }
    }
}

impl TryFrom<String> for LossDirection {
    type Error = anyhow::Error;

    fn try_from(text: String) -> anyhow::Result<LossDirection> {
        text.parse()
    }
}

/// A path as people describe it. `build` turns it into a [`LinkConfig`]:
/// half the RTT each way; the loss model drops packets in `loss_direction`
/// only (the other way loses none at random; its queue still drops);
/// jitter, reordering and duplication apply to each direction
/// independently; without an explicit queue, each direction gets a
/// drop-tail byte limit of one bandwidth-delay product (its rate times the
/// RTT) with a floor of `DEFAULT_QUEUE_FLOOR_BYTES` (64 KiB).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkSettings {
    /// Round-trip time the path adds, in nanoseconds (half each way).
    #[serde(rename = "rtt_ns")]
    pub rtt: Nanos,
    /// Server-to-client bottleneck.
    pub down: RateSpec,
    /// Client-to-server bottleneck.
    pub up: RateSpec,
    /// Random loss, in the direction(s) `loss_direction` names.
    pub loss: LossModel,
    /// Which way `loss` drops packets.
    pub loss_direction: LossDirection,
    /// Per-direction jitter of the one-way delay.
    pub jitter: Option<Jitter>,
    /// Drop-tail queue limit per direction; `None`: one bandwidth-delay
    /// product, as above.
    pub queue: Option<QueueLimit>,
    /// Reordering per direction; `None` never reorders.
    pub reorder: Option<ReorderSpec>,
    /// Probability that a packet is sent twice, per direction.
    pub duplicate: f64,
    /// Seed of every random choice on the path.
    pub seed: u64,
}

impl Default for LinkSettings {
    /// No impairment at all: emulation that only adds the TUN hop.
    fn default() -> Self {
        LinkSettings {
            rtt: 0,
            down: RateSpec::Unlimited,
            up: RateSpec::Unlimited,
            loss: LossModel::NONE,
            loss_direction: LossDirection::default(),
            jitter: None,
            queue: None,
            reorder: None,
            duplicate: 0.0,
            seed: 1,
        }
    }
}

impl LinkSettings {
    /// The configuration the model runs (see the type's description).
    pub fn build(&self) -> LinkConfig {
        LinkConfig {
            up: self.direction(Way::Up, &self.up),
            down: self.direction(Way::Down, &self.down),
            seed: self.seed,
        }
    }

    fn direction(&self, way: Way, rate: &RateSpec) -> DirectionConfig {
        DirectionConfig {
            delay: self.rtt / 2,
            jitter: self.jitter,
            rate: rate.clone(),
            queue: self.queue.unwrap_or_else(|| self.default_queue(rate)),
            loss: self.loss_in(way),
            reorder: self.reorder,
            duplicate: self.duplicate,
        }
    }

    fn loss_in(&self, way: Way) -> LossModel {
        if self.loss_direction.applies_to(way) {
            self.loss
        } else {
            LossModel::NONE
        }
    }

    fn default_queue(&self, rate: &RateSpec) -> QueueLimit {
        match rate.mean_bits_per_sec() {
            None => QueueLimit::Unlimited,
            Some(bits_per_sec) => {
                let bdp = bits_per_sec / 8.0 * (self.rtt as f64 / 1e9);
                QueueLimit::Bytes((bdp as u64).max(DEFAULT_QUEUE_FLOOR_BYTES))
            }
        }
    }
}

fn split_number(text: &str) -> Option<(f64, String)> {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let number: f64 = text[..end].parse().ok()?;
    number
        .is_finite()
        .then(|| (number, text[end..].trim().to_ascii_lowercase()))
}

/// A bit rate such as `50mbit`, `500kbit`, `1gbit` or `8000bit` (SI units).
pub fn parse_rate(text: &str) -> anyhow::Result<u64> {
    let bad = || {
        anyhow::anyhow!(
            "`{text}` is not a rate; write a positive number with bit, kbit, mbit or gbit, e.g. `50mbit`"
        )
    };
    let (number, unit) = split_number(text).ok_or_else(bad)?;
    let scale = match unit.as_str() {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        _ => return Err(bad()),
    };
    let bits = (number * scale).round();
    if !(1.0..=MAX_RATE_BITS as f64).contains(&bits) {
        return Err(bad());
    }
    Ok(bits as u64)
}

/// A duration such as `20ms`, `1.5s`, `250us` or `0ms`.
pub fn parse_time(text: &str) -> anyhow::Result<Nanos> {
    let bad = || {
        anyhow::anyhow!(
            "`{text}` is not a duration; write a number with ns, us, ms or s, e.g. `20ms`"
        )
    };
    let (number, unit) = split_number(text).ok_or_else(bad)?;
    let scale = match unit.as_str() {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(bad()),
    };
    let nanos = number * scale;
    if nanos > MAX_TIME as f64 {
        return Err(bad());
    }
    Ok(nanos.round() as Nanos)
}

/// A percentage such as `1%` or `0.5%`, returned as a fraction.
pub fn parse_percent(text: &str) -> anyhow::Result<f64> {
    let bad = || anyhow::anyhow!("`{text}` is not a percentage; write a number with %, e.g. `1%`");
    let (number, unit) = split_number(text).ok_or_else(bad)?;
    if unit != "%" {
        return Err(bad());
    }
    if number > 100.0 {
        anyhow::bail!("`{text}` is above 100 %; give a percentage from 0% to 100%");
    }
    Ok(number / 100.0)
}

/// A queue limit: `100p` (packets), `64kb` / `1mb` / `1500b` (bytes,
/// 1 kb = 1024 bytes as in tc) or `unlimited`.
pub fn parse_queue(text: &str) -> anyhow::Result<QueueLimit> {
    let bad = || {
        anyhow::anyhow!(
            "`{text}` is not a queue limit; write packets like `100p`, bytes like `64kb`, or `unlimited`"
        )
    };
    if text.trim().eq_ignore_ascii_case("unlimited") {
        return Ok(QueueLimit::Unlimited);
    }
    let (number, unit) = split_number(text).ok_or_else(bad)?;
    if number < 1.0 || (unit == "p" && number.fract() != 0.0) {
        return Err(bad());
    }
    match unit.as_str() {
        "p" => Ok(QueueLimit::Packets(number as u64)),
        "b" => Ok(QueueLimit::Bytes(number as u64)),
        "kb" => Ok(QueueLimit::Bytes((number * 1024.0) as u64)),
        "mb" => Ok(QueueLimit::Bytes((number * 1024.0 * 1024.0) as u64)),
        _ => Err(bad()),
    }
}

/// Jitter as `5ms` (uniform), `5ms:uniform` or `5ms:normal`.
pub fn parse_jitter(text: &str) -> anyhow::Result<Jitter> {
    let (amount, shape) = text.split_once(':').unwrap_or((text, "uniform"));
    let shape = match shape.trim().to_ascii_lowercase().as_str() {
        "uniform" => JitterShape::Uniform,
        "normal" => JitterShape::Normal,
        other => anyhow::bail!(
            "jitter shape `{other}` is unknown; write `5ms`, `5ms:uniform` or `5ms:normal`"
        ),
    };
    Ok(Jitter {
        amount: parse_time(amount)?,
        shape,
    })
}

/// A loss model: `bernoulli` (uses `loss` as its probability) or
/// `gilbert:p,r,1-h,1-k`, four percentages as in netem's gemodel:
/// P(good->bad), P(bad->good), loss in the good state, loss in the bad state.
fn parse_loss_model(text: &str, loss: f64) -> anyhow::Result<LossModel> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("bernoulli") {
        return Ok(LossModel::Bernoulli { p: loss });
    }
    let form = "write `bernoulli` or `gilbert:P,R,LOSS_GOOD,LOSS_BAD` with four percentages, e.g. `gilbert:1%,30%,0%,100%`";
    let Some(params) = text
        .strip_prefix("gilbert:")
        .or_else(|| text.strip_prefix("GILBERT:"))
    else {
        anyhow::bail!("`{text}` is not a loss model; {form}");
    };
    let values = params
        .split(',')
        .map(parse_percent)
        .collect::<anyhow::Result<Vec<f64>>>()
        .map_err(|err| anyhow::anyhow!("{err:#} (in loss model `{text}`)"))?;
    let [p, r, loss_good, loss_bad] = values[..] else {
        anyhow::bail!("`{text}` needs exactly four values; {form}");
    };
    Ok(LossModel::Gilbert(GilbertElliott {
        p,
        r,
        loss_good,
        loss_bad,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Direction, DirectionStats, MILLI};

    #[test]
    fn rates_times_and_percentages_parse() {
        assert_eq!(parse_rate("50mbit").unwrap(), 50_000_000);
        assert_eq!(parse_rate("1Gbit").unwrap(), 1_000_000_000);
        assert_eq!(parse_rate("2.5mbit").unwrap(), 2_500_000);
        assert_eq!(parse_time("20ms").unwrap(), 20 * MILLI);
        assert_eq!(parse_time("1.5s").unwrap(), 1_500 * MILLI);
        assert_eq!(parse_time("250us").unwrap(), 250_000);
        assert_eq!(parse_percent("1%").unwrap(), 0.01);
        assert_eq!(parse_percent("100%").unwrap(), 1.0);
        assert_eq!(parse_queue("100p").unwrap(), QueueLimit::Packets(100));
        assert_eq!(parse_queue("64kb").unwrap(), QueueLimit::Bytes(65_536));
        assert_eq!(
            parse_jitter("5ms:normal").unwrap(),
            Jitter {
                amount: 5 * MILLI,
                shape: JitterShape::Normal
            }
        );
    }

    #[test]
    fn malformed_values_say_the_expected_form() {
        for (text, expected) in [
            (parse_rate("50").unwrap_err(), "`50mbit`"),
            (parse_rate("fast").unwrap_err(), "`50mbit`"),
            (parse_rate("50mbps").unwrap_err(), "`50mbit`"),
            (parse_rate("0mbit").unwrap_err(), "`50mbit`"),
            (parse_time("20").unwrap_err(), "`20ms`"),
            (parse_time("-5ms").unwrap_err(), "`20ms`"),
            (parse_percent("1").unwrap_err(), "`1%`"),
            (parse_percent("120%").unwrap_err(), "above 100 %"),
            (parse_queue("100").unwrap_err(), "`100p`"),
            (parse_jitter("5ms:pareto").unwrap_err(), "5ms:normal"),
            (parse_loss_model("gilbert:1%,2%", 0.0).unwrap_err(), "four"),
            (parse_loss_model("markov", 0.0).unwrap_err(), "gilbert:"),
            (
                parse_loss_model("gilbert:1%,2%,3%,300%", 0.0).unwrap_err(),
                "above 100 %",
            ),
        ] {
            let message = format!("{text:#}");
            assert!(message.contains(expected), "{message}");
        }
    }

    #[test]
    fn gilbert_takes_four_percentages() {
        let model = parse_loss_model("gilbert:1%,30%,0%,100%", 0.0).unwrap();
        assert_eq!(
            model,
            LossModel::Gilbert(GilbertElliott {
                p: 0.01,
                r: 0.3,
                loss_good: 0.0,
                loss_bad: 1.0
            })
        );
    }

    #[test]
    fn settings_split_the_rtt_and_size_the_default_queue() {
        let settings = LinkSettings {
            rtt: 100 * MILLI,
            down: RateSpec::Fixed {
                bits_per_sec: 80_000_000,
            },
            up: RateSpec::Fixed {
                bits_per_sec: 1_000_000,
            },
            ..LinkSettings::default()
        };
        let config = settings.build();
        assert_eq!(config.down.delay, 50 * MILLI);
        assert_eq!(config.up.delay, 50 * MILLI);
        // 80 Mbit/s x 100 ms = 1 MB; 1 Mbit/s x 100 ms = 12.5 kB -> floor.
        assert_eq!(config.down.queue, QueueLimit::Bytes(1_000_000));
        assert_eq!(
            config.up.queue,
            QueueLimit::Bytes(DEFAULT_QUEUE_FLOOR_BYTES)
        );
    }

    #[test]
    fn loss_directions_parse_and_bad_ones_name_the_accepted_values() {
        assert_eq!(
            "down".parse::<LossDirection>().unwrap(),
            LossDirection::Down
        );
        assert_eq!(" UP ".parse::<LossDirection>().unwrap(), LossDirection::Up);
        assert_eq!(
            "both".parse::<LossDirection>().unwrap(),
            LossDirection::Both
        );
        for bad in ["sideways", "", "downstream"] {
            let message = format!("{:#}", bad.parse::<LossDirection>().unwrap_err());
            assert!(
                message.contains(&format!("`{bad}` is not a loss direction"))
                    && ["`down`", "`up`", "`both`"]
                        .iter()
                        .all(|name| message.contains(name)),
                "{message}"
            );
        }
        assert_eq!(LossDirection::default(), LossDirection::Down);
    }

    const PACKETS: u64 = 20_000;

    /// Offers `PACKETS` packets to each direction of the model `settings`
    /// build, 1 ms apart in virtual time; returns the two directions' stats.
    fn offer_both_ways(settings: &LinkSettings) -> (DirectionStats, DirectionStats) {
        let config = settings.build();
        let run = |direction_config: &DirectionConfig, way: Way| {
            let mut direction = Direction::new(direction_config, config.seed, way);
            for i in 0..PACKETS {
                direction.offer(1500, i * MILLI);
            }
            direction.stats().clone()
        };
        (run(&config.up, Way::Up), run(&config.down, Way::Down))
    }

    /// Random-loss drops within 4 binomial standard deviations of `p`.
    fn assert_loss_share(stats: &DirectionStats, p: f64) {
        let n = stats.packets_in as f64;
        let sigma = (n * p * (1.0 - p)).sqrt();
        let lost = stats.dropped_loss as f64;
        assert!(
            (lost - n * p).abs() <= 4.0 * sigma,
            "lost {lost} of {n}, expected {} +- {}",
            n * p,
            4.0 * sigma
        );
    }

    fn lossy(direction: LossDirection, loss: LossModel) -> LinkSettings {
        LinkSettings {
            loss,
            loss_direction: direction,
            seed: 11,
            ..LinkSettings::default()
        }
    }

    const FIVE_PERCENT: LossModel = LossModel::Bernoulli { p: 0.05 };

    #[test]
    fn down_loss_drops_no_upstream_packets_but_the_queue_still_does() {
        // Upstream: 1500 B every 1 ms into 6 Mbit/s (2 ms each) overflows
        // its 10-packet queue; downstream is unlimited.
        let settings = LinkSettings {
            up: RateSpec::Fixed {
                bits_per_sec: 6_000_000,
            },
            queue: Some(QueueLimit::Packets(10)),
            ..lossy(LossDirection::Down, FIVE_PERCENT)
        };
        let (up, down) = offer_both_ways(&settings);
        assert_eq!(up.dropped_loss, 0);
        assert!(up.dropped_queue > 0, "the upstream queue never overflowed");
        assert_eq!(down.packets_in, PACKETS);
        assert_loss_share(&down, 0.05);
    }

    #[test]
    fn up_loss_drops_no_downstream_packets() {
        let (up, down) = offer_both_ways(&lossy(LossDirection::Up, FIVE_PERCENT));
        assert_eq!(down.dropped_loss, 0);
        assert_loss_share(&up, 0.05);
    }

    #[test]
    fn both_loses_each_way_with_the_patterns_one_way_loss_gives() {
        let (up, down) = offer_both_ways(&lossy(LossDirection::Both, FIVE_PERCENT));
        assert_loss_share(&up, 0.05);
        assert_loss_share(&down, 0.05);
        // Turning one way's loss off leaves the other way's decisions as
        // they were, so runs differing only in direction stay comparable.
        let (_, down_only) = offer_both_ways(&lossy(LossDirection::Down, FIVE_PERCENT));
        let (up_only, _) = offer_both_ways(&lossy(LossDirection::Up, FIVE_PERCENT));
        assert_eq!(down_only, down);
        assert_eq!(up_only, up);
    }

    #[test]
    fn the_direction_applies_to_gilbert_loss_too() {
        let bursty = LossModel::Gilbert(GilbertElliott {
            p: 0.01,
            r: 0.3,
            loss_good: 0.0,
            loss_bad: 1.0,
        });
        let (up, down) = offer_both_ways(&lossy(LossDirection::Down, bursty));
        assert_eq!(up.dropped_loss, 0);
        assert!(down.dropped_loss > 0);
        let (up, down) = offer_both_ways(&lossy(LossDirection::Up, bursty));
        assert!(up.dropped_loss > 0);
        assert_eq!(down.dropped_loss, 0);
    }

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
