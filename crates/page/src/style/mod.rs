//! What a browser's style engine decides about fetching: which `url()`s
//! of a page's CSS some element uses, and which web font faces its text
//! needs. A browser fetches a background image only when the declaration
//! wins the cascade for some element, and a font face only when some
//! rendered text is styled with its family, style and weight and has a
//! character in its `unicode-range`. This is a small cascade over the few
//! properties that decide those fetches (`font-*`, `display` and the
//! image-bearing ones), on a DOM parsed with html5ever and matched with
//! Servo's selector engine. Pure: text in, discoveries out.
//!
//! What it does not model: scripts (an element a script adds is not
//! styled), layout (an element off-screen is styled like any other),
//! media queries other than `print`, and font fallback for characters a
//! face turns out not to have.
//!
//! The parts: `sheet` parses stylesheets, `selector` rewrites their
//! selectors for the matcher, `cascade` decides which declarations win
//! for each element and walks the document, and `fonts` picks the faces
//! the styled text needs. This module ties them together in [`fetched`].

mod cascade;
mod fonts;
mod selector;
mod sheet;

use std::collections::{BTreeMap, HashMap, HashSet};

use h3lab_results::ResourceKind;
use scraper::Html;
use url::Url;

use cascade::{author_sheets, style_tree, Inherited, Rules};
use sheet::Face;

pub use sheet::Sheet;

/// A file styling uses: an image or a font.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StyleResource {
    /// Absolute, without its fragment.
    pub url: Url,
    /// [`ResourceKind::Image`] or [`ResourceKind::Font`].
    pub kind: ResourceKind,
}

/// The stylesheets' images some element uses, and the font faces some
/// rendered text needs, for the document `html` at `page`, with the
/// external stylesheets that have arrived so far (by URL). Stylesheets
/// not yet arrived are left out; a caller asks again when they come.
pub fn fetched(html: &str, page: &Url, sheets: &HashMap<Url, Sheet>) -> Vec<StyleResource> {
    let dom = Html::parse_document(html);
    let author = author_sheets(&dom, page, sheets);
    let rules = Rules::new(&author);
    let mut out = rules.images_beyond_the_engine();
    let mut text = BTreeMap::new();
    style_tree(
        dom.root_element(),
        &Inherited::root(),
        &rules,
        page,
        &mut out,
        &mut text,
    );
    let faces: Vec<&Face> = author.iter().flat_map(|sheet| &sheet.faces).collect();
    for (request, characters) in text {
        out.extend(
            fonts::faces_for(&request, &characters, &faces)
                .into_iter()
                .cloned(),
        );
    }
    let mut seen = HashSet::new();
    out.retain(|d| seen.insert(d.url.clone()));
    out
}

/// What the tests of every part share: a page, and what it fetches.
#[cfg(test)]
mod test_support {
    use super::*;

    pub(super) fn page() -> Url {
        Url::parse("https://site.test/dir/page.html").unwrap()
    }

    /// The paths the page fetches for `html` with one external sheet,
    /// `/main.css`, holding `css`.
    pub(super) fn fetched_paths(html: &str, css: &str) -> Vec<String> {
        let sheet_url = Url::parse("https://site.test/main.css").unwrap();
        let sheets = HashMap::from([(sheet_url.clone(), Sheet::parse(css, &sheet_url))]);
        let html = format!(
            "<!doctype html><html><head><link rel=stylesheet href=/main.css></head>{html}</html>"
        );
        fetched(&html, &page(), &sheets)
            .into_iter()
            .map(|d| d.url.path().to_string())
            .collect()
    }

    /// [`fetched_paths`], sorted.
    pub(super) fn sorted_fetched_paths(html: &str, css: &str) -> Vec<String> {
        let mut paths = fetched_paths(html, css);
        paths.sort();
        paths
    }

    /// Font faces and rules as rustdoc's pages have them.
    pub(super) const RUSTDOC_FACES: &str = r#"
        @font-face { font-family: 'Source Serif 4'; font-style: normal; font-weight: 400;
            src: local('Source Serif 4'), url(/serif.woff2) format("woff2") }
        @font-face { font-family: 'Source Serif 4'; font-style: italic; font-weight: 400;
            src: url(/serif-it.woff2) format("woff2") }
        @font-face { font-family: 'Source Serif 4'; font-style: normal; font-weight: 700;
            src: url(/serif-bold.woff2) format("woff2") }
        @font-face { font-family: 'Source Code Pro'; font-style: normal; font-weight: 400;
            src: url(/code.woff2) format("woff2") }
        @font-face { font-family: 'Source Code Pro'; font-style: italic; font-weight: 400;
            src: url(/code-it.woff2) format("woff2") }
        @font-face { font-family: 'Source Code Pro'; font-style: normal; font-weight: 600;
            src: url(/code-semibold.woff2) format("woff2") }
        @font-face { font-family: Unused; src: url(/unused.woff2) }
        body { font: 16px/1.4 "Source Serif 4", NanumBarunGothic, serif }
        code, pre { font-family: "Source Code Pro", monospace }
        h1 code { font-weight: 600 }"#;
}
