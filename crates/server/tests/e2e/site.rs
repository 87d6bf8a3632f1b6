//! `--site DIR` serves a directory at `/` beside the synthetic endpoints:
//! types with charsets, `index.html` for directories, `no-store` on every
//! answer, and nothing outside the directory.

use std::path::PathBuf;

use h3lab_server::{Limits, RunningServer, ServerConfig};
use http::StatusCode;

use crate::common::{
    assert_refused, connect, site_with_secret, test_config, Reply, ScratchDir, PROTOCOLS,
};

const SECRET: &str = "outside the site";

/// A site in `scratch/site`, a secret beside it and a symlink out of it.
fn site() -> ScratchDir {
    let files: [(&str, &[u8]); 8] = [
        ("index.html", b"<h1>home</h1>"),
        ("docs/index.html", b"<h1>docs</h1>"),
        ("js/app.js", b"export {};"),
        ("js/lib.mjs", b"export const x = 1;"),
        ("css/site.css", b"body { margin: 0 }"),
        ("fonts/body.woff2", b"wOF2...."),
        ("img/hero.png", b"\x89PNG...."),
        ("data.json", b"{}"),
    ];
    site_with_secret("site", &files, SECRET)
}

pub async fn start_site(site: Option<PathBuf>, root: Option<PathBuf>) -> RunningServer {
    let config = ServerConfig {
        site,
        ..test_config(root, Limits::default())
    };
    h3lab_server::start(config).await.unwrap()
}

fn assert_no_store(reply: &Reply, context: &str) {
    assert_eq!(reply.header("cache-control"), Some("no-store"), "{context}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn site_files_have_types_with_charsets_and_no_store() {
    let scratch = site();
    let server = start_site(Some(scratch.0.join("site")), None).await;
    let cases = [
        ("/", "text/html; charset=utf-8", "<h1>home</h1>"),
        ("/index.html", "text/html; charset=utf-8", "<h1>home</h1>"),
        ("/docs/", "text/html; charset=utf-8", "<h1>docs</h1>"),
        ("/js/app.js", "text/javascript; charset=utf-8", "export {};"),
        (
            "/js/lib.mjs",
            "text/javascript; charset=utf-8",
            "export const x = 1;",
        ),
        (
            "/css/site.css",
            "text/css; charset=utf-8",
            "body { margin: 0 }",
        ),
        ("/fonts/body.woff2", "font/woff2", "wOF2...."),
        ("/img/hero.png", "image/png", "\u{fffd}PNG...."),
        ("/data.json", "application/json", "{}"),
    ];
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        for (path, content_type, body) in cases {
            let context = format!("{proto:?} {path}");
            let reply = client.get(path).await;
            assert_eq!(reply.status, StatusCode::OK, "{context}");
            assert_eq!(
                reply.header("content-type"),
                Some(content_type),
                "{context}"
            );
            assert_no_store(&reply, &context);
            assert_eq!(String::from_utf8_lossy(&reply.body), body, "{context}");
        }
        client.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_without_its_slash_is_redirected() {
    let scratch = site();
    let server = start_site(Some(scratch.0.join("site")), None).await;
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        for (path, location) in [("/docs", "/docs/"), ("/docs?tab=2", "/docs/?tab=2")] {
            let reply = client.get(path).await;
            assert_eq!(
                reply.status,
                StatusCode::MOVED_PERMANENTLY,
                "{proto:?} {path}"
            );
            assert_eq!(reply.header("location"), Some(location), "{proto:?} {path}");
            assert_no_store(&reply, path);
        }
        client.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_files_are_404_and_traversal_is_refused() {
    let scratch = site();
    let server = start_site(Some(scratch.0.join("site")), None).await;
    let cases = [
        ("/missing.html", StatusCode::NOT_FOUND),
        ("/js/", StatusCode::NOT_FOUND),
        ("/escape.txt", StatusCode::NOT_FOUND),
        ("/../secret.txt", StatusCode::BAD_REQUEST),
        ("/js/../../secret.txt", StatusCode::BAD_REQUEST),
        ("/%2e%2e/secret.txt", StatusCode::BAD_REQUEST),
        ("/..%2fsecret.txt", StatusCode::BAD_REQUEST),
    ];
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        assert_refused(&mut client, proto, &cases, SECRET).await;
        let missing = client.get("/missing.html").await;
        assert_no_store(&missing, "a 404 of the site");
        client.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_synthetic_endpoints_and_static_root_keep_working() {
    let scratch = site();
    let static_root = scratch.0.join("site/docs");
    let server = start_site(Some(scratch.0.join("site")), Some(static_root)).await;
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        let health = client.get("/health").await;
        assert_eq!(health.status, StatusCode::OK, "{proto:?}");
        assert!(String::from_utf8_lossy(&health.body).contains("\"status\":\"ok\""));
        assert_eq!(client.get("/bytes/10").await.body.len(), 10, "{proto:?}");
        let under_static = client.get("/static/index.html").await;
        assert_eq!(under_static.body, "<h1>docs</h1>".as_bytes(), "{proto:?}");
        let post = client
            .send(
                "POST",
                "/index.html",
                Default::default(),
                crate::common::full("x".into()),
            )
            .await;
        assert_eq!(post.status, StatusCode::METHOD_NOT_ALLOWED, "{proto:?}");
        client.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_site_other_paths_stay_404() {
    let server = start_site(None, None).await;
    let mut client = connect(&server, crate::common::Proto::H2).await;
    for path in ["/", "/index.html"] {
        assert_eq!(
            client.get(path).await.status,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_site_is_a_clear_start_error() {
    let config = ServerConfig {
        site: Some("/nonexistent/h3lab-site".into()),
        ..test_config(None, Limits::default())
    };
    let err = h3lab_server::start(config).await.err().unwrap();
    let message = format!("{err:#}");
    assert!(
        message.contains("site directory") && message.contains("--site"),
        "{message}"
    );
}
