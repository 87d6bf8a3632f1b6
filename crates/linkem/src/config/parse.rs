//! The command-line forms of link values: `50mbit`, `20ms`, `1%`, `100p`,
//! `5ms:normal`, `gilbert:...`.

use crate::model::{
    GilbertElliott, Jitter, JitterShape, LossModel, Nanos, QueueLimit, ReorderSpec,
};

/// Fastest rate [`parse_rate`] accepts: 1 Tbit/s.
pub const MAX_RATE_BITS: u64 = 1_000_000_000_000;

/// Longest duration [`parse_time`] accepts: one hour, in nanoseconds.
pub const MAX_TIME: Nanos = 3_600_000_000_000;

fn split_number(text: &str) -> Option<(f64, String)> {
    let (digits, unit) = split_decimal(text)?;
    Some((digits.parse().ok()?, unit))
}

/// The leading decimal (digits and a point) as written, and the unit after
/// it, in lower case.
fn split_decimal(text: &str) -> Option<(&str, String)> {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let number: f64 = text[..end].parse().ok()?;
    number
        .is_finite()
        .then(|| (&text[..end], text[end..].trim().to_ascii_lowercase()))
}

/// `decimal` (digits with at most one point) times 10^`places`, written
/// out by moving the point: exact, where a float times 100 is not.
fn shift_point(decimal: &str, places: i32) -> String {
    let (whole, fraction) = decimal.split_once('.').unwrap_or((decimal, ""));
    let digits = format!("{whole}{fraction}");
    let point = whole.len() as i32 + places;
    let shifted = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (whole, fraction) = digits.split_at(point as usize);
        format!("{whole}.{fraction}")
    };
    tidy_decimal(&shifted)
}

/// A decimal without leading zeros before the point or trailing zeros
/// after it: `007.50` is `7.5`, `0.0` is `0`.
fn tidy_decimal(decimal: &str) -> String {
    let (whole, fraction) = decimal.split_once('.').unwrap_or((decimal, ""));
    let whole = whole.trim_start_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    match fraction.trim_end_matches('0') {
        "" => whole.to_string(),
        fraction => format!("{whole}.{fraction}"),
    }
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

/// A bit rate in the form [`parse_rate`] reads: the largest unit that
/// divides it (`2mbit`, `1500kbit`, `64bit`).
pub fn format_rate(bits_per_sec: u64) -> String {
    [
        (1_000_000_000, "gbit"),
        (1_000_000, "mbit"),
        (1_000, "kbit"),
    ]
    .iter()
    .find(|(scale, _)| bits_per_sec >= *scale && bits_per_sec % scale == 0)
    .map(|(scale, unit)| format!("{}{unit}", bits_per_sec / scale))
    .unwrap_or_else(|| format!("{bits_per_sec}bit"))
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

/// A percentage such as `1%` or `0.5%`, returned as a fraction: the
/// float nearest the decimal (`0.1%` is the float nearest 0.001).
pub fn parse_percent(text: &str) -> anyhow::Result<f64> {
    let bad = || anyhow::anyhow!("`{text}` is not a percentage; write a number with %, e.g. `1%`");
    let (digits, unit) = split_decimal(text).ok_or_else(bad)?;
    if unit != "%" {
        return Err(bad());
    }
    let fraction: f64 = shift_point(digits, -2).parse().map_err(|_| bad())?;
    if fraction > 1.0 {
        anyhow::bail!("`{text}` is above 100 %; give a percentage from 0% to 100%");
    }
    Ok(fraction)
}

/// A fraction in the form [`parse_percent`] reads back to the same float:
/// the shortest decimal of `fraction`, with its point moved (`1.5%`).
pub fn format_percent(fraction: f64) -> String {
    format!("{}%", shift_point(&fraction.to_string(), 2))
}

/// A duration in the form [`parse_time`] reads: the largest unit that
/// divides it (`20ms`, `1500us`, `0s`).
pub fn format_time(nanos: Nanos) -> String {
    [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
        .iter()
        .find(|(scale, _)| nanos % scale == 0)
        .map(|(scale, unit)| format!("{}{unit}", nanos / scale))
        .unwrap_or_else(|| format!("{nanos}ns"))
}

/// A queue limit in the form [`parse_queue`] reads (`100p`, `65536b`).
pub fn format_queue(limit: QueueLimit) -> String {
    match limit {
        QueueLimit::Packets(packets) => format!("{packets}p"),
        QueueLimit::Bytes(bytes) => format!("{bytes}b"),
        QueueLimit::Unlimited => "unlimited".to_string(),
    }
}

/// Jitter in the form [`parse_jitter`] reads (`5ms:normal`).
pub fn format_jitter(jitter: Jitter) -> String {
    let shape = match jitter.shape {
        JitterShape::Uniform => "uniform",
        JitterShape::Normal => "normal",
    };
    format!("{}:{shape}", format_time(jitter.amount))
}

/// Reordering in the form [`parse_reorder`] reads (`1%:10ms`).
pub fn format_reorder(reorder: ReorderSpec) -> String {
    format!(
        "{}:{}",
        format_percent(reorder.probability),
        format_time(reorder.extra_delay)
    )
}

/// A queue limit: `100p` (packets), bytes (`1500b`, `64kb`, `64kib`, `1mb`)
/// or `unlimited`. Units are h3lab's everywhere, in any case: KB and MB
/// are 1000-based, KiB and MiB 1024-based (tc's `kb` is 1024 bytes; ours,
/// like a suite's `size`, is 1000).
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
        "kb" => Ok(QueueLimit::Bytes((number * 1e3) as u64)),
        "kib" => Ok(QueueLimit::Bytes((number * 1024.0) as u64)),
        "mb" => Ok(QueueLimit::Bytes((number * 1e6) as u64)),
        "mib" => Ok(QueueLimit::Bytes((number * 1024.0 * 1024.0) as u64)),
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
pub(super) fn parse_loss_model(text: &str, loss: f64) -> anyhow::Result<LossModel> {
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

/// Reordering from `PERCENT:EXTRA_DELAY`, e.g. `1%:10ms`.
pub fn parse_reorder(text: &str) -> anyhow::Result<ReorderSpec> {
    let (share, delay) = text.split_once(':').ok_or_else(|| {
        anyhow::anyhow!("`{text}` is not a reordering; write PERCENT:EXTRA_DELAY, e.g. `1%:10ms`")
    })?;
    Ok(ReorderSpec {
        probability: parse_percent(share)?,
        extra_delay: parse_time(delay)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MILLI;

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
        assert_eq!(parse_queue("64kb").unwrap(), QueueLimit::Bytes(64_000));
        assert_eq!(parse_queue("64KB").unwrap(), QueueLimit::Bytes(64_000));
        assert_eq!(parse_queue("64KiB").unwrap(), QueueLimit::Bytes(65_536));
        assert_eq!(parse_queue("1.5mb").unwrap(), QueueLimit::Bytes(1_500_000));
        assert_eq!(parse_queue("1MiB").unwrap(), QueueLimit::Bytes(1_048_576));
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
    fn written_values_read_back_exactly() {
        for fraction in [
            0.0,
            0.0007,
            0.00007,
            0.001,
            0.003,
            0.01,
            0.015,
            0.07,
            0.1,
            0.3,
            1.0,
            1e-9,
            0.123456789,
        ] {
            let text = format_percent(fraction);
            assert_eq!(parse_percent(&text).unwrap(), fraction, "{text}");
        }
        assert_eq!(format_percent(0.015), "1.5%");
        assert_eq!(format_percent(1e-5), "0.001%");
        for nanos in [0, 1, 1_500, 20 * MILLI, 1_500 * MILLI, 3 * 1_000 * MILLI] {
            assert_eq!(parse_time(&format_time(nanos)).unwrap(), nanos);
        }
        assert_eq!(format_time(1_500 * MILLI), "1500ms");
        for limit in [
            QueueLimit::Packets(100),
            QueueLimit::Bytes(65_537),
            QueueLimit::Unlimited,
        ] {
            assert_eq!(parse_queue(&format_queue(limit)).unwrap(), limit);
        }
        let jitter = Jitter {
            amount: 5 * MILLI,
            shape: JitterShape::Normal,
        };
        assert_eq!(parse_jitter(&format_jitter(jitter)).unwrap(), jitter);
        let reorder = ReorderSpec {
            probability: 0.001,
            extra_delay: 10 * MILLI,
        };
        assert_eq!(parse_reorder(&format_reorder(reorder)).unwrap(), reorder);
    }

    #[test]
    fn a_percentage_is_the_float_nearest_its_decimal() {
        // 0.007 / 100 in floats lands one step away from 0.00007.
        assert_ne!(0.007 / 100.0, 0.00007);
        assert_eq!(parse_percent("0.007%").unwrap(), 0.00007);
        assert_eq!(parse_percent("007.50%").unwrap(), 0.075);
        assert_eq!(parse_percent(".5%").unwrap(), 0.005);
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
}
