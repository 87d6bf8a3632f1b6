//! Page loads: a browser-like loader that discovers a page's resources
//! from its HTML, CSS and module imports and fetches them the way a
//! browser's network stack does, headless Chromium (DevTools) and Firefox
//! (WebDriver BiDi) drivers, and HAR export of their waterfalls. With the
//! `clap` feature, `h3lab page`'s flags (`cli`) and the loaders' options
//! they ask for, a replay site's included.
//!
//! Not for: generating sites (`h3lab-site`), serving them (`h3lab-server`,
//! with `--site`), emulating the network (`linkem`) or statistics over many
//! loads (`h3lab-report`).

#![warn(missing_docs)]

pub mod chromium;
#[cfg(feature = "clap")]
pub mod cli;
mod decode;
pub mod discover;
pub mod firefox;
pub mod har;
mod json_socket;
pub mod loader;
mod rules;
mod schedule;
pub mod style;
mod visits;

use anyhow::bail;
use h3lab_results::{Proto, Visit};

/// Auto runs cold (first) or repeat visits, not warm ones: its repeat
/// visit is the returning user's, with new connections.
pub fn check_visit(proto: Proto, visit: Visit) -> anyhow::Result<()> {
    if (proto, visit) == (Proto::Auto, Visit::Warm) {
        bail!("auto runs cold (first) or repeat visits; use --visit cold or --visit repeat");
    }
    Ok(())
}
