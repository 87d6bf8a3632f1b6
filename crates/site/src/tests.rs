use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use h3lab_results::ResourceKind;

use crate::*;

const KB: u64 = 1_000;
const MB: u64 = 1_000_000;

/// Every file under `dir`, by URL path.
fn read_site(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let url = format!("/{}", path.strip_prefix(dir).unwrap().display());
            files.insert(url, std::fs::read(&path).unwrap());
        }
    }
    files
}

/// The absolute paths a text file references: `src="…"`, `href="…"`,
/// `url("…")` and `import "…"`.
fn references(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for opener in ["src=\"", "href=\"", "url(\"", "import \""] {
        for (at, _) in text.match_indices(opener) {
            let rest = &text[at + opener.len()..];
            let target = &rest[..rest.find('"').unwrap()];
            if target.starts_with('/') {
                found.push(target.to_string());
            }
        }
    }
    found
}

fn text_of(site: &BTreeMap<String, Vec<u8>>, path: &str) -> String {
    match path.ends_with(".png") || path.ends_with(".woff2") {
        true => String::new(),
        false => String::from_utf8(site[path].clone()).unwrap(),
    }
}

/// Fetch rounds after the document to reach every file (document = 0),
/// failing on a reference to a missing file.
fn depths(site: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, usize> {
    let mut depth = BTreeMap::from([("/index.html".to_string(), 0)]);
    let mut frontier = vec!["/index.html".to_string()];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for path in &frontier {
            for target in references(&text_of(site, path)) {
                assert!(
                    site.contains_key(&target),
                    "{path} references missing {target}"
                );
                if !depth.contains_key(&target) {
                    depth.insert(target.clone(), depth[path] + 1);
                    next.push(target);
                }
            }
        }
        frontier = next;
    }
    depth
}

fn range_of(shape: Shape, file: &SiteFile) -> (u64, u64) {
    let name = file.path.as_str();
    match (shape, file.kind) {
        (Shape::Small, ResourceKind::Script) => (2 * KB, 100 * KB),
        (Shape::Small | Shape::Spa, ResourceKind::Image) => (KB, 50 * KB),
        (Shape::Content | Shape::Spa, ResourceKind::Script) => (2 * KB, MB),
        (Shape::Content, ResourceKind::Image) => (KB, MB),
        (Shape::Cms, ResourceKind::Stylesheet) => (5 * KB, 60 * KB),
        (Shape::Cms, ResourceKind::Font) => (15 * KB, 60 * KB),
        (Shape::Cms, ResourceKind::Script) => (5 * KB, 150 * KB),
        (Shape::Cms, ResourceKind::Image) if name == "/img/hero.png" => (80 * KB, 250 * KB),
        (Shape::Cms, ResourceKind::Image) if name.starts_with("/img/bg-") => (2 * KB, 40 * KB),
        (Shape::Cms, ResourceKind::Image) => (10 * KB, 150 * KB),
        (_, ResourceKind::Document) => (1, 100 * KB),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn shapes_have_exact_counts_totals_and_ranges() {
    use ResourceKind::*;
    let expected = [
        (Shape::Small, [0, 0, 10, 10], 600 * KB),
        (Shape::Content, [0, 0, 50, 55], 10 * MB),
        (Shape::Spa, [0, 0, 85, 30], 15 * MB),
        (Shape::Cms, [3, 3, 6, 15], 1_500 * KB),
    ];
    for (shape, [styles, fonts, scripts, images], total) in expected {
        for seed in 0..20 {
            let site = plan(shape, seed);
            assert_eq!(site.total_bytes(), total, "{shape} seed {seed}");
            let counts = [Document, Stylesheet, Font, Script, Image, Other].map(|k| site.count(k));
            assert_eq!(counts, [1, styles, fonts, scripts, images, 0], "{shape}");
            assert_eq!(site.files[0].path, "/index.html");
            for file in &site.files {
                let (lo, hi) = range_of(shape, file);
                assert!((lo..=hi).contains(&file.bytes), "{shape} {file:?}");
            }
        }
    }
}

#[test]
fn sizes_follow_the_seed() {
    for shape in Shape::ALL {
        assert_eq!(plan(shape, 7), plan(shape, 7));
        assert_ne!(plan(shape, 7).files, plan(shape, 8).files, "{shape}");
    }
}

#[test]
fn generation_is_deterministic_per_seed() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    for shape in [Shape::Small, Shape::Cms] {
        generate(shape, 3, dirs[0].path()).unwrap();
        generate(shape, 3, dirs[1].path()).unwrap();
        generate(shape, 4, dirs[2].path()).unwrap();
        let [a, b, c] = [0, 1, 2].map(|i| read_site(dirs[i].path()));
        assert_eq!(a, b, "{shape}: same seed, same bytes");
        let differ = a.iter().filter(|(path, bytes)| c.get(*path) != Some(bytes));
        assert!(
            differ.count() >= a.len() - 1,
            "{shape}: another seed changes the files"
        );
    }
}

#[test]
fn every_file_is_listed_and_every_reference_resolves() {
    for shape in Shape::ALL {
        let dir = tempfile::tempdir().unwrap();
        let summary = generate(shape, 1, dir.path()).unwrap();
        let site = read_site(dir.path());
        let listed: BTreeMap<String, u64> = summary
            .files
            .iter()
            .map(|f| (f.path.clone(), f.bytes))
            .collect();
        let on_disk: BTreeMap<String, u64> = site
            .iter()
            .map(|(p, b)| (p.clone(), b.len() as u64))
            .collect();
        assert_eq!(listed, on_disk, "{shape}");
        let reached: BTreeSet<String> = depths(&site).into_keys().collect();
        let all: BTreeSet<String> = site.keys().cloned().collect();
        assert_eq!(
            reached, all,
            "{shape}: every file is reachable from the page"
        );
    }
}

#[test]
fn chains_are_three_fetches_deep_after_the_document() {
    for shape in Shape::ALL {
        let dir = tempfile::tempdir().unwrap();
        generate(shape, 2, dir.path()).unwrap();
        let depth = depths(&read_site(dir.path()));
        assert_eq!(depth.values().max(), Some(&3), "{shape}");
    }
}

#[test]
fn css_references_are_used_by_the_page() {
    let dir = tempfile::tempdir().unwrap();
    generate(Shape::Cms, 1, dir.path()).unwrap();
    let site = read_site(dir.path());
    let html = text_of(&site, "/index.html");
    for class in ["bg-1", "bg-2", "bg-3"] {
        assert!(
            html.contains(&format!("class={class}>")),
            "{class} on an element"
        );
    }
    for text in ["<strong>", "<h1 id=hero>", "<p>"] {
        assert!(html.contains(text), "{text} uses a font face");
    }
    let base = text_of(&site, "/css/base.css");
    assert_eq!(base.matches("@font-face").count(), 3);
    assert!(text_of(&site, "/css/main.css").starts_with("@import url(\"/css/base.css\");"));
}

#[test]
fn page_structure_is_realistic() {
    let summary = plan(Shape::Content, 1);
    let dir = tempfile::tempdir().unwrap();
    generate(Shape::Content, 1, dir.path()).unwrap();
    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    let (head, body) = html.split_once("</head>").unwrap();
    assert!(head.contains("<script src=\"/js/head-01.js\">"));
    assert!(head.contains("<script defer src="));
    assert!(head.contains("<script type=module src=\"/js/app-01.js\">"));
    let images = summary.count(ResourceKind::Image);
    assert_eq!(body.matches("<img").count(), images);
    assert!(!html.contains("loading="));
    let first_img = body.find("<img").unwrap();
    assert!(body[first_img..].starts_with("<img id=hero-image src=\"/img/hero.png\" width=640"));
    let hero = summary
        .files
        .iter()
        .find(|f| f.path == "/img/hero.png")
        .unwrap();
    let largest = summary
        .files
        .iter()
        .filter(|f| f.kind == ResourceKind::Image);
    assert_eq!(largest.map(|f| f.bytes).max(), Some(hero.bytes));
}

#[test]
fn images_are_valid_pngs() {
    let dir = tempfile::tempdir().unwrap();
    let summary = generate(Shape::Cms, 5, dir.path()).unwrap();
    let images = summary
        .files
        .iter()
        .filter(|f| f.kind == ResourceKind::Image);
    for file in images {
        let path = dir.path().join(file.path.trim_start_matches('/'));
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        let frame = reader.next_frame(&mut pixels).unwrap();
        assert!(frame.width >= 320 && frame.height >= 90, "{}", file.path);
        reader.finish().unwrap();
    }
}

#[test]
fn scripts_and_fonts_look_like_what_they_are() {
    let dir = tempfile::tempdir().unwrap();
    generate(Shape::Cms, 1, dir.path()).unwrap();
    let site = read_site(dir.path());
    assert!(site["/fonts/heading.woff2"].starts_with(b"wOF2"));
    let app = text_of(&site, "/js/app-01.js");
    assert!(app.starts_with("import \"/js/lib-01.js\";\n"));
    assert!(text_of(&site, "/js/lib-01.js").contains("export const name"));
    assert!(app.trim_end().ends_with("*/"));
    assert_eq!(
        app.matches("*/").count(),
        2,
        "the filler never closes the comment early"
    );
}

#[test]
fn a_foreign_directory_is_refused_and_an_old_site_replaced() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let err = generate(Shape::Small, 1, dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("not empty") && err.contains("--out"), "{err}");
    assert!(dir.path().join("notes.txt").exists());

    let site = tempfile::tempdir().unwrap();
    generate(Shape::Cms, 1, site.path()).unwrap();
    let summary = generate(Shape::Small, 1, site.path()).unwrap();
    let on_disk: BTreeSet<String> = read_site(site.path()).into_keys().collect();
    let listed: BTreeSet<String> = summary.files.into_iter().map(|f| f.path).collect();
    assert_eq!(on_disk, listed, "no file of the old site is left");
}

#[test]
fn shapes_parse_and_print_their_names() {
    for shape in Shape::ALL {
        assert_eq!(shape.name().parse::<Shape>(), Ok(shape));
        assert_eq!(shape.to_string(), shape.name());
    }
    let err = "huge".parse::<Shape>().unwrap_err().to_string();
    assert_eq!(
        err,
        "unknown site shape `huge`: use small, content, spa or cms"
    );
}

#[test]
fn a_summary_prints_a_line_per_kind_and_the_assets_total() {
    let text = plan(Shape::Small, 1).to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("  document       1 files"), "{text}");
    assert!(
        lines
            .last()
            .unwrap()
            .ends_with("600000 bytes (assets; the document not counted)"),
        "{text}"
    );
}
