//! Font matching: which `@font-face` sources a browser fetches for the
//! text a font request styles (CSS Fonts 4 matching, `unicode-range`
//! coverage, generic families ending the search), and the relative
//! weights `bolder` and `lighter`.

use super::sheet::{Face, FontStyle};
use super::StyleResource;

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

/// The font a piece of text asks for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct FontRequest {
    pub(super) families: Vec<String>,
    pub(super) style: FontStyle,
    pub(super) weight: u16,
}

/// The weight `bolder` gives under `parent`: CSS Fonts 4, "relative
/// weights".
pub(super) fn bolder(parent: u16) -> u16 {
    match parent {
        0..350 => 400,
        350..550 => 700,
        550..900 => 900,
        _ => parent,
    }
}

/// The weight `lighter` gives under `parent`, by the same table.
pub(super) fn lighter(parent: u16) -> u16 {
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
pub(super) fn faces_for<'a>(
    request: &FontRequest,
    characters: &str,
    faces: &[&'a Face],
) -> Vec<&'a StyleResource> {
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
    use super::super::test_support::{fetched_paths, page, sorted_fetched_paths, RUSTDOC_FACES};
    use super::*;
    use h3lab_results::ResourceKind;

    #[test]
    fn a_face_is_fetched_for_text_in_its_family_style_and_weight() {
        let html = "<body><p>Text with <em>emphasis</em> and <code>code</code>.</p>\
                    <h1><code>Title</code></h1><strong>Bold</strong></body>";
        assert_eq!(
            sorted_fetched_paths(html, RUSTDOC_FACES),
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
    fn unicode_range_subsets_are_fetched_only_for_characters_in_them() {
        let css = r#"
            @font-face { font-family: Inter; src: url(/latin.woff2); unicode-range: U+0000-00FF, U+2000-206F }
            @font-face { font-family: Inter; src: url(/cyrillic.woff2); unicode-range: U+0400-045F }
            @font-face { font-family: Inter; src: url(/greek.woff2); unicode-range: U+037?, U+0380-03FF }
            @font-face { font-family: Fallback; src: url(/fallback.woff2) }
            body { font-family: Inter, Fallback, sans-serif }"#;
        assert_eq!(
            sorted_fetched_paths("<body><p>Hello — Привет ✓</p></body>", css),
            ["/cyrillic.woff2", "/fallback.woff2", "/latin.woff2"],
            "the check mark is in no Inter subset, so Fallback is needed too"
        );
        assert_eq!(
            fetched_paths("<body><p>Hello</p></body>", css),
            ["/latin.woff2"]
        );
    }

    #[test]
    fn weights_are_matched_as_css_fonts_4_orders_them() {
        let face = |low, high| Face {
            family: "f".into(),
            style: FontStyle::Normal,
            weights: (low, high),
            ranges: None,
            source: StyleResource {
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
