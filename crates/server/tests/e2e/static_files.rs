//! `/static/...` serves files under the root with types and no-store, and nothing outside it.

use h3lab_server::Limits;
use http::StatusCode;

use crate::common::{assert_refused, connect, site_with_secret, start, ScratchDir, PROTOCOLS};

const SECRET: &str = "outside the static root";

/// A root in `scratch/site`, a secret beside it and a symlink out of it.
fn site() -> ScratchDir {
    let files: [(&str, &[u8]); 4] = [
        ("index.html", b"<h1>home</h1>"),
        ("css/site.css", b"body { margin: 0 }"),
        ("docs/index.html", b"<h1>docs</h1>"),
        ("a b.txt", b"spaced"),
    ];
    site_with_secret("static", &files, SECRET)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_have_content_types_and_no_store() {
    let scratch = site();
    let server = start(Some(scratch.0.join("site")), Limits::default()).await;
    let cases = [
        ("/static/", "text/html", "<h1>home</h1>"),
        ("/static/index.html", "text/html", "<h1>home</h1>"),
        ("/static/css/site.css", "text/css", "body { margin: 0 }"),
        ("/static/docs", "text/html", "<h1>docs</h1>"),
        ("/static/a%20b.txt", "text/plain", "spaced"),
    ];
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        for (path, content_type, body) in cases {
            let reply = client.get(path).await;
            assert_eq!(reply.status, StatusCode::OK, "{proto:?} {path}");
            assert_eq!(
                reply.header("content-type"),
                Some(content_type),
                "{proto:?} {path}"
            );
            assert_eq!(
                reply.header("cache-control"),
                Some("no-store"),
                "{proto:?} {path}"
            );
            assert_eq!(reply.body, body.as_bytes(), "{proto:?} {path}");
        }
        client.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traversal_and_symlink_escapes_are_refused() {
    let scratch = site();
    let server = start(Some(scratch.0.join("site")), Limits::default()).await;
    let cases = [
        ("/static/../secret.txt", StatusCode::BAD_REQUEST),
        ("/static/css/../../secret.txt", StatusCode::BAD_REQUEST),
        ("/static/%2e%2e/secret.txt", StatusCode::BAD_REQUEST),
        ("/static/..%2fsecret.txt", StatusCode::BAD_REQUEST),
        ("/static/escape.txt", StatusCode::NOT_FOUND),
        ("/static/missing.txt", StatusCode::NOT_FOUND),
    ];
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        assert_refused(&mut client, proto, &cases, SECRET).await;
        client.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_root_static_is_404() {
    let server = start(None, Limits::default()).await;
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        assert_eq!(
            client.get("/static/index.html").await.status,
            StatusCode::NOT_FOUND
        );
        client.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_root_is_a_clear_start_error() {
    let config =
        crate::common::test_config(Some("/nonexistent/h3lab-root".into()), Limits::default());
    let err = h3lab_server::start(config).await.err().unwrap();
    assert!(format!("{err:#}").contains("--root"), "{err:#}");
}
