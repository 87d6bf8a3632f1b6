//! A replay site answers a request the page made more than once with its
//! recorded responses in order, the last one beyond them, and starts over
//! when the page itself is asked for again: over h1, h2 and h3.

use std::path::Path;

use bytes::Bytes;
use h3lab_site::har::{import, ImportOptions};
use h3lab_site::replay::Think;
use http::{HeaderMap, StatusCode};

use crate::common::{connect, full, Client, ScratchDir, PROTOCOLS};
use crate::site::start_site;

/// The chrome-har fixture of a shop page, its host made `localhost` (the
/// host these clients name).
fn import_shop(scratch: &ScratchDir) -> std::path::PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../site/tests/fixtures/har/repeated-requests.har");
    let har = std::fs::read_to_string(fixture).unwrap();
    let har_path = scratch.0.join("shop.har");
    std::fs::write(&har_path, har.replace("shop.example.test", "localhost")).unwrap();
    let site = scratch.0.join("site");
    let options = ImportOptions {
        think: Think::None,
        page: None,
        keep_first_duplicate: false,
        upgrade_cleartext: false,
    };
    import(&har_path, &site, &options).unwrap();
    site
}

async fn cart(client: &mut Client) -> String {
    let reply = client.get("/cart.json?t=1").await;
    assert_eq!(reply.status, StatusCode::OK);
    String::from_utf8(reply.body.to_vec()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_request_gets_its_recorded_responses_in_order_over_each_protocol() {
    let scratch = ScratchDir::new("replay-repeats");
    let server = start_site(Some(import_shop(&scratch)), None).await;
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        assert_eq!(client.get("/").await.status, StatusCode::OK, "{proto}");
        let head = client
            .send(
                "HEAD",
                "/cart.json?t=1",
                HeaderMap::new(),
                full(Bytes::new()),
            )
            .await;
        assert_eq!(head.status, StatusCode::OK, "{proto}");
        let mut answers = Vec::new();
        for _ in 0..3 {
            answers.push(cart(&mut client).await);
        }
        // HEAD took no turn; the third request is beyond the recorded two.
        assert_eq!(
            answers,
            [r#"{"items":0}"#, r#"{"items":1}"#, r#"{"items":1}"#],
            "{proto}"
        );
        // A new load of the page replays from the top.
        assert_eq!(client.get("/").await.status, StatusCode::OK, "{proto}");
        assert_eq!(cart(&mut client).await, r#"{"items":0}"#, "{proto}");
    }
}
