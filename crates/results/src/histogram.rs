//! A microsecond HdrHistogram that serializes with its percentiles for
//! people and its full V2+DEFLATE encoding (base64) for merging.

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Significant figures kept: 0.1 % relative error at any magnitude.
const SIGNIFICANT_FIGURES: u8 = 3;

/// Microsecond latencies; auto-resizing, so no value is ever clipped.
#[derive(Debug, Clone, PartialEq)]
pub struct Micros(Histogram<u64>);

impl Default for Micros {
    fn default() -> Self {
        Micros(Histogram::new(SIGNIFICANT_FIGURES).expect("3 significant figures is valid"))
    }
}

impl Micros {
    /// Records one duration, in whole microseconds (at least 1).
    pub fn record(&mut self, duration: Duration) {
        let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        // `record` grows the auto-resizing histogram; `saturating_record`
        // would clamp to its current (initially tiny) range.
        if self.0.record(micros.max(1)).is_err() {
            self.0.saturating_record(micros);
        }
    }

    /// Adds every value recorded in `other` to this histogram.
    pub fn add(&mut self, other: &Micros) {
        self.0
            .add(&other.0)
            .expect("auto-resizing histograms always accept each other");
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// Value at `quantile` (0..=1) in microseconds; 0 when empty.
    pub fn quantile(&self, quantile: f64) -> u64 {
        if self.0.is_empty() {
            return 0;
        }
        self.0.value_at_quantile(quantile)
    }

    /// Largest value recorded, in microseconds.
    pub fn max(&self) -> u64 {
        self.0.max()
    }

    fn summary(&self) -> Summary {
        let empty = self.0.is_empty();
        Summary {
            count: self.0.len(),
            min: if empty { 0 } else { self.0.min() },
            mean: if empty { 0.0 } else { self.0.mean() },
            p50: self.quantile(0.5),
            p90: self.quantile(0.9),
            p99: self.quantile(0.99),
            p99_9: self.quantile(0.999),
            max: self.0.max(),
            histogram: self.encode(),
        }
    }

    /// The histogram as the JSON carries it: HdrHistogram V2 with deflate,
    /// in base64.
    pub fn encode(&self) -> String {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.0, &mut bytes)
            .expect("serializing into a Vec cannot fail");
        BASE64.encode(bytes)
    }

    fn decode(text: &str) -> Result<Micros, String> {
        let bytes = BASE64
            .decode(text)
            .map_err(|err| format!("histogram is not base64: {err}"))?;
        let mut histogram: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|err| format!("histogram is not HdrHistogram V2: {err:?}"))?;
        histogram.auto(true);
        Ok(Micros(histogram))
    }
}

/// The JSON shape: derived figures plus the encoded histogram, which is
/// the only field read back.
#[derive(Serialize, Deserialize)]
struct Summary {
    #[serde(default)]
    count: u64,
    #[serde(default)]
    min: u64,
    #[serde(default)]
    mean: f64,
    #[serde(default)]
    p50: u64,
    #[serde(default)]
    p90: u64,
    #[serde(default)]
    p99: u64,
    #[serde(default)]
    p99_9: u64,
    #[serde(default)]
    max: u64,
    histogram: String,
}

impl Serialize for Micros {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.summary().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Micros {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Micros, D::Error> {
        let summary = Summary::deserialize(deserializer)?;
        Micros::decode(&summary.histogram).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json() {
        let mut micros = Micros::default();
        for ms in 1..=100 {
            micros.record(Duration::from_millis(ms));
        }
        let json = serde_json::to_value(&micros).unwrap();
        assert_eq!(json["count"], 100);
        assert!((49_900..=50_100).contains(&json["p50"].as_u64().unwrap()));
        let back: Micros = serde_json::from_value(json).unwrap();
        assert_eq!(back, micros);
    }

    #[test]
    fn large_values_are_kept() {
        let mut micros = Micros::default();
        micros.record(Duration::from_secs(50));
        assert!((49_950_000..=50_050_000).contains(&micros.quantile(0.5)));
        let mut merged = Micros::default();
        merged.add(&micros);
        assert_eq!(merged.max(), micros.max());
    }

    #[test]
    fn adding_equals_recording_both() {
        let (mut a, mut b, mut both) = (Micros::default(), Micros::default(), Micros::default());
        for us in [5, 70, 900] {
            a.record(Duration::from_micros(us));
            both.record(Duration::from_micros(us));
        }
        for us in [3, 4_000_000] {
            b.record(Duration::from_micros(us));
            both.record(Duration::from_micros(us));
        }
        a.add(&b);
        assert_eq!(a, both);
    }

    #[test]
    fn rejects_garbage() {
        let err = serde_json::from_str::<Micros>(r#"{"histogram":"@@@"}"#).unwrap_err();
        assert!(err.to_string().contains("base64"), "{err}");
    }
}
