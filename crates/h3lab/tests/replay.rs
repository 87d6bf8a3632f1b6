//! A captured page replayed through an emulated path: `h3lab site
//! from-har` on a Chrome HAR of three origins, `h3lab net run
//! --server-addresses 3` giving the server an address per origin, `h3lab
//! serve` on all of them, and `h3lab page --replay` over h1, h2 and h3 with
//! the built-in loader and over h3 with Chromium. Needs root.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use common::EXE;
use serde_json::Value;

fn chrome_fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../site/tests/fixtures/har/chrome.har")
}

#[test]
fn a_three_origin_har_replays_through_the_emulated_path_with_both_loaders() {
    if !h3lab_testenv::root() {
        return;
    }
    let Some(chromium) = h3lab_testenv::chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    let import = Command::new(EXE)
        .args(["site", "from-har"])
        .arg(chrome_fixture())
        .arg("--out")
        .arg(&site)
        .output()
        .unwrap();
    assert!(
        import.status.success(),
        "{}",
        String::from_utf8_lossy(&import.stderr)
    );
    let replay: Value =
        serde_json::from_str(&std::fs::read_to_string(site.join("replay.json")).unwrap()).unwrap();

    let file = |name: &str| dir.path().join(name).display().to_string();
    let server = format!(
        "exec {EXE} serve --site {site} --listen 0.0.0.0:443 --write-cert {cert} > {banner}",
        site = site.display(),
        cert = file("cert.pem"),
        banner = file("banner"),
    );
    let page = |loader: &str, proto: &str| {
        format!(
            "{EXE} page https://www.example.test/ --replay {site} --browser {loader} --proto {proto} \
             -n 1 -q --ca {cert} --json {json} || exit 1",
            site = site.display(),
            cert = file("cert.pem"),
            json = file(&format!("{loader}-{proto}.json")),
        )
    };
    let client = format!(
        "i=0; until grep -q '^listening' {banner} 2>/dev/null; do \
           i=$((i+1)); [ $i -gt 400 ] && {{ echo 'the server never listened' >&2; exit 97; }}; \
           sleep 0.025; done
         {h1}\n{h2}\n{h3}\n{chromium}",
        banner = file("banner"),
        h1 = page("builtin", "h1"),
        h2 = page("builtin", "h2"),
        h3 = page("builtin", "h3"),
        chromium = page("chromium", "h3")
            .replace(" -q ", &format!(" -q --chromium {} ", chromium.display())),
    );
    let output = Command::new(EXE)
        .args([
            "net",
            "run",
            "--profile",
            "broadband",
            "--server-addresses",
            "3",
        ])
        .args(["--server-cmd", &server, "--", "sh", "-c", &client])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "h3lab net run failed: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );

    let responses = replay["responses"].as_array().unwrap();
    for (loader, proto) in [
        ("builtin", "h1"),
        ("builtin", "h2"),
        ("builtin", "h3"),
        ("chromium", "h3"),
    ] {
        let report: Value = serde_json::from_str(
            &std::fs::read_to_string(file(&format!("{loader}-{proto}.json"))).unwrap(),
        )
        .unwrap();
        let resources = report["loads"][0]["resources"].as_array().unwrap();
        let by_url: BTreeMap<&str, &Value> = resources
            .iter()
            .map(|r| (r["url"].as_str().unwrap(), r))
            .collect();
        assert_eq!(
            by_url.len(),
            responses.len(),
            "{loader} {proto}: {:?}",
            by_url.keys()
        );
        let mut connections: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
        for recorded in responses {
            let row = by_url[recorded["url"].as_str().unwrap()];
            let status = row["status"].as_u64().unwrap();
            // Chromium may block a recorded 404 page for an image (Opaque
            // Response Blocking) before DevTools sees its status.
            let blocked = loader == "chromium" && status == 0;
            if !blocked {
                assert_eq!(
                    status,
                    recorded["status"].as_u64().unwrap(),
                    "{loader} {proto}"
                );
            }
            if loader == "builtin" {
                assert_eq!(row["bytes"], recorded["body_bytes"], "{loader} {proto}");
            }
            let url = row["url"].as_str().unwrap();
            let host = url
                .trim_start_matches("https://")
                .split('/')
                .next()
                .unwrap();
            if let Some(id) = row["connection"].as_u64() {
                connections.entry(host.into()).or_default().insert(id);
            }
        }
        for (host, ids) in &connections {
            match proto {
                "h1" => assert!(
                    (1..=6).contains(&ids.len()),
                    "{loader} {proto} {host}: {ids:?}"
                ),
                _ => assert_eq!(ids.len(), 1, "{loader} {proto} {host}: {ids:?}"),
            }
        }
        assert_eq!(connections.len(), 3, "{loader} {proto}: {connections:?}");
    }
}
