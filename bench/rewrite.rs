//! Throughput of the HTML rewrite against a bare lol_html pass with the same handlers.
//!
//! Both sides run over the same documents: the HTML body of every `.mht`/`.mhtml` file in the
//! corpus (`MAILSHELF_CORPUS`, default `../shared/corpus` beside the package) and of every `.eml` in
//! `samples/`. Both feed lol_html in 16 KiB pieces with the same settings and collect the output
//! into a `String`; both map every URL to `/part/x/<length of the reference>`.
//!
//! - `rewrite`: `mailshelf::rewrite::rewrite_html` with a resolver that answers
//!   `Target::Part("/part/x/<len>")` for every reference: the cost of mailshelf's own logic
//!   (dropped elements and attributes, entity decoding, `srcset` and CSS parsing, bookkeeping).
//! - `bare`: `element!("*")` visiting every attribute and applying the same mapping to URL
//!   attributes (`srcset` split on commas), plus `text!("style")` buffering the style text and
//!   writing it back unchanged: the same selector work without resolution or CSS logic.
//!
//! Run: `cargo bench --bench rewrite`. Environment: `MAILSHELF_CORPUS=DIR`, `BENCH_SECONDS=2.5`
//! (timed seconds per side; single passes over all documents, the two sides interleaved).
//! `cargo bench --bench rewrite -- --once` runs each side once over all documents and exits (for
//! `valgrind --tool=callgrind`; the passes are the functions `pass_rewrite` and `pass_bare`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::cell::RefCell;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use lol_html::html_content::ContentType;
use lol_html::{element, text, HtmlRewriter, Settings};
use mailshelf::model::Body;
use mailshelf::rewrite::{rewrite_html, Options, Resolve, Target};

struct Doc {
    name: String,
    html: String,
    base: String,
}

/// The mapping both sides apply.
fn map_url(reference: &str) -> String {
    format!("/part/x/{}", reference.len())
}

struct Trivial;

impl Resolve for Trivial {
    fn resolve(&self, _base: &str, reference: &str) -> Target {
        Target::Part(map_url(reference))
    }
}

/// Attributes the bare pass maps: the ones mailshelf's rewrite sends to its resolver.
const URL_ATTRIBUTES: &[&str] =
    &["src", "href", "xlink:href", "background", "poster", "lowsrc", "dynsrc", "cite", "longdesc"];
const SRCSET_ATTRIBUTES: &[&str] = &["srcset", "imagesrcset"];

/// One pass of mailshelf's rewrite over every document; returns output bytes and references seen.
#[inline(never)]
fn pass_rewrite(docs: &[Doc]) -> (usize, usize) {
    let (mut bytes, mut refs) = (0, 0);
    for d in docs {
        let out = rewrite_html(black_box(&d.html), &d.base, &Trivial, Options::default());
        bytes += out.output.len();
        refs += out.references.len();
        black_box(out);
    }
    (bytes, refs)
}

/// One pass of the bare lol_html rewriter over every document; returns output bytes and URLs mapped.
#[inline(never)]
fn pass_bare(docs: &[Doc]) -> (usize, usize) {
    let (mut bytes, mut refs) = (0, 0);
    for d in docs {
        let (out, n) = bare(black_box(&d.html));
        bytes += out.len();
        refs += n;
        black_box(out);
    }
    (bytes, refs)
}

fn bare(input: &str) -> (String, usize) {
    let mapped = Rc::new(RefCell::new(0usize));
    let css = Rc::new(RefCell::new(String::new()));
    let mut output = Vec::with_capacity(input.len() + input.len() / 8);
    let result = {
        let on_element = Rc::clone(&mapped);
        let on_style = Rc::clone(&css);
        let settings = Settings::new()
            .with_strict(false)
            .append_element_content_handler(element!("*", move |el| {
                let mut changes: Vec<(String, String)> = Vec::new();
                let mut n = 0;
                for attr in el.attributes() {
                    let name = attr.name();
                    if URL_ATTRIBUTES.contains(&name.as_str()) {
                        let value = attr.value();
                        changes.push((name, map_url(&value)));
                        n += 1;
                    } else if SRCSET_ATTRIBUTES.contains(&name.as_str()) {
                        let value = attr.value();
                        let mut out = String::with_capacity(value.len());
                        for candidate in value.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                            let (url, descriptor) = candidate.split_once(' ').unwrap_or((candidate, ""));
                            if !out.is_empty() {
                                out.push_str(", ");
                            }
                            out.push_str(&map_url(url));
                            if !descriptor.is_empty() {
                                out.push(' ');
                                out.push_str(descriptor.trim());
                            }
                            n += 1;
                        }
                        changes.push((name, out));
                    }
                }
                *on_element.borrow_mut() += n;
                for (name, value) in changes {
                    let _ = el.set_attribute(&name, &value);
                }
                Ok(())
            }))
            .append_element_content_handler(text!("style", move |chunk| {
                let mut buf = on_style.borrow_mut();
                buf.push_str(chunk.as_str());
                if chunk.last_in_text_node() {
                    let whole = std::mem::take(&mut *buf);
                    chunk.replace(&whole, ContentType::Html);
                } else {
                    chunk.remove();
                }
                Ok(())
            }));
        let mut rewriter = HtmlRewriter::new(settings, |c: &[u8]| output.extend_from_slice(c));
        input.as_bytes().chunks(16 * 1024).try_for_each(|c| rewriter.write(c)).and_then(|()| rewriter.end())
    };
    let out = match result {
        Ok(()) => String::from_utf8_lossy(&output).into_owned(),
        Err(_) => String::new(),
    };
    let n = *mapped.borrow();
    (out, n)
}

fn files_with(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_with(&p, exts, out);
        } else if p.extension().and_then(|e| e.to_str()).is_some_and(|e| exts.iter().any(|x| e.eq_ignore_ascii_case(x)))
        {
            out.push(p);
        }
    }
}

fn load_docs() -> (Vec<Doc>, usize, usize) {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus =
        std::env::var_os("MAILSHELF_CORPUS").map(PathBuf::from).unwrap_or_else(|| manifest.join("../shared/corpus"));
    let mut paths = Vec::new();
    files_with(&corpus, &["mht", "mhtml"], &mut paths);
    let from_corpus = paths.len();
    let mut samples = Vec::new();
    let Ok(entries) = std::fs::read_dir(manifest.join("samples")) else { return (Vec::new(), 0, 0) };
    samples.extend(
        entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e.eq_ignore_ascii_case("eml"))),
    );
    samples.sort();
    paths.extend(samples);
    let files = paths.len();
    let mut docs = Vec::new();
    let mut skipped = Vec::new();
    for p in &paths {
        let name = p.strip_prefix(&corpus).or_else(|_| p.strip_prefix(manifest)).unwrap_or(p);
        let name = name.display().to_string();
        let Ok(bytes) = std::fs::read(p) else {
            skipped.push(name);
            continue;
        };
        let html = mailshelf::parse::parse_message(Arc::from(bytes)).ok().and_then(|msg| {
            let part = &msg.parts[msg.html_body?];
            match &part.body {
                Body::Text(html) => Some((html.clone(), part.base.clone())),
                _ => None,
            }
        });
        match html {
            Some((html, base)) => docs.push(Doc { name, html, base }),
            None => skipped.push(name),
        }
    }
    if !skipped.is_empty() {
        eprintln!("no HTML body (skipped): {}", skipped.join(", "));
    }
    let without_html = skipped.len();
    if from_corpus == 0 {
        eprintln!("warning: no .mht/.mhtml files under {} (set MAILSHELF_CORPUS)", corpus.display());
    }
    (docs, files, without_html)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let once = std::env::args().any(|a| a == "--once");
    let seconds: f64 = std::env::var("BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2.5);
    let (docs, files, without_html) = load_docs();
    if docs.is_empty() {
        eprintln!("no HTML bodies to rewrite");
        std::process::exit(1);
    }
    let input: usize = docs.iter().map(|d| d.html.len()).sum();
    let largest = docs.iter().max_by_key(|d| d.html.len()).map(|d| (d.name.as_str(), d.html.len()));
    println!(
        "rewrite bench: {} HTML bodies from {files} files ({without_html} without one), {:.2} MB in all; largest {} ({} B)",
        docs.len(),
        input as f64 / 1e6,
        largest.map_or("-", |l| l.0),
        largest.map_or(0, |l| l.1),
    );

    if once {
        let (ra, na) = pass_rewrite(&docs);
        let (rb, nb) = pass_bare(&docs);
        println!("once: rewrite {ra} B out, {na} references; bare {rb} B out, {nb} URLs mapped");
        return;
    }

    // Warm up (one pass each), then alternate single timed passes, always running the side with
    // less time so far, until each side has about `seconds`. On a shared machine the best pass is
    // the one least disturbed; the median and the overall rate show how noisy the run was.
    let (out_a, refs_a) = pass_rewrite(&docs);
    let (out_b, refs_b) = pass_bare(&docs);
    println!("per pass: rewrite {out_a} B out, {refs_a} references resolved; bare {out_b} B out, {refs_b} URLs mapped");
    let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut totals = [0.0f64; 2];
    while totals[0] < seconds || totals[1] < seconds {
        let which = if totals[0] <= totals[1] { 0 } else { 1 };
        let pass: fn(&[Doc]) -> (usize, usize) = if which == 0 { pass_rewrite } else { pass_bare };
        let t = Instant::now();
        black_box(pass(black_box(&docs)));
        let dt = t.elapsed().as_secs_f64();
        times[which].push(dt);
        totals[which] += dt;
    }
    let mb = input as f64 / 1e6;
    let rate = |which: usize| {
        let v = &mut times[which].clone();
        let best = mb / v.iter().copied().fold(f64::INFINITY, f64::min);
        let med = mb / median(v);
        let overall = mb * v.len() as f64 / totals[which];
        (best, med, overall)
    };
    let (a, b) = (rate(0), rate(1));
    println!(
        "{} rewrite passes ({:.1} s), {} bare passes ({:.1} s), interleaved",
        times[0].len(),
        totals[0],
        times[1].len(),
        totals[1]
    );
    println!();
    println!("| Pass | MB/s (best pass) | MB/s (median pass) | MB/s (overall) |");
    println!("|---|---:|---:|---:|");
    println!("| mailshelf rewrite_html | {:.1} | {:.1} | {:.1} |", a.0, a.1, a.2);
    println!("| bare lol_html, same handlers | {:.1} | {:.1} | {:.1} |", b.0, b.1, b.2);
    println!("| rewrite / bare | {:.0}% | {:.0}% | {:.0}% |", 100.0 * a.0 / b.0, 100.0 * a.1 / b.1, 100.0 * a.2 / b.2);
    println!();
    let ratio = a.0 / b.0;
    println!(
        "target: rewrite >= 70% of bare (best passes): {} ({:.0}%)",
        if ratio >= 0.70 { "met" } else { "not met" },
        100.0 * ratio
    );
}
