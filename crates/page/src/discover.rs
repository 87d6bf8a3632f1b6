//! Finding a page's resources the way a browser's preload scanner does,
//! without running any code: from HTML as it streams in, from CSS once it
//! has arrived, and from ES modules' static imports. Pure: text in,
//! discoveries out.
//!
//! What it finds: `<link rel=stylesheet|preload|modulepreload>`, `<script
//! src>`, `<img src>`, `url()` and `@import` in stylesheets, `<style>`
//! elements and `style` attributes, and `import`/`export … from` in module
//! scripts. What it does not: `<base href>`, `srcset`, `<picture>` sources,
//! video, iframes and anything a script would fetch when run.

use std::sync::{Arc, Mutex};

use cssparser::{Parser, Token};
use h3lab_results::ResourceKind;
use lol_html::send::{HtmlRewriter, Settings};
use lol_html::{element, text};
use url::Url;

/// A resource a page refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// Absolute, without its fragment.
    pub url: Url,
    /// What it is.
    pub kind: ResourceKind,
    /// A stylesheet or synchronous script in `<head>`: nothing renders
    /// until it has arrived.
    pub render_blocking: bool,
    /// An ES module, whose own imports are fetched too.
    pub module: bool,
}

impl Discovery {
    fn new(base: &Url, reference: &str, kind: ResourceKind) -> Option<Discovery> {
        let reference = reference.trim();
        if reference.is_empty() || reference.starts_with("data:") {
            return None;
        }
        let mut url = base.join(reference).ok()?;
        if !matches!(url.scheme(), "http" | "https") {
            return None;
        }
        url.set_fragment(None);
        Some(Discovery {
            url,
            kind,
            render_blocking: false,
            module: false,
        })
    }
}

/// What the HTML handlers share: the discoveries not yet handed out, and
/// whether the parser is still in `<head>`.
#[derive(Default)]
struct Found {
    discoveries: Vec<Discovery>,
    in_body: bool,
    style_text: String,
}

/// Scans an HTML document chunk by chunk, as it arrives.
pub struct HtmlScanner {
    rewriter: HtmlRewriter<'static, fn(&[u8])>,
    found: Arc<Mutex<Found>>,
}

impl HtmlScanner {
    /// A scanner for the document at `base`.
    pub fn new(base: &Url) -> HtmlScanner {
        let found = Arc::new(Mutex::new(Found::default()));
        let settings = handlers(base, &found)
            .into_iter()
            .fold(Settings::new_send(), |settings, handler| {
                settings.append_element_content_handler(handler)
            });
        let discard: fn(&[u8]) = |_| {};
        HtmlScanner {
            rewriter: HtmlRewriter::new(settings, discard),
            found,
        }
    }

    /// Feeds the next chunk and returns what it revealed. Malformed HTML
    /// is scanned as a browser would; nothing here fails.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Discovery> {
        // lol_html errors only when its memory limit is hit; what was
        // found until then stands.
        let _ = self.rewriter.write(chunk);
        self.take()
    }

    /// Ends the document and returns the last discoveries.
    pub fn finish(self) -> Vec<Discovery> {
        let found = self.found.clone();
        let _ = self.rewriter.end();
        let mut found = found.lock().expect("the scanner is single-threaded");
        std::mem::take(&mut found.discoveries)
    }

    fn take(&self) -> Vec<Discovery> {
        let mut found = self.found.lock().expect("the scanner is single-threaded");
        std::mem::take(&mut found.discoveries)
    }
}

type Handlers = Vec<(
    std::borrow::Cow<'static, lol_html::Selector>,
    lol_html::send::ElementContentHandlers<'static>,
)>;

fn handlers(base: &Url, found: &Arc<Mutex<Found>>) -> Handlers {
    // Each handler owns its own handle on the base URL and the findings.
    let shared = || (base.clone(), found.clone());
    let (_, body) = shared();
    let (link_base, links) = shared();
    let (script_base, scripts) = shared();
    let (img_base, imgs) = shared();
    let (attr_base, attrs) = shared();
    let (_, style_start) = shared();
    let (style_base, styles) = shared();
    vec![
        element!("body", move |_| {
            body.lock().unwrap().in_body = true;
            Ok(())
        }),
        element!("link[href]", move |el| {
            let mut found = links.lock().unwrap();
            let in_head = !found.in_body;
            let href = el.get_attribute("href").unwrap_or_default();
            let rel = el
                .get_attribute("rel")
                .unwrap_or_default()
                .to_ascii_lowercase();
            let media = el.get_attribute("media").unwrap_or_default();
            let preload_as = el.get_attribute("as");
            if let Some(d) = link(&link_base, &href, &rel, &preload_as, &media, in_head) {
                found.discoveries.push(d);
            }
            Ok(())
        }),
        element!("script[src]", move |el| {
            let mut found = scripts.lock().unwrap();
            let in_head = !found.in_body;
            let src = el.get_attribute("src").unwrap_or_default();
            let module = el.get_attribute("type").as_deref() == Some("module");
            let deferred = el.has_attribute("async") || el.has_attribute("defer");
            if let Some(mut d) = Discovery::new(&script_base, &src, ResourceKind::Script) {
                d.module = module;
                d.render_blocking = in_head && !module && !deferred;
                found.discoveries.push(d);
            }
            Ok(())
        }),
        element!("img[src]", move |el| {
            let src = el.get_attribute("src").unwrap_or_default();
            if let Some(d) = Discovery::new(&img_base, &src, ResourceKind::Image) {
                imgs.lock().unwrap().discoveries.push(d);
            }
            Ok(())
        }),
        element!("[style]", move |el| {
            let style = el.get_attribute("style").unwrap_or_default();
            let found = css_references(&style, &attr_base);
            attrs.lock().unwrap().discoveries.extend(found);
            Ok(())
        }),
        element!("style", move |_| {
            style_start.lock().unwrap().style_text.clear();
            Ok(())
        }),
        text!("style", move |chunk| {
            let mut found = styles.lock().unwrap();
            found.style_text.push_str(chunk.as_str());
            if chunk.last_in_text_node() {
                let css = std::mem::take(&mut found.style_text);
                let references = css_references(&css, &style_base);
                found.discoveries.extend(references);
            }
            Ok(())
        }),
    ]
}

/// A `<link>`: stylesheets, preloads and module preloads; icons, prefetches
/// and the rest are not part of the page load.
fn link(
    base: &Url,
    href: &str,
    rel: &str,
    preload_as: &Option<String>,
    media: &str,
    in_head: bool,
) -> Option<Discovery> {
    let rels: Vec<&str> = rel.split_ascii_whitespace().collect();
    if rels.contains(&"stylesheet") && !rels.contains(&"alternate") {
        let mut d = Discovery::new(base, href, ResourceKind::Stylesheet)?;
        d.render_blocking = in_head && applies_to_screen(media);
        return Some(d);
    }
    if rels.contains(&"modulepreload") {
        let mut d = Discovery::new(base, href, ResourceKind::Script)?;
        d.module = true;
        return Some(d);
    }
    if rels.contains(&"preload") {
        let kind = match preload_as.as_deref() {
            Some("style") => ResourceKind::Stylesheet,
            Some("script") => ResourceKind::Script,
            Some("font") => ResourceKind::Font,
            Some("image") => ResourceKind::Image,
            _ => ResourceKind::Other,
        };
        return Discovery::new(base, href, kind);
    }
    None
}

/// `print` stylesheets do not block rendering on a screen.
fn applies_to_screen(media: &str) -> bool {
    let media = media.trim().to_ascii_lowercase();
    media.is_empty()
        || media.contains("screen")
        || media.contains("all")
        || !media.contains("print")
}

/// Every resource a stylesheet refers to: `@import`s as stylesheets,
/// `url()`s inside `@font-face` as fonts, other `url()`s as images.
pub fn css_references(css: &str, base: &Url) -> Vec<Discovery> {
    let mut parser = Parser::new(css);
    let mut out = Vec::new();
    scan_css(&mut parser, base, ResourceKind::Image, &mut out);
    out
}

fn scan_css(parser: &mut Parser<'_>, base: &Url, kind: ResourceKind, out: &mut Vec<Discovery>) {
    let mut importing = false;
    let mut font_face_next = false;
    while let Ok(token) = parser.next() {
        let token = token.clone();
        match token {
            Token::AtKeyword(ref name) => {
                importing = name.eq_ignore_ascii_case("import");
                font_face_next = name.eq_ignore_ascii_case("font-face");
            }
            Token::QuotedString(ref s) if importing => {
                out.extend(Discovery::new(base, s, ResourceKind::Stylesheet));
                importing = false;
            }
            Token::UnquotedUrl(ref s) => {
                let kind = if importing {
                    ResourceKind::Stylesheet
                } else {
                    kind
                };
                out.extend(Discovery::new(base, s, kind));
                importing = false;
            }
            Token::Function(ref name) if name.eq_ignore_ascii_case("url") => {
                let reference = parser
                    .parse_nested_block(|p| {
                        Ok::<_, cssparser::ParseError<()>>(p.expect_string()?.to_string())
                    })
                    .ok();
                let kind = if importing {
                    ResourceKind::Stylesheet
                } else {
                    kind
                };
                if let Some(reference) = reference {
                    out.extend(Discovery::new(base, &reference, kind));
                }
                importing = false;
            }
            Token::CurlyBracketBlock => {
                let inner = if font_face_next {
                    ResourceKind::Font
                } else {
                    kind
                };
                font_face_next = false;
                let _ = parser.parse_nested_block(|p| {
                    scan_css(p, base, inner, out);
                    Ok::<_, cssparser::ParseError<()>>(())
                });
            }
            Token::Function(_) | Token::ParenthesisBlock | Token::SquareBracketBlock => {
                let _ = parser.parse_nested_block(|p| {
                    scan_css(p, base, kind, out);
                    Ok::<_, cssparser::ParseError<()>>(())
                });
            }
            Token::Semicolon => importing = false,
            _ => {}
        }
    }
}

/// The modules an ES module imports statically (`import "x"`, `import a
/// from "x"`, `export * from "x"`); dynamic `import()` is code and not
/// followed.
pub fn module_imports(js: &str, base: &Url) -> Vec<Discovery> {
    let tokens = js_tokens(js);
    let mut out = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let JsToken::Word(word) = token else { continue };
        if *word != "import" && *word != "export" {
            continue;
        }
        if let Some(specifier) = static_specifier(&tokens[i + 1..], *word == "import") {
            if let Some(mut d) = Discovery::new(base, specifier, ResourceKind::Script) {
                d.module = true;
                out.push(d);
            }
        }
    }
    out
}

/// The module specifier of the statement after `import`/`export`, if it
/// is a static one.
fn static_specifier<'a>(rest: &[JsToken<'a>], is_import: bool) -> Option<&'a str> {
    match rest.first()? {
        JsToken::Str(s) if is_import => return Some(s),
        JsToken::Punct('(') | JsToken::Punct('.') => return None,
        _ => {}
    }
    let mut tokens = rest.iter();
    while let Some(token) = tokens.next() {
        match token {
            JsToken::Word("from") => {
                return match tokens.next()? {
                    JsToken::Str(s) => Some(s),
                    _ => None,
                }
            }
            JsToken::Punct(';') | JsToken::Word("import") | JsToken::Word("export") => return None,
            _ => {}
        }
    }
    None
}

#[derive(Debug, PartialEq)]
enum JsToken<'a> {
    Word(&'a str),
    Str(&'a str),
    Punct(char),
}

/// Just enough of a JavaScript lexer to find import statements: words,
/// string literals and punctuation, with comments and template literals
/// skipped.
fn js_tokens(js: &str) -> Vec<JsToken<'_>> {
    let bytes = js.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if js[i..].starts_with("//") {
            i = js[i..].find('\n').map_or(bytes.len(), |n| i + n);
        } else if js[i..].starts_with("/*") {
            i = js[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |n| i + 2 + n + 2);
        } else if c == b'"' || c == b'\'' || c == b'`' {
            let end = string_end(bytes, i);
            if c != b'`' {
                tokens.push(JsToken::Str(&js[i + 1..end.saturating_sub(1).max(i + 1)]));
            }
            i = end;
        } else if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'$')
            {
                i += 1;
            }
            tokens.push(JsToken::Word(&js[start..i]));
        } else {
            if !c.is_ascii_whitespace() && c.is_ascii() {
                tokens.push(JsToken::Punct(c as char));
            }
            i += 1;
        }
    }
    tokens
}

/// The index just past the string literal opening at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            c if c == quote => return i + 1,
            b'\n' if quote != b'`' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("https://site.test/dir/page.html").unwrap()
    }

    fn urls(found: &[Discovery]) -> Vec<&str> {
        found.iter().map(|d| d.url.as_str()).collect()
    }

    #[test]
    fn html_resources_are_found_across_chunk_boundaries() {
        let html = r#"<!doctype html><html><head>
            <link rel="stylesheet" href="/css/a.css">
            <link rel=stylesheet media=print href=print.css>
            <link rel=icon href=/favicon.ico>
            <link rel=preload as=font href="/f.woff2">
            <script src="/js/blocking.js"></script>
            <script defer src="/js/deferred.js"></script>
            <script type=module src="app.js#x"></script>
            <style>body { background: url("/img/bg.png") }</style>
            </head><body><img src="/img/a.png"><div style="background:url(b.png)"></div>
            <script src="/js/late.js"></script><img src="data:image/png;base64,AA"></body></html>"#;
        let mut scanner = HtmlScanner::new(&base());
        let mut found = Vec::new();
        for chunk in html.as_bytes().chunks(7) {
            found.extend(scanner.feed(chunk));
        }
        found.extend(scanner.finish());
        assert_eq!(
            urls(&found),
            [
                "https://site.test/css/a.css",
                "https://site.test/dir/print.css",
                "https://site.test/f.woff2",
                "https://site.test/js/blocking.js",
                "https://site.test/js/deferred.js",
                "https://site.test/dir/app.js",
                "https://site.test/img/bg.png",
                "https://site.test/img/a.png",
                "https://site.test/dir/b.png",
                "https://site.test/js/late.js",
            ]
        );
        let blocking: Vec<bool> = found.iter().map(|d| d.render_blocking).collect();
        assert_eq!(
            blocking,
            [true, false, false, true, false, false, false, false, false, false]
        );
        assert_eq!(found[2].kind, ResourceKind::Font);
        assert!(found[5].module && !found[4].module);
        assert_eq!(found[6].kind, ResourceKind::Image);
    }

    #[test]
    fn html_discoveries_arrive_while_the_document_streams() {
        let mut scanner = HtmlScanner::new(&base());
        let first = scanner.feed(b"<html><head><link rel=stylesheet href=/a.css><title>");
        assert_eq!(urls(&first), ["https://site.test/a.css"]);
    }

    #[test]
    fn css_imports_fonts_and_images_are_told_apart() {
        let css = r#"@import "base.css"; @import url(/theme.css) screen;
            @font-face { font-family: X; src: url("/fonts/x.woff2") format("woff2"), url(/fonts/x.woff); }
            .hero { background-image: url('/img/hero.png'); }
            @media (min-width: 10px) { .b { background: url(/img/b.png) } }
            .c::after { content: "url(/not-a-url.png)" }"#;
        let found = css_references(css, &Url::parse("https://site.test/css/main.css").unwrap());
        let kinds: Vec<(&str, ResourceKind)> =
            found.iter().map(|d| (d.url.path(), d.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("/css/base.css", ResourceKind::Stylesheet),
                ("/theme.css", ResourceKind::Stylesheet),
                ("/fonts/x.woff2", ResourceKind::Font),
                ("/fonts/x.woff", ResourceKind::Font),
                ("/img/hero.png", ResourceKind::Image),
                ("/img/b.png", ResourceKind::Image),
            ]
        );
    }

    #[test]
    fn static_module_imports_are_followed_and_code_is_not() {
        let js = r#"import "/js/a.js";
            import def, { x as y } from './b.js';
            export * from "/js/c.js";
            export { z } from "/js/d.js";
            // import "/js/commented.js";
            /* import "/js/block.js"; */
            const s = "import '/js/in-string.js'";
            import("/js/dynamic.js");
            import.meta.url;
            export const v = 1;
            let t = `import "/js/template.js"`;"#;
        let found = module_imports(js, &Url::parse("https://site.test/js/main.js").unwrap());
        assert_eq!(
            urls(&found),
            [
                "https://site.test/js/a.js",
                "https://site.test/js/b.js",
                "https://site.test/js/c.js",
                "https://site.test/js/d.js",
            ]
        );
        assert!(found
            .iter()
            .all(|d| d.module && d.kind == ResourceKind::Script));
    }
}
