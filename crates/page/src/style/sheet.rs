//! Stylesheet parsing: a sheet's `@import`s, its style rules with the
//! declarations that decide a fetch (`font-*`, `display`, the
//! image-bearing properties and custom properties), and its
//! `@font-face`s. What no fetch depends on is skipped while reading.

use std::collections::BTreeMap;

use cssparser::{Parser, Token};
use h3lab_results::ResourceKind;
use url::Url;

use super::selector::{selector_list, Complex};
use super::StyleResource;

/// One stylesheet, parsed: its `@import`s, style rules and font faces.
#[derive(Debug, Clone, Default)]
pub struct Sheet {
    /// The stylesheets it imports, in order; their rules come first.
    pub imports: Vec<Url>,
    pub(super) rules: Vec<Rule>,
    pub(super) faces: Vec<Face>,
}

/// A style rule: its selectors and the declarations that decide a fetch.
#[derive(Debug, Clone)]
pub(super) struct Rule {
    pub(super) selectors: Vec<Complex>,
    pub(super) declarations: Vec<Declaration>,
}

#[derive(Debug, Clone)]
pub(super) struct Declaration {
    pub(super) slot: Slot,
    pub(super) value: Value,
    pub(super) important: bool,
}

/// A property, or a group of properties that set the same value (the
/// `background` shorthand sets `background-image`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Slot {
    FontFamily,
    FontStyle,
    FontWeight,
    Display,
    Image(&'static str),
    /// A custom property, `--name` (inherited; read through `var()`).
    Custom(String),
}

#[derive(Debug, Clone)]
pub(super) enum Value {
    Families(Vec<String>),
    Style(FontStyle),
    Weight(Weight),
    DisplayNone(bool),
    Images(Vec<StyleResource>),
    Inherit,
    /// A custom property's value, as written.
    Custom(String),
    /// A font property whose value uses `var()`: the property and its
    /// value as written, read once the element's custom properties are
    /// known (CSS Variables 1, "computed-value time").
    Pending(&'static str, String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum FontStyle {
    Normal,
    Italic,
    Oblique,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Weight {
    Absolute(u16),
    Bolder,
    Lighter,
}

/// An `@font-face`: what it offers and the source a browser fetches.
#[derive(Debug, Clone)]
pub(super) struct Face {
    pub(super) family: String,
    pub(super) style: FontStyle,
    pub(super) weights: (u16, u16),
    pub(super) ranges: Option<Vec<(u32, u32)>>,
    pub(super) source: StyleResource,
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

impl Sheet {
    /// Parses a stylesheet whose `url()`s are relative to `base`.
    pub fn parse(css: &str, base: &Url) -> Sheet {
        let mut parser = Parser::new(css);
        let mut sheet = Sheet::default();
        sheet.read_rules(&mut parser, base, true);
        sheet
    }

    /// The declarations of a `style=""` attribute.
    pub(super) fn inline(css: &str, base: &Url) -> Vec<Declaration> {
        let mut parser = Parser::new(css);
        declarations(&mut parser, base)
    }

    /// Reads the rules of a sheet, or of an at-rule's block; `@import`
    /// counts only at the top level.
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
            if !self.style_rule(parser, base) {
                return;
            }
        }
    }

    /// A style rule, kept if it declares something that decides a fetch;
    /// `false` when the text ends before its block.
    fn style_rule(&mut self, parser: &mut Parser<'_>, base: &Url) -> bool {
        let prelude_start = parser.position();
        let block = loop {
            match parser.next() {
                Ok(Token::CurlyBracketBlock) => break true,
                Ok(_) => {}
                Err(_) => break false,
            }
        };
        if !block {
            return false;
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
        true
    }

    /// An at-rule: an `@import`, an `@font-face`, or a block of rules
    /// that apply on a screen (`@media screen`, `@supports`, `@layer`, …).
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
pub(super) fn applies_to_screen(prelude: &str) -> bool {
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

/// Reads a value's tokens into [`Words`].
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
            Token::Function(name) => {
                let name = name.to_ascii_lowercase();
                out.urls.extend(function_urls(&name, parser, base));
                // Math functions and `var()` stand for a size, as far as
                // the `font` shorthand cares.
                match name.as_str() {
                    "calc" | "clamp" | "min" | "max" | "var" => Word::Size,
                    _ => Word::Other,
                }
            }
            _ => Word::Other,
        };
        out.words.push(word);
    }
    out
}

/// The `url()`s in a function's arguments, the parser being just past
/// `name(`: its own if it is `url`, else those nested in it.
fn function_urls(name: &str, parser: &mut Parser<'_>, base: &Url) -> Vec<Url> {
    parser
        .parse_nested_block(|p| {
            Ok::<_, cssparser::ParseError<()>>(match name {
                "url" => p
                    .expect_string()
                    .ok()
                    .and_then(|s| base.join(s).ok())
                    .into_iter()
                    .collect(),
                _ => words(p, base).urls,
            })
        })
        .unwrap_or_default()
}

/// What one declaration sets: nothing, one slot, or for the `font`
/// shorthand three. A custom property keeps its value as written; a font
/// property that uses `var()` is read later, per element.
pub(super) fn declaration(property: &str, parser: &mut Parser<'_>, base: &Url) -> Vec<Declaration> {
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
        return vec![declare(Slot::Image(slot), Value::Images(images(urls)))];
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

/// The images of an image-bearing value a browser fetches: its http(s)
/// `url()`s, without their fragments.
fn images(urls: Vec<Url>) -> Vec<StyleResource> {
    urls.into_iter()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .map(|mut url| {
            url.set_fragment(None);
            StyleResource {
                url,
                kind: ResourceKind::Image,
            }
        })
        .collect()
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
pub(super) fn strip_important(written: &str) -> String {
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
pub(super) fn substitute(written: &str, custom: &BTreeMap<String, String>) -> Option<String> {
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
        source: StyleResource {
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

/// Font formats Chromium and Firefox load; `embedded-opentype` and `svg`
/// they skip.
const LOADABLE_FONT_FORMATS: &[&str] = &["woff2", "woff", "truetype", "opentype", "collection"];

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

#[cfg(test)]
mod tests {
    use super::super::test_support::fetched_paths;
    use super::*;

    #[test]
    fn var_takes_the_custom_property_or_its_fallback() {
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
    fn a_face_offers_the_first_source_a_browser_can_load() {
        let css = r#"@font-face { font-family: "Open Sans";
                 src: local("Open Sans"), url(/o.eot) format("embedded-opentype"),
                      url(/o.svg#o) format("svg"), url(/o.woff) format("woff"), url(/o.ttf); }
               @font-face { font-family: Mono; src: url(/m.bin) format("x-unknown") }
               p { font-family: "Open Sans" } pre { font-family: Mono }"#;
        let fetched = fetched_paths("<body><p>a</p><pre>b</pre></body>", css);
        assert_eq!(fetched, ["/o.woff"], "no loadable source: no fetch");
    }
}
