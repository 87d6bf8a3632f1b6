//! Selector rewriting: each selector of a rule, as Servo's selector
//! engine (through `scraper`) can match it on a page that has just
//! loaded, with its pseudo-element, its specificity, and the key that
//! buckets it in the cascade's index.

use cssparser::{Parser, Token};

/// One selector of a rule's list, with what a fresh page load can match.
#[derive(Debug, Clone)]
pub(super) struct Complex {
    /// `None` when the selector is beyond the engine: its images are
    /// fetched (as before this engine), its fonts not placed.
    pub(super) matcher: Option<scraper::Selector>,
    /// `before`, `after`, …: styles a pseudo-element, not the element.
    pub(super) pseudo: Option<String>,
    /// Ids, classes and types, as `0x00_II_CC_TT`: compared as one number.
    pub(super) specificity: u32,
    /// What the element must have for the selector to match it: the id,
    /// a class or the tag of its last compound, as browsers bucket rules.
    pub(super) key: Option<Key>,
}

/// What a selector's last compound requires of the element it matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Key {
    Id(String),
    Class(String),
    Tag(String),
}

/// Pseudo-elements written with one colon, as CSS 2 did.
const LEGACY_PSEUDO_ELEMENTS: &[&str] = &["before", "after", "first-line", "first-letter"];

/// A rule's selector list, each selector rewritten for a fresh page load
/// (nothing is hovered, focused or visited) and stripped of its
/// pseudo-element.
pub(super) fn selector_list(prelude: &str) -> Vec<Complex> {
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

/// The comma-separated parts of a list, commas inside brackets aside.
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

/// A selector as the matcher takes it, with what the cascade needs of it.
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
    let mut after_combinator = false;
    loop {
        let start = parser.position();
        let Ok(token) = parser.next_including_whitespace().cloned() else {
            break;
        };
        track_key(&token, after_dot, &mut after_combinator, &mut out.key);
        let dot = token == Token::Delim('.');
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

/// Follows the key through one token of a selector: a combinator starts
/// a new compound, and only the last compound keys the selector; within
/// it an id beats a class, which beats the tag.
fn track_key(
    token: &Token<'_>,
    after_dot: bool,
    after_combinator: &mut bool,
    key: &mut Option<Key>,
) {
    match token {
        Token::WhiteSpace(_) | Token::Delim('>' | '+' | '~') => *after_combinator = true,
        _ if *after_combinator => {
            *key = None;
            *after_combinator = false;
        }
        _ => {}
    }
    match (token, &*key) {
        (Token::IDHash(id), _) => *key = Some(Key::Id(id.to_string())),
        (Token::Ident(class), None | Some(Key::Tag(_))) if after_dot => {
            *key = Some(Key::Class(class.to_string()))
        }
        (Token::Ident(tag), None) if !after_dot => *key = Some(Key::Tag(tag.to_ascii_lowercase())),
        _ => {}
    }
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
            functional_pseudo_class(&name, &inner, out)?;
        }
        _ => return None,
    }
    Some(())
}

/// `:name(inner)`, rewritten into `out`; `None` for one the engine does
/// not know.
fn functional_pseudo_class(name: &str, inner: &str, out: &mut Rewritten) -> Option<()> {
    match name {
        "not" | "is" | "where" | "has" | "matches" | "-webkit-any" => {
            let parts = split_top_level_commas(inner)
                .iter()
                .map(|part| rewrite(part))
                .collect::<Option<Vec<_>>>()?;
            if parts.iter().any(|p| p.pseudo.is_some()) {
                return None;
            }
            let texts: Vec<&str> = parts.iter().map(|p| p.text.trim()).collect();
            // The matcher knows `:is()`, which matches as the others do.
            let matched_as = match name {
                "not" | "has" => name,
                _ => "is",
            };
            out.text
                .push_str(&format!(":{matched_as}({})", texts.join(", ")));
            // `:where()` adds none (Selectors 4, "Calculating a selector's
            // specificity"); the others, their most specific argument's.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specificity_counts_ids_classes_and_types_and_where_adds_none() {
        let (id, class, tag) = (1 << 16, 1 << 8, 1);
        // (selector, its specificity)
        let cases: &[(&str, u32)] = &[
            ("div", tag),
            ("div.a[href]", tag + 2 * class),
            ("#hero div", id + tag),
            ("a::before", 2 * tag),
            ("p:first-child", tag + class),
            (":where(#hero, .a) div", tag),
            (":where(#hero)", 0),
            ("div:where(.a .b, #c)", tag),
            (":where(:not(#a), :is(.b))", 0),
            (":is(:where(#a), .b)", class),
            (":is(#hero, .a) div", id + tag),
            (":not(.a) div", class + tag),
            (":has(> img, #x)", id),
        ];
        for (selector, expected) in cases {
            let specificity = rewrite(selector).map(|r| r.specificity);
            assert_eq!(specificity, Some(*expected), "{selector}");
        }
    }

    #[test]
    fn where_is_matched_as_is_and_keyed_by_the_compound_it_is_in() {
        let list = selector_list(":where(#hero, .a) div");
        let [complex] = list.as_slice() else {
            panic!("one selector: {list:?}");
        };
        assert!(complex.matcher.is_some());
        assert_eq!(complex.key, Some(Key::Tag("div".into())));
        let rewritten = rewrite("div :where(.a)").unwrap();
        assert_eq!(rewritten.text.trim(), "div :is(.a)");
        assert_eq!(rewritten.key, None, "its own arguments do not key it");
    }
}
