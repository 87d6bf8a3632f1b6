//! Latency histograms as stored in `results.json` (HdrHistogram V2 or
//! V2+deflate, base64, values in microseconds): decoding, merging across
//! repetitions, and the percentiles and CDF the report shows.

use anyhow::{Context, Result};
use base64::Engine;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Decodes one base64 HdrHistogram.
pub fn decode(encoded: &str) -> Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .context("histogram is not valid base64")?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .context("histogram is not an HdrHistogram V2 payload")
}

/// Sum of several histograms; `Ok(None)` when given none.
pub fn merge<'a>(
    histograms: impl IntoIterator<Item = &'a Histogram<u64>>,
) -> Result<Option<Histogram<u64>>> {
    let mut merged: Option<Histogram<u64>> = None;
    for histogram in histograms {
        let sum = match &mut merged {
            Some(sum) => sum,
            // `Histogram::new` auto-resizes, so any recorded range fits.
            None => merged.insert(Histogram::new(histogram.sigfig())?),
        };
        sum.add(histogram).context("merging latency histograms")?;
    }
    Ok(merged)
}

/// Latency percentiles of a merged histogram, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl LatencySummary {
    /// `None` for an empty histogram.
    pub fn of(histogram: &Histogram<u64>) -> Option<LatencySummary> {
        if histogram.is_empty() {
            return None;
        }
        Some(LatencySummary {
            count: histogram.len(),
            p50_ms: micros_to_ms(histogram.value_at_quantile(0.5)),
            p90_ms: micros_to_ms(histogram.value_at_quantile(0.9)),
            p99_ms: micros_to_ms(histogram.value_at_quantile(0.99)),
            max_ms: micros_to_ms(histogram.max()),
        })
    }
}

/// Cumulative distribution as `(latency in ms, fraction ≤ it)` points, one
/// per distinct recorded bucket.
pub fn cdf_points(histogram: &Histogram<u64>) -> Vec<(f64, f64)> {
    let total = histogram.len() as f64;
    let mut cumulative = 0u64;
    histogram
        .iter_recorded()
        .map(|bucket| {
            cumulative += bucket.count_at_value();
            (
                micros_to_ms(bucket.value_iterated_to()),
                cumulative as f64 / total,
            )
        })
        .collect()
}

impl LatencySummary {
    /// `None` for an empty histogram.
    pub fn of_micros(micros: &h3lab_results::Micros) -> Option<LatencySummary> {
        (micros.count() > 0).then(|| LatencySummary {
            count: micros.count(),
            p50_ms: micros_to_ms(micros.quantile(0.5)),
            p90_ms: micros_to_ms(micros.quantile(0.9)),
            p99_ms: micros_to_ms(micros.quantile(0.99)),
            max_ms: micros_to_ms(micros.max()),
        })
    }
}

fn micros_to_ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer, V2Serializer};

    /// Base64 V2 serialisation of a histogram holding `micros`.
    pub(crate) fn encoded(micros: &[u64]) -> String {
        let mut histogram = Histogram::<u64>::new(3).unwrap();
        for &value in micros {
            histogram.record(value).unwrap();
        }
        let mut bytes = Vec::new();
        V2Serializer::new()
            .serialize(&histogram, &mut bytes)
            .unwrap();
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn decodes_plain_and_deflated_v2() {
        let plain = decode(&encoded(&[1000, 2000, 3000])).unwrap();
        assert_eq!(plain.len(), 3);

        let mut histogram = Histogram::<u64>::new(3).unwrap();
        histogram.record(5000).unwrap();
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&histogram, &mut bytes)
            .unwrap();
        let deflated = decode(&base64::engine::general_purpose::STANDARD.encode(bytes)).unwrap();
        assert_eq!(deflated.len(), 1);
        assert!(deflated.equivalent(deflated.max(), 5000));
    }

    #[test]
    fn rejects_garbage_with_a_reason() {
        let not_base64 = decode("***").unwrap_err();
        assert!(format!("{not_base64:#}").contains("base64"));
        let not_hdr = decode("aGVsbG8gd29ybGQ=").unwrap_err();
        assert!(format!("{not_hdr:#}").contains("HdrHistogram"));
    }

    #[test]
    fn merged_percentiles_cover_all_repetitions() {
        // 1..=100 ms spread over two repetitions.
        let first: Vec<u64> = (1..=50).map(|ms| ms * 1000).collect();
        let second: Vec<u64> = (51..=100).map(|ms| ms * 1000).collect();
        let parts = [
            decode(&encoded(&first)).unwrap(),
            decode(&encoded(&second)).unwrap(),
        ];
        let merged = merge(&parts).unwrap().unwrap();
        let summary = LatencySummary::of(&merged).unwrap();
        assert_eq!(summary.count, 100);
        // HdrHistogram with 3 significant digits: within 0.1 % of the exact value.
        for (got, want) in [
            (summary.p50_ms, 50.0),
            (summary.p90_ms, 90.0),
            (summary.p99_ms, 99.0),
            (summary.max_ms, 100.0),
        ] {
            assert!((got - want).abs() <= want * 0.001, "{got} vs {want}");
        }
        assert_eq!(merge(std::iter::empty()).unwrap(), None);
    }

    #[test]
    fn cdf_rises_to_one() {
        let histogram = decode(&encoded(&[1000, 1000, 2000, 4000])).unwrap();
        let points = cdf_points(&histogram);
        assert_eq!(points.len(), 3);
        assert_eq!(points[0], (1.0, 0.5));
        assert_eq!(points[1].1, 0.75);
        assert_eq!(points[2].1, 1.0);
        assert!((points[2].0 - 4.0).abs() <= 0.004);
    }
}
