//! `/static/...` serves files under the root with types and no-store, and nothing outside it.

use h3lab_server::Limits;
use http::StatusCode;

use crate::common::{connect, start, ScratchDir, PROTOCOLS};

const SECRET: &str = "outside the static root";

fn site() -> ScratchDir {
    let scratch = ScratchDir::new("static");
    let root = scratch.0.join("site");
    std::fs::create_dir_all(root.join("css")).unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(root.join("index.html"), "<h1>home</h1>").unwrap();
    std::fs::write(root.join("css/site.css"), "body { margin: 0 }").unwrap();
    std::fs::write(root.join("docs/index.html"), "<h1>docs</h1>").unwrap();
    std::fs::write(root.join("a b.txt"), "spaced").unwrap();
    std::fs::write(scratch.0.join("secret.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink(scratch.0.join("secret.txt"), root.join("escape.txt")).unwrap();
    scratch
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
        for (path, status) in cases {
            let reply = client.get(path).await;
            assert_eq!(reply.status, status, "{proto:?} {path}");
            let body = String::from_utf8_lossy(&reply.body);
            assert!(!body.contains(SECRET), "{proto:?} {path} leaked the file");
        }
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
