//! A browser's request headers, so that what header compression saves
//! shows on the wire. Without them a load request carries a few dozen
//! bytes of headers, which no table makes cheaper.
//!
//! The names, values and order are those Chromium 156 sent for a
//! same-origin `fetch()` on this project's test machine (recorded from its
//! net log, docs/costs.md), with "HeadlessChrome" read as "Chrome". Added
//! to them: a cookie of about 1 kB, of the kinds a shop's page carries
//! (analytics, consent, session, cart), and two headers that change on
//! every request, as a page's monitoring script adds them: a W3C
//! `traceparent` and an `x-request-id`.

use http::header::{HeaderMap, HeaderName, HeaderValue};

/// The recorded headers, in Chromium's order, without `referer` (which
/// names the target) and without the cookie.
const RECORDED: [(&str, &str); 11] = [
    ("sec-ch-ua-platform", "\"Linux\""),
    (
        "user-agent",
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
    ),
    ("sec-ch-ua", "\"Not:A-Brand\";v=\"8\", \"Chromium\";v=\"156\""),
    ("sec-ch-ua-mobile", "?0"),
    ("accept", "*/*"),
    ("sec-fetch-site", "same-origin"),
    ("sec-fetch-mode", "cors"),
    ("sec-fetch-dest", "empty"),
    ("accept-encoding", "gzip, deflate, br, zstd"),
    ("accept-language", "en-US,en;q=0.9"),
    ("priority", "u=1, i"),
];

/// 977 bytes of cookies, the same on every request.
const COOKIE: &str = concat!(
    "_ga=GA1.1.1480672531.1764331200; ",
    "_ga_7K3QZP9X2M=GS2.1.s1764331200$o4$g1$t1764332417$j41$l0$h0; ",
    "_gid=GA1.2.871502246.1764331200; ",
    "_fbp=fb.1.1764331200917.428601734; ",
    "_gcl_au=1.1.1918264055.1764331201; ",
    "_hjSessionUser_3180472=eyJpZCI6IjVhN2QzYjE0LWM5ZTItNTg0Ni1hMjBmLTZkNDFlOGI3YzAyOSIsImNyZWF0ZWQiOjE3NjQzMzEyMDA1MjB9; ",
    "OptanonAlertBoxClosed=2026-11-21T09:14:05.118Z; ",
    "OptanonConsent=isGpcEnabled=0&datestamp=Sat+Nov+28+2026+12%3A20%3A17+GMT%2B0000&version=202409.1.0",
    "&browserGpcFlag=0&isIABGlobal=false&hosts=&consentId=4f1c2a9e-7b3d-4e21-9a6f-0c8d5e2b7a14",
    "&interactionCount=1&isAnonUser=1&landingPath=NotLandingPage&groups=C0001%3A1%2CC0002%3A1%2CC0003%3A1%2CC0004%3A0; ",
    "cart_id=c8e41f27-93b5-4d0a-b6f2-5a17e9c3d084; ",
    "csrftoken=Xq8vN2kR7tLw4ZpB9mYc3HsJ6fGdA1eU; ",
    "session=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI4NDE5MjciLCJsb2NhbGUiOiJlbi1VUyIsImV4cCI6MTc2NDkzNjAxN30",
    ".k3Jb7wQy2nVt8ZsLxR5cP1mHf9dGa4uE6oTi0BjKlNw; ",
    "recently_viewed=1043%2C2217%2C987%2C5530%2C312%2C77; ",
    "currency=USD",
);

/// The headers every request carries: the recorded ones, then `referer`
/// (the target's origin) and the cookie. A header in `own` (a user's `-H`)
/// replaces the browser's of that name.
pub(crate) fn fixed(origin: &str, own: &HeaderMap) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let referer = format!("{origin}/");
    let all = RECORDED
        .iter()
        .map(|&(name, value)| (name, value))
        .chain([("referer", referer.as_str()), ("cookie", COOKIE)]);
    for (name, value) in all {
        let name = HeaderName::from_static(name);
        if !own.contains_key(&name) {
            let value = HeaderValue::from_str(value).expect("recorded values are valid");
            headers.insert(name, value);
        }
    }
    for (name, value) in own {
        headers.append(name, value.clone());
    }
    headers
}

/// The headers that change per request: the `n`th request's trace and
/// request ids, derived from `n` so that runs repeat.
pub(crate) fn varying(n: u64, headers: &mut HeaderMap) {
    let [a, b, c] = [1, 2, 3].map(|k| splitmix64(n.wrapping_mul(3).wrapping_add(k)));
    let traceparent = format!("00-{a:016x}{b:016x}-{c:016x}-01");
    let request_id = format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        c >> 32,
        (c >> 16) & 0xffff,
        b & 0xfff,
        0x8000 | (a & 0x3fff),
        a >> 16 & 0xffff_ffff_ffff,
    );
    for (name, value) in [("traceparent", traceparent), ("x-request-id", request_id)] {
        let value = HeaderValue::from_str(&value).expect("hex digits are a valid header value");
        headers.insert(HeaderName::from_static(name), value);
    }
}

/// SplitMix64's output function: well-spread bits from a counter.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_is_a_browsers_with_a_kilobyte_cookie_and_the_users_own_headers_win() {
        let mut own = HeaderMap::new();
        own.insert("accept", HeaderValue::from_static("application/json"));
        let headers = fixed("https://shop.test", &own);
        assert_eq!(headers["cookie"].len(), 977);
        assert_eq!(headers["referer"], "https://shop.test/");
        assert_eq!(headers.get_all("accept").iter().count(), 1);
        assert_eq!(headers["accept"], "application/json");
        assert!(headers["user-agent"]
            .to_str()
            .unwrap()
            .contains("Chrome/156"));
        let names: Vec<&str> = headers.keys().map(|name| name.as_str()).collect();
        assert_eq!(
            names[..2],
            ["sec-ch-ua-platform", "user-agent"],
            "Chromium's order"
        );
    }

    /// scripts/qpack-tables measures the same set with nghttp2 and nghttp3.
    #[test]
    fn the_qpack_tables_script_sends_this_very_set() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scripts/qpack-tables/headers.txt"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let script: Vec<&str> = text.lines().filter(|line| !line.starts_with('#')).collect();
        let ours = fixed("https://localhost:PORT", &HeaderMap::new());
        let ours: Vec<String> = ours
            .iter()
            .map(|(name, value)| format!("{name}: {}", value.to_str().unwrap()))
            .collect();
        assert_eq!(script, ours);
    }

    #[test]
    fn the_varying_headers_change_per_request_and_repeat_per_run() {
        let headers = |n| {
            let mut headers = HeaderMap::new();
            varying(n, &mut headers);
            headers
        };
        assert_eq!(headers(7), headers(7));
        assert_ne!(headers(7)["traceparent"], headers(8)["traceparent"]);
        assert_ne!(headers(7)["x-request-id"], headers(8)["x-request-id"]);
        let traceparent = headers(1)["traceparent"].to_str().unwrap().to_owned();
        let parts: Vec<&str> = traceparent.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [2, 32, 16, 2]
        );
        let request_id = headers(1)["x-request-id"].to_str().unwrap().to_owned();
        let lens: Vec<usize> = request_id.split('-').map(str::len).collect();
        assert_eq!(lens, [8, 4, 4, 4, 12]);
    }
}
