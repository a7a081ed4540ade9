//! How tall a message body's frame starts, guessed on the server.
//!
//! The body is shown in `<iframe sandbox>` without `allow-scripts` (and, unless people sign in,
//! without `allow-same-origin`): the page runs no script of its own to measure it, and the frame
//! cannot run script to report it (`postMessage` would need script inside the frame, which is
//! exactly what the sandbox forbids). The server knows nothing of the layout either, so it guesses from the HTML: visible
//! text, block elements and images, laid out in a column of about 700 pixels. The guess picks one
//! of a few heights (classes in `style.css`, since the pages' policy forbids inline styles): a
//! short note gets a short frame instead of three quarters of the screen of white, a newsletter
//! keeps the tall one. The frame stays resizable, and the body also opens in a tab of its own.

use crate::rewrite::visible_text;

/// The starting height of a body's frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameHeight {
    /// A few lines: about 12 lines of text.
    Short,
    /// Some paragraphs, or a picture: about half a screen.
    Medium,
    /// Anything longer: most of the screen, scrolling inside.
    Tall,
}

impl FrameHeight {
    /// The class `style.css` sizes the frame by.
    pub(crate) fn class(self) -> &'static str {
        match self {
            FrameHeight::Short => "h-short",
            FrameHeight::Medium => "h-medium",
            FrameHeight::Tall => "h-tall",
        }
    }
}

/// Characters of text on one line of a ~700 px column.
const CHARS_PER_LINE: usize = 90;
/// Pixels per line of text, per block element's margins, and per image of unknown size.
const LINE_PX: usize = 20;
const BLOCK_PX: usize = 14;
const IMAGE_PX: usize = 180;
/// Upper bounds of the short and medium frames, in estimated pixels of content (the frames
/// themselves are a little taller, see `style.css`).
const SHORT_PX: usize = 200;
const MEDIUM_PX: usize = 480;

/// Guesses the starting height for an HTML body.
pub(crate) fn estimate(html: &str) -> FrameHeight {
    // Past a size no body is short, and counting would only cost.
    if html.len() > 256 * 1024 {
        return FrameHeight::Tall;
    }
    let lower = html.to_ascii_lowercase();
    let count = |tags: &[&str]| -> usize {
        tags.iter().map(|t| lower.match_indices(t).filter(|(i, _)| ends_tag_name(&lower, i + t.len())).count()).sum()
    };
    let blocks = count(&["<p", "<div", "<br", "<tr", "<li", "<h1", "<h2", "<h3", "<h4", "<blockquote", "<hr", "<pre"]);
    let images = count(&["<img", "<svg", "<video", "<iframe", "<table"]);
    let text = visible_text(html).chars().count();
    let px = text.div_ceil(CHARS_PER_LINE) * LINE_PX + blocks * BLOCK_PX + images * IMAGE_PX;
    match px {
        0..=SHORT_PX => FrameHeight::Short,
        p if p <= MEDIUM_PX => FrameHeight::Medium,
        _ => FrameHeight::Tall,
    }
}

/// Whether the tag name ends at `at` (`<p>` and `<p class…>`, not `<pre>` for `<p`).
fn ends_tag_name(s: &str, at: usize) -> bool {
    s.as_bytes().get(at).is_none_or(|b| !b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_start_as_tall_as_their_body_looks() {
        let long_text = "word ".repeat(2000);
        let many_paragraphs = "<p>A paragraph of a letter.</p>".repeat(40);
        let cases = [
            ("one line", "<p>See you tomorrow.</p>".to_string(), FrameHeight::Short),
            ("empty", String::new(), FrameHeight::Short),
            (
                "a styled note",
                "<html><head><style>p{color:red}</style></head><body><div><p>Thanks!</p></div></body></html>".into(),
                FrameHeight::Short,
            ),
            ("a picture and a line", "<p>Our new logo:</p><img src=x>".into(), FrameHeight::Medium),
            (
                "a few paragraphs",
                "<p>A paragraph of a letter that is not very long.</p>".repeat(12),
                FrameHeight::Medium,
            ),
            ("many paragraphs", many_paragraphs, FrameHeight::Tall),
            ("long text", format!("<p>{long_text}</p>"), FrameHeight::Tall),
            (
                "a newsletter",
                "<table><tr><td><img src=a><img src=b><img src=c></td></tr></table>".into(),
                FrameHeight::Tall,
            ),
        ];
        for (name, html, want) in cases {
            assert_eq!(estimate(&html), want, "{name}");
        }
    }

    #[test]
    fn tag_names_are_matched_whole() {
        assert!(ends_tag_name("<p>", 2));
        assert!(!ends_tag_name("<pre>", 2));
    }
}
