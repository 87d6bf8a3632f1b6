//! Page loads: deterministic synthetic sites shaped after the page-load
//! studies, a browser-like loader that discovers a page's resources from
//! its HTML and CSS and fetches them the way a browser's network stack
//! does, a headless Chromium driver, and HAR export of their waterfalls.
//!
//! Not for: serving sites (`h3lab-server` does, with `--site`), emulating
//! the network (`linkem`) or statistics over many loads (`h3lab-report`).

#![warn(missing_docs)]

pub mod chromium;
pub mod discover;
pub mod har;
pub mod loader;
mod schedule;
pub mod site;
