//! A copy of a real documentation site served with `--site`: every link and
//! source of a handful of its pages that points inside the site answers 200.

use std::collections::BTreeSet;

use http::StatusCode;

use crate::common::{connect, PROTOCOLS};
use crate::site::start_site;

/// Pages of Debian's cargo-doc (rustdoc output) to check. Not its
/// `settings.html`: rustdoc links it to a `sidebar-items.js` it never wrote,
/// a 404 for a browser too.
const PAGES: &[&str] = &[
    "/syn/index.html",
    "/syn/struct.File.html",
    "/quote/index.html",
    "/proc_macro2/index.html",
    "/serde_derive/index.html",
    "/syn/enum.Expr.html",
    "/syn/parse/index.html",
];

/// The `href="…"` and `src="…"` values of `html`.
fn links(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    for opener in ["href=\"", "src=\""] {
        for (at, _) in html.match_indices(opener) {
            let rest = &html[at + opener.len()..];
            found.extend(rest.find('"').map(|end| rest[..end].to_string()));
        }
    }
    found
}

/// `link` as an absolute path on the site, resolved against `page`; `None`
/// for links elsewhere (a scheme, `//host`) or to the page itself (`#x`).
fn resolve(page: &str, link: &str) -> Option<String> {
    let link = link.split(['#', '?']).next().unwrap_or("");
    let scheme = link
        .find(':')
        .is_some_and(|colon| !link[..colon].contains('/'));
    if link.is_empty() || scheme || link.starts_with("//") {
        return None;
    }
    let joined = match link.starts_with('/') {
        true => link.to_string(),
        false => format!("{}{link}", &page[..=page.rfind('/').unwrap()]),
    };
    let mut segments: Vec<&str> = Vec::new();
    for segment in joined.split('/').skip(1) {
        match segment {
            ".." => {
                segments.pop();
            }
            "." => {}
            other => segments.push(other),
        }
    }
    Some(format!("/{}", segments.join("/")))
}

#[test]
fn links_resolve_like_a_browser() {
    let page = "/syn/index.html";
    assert_eq!(
        resolve(page, "../rustdoc.css").as_deref(),
        Some("/rustdoc.css")
    );
    assert_eq!(
        resolve(page, "struct.File.html#x").as_deref(),
        Some("/syn/struct.File.html")
    );
    assert_eq!(
        resolve(page, "./a/b.html?q").as_deref(),
        Some("/syn/a/b.html")
    );
    assert_eq!(resolve(page, "/x.js").as_deref(), Some("/x.js"));
    for elsewhere in [
        "https://docs.rs/syn",
        "//cdn/x.js",
        "#top",
        "javascript:void(0)",
    ] {
        assert_eq!(resolve(page, elsewhere), None, "{elsewhere}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_documentation_site_has_no_missing_links() {
    let Some(dir) = h3lab_testenv::doc_site() else {
        return;
    };
    let server = start_site(Some(dir.clone()), None).await;
    let mut targets = BTreeSet::new();
    for page in PAGES {
        let html = std::fs::read_to_string(dir.join(&page[1..])).unwrap();
        targets.extend(links(&html).iter().filter_map(|link| resolve(page, link)));
        targets.insert(page.to_string());
    }
    assert!(targets.len() > 100, "only {} links found", targets.len());
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        let mut missing = Vec::new();
        for target in &targets {
            let reply = client.get(target).await;
            if reply.status != StatusCode::OK {
                missing.push(format!("{target}: {}", reply.status));
            }
            if reply.status == StatusCode::OK && target.ends_with(".js") {
                let content_type = reply.header("content-type");
                assert_eq!(
                    content_type,
                    Some("text/javascript; charset=utf-8"),
                    "{target}"
                );
            }
        }
        assert!(missing.is_empty(), "{proto:?}: {missing:#?}");
        client.close();
    }
}
