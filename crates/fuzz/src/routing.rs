//! The routing target: requests with arbitrary methods, targets (built
//! from the routes' own vocabulary, traversal tricks and stray bytes),
//! headers and bodies, answered by the server's routing and responders over
//! a small site and static root. Checked for every request the HTTP layer
//! would let through:
//!
//! - only the statuses the routes document (no 5xx on a readable tree);
//! - `content-length` is the body's length, `server` is set, `alt-svc` on
//!   TCP only, 405 names the allowed method, 301 adds exactly a slash;
//! - nothing outside the served directories ever leaks (a secret file and
//!   a symlink to it sit right beside them);
//! - each 200 body is what its route promises: the health JSON, the echo,
//!   the byte pattern, the delay, or the file the decoded path names;
//! - the same request gets the same answer.

use std::path::{Path, PathBuf};
use std::time::Duration;

use arbitrary::{Result, Unstructured};
use bytes::Bytes;
use h3lab_results::Proto;
use h3lab_server::fuzzing::{Answer, Responder, ALT_SVC};
use h3lab_server::Limits;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Uri};
use percent_encoding::percent_decode_str;

use crate::input::{pick, token};
use crate::target::Target;

const MAX_BODY: u64 = 4096;
const MAX_RESPONSE: u64 = 64 * 1024;
const SECRET: &str = "SECRET-OUTSIDE-THE-SERVED-DIRECTORIES";

/// Prefixes a request target starts with.
const PREFIXES: &[&str] = &[
    "/health",
    "/echo",
    "/bytes/",
    "/delay/",
    "/static/",
    "/",
    "",
    "//",
    "http://h/",
    "https://h:443/static/",
    "*",
    "/health/",
    "/bytes",
    "/%62ytes/",
];

/// Path segments: the tree's names, numbers, and traversal tricks.
const SEGMENTS: &[&str] = &[
    ".",
    "..",
    "%2e%2e",
    "%2E.",
    "%2f",
    "..%2f..%2fsecret.txt",
    "%5c",
    "%00",
    "%ff",
    "%",
    "%zz",
    "a.txt",
    "docs",
    "index.html",
    "js",
    "app.js",
    "empty",
    "escape",
    "secret.txt",
    "sp%20ace.css",
    "sp ace.css",
    "0",
    "1",
    "12",
    "65536",
    "65537",
    "99999999999999999999",
    "-1",
    "1e3",
    "+5",
    "60000",
    "60001",
    "",
    "~",
    "a%2Fb",
    "\u{e9}",
];

/// The routing target: a served tree and a runtime whose clock only
/// moves when asked, so `/delay/{ms}` costs no real time.
pub struct RoutingTarget {
    _dir: tempfile::TempDir,
    with_site: Responder,
    without_site: Responder,
    root: PathBuf,
    site: PathBuf,
    runtime: tokio::runtime::Runtime,
}

impl RoutingTarget {
    /// Builds the tree: `root/` and `site/` with files whose content is
    /// their own path, and beside them a secret file and symlinks to it.
    pub fn new() -> anyhow::Result<RoutingTarget> {
        let dir = tempfile::tempdir()?;
        let base = dir.path();
        std::fs::write(base.join("secret.txt"), SECRET)?;
        let root = base.join("root");
        let site = base.join("site");
        for (tree, files) in [
            (
                &root,
                &["a.txt", "docs/index.html", "sp ace.css", "empty/.keep"][..],
            ),
            (
                &site,
                &[
                    "index.html",
                    "js/app.js",
                    "docs/index.html",
                    "a.txt",
                    "empty/.keep",
                ][..],
            ),
        ] {
            for file in files {
                let path = tree.join(file);
                std::fs::create_dir_all(path.parent().expect("inside the tree"))?;
                std::fs::write(&path, file)?;
            }
            std::os::unix::fs::symlink(base.join("secret.txt"), tree.join("escape"))?;
        }
        let limits = Limits {
            max_body_bytes: MAX_BODY,
            max_response_bytes: MAX_RESPONSE,
            max_delay: Duration::from_secs(60),
            ..Limits::default()
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()?;
        Ok(RoutingTarget {
            with_site: Responder::new(Some(&root), Some(&site), limits.clone())?,
            without_site: Responder::new(Some(&root), None, limits)?,
            root,
            site,
            _dir: dir,
            runtime,
        })
    }
}

/// A request as the HTTP layer hands it over.
struct Request {
    protocol: Proto,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
}

impl Target for RoutingTarget {
    fn check(&mut self, u: &mut Unstructured) -> Result<()> {
        let Some(request) = arbitrary_request(u)? else {
            return Ok(());
        };
        let site = u.arbitrary::<bool>()?;
        let responder = if site {
            &self.with_site
        } else {
            &self.without_site
        };
        let answer = |request: &Request| {
            self.runtime
                .block_on(responder.answer(
                    request.protocol,
                    &request.method,
                    &request.uri,
                    &request.headers,
                    request.body.clone(),
                ))
                .expect("bodies of a readable tree read")
        };
        let first = answer(&request);
        let second = answer(&request);
        assert_eq!(
            (first.status, &first.body),
            (second.status, &second.body),
            "the same request got different answers"
        );
        let tree = Tree {
            root: &self.root,
            site: site.then_some(self.site.as_path()),
        };
        check_answer(&request, &first, &tree);
        Ok(())
    }
}

/// A request, or `None` when the HTTP layer would refuse its method or
/// target before routing.
fn arbitrary_request(u: &mut Unstructured) -> Result<Option<Request>> {
    // Most requests are GETs, so that the routes' answers, not only their
    // 405s, are checked; the rest try every other method and stray tokens.
    let method = match u.ratio(9, 10)? {
        true if u.ratio(2, 3)? => "GET".to_string(),
        true => pick(
            u,
            &["GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "get"],
        )?
        .to_string(),
        false => token(u)?,
    };
    let target = match u.ratio(9, 10)? {
        true => arbitrary_target(u)?,
        false => token(u)?,
    };
    let (Ok(method), Ok(uri)) = (Method::from_bytes(method.as_bytes()), Uri::try_from(target))
    else {
        return Ok(None);
    };
    let mut headers = HeaderMap::new();
    for _ in 0..u.int_in_range(0..=4)? {
        let name = pick(
            u,
            &["content-length", "content-type", "host", "accept", "x-any"],
        )?;
        let value = match u.ratio(1, 2)? {
            true => pick(
                u,
                &[
                    "0",
                    "10",
                    "4096",
                    "4097",
                    "-1",
                    "99999999999999999999",
                    "text/plain",
                    "",
                ],
            )?
            .to_string(),
            false => token(u)?,
        };
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            headers.append(name, value);
        }
    }
    let body_len = u.int_in_range(0..=MAX_BODY as usize + 100)?;
    let body = Bytes::from(u.bytes(body_len.min(u.len()))?.to_vec());
    let protocol = pick(u, &[Proto::H1, Proto::H2, Proto::H3])?;
    Ok(Some(Request {
        protocol,
        method,
        uri,
        headers,
        body,
    }))
}

fn arbitrary_target(u: &mut Unstructured) -> Result<String> {
    let mut target = pick(u, PREFIXES)?.to_string();
    let count = u.int_in_range(0..=4)?;
    for index in 0..count {
        if index > 0 {
            target.push('/');
        }
        match u.ratio(4, 5)? {
            true => target.push_str(pick(u, SEGMENTS)?),
            false => target.push_str(&token(u)?),
        }
    }
    if u.ratio(1, 4)? {
        target.push('/');
    }
    if u.ratio(1, 4)? {
        target.push_str(pick(u, &["?", "?a=1", "?x=%2e%2e", "?/../"])?);
    }
    Ok(target)
}

/// The directories behind the responder that answered.
struct Tree<'a> {
    root: &'a Path,
    site: Option<&'a Path>,
}

fn check_answer(request: &Request, answer: &Answer, tree: &Tree) {
    let status = answer.status.as_u16();
    let context = format!("{} {} -> {status}", request.method, request.uri);
    assert!(
        [200, 301, 400, 404, 405, 413].contains(&status),
        "{context}"
    );
    let header = |name: &str| {
        answer
            .headers
            .get(name)
            .map(|v| v.to_str().expect("ASCII header"))
    };
    let length = header("content-length").and_then(|v| v.parse::<usize>().ok());
    if request.method == Method::HEAD {
        // The headers of the GET, without its body (RFC 9110 section 9.3.2).
        assert!(answer.body.is_empty(), "{context}: a body");
        assert!(length.is_some(), "{context}: content-length");
    } else {
        assert_eq!(length, Some(answer.body.len()), "{context}: content-length");
    }
    assert!(
        header("server").is_some_and(|s| s.starts_with("h3lab/")),
        "{context}: server"
    );
    let expected_alt_svc = (request.protocol != Proto::H3).then_some(ALT_SVC);
    assert_eq!(header("alt-svc"), expected_alt_svc, "{context}: alt-svc");
    let leaked = answer
        .body
        .windows(SECRET.len())
        .any(|w| w == SECRET.as_bytes());
    assert!(
        !leaked,
        "{context}: served a file outside the served directories"
    );
    match status {
        405 => {
            let allow = header("allow").unwrap_or_default();
            assert!(
                ["GET", "POST"].contains(&allow) && request.method.as_str() != allow,
                "{context}: allow {allow}"
            );
        }
        301 => check_redirect(request, answer, tree, &context),
        413 => assert!(
            request.uri.path() == "/echo" && request.method == Method::POST,
            "{context}"
        ),
        200 => check_ok_body(request, answer, tree, &context),
        _ => {}
    }
}

/// A 301 adds a slash to a site directory's path, keeping the query.
fn check_redirect(request: &Request, answer: &Answer, tree: &Tree, context: &str) {
    let site = tree.site.expect("only the site redirects");
    let uri = &request.uri;
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    let location = answer
        .headers
        .get("location")
        .map(|v| v.as_bytes().to_vec());
    assert_eq!(
        location,
        Some(format!("{}/{query}", uri.path()).into_bytes()),
        "{context}"
    );
    let directory = site.join(decoded(uri.path().trim_start_matches('/')));
    assert!(
        directory.is_dir(),
        "{context}: redirected to a non-directory"
    );
}

/// A 200 body is exactly what its route promises.
fn check_ok_body(request: &Request, answer: &Answer, tree: &Tree, context: &str) {
    let path = request.uri.path();
    let body = &answer.body;
    if path == "/health" {
        let json: serde_json::Value = serde_json::from_slice(body).expect("health is JSON");
        assert_eq!(json["protocol"], request.protocol.name(), "{context}");
    } else if path == "/echo" {
        assert_eq!(body, &request.body, "{context}: echo");
    } else if let Some(count) = path.strip_prefix("/bytes/") {
        let n: u64 = count.parse().expect("a served size is a number");
        assert!(
            n <= MAX_RESPONSE && body.len() as u64 == n,
            "{context}: {} bytes",
            body.len()
        );
        assert!(
            body.iter()
                .enumerate()
                .all(|(i, &b)| usize::from(b) == i % 251),
            "{context}: pattern"
        );
    } else if let Some(ms) = path.strip_prefix("/delay/") {
        let ms: u64 = ms.parse().expect("a served delay is a number");
        assert_eq!(
            body,
            format!("{{\"delay_ms\":{ms}}}\n").as_bytes(),
            "{context}"
        );
    } else if let Some(rest) = path.strip_prefix("/static/") {
        check_file_body(tree.root, rest, body, context);
    } else {
        let site = tree.site.expect("only the site serves other paths");
        check_file_body(site, &path[1..], body, context);
    }
}

/// The body is the file the decoded path names (its `index.html` for a
/// directory); every file here holds its own path.
fn check_file_body(dir: &Path, rest: &str, body: &[u8], context: &str) {
    let named = decoded(rest);
    let relative = match dir.join(&named).is_dir() {
        true => named.join("index.html"),
        false => named,
    };
    let expected = relative
        .to_str()
        .expect("UTF-8 names")
        .trim_start_matches('/');
    assert_eq!(body, expected.as_bytes(), "{context}: wrong file");
}

fn decoded(path: &str) -> PathBuf {
    path.split('/')
        .filter(|segment| !segment.is_empty())
        .map(|segment| percent_decode_str(segment).decode_utf8_lossy().into_owned())
        .collect()
}
