//! Turns bench results (`h3lab.results/1`) into what people read:
//! per-cell statistics, `results.csv`, the end-of-run terminal table, a
//! self-contained `report.html` with plots, and the comparison of two runs;
//! also a small self-contained CDF page for probes' per-stream samples.
//!
//! It does not measure anything or run cells (that is `h3lab-bench`), and
//! it never touches the network: the plotting library is embedded.

#![warn(missing_docs)]

mod bottleneck;
mod captures;
mod cell;
mod compare;
mod conformance;
mod csv_out;
mod distribution;
mod field;
mod format;
mod histogram;
mod html;
mod legs;
mod page_data;
mod page_loads;
mod population;
mod settings;
mod stats;
mod studies;
mod summary;
mod table;
mod verdicts;
mod waterfall;

#[cfg(test)]
mod fixture;

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use h3lab_results::bench::{Results, RESULTS_SCHEMA};

pub use compare::compare;
pub use distribution::{distribution_html, Chart, Series};
pub use field::{field_drift_text, field_origins_text};
pub use h3lab_results::difference::{seed_for, Call, Difference};
pub use table::terminal_table;
pub use verdicts::{calibrate, calibration_table};

use csv_out::write_csv;
use html::render_html;
use summary::summarize;

/// Writes `results.json`, `results.csv` and `report.html` into `out_dir`
/// (created if missing). Each file is written to a temporary file in the
/// same directory and renamed into place, so a reader never sees half a file.
pub fn write_all(results: &Results, out_dir: &Path) -> Result<()> {
    std::fs::create_dir_all(out_dir).with_context(|| {
        format!(
            "cannot create output directory {}: choose a writable directory",
            out_dir.display()
        )
    })?;
    write_atomically(out_dir, "results.json", |w| {
        serde_json::to_writer_pretty(&mut *w, results)?;
        w.write_all(b"\n")?;
        Ok(())
    })?;
    write_atomically(out_dir, "results.csv", |w| {
        write_csv(&summarize(results), w)
    })?;
    write_atomically(out_dir, "report.html", |w| {
        w.write_all(render_html(results).as_bytes())?;
        Ok(())
    })?;
    Ok(())
}

fn write_atomically(
    dir: &Path,
    name: &str,
    fill: impl FnOnce(&mut BufWriter<&File>) -> Result<()>,
) -> Result<()> {
    let target = dir.join(name);
    let context = || {
        format!(
            "cannot write {}: check that the directory is writable and the disk is not full",
            target.display()
        )
    };
    // Readable by others like any report, not tempfile's private 0600.
    let tmp = tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o644))
        .prefix(&format!(".{name}."))
        .tempfile_in(dir)
        .with_context(context)?;
    let mut writer = BufWriter::new(tmp.as_file());
    fill(&mut writer).with_context(context)?;
    writer.flush().with_context(context)?;
    drop(writer);
    tmp.as_file().sync_all().with_context(context)?;
    tmp.persist(&target).with_context(context)?;
    Ok(())
}

/// Reads a `results.json`, refusing other schemas with an error that says
/// what was found.
pub fn load_results(path: &Path) -> Result<Results> {
    let file = File::open(path).with_context(|| {
        format!(
            "cannot open {}: give the path of a results.json written by `h3lab bench`",
            path.display()
        )
    })?;
    let value: serde_json::Value =
        serde_json::from_reader(BufReader::new(file)).with_context(|| {
            format!(
                "{} is not valid JSON: give a results.json written by `h3lab bench`",
                path.display()
            )
        })?;
    let schema = value
        .get("schema")
        .and_then(|s| s.as_str())
        .unwrap_or("none");
    if schema != RESULTS_SCHEMA {
        bail!(
            "{} has schema {schema:?}, this h3lab reads {RESULTS_SCHEMA:?}: re-run `h3lab bench` with this version or use the h3lab that wrote it",
            path.display()
        );
    }
    serde_json::from_value(value).with_context(|| {
        format!(
            "{} does not match schema {RESULTS_SCHEMA}: the file is damaged or was edited; re-run `h3lab bench`",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_three_files_and_reads_them_back() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let mut results = fixture::results();
        // Doubles whose shortest form needs 17 digits must survive a re-render.
        results.cells[0].cpu.server_s = 0.013444000000000001;
        results.cells[0].metric.samples = vec![0.1 + 0.2, 24308.899999999998];
        write_all(&results, &out).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["report.html", "results.csv", "results.json"]);
        for name in &names {
            let mode = std::fs::metadata(out.join(name))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o644, "{name}");
        }

        let back = load_results(&out.join("results.json")).unwrap();
        assert_eq!(back.cells.len(), results.cells.len());
        assert_eq!(
            serde_json::to_value(&back).unwrap(),
            serde_json::to_value(&results).unwrap()
        );
        let again = dir.path().join("again");
        write_all(&back, &again).unwrap();
        assert_eq!(
            std::fs::read(out.join("results.json")).unwrap(),
            std::fs::read(again.join("results.json")).unwrap()
        );
        let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + summarize(&results).len());
    }

    /// A run written before sweeps, server tuning and metrics, the CPU's
    /// interval figures, studies and the link's settings, forwarder CPU
    /// and late packets were recorded.
    #[test]
    fn an_old_results_file_reads_and_renders() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        std::fs::write(&path, include_str!("../tests/data/results-old.json")).unwrap();
        let results = load_results(&path).unwrap();
        let link = results.cells.iter().find_map(|c| c.link.as_ref()).unwrap();
        assert!(link.settings.is_none() && link.down.released_late == 0);
        assert!(results.cells.iter().all(|c| c.sweep.is_none()));
        let summaries = summarize(&results);
        assert_eq!(summaries.len(), results.cells.len());
        let problems: Vec<&String> = summaries.iter().flat_map(|s| &s.problems).collect();
        assert!(
            (problems.iter()).any(|problem| problem.contains("client report left out")),
            "its load report, in a shape this version does not read, is named: {problems:?}"
        );
        let page = render_html(&results);
        assert!(
            page.contains("Emulated link"),
            "the old link statistics show"
        );
        write_all(&results, &dir.path().join("again")).unwrap();
    }

    #[test]
    fn refuses_other_schemas_and_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.json");
        std::fs::write(&path, r#"{"schema":"h3lab.results/0"}"#).unwrap();
        let err = format!("{:#}", load_results(&path).unwrap_err());
        assert!(
            err.contains("h3lab.results/0") && err.contains(RESULTS_SCHEMA),
            "{err}"
        );

        let err = format!(
            "{:#}",
            load_results(&dir.path().join("missing.json")).unwrap_err()
        );
        assert!(
            err.contains("missing.json") && err.contains("h3lab bench"),
            "{err}"
        );
    }
}
