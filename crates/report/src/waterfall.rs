//! A page load's waterfall as inline SVG (no script, no network): one
//! horizontal bar per resource from its request to its last byte, the
//! wait for the response head (start → ttfb) lighter than the download
//! (ttfb → end), coloured by resource kind, labelled with the URL's path,
//! render-blocking resources outlined and marked, under a time axis.

use h3lab_results::page::{PageLoad, ResourceTiming};
use h3lab_results::ResourceKind;
use maud::{html, Markup};

use crate::format::{short, tick_step};

/// At most this many resources are drawn; a note says how many were left out.
pub(crate) const MAX_ROWS: usize = 120;

const WIDTH: f64 = 1000.0;
/// The bars start here; the labels are right-aligned before it.
const PLOT_LEFT: f64 = 320.0;
const PLOT_RIGHT: f64 = 985.0;
const AXIS_HEIGHT: f64 = 24.0;
const ROW_HEIGHT: f64 = 16.0;
const BAR_HEIGHT: f64 = 11.0;
/// Longer paths are cut from the left, keeping the file name.
const LABEL_CHARS: usize = 46;
/// How light the start → ttfb part is drawn.
const WAIT_OPACITY: f64 = 0.35;
const BLOCKING_MARK: &str = "#b42318";

/// Colour of a resource kind (Tableau-like, distinct from the protocol
/// colours, which name the chart instead).
pub(crate) fn kind_colour(kind: ResourceKind) -> &'static str {
    match kind {
        ResourceKind::Document => "#4e79a7",
        ResourceKind::Stylesheet => "#b07aa1",
        ResourceKind::Script => "#f28e2b",
        ResourceKind::Font => "#9c755f",
        ResourceKind::Image => "#59a14f",
        ResourceKind::Other => "#8c8c8c",
    }
}

/// The waterfall of `load` on a time axis from 0 to `axis_ms` (shared by
/// the waterfalls it is shown with; the load's own end if larger).
pub(crate) fn waterfall_svg(load: &PageLoad, axis_ms: f64) -> Markup {
    let axis_ms = axis_ms.max(load.load_ms).max(1.0);
    let rows = &load.resources[..load.resources.len().min(MAX_ROWS)];
    let height = AXIS_HEIGHT + rows.len() as f64 * ROW_HEIGHT + 6.0;
    let scale = Scale { axis_ms };
    let left_out = load.resources.len() - rows.len();
    html! {
        svg.waterfall role="img"
            viewBox=(format!("0 0 {WIDTH} {height}")) width="100%"
            aria-label=(format!("waterfall of {} resources", load.resources.len())) {
            (axis(&scale, height))
            @for (index, resource) in rows.iter().enumerate() {
                (bar(&scale, index, resource))
            }
            (load_line(&scale, load.load_ms, height))
        }
        @if left_out > 0 {
            p.hint { "Showing the first " (MAX_ROWS) " of " (load.resources.len())
                " resources in request order; " (left_out) " more are not drawn." }
        }
    }
}

/// Maps milliseconds to x.
struct Scale {
    axis_ms: f64,
}

impl Scale {
    fn x(&self, ms: f64) -> f64 {
        let ms = if ms.is_finite() { ms } else { 0.0 };
        PLOT_LEFT + ms.clamp(0.0, self.axis_ms) / self.axis_ms * (PLOT_RIGHT - PLOT_LEFT)
    }
}

/// Tick labels along the top and a grid line per tick, at a 1-2-5 step.
fn axis(scale: &Scale, height: f64) -> Markup {
    let step = tick_step(scale.axis_ms, 8);
    let ticks: Vec<f64> = (0..)
        .map(|i| f64::from(i) * step)
        .take_while(|t| *t <= scale.axis_ms + step * 1e-9)
        .collect();
    html! {
        g.axis {
            text.axis-title x=(PLOT_LEFT - 8.0) y="14" text-anchor="end" { "ms since navigation start" }
            @for tick in ticks {
                @let x = fmt(scale.x(tick));
                line x1=(x) x2=(x) y1=(AXIS_HEIGHT - 4.0) y2=(fmt(height)) stroke="#e4e7eb" {}
                text x=(x) y="14" text-anchor="middle" { (short(tick)) }
            }
        }
    }
}

fn bar(scale: &Scale, index: usize, resource: &ResourceTiming) -> Markup {
    let top = AXIS_HEIGHT + index as f64 * ROW_HEIGHT;
    let y = top + (ROW_HEIGHT - BAR_HEIGHT) / 2.0;
    let (start, ttfb, end) = (
        scale.x(resource.start_ms),
        scale.x(resource.ttfb_ms),
        scale.x(resource.end_ms),
    );
    let ttfb = ttfb.clamp(start, end.max(start));
    let colour = kind_colour(resource.kind);
    let class = if resource.render_blocking {
        "wf-bar blocking"
    } else {
        "wf-bar"
    };
    html! {
        g class=(class) {
            title { (tooltip(resource)) }
            @if resource.render_blocking {
                circle cx="8" cy=(fmt(top + ROW_HEIGHT / 2.0)) r="3.5" fill=(BLOCKING_MARK) {}
            }
            text x=(fmt(PLOT_LEFT - 8.0)) y=(fmt(top + ROW_HEIGHT - 4.0)) text-anchor="end" { (label(&resource.url)) }
            rect x=(fmt(start)) y=(fmt(y)) width=(fmt(ttfb - start)) height=(BAR_HEIGHT)
                fill=(colour) fill-opacity=(WAIT_OPACITY) {}
            rect x=(fmt(ttfb)) y=(fmt(y)) width=(fmt((end - ttfb).max(1.0))) height=(BAR_HEIGHT) fill=(colour) {}
            @if resource.render_blocking {
                rect x=(fmt(start)) y=(fmt(y)) width=(fmt((end - start).max(1.0))) height=(BAR_HEIGHT)
                    fill="none" stroke=(BLOCKING_MARK) stroke-width="1.2" {}
            }
        }
    }
}

/// The dashed line where the page load ended.
fn load_line(scale: &Scale, load_ms: f64, height: f64) -> Markup {
    let x = fmt(scale.x(load_ms));
    html! {
        g.load {
            line x1=(x) x2=(x) y1=(AXIS_HEIGHT - 4.0) y2=(fmt(height)) stroke="#1f2933" stroke-dasharray="4 3" {}
        }
    }
}

/// Everything about a resource, shown on hover.
fn tooltip(r: &ResourceTiming) -> String {
    let mut text = format!(
        "{}\n{} · status {} · {} · {} bytes\nrequest {} ms, first byte {} ms, last byte {} ms",
        r.url,
        r.kind,
        r.status,
        r.protocol.as_deref().unwrap_or("protocol unknown"),
        r.bytes,
        short(r.start_ms),
        short(r.ttfb_ms),
        short(r.end_ms),
    );
    if let Some(connection) = r.connection {
        text.push_str(&format!("\nconnection {connection}"));
    }
    if let Some(stream) = r.stream {
        text.push_str(&format!(", stream {stream}"));
    }
    if r.render_blocking {
        text.push_str("\nrender-blocking");
    }
    text
}

/// The URL's path and query (the host is the same for every row), cut
/// from the left to [`LABEL_CHARS`].
pub(crate) fn label(url: &str) -> String {
    let path = url.split_once("://").map_or(url, |(_, rest)| {
        rest.find('/').map_or("/", |at| &rest[at..])
    });
    let count = path.chars().count();
    if count <= LABEL_CHARS {
        return path.to_string();
    }
    let tail: String = path.chars().skip(count - (LABEL_CHARS - 1)).collect();
    format!("…{tail}")
}

/// Coordinates with at most two decimals, to keep the markup small.
fn fmt(value: f64) -> String {
    short((value * 100.0).round() / 100.0)
}

/// What the colours and marks mean, once per page section.
pub(crate) fn legend() -> Markup {
    html! {
        p.wf-legend {
            @for kind in ResourceKind::ALL {
                span.wf-key { span.swatch style=(format!("background:{}", kind_colour(*kind))) {} (kind.name()) }
            }
            span.wf-key { span.swatch.wait {} "lighter: waiting for the response head (request → first byte)" }
            span.wf-key { span.swatch.blocking {} "outlined, red dot: render-blocking" }
            span.wf-key { span.swatch.loadline {} "dashed: page loaded" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(url: &str, start: f64, ttfb: f64, end: f64, blocking: bool) -> ResourceTiming {
        ResourceTiming {
            method: "GET".to_string(),
            url: url.into(),
            kind: ResourceKind::Script,
            render_blocking: blocking,
            status: 200,
            protocol: Some("h3".into()),
            start_ms: start,
            ttfb_ms: ttfb,
            end_ms: end,
            bytes: 1000,
            connection: Some(1),
            stream: Some(4),
        }
    }

    fn load(resources: Vec<ResourceTiming>) -> PageLoad {
        PageLoad {
            failed: Vec::new(),
            path_rtt_ms: None,
            started_at: "2026-01-01T00:00:00Z".into(),
            load_ms: 100.0,
            resources,
            browser: None,
            skipped: Vec::new(),
        }
    }

    #[test]
    fn a_bar_spans_request_to_last_byte_with_a_lighter_wait() {
        let svg = waterfall_svg(
            &load(vec![resource(
                "https://a.test/app.js",
                0.0,
                40.0,
                100.0,
                true,
            )]),
            100.0,
        )
        .into_string();
        assert_eq!(svg.matches(r#"class="wf-bar blocking""#).count(), 1);
        // 0 ms at x = 320, 40 ms at 320 + 0.4 × 665 = 586, 100 ms at 985.
        assert!(svg.contains(r##"<rect x="320" y="26.5" width="266" height="11" fill="#f28e2b" fill-opacity="0.35">"##), "{svg}");
        assert!(
            svg.contains(r##"<rect x="586" y="26.5" width="399" height="11" fill="#f28e2b">"##),
            "{svg}"
        );
        assert!(svg.contains(">/app.js</text>"));
        assert!(svg.contains("stream 4"));
    }

    #[test]
    fn rows_are_capped_with_a_note() {
        let many: Vec<ResourceTiming> = (0..MAX_ROWS + 5)
            .map(|i| resource(&format!("https://a.test/{i}.png"), 0.0, 1.0, 2.0, false))
            .collect();
        let svg = waterfall_svg(&load(many), 0.0).into_string();
        assert_eq!(svg.matches(r#"class="wf-bar""#).count(), MAX_ROWS);
        assert!(svg.contains("Showing the first 120 of 125 resources"));
    }

    #[test]
    fn labels_are_paths_and_ticks_are_round() {
        assert_eq!(label("https://a.test:4433/js/app.js?v=1"), "/js/app.js?v=1");
        assert_eq!(label("https://a.test"), "/");
        let long = format!("https://a.test/{}/end.js", "x".repeat(60));
        let cut = label(&long);
        assert_eq!(cut.chars().count(), LABEL_CHARS);
        assert!(cut.starts_with('…') && cut.ends_with("/end.js"));
        assert_eq!(tick_step(812.0, 8), 200.0);
        assert_eq!(tick_step(80.0, 8), 10.0);
        assert_eq!(tick_step(6000.0, 8), 1000.0);
    }
}
