//! RFC 9218 priorities, as quinn's stream priorities.
//!
//! A request's `priority` header (`u=0..7`, lower is more urgent, and `i`
//! for incremental) decides when its response is sent. quinn sends the
//! pending stream of the highest `i32` priority first, and streams of equal
//! priority in turn, a packet each. So each urgency is a band of values:
//! - non-incremental responses get one value each, earlier streams higher,
//!   so they go whole, one after another, in stream order (RFC 9218 §10);
//! - incremental responses share the band's lowest value, so they take
//!   turns.
//!
//! Non-incremental responses go before incremental ones of the same
//! urgency (the RFC leaves the mix to the server). A request without the
//! header is scheduled as quic-go 0.63 does for a client that has not sent
//! one: urgency 3, incremental. Clients that never send it (load
//! generators) keep quinn's turns, which is what h2's scheduling does too.
//! Every value is below 0, so the control and QPACK streams, at quinn's
//! default of 0, always go first.

use http::HeaderMap;
use sfv::{BareItem, Dictionary, ListEntry, Parser};

/// RFC 9218 §4.1.
const DEFAULT_URGENCY: u8 = 3;
const LEAST_URGENT: u8 = 7;
/// Values per urgency band; half of them for non-incremental streams.
const BAND: i32 = 1 << 21;
const ORDERED: i32 = BAND / 2;

/// A request's RFC 9218 priority parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priority {
    /// 0 (most urgent) to 7.
    pub urgency: u8,
    /// The response is useful in parts, so it may share the path.
    pub incremental: bool,
}

impl Priority {
    /// What a request without a `priority` header gets (see the module doc).
    pub const UNSPECIFIED: Priority = Priority {
        urgency: DEFAULT_URGENCY,
        incremental: true,
    };

    /// The request's `priority` header. A header that does not parse as a
    /// structured dictionary is ignored, as RFC 9218 §4 asks; within one
    /// that parses, a missing or out-of-range parameter takes its default.
    pub fn of(headers: &HeaderMap) -> Priority {
        let lines: Vec<&[u8]> = headers
            .get_all("priority")
            .iter()
            .map(|value| value.as_bytes())
            .collect();
        if lines.is_empty() {
            return Priority::UNSPECIFIED;
        }
        let Ok(dictionary) = Parser::new(&lines.join(&b", "[..])).parse::<Dictionary>() else {
            return Priority::UNSPECIFIED;
        };
        let item = |key: &str| match dictionary.get(key) {
            Some(ListEntry::Item(item)) => Some(item.bare_item.clone()),
            _ => None,
        };
        let urgency = match item("u") {
            Some(BareItem::Integer(u)) => u8::try_from(i64::from(u))
                .ok()
                .filter(|u| *u <= LEAST_URGENT)
                .unwrap_or(DEFAULT_URGENCY),
            _ => DEFAULT_URGENCY,
        };
        let incremental = matches!(item("i"), Some(BareItem::Boolean(true)));
        Priority {
            urgency,
            incremental,
        }
    }

    /// quinn's send priority for this response on stream number `index`
    /// (the stream ID divided by 4: the request's place on its connection).
    pub fn quinn_value(self, index: u64) -> i32 {
        let band = -i32::from(self.urgency + 1) * BAND;
        match self.incremental {
            true => band,
            false => {
                let place = i32::try_from(index).unwrap_or(i32::MAX).min(ORDERED - 1);
                band + ORDERED + (ORDERED - 1 - place)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn of(values: &[&str]) -> Priority {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append("priority", HeaderValue::from_str(value).unwrap());
        }
        Priority::of(&headers)
    }

    fn priority(urgency: u8, incremental: bool) -> Priority {
        Priority {
            urgency,
            incremental,
        }
    }

    #[test]
    fn header_parameters_are_read_as_rfc_9218_defines_them() {
        assert_eq!(of(&[]), Priority::UNSPECIFIED);
        assert_eq!(of(&["u=0"]), priority(0, false));
        assert_eq!(of(&["u=4, i"]), priority(4, true));
        assert_eq!(of(&["i=?0, u=2"]), priority(2, false));
        assert_eq!(of(&["u=5", "i"]), priority(5, true), "split over two lines");
        assert_eq!(of(&["i"]), priority(3, true), "urgency defaults to 3");
        assert_eq!(
            of(&["u=9"]),
            priority(3, false),
            "out of range: the default"
        );
        assert_eq!(of(&["u=-1"]), priority(3, false));
        assert_eq!(
            of(&["u=1, x=7"]),
            priority(1, false),
            "unknown keys are ignored"
        );
        assert_eq!(of(&["u=\"0\""]), priority(3, false), "not an integer");
        assert_eq!(of(&["u=0,,"]), Priority::UNSPECIFIED, "not a dictionary");
    }

    #[test]
    fn quinn_values_order_urgency_then_stream_then_incremental() {
        let order = [
            priority(0, false).quinn_value(7),
            priority(0, false).quinn_value(9),
            priority(0, true).quinn_value(1),
            priority(2, false).quinn_value(0),
            priority(2, false).quinn_value(1_000_000_000),
            priority(2, true).quinn_value(0),
            priority(7, false).quinn_value(0),
            priority(7, true).quinn_value(0),
        ];
        for pair in order.windows(2) {
            assert!(pair[0] > pair[1], "{order:?}");
        }
        assert!(order[0] < 0, "below the control streams' 0");
        assert_eq!(
            priority(4, true).quinn_value(3),
            priority(4, true).quinn_value(50),
            "incremental responses of one urgency take turns"
        );
    }
}
