//! Captured pages (HAR) a run replayed: what the capture itself recorded,
//! beside the replay's medians per profile and protocol.

use h3lab_results::bench::CapturedPage;

use crate::cell::CellSummary;

/// One captured page with the replay's medians.
pub struct CaptureComparison<'a> {
    pub capture: &'a CapturedPage,
    /// `(profile, protocol, median page load in ms)`, in run order.
    pub replayed: Vec<(&'a str, &'a str, f64)>,
}

/// Every capture of the run with its workload's medians.
pub fn compare_captures<'a>(
    captures: &'a [CapturedPage],
    summaries: &'a [CellSummary],
) -> Vec<CaptureComparison<'a>> {
    captures
        .iter()
        .map(|capture| CaptureComparison {
            capture,
            replayed: summaries
                .iter()
                .filter(|s| s.key.workload == capture.workload)
                .filter_map(|s| {
                    let median = s.stats.as_ref()?.median;
                    Some((s.key.profile.as_str(), s.key.protocol.as_str(), median))
                })
                .collect(),
        })
        .collect()
}

impl CaptureComparison<'_> {
    /// "chrome.har (WebInspector 537.36): https://..., 3 origins, 5 responses".
    pub fn title(&self) -> String {
        let capture = self.capture;
        let file = capture.har.rsplit('/').next().unwrap_or(&capture.har);
        let outside = match capture.outside_load {
            0 => String::new(),
            n => format!(" ({n} outside the page load)"),
        };
        format!(
            "{}: {file} ({}), {}, {} origins, {} responses{outside}",
            capture.workload, capture.tool, capture.page, capture.origins, capture.responses
        )
    }

    /// What the capture recorded, on the network it was captured on.
    pub fn recorded(&self) -> String {
        let capture = self.capture;
        let ms = |v: Option<f64>| v.map_or("unknown".to_string(), |v| format!("{v:.0} ms"));
        let upgraded = match capture.upgraded_from_cleartext {
            true => "; captured over http://, replayed over https with its URLs upgraded",
            false => "",
        };
        let think = match capture.without_think_time {
            true => "; replayed without its recorded server think time",
            false => "",
        };
        format!(
            "recorded where it was captured: load event {}, DOMContentLoaded {}, document over {}{upgraded}{think}",
            ms(capture.on_load_ms),
            ms(capture.on_content_load_ms),
            capture.protocol.as_deref().unwrap_or("unknown")
        )
    }

    /// The replay's medians, one profile per clause.
    pub fn replayed_line(&self) -> String {
        let mut clauses: Vec<String> = Vec::new();
        let mut profiles: Vec<&str> = Vec::new();
        for (profile, _, _) in &self.replayed {
            if !profiles.contains(profile) {
                profiles.push(profile);
            }
        }
        for profile in profiles {
            let medians: Vec<String> = (self.replayed.iter())
                .filter(|(p, _, _)| *p == profile)
                .map(|(_, protocol, median)| format!("{protocol} {median:.0} ms"))
                .collect();
            clauses.push(format!("{profile} {}", medians.join(", ")));
        }
        format!("replayed, median page load: {}", clauses.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_is_shown_with_its_recorded_figures_and_the_replays_medians() {
        let mut results = crate::fixture::with_pages();
        let workload = results
            .cells
            .iter()
            .find(|c| c.kind == h3lab_results::WorkloadKind::Page)
            .unwrap()
            .workload
            .clone();
        results.captures = vec![CapturedPage {
            workload: workload.clone(),
            har: "/tmp/site.har".into(),
            tool: "WebInspector 537.36".into(),
            page: "https://www.example.test/".into(),
            origins: 3,
            responses: 5,
            outside_load: 0,
            protocol: Some("h2".into()),
            on_load_ms: Some(358.4),
            on_content_load_ms: None,
            upgraded_from_cleartext: false,
            without_think_time: false,
        }];
        let summaries = crate::summary::summarize(&results);
        let compared = compare_captures(&results.captures, &summaries);
        assert_eq!(compared.len(), 1);
        assert!(compared[0]
            .title()
            .starts_with(&format!("{workload}: site.har (WebInspector")));
        assert_eq!(
            compared[0].recorded(),
            "recorded where it was captured: load event 358 ms, DOMContentLoaded unknown, document over h2"
        );
        assert!(!compared[0].replayed.is_empty());
        results.captures[0].upgraded_from_cleartext = true;
        results.captures[0].outside_load = 1;
        let compared = compare_captures(&results.captures, &summaries);
        assert!(compared[0]
            .title()
            .ends_with("5 responses (1 outside the page load)"));
        assert!(
            compared[0]
                .recorded()
                .ends_with("; captured over http://, replayed over https with its URLs upgraded"),
            "{}",
            compared[0].recorded()
        );
        results.captures[0].without_think_time = true;
        let compared = compare_captures(&results.captures, &summaries);
        assert!(
            compared[0]
                .recorded()
                .ends_with("URLs upgraded; replayed without its recorded server think time"),
            "{}",
            compared[0].recorded()
        );
        let line = compared[0].replayed_line();
        assert!(line.contains(" h2 ") && line.contains(" h3 "), "{line}");
        let text = crate::table::terminal_table(&results);
        assert!(
            text.contains("recorded where it was captured: load event 358 ms"),
            "{text}"
        );
        let html = crate::html::render_html(&results);
        assert!(
            html.contains("recorded where it was captured"),
            "no captures section"
        );
    }
}
