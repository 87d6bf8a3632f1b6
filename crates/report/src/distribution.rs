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
        (cdf_svg(&curves, &chart.x_label, "fraction of streams", false))
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

/// The curves on one pair of axes, as inline SVG; a logarithmic
/// horizontal axis when `log` and the values span more than a decade.
pub(crate) fn cdf_svg(curves: &[Curve], x_label: &str, y_label: &str, log: bool) -> Markup {
    let values = || {
        (curves.iter())
            .flat_map(|curve| curve.steps.iter().map(|(value, _)| *value))
            .filter(|v| v.is_finite())
    };
    let largest = values().fold(0.0f64, f64::max);
    let smallest = values().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let axis = match log && largest > 10.0 * smallest {
        true => Axis::log(smallest, largest),
        false => Axis::linear(largest),
    };
    let x_label = match axis {
        Axis::Log { .. } => format!("{x_label}, log scale"),
        Axis::Linear { .. } => x_label.to_string(),
    };
    html! {
        svg.cdf xmlns="http://www.w3.org/2000/svg" width=(WIDTH) height=(HEIGHT) role="img" {
            (axes(&axis, &x_label, y_label))
            @for (index, curve) in curves.iter().enumerate() {
                (draw(curve, index, curves.len(), &axis))
            }
        }
    }
}

/// The horizontal axis: from 0 to a round number past the largest value,
/// or logarithmic from a power of ten below the smallest to one above the
/// largest.
enum Axis {
    Linear { max: f64, step: f64 },
    Log { low: f64, high: f64 },
}

impl Axis {
    fn linear(largest: f64) -> Axis {
        let step = x_tick_step(largest);
        // The axis ends on a tick, so every tick is a round number.
        let max = (largest / step).ceil().max(1.0) * step;
        Axis::Linear { max, step }
    }

    fn log(smallest: f64, largest: f64) -> Axis {
        Axis::Log {
            low: 10f64.powf(smallest.log10().floor()),
            high: 10f64.powf(largest.log10().ceil()),
        }
    }

    /// Where `value` is drawn; a log axis draws zero and below at its start.
    fn at(&self, value: f64) -> f64 {
        let fraction = match *self {
            Axis::Linear { max, .. } => value / max,
            Axis::Log { low, high } => {
                (value.max(low).log10() - low.log10()) / (high.log10() - low.log10())
            }
        };
        MARGIN + fraction * (WIDTH - 2.0 * MARGIN)
    }

    /// Each tick's value and label: every step, or 1, 2 and 5 of every
    /// decade.
    fn ticks(&self) -> Vec<(f64, String)> {
        match *self {
            Axis::Linear { max, step } => (0..=(max / step).round() as usize)
                .map(|tick| {
                    let value = step * tick as f64;
                    (value, format!("{value:.*}", decimals(step)))
                })
                .collect(),
            Axis::Log { low, high } => {
                let mut ticks = Vec::new();
                let mut decade = low;
                while decade <= high * (1.0 + 1e-9) {
                    for multiple in [1.0, 2.0, 5.0] {
                        let value = decade * multiple;
                        if value <= high * (1.0 + 1e-9) {
                            ticks.push((value, format!("{value:.*}", decimals(value))));
                        }
                    }
                    decade *= 10.0;
                }
                ticks
            }
        }
    }
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

fn axes(axis: &Axis, x_label: &str, y_label: &str) -> Markup {
    let (left, bottom) = (MARGIN, HEIGHT - MARGIN);
    html! {
        line x1=(left) y1=(bottom) x2=(WIDTH - MARGIN) y2=(bottom) stroke="black" {}
        line x1=(left) y1=(bottom) x2=(left) y2=(MARGIN) stroke="black" {}
        @for (value, label) in axis.ticks() {
            text x=(axis.at(value)) y=(bottom + 16.0) text-anchor="middle" font-size="11" {
                (label)
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
fn draw(curve: &Curve, index: usize, count: usize, axis: &Axis) -> Markup {
    let colour = COLOURS[index % COLOURS.len()];
    let start = curve
        .steps
        .first()
        .map_or(0.0, |&(value, _)| value.min(0.0));
    let mut points = format!("M{:.1},{:.1}", axis.at(start), y_at(0.0));
    let mut below = 0.0;
    for &(value, fraction) in &curve.steps {
        let x = axis.at(value);
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
    fn values_over_more_than_a_decade_get_a_log_axis_with_1_2_5_ticks() {
        let curve = |values: &[f64]| Curve {
            legend: "h3".into(),
            steps: values.iter().map(|&v| (v, 1.0)).collect(),
        };
        let page = cdf_svg(&[curve(&[230.0, 7700.0])], "ms", "users", true).into_string();
        assert_eq!(
            x_ticks(&page),
            ["100", "200", "500", "1000", "2000", "5000", "10000"]
        );
        assert!(page.contains("ms, log scale"));
        let near = cdf_svg(&[curve(&[230.0, 700.0])], "ms", "users", true).into_string();
        assert_eq!(x_ticks(&near), ["0", "200", "400", "600", "800"]);
        let linear = cdf_svg(&[curve(&[230.0, 7700.0])], "ms", "users", false).into_string();
        assert!(!linear.contains("log scale"));
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
