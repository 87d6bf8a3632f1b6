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

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use cssparser::{Parser, Token};
use h3lab_results::ResourceKind;
use scraper::{ElementRef, Html, Node};
use url::Url;

/// A file styling uses: an image or a font.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetch {
    /// Absolute, without its fragment.
    pub url: Url,
    /// [`ResourceKind::Image`] or [`ResourceKind::Font`].
    pub kind: ResourceKind,
}

/// One stylesheet, parsed: its `@import`s, style rules and font faces.
#[derive(Debug, Clone, Default)]
pub struct Sheet {
    /// The stylesheets it imports, in order; their rules come first.
    pub imports: Vec<Url>,
    rules: Vec<Rule>,
    faces: Vec<Face>,
}

#[derive(Debug, Clone)]
struct Rule {
    selectors: Vec<Complex>,
    declarations: Vec<Declaration>,
}

/// One selector of a rule's list, with what a fresh page load can match.
#[derive(Debug, Clone)]
struct Complex {
    /// `None` when the selector is beyond the engine: its images are
    /// fetched (as before this engine), its fonts not placed.
    matcher: Option<scraper::Selector>,
    /// `before`, `after`, …: styles a pseudo-element, not the element.
    pseudo: Option<String>,
    specificity: u32,
    /// What the element must have for the selector to match it: the id,
    /// a class or the tag of its last compound, as browsers bucket rules.
    key: Option<Key>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Id(String),
    Class(String),
    Tag(String),
}

#[derive(Debug, Clone)]
struct Declaration {
    slot: Slot,
    value: Value,
    important: bool,
}

/// A property, or a group of properties that set the same value (the
/// `background` shorthand sets `background-image`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Slot {
    FontFamily,
    FontStyle,
    FontWeight,
    Display,
    Image(&'static str),
    /// A custom property, `--name` (inherited; read through `var()`).
    Custom(String),
}

#[derive(Debug, Clone)]
enum Value {
    Families(Vec<String>),
    Style(FontStyle),
    Weight(Weight),
    DisplayNone(bool),
    Images(Vec<Fetch>),
    Inherit,
    /// A custom property's value, as written.
    Custom(String),
    /// A font property whose value uses `var()`: the property and its
    /// value as written, read once the element's custom properties are
    /// known (CSS Variables 1, "computed-value time").
    Pending(&'static str, String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum FontStyle {
    Normal,
    Italic,
    Oblique,
}

#[derive(Debug, Clone, Copy)]
enum Weight {
    Absolute(u16),
    Bolder,
    Lighter,
}

/// An `@font-face`: what it offers and the source a browser fetches.
#[derive(Debug, Clone)]
struct Face {
    family: String,
    style: FontStyle,
    weights: (u16, u16),
    ranges: Option<Vec<(u32, u32)>>,
    source: Fetch,
}

/// Which properties a browser fetches images for, and the slot each
/// sets: a shorthand without an image clears its longhand's.
fn image_slot(property: &str) -> Option<&'static str> {
    Some(match property {
        "background" | "background-image" => "background-image",
        "list-style" | "list-style-image" => "list-style-image",
        "border-image" | "border-image-source" => "border-image",
        "mask" | "mask-image" | "-webkit-mask" | "-webkit-mask-image" => "mask-image",
        "content" => "content",
        "cursor" => "cursor",
        "shape-outside" => "shape-outside",
        _ => return None,
    })
}

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

/// Family names that always resolve to an installed font: the search for
/// a web font stops there.
const GENERIC_FAMILIES: &[&str] = &[
    "serif",
    "sans-serif",
    "monospace",
    "cursive",
    "fantasy",
    "system-ui",
    "math",
    "emoji",
    "fangsong",
    "ui-serif",
    "ui-sans-serif",
    "ui-monospace",
    "ui-rounded",
    "-apple-system",
    "blinkmacsystemfont",
];

/// Font formats Chromium and Firefox load; `embedded-opentype` and `svg`
/// they skip.
const LOADABLE_FONT_FORMATS: &[&str] = &["woff2", "woff", "truetype", "opentype", "collection"];

impl Sheet {
    /// Parses a stylesheet whose `url()`s are relative to `base`.
    pub fn parse(css: &str, base: &Url) -> Sheet {
        let mut parser = Parser::new(css);
        let mut sheet = Sheet::default();
        sheet.read_rules(&mut parser, base, true);
        sheet
    }

    /// The declarations of a `style=""` attribute.
    fn inline(css: &str, base: &Url) -> Vec<Declaration> {
        let mut parser = Parser::new(css);
        declarations(&mut parser, base)
    }

    fn read_rules(&mut self, parser: &mut Parser<'_>, base: &Url, top_level: bool) {
        loop {
            parser.skip_whitespace();
            let start = parser.state();
            let Ok(first) = parser.next().cloned() else {
                return;
            };
            if let Token::AtKeyword(name) = first {
                self.at_rule(&name.to_ascii_lowercase(), parser, base, top_level);
                continue;
            }
            parser.reset(&start);
            let prelude_start = parser.position();
            let block = loop {
                match parser.next() {
                    Ok(Token::CurlyBracketBlock) => break true,
                    Ok(_) => {}
                    Err(_) => break false,
                }
            };
            if !block {
                return;
            }
            let prelude = parser.slice_from(prelude_start);
            let prelude = prelude.trim_end_matches('{').to_string();
            let declarations = parser
                .parse_nested_block(|p| Ok::<_, cssparser::ParseError<()>>(declarations(p, base)))
                .unwrap_or_default();
            if !declarations.is_empty() {
                self.rules.push(Rule {
                    selectors: selector_list(&prelude),
                    declarations,
                });
            }
        }
    }

    fn at_rule(&mut self, name: &str, parser: &mut Parser<'_>, base: &Url, top_level: bool) {
        let prelude_start = parser.position();
        let mut import = None;
        let block = loop {
            match parser.next().cloned() {
                Ok(Token::CurlyBracketBlock) => break true,
                Ok(Token::Semicolon) | Err(_) => break false,
                Ok(Token::QuotedString(s)) | Ok(Token::UnquotedUrl(s)) if import.is_none() => {
                    import = Some(s.to_string())
                }
                Ok(Token::Function(f)) if f.eq_ignore_ascii_case("url") && import.is_none() => {
                    import = url_argument(parser);
                }
                Ok(_) => {}
            }
        };
        let prelude = parser.slice_from(prelude_start).to_ascii_lowercase();
        if name == "import" && top_level {
            if let Some(url) = import.and_then(|i| base.join(&i).ok()) {
                self.imports.push(url);
            }
            return;
        }
        if !block {
            return;
        }
        let _ = parser.parse_nested_block(|p| {
            match name {
                "font-face" => self.faces.extend(font_face(p, base)),
                "media" if applies_to_screen(&prelude) => self.read_rules(p, base, false),
                "supports" | "layer" | "container" | "scope" | "document" => {
                    self.read_rules(p, base, false)
                }
                _ => {}
            }
            Ok::<_, cssparser::ParseError<()>>(())
        });
    }
}

/// A media query list applies on a screen unless it names only `print`
/// (or `speech`); size queries are taken to hold.
fn applies_to_screen(prelude: &str) -> bool {
    let prelude = prelude.trim().trim_end_matches('{');
    prelude.split(',').any(|query| {
        let query = query.trim();
        let negated = query.starts_with("not ");
        let media_type = query.trim_start_matches("not ").trim_start_matches("only ");
        let print_only = media_type.starts_with("print") || media_type.starts_with("speech");
        print_only == negated
    })
}

/// The declarations of a block: those that decide a fetch.
fn declarations(parser: &mut Parser<'_>, base: &Url) -> Vec<Declaration> {
    let mut out = Vec::new();
    each_declaration(parser, |property, value| {
        out.extend(declaration(property, value, base))
    });
    out
}

/// Calls `read` with each declaration of a block: its name (lower case)
/// and a parser over its value. What is not a declaration is skipped, as
/// a browser skips it.
fn each_declaration(parser: &mut Parser<'_>, mut read: impl FnMut(&str, &mut Parser<'_>)) {
    loop {
        parser.skip_whitespace();
        let name = match parser.next().cloned() {
            // Custom properties' names are case-sensitive; others are not.
            Ok(Token::Ident(name)) if name.starts_with("--") => name.to_string(),
            Ok(Token::Ident(name)) => name.to_ascii_lowercase(),
            Ok(_) => {
                skip_to_semicolon(parser);
                continue;
            }
            Err(_) => return,
        };
        if parser.expect_colon().is_err() {
            skip_to_semicolon(parser);
            continue;
        }
        let _ = parser.parse_until_after(cssparser::Delimiter::Semicolon, |value| {
            read(&name, value);
            while value.next().is_ok() {}
            Ok::<_, cssparser::ParseError<()>>(())
        });
    }
}

fn skip_to_semicolon(parser: &mut Parser<'_>) {
    let _ = parser.parse_until_after(cssparser::Delimiter::Semicolon, |p| {
        while p.next().is_ok() {}
        Ok::<_, cssparser::ParseError<()>>(())
    });
}

/// One value's tokens, as words: identifiers lower-cased, strings quoted,
/// numbers as written; `url()`s resolved; `!important` noted.
struct Words {
    words: Vec<Word>,
    urls: Vec<Url>,
    important: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Word {
    Ident(String),
    Str(String),
    Number(f32),
    Size,
    Slash,
    Comma,
    Other,
}

fn words(parser: &mut Parser<'_>, base: &Url) -> Words {
    let mut out = Words {
        words: Vec::new(),
        urls: Vec::new(),
        important: false,
    };
    while let Ok(token) = parser.next().cloned() {
        let word = match token {
            Token::Ident(s) => Word::Ident(s.to_ascii_lowercase()),
            Token::QuotedString(s) => Word::Str(s.to_ascii_lowercase()),
            Token::Number { value, .. } => Word::Number(value),
            Token::Dimension { .. } | Token::Percentage { .. } => Word::Size,
            Token::Delim('/') => Word::Slash,
            Token::Comma => Word::Comma,
            Token::Delim('!') => {
                out.important = matches!(parser.next(), Ok(Token::Ident(i)) if i.eq_ignore_ascii_case("important"));
                continue;
            }
            Token::UnquotedUrl(s) => {
                out.urls.extend(base.join(&s).ok());
                Word::Other
            }
            Token::Function(f) => {
                let name = f.to_ascii_lowercase();
                let nested = parser.parse_nested_block(|p| {
                    Ok::<_, cssparser::ParseError<()>>(match name.as_str() {
                        "url" => p
                            .expect_string()
                            .ok()
                            .and_then(|s| base.join(s).ok())
                            .into_iter()
                            .collect(),
                        _ => words(p, base).urls,
                    })
                });
                out.urls.extend(nested.unwrap_or_default());
                if name == "calc"
                    || name == "clamp"
                    || name == "min"
                    || name == "max"
                    || name == "var"
                {
                    Word::Size
                } else {
                    Word::Other
                }
            }
            _ => Word::Other,
        };
        out.words.push(word);
    }
    out
}

/// What one declaration sets: nothing, one slot, or for the `font`
/// shorthand three. A custom property keeps its value as written; a font
/// property that uses `var()` is read later, per element.
fn declaration(property: &str, parser: &mut Parser<'_>, base: &Url) -> Vec<Declaration> {
    let start = parser.position();
    let Words {
        words,
        urls,
        important,
    } = words(parser, base);
    let written = parser.slice_from(start);
    if property.starts_with("--") {
        return vec![Declaration {
            slot: Slot::Custom(property.to_string()),
            value: Value::Custom(strip_important(written)),
            important,
        }];
    }
    if written.to_ascii_lowercase().contains("var(") {
        return pending(property, written, important);
    }
    let inherit = matches!(words.as_slice(), [Word::Ident(w)] if w == "inherit" || w == "unset");
    let declare = |slot, value| Declaration {
        slot,
        value: if inherit { Value::Inherit } else { value },
        important,
    };
    if let Some(slot) = image_slot(property) {
        let images = urls
            .into_iter()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .map(|mut url| {
                url.set_fragment(None);
                Fetch {
                    url,
                    kind: ResourceKind::Image,
                }
            })
            .collect();
        return vec![declare(Slot::Image(slot), Value::Images(images))];
    }
    match property {
        "font-family" => vec![declare(Slot::FontFamily, Value::Families(families(&words)))],
        "font-style" => vec![declare(Slot::FontStyle, Value::Style(font_style(&words)))],
        "font-weight" => weight(&words)
            .map(|w| declare(Slot::FontWeight, Value::Weight(w)))
            .into_iter()
            .collect(),
        "display" => {
            let none = words.first() == Some(&Word::Ident("none".into()));
            vec![declare(Slot::Display, Value::DisplayNone(none))]
        }
        "font" if inherit => [Slot::FontFamily, Slot::FontStyle, Slot::FontWeight]
            .into_iter()
            .map(|slot| declare(slot, Value::Inherit))
            .collect(),
        "font" => font_shorthand(&words)
            .map(|(style, weight, families)| {
                vec![
                    declare(Slot::FontStyle, Value::Style(style)),
                    declare(Slot::FontWeight, Value::Weight(weight)),
                    declare(Slot::FontFamily, Value::Families(families)),
                ]
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The slots a font property sets, each waiting for its `var()`s;
/// nothing for other properties (an image in `var()` is not followed).
fn pending(property: &str, written: &str, important: bool) -> Vec<Declaration> {
    let (property, slots): (&'static str, &[Slot]) = match property {
        "font-family" => ("font-family", &[Slot::FontFamily]),
        "font-style" => ("font-style", &[Slot::FontStyle]),
        "font-weight" => ("font-weight", &[Slot::FontWeight]),
        "font" => (
            "font",
            &[Slot::FontFamily, Slot::FontStyle, Slot::FontWeight],
        ),
        _ => return Vec::new(),
    };
    slots
        .iter()
        .map(|slot| Declaration {
            slot: slot.clone(),
            value: Value::Pending(property, strip_important(written)),
            important,
        })
        .collect()
}

/// A value as written, without a trailing `!important`.
fn strip_important(written: &str) -> String {
    let trimmed = written.trim();
    let lower = trimmed.to_ascii_lowercase();
    match lower.rfind('!') {
        Some(at) if lower[at + 1..].trim() == "important" => trimmed[..at].trim().to_string(),
        _ => trimmed.to_string(),
    }
}

/// `written` with every `var(--name, fallback)` replaced by the custom
/// property's value, or its fallback; `None` when one has neither, which
/// makes the declaration invalid at computed-value time.
fn substitute(written: &str, custom: &BTreeMap<String, String>) -> Option<String> {
    let lower = written.to_ascii_lowercase();
    let Some(at) = lower.find("var(") else {
        return Some(written.to_string());
    };
    let inner_start = at + "var(".len();
    let mut depth = 1;
    let end = written[inner_start..].char_indices().find_map(|(i, c)| {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        (depth == 0).then_some(inner_start + i)
    })?;
    let inner = &written[inner_start..end];
    let (name, fallback) = match inner.split_once(',') {
        Some((name, fallback)) => (name.trim(), Some(fallback)),
        None => (inner.trim(), None),
    };
    let value = match (custom.get(name), fallback) {
        (Some(value), _) => substitute(value, custom)?,
        (None, Some(fallback)) => substitute(fallback.trim(), custom)?,
        (None, None) => return None,
    };
    let rest = substitute(&written[end + 1..], custom)?;
    Some(format!("{}{value}{rest}", &written[..at]))
}

/// `font: italic bold 12px/1.5 "Open Sans", sans-serif`: style and weight
/// before the size, families after it; what it leaves out is reset. A
/// system font (`font: menu`) names no web font.
fn font_shorthand(words: &[Word]) -> Option<(FontStyle, Weight, Vec<String>)> {
    let size = words.iter().position(|w| match w {
        Word::Size => true,
        Word::Ident(i) => {
            i.ends_with("-small")
                || i.ends_with("-large")
                || ["small", "medium", "large", "larger", "smaller"].contains(&i.as_str())
        }
        _ => false,
    })?;
    let (before, after) = (&words[..size], &words[size + 1..]);
    let after = match after.first() {
        Some(Word::Slash) => after.get(2..).unwrap_or_default(),
        _ => after,
    };
    let weight = before
        .iter()
        .find_map(|w| weight(std::slice::from_ref(w)))
        .unwrap_or(Weight::Absolute(400));
    Some((font_style(before), weight, families(after)))
}

/// A `font-family` list: each string, or run of identifiers, lower case.
fn families(words: &[Word]) -> Vec<String> {
    let mut out = Vec::new();
    for entry in words.split(|w| *w == Word::Comma) {
        let name = entry
            .iter()
            .filter_map(|w| match w {
                Word::Ident(s) | Word::Str(s) => Some(s.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(" ");
        if !name.is_empty() {
            out.push(name);
        }
    }
    out
}

fn font_style(words: &[Word]) -> FontStyle {
    for word in words {
        match word {
            Word::Ident(w) if w == "italic" => return FontStyle::Italic,
            Word::Ident(w) if w == "oblique" => return FontStyle::Oblique,
            _ => {}
        }
    }
    FontStyle::Normal
}

fn weight(words: &[Word]) -> Option<Weight> {
    words.iter().find_map(|word| match word {
        Word::Ident(w) if w == "normal" => Some(Weight::Absolute(400)),
        Word::Ident(w) if w == "bold" => Some(Weight::Absolute(700)),
        Word::Ident(w) if w == "bolder" => Some(Weight::Bolder),
        Word::Ident(w) if w == "lighter" => Some(Weight::Lighter),
        Word::Number(n) if (1.0..=1000.0).contains(n) => Some(Weight::Absolute(*n as u16)),
        _ => None,
    })
}

/// The string inside `url(...)`, the parser being just past `url(`.
fn url_argument(parser: &mut Parser<'_>) -> Option<String> {
    parser
        .parse_nested_block(|p| Ok::<_, cssparser::ParseError<()>>(p.expect_string()?.to_string()))
        .ok()
}

/// An `@font-face` block: family, style, weight range, `unicode-range`,
/// and the first `url()` source of a loadable format (or of none
/// stated). `local()` sources are skipped: no font is assumed installed.
fn font_face(parser: &mut Parser<'_>, base: &Url) -> Option<Face> {
    let mut family = None;
    let mut style = FontStyle::Normal;
    let mut weights = (400, 400);
    let mut ranges = None;
    let mut source = None;
    each_declaration(parser, |descriptor, value| match descriptor {
        "font-family" => family = families(&words(value, base).words).into_iter().next(),
        "font-style" => style = font_style(&words(value, base).words),
        "font-weight" => weights = weight_range(&words(value, base).words),
        "unicode-range" => ranges = Some(unicode_ranges(value)),
        "src" => source = font_source(value, base),
        _ => {}
    });
    Some(Face {
        family: family?,
        style,
        weights,
        ranges,
        source: Fetch {
            url: source?,
            kind: ResourceKind::Font,
        },
    })
}

/// `font-weight: 400`, `bold` or a variable font's `100 900`.
fn weight_range(words: &[Word]) -> (u16, u16) {
    let absolute: Vec<u16> = words
        .iter()
        .filter_map(|w| match weight(std::slice::from_ref(w)) {
            Some(Weight::Absolute(n)) => Some(n),
            _ => None,
        })
        .collect();
    match absolute.as_slice() {
        [one] => (*one, *one),
        [low, high, ..] => (*low.min(high), *low.max(high)),
        [] => (400, 400),
    }
}

/// `U+0000-00FF, U+0131, U+4??` as inclusive code point ranges.
fn unicode_ranges(parser: &mut Parser<'_>) -> Vec<(u32, u32)> {
    let start = parser.position();
    while parser.next().is_ok() {}
    let text = parser.slice_from(start).to_ascii_uppercase();
    text.split(',')
        .filter_map(|range| {
            let range = range.trim().strip_prefix("U+")?;
            let (low, high) = match range.split_once('-') {
                Some((low, high)) => (low.to_string(), high.to_string()),
                None => (range.replace('?', "0"), range.replace('?', "F")),
            };
            Some((
                u32::from_str_radix(&low, 16).ok()?,
                u32::from_str_radix(&high, 16).ok()?,
            ))
        })
        .collect()
}

/// The first `src` entry a browser can load: a `url()` of a loadable
/// format, or of none stated.
fn font_source(parser: &mut Parser<'_>, base: &Url) -> Option<Url> {
    let mut sources: Vec<(String, Option<String>)> = Vec::new();
    while let Ok(token) = parser.next().cloned() {
        match token {
            Token::UnquotedUrl(url) => sources.push((url.to_string(), None)),
            Token::Function(name) => {
                let name = name.to_ascii_lowercase();
                let argument = match name.as_str() {
                    "url" => url_argument(parser),
                    _ => parser
                        .parse_nested_block(|p| {
                            Ok::<_, cssparser::ParseError<()>>(
                                p.expect_ident_or_string()?.to_ascii_lowercase(),
                            )
                        })
                        .ok(),
                };
                match (name.as_str(), argument, sources.last_mut()) {
                    ("url", Some(url), _) => sources.push((url, None)),
                    ("format", Some(format), Some(last)) => last.1 = Some(format),
                    ("local", _, _) => sources.push((String::new(), Some("local".into()))),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let (url, _) = sources.into_iter().find(|(url, format)| {
        !url.is_empty()
            && format
                .as_deref()
                .is_none_or(|format| LOADABLE_FONT_FORMATS.contains(&format))
    })?;
    let mut url = base.join(&url).ok()?;
    url.set_fragment(None);
    matches!(url.scheme(), "http" | "https").then_some(url)
}

/// Pseudo-elements written with one colon, as CSS 2 did.
const LEGACY_PSEUDO_ELEMENTS: &[&str] = &["before", "after", "first-line", "first-letter"];

/// A rule's selector list, each selector rewritten for a fresh page load
/// (nothing is hovered, focused or visited) and stripped of its
/// pseudo-element.
fn selector_list(prelude: &str) -> Vec<Complex> {
    split_top_level_commas(prelude)
        .into_iter()
        .map(|text| match rewrite(&text) {
            Some(rewritten) => Complex {
                matcher: scraper::Selector::parse(rewritten.text.trim()).ok(),
                pseudo: rewritten.pseudo,
                specificity: rewritten.specificity,
                key: rewritten.key,
            },
            None => Complex {
                matcher: None,
                pseudo: None,
                specificity: 0,
                key: None,
            },
        })
        .collect()
}

fn split_top_level_commas(text: &str) -> Vec<String> {
    let mut parser = Parser::new(text);
    let mut parts = Vec::new();
    let mut start = parser.position();
    loop {
        let before = parser.position();
        match parser.next_including_whitespace_and_comments() {
            Ok(Token::Comma) => {
                parts.push(parser.slice(start..before).to_string());
                start = parser.position();
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    parts.push(parser.slice_from(start).to_string());
    parts.retain(|p| !p.trim().is_empty());
    parts
}

struct Rewritten {
    text: String,
    pseudo: Option<String>,
    specificity: u32,
    key: Option<Key>,
}

/// One complex selector as the matcher takes it, or `None` when it uses
/// what the engine does not know.
fn rewrite(selector: &str) -> Option<Rewritten> {
    let mut parser = Parser::new(selector);
    let mut out = Rewritten {
        text: String::new(),
        pseudo: None,
        specificity: 0,
        key: None,
    };
    let mut after_dot = false;
    let mut combinator = false;
    loop {
        let start = parser.position();
        let Ok(token) = parser.next_including_whitespace().cloned() else {
            break;
        };
        let dot = token == Token::Delim('.');
        match &token {
            Token::WhiteSpace(_) | Token::Delim('>' | '+' | '~') => combinator = true,
            _ if combinator => {
                // A new compound: only the last one keys the selector.
                out.key = None;
                combinator = false;
            }
            _ => {}
        }
        match (&token, &out.key) {
            (Token::IDHash(id), _) => out.key = Some(Key::Id(id.to_string())),
            (Token::Ident(class), None | Some(Key::Tag(_))) if after_dot => {
                out.key = Some(Key::Class(class.to_string()))
            }
            (Token::Ident(tag), None) if !after_dot => {
                out.key = Some(Key::Tag(tag.to_ascii_lowercase()))
            }
            _ => {}
        }
        match token {
            Token::Colon => pseudo(&mut parser, &mut out)?,
            Token::IDHash(_) => {
                out.specificity += 1 << 16;
                out.text.push_str(parser.slice_from(start));
            }
            Token::SquareBracketBlock => {
                out.specificity += 1 << 8;
                let _ = parser.parse_nested_block(|p| {
                    while p.next().is_ok() {}
                    Ok::<_, cssparser::ParseError<()>>(())
                });
                out.text.push_str(parser.slice_from(start));
            }
            Token::Ident(_) => {
                out.specificity += if after_dot { 1 << 8 } else { 1 };
                out.text.push_str(parser.slice_from(start));
            }
            Token::Function(_) | Token::ParenthesisBlock | Token::CurlyBracketBlock => return None,
            _ => out.text.push_str(parser.slice_from(start)),
        }
        after_dot = dot;
    }
    Some(out)
}

/// The part after a `:`: a pseudo-element (noted, left out of the text)
/// or a pseudo-class (rewritten).
fn pseudo(parser: &mut Parser<'_>, out: &mut Rewritten) -> Option<()> {
    match parser.next_including_whitespace().ok()?.clone() {
        Token::Colon => {
            match parser.next_including_whitespace().ok()?.clone() {
                Token::Ident(name) => out.pseudo = Some(name.to_ascii_lowercase()),
                Token::Function(name) => {
                    out.pseudo = Some(name.to_ascii_lowercase());
                    argument(parser);
                }
                _ => return None,
            }
            out.specificity += 1;
        }
        Token::Ident(name) => {
            let name = name.to_ascii_lowercase();
            if LEGACY_PSEUDO_ELEMENTS.contains(&name.as_str()) {
                out.pseudo = Some(name);
                out.specificity += 1;
            } else {
                out.text.push_str(pseudo_class(&name)?);
                out.specificity += 1 << 8;
            }
        }
        Token::Function(name) => {
            let name = name.to_ascii_lowercase();
            let inner = argument(parser);
            match name.as_str() {
                "not" | "is" | "where" | "has" | "matches" | "-webkit-any" => {
                    let parts = split_top_level_commas(&inner)
                        .iter()
                        .map(|part| rewrite(part))
                        .collect::<Option<Vec<_>>>()?;
                    if parts.iter().any(|p| p.pseudo.is_some()) {
                        return None;
                    }
                    let texts: Vec<&str> = parts.iter().map(|p| p.text.trim()).collect();
                    // The matcher knows `:is()`, which matches as the others do.
                    let matched_as = match name.as_str() {
                        "not" | "has" => name.as_str(),
                        _ => "is",
                    };
                    out.text
                        .push_str(&format!(":{matched_as}({})", texts.join(", ")));
                    // `:where()` adds none; the others, their most specific argument's.
                    if name != "where" {
                        out.specificity += parts.iter().map(|p| p.specificity).max().unwrap_or(0);
                    }
                }
                "nth-child" | "nth-last-child" | "nth-of-type" | "nth-last-of-type" => {
                    out.text.push_str(&format!(":{name}({inner})"));
                    out.specificity += 1 << 8;
                }
                _ => return None,
            }
        }
        _ => return None,
    }
    Some(())
}

/// A function's argument as written, the parser being just past `name(`.
fn argument(parser: &mut Parser<'_>) -> String {
    parser
        .parse_nested_block(|p| {
            let start = p.position();
            while p.next_including_whitespace_and_comments().is_ok() {}
            Ok::<_, cssparser::ParseError<()>>(p.slice_from(start).to_string())
        })
        .unwrap_or_default()
}

/// A pseudo-class as it stands when a page has just loaded: nothing is
/// hovered, focused, visited or targeted; form states follow their
/// attributes.
fn pseudo_class(name: &str) -> Option<&'static str> {
    Some(match name {
        "root" => ":root",
        "empty" => ":empty",
        "first-child" => ":first-child",
        "last-child" => ":last-child",
        "only-child" => ":only-child",
        "first-of-type" => ":first-of-type",
        "last-of-type" => ":last-of-type",
        "only-of-type" => ":only-of-type",
        "scope" => ":scope",
        "link" | "any-link" => "[href]",
        "checked" | "default" => "[checked]",
        "disabled" => "[disabled]",
        "enabled" => ":not([disabled])",
        "required" => "[required]",
        "optional" => ":not([required])",
        "placeholder-shown" => "[placeholder]",
        "valid" | "defined" | "in-range" => ":is(*)",
        "hover" | "active" | "focus" | "focus-within" | "focus-visible" | "target"
        | "target-within" | "visited" | "invalid" | "user-invalid" | "user-valid"
        | "indeterminate" | "out-of-range" | "autofill" | "-webkit-autofill" | "fullscreen"
        | "modal" | "popover-open" | "playing" | "paused" => ":not(*)",
        _ => return None,
    })
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

/// Why a declaration wins: importance, origin, specificity, order.
type Precedence = (bool, Origin, u32, usize);

/// The declarations that apply to one element or pseudo-element, the
/// winner of each slot.
#[derive(Default)]
struct Cascade<'a> {
    winners: BTreeMap<Slot, (Precedence, &'a Value)>,
}

impl<'a> Cascade<'a> {
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

    fn images(&self) -> impl Iterator<Item = &'a Fetch> + '_ {
        self.winners.values().flat_map(|(_, value)| match value {
            Value::Images(images) => images.as_slice(),
            _ => &[],
        })
    }
}

/// The font a piece of text asks for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct FontRequest {
    families: Vec<String>,
    style: FontStyle,
    weight: u16,
}

/// What an element hands its children.
#[derive(Clone)]
struct Inherited {
    font: FontRequest,
    hidden: bool,
    /// Custom properties, which every element inherits.
    custom: BTreeMap<String, String>,
}

/// The stylesheets' images some element uses, and the font faces some
/// rendered text needs, for the document `html` at `page`, with the
/// external stylesheets that have arrived so far (by URL). Stylesheets
/// not yet arrived are left out; a caller asks again when they come.
pub fn fetched(html: &str, page: &Url, sheets: &HashMap<Url, Sheet>) -> Vec<Fetch> {
    let dom = Html::parse_document(html);
    let mut author = Vec::new();
    for element in dom
        .root_element()
        .descendants()
        .filter_map(ElementRef::wrap)
    {
        collect_sheet(element, page, sheets, &mut author);
    }
    let mut entries = Vec::new();
    let mut out = Vec::new();
    let origins = std::iter::once((Origin::UserAgent, &*USER_AGENT))
        .chain(author.iter().map(|sheet| (Origin::Author, sheet.as_ref())));
    for (origin, sheet) in origins {
        for rule in &sheet.rules {
            for selector in &rule.selectors {
                if selector.matcher.is_none() {
                    // Beyond the engine: fetch its images, as a loader
                    // without a cascade would.
                    out.extend(Cascade::from_rule(&rule.declarations).images().cloned());
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
    let root = Inherited {
        font: FontRequest {
            families: vec!["serif".into()],
            style: FontStyle::Normal,
            weight: 400,
        },
        hidden: false,
        custom: BTreeMap::new(),
    };
    let mut text: BTreeMap<FontRequest, String> = BTreeMap::new();
    let index = Index::new(&entries);
    let rules = Rules {
        entries: &entries,
        index: &index,
    };
    style_tree(dom.root_element(), &root, &rules, page, &mut out, &mut text);
    let faces: Vec<&Face> = author.iter().flat_map(|sheet| &sheet.faces).collect();
    for (request, characters) in text {
        out.extend(
            faces_for(&request, &characters, &faces)
                .into_iter()
                .cloned(),
        );
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|d| seen.insert(d.url.clone()));
    out
}

impl<'a> Cascade<'a> {
    fn from_rule(declarations: &'a [Declaration]) -> Cascade<'a> {
        let mut cascade = Cascade::default();
        cascade.apply((Origin::Author, 0, 0), declarations);
        cascade
    }
}

/// The sheets an element brings into the cascade, in order: a `<style>`,
/// or a `<link rel=stylesheet>` that has arrived, each after its imports.
fn collect_sheet<'a>(
    element: ElementRef<'_>,
    page: &Url,
    sheets: &'a HashMap<Url, Sheet>,
    out: &mut Vec<Cow<'a, Sheet>>,
) {
    let attr = |name| element.value().attr(name).unwrap_or_default();
    match element.value().name() {
        "style" => {
            let css: String = element.text().collect();
            push_with_imports(Cow::Owned(Sheet::parse(&css, page)), sheets, out, 0);
        }
        "link" => {
            let rel = attr("rel").to_ascii_lowercase();
            let rels: Vec<&str> = rel.split_ascii_whitespace().collect();
            let applies = rels.contains(&"stylesheet")
                && !rels.contains(&"alternate")
                && element.value().attr("disabled").is_none()
                && applies_to_screen(&attr("media").to_ascii_lowercase());
            let Some(mut url) = applies
                .then(|| page.join(attr("href").trim()).ok())
                .flatten()
            else {
                return;
            };
            url.set_fragment(None);
            if let Some(sheet) = sheets.get(&url) {
                push_with_imports(Cow::Borrowed(sheet), sheets, out, 0);
            }
        }
        _ => {}
    }
}

/// Import loops end here; browsers cut them too.
const MAX_IMPORT_DEPTH: usize = 8;

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

/// The page's rules and their index.
struct Rules<'a> {
    entries: &'a [Entry<'a>],
    index: &'a Index,
}

/// Styles `element` and its subtree: collects the images their winning
/// declarations use and the text each font request styles.
fn style_tree(
    element: ElementRef<'_>,
    parent: &Inherited,
    rules: &Rules<'_>,
    page: &Url,
    images: &mut Vec<Fetch>,
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
    let mut own = Cascade::default();
    let mut pseudos: BTreeMap<&str, Cascade<'_>> = BTreeMap::new();
    for entry in rules
        .index
        .candidates(element)
        .into_iter()
        .map(|i| &rules.entries[i])
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
    own.apply((Origin::Author, u32::MAX, usize::MAX), &inline);
    // An element's own images load even when it is `display: none`;
    // its subtree is never styled.
    images.extend(own.images().cloned());
    for cascade in pseudos.values() {
        images.extend(cascade.images().cloned());
    }
    let mut custom = parent.custom.clone();
    custom.extend(own.custom());
    let inherited = Inherited {
        font: computed_font(&own, &parent.font, &custom, page),
        hidden: matches!(own.value(&Slot::Display), Some(Value::DisplayNone(true))),
        custom,
    };
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

/// CSS Fonts 4, "relative weights".
fn bolder(parent: u16) -> u16 {
    match parent {
        0..350 => 400,
        350..550 => 700,
        550..900 => 900,
        _ => parent,
    }
}

fn lighter(parent: u16) -> u16 {
    match parent {
        0..100 => parent,
        100..550 => 100,
        550..750 => 400,
        _ => 700,
    }
}

/// The faces a browser fetches for `characters` styled as `request`: in
/// family order, the best face of the first web font family by CSS
/// Fonts 4's matching (style, then weight), each of its `unicode-range`
/// parts that covers a character; families after it only for
/// characters it does not cover. A generic family ends the search, and a
/// family no `@font-face` declares is taken as not installed.
fn faces_for<'a>(request: &FontRequest, characters: &str, faces: &[&'a Face]) -> Vec<&'a Fetch> {
    let mut left: Vec<u32> = characters
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(u32::from)
        .collect();
    left.sort_unstable();
    left.dedup();
    let mut out = Vec::new();
    for family in &request.families {
        if left.is_empty() || GENERIC_FAMILIES.contains(&family.as_str()) {
            break;
        }
        let candidates: Vec<&Face> = faces
            .iter()
            .copied()
            .filter(|f| f.family == *family)
            .collect();
        let Some(best) = best_face(request, &candidates) else {
            continue;
        };
        for face in candidates
            .iter()
            .filter(|f| (f.style, f.weights) == (best.style, best.weights))
        {
            let covered = |c: &u32| match &face.ranges {
                None => true,
                Some(ranges) => ranges.iter().any(|(low, high)| (low..=high).contains(&c)),
            };
            if left.iter().any(covered) {
                out.push(&face.source);
                left.retain(|c| !covered(c));
            }
        }
    }
    out
}

/// CSS Fonts 4 §5.2: the face of `candidates` closest in style, then in
/// weight.
fn best_face<'a>(request: &FontRequest, candidates: &[&'a Face]) -> Option<&'a Face> {
    let style_order: [FontStyle; 3] = match request.style {
        FontStyle::Italic => [FontStyle::Italic, FontStyle::Oblique, FontStyle::Normal],
        FontStyle::Oblique => [FontStyle::Oblique, FontStyle::Italic, FontStyle::Normal],
        FontStyle::Normal => [FontStyle::Normal, FontStyle::Oblique, FontStyle::Italic],
    };
    let style = style_order
        .into_iter()
        .find(|s| candidates.iter().any(|f| f.style == *s))?;
    candidates
        .iter()
        .copied()
        .filter(|f| f.style == style)
        .min_by_key(|f| weight_distance(request.weight, f.weights))
}

/// How far a face's weights are from the one asked for, in the order
/// CSS Fonts 4 prefers them: a key to minimise.
fn weight_distance(wanted: u16, (low, high): (u16, u16)) -> (u8, u16) {
    if (low..=high).contains(&wanted) {
        return (0, 0);
    }
    let heavier = low > wanted;
    let distance = if heavier { low - wanted } else { wanted - high };
    let preferred_side = match wanted {
        400..=500 => heavier && low <= 500,
        0..400 => !heavier,
        _ => heavier,
    };
    match (preferred_side, wanted) {
        (true, _) => (1, distance),
        (false, 400..=500) if !heavier => (2, distance),
        (false, _) => (3, distance),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Url {
        Url::parse("https://site.test/dir/page.html").unwrap()
    }

    /// The paths the page fetches for `html` with one external sheet,
    /// `/main.css`, holding `css`.
    fn fetched_paths(html: &str, css: &str) -> Vec<String> {
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

    #[test]
    fn an_image_is_fetched_only_for_a_declaration_that_wins_for_some_element() {
        let css = r#"
            .missing { background: url(/no-element.png) }
            details.toggle > summary::before { background-image: url(/plus.svg) }
            details.toggle[open] > summary::before { background-image: url(/minus.svg) }
            .hero { background-image: url(/overridden.png) }
            div.hero { background: red }
            a:hover { background: url(/hover.png) }
            a:not(:hover) { list-style: url(/bullet.png) }
            @media print { .hero { background: url(/print.png) } }
            @media screen and (min-width: 10px) { .hero { cursor: url(/cursor.png), auto } }
            .gone { display: none; background: url(/own.png) }
            .gone span { background: url(/inside-hidden.png) }"#;
        let html = r#"<body><details class=toggle open><summary>s</summary>t</details>
            <div class=hero>h</div><a href=/x>x</a>
            <div class=gone><span>hidden</span></div>
            <p style="background: url('/inline.png')">p</p></body>"#;
        let mut paths = fetched_paths(html, css);
        paths.sort();
        assert_eq!(
            paths,
            [
                "/bullet.png",
                "/cursor.png",
                "/inline.png",
                "/minus.svg",
                "/own.png"
            ]
        );
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

    const RUSTDOC_FACES: &str = r#"
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

    #[test]
    fn where_adds_no_specificity_and_is_adds_its_most_specific_argument() {
        let specificity = |selector: &str| rewrite(selector).unwrap().specificity;
        assert_eq!(specificity(":where(#hero, .a) div"), specificity("div"));
        assert_eq!(specificity(":is(#hero, .a) div"), (1 << 16) + 1);
        assert_eq!(specificity(":not(.a) div"), (1 << 8) + 1);
        // So a later `div` rule beats an earlier `:where(#hero) div` one.
        let fetched = fetched_paths(
            "<body><div id=hero><div>x</div></div></body>",
            ":where(#hero) div { background: url(/where.png) } div { background: url(/plain.png) }",
        );
        assert!(fetched.contains(&"/plain.png".to_string()), "{fetched:?}");
        assert!(!fetched.contains(&"/where.png".to_string()), "{fetched:?}");
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
        let paths = |html: &str| {
            let mut paths = fetched_paths(html, css);
            paths.sort();
            paths
        };
        assert_eq!(paths("<body><code>x</code></body>"), ["/code-500.woff2"]);
        assert_eq!(paths("<body><p>text</p></body>"), ["/text.woff2"]);
        // A var() with neither a value nor a fallback leaves the property
        // as if unset: the parent's family.
        assert_eq!(paths("<body><em>text</em></body>"), ["/text.woff2"]);
        assert_eq!(paths("<body><pre>x</pre></body>"), ["/code-500.woff2"]);
        assert_eq!(
            substitute(
                "var(--a, 1px) var(--b)",
                &BTreeMap::from([("--b".into(), "var(--a, 2px)".into())])
            ),
            Some("1px 2px".to_string())
        );
        assert_eq!(strip_important(" 500 ! Important "), "500");
    }

    #[test]
    fn a_face_is_fetched_for_text_in_its_family_style_and_weight() {
        let html = "<body><p>Text with <em>emphasis</em> and <code>code</code>.</p>\
                    <h1><code>Title</code></h1><strong>Bold</strong></body>";
        let mut paths = fetched_paths(html, RUSTDOC_FACES);
        paths.sort();
        assert_eq!(
            paths,
            [
                "/code-semibold.woff2",
                "/code.woff2",
                "/serif-bold.woff2",
                "/serif-it.woff2",
                "/serif.woff2"
            ],
            "no italic code and no unused family: neither is fetched"
        );
        let italic_code = fetched_paths("<body><em><code>x</code></em></body>", RUSTDOC_FACES);
        assert_eq!(italic_code, ["/code-it.woff2"]);
    }

    #[test]
    fn hidden_text_needs_no_font() {
        let html = "<head><title>Title text</title></head><body><div hidden><code>x</code></div>\
                    <details><summary> </summary><p>closed</p></details></body>";
        assert!(fetched_paths(html, RUSTDOC_FACES).is_empty());
    }

    #[test]
    fn unicode_range_subsets_are_fetched_only_for_characters_in_them() {
        let css = r#"
            @font-face { font-family: Inter; src: url(/latin.woff2); unicode-range: U+0000-00FF, U+2000-206F }
            @font-face { font-family: Inter; src: url(/cyrillic.woff2); unicode-range: U+0400-045F }
            @font-face { font-family: Inter; src: url(/greek.woff2); unicode-range: U+037?, U+0380-03FF }
            @font-face { font-family: Fallback; src: url(/fallback.woff2) }
            body { font-family: Inter, Fallback, sans-serif }"#;
        let mut paths = fetched_paths("<body><p>Hello — Привет ✓</p></body>", css);
        paths.sort();
        assert_eq!(
            paths,
            ["/cyrillic.woff2", "/fallback.woff2", "/latin.woff2"],
            "the check mark is in no Inter subset, so Fallback is needed too"
        );
        assert_eq!(
            fetched_paths("<body><p>Hello</p></body>", css),
            ["/latin.woff2"]
        );
    }

    #[test]
    fn a_face_offers_the_first_source_a_browser_can_load() {
        let css = r#"@font-face { font-family: "Open Sans";
                 src: local("Open Sans"), url(/o.eot) format("embedded-opentype"),
                      url(/o.svg#o) format("svg"), url(/o.woff) format("woff"), url(/o.ttf); }
               @font-face { font-family: Mono; src: url(/m.bin) format("x-unknown") }
               p { font-family: "Open Sans" } pre { font-family: Mono }"#;
        let fetched = fetched_paths("<body><p>a</p><pre>b</pre></body>", css);
        assert_eq!(fetched, ["/o.woff"], "no loadable source: no fetch");
    }

    #[test]
    fn weights_are_matched_as_css_fonts_4_orders_them() {
        let face = |low, high| Face {
            family: "f".into(),
            style: FontStyle::Normal,
            weights: (low, high),
            ranges: None,
            source: Fetch {
                url: page(),
                kind: ResourceKind::Font,
            },
        };
        let faces = [
            face(300, 300),
            face(500, 500),
            face(600, 600),
            face(900, 900),
        ];
        let pick = |weight| {
            let candidates: Vec<&Face> = faces.iter().collect();
            let request = FontRequest {
                families: vec!["f".into()],
                style: FontStyle::Normal,
                weight,
            };
            best_face(&request, &candidates).unwrap().weights.0
        };
        assert_eq!(pick(400), 500, "400 looks up to 500 first");
        assert_eq!(pick(450), 500);
        assert_eq!(pick(700), 900, "above 500: heavier first");
        assert_eq!(pick(200), 300, "below 400: nothing lighter, so heavier");
        assert_eq!(pick(950), 900, "nothing heavier: the heaviest lighter");
        let variable = [face(100, 900)];
        let candidates: Vec<&Face> = variable.iter().collect();
        let request = FontRequest {
            families: vec!["f".into()],
            style: FontStyle::Italic,
            weight: 650,
        };
        assert!(
            best_face(&request, &candidates).is_some(),
            "a variable face covers 650"
        );
        assert_eq!(
            (bolder(400), bolder(700), lighter(700), lighter(400)),
            (700, 900, 400, 100)
        );
    }
}
