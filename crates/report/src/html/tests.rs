//! Tests of the page as rendered: what it shows, that it escapes user
//! text and that it needs no network. What the plots are drawn from is
//! tested in `page_data`.

use super::*;
use crate::fixture;
use h3lab_results::bench::{HeaderBlocks, WireCost};
use h3lab_results::{Proto, WorkloadKind};

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
    let mut link = fixture::link((970, 0), (398, 0));
    link.seed = 7;
    (
        link.down.packets_in,
        link.down.dropped_loss,
        link.down.dropped_queue,
    ) = (1000, 20, 10);
    link.down.queue_delay.p99_ms = 3.5;
    (link.up.packets_in, link.up.dropped_loss) = (400, 2);
    results.cells[0].link = Some(link);
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
    let summaries = summarize(&results);
    let pages = page_workloads(&results, &summaries);
    let json = plot_data_json(
        &protocol_colours(&results),
        &conditions,
        crate::page_loads::page_violins(&pages),
        &[],
    );
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
    // 15 failed repetitions in 3 cells: one row per cell, folded as more
    // than FAILURES_SHOWN_OPEN; the fixture's one failure shows unfolded.
    assert_eq!(page.matches(">0, 1, 2, 3 and 4<").count(), 3);
    assert!(page.contains("<details><summary>Failed repetitions"));
    assert!(!page.contains("<details open><summary>Failed repetitions"));
    let one_failure = render_html(&fixture::results());
    assert!(one_failure.contains("<details open><summary>Failed repetitions"));
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
    // h3 [250, 240, 260, 245, 255] against h2 [200, 210, 220, 205, 215]:
    // from 240 / 215 to 260 / 205, the third smallest and largest ratios;
    // the larger half-width, 26.8 − 19.0, is what the run detects.
    assert!(page.contains(
        r#"<td class="verdict better">+19.0 % [+11.6, +26.8] better (detects ±7.8 %)</td>"#
    ));
    assert!(page.contains(r#"class="proto" style="--proto:#0072b2""#));
}

#[test]
fn differences_without_a_clear_call_are_not_coloured() {
    let page = render_html(&fixture::with_h3_near_h2());
    // h3 [215, 205, 225, 210, 220] against h2 [200, 210, 220, 205, 215]:
    // from 210 / 220 to 225 / 205, the third smallest and largest ratios.
    assert!(page.contains(
        r#"<td class="verdict muted">+2.4 % [-4.5, +9.8] no clear difference (detects ±7.4 %)</td>"#
    ));
    // Page cells: 20 loads, but one repetition a side.
    let page = render_html(&fixture::with_pages());
    assert!(page.contains(
        r#"<td class="verdict muted">-24.7 % (too few repetitions: 1 and 1 repetitions, a call needs 4 each)</td>"#
    ));
}

/// The markup between `start` and the next `end` after it.
fn between<'a>(page: &'a str, start: &str, end: &str) -> &'a str {
    let from = page
        .find(start)
        .unwrap_or_else(|| panic!("no {start} in the page"));
    let to = from + page[from..].find(end).unwrap();
    &page[from..to]
}

#[test]
fn page_loads_get_a_violin_per_profile_each_on_its_own_axis() {
    let results = fixture::with_pages();
    let page = render_html(&results);
    let data = plot_data(&page);
    for (id, profile) in [
        ("page-violin-0-0", "broadband"),
        ("page-violin-0-1", "cellular"),
    ] {
        let violin = data["violins"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["id"] == id)
            .unwrap_or_else(|| panic!("no {id}"));
        assert!(page.contains(&format!(r#"<div class="plot" id="{id}">"#)));
        assert_eq!(violin["grouped"], true, "protocols side by side");
        assert_eq!(violin["axis"], "ms (lower is better)");
        let traces: Vec<(String, String, usize)> = violin["traces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["protocol"].as_str().unwrap().to_string(),
                    t["category"].as_str().unwrap().to_string(),
                    t["samples"].as_array().unwrap().len(),
                )
            })
            .collect();
        let expected: Vec<(String, String, usize)> = ["h2", "h3"]
            .iter()
            .map(|p| (p.to_string(), profile.to_string(), 20))
            .collect();
        assert_eq!(traces, expected, "{id}");
    }
    // Page cells are not repeated among the per-condition distributions.
    let other_ids: Vec<&str> = data["violins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        other_ids,
        [
            "violin-0",
            "violin-1",
            "violin-2",
            "page-violin-0-0",
            "page-violin-0-1"
        ]
    );
}

#[test]
fn page_columns_table_has_study_e_statistics() {
    let page = render_html(&fixture::with_pages());
    let table = between(&page, r#"<table class="summary page-columns">"#, "</table>");
    let row = |n: usize, values: [f64; 6]| {
        let mut cells = format!(r#"<td class="num">{n}</td>"#);
        for (index, value) in values.iter().enumerate() {
            let class = if index == 0 { "num strong" } else { "num" };
            cells.push_str(&format!(r#"<td class="{class}">{}</td>"#, number(*value)));
        }
        cells
    };
    // broadband h2: 300, 310, …, 490. Median (390 + 400) / 2; mean the same;
    // p90 h = 19 × 0.9 = 17.1 → 470 + 0.1 × 10; p99 h = 18.81 → 480 + 0.81 × 10.
    let h2 = row(20, [395.0, 395.0, 471.0, 488.1, 300.0, 490.0]);
    assert!(table.contains(&h2), "{h2} not in {table}");
    // broadband h3: 250, 255, …, 340 and 1000. Median (295 + 300) / 2;
    // mean (19 × 295 + 1000) / 20; p90 335 + 0.1 × 5; p99 340 + 0.81 × 660.
    let h3 = row(20, [297.5, 330.25, 335.5, 874.6, 250.0, 1000.0]);
    assert!(table.contains(&h3), "{h3} not in {table}");
    // cellular h3: 500, 510, …, 690: median 595, p90 671, p99 688.1.
    let cellular = row(20, [595.0, 595.0, 671.0, 688.1, 500.0, 690.0]);
    assert!(table.contains(&cellular), "{cellular} not in {table}");
    assert_eq!(table.matches("<tr").count(), 1 + 4, "header and 4 cells");
    assert!(table.contains("path RTT 50 ms"));
}

#[test]
fn page_waterfalls_one_per_protocol_with_one_bar_per_resource() {
    let page = render_html(&fixture::with_pages());
    let svgs: Vec<&str> = page
        .match_indices(r#"<svg class="waterfall""#)
        .map(|(at, _)| &page[at..at + page[at..].find("</svg>").unwrap()])
        .collect();
    assert_eq!(svgs.len(), 4, "2 profiles × h2 and h3");
    for svg in &svgs {
        assert_eq!(svg.matches(r#"class="wf-bar"#).count(), 5);
        assert_eq!(svg.matches(r#"class="wf-bar blocking""#).count(), 2);
        for path in ["/css/site.css", "/js/app.js", "/img/hero.jpg"] {
            assert!(svg.contains(&format!(">{path}</text>")), "{path}");
        }
    }
    let broadband = between(&page, "broadband · page-small: waterfalls", "</details>");
    assert_eq!(broadband.matches(r#"<svg class="waterfall""#).count(), 2);
    // The h2 median load is its 10th-smallest sample, 390 ms.
    assert!(broadband.contains("median load 390.0 ms · 5 resources · 212.0 KB · 1 connection(s)"));
    assert!(page.contains("render-blocking"));
}

#[test]
fn a_page_cell_without_its_report_says_so() {
    let mut results = fixture::with_pages();
    for record in results
        .cells
        .iter_mut()
        .filter(|r| r.kind == WorkloadKind::Page)
    {
        record.client_report = None;
    }
    let page = render_html(&results);
    assert_eq!(
        page.matches("No waterfall: repetition 0 kept no page report.")
            .count(),
        4
    );
    assert!(!page.contains(r#"<svg class="waterfall""#));
}

#[test]
fn page_report_loads_nothing_from_the_network() {
    let page = render_html(&fixture::with_pages());
    let markup = markup_outside_scripts(&page);
    assert_eq!(markup.matches("<script").count(), 3);
    for attribute in ["src=", "href=", "xlink:"] {
        assert!(
            !markup.contains(attribute),
            "{attribute} found in the markup"
        );
    }
}

#[test]
fn page_claims_compare_medians_lower_is_better() {
    let mut results = fixture::with_page_repetitions(5);
    let page = render_html(&results);
    let card = between(&page, "median page load, lossy mobile", "</div>");
    // Published h3 6028 vs h2 8940 ms; ours, over five repetitions (each
    // 1 % slower than the last), h3 606.9 vs h2 805.7 ms: both h3 clearly
    // faster. Repetition medians h3 595 and h2 790 × (1 + r / 100): from
    // 595 × 1.01 / (790 × 1.04) to 595 × 1.04 / (790 × 1.01).
    assert!(
        card.contains("606.9 ms") && card.contains("805.7 ms"),
        "{card}"
    );
    assert!(
        card.contains("ours -24.7 % [-26.9, -22.4] → <strong>direction agrees"),
        "{card}"
    );

    for record in results.cells.iter_mut().filter(|r| {
        r.kind == WorkloadKind::Page && r.profile == "cellular" && r.protocol == Proto::H3
    }) {
        record.metric.samples.iter_mut().for_each(|s| *s *= 2.0);
    }
    let page = render_html(&results);
    let card = between(&page, "median page load, lossy mobile", "</div>");
    assert!(card.contains("direction DIFFERS"), "{card}");
    assert!(card.contains("page caveat"));
}

#[test]
fn downloads_get_a_cpu_per_gb_plot_with_every_protocols_server_and_client() {
    let mut results = fixture::results();
    for record in results.cells.iter_mut() {
        record.kind = WorkloadKind::Download;
        if record.protocol == Proto::H3 && record.profile == "broadband" {
            record.cpu.server_interval_s = Some(0.25);
        }
    }
    let page = render_html(&results);
    let plots = plot_data(&page)["cpu_per_gb"].as_array().unwrap().clone();
    let broadband = plots
        .iter()
        .find(|p| p["title"].as_str().unwrap().starts_with("broadband"))
        .expect("a CPU plot for broadband");
    let id = broadband["id"].as_str().unwrap();
    assert!(page.contains(&format!(r#"<div class="plot" id="{id}">"#)));
    let protocols = broadband["protocols"].as_array().unwrap();
    let h3 = protocols.iter().position(|p| p == "h3").unwrap();
    let h2 = protocols.iter().position(|p| p == "h2").unwrap();
    // 5 × 0.25 s over 5 × 1,024,000 bytes; h2's server CPU is unknown.
    let server = broadband["server_s"].as_array().unwrap();
    assert!((server[h3].as_f64().unwrap() - 1.25 / 0.005_12).abs() < 1e-6);
    assert!(server[h2].is_null(), "unknown is null, not 0: {broadband}");
    assert!(broadband["client_s"][h3].as_f64().unwrap() > 0.0);

    let rps_page = render_html(&fixture::results());
    assert_eq!(plot_data(&rps_page)["cpu_per_gb"], serde_json::json!([]));
}

#[test]
fn the_costs_table_gives_wire_header_and_cpu_figures_only_where_known() {
    let mut results = fixture::results();
    assert!(!render_html(&results).contains("What each protocol costs"));
    for cell in results
        .cells
        .iter_mut()
        .filter(|c| c.profile == "broadband")
    {
        cell.wire = Some(WireCost {
            up_bytes: 300_000,
            down_bytes: 1_300_000,
            up_dropped_bytes: 0,
            down_dropped_bytes: 13_000,
            requests: 1000,
            body_bytes: 1_000_000,
        });
        cell.header_blocks = (cell.protocol == Proto::H2).then_some(HeaderBlocks {
            request_first: BlockTally {
                blocks: 1,
                bytes: 1134,
            },
            request_later: BlockTally {
                blocks: 9,
                bytes: 9 * 851,
            },
            ..HeaderBlocks::default()
        });
    }
    let page = render_html(&results);
    let markup = markup_outside_scripts(&page);
    let costs = &markup[markup
        .find("What each protocol costs")
        .expect("a costs table")..];
    let costs = &costs[..costs.find("</table>").unwrap()];
    // 1.6 MB over 1,000 requests, 60 % over 1 MB of bodies, 13 kB resent.
    assert!(costs.contains(">1600<"), "{costs}");
    assert!(costs.contains("60.0 %"), "{costs}");
    assert!(costs.contains(">13000<"), "{costs}");
    assert!(costs.contains("1134 / 851"), "{costs}");
    assert!(markup.contains("Header compression: h1 none"));
    // Only broadband's cells have counts: one table.
    assert_eq!(markup.matches("What each protocol costs").count(), 1);
}

#[test]
fn conformance_cells_draw_servers_as_columns_and_cases_as_rows() {
    use h3lab_results::conformance::Verdict::{Fail, Pass};
    let mut results = fixture::results();
    assert!(!render_html(&results).contains("HTTP/3 conformance"));
    let mut broken = fixture::conformance_record("kwik", 0, Vec::new());
    broken.client_report = None;
    broken.outcome = h3lab_results::bench::Outcome::Failed {
        error: "it exited with code 127".into(),
    };
    results.cells.extend([
        fixture::conformance_record(
            "builtin",
            0,
            vec![
                fixture::conformance_case("http3.a", Pass),
                fixture::conformance_case("qpack.b", Pass),
            ],
        ),
        fixture::conformance_record(
            "caddy",
            0,
            vec![
                fixture::conformance_case("http3.a", Fail),
                fixture::conformance_case("qpack.b", Pass),
            ],
        ),
        broken,
    ]);
    let page = markup_outside_scripts(&render_html(&results));
    let section = &page[page.find(r#"<section id="conformance">"#).unwrap()..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(
        section.contains("<th>builtin</th><th>caddy</th>"),
        "{section}"
    );
    assert!(section.contains(">0 of 2</td>"), "{section}");
    assert!(section.contains(">1 of 2</td>"), "{section}");
    // No report, no column: why, under the table.
    assert!(!section.contains("<th>kwik</th>"), "{section}");
    assert!(
        section.contains("kwik: it exited with code 127"),
        "{section}"
    );
    assert!(section
        .contains(r#"<td class="bad" title="answered the request with 200">answered 200</td>"#));
    assert_eq!(section.matches("<code>http3.a</code>").count(), 1);
    assert!(section.contains("MUST: MUST be ignored"));
}
