//! Finding a page's resources the way a browser's preload scanner does,
//! without running any code: from HTML as it streams in, from CSS once it
//! has arrived, and from ES modules' static imports. Pure: text in,
//! discoveries out.
//!
//! What it finds: `<link rel=stylesheet|preload|modulepreload>`, `<script
//! src>`, `<img src>`, `@import` in stylesheets and `<style>` elements,
//! and `import`/`export … from` in module scripts. A stylesheet's images
//! and fonts are for the style engine ([`crate::style`]) to decide, once
//! the document and its sheets are in. What it does not: `<base href>`,
//! `srcset`, `<picture>` sources, video, iframes and anything a script
//! would fetch when run.

use std::sync::{Arc, Mutex};

use h3lab_results::ResourceKind;
use h3lab_site::replay::InitiatedRequest;
use lol_html::send::{HtmlRewriter, Settings};
use lol_html::{element, text};
use url::Url;

use crate::style::Sheet;

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
    /// In a replay, the request as the capture recorded it (its method,
    /// body and status); `None` is a GET found in a body.
    pub replayed: Option<Arc<InitiatedRequest>>,
}

impl Discovery {
    /// A resource found away from the markup that names it (what styling
    /// uses), neither render-blocking nor a module.
    pub fn recorded(url: Url, kind: ResourceKind) -> Discovery {
        Discovery {
            url,
            kind,
            render_blocking: false,
            module: false,
            replayed: None,
        }
    }

    /// A request a replay makes again because the capture's initiator
    /// graph has it (a script's fetch or beacon).
    pub fn initiated(url: Url, request: InitiatedRequest) -> Discovery {
        let kind = request.kind;
        Discovery {
            replayed: Some(Arc::new(request)),
            ..Discovery::recorded(url, kind)
        }
    }

    /// The request's method.
    pub fn method(&self) -> &str {
        self.replayed.as_ref().map_or("GET", |r| r.method.as_str())
    }

    /// What tells this request from others: its URL, and for a method
    /// other than GET the method and which repeat it is, since a beacon
    /// sent twice is two requests while a GET is fetched once.
    pub fn key(&self) -> String {
        match &self.replayed {
            Some(r) if r.method != "GET" => format!("{} {} #{}", r.method, self.url, r.repeat),
            _ => self.url.to_string(),
        }
    }

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
        Some(Discovery::recorded(url, kind))
    }
}

/// What scanning some text found: resources to fetch, and what the
/// style engine ([`crate::style`]) needs to decide the rest.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    /// Resources to fetch.
    pub discoveries: Vec<Discovery>,
    /// A stylesheet that arrived, by its URL.
    pub stylesheet: Option<(Url, Sheet)>,
    /// The page's HTML, once whole.
    pub document: Option<(Url, String)>,
}

impl Findings {
    /// True when there is nothing to report.
    pub fn is_empty(&self) -> bool {
        self.discoveries.is_empty() && self.stylesheet.is_none() && self.document.is_none()
    }
}

/// What the HTML handlers share: what was found and not yet handed out,
/// and whether the parser is still in `<head>`.
#[derive(Default)]
struct Found {
    findings: Findings,
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
    pub fn feed(&mut self, chunk: &[u8]) -> Findings {
        // lol_html errors only when its memory limit is hit; what was
        // found until then stands.
        let _ = self.rewriter.write(chunk);
        self.take()
    }

    /// Ends the document and returns the last findings.
    pub fn finish(self) -> Findings {
        let found = self.found.clone();
        let _ = self.rewriter.end();
        let mut found = found.lock().expect("the scanner is single-threaded");
        std::mem::take(&mut found.findings)
    }

    fn take(&self) -> Findings {
        let mut found = self.found.lock().expect("the scanner is single-threaded");
        std::mem::take(&mut found.findings)
    }
}

type Handlers = Vec<(
    std::borrow::Cow<'static, lol_html::Selector>,
    lol_html::send::ElementContentHandlers<'static>,
)>;

/// An attribute's value with its character references decoded
/// (`&amp;` in a URL is `&`), as a browser reads it; lol_html gives the
/// raw text.
fn attribute<H: lol_html::HandlerTypes>(
    el: &lol_html::html_content::Element<'_, '_, H>,
    name: &str,
) -> Option<String> {
    let raw = el.get_attribute(name)?;
    Some(html_escape::decode_html_entities(&raw).into_owned())
}

fn handlers(base: &Url, found: &Arc<Mutex<Found>>) -> Handlers {
    // Each handler owns its own handle on the base URL and the findings.
    let shared = || (base.clone(), found.clone());
    let (_, body) = shared();
    let (link_base, links) = shared();
    let (script_base, scripts) = shared();
    let (img_base, imgs) = shared();
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
            let href = attribute(el, "href").unwrap_or_default();
            let rel = el
                .get_attribute("rel")
                .unwrap_or_default()
                .to_ascii_lowercase();
            let media = attribute(el, "media").unwrap_or_default();
            let preload_as = attribute(el, "as");
            // A disabled stylesheet is not fetched (HTML's "link type
            // stylesheet"; rustdoc's theme switcher relies on it).
            if el.has_attribute("disabled")
                && rel.split_ascii_whitespace().any(|r| r == "stylesheet")
            {
                return Ok(());
            }
            if let Some(d) = link(&link_base, &href, &rel, &preload_as, &media, in_head) {
                found.findings.discoveries.push(d);
            }
            Ok(())
        }),
        element!("script[src]", move |el| {
            let mut found = scripts.lock().unwrap();
            let in_head = !found.in_body;
            let src = attribute(el, "src").unwrap_or_default();
            let module = attribute(el, "type").as_deref() == Some("module");
            let deferred = el.has_attribute("async") || el.has_attribute("defer");
            if let Some(mut d) = Discovery::new(&script_base, &src, ResourceKind::Script) {
                d.module = module;
                d.render_blocking = in_head && !module && !deferred;
                found.findings.discoveries.push(d);
            }
            Ok(())
        }),
        element!("img[src]", move |el| {
            let src = attribute(el, "src").unwrap_or_default();
            if let Some(d) = Discovery::new(&img_base, &src, ResourceKind::Image) {
                imgs.lock().unwrap().findings.discoveries.push(d);
            }
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
                let imports = style_imports(&css, &style_base);
                found.findings.discoveries.extend(imports);
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

/// The stylesheets a `<style>` element's `@import`s fetch.
fn style_imports(css: &str, base: &Url) -> Vec<Discovery> {
    Sheet::parse(css, base)
        .imports
        .into_iter()
        .filter_map(|url| Discovery::new(base, url.as_str(), ResourceKind::Stylesheet))
        .collect()
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
    fn character_references_in_attributes_are_decoded_as_a_browser_does() {
        let html = r#"<link rel="stylesheet" href="/a.css?v=1&amp;t=2">
            <img src="/badge.svg?style=flat&amp;label=x&#38;y=1">
            <script src="/s.js?a=&quot;b&quot;"></script>"#;
        let mut scanner = HtmlScanner::new(&base());
        let mut found = scanner.feed(html.as_bytes()).discoveries;
        found.extend(scanner.finish().discoveries);
        assert_eq!(
            urls(&found),
            [
                "https://site.test/a.css?v=1&t=2",
                "https://site.test/badge.svg?style=flat&label=x&y=1",
                "https://site.test/s.js?a=%22b%22",
            ]
        );
    }

    #[test]
    fn html_resources_are_found_across_chunk_boundaries() {
        let html = r#"<!doctype html><html><head>
            <link rel="stylesheet" href="/css/a.css">
            <link rel=stylesheet media=print href=print.css>
            <link rel=stylesheet href=/css/theme.css disabled>
            <link rel=icon href=/favicon.ico>
            <link rel=preload as=font href="/f.woff2">
            <script src="/js/blocking.js"></script>
            <script defer src="/js/deferred.js"></script>
            <script type=module src="app.js#x"></script>
            <style>@import "/css/imported.css"; body { background: url("/img/bg.png") }</style>
            </head><body><img src="/img/a.png"><div style="background:url(b.png)"></div>
            <script src="/js/late.js"></script><img src="data:image/png;base64,AA"></body></html>"#;
        let mut scanner = HtmlScanner::new(&base());
        let mut found = Vec::new();
        for chunk in html.as_bytes().chunks(7) {
            found.extend(scanner.feed(chunk).discoveries);
        }
        found.extend(scanner.finish().discoveries);
        assert_eq!(
            urls(&found),
            [
                "https://site.test/css/a.css",
                "https://site.test/dir/print.css",
                "https://site.test/f.woff2",
                "https://site.test/js/blocking.js",
                "https://site.test/js/deferred.js",
                "https://site.test/dir/app.js",
                "https://site.test/css/imported.css",
                "https://site.test/img/a.png",
                "https://site.test/js/late.js",
            ],
            "CSS images are the style engine's to decide, not the scanner's"
        );
        let blocking: Vec<bool> = found.iter().map(|d| d.render_blocking).collect();
        assert_eq!(
            blocking,
            [true, false, false, true, false, false, false, false, false]
        );
        assert_eq!(found[2].kind, ResourceKind::Font);
        assert!(found[5].module && !found[4].module);
        assert_eq!(found[6].kind, ResourceKind::Stylesheet);
        assert_eq!(found[7].kind, ResourceKind::Image);
    }

    #[test]
    fn html_discoveries_arrive_while_the_document_streams() {
        let mut scanner = HtmlScanner::new(&base());
        let first = scanner.feed(b"<html><head><link rel=stylesheet href=/a.css><title>");
        assert_eq!(urls(&first.discoveries), ["https://site.test/a.css"]);
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
