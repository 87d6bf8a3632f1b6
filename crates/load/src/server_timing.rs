//! The one `Server-Timing` metric h3lab reads: `origin;dur=MS`, how long
//! an edge waited for its origin's response head (`h3lab serve
//! --upstream`, and the edges `scripts/edge-server.sh` configures).

use std::time::Duration;

use http::{HeaderMap, HeaderValue};

/// The edge's wait for its origin, if the response says; `None` when no
/// `Server-Timing` header has an `origin` metric with a readable `dur`.
pub(crate) fn origin_wait(headers: &HeaderMap) -> Option<Duration> {
    origin_wait_in(headers.get_all("server-timing"))
}

/// The same, from the values of a response's `Server-Timing` fields.
pub(crate) fn origin_wait_in<'a>(
    values: impl IntoIterator<Item = &'a HeaderValue>,
) -> Option<Duration> {
    values
        .into_iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .find_map(origin_duration)
}

/// `dur` of one metric (`name;param=value;...`) named `origin`, in ms.
fn origin_duration(metric: &str) -> Option<Duration> {
    let mut parts = metric.split(';').map(str::trim);
    if !parts.next()?.eq_ignore_ascii_case("origin") {
        return None;
    }
    let ms: f64 = parts
        .filter_map(|param| param.split_once('='))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("dur"))?
        .1
        .trim()
        .trim_matches('"')
        .parse()
        .ok()?;
    (ms.is_finite() && ms >= 0.0).then(|| Duration::from_secs_f64(ms / 1000.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(values: &[&str]) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append("server-timing", value.parse().unwrap());
        }
        origin_wait(&headers)
    }

    #[test]
    fn each_edges_spelling_is_read() {
        let ms = |ms: u64| Some(Duration::from_millis(ms));
        assert_eq!(wait(&["origin;dur=81.000"]), ms(81), "h3lab, Caddy");
        assert_eq!(wait(&["origin;dur=81"]), ms(81), "HAProxy's %Tr");
        assert_eq!(wait(&["origin;dur=0081"]), ms(81), "nginx's s.mmm, joined");
        assert_eq!(
            wait(&["cache;desc=miss, origin; dur=\"2.5\""]),
            Some(Duration::from_micros(2500))
        );
        assert_eq!(
            wait(&["db;dur=3", "Origin;DUR=4"]),
            ms(4),
            "a second header"
        );
    }

    #[test]
    fn what_is_not_a_readable_origin_time_is_unknown() {
        assert_eq!(wait(&[]), None);
        assert_eq!(wait(&["originating;dur=5"]), None);
        assert_eq!(wait(&["origin"]), None);
        assert_eq!(wait(&["origin;dur="]), None, "nginx with no upstream time");
        assert_eq!(wait(&["origin;dur=-1"]), None);
        assert_eq!(wait(&["origin;dur=NaN"]), None);
    }
}
