//! Deterministic synthetic sites shaped after the page-load studies: the
//! same shape and seed always give byte-identical files.
//!
//! Sizes are in decimal units: 1 KB = 1,000 bytes and 1 MB = 1,000,000
//! bytes. Every size is drawn from a ChaCha generator seeded with the seed,
//! lies in its range, and the sizes of a shape's assets sum exactly to its
//! total. The index page (`/index.html`) is not an asset: its bytes are not
//! part of that total (see [`SiteSummary::total_bytes`]).
//!
//! | shape | assets | total |
//! | --- | --- | --- |
//! | `small` | 10 scripts of 2–100 KB, 10 images of 1–50 KB | 600 KB |
//! | `content` | 50 scripts of 2 KB–1 MB, 55 images of 1 KB–1 MB | 10 MB |
//! | `spa` | 85 scripts of 2 KB–1 MB, 30 images of 1–50 KB | 15 MB |
//! | `cms` | 3 stylesheets, 3 fonts, 6 scripts, 15 images (below) | 1.5 MB |
//!
//! **Scripts of `small`, `content` and `spa`:** about 6 % (at least one)
//! are classic render-blocking `<script src>` in `<head>` (`/js/head-NN.js`),
//! 10 % (at least one) are `<script defer>` (`/js/defer-NN.js`), and the rest
//! are ES modules in three levels: a third are `<script type=module>` entries
//! (`/js/app-NN.js`), each of which statically imports level-2 modules
//! (`/js/lib-NN.js`), which import level-3 ones (`/js/util-NN.js`). The
//! longest chain is document → app → lib → util: four fetches in sequence,
//! three after the document. The largest image is `/img/hero.png`
//! (640×360 px), the first `<img>`; the others are `/img/photo-NN.png`
//! (320×180 px).
//!
//! **`cms`**, a static CMS-like page (study E), 1,500,000 bytes in all:
//! - stylesheets (5–60 KB each): `/css/main.css` and `/css/theme.css` are
//!   linked in `<head>`; `main.css` `@import`s `/css/base.css`, which declares
//!   three `@font-face`s;
//! - fonts (15–60 KB each): `/fonts/body-regular.woff2` (body text),
//!   `/fonts/body-bold.woff2` (`<strong>`) and `/fonts/heading.woff2`
//!   (`<h1>`, `<h2>`);
//! - scripts (5–150 KB each): `/js/vendor-01.js` and `/js/vendor-02.js`
//!   render-blocking in `<head>`, `/js/site-01.js` and `/js/site-02.js`
//!   deferred, and the module `/js/app-01.js`, which imports `/js/lib-01.js`;
//! - images: `/img/hero.png` (80–250 KB), 11 `/img/photo-NN.png` (10–150 KB
//!   each) as `<img>`s, and 3 CSS backgrounds (2–40 KB each):
//!   `/img/bg-1.png` from `main.css` on the `<header>`, `/img/bg-2.png` from
//!   `base.css` and `/img/bg-3.png` from `theme.css` on `<section>`s.
//!
//! The longest chain is document → main.css → base.css → fonts and
//! `bg-2.png`: four fetches in sequence, three after the document.
//!
//! Every URL a stylesheet references is used by the page (each background
//! is on an element, each font face styles visible text), every image is an
//! `<img>` with `width` and `height` (none lazy), and `<link rel=icon
//! href="data:,">` stops browsers asking for `/favicon.ico`, so a browser
//! and a loader that fetches everything referenced fetch the same set. All
//! references are absolute paths (`/js/...`), so a site must be served at `/`.
//!
//! Files are valid for a browser: scripts are JavaScript (modules export a
//! name), padded with a comment of seeded letters; images are 1-bit PNGs
//! with a private ancillary `paDd` chunk of filler; stylesheets are CSS
//! padded with a comment. Fonts start with the `wOF2` signature followed by
//! seeded bytes: they have the size of a font but do not decode (a browser
//! fetches them and then falls back to its own fonts).
//!
//! [`har`] rebuilds a captured page (a HAR file) as a [`replay`] site
//! instead: every origin's responses, their bodies as sent on the wire.
//!
//! Not for: serving sites (`h3lab serve --site`) or loading them
//! (`h3lab-page`).

#![warn(missing_docs)]

pub mod har;
mod layout;
mod render;
pub mod replay;
mod sizes;
#[cfg(test)]
mod tests;

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use h3lab_results::ResourceKind;

use render::GENERATOR_MARK;

/// A site shape from the page-load studies (see the [crate docs](crate)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Study C's small site: 10 scripts and 10 images, 600 KB.
    Small,
    /// Study C's content site: 50 scripts and 55 images, 10 MB.
    Content,
    /// Study C's single-page app: 85 scripts and 30 images, 15 MB.
    Spa,
    /// Study E's static CMS page: stylesheets, web fonts, scripts and
    /// images, 1.5 MB.
    Cms,
}

impl Shape {
    /// Every shape, smallest study first.
    pub const ALL: [Shape; 4] = [Shape::Small, Shape::Content, Shape::Spa, Shape::Cms];

    /// The shape's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Small => "small",
            Shape::Content => "content",
            Shape::Spa => "spa",
            Shape::Cms => "cms",
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a [`Shape`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownShape(pub String);

impl fmt::Display for UnknownShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown site shape `{}`: use small, content, spa or cms",
            self.0
        )
    }
}

impl std::error::Error for UnknownShape {}

impl FromStr for Shape {
    type Err = UnknownShape;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Shape::ALL
            .into_iter()
            .find(|shape| shape.name() == text)
            .ok_or_else(|| UnknownShape(text.to_string()))
    }
}

/// One file of a site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteFile {
    /// Its URL path, e.g. `/js/app-03.js`; the file lies at the same
    /// relative path in the site directory.
    pub path: String,
    /// What kind of resource a page load sees it as.
    pub kind: ResourceKind,
    /// Its exact size in bytes.
    pub bytes: u64,
}

/// What a site holds: every file, the index page first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteSummary {
    /// The shape generated.
    pub shape: Shape,
    /// The seed the sizes and filler came from.
    pub seed: u64,
    /// Every file of the site, `/index.html` (a [`ResourceKind::Document`]) first.
    pub files: Vec<SiteFile>,
}

impl SiteSummary {
    /// Bytes of all assets: every file except the index page, which is not
    /// part of the studies' payloads (e.g. exactly 600,000 for `small`).
    pub fn total_bytes(&self) -> u64 {
        self.assets().map(|file| file.bytes).sum()
    }

    /// How many files are of `kind` (1 for [`ResourceKind::Document`]).
    pub fn count(&self, kind: ResourceKind) -> usize {
        self.files.iter().filter(|file| file.kind == kind).count()
    }

    /// Bytes of the files of `kind`.
    pub fn bytes(&self, kind: ResourceKind) -> u64 {
        let of_kind = self.files.iter().filter(|file| file.kind == kind);
        of_kind.map(|file| file.bytes).sum()
    }

    /// Every file but the index page.
    pub fn assets(&self) -> impl Iterator<Item = &SiteFile> {
        let assets = self.files.iter();
        assets.filter(|file| file.kind != ResourceKind::Document)
    }
}

/// A line per kind of file present (count and bytes), then the assets'
/// total.
impl fmt::Display for SiteSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ResourceKind::*;
        for kind in [Document, Stylesheet, Font, Script, Image, Other] {
            let count = self.count(kind);
            if count > 0 {
                let bytes = self.bytes(kind);
                writeln!(
                    f,
                    "  {:<11} {count:>4} files {bytes:>11} bytes",
                    kind.name()
                )?;
            }
        }
        let assets = self.files.len() - self.count(Document);
        writeln!(
            f,
            "  {:<11} {assets:>4} files {:>11} bytes (assets; the document not counted)",
            "total",
            self.total_bytes()
        )
    }
}

/// What [`generate`] would write, without writing anything.
pub fn plan(shape: Shape, seed: u64) -> SiteSummary {
    let layout = layout::layout(shape, seed);
    let files = render::files(&layout).into_iter().map(|(file, _)| file);
    SiteSummary {
        shape,
        seed,
        files: files.collect(),
    }
}

/// Writes the site of `shape` and `seed` into `out`, created if missing.
/// Deterministic: the same shape and seed give byte-identical files.
///
/// A non-empty `out` is refused unless it holds a site generated earlier,
/// which is then replaced.
pub fn generate(shape: Shape, seed: u64, out: &Path) -> Result<SiteSummary> {
    prepare(out)?;
    let layout = layout::layout(shape, seed);
    let files = render::files(&layout);
    for (position, (file, source)) in files.iter().enumerate() {
        let bytes = render::contents(&layout, position, file, source)?;
        write_file(out, &file.path, &bytes)?;
    }
    Ok(SiteSummary {
        shape,
        seed,
        files: files.into_iter().map(|(file, _)| file).collect(),
    })
}

fn write_file(out: &Path, url_path: &str, bytes: &[u8]) -> Result<()> {
    let path = out.join(url_path.trim_start_matches('/'));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// What a generated site's directory holds at its top level.
const GENERATED_ENTRIES: [&str; 5] = ["index.html", "css", "fonts", "js", "img"];

/// Creates `out`, or empties it if it holds an earlier generated site.
fn prepare(out: &Path) -> Result<()> {
    if !out.exists() {
        return std::fs::create_dir_all(out)
            .with_context(|| format!("cannot create the site directory {}", out.display()));
    }
    if !out.is_dir() {
        bail!(
            "{} is not a directory; pass a new or empty directory with --out",
            out.display()
        );
    }
    let entries = entry_names(out)?;
    if entries.is_empty() {
        return Ok(());
    }
    if !is_generated_site(out, &entries) {
        bail!(
            "{} is not empty and does not hold a site h3lab generated; \
             pass a new or empty directory with --out (or remove this one)",
            out.display()
        );
    }
    remove_entries(out, &entries)
}

/// Removes the files and directories `names` in `dir`: an earlier site
/// being replaced.
fn remove_entries(dir: &Path, names: &[impl AsRef<Path>]) -> Result<()> {
    for name in names {
        let path = dir.join(name);
        let removed = match path.is_dir() {
            true => std::fs::remove_dir_all(&path),
            false => std::fs::remove_file(&path),
        };
        removed.with_context(|| format!("cannot remove the old {}", path.display()))?;
    }
    Ok(())
}

fn entry_names(dir: &Path) -> Result<Vec<String>> {
    let listing =
        std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    let mut names = Vec::new();
    for entry in listing {
        let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}

fn is_generated_site(dir: &Path, entries: &[String]) -> bool {
    let known = entries
        .iter()
        .all(|name| GENERATED_ENTRIES.contains(&name.as_str()));
    let index = std::fs::read_to_string(dir.join("index.html")).unwrap_or_default();
    known && index.contains(GENERATOR_MARK)
}
