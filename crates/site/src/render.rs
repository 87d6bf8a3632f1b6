//! The bytes of each file of a [`Layout`]: the index page, stylesheets,
//! fonts, scripts and images, each padded to its exact size with seeded
//! filler.

use std::fmt::Write as _;

use anyhow::{bail, Context, Result};
use h3lab_results::ResourceKind;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::layout::{Image, Layout, Load, Place, Script, Style};
use crate::SiteFile;

/// Marks an index page as generated, so `generate` may replace the site.
pub(super) const GENERATOR_MARK: &str = "<meta name=generator content=\"h3lab site gen";

/// One file of the site and what it is rendered from.
pub(super) enum Source<'a> {
    Index,
    Style(&'a Style),
    Font,
    Script(&'a Script),
    Image(&'a Image),
}

impl Source<'_> {
    /// What a browser loads the file as.
    fn kind(&self) -> ResourceKind {
        match self {
            Source::Index => ResourceKind::Document,
            Source::Style(_) => ResourceKind::Stylesheet,
            Source::Font => ResourceKind::Font,
            Source::Script(_) => ResourceKind::Script,
            Source::Image(_) => ResourceKind::Image,
        }
    }
}

/// Every file of `layout`, the index page first, with its size.
pub(super) fn files<'a>(layout: &'a Layout) -> Vec<(SiteFile, Source<'a>)> {
    let index_bytes = index_html(layout).len() as u64;
    let entry = |path: &str, bytes, source: Source<'a>| {
        let path = path.to_string();
        let kind = source.kind();
        (SiteFile { path, kind, bytes }, source)
    };
    let mut files = vec![entry("/index.html", index_bytes, Source::Index)];
    for s in &layout.styles {
        files.push(entry(&s.path, s.bytes, Source::Style(s)));
    }
    for f in &layout.fonts {
        files.push(entry(&f.path, f.bytes, Source::Font));
    }
    for s in &layout.scripts {
        files.push(entry(&s.path, s.bytes, Source::Script(s)));
    }
    for i in &layout.images {
        files.push(entry(&i.path, i.bytes, Source::Image(i)));
    }
    files
}

/// The bytes of the file at position `position` of [`files`]; its filler
/// comes from its own ChaCha stream of the site's seed.
pub(super) fn contents(
    layout: &Layout,
    position: usize,
    file: &SiteFile,
    source: &Source,
) -> Result<Vec<u8>> {
    let mut rng = ChaCha8Rng::seed_from_u64(layout.seed);
    rng.set_stream(position as u64 + 1);
    let bytes = match source {
        Source::Index => index_html(layout).into_bytes(),
        Source::Style(style) => padded(stylesheet(layout, style), file, &mut rng)?,
        Source::Font => woff2(file.bytes, &mut rng),
        Source::Script(script) => padded(javascript(script), file, &mut rng)?,
        Source::Image(image) => png(image, &mut rng)?,
    };
    if bytes.len() as u64 != file.bytes {
        bail!(
            "{} came out at {} bytes, not {}",
            file.path,
            bytes.len(),
            file.bytes
        );
    }
    Ok(bytes)
}

/// `code` followed by a comment of seeded letters up to the file's size.
fn padded(code: String, file: &SiteFile, rng: &mut ChaCha8Rng) -> Result<Vec<u8>> {
    const OPEN: &str = "/*\n";
    const CLOSE: &str = "\n*/\n";
    let fixed = (code.len() + OPEN.len() + CLOSE.len()) as u64;
    let Some(filler) = file.bytes.checked_sub(fixed) else {
        bail!(
            "{} needs {fixed} bytes, more than its {}",
            file.path,
            file.bytes
        );
    };
    let mut out = code.into_bytes();
    out.extend_from_slice(OPEN.as_bytes());
    out.extend(letters(rng, filler as usize));
    out.extend_from_slice(CLOSE.as_bytes());
    Ok(out)
}

/// Lower-case letters in lines of 80 (a newline every 80th byte).
fn letters(rng: &mut ChaCha8Rng, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    rng.fill_bytes(&mut out);
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = match i % 80 == 79 {
            true => b'\n',
            false => b'a' + *byte % 26,
        };
    }
    out
}

/// `wOF2` and seeded bytes: the size of a web font, but not a decodable one.
fn woff2(bytes: u64, rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut out = vec![0u8; bytes as usize];
    rng.fill_bytes(&mut out);
    let magic = b"wOF2";
    let n = magic.len().min(out.len());
    out[..n].copy_from_slice(&magic[..n]);
    out
}

fn javascript(script: &Script) -> String {
    let mut code = String::new();
    for import in &script.imports {
        let _ = writeln!(code, "import \"{import}\";");
    }
    let _ = writeln!(code, "/* h3lab synthetic site: {} */", script.path);
    let name = script
        .path
        .trim_start_matches("/js/")
        .trim_end_matches(".js");
    let _ = match script.load {
        Load::Blocking | Load::Defer => writeln!(
            code,
            "(function () {{ var w = window; w.h3labScripts = (w.h3labScripts || []).concat([\"{name}\"]); }})();"
        ),
        Load::Module | Load::Imported => writeln!(code, "export const name = \"{name}\";"),
    };
    code
}

fn stylesheet(layout: &Layout, style: &Style) -> String {
    let mut css = String::new();
    for import in &style.imports {
        let _ = writeln!(css, "@import url(\"{import}\");");
    }
    let _ = writeln!(css, "/* h3lab synthetic site: {} */", style.path);
    for &face in &style.faces {
        let font = &layout.fonts[face];
        let _ = writeln!(
            css,
            "@font-face {{ font-family: \"{}\"; src: url(\"{}\") format(\"woff2\"); font-weight: {}; font-display: swap; }}",
            font.family, font.path, font.weight
        );
    }
    if !style.faces.is_empty() {
        css.push_str("body { font-family: \"Body\", sans-serif; }\n");
        css.push_str("strong { font-weight: 700; }\n");
        css.push_str("h1, h2 { font-family: \"Heading\", serif; font-weight: 700; }\n");
    }
    for &index in &style.backgrounds {
        let image = &layout.images[index];
        if let Place::Background(class) = &image.place {
            let _ = writeln!(
                css,
                ".{class} {{ min-height: {}px; background-image: url(\"{}\"); background-size: cover; }}",
                image.height, image.path
            );
        }
    }
    if style.linked && style.imports.is_empty() {
        css.push_str("a { color: #0645ad; }\nfooter { padding: 1rem; }\n");
    } else if style.linked {
        css.push_str("main { max-width: 960px; margin: 0 auto; padding: 1rem; }\n");
    }
    css
}

/// A 1-bit indexed PNG of the image's pixel size (8×8 checks in two seeded
/// colours), with a private ancillary `paDd` chunk of seeded letters that
/// brings it to its exact size. Decoders skip the chunk.
fn png(image: &Image, rng: &mut ChaCha8Rng) -> Result<Vec<u8>> {
    let mut palette = [0u8; 6];
    rng.fill_bytes(&mut palette);
    let bare = encode_png(image, &palette, None)?;
    const CHUNK_OVERHEAD: u64 = 12;
    let Some(filler) = image.bytes.checked_sub(bare.len() as u64 + CHUNK_OVERHEAD) else {
        bail!(
            "{} is {} bytes, too small for its {} byte picture",
            image.path,
            image.bytes,
            bare.len()
        );
    };
    encode_png(image, &palette, Some(&letters(rng, filler as usize)))
}

fn encode_png(image: &Image, palette: &[u8; 6], padding: Option<&[u8]>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, image.width, image.height);
    encoder.set_color(png::ColorType::Indexed);
    encoder.set_depth(png::BitDepth::One);
    encoder.set_palette(palette.as_slice());
    let mut writer = encoder.write_header().context("PNG header")?;
    writer
        .write_image_data(&checks(image.width, image.height))
        .context("PNG image data")?;
    if let Some(padding) = padding {
        writer
            .write_chunk(png::chunk::ChunkType(*b"paDd"), padding)
            .context("PNG padding chunk")?;
    }
    writer.finish().context("PNG end")?;
    Ok(out)
}

/// 1-bit pixels in 8×8 checks, packed eight to a byte, row by row.
fn checks(width: u32, height: u32) -> Vec<u8> {
    let row_bytes = width.div_ceil(8) as usize;
    let mut pixels = Vec::with_capacity(row_bytes * height as usize);
    for row in 0..height as usize {
        pixels.extend((0..row_bytes).map(|b| match (row / 8 + b) % 2 {
            0 => 0x00,
            _ => 0xff,
        }));
    }
    pixels
}

/// The page: render-blocking stylesheets and classic scripts in `<head>`,
/// deferred and module scripts after them; a heading with an id and the
/// hero image first in the body, every other image an `<img>` with its
/// size, and an element for every CSS background.
pub(super) fn index_html(layout: &Layout) -> String {
    let mut html = String::from("<!doctype html>\n<html lang=en>\n<head>\n");
    html.push_str("<meta charset=utf-8>\n");
    html.push_str("<meta name=viewport content=\"width=device-width, initial-scale=1\">\n");
    let (shape, seed) = (layout.shape, layout.seed);
    let _ = writeln!(html, "{GENERATOR_MARK} {shape} --seed {seed}\">");
    let _ = writeln!(
        html,
        "<title>h3lab synthetic site: {shape}, seed {seed}</title>"
    );
    // No favicon request: browsers ask for /favicon.ico unless told otherwise.
    html.push_str("<link rel=icon href=\"data:,\">\n");
    head_resources(layout, &mut html);
    html.push_str("</head>\n<body>\n");
    body(layout, &mut html);
    html.push_str("</body>\n</html>\n");
    html
}

fn head_resources(layout: &Layout, html: &mut String) {
    for style in layout.styles.iter().filter(|s| s.linked) {
        let _ = writeln!(html, "<link rel=stylesheet href=\"{}\">", style.path);
    }
    for script in &layout.scripts {
        let _ = match script.load {
            Load::Blocking => writeln!(html, "<script src=\"{}\"></script>", script.path),
            Load::Defer => writeln!(html, "<script defer src=\"{}\"></script>", script.path),
            Load::Module => writeln!(
                html,
                "<script type=module src=\"{}\"></script>",
                script.path
            ),
            Load::Imported => Ok(()),
        };
    }
}

const PARAGRAPH: &str = "Measured pages load many files over one connection; this \
text is here so the page has words to lay out, in <strong>bold</strong> and plain.";

fn body(layout: &Layout, html: &mut String) {
    let backgrounds: Vec<&str> = layout
        .images
        .iter()
        .filter_map(|image| match &image.place {
            Place::Background(class) => Some(class.as_str()),
            _ => None,
        })
        .collect();
    let header_class = backgrounds
        .first()
        .map(|c| format!(" class={c}"))
        .unwrap_or_default();
    let _ = writeln!(html, "<header{header_class}>");
    let _ = writeln!(
        html,
        "<h1 id=hero>Synthetic {} site</h1>\n</header>\n<main>",
        layout.shape
    );
    for image in layout.images.iter().filter(|i| i.place == Place::Hero) {
        img(html, image, " id=hero-image");
    }
    let _ = writeln!(html, "<p>{PARAGRAPH}</p>");
    let inline = layout.images.iter().filter(|i| i.place == Place::Inline);
    for (n, image) in inline.enumerate() {
        img(html, image, "");
        if n % 4 == 3 {
            let _ = writeln!(html, "<h2>Section {}</h2>\n<p>{PARAGRAPH}</p>", n / 4 + 1);
        }
    }
    html.push_str("</main>\n");
    for class in backgrounds.iter().skip(1) {
        let _ = writeln!(html, "<section class={class}><p>{PARAGRAPH}</p></section>");
    }
}

fn img(html: &mut String, image: &Image, id: &str) {
    let _ = writeln!(
        html,
        "<img{id} src=\"{}\" width={} height={} alt=\"\">",
        image.path, image.width, image.height
    );
}
