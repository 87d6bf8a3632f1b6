//! Page-load cells (`kind = "page"`): the report's view of one page
//! workload. Per workload and profile, one violin of every load time with
//! the protocols side by side (as study E drew them), each profile on an
//! axis of its own, since paths differ tenfold; per profile, the cells'
//! statistics (study E's columns come straight from
//! the summaries) and the median load of each protocol, whose waterfall
//! `html` draws. Nothing here writes markup.

use h3lab_results::bench::{CellRecord, Outcome, Results};
use h3lab_results::page::PageLoad;
use h3lab_results::WorkloadKind;

use crate::cell::{page_report, CellKey, CellSummary};
use crate::page_data::{samples_by_cell, ViolinPlot};
use crate::stats::{split_finite, SampleStats};

/// One page workload (a site) over every profile it ran in.
pub(crate) struct PageWorkload<'a> {
    pub(crate) workload: String,
    /// The profiles in suite order.
    pub(crate) conditions: Vec<PageCondition<'a>>,
}

/// Every page violin of `workloads`: one per workload and profile.
pub(crate) fn page_violins<'p>(
    workloads: &'p [PageWorkload<'_>],
) -> impl Iterator<Item = &'p ViolinPlot> {
    workloads
        .iter()
        .flat_map(|workload| workload.conditions.iter().map(|c| &c.violin))
}

/// One profile of a page workload.
pub(crate) struct PageCondition<'a> {
    pub(crate) profile: String,
    /// `path RTT 20 ms`, or a real path's measured round trip.
    pub(crate) round_trip: String,
    /// Every load time in this profile, one violin per protocol.
    pub(crate) violin: ViolinPlot,
    /// One per protocol, in suite order.
    pub(crate) cells: Vec<PageCell<'a>>,
    /// The longest median load's end: the waterfalls of one condition
    /// share this time axis so they compare at a glance.
    pub(crate) axis_ms: f64,
}

/// One protocol's page cell in one profile.
pub(crate) struct PageCell<'a> {
    pub(crate) summary: &'a CellSummary,
    /// The median load and its waterfall, or why there is none.
    pub(crate) median_load: Result<MedianLoad, String>,
}

/// The load a waterfall shows: the median load of the repetition whose
/// median is the median of the cell's repetitions.
pub(crate) struct MedianLoad {
    pub(crate) repetition: u32,
    /// Successful repetitions it was chosen from.
    pub(crate) of_repetitions: usize,
    pub(crate) load: PageLoad,
}

impl MedianLoad {
    /// Where the load's last resource ended (or the load time, if later).
    pub(crate) fn end_ms(&self) -> f64 {
        self.load
            .resources
            .iter()
            .map(|r| r.end_ms)
            .filter(|v| v.is_finite())
            .fold(self.load.load_ms, f64::max)
    }
}

/// The page workloads in suite order; empty when the run has no page cell.
pub(crate) fn page_workloads<'a>(
    results: &Results,
    summaries: &'a [CellSummary],
) -> Vec<PageWorkload<'a>> {
    let samples = samples_by_cell(results);
    let mut workloads: Vec<PageWorkload<'a>> = Vec::new();
    let mut pages: Vec<&CellSummary> = summaries
        .iter()
        .filter(|s| s.kind == Some(WorkloadKind::Page))
        .collect();
    // Summaries are profile-major; a page view is workload-major.
    pages.sort_by_key(|s| workload_rank(summaries, &s.key.workload));
    for summary in pages {
        let key = &summary.key;
        let index = match workloads.iter().position(|w| w.workload == key.workload) {
            Some(index) => index,
            None => {
                workloads.push(new_workload(&key.workload));
                workloads.len() - 1
            }
        };
        let condition = add_cell(&mut workloads[index], index, summary, results);
        if let Some(samples) = samples.get(key) {
            condition
                .violin
                .push(&key.protocol, &key.profile, samples.clone());
        }
    }
    workloads
}

fn workload_rank(summaries: &[CellSummary], workload: &str) -> usize {
    summaries
        .iter()
        .position(|s| s.key.workload == workload)
        .unwrap_or(usize::MAX)
}

fn new_workload<'a>(workload: &str) -> PageWorkload<'a> {
    PageWorkload {
        workload: workload.to_string(),
        conditions: Vec::new(),
    }
}

/// Adds the cell to its profile's condition (made on first use) and
/// returns the condition; `index` is the workload's.
fn add_cell<'a, 'w>(
    workload: &'w mut PageWorkload<'a>,
    index: usize,
    summary: &'a CellSummary,
    results: &Results,
) -> &'w mut PageCondition<'a> {
    let key = &summary.key;
    let condition = match workload
        .conditions
        .iter()
        .position(|c| c.profile == key.profile)
    {
        Some(index) => &mut workload.conditions[index],
        None => {
            let violin = ViolinPlot::new(
                format!("page-violin-{index}-{}", workload.conditions.len()),
                format!("{} on {}: page load time", workload.workload, key.profile),
                format!("{} (lower is better)", summary.unit),
                true,
            );
            workload.conditions.push(PageCondition {
                profile: key.profile.clone(),
                round_trip: summary.round_trip_label(),
                violin,
                cells: Vec::new(),
                axis_ms: 0.0,
            });
            workload.conditions.last_mut().expect("just pushed")
        }
    };
    let median_load = median_load(results, key);
    if let Ok(load) = &median_load {
        condition.axis_ms = condition.axis_ms.max(load.end_ms());
    }
    condition.cells.push(PageCell {
        summary,
        median_load,
    });
    condition
}

/// The median load of the cell `key`: among its successful repetitions
/// with samples, the one whose median is the median (the lower middle for
/// an even count), and from its `h3lab.page/1` client report the median
/// load (the report normally holds only that one).
pub(crate) fn median_load(results: &Results, key: &CellKey) -> Result<MedianLoad, String> {
    let mut ranked: Vec<(f64, &CellRecord)> = results
        .cells
        .iter()
        .filter(|r| r.outcome == Outcome::Ok && is_cell(r, key))
        .filter_map(|r| {
            let (samples, _) = split_finite(&r.metric.samples);
            Some((SampleStats::of(&samples)?.median, r))
        })
        .collect();
    if ranked.is_empty() {
        return Err("no successful repetition with load times".to_string());
    }
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    let of_repetitions = ranked.len();
    let record = ranked[(of_repetitions - 1) / 2].1;
    let report = page_report(record)?;
    let index = report.median_load().ok_or_else(|| {
        format!(
            "repetition {}: its page report holds no load",
            record.repetition
        )
    })?;
    Ok(MedianLoad {
        repetition: record.repetition,
        of_repetitions,
        load: report.loads[index].clone(),
    })
}

fn is_cell(record: &CellRecord, key: &CellKey) -> bool {
    CellKey::of(record) == *key
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::summary::summarize;
    use h3lab_results::Proto;

    #[test]
    fn one_workload_with_a_violin_per_profile_and_its_protocols_side_by_side() {
        let results = fixture::with_pages();
        let summaries = summarize(&results);
        let workloads = page_workloads(&results, &summaries);
        assert_eq!(workloads.len(), 1);
        let page = &workloads[0];
        assert_eq!(page.workload, "page-small");
        let profiles: Vec<&str> = page.conditions.iter().map(|c| c.profile.as_str()).collect();
        assert_eq!(profiles, ["broadband", "cellular"]);
        for condition in &page.conditions {
            let profile = condition.profile.as_str();
            assert_eq!(
                condition.violin.trace_names(),
                [("h2", profile), ("h3", profile)]
            );
        }
        for condition in &page.conditions {
            assert_eq!(condition.cells.len(), 2);
            for cell in &condition.cells {
                let load = cell.median_load.as_ref().unwrap();
                assert_eq!(load.load.resources.len(), 5);
            }
        }
    }

    #[test]
    fn the_waterfall_comes_from_the_median_repetition() {
        let mut results = fixture::with_pages();
        // Three repetitions of broadband h3 with medians 300, 100 and 200:
        // the median repetition is the one with 200.
        let template = results
            .cells
            .iter()
            .find(|r| {
                r.kind == WorkloadKind::Page && r.profile == "broadband" && r.protocol == Proto::H3
            })
            .unwrap()
            .clone();
        results.cells.retain(|r| {
            !(r.kind == WorkloadKind::Page && r.profile == "broadband" && r.protocol == Proto::H3)
        });
        for (repetition, median) in [(0, 300.0), (1, 100.0), (2, 200.0)] {
            let mut record = template.clone();
            record.repetition = repetition;
            record.metric.samples = vec![median - 1.0, median, median + 1.0];
            fixture::page_mut(&mut record).loads[0].load_ms = median;
            results.cells.push(record);
        }
        let key = CellKey {
            profile: "broadband".into(),
            workload: "page-small".into(),
            protocol: "h3".into(),
            mode: None,
            replica: None,
        };
        let chosen = median_load(&results, &key).unwrap();
        assert_eq!((chosen.repetition, chosen.of_repetitions), (2, 3));
        assert_eq!(chosen.load.load_ms, 200.0);
    }

    #[test]
    fn a_missing_or_foreign_report_is_named() {
        let mut results = fixture::with_pages();
        let key = CellKey {
            profile: "cellular".into(),
            workload: "page-small".into(),
            protocol: "h2".into(),
            mode: None,
            replica: None,
        };
        let record = results.cells.iter_mut().find(|r| is_cell(r, &key)).unwrap();
        record.client_report = None;
        let err = median_load(&results, &key).err().unwrap();
        assert!(err.contains("kept no page report"), "{err}");

        let record = results.cells.iter_mut().find(|r| is_cell(r, &key)).unwrap();
        record.client_report = Some(fixture::load_report(None));
        let err = median_load(&results, &key).err().unwrap();
        assert!(err.contains(h3lab_results::page::PAGE_SCHEMA), "{err}");

        let record = results.cells.iter_mut().find(|r| is_cell(r, &key)).unwrap();
        let why = "a h3lab.page/7 client report, which this h3lab does not read";
        record.client_report = Some(h3lab_results::bench::ClientReport::Unreadable(why.into()));
        let err = median_load(&results, &key).err().unwrap();
        assert!(err.contains(why), "{err}");
    }
}
