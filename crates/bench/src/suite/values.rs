//! The units a suite's values are written in, each checked as it is read.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// A positive whole number (repetitions, connections, samples).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Count(pub(crate) u32);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(d)?;
        match u32::try_from(n) {
            Ok(n) if n >= 1 => Ok(Count(n)),
            _ => Err(serde::de::Error::custom(format!(
                "{n} is not a positive whole number (1 or more)"
            ))),
        }
    }
}

/// A byte count written as `1KB`, `10MB`, `1GiB` (SI and binary units).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ByteSize(pub(crate) u64);

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse::<bytesize::ByteSize>()
            .map(|b| ByteSize(b.as_u64()))
            .map_err(|_| {
                serde::de::Error::custom(format!(
                    "`{text}` is not a size; write e.g. `1KB`, `10MB` or `1GiB`"
                ))
            })
    }
}

/// A duration written as `500ms`, `3s`, `1m`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HumanDuration(pub(crate) Duration);

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text)
            .map(HumanDuration)
            .map_err(|_| {
                serde::de::Error::custom(format!(
                    "`{text}` is not a duration; write e.g. `500ms`, `3s` or `1m`"
                ))
            })
    }
}

/// An initial window in packets, written `32` or `"32 packets"` (1 to 1024).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Packets(pub(crate) u32);

impl<'de> Deserialize<'de> for Packets {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(i64),
            Text(String),
        }
        let text = match Written::deserialize(d)? {
            Written::Number(n) => n.to_string(),
            Written::Text(text) => text,
        };
        crate::sweep::parse_packets(&text).map(Packets).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`{text}` is not a number of packets; write e.g. `10` or `\"32 packets\"` (1 to 1024)"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::ByteSize;
    use linkem::config::parse_queue;
    use linkem::model::QueueLimit;
    use serde::Deserialize;

    fn size(text: &str) -> u64 {
        let value = toml::Value::String(text.to_string());
        ByteSize::deserialize(value).unwrap().0
    }

    /// One meaning of a unit everywhere (docs/suite.md): a response size and
    /// a link's queue read `kb` alike, in any case.
    #[test]
    fn sizes_and_queues_read_kb_as_1000_and_kib_as_1024_bytes() {
        for (text, bytes) in [
            ("64kb", 64_000),
            ("64KB", 64_000),
            ("64KiB", 65_536),
            ("64kib", 65_536),
            ("2MB", 2_000_000),
            ("1MiB", 1_048_576),
        ] {
            assert_eq!(size(text), bytes, "size = {text:?}");
            assert_eq!(
                parse_queue(text).unwrap(),
                QueueLimit::Bytes(bytes),
                "queue = {text:?}"
            );
        }
    }
}
