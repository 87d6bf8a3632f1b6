//! The cascade: which of the page's stylesheets apply and in what order,
//! which declaration wins each slot for an element (importance, origin,
//! specificity, order), and the walk down the document that collects the
//! images winning declarations use and the text each font styles. Rules
//! are bucketed by their selector's key, so that an element is matched
//! only against the rules that can match it.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use cssparser::Parser;
use scraper::{ElementRef, Html, Node};
use url::Url;

use super::fonts::{bolder, lighter, FontRequest};
use super::selector::{Complex, Key};
use super::sheet::{
    applies_to_screen, declaration, substitute, Declaration, FontStyle, Sheet, Slot, Value, Weight,
};
use super::StyleResource;

/// The parts of a browser's own stylesheet that decide fetches.
const USER_AGENT_CSS: &str = "
    head, script, style, title, template, noscript, link, meta, base, datalist,
    area, param, rp, noembed, noframes, [hidden] { display: none }
    details:not([open]) > :not(summary) { display: none }
    b, strong { font-weight: bolder }
    h1, h2, h3, h4, h5, h6, th { font-weight: bold }
    i, em, cite, var, dfn, address { font-style: italic }
    code, kbd, samp, pre, tt { font-family: monospace }
";

/// [`USER_AGENT_CSS`], parsed once; it has no `url()` to resolve.
static USER_AGENT: std::sync::LazyLock<Sheet> = std::sync::LazyLock::new(|| {
    Sheet::parse(
        USER_AGENT_CSS,
        &Url::parse("about:blank").expect("a valid URL"),
    )
});

/// Import loops end here; browsers cut them too.
const MAX_IMPORT_DEPTH: usize = 8;

/// The page's stylesheets in cascade order: each `<style>`, and each
/// `<link rel=stylesheet>` that has arrived (in `sheets`, by URL), each
/// after its imports.
pub(super) fn author_sheets<'a>(
    dom: &Html,
    page: &Url,
    sheets: &'a HashMap<Url, Sheet>,
) -> Vec<Cow<'a, Sheet>> {
    let mut author = Vec::new();
    for element in dom
        .root_element()
        .descendants()
        .filter_map(ElementRef::wrap)
    {
        let sheet = match element.value().name() {
            "style" => {
                let css: String = element.text().collect();
                Cow::Owned(Sheet::parse(&css, page))
            }
            "link" => match linked_sheet(element, page).and_then(|url| sheets.get(&url)) {
                Some(sheet) => Cow::Borrowed(sheet),
                None => continue,
            },
            _ => continue,
        };
        push_with_imports(sheet, sheets, &mut author, 0);
    }
    author
}

/// The URL of the stylesheet a `<link>` applies on a screen, if it
/// links one: not an alternate, not disabled, and for screen media.
fn linked_sheet(link: ElementRef<'_>, page: &Url) -> Option<Url> {
    let attr = |name| link.value().attr(name).unwrap_or_default();
    let rel = attr("rel").to_ascii_lowercase();
    let rels: Vec<&str> = rel.split_ascii_whitespace().collect();
    let applies = rels.contains(&"stylesheet")
        && !rels.contains(&"alternate")
        && link.value().attr("disabled").is_none()
        && applies_to_screen(&attr("media").to_ascii_lowercase());
    let mut url = applies
        .then(|| page.join(attr("href").trim()).ok())
        .flatten()?;
    url.set_fragment(None);
    Some(url)
}

fn push_with_imports<'a>(
    sheet: Cow<'a, Sheet>,
    sheets: &'a HashMap<Url, Sheet>,
    out: &mut Vec<Cow<'a, Sheet>>,
    depth: usize,
) {
    if depth > MAX_IMPORT_DEPTH {
        return;
    }
    for import in &sheet.imports {
        if let Some(imported) = sheets.get(import) {
            push_with_imports(Cow::Borrowed(imported), sheets, out, depth + 1);
        }
    }
    out.push(sheet);
}

/// Where a declaration comes from: the browser's own sheet loses to the
/// page's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Origin {
    UserAgent,
    Author,
}

/// A rule in cascade order.
struct Entry<'a> {
    origin: Origin,
    order: usize,
    selector: &'a Complex,
    declarations: &'a [Declaration],
}

/// The entries by the key of their selector, so that an element is
/// matched only against rules that can match it.
#[derive(Default)]
struct Index {
    keyed: HashMap<Key, Vec<usize>>,
    unkeyed: Vec<usize>,
}

impl Index {
    fn new(entries: &[Entry<'_>]) -> Index {
        let mut index = Index::default();
        for (i, entry) in entries.iter().enumerate() {
            match &entry.selector.key {
                Some(key) => index.keyed.entry(key.clone()).or_default().push(i),
                None => index.unkeyed.push(i),
            }
        }
        index
    }

    /// The entries that may match `element`.
    fn candidates(&self, element: ElementRef<'_>) -> Vec<usize> {
        let el = element.value();
        let mut keys = vec![Key::Tag(el.name().to_string())];
        keys.extend(el.id().map(|id| Key::Id(id.to_string())));
        keys.extend(el.classes().map(|c| Key::Class(c.to_string())));
        let mut out = self.unkeyed.clone();
        for key in keys {
            out.extend(self.keyed.get(&key).into_iter().flatten());
        }
        out
    }
}

/// The rules of the browser's sheet and the page's, in cascade order and
/// indexed; and the declarations of selectors beyond the engine.
pub(super) struct Rules<'a> {
    entries: Vec<Entry<'a>>,
    index: Index,
    beyond_the_engine: Vec<&'a [Declaration]>,
}

impl<'a> Rules<'a> {
    pub(super) fn new(author: &'a [Cow<'_, Sheet>]) -> Rules<'a> {
        let mut entries = Vec::new();
        let mut beyond_the_engine = Vec::new();
        let origins = std::iter::once((Origin::UserAgent, &*USER_AGENT))
            .chain(author.iter().map(|sheet| (Origin::Author, sheet.as_ref())));
        for (origin, sheet) in origins {
            for rule in &sheet.rules {
                for selector in &rule.selectors {
                    if selector.matcher.is_none() {
                        beyond_the_engine.push(rule.declarations.as_slice());
                        continue;
                    }
                    entries.push(Entry {
                        origin,
                        order: entries.len(),
                        selector,
                        declarations: &rule.declarations,
                    });
                }
            }
        }
        let index = Index::new(&entries);
        Rules {
            entries,
            index,
            beyond_the_engine,
        }
    }

    /// The images of rules whose selectors the engine cannot match:
    /// fetched, as a loader without a cascade would.
    pub(super) fn images_beyond_the_engine(&self) -> Vec<StyleResource> {
        self.beyond_the_engine
            .iter()
            .flat_map(|declarations| {
                let cascade = Cascade::from_rule(declarations);
                cascade.images().cloned().collect::<Vec<_>>()
            })
            .collect()
    }

    /// The cascades of `element` and of each of its pseudo-elements, from
    /// the rules that match it.
    fn matched(&self, element: ElementRef<'_>) -> (Cascade<'a>, BTreeMap<&'a str, Cascade<'a>>) {
        let mut own = Cascade::default();
        let mut pseudos: BTreeMap<&str, Cascade<'_>> = BTreeMap::new();
        for entry in self
            .index
            .candidates(element)
            .into_iter()
            .map(|i| &self.entries[i])
        {
            let matcher = entry
                .selector
                .matcher
                .as_ref()
                .expect("entries have matchers");
            if !matcher.matches(&element) {
                continue;
            }
            let cascade = match entry.selector.pseudo.as_deref() {
                Some(pseudo) => pseudos.entry(pseudo).or_default(),
                None => &mut own,
            };
            cascade.apply(
                (entry.origin, entry.selector.specificity, entry.order),
                entry.declarations,
            );
        }
        (own, pseudos)
    }
}

/// Why a declaration wins: importance, origin, specificity, order.
type Precedence = (bool, Origin, u32, usize);

/// The declarations that apply to one element or pseudo-element, the
/// winner of each slot.
#[derive(Default)]
struct Cascade<'a> {
    winners: BTreeMap<Slot, (Precedence, &'a Value)>,
}

impl<'a> Cascade<'a> {
    /// One rule's declarations alone, the later winning a slot.
    fn from_rule(declarations: &'a [Declaration]) -> Cascade<'a> {
        let mut cascade = Cascade::default();
        cascade.apply((Origin::Author, 0, 0), declarations);
        cascade
    }

    fn apply(&mut self, precedence: (Origin, u32, usize), declarations: &'a [Declaration]) {
        for d in declarations {
            let (origin, specificity, order) = precedence;
            let key = (d.important, origin, specificity, order);
            let slot = self
                .winners
                .entry(d.slot.clone())
                .or_insert((key, &d.value));
            if key >= slot.0 {
                *slot = (key, &d.value);
            }
        }
    }

    fn value(&self, slot: &Slot) -> Option<&'a Value> {
        self.winners.get(slot).map(|(_, value)| *value)
    }

    /// The custom properties this cascade sets.
    fn custom(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.winners
            .iter()
            .filter_map(|(slot, (_, value))| match (slot, value) {
                (Slot::Custom(name), Value::Custom(text)) => Some((name.clone(), text.clone())),
                _ => None,
            })
    }

    fn images(&self) -> impl Iterator<Item = &'a StyleResource> + '_ {
        self.winners.values().flat_map(|(_, value)| match value {
            Value::Images(images) => images.as_slice(),
            _ => &[],
        })
    }
}

/// What an element hands its children.
#[derive(Clone)]
pub(super) struct Inherited {
    font: FontRequest,
    hidden: bool,
    /// Custom properties, which every element inherits.
    custom: BTreeMap<String, String>,
}

impl Inherited {
    /// What the root element inherits: the browser's default font.
    pub(super) fn root() -> Inherited {
        Inherited {
            font: FontRequest {
                families: vec!["serif".into()],
                style: FontStyle::Normal,
                weight: 400,
            },
            hidden: false,
            custom: BTreeMap::new(),
        }
    }

    /// What an element whose cascade is `own` hands its children.
    fn from_cascade(own: &Cascade<'_>, parent: &Inherited, page: &Url) -> Inherited {
        let mut custom = parent.custom.clone();
        custom.extend(own.custom());
        Inherited {
            font: computed_font(own, &parent.font, &custom, page),
            hidden: matches!(own.value(&Slot::Display), Some(Value::DisplayNone(true))),
            custom,
        }
    }
}

/// Styles `element` and its subtree: collects the images their winning
/// declarations use and the text each font request styles.
pub(super) fn style_tree(
    element: ElementRef<'_>,
    parent: &Inherited,
    rules: &Rules<'_>,
    page: &Url,
    images: &mut Vec<StyleResource>,
    text: &mut BTreeMap<FontRequest, String>,
) {
    if parent.hidden {
        return;
    }
    let inline = element
        .value()
        .attr("style")
        .map(|css| Sheet::inline(css, page))
        .unwrap_or_default();
    let (mut own, pseudos) = rules.matched(element);
    own.apply((Origin::Author, u32::MAX, usize::MAX), &inline);
    // An element's own images load even when it is `display: none`;
    // its subtree is never styled.
    images.extend(own.images().cloned());
    for cascade in pseudos.values() {
        images.extend(cascade.images().cloned());
    }
    let inherited = Inherited::from_cascade(&own, parent, page);
    if inherited.hidden {
        return;
    }
    for child in element.children() {
        match child.value() {
            Node::Text(t) if !t.trim().is_empty() => {
                text.entry(inherited.font.clone()).or_default().push_str(t);
            }
            Node::Element(_) => {
                if let Some(child) = ElementRef::wrap(child) {
                    style_tree(child, &inherited, rules, page, images, text);
                }
            }
            _ => {}
        }
    }
}

/// The font an element's text asks for: its cascade's font properties,
/// each inherited from `parent` where the cascade sets none.
fn computed_font(
    cascade: &Cascade<'_>,
    parent: &FontRequest,
    custom: &BTreeMap<String, String>,
    page: &Url,
) -> FontRequest {
    // A value that waits for `var()`s is read now; one that cannot be
    // (a missing property, no fallback) is as if unset: inherited.
    let value = |slot: &Slot| -> Option<Value> {
        match cascade.value(slot)? {
            Value::Pending(property, written) => {
                let substituted = substitute(written, custom)?;
                let declared = declaration(property, &mut Parser::new(&substituted), page);
                declared
                    .into_iter()
                    .find(|d| d.slot == *slot)
                    .map(|d| d.value)
            }
            value => Some(value.clone()),
        }
    };
    let families = match value(&Slot::FontFamily) {
        Some(Value::Families(families)) if !families.is_empty() => families,
        _ => parent.families.clone(),
    };
    let style = match value(&Slot::FontStyle) {
        Some(Value::Style(style)) => style,
        _ => parent.style,
    };
    let weight = match value(&Slot::FontWeight).as_ref() {
        Some(Value::Weight(Weight::Absolute(w))) => *w,
        Some(Value::Weight(Weight::Bolder)) => bolder(parent.weight),
        Some(Value::Weight(Weight::Lighter)) => lighter(parent.weight),
        _ => parent.weight,
    };
    FontRequest {
        families,
        style,
        weight,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fetched;
    use super::super::test_support::{fetched_paths, page, sorted_fetched_paths, RUSTDOC_FACES};
    use super::*;

    /// The marker of a `<details class=toggle>`: a plus while closed, a
    /// minus while open, as rustdoc draws them.
    const DETAILS_MARKERS: &str = "
        details.toggle > summary::before { background-image: url(/plus.svg) }
        details.toggle[open] > summary::before { background-image: url(/minus.svg) }";

    #[test]
    fn an_image_is_fetched_only_for_a_declaration_that_wins_for_some_element() {
        let hero = "<div class=hero>h</div>";
        let gone = "<div class=gone><span>hidden</span></div>";
        // (case, css, body, the images fetched)
        let cases: &[(&str, &str, &str, &[&str])] = &[
            (
                "a rule no element matches",
                ".missing { background: url(/no-element.png) }",
                "<div>x</div>",
                &[],
            ),
            (
                "an open details' pseudo-element: the more specific rule wins",
                DETAILS_MARKERS,
                "<details class=toggle open><summary>s</summary>t</details>",
                &["/minus.svg"],
            ),
            (
                "a closed details' pseudo-element: only the first rule matches",
                DETAILS_MARKERS,
                "<details class=toggle><summary>s</summary>t</details>",
                &["/plus.svg"],
            ),
            (
                "a longhand overridden by a more specific shorthand with no image",
                ".hero { background-image: url(/overridden.png) } div.hero { background: red }",
                hero,
                &[],
            ),
            (
                "a :hover rule: nothing is hovered on load",
                "a:hover { background: url(/hover.png) }",
                "<a href=/x>x</a>",
                &[],
            ),
            (
                "a :not(:hover) rule: every element is not hovered",
                "a:not(:hover) { list-style: url(/bullet.png) }",
                "<a href=/x>x</a>",
                &["/bullet.png"],
            ),
            (
                "a print media rule",
                "@media print { .hero { background: url(/print.png) } }",
                hero,
                &[],
            ),
            (
                "a screen media rule with a size query, taken to hold",
                "@media screen and (min-width: 10px) { .hero { cursor: url(/cursor.png), auto } }",
                hero,
                &["/cursor.png"],
            ),
            (
                "a display: none element's own image",
                ".gone { display: none; background: url(/own.png) }",
                gone,
                &["/own.png"],
            ),
            (
                "an image inside a display: none element",
                ".gone { display: none } .gone span { background: url(/inside-hidden.png) }",
                gone,
                &[],
            ),
            (
                "an inline style",
                "",
                r#"<p style="background: url('/inline.png')">p</p>"#,
                &["/inline.png"],
            ),
        ];
        for (case, css, body, expected) in cases {
            let paths = sorted_fetched_paths(&format!("<body>{body}</body>"), css);
            assert_eq!(paths, *expected, "{case}");
        }
    }

    #[test]
    fn a_selector_beyond_the_engine_keeps_its_images_and_imports_come_first() {
        let imported = Url::parse("https://site.test/base.css").unwrap();
        let main = Url::parse("https://site.test/main.css").unwrap();
        let sheets = HashMap::from([
            (main.clone(), Sheet::parse(r#"@import "base.css"; p { background: url(/main.png) }"#, &main)),
            (
                imported.clone(),
                Sheet::parse("p { background: url(/base.png) } :-moz-focusring { background: url(/unknown.png) }", &imported),
            ),
        ]);
        let html =
            "<html><head><link rel=stylesheet href=/main.css></head><body><p>x</p></body></html>";
        let paths: Vec<String> = fetched(html, &page(), &sheets)
            .into_iter()
            .map(|d| d.url.path().to_string())
            .collect();
        assert_eq!(
            paths,
            ["/unknown.png", "/main.png"],
            "the importing sheet's rule wins"
        );
        assert_eq!(sheets[&main].imports, [imported]);
    }

    #[test]
    fn a_sheet_not_yet_arrived_or_disabled_adds_nothing() {
        let sheet_url = Url::parse("https://site.test/theme.css").unwrap();
        let sheets = HashMap::from([(
            sheet_url.clone(),
            Sheet::parse("p { background: url(/t.png) }", &sheet_url),
        )]);
        let disabled = "<head><link rel=stylesheet href=/theme.css disabled></head><p>x</p>";
        assert!(fetched(disabled, &page(), &sheets).is_empty());
        let absent = "<head><link rel=stylesheet href=/other.css></head><p>x</p>";
        assert!(fetched(absent, &page(), &sheets).is_empty());
    }

    #[test]
    fn a_where_rule_matches_but_loses_to_any_later_rule() {
        let html = "<body><div id=hero><div>x</div></div></body>";
        let alone = fetched_paths(html, ":where(#hero) div { background: url(/where.png) }");
        assert_eq!(alone, ["/where.png"], "its selector matches the inner div");
        // A later `div` rule beats `:where(#hero) div`: both have the
        // specificity of `div`. The outer div matches no `:where` rule.
        let both = fetched_paths(
            html,
            ":where(#hero) div { background: url(/where.png) } div { background: url(/plain.png) }",
        );
        assert_eq!(both, ["/plain.png"]);
        // An earlier `div` rule loses to it, as it would to `div div`.
        let earlier = sorted_fetched_paths(
            html,
            "div { background: url(/plain.png) } :where(#hero) div { background: url(/where.png) }",
        );
        assert_eq!(earlier, ["/plain.png", "/where.png"]);
    }

    #[test]
    fn custom_properties_reach_the_font_properties_through_var() {
        // As the Rust book (mdBook) sets its code font: the one face, 500.
        let css = r#"
            @font-face { font-family: 'Source Code Pro'; font-weight: 500; src: url(/code-500.woff2) }
            @font-face { font-family: Text; src: url(/text.woff2) }
            :root { --mono-font: "Source Code Pro", monospace; --body: Text, serif }
            body { font-family: var(--body) }
            code { font-family: var(--mono-font) !important }
            em { font-family: var(--Missing) }
            pre { font-family: var(--missing, var(--mono-font)) }"#;
        let paths = |html: &str| sorted_fetched_paths(html, css);
        assert_eq!(paths("<body><code>x</code></body>"), ["/code-500.woff2"]);
        assert_eq!(paths("<body><p>text</p></body>"), ["/text.woff2"]);
        // A var() with neither a value nor a fallback leaves the property
        // as if unset: the parent's family.
        assert_eq!(paths("<body><em>text</em></body>"), ["/text.woff2"]);
        assert_eq!(paths("<body><pre>x</pre></body>"), ["/code-500.woff2"]);
    }

    #[test]
    fn hidden_text_needs_no_font() {
        let html = "<head><title>Title text</title></head><body><div hidden><code>x</code></div>\
                    <details><summary> </summary><p>closed</p></details></body>";
        assert!(fetched_paths(html, RUSTDOC_FACES).is_empty());
    }
}
