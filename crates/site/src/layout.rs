//! What each shape contains: which files, their sizes, and which file
//! loads which. Sizes are drawn here; bytes are written in `render`.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::sizes::{exact_sizes, SizeRange};
use crate::Shape;

/// A whole site before rendering.
pub(super) struct Layout {
    pub shape: Shape,
    pub seed: u64,
    pub styles: Vec<Style>,
    pub fonts: Vec<Font>,
    pub scripts: Vec<Script>,
    pub images: Vec<Image>,
}

/// A stylesheet: linked from the page or pulled in by `@import`.
pub(super) struct Style {
    pub path: String,
    pub bytes: u64,
    pub linked: bool,
    /// Stylesheets this one `@import`s.
    pub imports: Vec<String>,
    /// Indices into [`Layout::fonts`] declared here with `@font-face`.
    pub faces: Vec<usize>,
    /// Indices into [`Layout::images`] used here as backgrounds.
    pub backgrounds: Vec<usize>,
}

/// A web font face and the text that uses it.
pub(super) struct Font {
    pub path: String,
    pub bytes: u64,
    pub family: &'static str,
    pub weight: u16,
}

/// How the page loads a script.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Load {
    /// Classic `<script src>` in `<head>`: blocks parsing.
    Blocking,
    /// Classic `<script defer src>`.
    Defer,
    /// `<script type=module src>`.
    Module,
    /// A module only reached through another module's static `import`.
    Imported,
}

/// A script and the modules it statically imports.
pub(super) struct Script {
    pub path: String,
    pub bytes: u64,
    pub load: Load,
    pub imports: Vec<String>,
}

/// Where an image appears.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) enum Place {
    /// The first, largest `<img>`: the Largest Contentful Paint candidate.
    Hero,
    /// An `<img>` in the body.
    Inline,
    /// A CSS background of the element with this class.
    Background(String),
}

/// A PNG image.
pub(super) struct Image {
    pub path: String,
    pub bytes: u64,
    pub width: u32,
    pub height: u32,
    pub place: Place,
}

/// The three sites of study C: scripts and images only.
struct ScriptsAndImages {
    scripts: usize,
    script_range: SizeRange,
    images: usize,
    image_range: SizeRange,
    total: u64,
}

const SMALL: ScriptsAndImages = ScriptsAndImages {
    scripts: 10,
    script_range: SizeRange::new(2_000, 100_000),
    images: 10,
    image_range: SizeRange::new(1_000, 50_000),
    total: 600_000,
};

const CONTENT: ScriptsAndImages = ScriptsAndImages {
    scripts: 50,
    script_range: SizeRange::new(2_000, 1_000_000),
    images: 55,
    image_range: SizeRange::new(1_000, 1_000_000),
    total: 10_000_000,
};

const SPA: ScriptsAndImages = ScriptsAndImages {
    scripts: 85,
    script_range: SizeRange::new(2_000, 1_000_000),
    images: 30,
    image_range: SizeRange::new(1_000, 50_000),
    total: 15_000_000,
};

/// Pixel sizes: the hero, other `<img>`s, and CSS backgrounds.
pub(super) const HERO_PIXELS: (u32, u32) = (640, 360);
pub(super) const INLINE_PIXELS: (u32, u32) = (320, 180);
pub(super) const BACKGROUND_PIXELS: (u32, u32) = (400, 100);

/// The layout of `shape` with sizes drawn from `seed`.
pub(super) fn layout(shape: Shape, seed: u64) -> Layout {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    match shape {
        Shape::Small => scripts_and_images(shape, seed, &SMALL, &mut rng),
        Shape::Content => scripts_and_images(shape, seed, &CONTENT, &mut rng),
        Shape::Spa => scripts_and_images(shape, seed, &SPA, &mut rng),
        Shape::Cms => cms(seed, &mut rng),
    }
}

fn scripts_and_images(
    shape: Shape,
    seed: u64,
    spec: &ScriptsAndImages,
    rng: &mut ChaCha8Rng,
) -> Layout {
    let mut ranges = vec![spec.script_range; spec.scripts];
    ranges.extend(vec![spec.image_range; spec.images]);
    let sizes = exact_sizes(rng, &ranges, spec.total);
    let (script_sizes, image_sizes) = sizes.split_at(spec.scripts);
    Layout {
        shape,
        seed,
        styles: Vec::new(),
        fonts: Vec::new(),
        scripts: script_tree(script_sizes),
        images: hero_first(image_sizes),
    }
}

/// Scripts in four roles: about 6 % blocking, 10 % deferred, and the rest
/// modules in three levels, each level-2 and level-3 module imported by one
/// module of the level above (page → app → lib → util).
fn script_tree(sizes: &[u64]) -> Vec<Script> {
    let n = sizes.len();
    let blocking = (n * 6 / 100).max(1);
    let defer = (n / 10).max(1);
    let modules = n - blocking - defer;
    let apps = modules.div_ceil(3);
    let libs = (modules - apps).div_ceil(2);
    let utils = modules - apps - libs;
    let mut roles = Vec::new();
    roles.extend((0..blocking).map(|i| (format!("head-{:02}", i + 1), Load::Blocking)));
    roles.extend((0..defer).map(|i| (format!("defer-{:02}", i + 1), Load::Defer)));
    roles.extend((0..apps).map(|i| (format!("app-{:02}", i + 1), Load::Module)));
    roles.extend((0..libs).map(|i| (format!("lib-{:02}", i + 1), Load::Imported)));
    roles.extend((0..utils).map(|i| (format!("util-{:02}", i + 1), Load::Imported)));
    let mut scripts: Vec<Script> = roles
        .into_iter()
        .zip(sizes)
        .map(|((name, load), &bytes)| Script {
            path: format!("/js/{name}.js"),
            bytes,
            load,
            imports: Vec::new(),
        })
        .collect();
    let first_app = blocking + defer;
    link_level(&mut scripts, first_app, apps, libs);
    link_level(&mut scripts, first_app + apps, libs, utils);
    scripts
}

/// Module `start + parents + k` is imported by module `start + k % parents`.
fn link_level(scripts: &mut [Script], start: usize, parents: usize, children: usize) {
    for k in 0..children {
        let child = scripts[start + parents + k].path.clone();
        scripts[start + k % parents].imports.push(child);
    }
}

/// The largest image becomes the hero (first `<img>`); the rest keep their order.
fn hero_first(sizes: &[u64]) -> Vec<Image> {
    let hero = (0..sizes.len())
        .max_by_key(|&i| (sizes[i], std::cmp::Reverse(i)))
        .expect("a shape has images");
    let mut images = vec![image("/img/hero.png".into(), sizes[hero], Place::Hero)];
    let others = (0..sizes.len()).filter(|&i| i != hero);
    for (n, i) in others.enumerate() {
        let path = format!("/img/photo-{:02}.png", n + 1);
        images.push(image(path, sizes[i], Place::Inline));
    }
    images
}

fn image(path: String, bytes: u64, place: Place) -> Image {
    let (width, height) = match place {
        Place::Hero => HERO_PIXELS,
        Place::Inline => INLINE_PIXELS,
        Place::Background(_) => BACKGROUND_PIXELS,
    };
    Image {
        path,
        bytes,
        width,
        height,
        place,
    }
}

/// The CMS page's file groups, in the order sizes are drawn.
const CMS_STYLE: SizeRange = SizeRange::new(5_000, 60_000);
const CMS_FONT: SizeRange = SizeRange::new(15_000, 60_000);
const CMS_SCRIPT: SizeRange = SizeRange::new(5_000, 150_000);
const CMS_HERO: SizeRange = SizeRange::new(80_000, 250_000);
const CMS_PHOTO: SizeRange = SizeRange::new(10_000, 150_000);
const CMS_BACKGROUND: SizeRange = SizeRange::new(2_000, 40_000);
const CMS_PHOTOS: usize = 11;
const CMS_TOTAL: u64 = 1_500_000;

fn cms(seed: u64, rng: &mut ChaCha8Rng) -> Layout {
    let mut ranges = vec![CMS_STYLE; 3];
    ranges.extend([CMS_FONT; 3]);
    ranges.extend([CMS_SCRIPT; 6]);
    ranges.push(CMS_HERO);
    ranges.extend(vec![CMS_PHOTO; CMS_PHOTOS]);
    ranges.extend([CMS_BACKGROUND; 3]);
    let sizes = exact_sizes(rng, &ranges, CMS_TOTAL);
    Layout {
        shape: Shape::Cms,
        seed,
        styles: cms_styles(&sizes[0..3]),
        fonts: cms_fonts(&sizes[3..6]),
        scripts: cms_scripts(&sizes[6..12]),
        images: cms_images(&sizes[12..]),
    }
}

/// main.css (linked) `@import`s base.css (fonts, one background);
/// theme.css (linked) holds the other background.
fn cms_styles(sizes: &[u64]) -> Vec<Style> {
    let style =
        |name: &str, bytes, linked, imports: &[&str], faces: &[usize], bgs: &[usize]| Style {
            path: format!("/css/{name}.css"),
            bytes,
            linked,
            imports: imports.iter().map(|s| s.to_string()).collect(),
            faces: faces.to_vec(),
            backgrounds: bgs.to_vec(),
        };
    let first_bg = 1 + CMS_PHOTOS;
    vec![
        style("main", sizes[0], true, &["/css/base.css"], &[], &[first_bg]),
        style("base", sizes[1], false, &[], &[0, 1, 2], &[first_bg + 1]),
        style("theme", sizes[2], true, &[], &[], &[first_bg + 2]),
    ]
}

fn cms_fonts(sizes: &[u64]) -> Vec<Font> {
    let faces = [
        ("body-regular", "Body", 400),
        ("body-bold", "Body", 700),
        ("heading", "Heading", 700),
    ];
    faces
        .iter()
        .zip(sizes)
        .map(|(&(name, family, weight), &bytes)| Font {
            path: format!("/fonts/{name}.woff2"),
            bytes,
            family,
            weight,
        })
        .collect()
}

/// Two blocking scripts in `<head>`, two deferred, one module entry that
/// imports the sixth.
fn cms_scripts(sizes: &[u64]) -> Vec<Script> {
    let roles = [
        ("vendor-01", Load::Blocking),
        ("vendor-02", Load::Blocking),
        ("site-01", Load::Defer),
        ("site-02", Load::Defer),
        ("app-01", Load::Module),
        ("lib-01", Load::Imported),
    ];
    let mut scripts: Vec<Script> = roles
        .iter()
        .zip(sizes)
        .map(|(&(name, load), &bytes)| Script {
            path: format!("/js/{name}.js"),
            bytes,
            load,
            imports: Vec::new(),
        })
        .collect();
    let lib = scripts[5].path.clone();
    scripts[4].imports.push(lib);
    scripts
}

fn cms_images(sizes: &[u64]) -> Vec<Image> {
    let mut images = vec![image("/img/hero.png".into(), sizes[0], Place::Hero)];
    for (n, &bytes) in sizes[1..=CMS_PHOTOS].iter().enumerate() {
        let path = format!("/img/photo-{:02}.png", n + 1);
        images.push(image(path, bytes, Place::Inline));
    }
    for (n, &bytes) in sizes[CMS_PHOTOS + 1..].iter().enumerate() {
        let class = format!("bg-{}", n + 1);
        let path = format!("/img/{class}.png");
        images.push(image(path, bytes, Place::Background(class)));
    }
    images
}
