//! What the fuzz targets run, kept apart from them so the regression tests at the top
//! (`tests/fuzz_regressions.rs`) can take the very same path over the inputs the fuzzer found.
//! It depends on nothing but `mailshelf` and `std`.

use std::sync::Arc;

use mailshelf::ids;
use mailshelf::model::{Body, Message};
use mailshelf::rewrite::{rewrite_css, rewrite_html, visible_text, Options};
use mailshelf::{route, view, view::text};

/// Bytes → `parse_message` → the model → for every part of the message and of every message it
/// encloses, what the server does with it: HTML is rewritten and its visible text extracted (search
/// index), CSS is rewritten, plain text is rendered, and every part gets its URL. The options vary with the input's length so
/// that both the blocking and the remote-allowing paths run.
pub fn message(data: &[u8]) {
    let Ok(msg) = mailshelf::parse::parse_message(Arc::from(data)) else { return };
    let opts =
        Options { allow_remote: data.len() % 2 == 1, record: data.len() % 4 >= 2, fold_quotes: data.len() % 8 >= 4 };
    let mut stack: Vec<&Message> = vec![&msg];
    while let Some(m) = stack.pop() {
        check_model(m);
        // Every part's URL, as the message page and the API list them.
        for idx in 0..m.parts.len() {
            route::part_url(&m.id, m, idx);
        }
        for (idx, part) in m.parts.iter().enumerate() {
            match &part.body {
                Body::Text(t) => {
                    // The server's own resolver, with no archive behind it: references resolve
                    // within this message, as they would in a message alone in its archive.
                    let resolver = route::Resolver {
                        archive: None,
                        access: &mailshelf::index::Access::EVERYTHING,
                        key: &m.id,
                        msg: m,
                        part: idx,
                        remote: opts.allow_remote,
                    };
                    match view::served_type(part).as_str() {
                        "text/css" => {
                            rewrite_css(t, &part.base, &resolver, opts);
                        }
                        "text/html" | "application/xhtml+xml" => {
                            rewrite_html(t, &part.base, &resolver, opts);
                            visible_text(t);
                        }
                        _ => {
                            let flowed = part.param("format").is_some_and(|f| f.eq_ignore_ascii_case("flowed"));
                            let delsp = part.param("delsp").is_some_and(|d| d.eq_ignore_ascii_case("yes"));
                            text::render(t, flowed, delsp);
                        }
                    }
                }
                Body::Message(inner) => stack.push(inner),
                Body::Binary(_) | Body::Multipart => {}
            }
        }
    }
}

/// The search box: any string → `query::parse`, which must answer (a query or an error) and not panic.
pub fn query(input: &str) {
    let _ = mailshelf::search::query::parse(input);
}

/// Invariants the rest of the server indexes by without checking: a violation would be a panic
/// in a handler later, so it is one here. Linear in the number of parts, so that the checks do not
/// hide the cost of the code under test.
fn check_model(m: &Message) {
    let n = m.parts.len();
    let mut listed = 0;
    for (i, p) in m.parts.iter().enumerate() {
        if let Some(parent) = p.parent {
            assert!(parent < i, "a parent comes before its children");
        }
        for &c in &p.children {
            assert!(c < n && m.parts[c].parent == Some(i), "a child names its parent");
        }
        listed += p.children.len();
        if let Some(scope) = p.related_scope {
            assert!(scope < i && m.parts[scope].is_type("multipart/related"), "related scope is an enclosing related");
        }
        assert!(p.raw_range.start <= p.raw_range.end && p.raw_range.end <= m.raw.len(), "raw range lies in the raw");
    }
    assert_eq!(listed, m.parts.iter().filter(|p| p.parent.is_some()).count(), "every child is listed once");
    // A part's URL leads back to it. Each lookup scans the parts, so check a spread of at most 64.
    for i in (0..n).step_by(n.div_ceil(64).max(1)) {
        let segment = route::part_segment(m, i);
        assert_eq!(route::find_part(m, &ids::decode_percent(&segment)), Some(i), "part URL round-trips");
    }
    for body in [m.html_body, m.text_body].into_iter().flatten() {
        assert!(body < n && m.parts[body].is_text(), "the chosen body is a text part");
    }
}
