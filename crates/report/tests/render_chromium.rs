//! Renders a report.html in headless Chromium and checks that every plot
//! drew (plotly's SVG is in the DOM) and that the screenshot is a real page.
//!
//! Needs Chromium (`apt-get install chromium`): it fails without it under CI
//! (CI=true) and skips with a message elsewhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use h3lab_report::{distribution_html, Chart, Series};
use h3lab_results::bench::{
    CellRecord, ClientReport, CpuUse, Environment, Metric, Outcome, Results, StudyClaim, SuiteInfo,
    RESULTS_SCHEMA,
};
use h3lab_results::Proto;
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Upper bound on one Chromium run, so a hung browser cannot hang the test.
const CHROMIUM_DEADLINE: Duration = Duration::from_secs(180);

#[test]
fn report_renders_with_all_plots_in_chromium() {
    let Some(browser) = h3lab_testenv::chromium() else {
        return;
    };
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("h3lab-report-render");
    let results = synthetic_results();
    h3lab_report::write_all(&results, &out_dir).expect("write report");
    let report = out_dir.join("report.html");
    let html = std::fs::read_to_string(&report).unwrap();
    let plot_ids = plot_div_ids(&html);
    // 2 profiles × 3 workloads violins + CDFs for the 4 conditions with
    // histograms + a CPU-per-GB plot for each profile's download + a
    // page-load violin per profile.
    assert_eq!(plot_ids.len(), 14, "{plot_ids:?}");
    // 2 profiles × h2/h3 median-load waterfalls, inline SVG.
    assert_eq!(html.matches(r#"<svg class="waterfall""#).count(), 4);

    let run = chromium(&browser, &["--dump-dom"], &report);
    for id in &plot_ids {
        let drawn = plot_markup(&run.stdout, id);
        // plotly's SVG: the layer, a trace group and a drawn path for each plot.
        let expected: &[&str] = if id.starts_with("cpu-") {
            &[
                r#"class="main-svg""#,
                r#"class="barlayer"#,
                r#"class="trace bars""#,
                r#"<g class="point"><path"#,
            ]
        } else if id.contains("violin-") {
            &[
                r#"class="main-svg""#,
                r#"class="violinlayer"#,
                r#"class="trace violins""#,
                r#"<path class="violin""#,
            ]
        } else {
            &[
                r#"class="main-svg""#,
                r#"class="scatterlayer"#,
                r#"class="trace scatter"#,
                r#"<path class="js-line" d="M"#,
            ]
        };
        for marker in expected {
            assert!(
                drawn.contains(marker),
                "plot {id} lacks {marker}; chromium log:\n{}",
                run.log_tail()
            );
        }
    }

    assert!(
        !run.log.contains("Uncaught"),
        "JavaScript error; chromium log:\n{}",
        run.log_tail()
    );
    assert_eq!(run.stdout.matches(r#"class="wf-bar"#).count(), 4 * 6);

    let screenshot = out_dir.join("report.png");
    let _ = std::fs::remove_file(&screenshot);
    chromium(
        &browser,
        &[
            &format!("--screenshot={}", screenshot.display()),
            "--window-size=1400,3000",
            "--hide-scrollbars",
        ],
        &report,
    );
    check_screenshot(&screenshot);
    let table = h3lab_report::terminal_table(&results);
    assert!(
        table.lines().all(|line| line.chars().count() <= 100),
        "{table}"
    );
    eprintln!(
        "{table}\nreport: {}\nscreenshot: {}",
        report.display(),
        screenshot.display()
    );
}

/// Appended to a copy of the report: once the plots have drawn, it writes
/// into the page what a reader at 1,280 pixels would miss, as JSON: the
/// tables and inline plots wider than the window (and by how much), the
/// plots without ticks on an axis, and the probe pages' horizontal tick
/// labels, which should be round numbers.
const LAYOUT_PROBE: &str = r#"<script>
window.addEventListener('load', () => setTimeout(() => {
  const width = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll('table, svg.cdf')]
    .filter((t) => t.getBoundingClientRect().right > width + 1 || t.scrollWidth > t.parentElement.clientWidth + 1)
    .map((t) => `${t.tagName} ${t.className.baseVal ?? t.className}: ${Math.round(t.getBoundingClientRect().right)} px of ${width}`);
  // plotly's plots, and the probe pages' inline SVG CDFs (svg.cdf; their tick labels
  // are the 11-pixel texts, centred under the x axis, right-aligned by y).
  const ticks = (svg, anchor) => [...svg.querySelectorAll(`text[font-size="11"][text-anchor="${anchor}"]`)];
  const tickless = [
    ...[...document.querySelectorAll('div.plot[id]')]
      .filter((p) => p.querySelectorAll('.xtick').length === 0 || p.querySelectorAll('.ytick').length === 0)
      .map((p) => p.id),
    ...[...document.querySelectorAll('svg.cdf')]
      .filter((svg) => ticks(svg, 'middle').length < 2 || ticks(svg, 'end').length < 2)
      .map((svg, index) => `svg ${index}`),
  ];
  const x_ticks = [...document.querySelectorAll('svg.cdf')]
    .map((svg) => ticks(svg, 'middle').map((t) => t.textContent));
  const out = document.createElement('pre');
  out.id = 'layout-probe';
  out.textContent = JSON.stringify({ width, wide, tickless, x_ticks });
  document.body.appendChild(out);
}, 500));
</script>"#;

/// Renders `report` at 1,280 × 4,000 and reads [`LAYOUT_PROBE`]'s answer.
fn layout_at_1280(browser: &Path, report: &Path) -> serde_json::Value {
    let html = std::fs::read_to_string(report).unwrap();
    let probed = report.with_file_name("report-layout-probe.html");
    std::fs::write(
        &probed,
        html.replace("</body>", &format!("{LAYOUT_PROBE}</body>")),
    )
    .unwrap();
    let run = chromium(browser, &["--dump-dom", "--window-size=1280,4000"], &probed);
    let start = run
        .stdout
        .find(r#"<pre id="layout-probe">"#)
        .unwrap_or_else(|| panic!("the layout probe did not run; log:\n{}", run.log_tail()));
    let json = &run.stdout[start..];
    let json = &json[json.find('>').unwrap() + 1..json.find("</pre>").unwrap()];
    serde_json::from_str(&json.replace("&quot;", "\"").replace("&amp;", "&")).unwrap()
}

#[test]
fn every_table_fits_1280_pixels_and_every_plot_has_ticks_on_both_axes() {
    let Some(browser) = h3lab_testenv::chromium() else {
        return;
    };
    // The default preset's own run (2026-11-27; the client reports of all
    // but its page cells and the server metrics left out), and the
    // synthetic run the other test draws.
    let default_run: Results = serde_json::from_str(include_str!("data/default-preset.json"))
        .expect("tests/data/default-preset.json");
    // Study D's run (2026-11-28, beside a build: its cells are marked
    // CPU-bound), whose own figure is the CPU per GB.
    let study_d: Results =
        serde_json::from_str(include_str!("data/study-d.json")).expect("tests/data/study-d.json");
    // A field run against scripts/field-site.sh's stand-in site (2026-11-28,
    // docs/suites/field-demo.toml cut to two loads per protocol, the first
    // byte of one site, and no histograms; its 0-RTT cells' round trips
    // left out, recorded by a build that took QUIC's initial guess).
    let field: Results = serde_json::from_str(include_str!("data/field-demo.json"))
        .expect("tests/data/field-demo.json");
    let runs = [
        ("default", default_run),
        ("study-d", study_d),
        ("field", field),
        ("synthetic", synthetic_results()),
    ];
    for (name, results) in runs {
        let out_dir =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("h3lab-layout-{name}"));
        h3lab_report::write_all(&results, &out_dir).expect("write report");
        let report = out_dir.join("report.html");
        let html = std::fs::read_to_string(&report).unwrap();
        if name == "study-d" {
            assert_eq!(html.matches(r#"id="cpu-"#).count(), 1, "its CPU per GB");
        }
        if name == "field" {
            assert_eq!(
                html.matches(r#"id="drift-"#).count(),
                3,
                "a drift plot per profile"
            );
            assert!(
                html.contains("measured round trip"),
                "the real path's round trip"
            );
        }
        check_layout(&browser, name, &report);
    }
    // A probe page (`probe hol --html`), with the spread of a real run.
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("h3lab-layout-probe");
    std::fs::create_dir_all(&out_dir).unwrap();
    let probe_page = out_dir.join("report.html");
    std::fs::write(&probe_page, hol_like_probe_page()).unwrap();
    let layout = check_layout(&browser, "probe", &probe_page);
    let plots = layout["x_ticks"].as_array().unwrap();
    assert_eq!(plots.len(), 2, "{layout}");
    for labels in plots {
        let values: Vec<f64> = labels
            .as_array()
            .unwrap()
            .iter()
            .map(|label| label.as_str().unwrap().parse().unwrap())
            .collect();
        assert_eq!(values[0], 0.0, "{labels}");
        let step = values[1];
        let leading = step / 10f64.powf(step.log10().floor());
        assert!(
            [1.0, 2.0, 5.0].iter().any(|m| (leading - m).abs() < 1e-9),
            "ticks 1, 2 or 5 times a power of ten apart: {labels}"
        );
        for (index, value) in values.iter().enumerate() {
            assert!((value - step * index as f64).abs() < 1e-9, "{labels}");
        }
    }
}

/// Renders `page` at 1,280 pixels and fails on a table or plot wider than
/// the window or a plot without ticks on an axis; returns the layout read.
fn check_layout(browser: &Path, name: &str, page: &Path) -> serde_json::Value {
    let layout = layout_at_1280(browser, page);
    assert!(
        layout["width"].as_u64().unwrap() >= 1200,
        "{name}: {layout}"
    );
    assert_eq!(layout["wide"], serde_json::json!([]), "{name}: {layout}");
    assert_eq!(
        layout["tickless"],
        serde_json::json!([]),
        "{name}: {layout}"
    );
    layout
}

/// A head-of-line probe page: per-stream stalls and completions of h2 and
/// h3, spread as in a 2 % loss run (docs/hol.md).
fn hol_like_probe_page() -> String {
    let mut rng = StdRng::seed_from_u64(7);
    let mut spread = |scale: f64, count: usize| -> Vec<f64> {
        (0..count)
            .map(|_| scale * rng.random::<f64>().powi(3))
            .collect()
    };
    let chart = |title: &str, h2: Vec<f64>, h3: Vec<f64>| Chart {
        title: title.to_string(),
        x_label: "milliseconds".to_string(),
        series: vec![
            Series {
                name: "h2".to_string(),
                values: h2,
            },
            Series {
                name: "h3".to_string(),
                values: h3,
            },
        ],
    };
    let stall = chart(
        "Head-of-line stall per stream",
        spread(355.0, 80),
        spread(2.0, 80),
    );
    let completion = chart(
        "Completion per stream",
        spread(690.0, 80),
        spread(420.0, 80),
    );
    distribution_html(
        "h3lab probe hol: per-stream head-of-line stall and completion",
        &["80 streams each, 2 % loss".to_string()],
        &[stall, completion],
    )
}

/// What a Chromium run printed: stdout, and its log (console messages and
/// errors) for failure messages.
struct ChromiumRun {
    stdout: String,
    log: String,
}

impl ChromiumRun {
    fn log_tail(&self) -> &str {
        let start = self.log.len().saturating_sub(3000);
        let start = (start..self.log.len())
            .find(|&i| self.log.is_char_boundary(i))
            .unwrap_or(start);
        &self.log[start..]
    }
}

/// Runs headless Chromium on `page` with a fresh profile.
fn chromium(browser: &Path, extra: &[&str], page: &Path) -> ChromiumRun {
    let profile = tempfile::tempdir().unwrap();
    let log_path = profile.path().join("chromium.log");
    let log_file = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(browser)
        .args(h3lab_testenv::CHROMIUM_HEADLESS)
        .args(["--virtual-time-budget=10000", "--enable-logging=stderr"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        // Chromium's own temporary files go with the profile, not to /tmp.
        .env("TMPDIR", profile.path())
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(log_file)
        .spawn()
        .expect("start chromium");
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap());
    let started = Instant::now();
    let read_log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success(),
                "chromium exited with {status}; log:\n{}",
                read_log()
            );
            break;
        }
        if started.elapsed() > CHROMIUM_DEADLINE {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("chromium did not finish within {CHROMIUM_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    ChromiumRun {
        stdout: reader.join().unwrap(),
        log: read_log(),
    }
}

/// The ids of the plot divs (`plot` or `plot wide`), in page order.
fn plot_div_ids(html: &str) -> Vec<String> {
    let marker = r#"<div class="plot"#;
    html.match_indices(marker)
        .filter_map(|(at, _)| {
            let rest = &html[at + marker.len()..];
            let rest = &rest[rest.find('"')?..];
            let rest = rest.strip_prefix(r#"" id=""#)?;
            Some(rest[..rest.find('"').unwrap()].to_string())
        })
        .collect()
}

/// The rendered DOM from plot `id` up to the next plot.
fn plot_markup<'a>(dom: &'a str, id: &str) -> &'a str {
    let start = dom
        .find(&format!(r#"id="{id}""#))
        .unwrap_or_else(|| panic!("plot {id} missing from the DOM"));
    let rest = &dom[start + 1..];
    let end = rest.find(r#"<div class="plot" id="#).unwrap_or(rest.len());
    &rest[..end]
}

fn check_screenshot(path: &Path) {
    let bytes = std::fs::read(path).expect("chromium wrote no screenshot");
    assert!(
        bytes.len() > 100_000,
        "screenshot is only {} bytes",
        bytes.len()
    );
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((frame.width, frame.height), (1400, 3000));
    let channels = frame.color_type.samples();
    let colours: std::collections::HashSet<&[u8]> = pixels[..frame.buffer_size()]
        .chunks(channels)
        .map(|pixel| &pixel[..3])
        .collect();
    assert!(
        colours.len() > 500,
        "only {} distinct colours",
        colours.len()
    );
    // The protocol badges and plot lines use the report's protocol colours.
    for (protocol, rgb) in [
        ("h1", [0xe6, 0x9f, 0x00]),
        ("h2", [0x00, 0x72, 0xb2]),
        ("h3", [0x00, 0x9e, 0x73]),
    ] {
        assert!(colours.contains(&rgb[..]), "{protocol} colour not drawn");
    }
}

/// Repetitions of every cell: the presets' 5, so verdicts can be called.
const REPETITIONS: u32 = 5;

/// A realistic run: 2 profiles × (rps, download, ttfb with 2 modes) × 3
/// protocols × 5 repetitions, one failure, real histograms, two claims.
fn synthetic_results() -> Results {
    let mut rng = StdRng::seed_from_u64(42);
    let mut cells = Vec::new();
    for (profile, rtt) in [("broadband", 20.0), ("cellular", 50.0)] {
        for protocol in ["h1", "h2", "h3"] {
            let speed = match protocol {
                "h1" => 0.4,
                "h2" => 1.0,
                _ => 1.15,
            };
            for repetition in 0..REPETITIONS {
                let rps = 30_000.0 * speed * (1.0 + rng.random_range(-0.05..0.05));
                cells.push(record(
                    profile,
                    rtt,
                    "rps-1k",
                    "rps",
                    protocol,
                    None,
                    repetition,
                    {
                        Metric {
                            name: "requests_per_s".into(),
                            unit: "req/s".into(),
                            higher_is_better: true,
                            samples: vec![rps],
                        }
                    },
                    Some(latency(&mut rng, rtt, speed, 2000)),
                ));
                let seconds = 9.0 / speed * (1.0 + rng.random_range(-0.08..0.08));
                cells.push(record(
                    profile,
                    rtt,
                    "download-10m",
                    "download",
                    protocol,
                    None,
                    repetition,
                    {
                        Metric {
                            name: "download_s".into(),
                            unit: "s".into(),
                            higher_is_better: false,
                            samples: vec![seconds],
                        }
                    },
                    Some(latency(&mut rng, rtt * 20.0, speed, 50)),
                ));
                if protocol == "h1" {
                    continue;
                }
                for (mode, round_trips) in [
                    ("cold", if protocol == "h3" { 2.0 } else { 3.0 }),
                    ("resumed", if protocol == "h3" { 1.0 } else { 2.0 }),
                ] {
                    let samples = (0..20)
                        .map(|_| rtt * round_trips + rng.random_range(0.5..4.0))
                        .collect();
                    cells.push(record(
                        profile,
                        rtt,
                        "ttfb",
                        "ttfb",
                        protocol,
                        Some(mode),
                        repetition,
                        {
                            Metric {
                                name: "ttfb_ms".into(),
                                unit: "ms".into(),
                                higher_is_better: false,
                                samples,
                            }
                        },
                        None,
                    ));
                }
            }
        }
    }
    cells.extend(page_cells(&mut rng));
    let failed = cells
        .iter_mut()
        .find(|c| c.profile == "cellular" && c.protocol == Proto::H1 && c.repetition == 2)
        .unwrap();
    failed.outcome = Outcome::Failed {
        error: "server did not answer within 10 s (connection refused)".into(),
    };
    failed.metric.samples.clear();
    failed.latency_histogram = None;

    Results {
        schema: RESULTS_SCHEMA.into(),
        suite: SuiteInfo {
            name: "protocol-matrix".into(),
            preset: Some("study-a".into()),
            description: "HTTP/1.1, HTTP/2 and HTTP/3 side by side on home broadband and cellular paths (study A).".into(),
            protocols: vec!["h1".into(), "h2".into(), "h3".into()],
            profiles: vec!["broadband".into(), "cellular".into()],
            workloads: vec!["rps-1k".into(), "download-10m".into(), "ttfb".into(), "page-small".into()],
            repetitions: REPETITIONS,
            seed: 1,
            warmup_s: 2.0,
            baseline: "h2".into(),
            target: "built-in server (h3lab serve)".into(),
            aa: false,
            servers: Vec::new(),
            population: None,
            pages: BTreeMap::new(),
        },
        environment: Environment {
            h3lab_version: "0.1.0".into(),
            kernel: "Linux 6.1.0".into(),
            cpu_model: "Synthetic CPU".into(),
            cpu_count: 2,
            sysctls: BTreeMap::from([("net.core.rmem_max".into(), "212992".into()), ("net.core.wmem_max".into(), "212992".into())]),
            tcp_congestion_control: "cubic".into(),
            quic_congestion_control: "cubic (quinn)".into(),
            udp_gso: "GSO on, GRO on".into(),
            library_versions: BTreeMap::from([("quinn".into(), "0.11".into()), ("hyper".into(), "1".into())]),
            server_tuning: None,
            loopback_cpus: None,
        },
        started_at: "2026-01-01T10:00:00Z".into(),
        finished_at: Some("2026-01-01T10:20:00Z".into()),
        interrupted: false,
        cells,
        studies: vec![
            StudyClaim {
                sweep: None,
                study: "A. Protocol matrix (Node.js + quiche)".into(),
                label: "RPS, 1 KB, 100 connections".into(),
                profile: "broadband".into(),
                workload: "rps-1k".into(),
                mode: None,
                unit: "req/s".into(),
                higher_is_better: true,
                published: BTreeMap::from([("h1".into(), 12_400.0), ("h2".into(), 38_200.0), ("h3".into(), 42_100.0)]),
                measure: None,
                caveat: "Different hardware and stacks.".into(),
            },
            StudyClaim {
                sweep: None,
                study: "A. Protocol matrix (Node.js + quiche)".into(),
                label: "RPS, 10 MB, 10 connections".into(),
                profile: "broadband".into(),
                workload: "download-10m".into(),
                mode: None,
                unit: "s".into(),
                higher_is_better: false,
                published: BTreeMap::from([("h2".into(), 8.9), ("h3".into(), 14.9)]),
                measure: None,
                caveat: "The study's H3 ran in Node.js user space; quinn with GSO is faster at this rate.".into(),
            },
        ],
        captures: Vec::new(),
        field: None,
        handoffs: Vec::new(),
    }
}

/// Page loads of a six-resource page: 2 profiles × h2/h3, one repetition
/// of 20 loads, each with its median load's waterfall.
fn page_cells(rng: &mut StdRng) -> Vec<CellRecord> {
    let mut cells = Vec::new();
    for (profile, rtt) in [("broadband", 20.0), ("cellular", 50.0)] {
        for protocol in ["h2", "h3"] {
            let round_trips = if protocol == "h3" { 7.0 } else { 8.0 };
            let samples: Vec<f64> = (0..20)
                .map(|_| rtt * round_trips * (1.0 + rng.random_range(0.0..0.3)))
                .collect();
            let mut sorted = samples.clone();
            sorted.sort_by(f64::total_cmp);
            let mut cell = record(
                profile,
                rtt,
                "page-small",
                "page",
                protocol,
                None,
                0,
                Metric {
                    name: "page_load_ms".into(),
                    unit: "ms".into(),
                    higher_is_better: false,
                    samples,
                },
                None,
            );
            cell.client_report = Some(page_report(protocol, sorted[9]));
            cell.requests = 6;
            cells.push(cell);
        }
    }
    cells
}

/// An `h3lab.page/1` report with one load of six resources.
fn page_report(protocol: &str, load_ms: f64) -> ClientReport {
    let rows = [
        ("/", "document", false, 0.0, 0.2, 0.3),
        ("/css/site.css", "stylesheet", true, 0.3, 0.45, 0.5),
        ("/js/app.js", "script", true, 0.3, 0.5, 0.7),
        ("/fonts/body.woff2", "font", false, 0.5, 0.65, 0.8),
        ("/img/hero.jpg", "image", false, 0.5, 0.7, 1.0),
        ("/img/logo.svg", "image", false, 0.52, 0.6, 0.75),
    ];
    let resources: Vec<serde_json::Value> = rows
        .iter()
        .enumerate()
        .map(|(i, (path, kind, blocking, start, ttfb, end))| {
            serde_json::json!({
                "url": format!("https://site.test{path}"), "kind": kind,
                "render_blocking": blocking, "status": 200, "protocol": protocol,
                "start_ms": load_ms * start, "ttfb_ms": load_ms * ttfb, "end_ms": load_ms * end,
                "bytes": 10_000 * (i + 1), "connection": 1, "stream": i * 4,
            })
        })
        .collect();
    let written = serde_json::json!({
        "schema": "h3lab.page/1", "url": "https://site.test/", "proto": protocol,
        "loader": "builtin", "visit": "cold",
        "loads": [{"started_at": "2026-01-01T10:00:00Z", "load_ms": load_ms,
                   "resources": resources, "browser": null}],
    });
    let report: ClientReport = serde_json::from_value(written).unwrap();
    assert!(report.page().is_some(), "{report:?}");
    report
}

#[allow(clippy::too_many_arguments)]
fn record(
    profile: &str,
    rtt: f64,
    workload: &str,
    kind: &str,
    protocol: &str,
    mode: Option<&str>,
    repetition: u32,
    metric: Metric,
    latency_histogram: Option<String>,
) -> CellRecord {
    CellRecord {
        profile: profile.into(),
        workload: workload.into(),
        sweep: None,
        kind: kind.parse().expect("a workload kind"),
        protocol: protocol.parse().expect("a protocol"),
        mode: mode.map(|mode| mode.parse().expect("a ttfb mode")),
        repetition,
        path_rtt_ms: rtt,
        outcome: Outcome::Ok,
        metric,
        latency_histogram,
        ttfb_histogram: None,
        requests: 10_000,
        errors: 0,
        bytes: 10_240_000,
        cpu: CpuUse {
            client_s: 6.0,
            server_s: 4.0,
            ..CpuUse::default()
        },
        link: None,
        client_report: None,
        server_metrics: None,
        elapsed_s: 10.0,
        initial_windows: None,
        dns: None,
        connections_per_load: None,
        measured_rtt_ms: None,
        wire: None,
        header_blocks: None,
        replica: None,
        edge: None,
        h3_features: None,
    }
}

/// `count` latencies around one path RTT with an exponential tail, as a
/// base64 V2 HdrHistogram in microseconds.
fn latency(rng: &mut StdRng, rtt_ms: f64, speed: f64, count: usize) -> String {
    let mut histogram = Histogram::<u64>::new(3).unwrap();
    for _ in 0..count {
        let tail: f64 = -rng.random_range(f64::EPSILON..1.0f64).ln() * rtt_ms / speed;
        histogram.record(((rtt_ms + tail) * 1000.0) as u64).unwrap();
    }
    let mut bytes = Vec::new();
    V2Serializer::new()
        .serialize(&histogram, &mut bytes)
        .unwrap();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
