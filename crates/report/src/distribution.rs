//! A small self-contained HTML page drawing distributions as empirical
//! CDFs in inline SVG: for probe reports, which have a few samples per
//! series and no bench results around them.

use maud::{html, Markup, DOCTYPE};

use crate::format::tick_step;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 360.0;
const MARGIN: f64 = 50.0;
/// About this many ticks on the horizontal axis.
const TICKS: usize = 5;
const COLOURS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

/// One named sample to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// The values; non-finite ones are left out.
    pub values: Vec<f64>,
}

/// One plot: the CDFs of its series on a shared axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Heading above the plot.
    pub title: String,
    /// What the horizontal axis counts.
    pub x_label: String,
    /// The samples drawn.
    pub series: Vec<Series>,
}

/// An HTML page with `title`, the `notes` as paragraphs, and each chart.
pub fn distribution_html(title: &str, notes: &[String], charts: &[Chart]) -> String {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { (title) } }
            body style="font-family: sans-serif; max-width: 60em; margin: 1em auto" {
                h1 { (title) }
                @for note in notes { p { (note) } }
                @for chart in charts { (plot(chart)) }
            }
        }
    };
    page.into_string()
}

fn plot(chart: &Chart) -> Markup {
    let curves: Vec<Curve> = chart.series.iter().map(Curve::of).collect();
    html! {
        h2 { (chart.title) }
        (cdf_svg(&curves, &chart.x_label, "fraction of streams"))
    }
}

/// One line of a CDF plot: its legend and its steps, each value with the
/// fraction at or below it.
pub(crate) struct Curve {
    pub(crate) legend: String,
    pub(crate) steps: Vec<(f64, f64)>,
}

impl Curve {
    /// The empirical CDF of a series, with its sample count in the legend.
    fn of(series: &Series) -> Curve {
        let mut sorted: Vec<f64> = series
            .values
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        sorted.sort_by(f64::total_cmp);
        let count = sorted.len() as f64;
        Curve {
            legend: format!("{} (n={})", series.name, sorted.len()),
            steps: (sorted.iter().enumerate())
                .map(|(rank, &value)| (value, (rank + 1) as f64 / count))
                .collect(),
        }
    }
}

/// The curves on one pair of axes, as inline SVG.
pub(crate) fn cdf_svg(curves: &[Curve], x_label: &str, y_label: &str) -> Markup {
    let largest = (curves.iter())
        .flat_map(|curve| curve.steps.iter().map(|(value, _)| *value))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let step = x_tick_step(largest);
    // The axis ends on a tick, so every tick is a round number.
    let x_max = (largest / step).ceil().max(1.0) * step;
    html! {
        svg.cdf xmlns="http://www.w3.org/2000/svg" width=(WIDTH) height=(HEIGHT) role="img" {
            (axes(x_max, step, x_label, y_label))
            @for (index, curve) in curves.iter().enumerate() {
                (draw(curve, index, curves.len(), x_max))
            }
        }
    }
}

fn x_at(value: f64, x_max: f64) -> f64 {
    MARGIN + value / x_max * (WIDTH - 2.0 * MARGIN)
}

fn y_at(fraction: f64) -> f64 {
    HEIGHT - MARGIN - fraction * (HEIGHT - 2.0 * MARGIN)
}

/// The spacing of about [`TICKS`] ticks from 0 to `largest` (1 for an
/// empty or all-zero sample).
fn x_tick_step(largest: f64) -> f64 {
    if largest <= 0.0 || !largest.is_finite() {
        return 1.0;
    }
    tick_step(largest, TICKS)
}

/// Decimals that tell ticks `step` apart.
fn decimals(step: f64) -> usize {
    (-step.log10().floor()).max(0.0) as usize
}

fn axes(x_max: f64, step: f64, x_label: &str, y_label: &str) -> Markup {
    let (left, bottom) = (MARGIN, HEIGHT - MARGIN);
    let x_ticks = (x_max / step).round() as usize;
    html! {
        line x1=(left) y1=(bottom) x2=(WIDTH - MARGIN) y2=(bottom) stroke="black" {}
        line x1=(left) y1=(bottom) x2=(left) y2=(MARGIN) stroke="black" {}
        @for tick in 0..=x_ticks {
            @let value = step * tick as f64;
            text x=(x_at(value, x_max)) y=(bottom + 16.0) text-anchor="middle" font-size="11" {
                (format!("{value:.*}", decimals(step)))
            }
        }
        @for tick in 0..=TICKS {
            text x=(left - 6.0) y=(y_at(tick as f64 / TICKS as f64) + 4.0) text-anchor="end" font-size="11" {
                (format!("{:.1}", tick as f64 / TICKS as f64))
            }
        }
        text x=(WIDTH / 2.0) y=(HEIGHT - 12.0) text-anchor="middle" font-size="12" { (x_label) }
        text x="12" y=(HEIGHT / 2.0) font-size="12" transform=(format!("rotate(-90 12 {})", HEIGHT / 2.0)) {
            (y_label)
        }
    }
}

/// A step line through a curve's steps, and its legend entry (lower
/// right, where CDFs rarely are).
fn draw(curve: &Curve, index: usize, count: usize, x_max: f64) -> Markup {
    let colour = COLOURS[index % COLOURS.len()];
    let mut points = format!("M{:.1},{:.1}", x_at(0.0, x_max), y_at(0.0));
    let mut below = 0.0;
    for &(value, fraction) in &curve.steps {
        let x = x_at(value, x_max);
        points += &format!(" L{x:.1},{:.1} L{x:.1},{:.1}", y_at(below), y_at(fraction));
        below = fraction;
    }
    let legend_y = HEIGHT - MARGIN - 12.0 - 16.0 * (count - 1 - index) as f64;
    html! {
        path d=(points) fill="none" stroke=(colour) stroke-width="2" {}
        text x=(WIDTH - MARGIN - 4.0) y=(legend_y) text-anchor="end" font-size="12" fill=(colour) {
            (curve.legend)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_one_curve_per_series_and_escapes_text() {
        let series = vec![
            Series {
                name: "h2".into(),
                values: vec![1.0, 50.0, f64::NAN],
            },
            Series {
                name: "h3 <x>".into(),
                values: vec![0.5],
            },
        ];
        let chart = Chart {
            title: "stall".into(),
            x_label: "ms".into(),
            series,
        };
        let page = distribution_html("probe", &["seed 1".into()], &[chart.clone(), chart]);
        assert_eq!(page.matches("<path").count(), 4);
        assert!(page.contains("h2 (n=2)"), "{page}");
        assert!(page.contains("h3 &lt;x&gt; (n=1)"), "{page}");
        assert!(!page.contains("src="), "the page loads nothing");
    }

    /// The horizontal ticks of the first plot on `page`, as drawn.
    fn x_ticks(page: &str) -> Vec<String> {
        page.split("<text")
            .filter(|text| text.contains(r#"text-anchor="middle" font-size="11""#))
            .map(|text| {
                text[text.find('>').unwrap() + 1..text.find("</text>").unwrap()].to_string()
            })
            .collect()
    }

    fn page_of(values: Vec<f64>) -> String {
        let chart = Chart {
            title: "stall".into(),
            x_label: "ms".into(),
            series: vec![Series {
                name: "h3".into(),
                values,
            }],
        };
        distribution_html("probe", &[], &[chart])
    }

    #[test]
    fn horizontal_ticks_are_round_numbers_up_to_past_the_largest_value() {
        assert_eq!(
            x_ticks(&page_of(vec![3.0, 355.0])),
            ["0", "100", "200", "300", "400"]
        );
        assert_eq!(
            x_ticks(&page_of(vec![47.0])),
            ["0", "10", "20", "30", "40", "50"]
        );
        assert_eq!(
            x_ticks(&page_of(vec![0.1, 0.3])),
            ["0.0", "0.1", "0.2", "0.3"]
        );
        assert_eq!(x_ticks(&page_of(vec![])), ["0", "1"]);
    }
}
