//! Tests of the page as rendered: what it shows, that it escapes user
//! text and that it needs no network. What the plots are drawn from is
//! tested in `page_data`.

use super::*;
use crate::fixture;

/// The page with the bodies of its `<script>` elements removed.
fn markup_outside_scripts(page: &str) -> String {
    let mut rest = page;
    let mut outside = String::new();
    while let Some(start) = rest.find("<script") {
        let open_end = start + rest[start..].find('>').unwrap() + 1;
        outside.push_str(&rest[..open_end]);
        let close = open_end + rest[open_end..].find("</script>").unwrap();
        rest = &rest[close..];
        outside.push_str("</script>");
        rest = &rest["</script>".len()..];
    }
    outside.push_str(rest);
    outside
}

fn plot_data(page: &str) -> serde_json::Value {
    let marker = r#"<script type="application/json" id="h3lab-plot-data">"#;
    let start = page.find(marker).unwrap() + marker.len();
    let end = start + page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..end]).unwrap()
}

#[test]
fn link_statistics_show_the_loss_each_direction_saw() {
    let mut results = fixture::results();
    assert!(
        !render_html(&results).contains("Emulated link"),
        "no section without link stats"
    );
    results.cells[0].link = Some(serde_json::json!({
        "seed": 7,
        "down": {"packets_in": 1000, "packets_out": 970, "dropped_loss": 20, "dropped_queue": 10,
                 "queue_delay": {"p99_ms": 3.5}},
        "up": {"packets_in": 400, "packets_out": 398, "dropped_loss": 2, "dropped_queue": 0},
    }));
    let page = render_html(&results);
    assert!(page.contains("Emulated link"));
    assert!(page.contains("2.00 %"), "20 of 1000 down packets lost");
    assert!(page.contains("0.50 %"), "2 of 400 up packets lost");
    assert!(page.contains("3.50"), "queue delay p99");
}

#[test]
fn vendored_plotly_can_be_inlined() {
    assert!(!PLOTLY_JS.to_ascii_lowercase().contains("</script"));
    assert!(!REPORT_JS.to_ascii_lowercase().contains("</script"));
}

/// What is in the data is checked in `page_data`; here, that the page
/// carries it and has a place for every plot.
#[test]
fn embeds_plot_data_for_every_condition() {
    let results = fixture::results();
    let page = render_html(&results);
    let data = plot_data(&page);
    let conditions = conditions(&results, &summarize(&results));
    let json = plot_data_json(&protocol_colours(&results), &conditions);
    assert_eq!(
        data,
        serde_json::from_str::<serde_json::Value>(&json).unwrap()
    );

    let violins = data["violins"].as_array().unwrap();
    let cdfs = data["cdfs"].as_array().unwrap();
    assert_eq!((violins.len(), cdfs.len()), (3, 1));
    for plot in violins.iter().chain(cdfs) {
        let id = plot["id"].as_str().unwrap();
        assert!(
            page.contains(&format!(r#"<div class="plot" id="{id}">"#)),
            "no div for {id}"
        );
    }
}

#[test]
fn loads_nothing_from_the_network() {
    let page = render_html(&fixture::results());
    let markup = markup_outside_scripts(&page);
    assert_eq!(markup.matches("<script").count(), 3);
    for attribute in ["src=", "href="] {
        assert!(
            !markup.contains(attribute),
            "{attribute} found in the markup"
        );
    }
    assert!(!markup.contains("http://") && !markup.contains("https://"));
    assert!(page.contains("Plotly.newPlot"));
}

#[test]
fn condition_without_success_gets_no_empty_plot() {
    let mut results = fixture::results();
    for record in results.cells.iter_mut().filter(|r| r.profile == "cellular") {
        record.outcome = h3lab_results::bench::Outcome::Failed {
            error: "no route".into(),
        };
    }
    let page = render_html(&results);
    assert!(page.contains("No successful repetition in this condition."));
    // 9 failed repetitions in 3 cells: one row per cell, shown unfolded.
    assert_eq!(page.matches(">0, 1 and 2<").count(), 3);
    assert!(page.contains("<details open><summary>"));
}

#[test]
fn user_text_is_escaped() {
    let page = render_html(&fixture::results());
    assert!(page.contains("Synthetic run for tests &lt;b&gt;not markup&lt;/b&gt;"));
    // The caveat shows (its direction differs) but cannot close a script.
    assert!(page.contains("ttfb caveat &lt;/script&gt;"));
    assert!(!page.contains("<script>alert(1)"));
}

#[test]
fn shows_status_claims_and_environment() {
    let mut results = fixture::results();
    results.interrupted = true;
    let page = render_html(&results);
    assert!(page.contains("Interrupted."));
    assert!(page.contains("connection refused"));
    assert!(page.contains("direction agrees"));
    assert!(page.contains("direction DIFFERS"));
    assert!(
        !page.contains("rps caveat"),
        "the caveat shows only when the direction differs"
    );
    assert!(page.contains("net.core.rmem_max"));
    assert!(page.contains("+19.0 % better"));
    assert!(page.contains(r#"class="proto" style="--proto:#0072b2""#));
}
