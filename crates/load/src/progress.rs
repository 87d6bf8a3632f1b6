//! The progress bar on stderr: shown only on a terminal, only for runs
//! that last more than about two seconds, never with `--quiet`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::config::LoadConfig;

const SHOW_AFTER: Duration = Duration::from_secs(2);
const TICK: Duration = Duration::from_millis(100);

/// What the bar counts toward.
enum Goal {
    Requests(u64),
    Duration(Duration),
}

pub(crate) struct Progress {
    done: Arc<AtomicU64>,
    goal: Goal,
    enabled: bool,
}

impl Progress {
    /// `requests`: this process's part of the measured requests, if counted.
    pub fn new(config: &LoadConfig, requests: Option<u64>) -> Progress {
        let goal = match (requests, config.duration) {
            (Some(requests), _) => Goal::Requests(requests),
            (None, Some(duration)) => Goal::Duration(duration),
            (None, None) => unreachable!("request_limit is Some when no duration is set"),
        };
        Progress {
            done: Arc::new(AtomicU64::new(0)),
            goal,
            enabled: config.progress && std::io::stderr().is_terminal(),
        }
    }

    /// The counter workers bump once per finished measured attempt.
    pub fn counter(&self) -> Arc<AtomicU64> {
        self.done.clone()
    }

    /// Blocks until every worker has finished, drawing the bar meanwhile.
    pub fn watch<T>(&self, workers: &[JoinHandle<T>], measure_start: Instant) {
        let started = Instant::now();
        let mut bar: Option<ProgressBar> = None;
        while !workers.iter().all(|worker| worker.is_finished()) {
            std::thread::sleep(TICK);
            if !self.enabled || started.elapsed() < SHOW_AFTER {
                continue;
            }
            let bar = bar.get_or_insert_with(|| self.bar());
            let done = self.done.load(Ordering::Relaxed);
            match self.goal {
                Goal::Requests(_) => bar.set_position(done),
                Goal::Duration(_) => {
                    let elapsed = measure_start.elapsed().as_millis() as u64;
                    bar.set_position(elapsed);
                    bar.set_message(format!("{done} requests"));
                }
            }
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
    }

    fn bar(&self) -> ProgressBar {
        let (length, template) = match self.goal {
            Goal::Requests(requests) => (
                requests,
                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} requests ({per_sec}, ETA {eta})",
            ),
            Goal::Duration(duration) => (
                duration.as_millis() as u64,
                "{spinner} [{elapsed_precise}] {wide_bar} {msg} (ETA {eta})",
            ),
        };
        let bar = ProgressBar::new(length);
        bar.set_style(ProgressStyle::with_template(template).expect("the template is valid"));
        bar
    }
}
