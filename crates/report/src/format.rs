//! Text for people (tables and HTML): numbers and lists of repetitions;
//! the CSV and JSON keep full precision.

use comfy_table::{presets, ContentArrangement, Table, TableComponent};

pub use h3lab_results::difference::number;

/// Width the terminal's text is laid out for.
pub const TABLE_WIDTH: u16 = 100;

/// `text` word-wrapped to the table width, every line indented.
pub(crate) fn wrapped(indent: u16, text: &str) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .remove_style(TableComponent::LeftBorder)
        .remove_style(TableComponent::RightBorder)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(TABLE_WIDTH)
        .add_row(vec![text]);
    if let Some(column) = table.column_mut(0) {
        column.set_padding((indent, 0));
    }
    table
        .lines()
        .map(|line| line.trim_end().to_string() + "\n")
        .collect()
}

/// At most three decimals, trailing zeros dropped: `20`, `0.5`, `2.125`.
pub fn short(value: f64) -> String {
    let text = format!("{value:.3}");
    let trimmed = text.trim_end_matches('0').trim_end_matches('.');
    if trimmed == "-0" {
        "0".to_string()
    } else {
        trimmed.to_string()
    }
}

/// `number` for an optional value, `–` when absent.
pub fn maybe(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_string(), number)
}

/// A fraction as a percentage, e.g. `0.0123` → `1.2 %`.
pub fn fraction_as_percent(fraction: Option<f64>) -> String {
    fraction.map_or_else(|| "–".to_string(), |f| format!("{:.1} %", f * 100.0))
}

/// `0`, `0 and 2`, `0, 1 and 2`.
pub fn list_repetitions(repetitions: &[u32]) -> String {
    match repetitions {
        [] => String::new(),
        [only] => only.to_string(),
        [init @ .., last] => {
            let init: Vec<String> = init.iter().map(u32::to_string).collect();
            format!("{} and {last}", init.join(", "))
        }
    }
}

/// A step of 1, 2 or 5 × 10ⁿ that cuts `span` into at most about `ticks`
/// ticks, as plotting libraries choose axis labels.
pub fn tick_step(span: f64, ticks: usize) -> f64 {
    let raw = span / ticks as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= raw)
        .unwrap_or(10.0 * magnitude)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_about_four_significant_figures() {
        assert_eq!(number(42100.0), "42100");
        assert_eq!(number(1234.56), "1235");
        assert_eq!(number(123.456), "123.5");
        assert_eq!(number(12.3456), "12.35");
        assert_eq!(number(0.635), "0.635");
        assert_eq!(number(-0.5), "-0.500");
        assert_eq!(number(0.0), "0");
        assert_eq!(maybe(None), "–");
        assert_eq!(short(20.0), "20");
        assert_eq!(short(0.5), "0.5");
        assert_eq!(short(2.1254), "2.125");
        assert_eq!(short(-0.0001), "0");
        assert_eq!(short(100.0), "100");
        assert_eq!(fraction_as_percent(Some(0.0123)), "1.2 %");
    }

    #[test]
    fn lists_repetitions_in_words() {
        assert_eq!(list_repetitions(&[0, 2]), "0 and 2");
        assert_eq!(list_repetitions(&[0, 1, 2]), "0, 1 and 2");
        assert_eq!(list_repetitions(&[4]), "4");
    }
}
