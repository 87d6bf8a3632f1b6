//! Request routing as a pure function of method and path: no I/O, no clock.

use std::time::Duration;

use http::Method;
use percent_encoding::percent_decode_str;

/// The bounds routing checks parameters against, and whether a site is
/// served at `/`.
#[derive(Clone, Copy, Debug)]
pub struct RouteLimits {
    pub max_response_bytes: u64,
    pub max_delay: Duration,
    /// Every GET path the synthetic endpoints do not claim is a file of the site.
    pub site: bool,
}

/// What to do with a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    Health,
    Bytes(u64),
    Delay(Duration),
    Echo,
    /// A file below the static root, as decoded path segments.
    Static(StaticPath),
    /// A file of the site served at `/`, as decoded path segments.
    Site(StaticPath),
    Reject(Rejection),
}

/// A request the server answers with an error status.
#[derive(Debug, PartialEq, Eq)]
pub enum Rejection {
    NotFound,
    MethodNotAllowed { allow: &'static str },
    BadRequest(String),
}

/// Decoded, traversal-free path segments below the static root or the site.
/// An empty list or a trailing slash means the directory's `index.html`.
#[derive(Debug, PartialEq, Eq)]
pub struct StaticPath {
    pub segments: Vec<String>,
    pub wants_index: bool,
}

/// Decides the route for `method` and `path` (the URI path, query excluded).
/// The synthetic endpoints come first, so a site's own `/health`, `/echo`,
/// `/bytes/`, `/delay/` or `/static/` is shadowed by them.
pub fn route(method: &Method, path: &str, limits: &RouteLimits) -> Route {
    if path == "/health" {
        return only(method, Method::GET, Route::Health);
    }
    if path == "/echo" {
        return only(method, Method::POST, Route::Echo);
    }
    if let Some(count) = path.strip_prefix("/bytes/") {
        return only(method, Method::GET, bytes_route(count, limits));
    }
    if let Some(millis) = path.strip_prefix("/delay/") {
        return only(method, Method::GET, delay_route(millis, limits));
    }
    if let Some(rest) = path.strip_prefix("/static/") {
        return only(method, Method::GET, file_route(rest, Route::Static));
    }
    match (limits.site, path.strip_prefix('/')) {
        (true, Some(rest)) => only(method, Method::GET, file_route(rest, Route::Site)),
        _ => Route::Reject(Rejection::NotFound),
    }
}

fn only(method: &Method, allowed: Method, route: Route) -> Route {
    if *method == allowed {
        return route;
    }
    let allow = if allowed == Method::POST {
        "POST"
    } else {
        "GET"
    };
    Route::Reject(Rejection::MethodNotAllowed { allow })
}

fn bad_request(message: String) -> Route {
    Route::Reject(Rejection::BadRequest(message))
}

fn parse_count(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn bytes_route(count: &str, limits: &RouteLimits) -> Route {
    match parse_count(count) {
        None => bad_request(format!(
            "/bytes/{count}: the size must be a decimal byte count, e.g. /bytes/1048576"
        )),
        Some(n) if n > limits.max_response_bytes => bad_request(format!(
            "/bytes/{n}: larger than the server's limit of {} bytes (raise it with --max-response-bytes)",
            limits.max_response_bytes
        )),
        Some(n) => Route::Bytes(n),
    }
}

fn delay_route(millis: &str, limits: &RouteLimits) -> Route {
    let max_ms = limits.max_delay.as_millis();
    match parse_count(millis) {
        None => bad_request(format!(
            "/delay/{millis}: the delay must be decimal milliseconds, e.g. /delay/250"
        )),
        Some(ms) if u128::from(ms) > max_ms => bad_request(format!(
            "/delay/{ms}: longer than the server's limit of {max_ms} ms (raise it with --max-delay-ms)"
        )),
        Some(ms) => Route::Delay(Duration::from_millis(ms)),
    }
}

fn file_route(rest: &str, found: fn(StaticPath) -> Route) -> Route {
    static_route(rest).map_or_else(Route::Reject, found)
}

/// Decodes `rest` (the path after the directory's URL prefix) into segments
/// that cannot leave the directory: `.`, `..` and separators, even
/// percent-encoded, are refused.
fn static_route(rest: &str) -> Result<StaticPath, Rejection> {
    let mut segments = Vec::new();
    let raw: Vec<&str> = rest.split('/').collect();
    let wants_index = raw.last().is_some_and(|last| last.is_empty());
    let named = if wants_index {
        &raw[..raw.len() - 1]
    } else {
        &raw[..]
    };
    for segment in named {
        let Ok(decoded) = percent_decode_str(segment).decode_utf8() else {
            let message = "file path is not valid UTF-8 after percent-decoding";
            return Err(Rejection::BadRequest(message.into()));
        };
        if decoded.is_empty() {
            return Err(Rejection::NotFound);
        }
        if decoded == "." || decoded == ".." || decoded.contains(['/', '\\', '\0']) {
            let message = "file path must stay inside the served directory";
            return Err(Rejection::BadRequest(message.into()));
        }
        segments.push(decoded.into_owned());
    }
    Ok(StaticPath {
        segments,
        wants_index,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: RouteLimits = RouteLimits {
        max_response_bytes: 1000,
        max_delay: Duration::from_secs(2),
        site: false,
    };

    const WITH_SITE: RouteLimits = RouteLimits {
        site: true,
        ..LIMITS
    };

    fn site_get(path: &str) -> Route {
        route(&Method::GET, path, &WITH_SITE)
    }

    fn site_path(segments: &[&str], wants_index: bool) -> Route {
        Route::Site(StaticPath {
            segments: segments.iter().map(|s| s.to_string()).collect(),
            wants_index,
        })
    }

    fn get(path: &str) -> Route {
        route(&Method::GET, path, &LIMITS)
    }

    fn is_bad_request(route: Route) -> bool {
        matches!(route, Route::Reject(Rejection::BadRequest(_)))
    }

    #[test]
    fn health_and_echo_routes() {
        assert_eq!(get("/health"), Route::Health);
        assert_eq!(route(&Method::POST, "/echo", &LIMITS), Route::Echo);
    }

    #[test]
    fn bytes_accepts_zero_up_to_the_limit() {
        assert_eq!(get("/bytes/0"), Route::Bytes(0));
        assert_eq!(get("/bytes/1000"), Route::Bytes(1000));
        assert!(is_bad_request(get("/bytes/1001")));
    }

    #[test]
    fn bytes_rejects_non_decimal_sizes() {
        for path in [
            "/bytes/",
            "/bytes/-1",
            "/bytes/1e3",
            "/bytes/+5",
            "/bytes/99999999999999999999999",
        ] {
            assert!(is_bad_request(get(path)), "{path}");
        }
    }

    #[test]
    fn delay_is_capped() {
        assert_eq!(
            get("/delay/2000"),
            Route::Delay(Duration::from_millis(2000))
        );
        assert!(is_bad_request(get("/delay/2001")));
        assert!(is_bad_request(get("/delay/soon")));
    }

    #[test]
    fn wrong_method_is_405_with_allow() {
        let post_only = Route::Reject(Rejection::MethodNotAllowed { allow: "POST" });
        let get_only = Route::Reject(Rejection::MethodNotAllowed { allow: "GET" });
        assert_eq!(get("/echo"), post_only);
        assert_eq!(route(&Method::POST, "/health", &LIMITS), get_only);
        assert_eq!(route(&Method::DELETE, "/bytes/5", &LIMITS), get_only);
    }

    #[test]
    fn unknown_paths_are_404() {
        for path in ["/", "/healthz", "/bytes", "/static", "/echo/x"] {
            assert_eq!(get(path), Route::Reject(Rejection::NotFound), "{path}");
        }
    }

    #[test]
    fn static_paths_are_decoded_segments() {
        let expected = StaticPath {
            segments: vec!["css".into(), "a b.css".into()],
            wants_index: false,
        };
        assert_eq!(get("/static/css/a%20b.css"), Route::Static(expected));
        let index = StaticPath {
            segments: vec!["docs".into()],
            wants_index: true,
        };
        assert_eq!(get("/static/docs/"), Route::Static(index));
        let root_index = StaticPath {
            segments: vec![],
            wants_index: true,
        };
        assert_eq!(get("/static/"), Route::Static(root_index));
    }

    #[test]
    fn static_traversal_is_rejected_even_when_encoded() {
        for path in [
            "/static/../secret",
            "/static/a/../../secret",
            "/static/%2e%2e/secret",
            "/static/..%2fsecret",
            "/static/a%5c..%5csecret",
            "/static/./x",
            "/static/a%00b",
        ] {
            assert!(is_bad_request(get(path)), "{path}");
        }
    }

    #[test]
    fn with_a_site_other_get_paths_are_site_files() {
        assert_eq!(site_get("/"), site_path(&[], true));
        assert_eq!(site_get("/index.html"), site_path(&["index.html"], false));
        assert_eq!(
            site_get("/js/app-01.js"),
            site_path(&["js", "app-01.js"], false)
        );
        assert_eq!(site_get("/docs"), site_path(&["docs"], false));
        assert_eq!(site_get("/docs/"), site_path(&["docs"], true));
        assert_eq!(site_get("/a%20b.txt"), site_path(&["a b.txt"], false));
    }

    #[test]
    fn with_a_site_the_synthetic_endpoints_still_win() {
        assert_eq!(site_get("/health"), Route::Health);
        assert_eq!(site_get("/bytes/5"), Route::Bytes(5));
        assert!(matches!(site_get("/static/x"), Route::Static(_)));
        let get_only = Route::Reject(Rejection::MethodNotAllowed { allow: "GET" });
        assert_eq!(route(&Method::POST, "/index.html", &WITH_SITE), get_only);
    }

    #[test]
    fn site_traversal_is_rejected_even_when_encoded() {
        for path in [
            "/../secret",
            "/a/../../secret",
            "/%2e%2e/secret",
            "/..%2fsecret",
            "/a%00b",
        ] {
            assert!(is_bad_request(site_get(path)), "{path}");
        }
        assert_eq!(site_get("//x"), Route::Reject(Rejection::NotFound));
    }
}
