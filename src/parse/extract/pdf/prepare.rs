//! A loaded PDF made ready for pdf-extract, which reads what it is given without bounds:
//!
//! - every stream it could decompress is decompressed here first, within the document's budget
//!   (pictures, embedded files, metadata and TrueType font programs, which hold no text it reads,
//!   are emptied instead), so that it never inflates anything itself;
//! - each page gets the resources and media box it inherits, so that pdf-extract never follows a
//!   `/Parent` chain (it would recurse forever on a cycle);
//! - the appearance of each visible annotation (form fields' values, comments shown on the page)
//!   is drawn at the end of its page, as PDF viewers and `pdftotext` show them;
//! - the `'` and `"` text operators, which pdf-extract does not know, become the `T*` and `Tj`
//!   they stand for;
//! - the glyphs of a span of marked content with an `/ActualText` become that text
//!   ([`super::actual`]);
//! - form XObjects that draw themselves, nest deeper than [`MAX_PDF_FORM_DEPTH`] or would be
//!   drawn more than [`MAX_PDF_FORM_DRAWS`] times on a page lose the forms they draw, so that
//!   pdf-extract, which recurses into each drawing, stays within its stack and its time.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use lopdf::content::{Content, Operation};
use lopdf::{Dictionary, Document, Object, ObjectId, Stream};

use super::raw::{inflate, lzw, Inflated};
use crate::limits::{MAX_PDF_FORM_DEPTH, MAX_PDF_FORM_DRAWS};

/// What preparing a document came to.
#[derive(Debug, Default)]
pub(super) struct Prepared {
    /// Bytes decompressed.
    pub inflated: u64,
    /// Streams were left out because the budget ran out.
    pub cut: bool,
    /// The deadline passed while preparing.
    pub late: bool,
}

/// Prepares `doc` (see the module's notes), decompressing at most `budget` bytes.
pub(super) fn prepare(doc: &mut Document, budget: u64, deadline: Instant) -> Prepared {
    let mut done = Prepared::default();
    decompress(doc, budget, deadline, &mut done);
    widen_codespaces(doc);
    let pages: Vec<ObjectId> = doc.get_pages().into_values().collect();
    for &page in &pages {
        inherit(doc, page);
    }
    for &page in &pages {
        annotations(doc, page);
    }
    rewrite_quotes(doc);
    super::actual::actual_text(doc, &pages);
    bound_forms(doc, &pages);
    done
}

fn name_of<'a>(dict: &'a Dictionary, key: &[u8]) -> Option<&'a [u8]> {
    dict.get(key).ok().and_then(|o| o.as_name().ok())
}

/// Streams pdf-extract would read without finding text in them.
fn textless(dict: &Dictionary) -> bool {
    matches!(name_of(dict, b"Subtype"), Some(b"Image" | b"OpenType" | b"XML"))
        || matches!(name_of(dict, b"Type"), Some(b"EmbeddedFile" | b"Metadata" | b"XRef" | b"ObjStm"))
        || dict.has(b"Length1")
}

fn empty(stream: &mut Stream) {
    stream.dict.remove(b"Filter");
    stream.dict.remove(b"DecodeParms");
    stream.set_content(Vec::new());
}

/// Decompresses every stream that may hold text, within `budget`; empties the rest.
fn decompress(doc: &mut Document, budget: u64, deadline: Instant, done: &mut Prepared) {
    for (n, object) in doc.objects.values_mut().enumerate() {
        let Object::Stream(stream) = object else { continue };
        if n % 64 == 0 && Instant::now() >= deadline {
            done.late = true;
        }
        if textless(&stream.dict) || done.late {
            empty(stream);
            continue;
        }
        let Ok(filters) = stream.filters() else { continue };
        let filters: Vec<Vec<u8>> = filters.into_iter().map(<[u8]>::to_vec).collect();
        match decoded(stream, &filters, budget.saturating_sub(done.inflated)) {
            Some(Ok(data)) => {
                done.inflated += data.len() as u64;
                stream.dict.remove(b"Filter");
                stream.dict.remove(b"DecodeParms");
                stream.set_content(data);
            }
            Some(Err(())) => {
                done.cut = true;
                empty(stream);
            }
            None => empty(stream),
        }
    }
}

/// A stream's data through its filters: `Some(Err)` past `limit`, `None` when a filter is one
/// pdf-extract could not use either (a picture's, a damaged stream).
fn decoded(stream: &Stream, filters: &[Vec<u8>], limit: u64) -> Option<Result<Vec<u8>, ()>> {
    let params = stream.dict.get(b"DecodeParms").ok().and_then(|p| match p {
        Object::Dictionary(d) => Some(d.clone()),
        Object::Array(a) => a.iter().find_map(|o| o.as_dict().ok().cloned()),
        _ => None,
    });
    let mut data = stream.content.clone();
    for filter in filters {
        let mut out = Vec::new();
        let result = match filter.as_slice() {
            b"FlateDecode" | b"Fl" => inflate(&data, limit, &mut |b| out.extend_from_slice(b)),
            b"LZWDecode" | b"LZW" => {
                let early = params.as_ref().and_then(|p| p.get(b"EarlyChange").ok()?.as_i64().ok()) != Some(0);
                lzw(&data, early, limit, &mut |b| out.extend_from_slice(b))
            }
            b"ASCII85Decode" | b"A85" => {
                // Never larger than its input: lopdf's decoder is safe to use.
                let mut dict = Dictionary::new();
                dict.set("Filter", Object::Name(b"ASCII85Decode".to_vec()));
                out = Stream::new(dict, data).decompressed_content().ok()?;
                Inflated::Done(out.len() as u64)
            }
            b"ASCIIHexDecode" | b"AHx" => {
                out = hex(&data);
                Inflated::Done(out.len() as u64)
            }
            _ => return None,
        };
        match result {
            Inflated::Over => return Some(Err(())),
            // A damaged stream gives what it had before the damage, as readers show it.
            Inflated::Done(_) | Inflated::Failed(_) => data = out,
        }
    }
    let predictor = params.as_ref().and_then(|p| p.get(b"Predictor").ok()?.as_i64().ok()).unwrap_or(1);
    if (10..=15).contains(&predictor) {
        let number = |key: &[u8], default: i64| {
            params.as_ref().and_then(|p| p.get(key).ok()?.as_i64().ok()).unwrap_or(default).clamp(1, 1 << 16) as usize
        };
        let bytes_per_pixel = (number(b"Colors", 1) * number(b"BitsPerComponent", 8).max(8) / 8).max(1);
        data = lopdf::filters::png::decode_frame(&data, bytes_per_pixel, number(b"Columns", 1)).ok()?;
    }
    Some(Ok(data))
}

/// The CMap parser pdf-extract uses takes a code space range's width in bytes as half the bytes
/// of its bounds (`<00> <FF>`: 0, `<0000> <FFFF>`: 1), so that no code of a composite font with
/// an embedded CMap is ever read. Its bounds are written twice as long here (`<0000> <00FF>`,
/// the same numbers), which it then reads right.
fn widen_codespaces(doc: &mut Document) {
    let cmaps: Vec<ObjectId> = doc
        .objects
        .values()
        .filter_map(|o| {
            let font = o.as_dict().ok()?;
            (name_of(font, b"Subtype") == Some(b"Type0")).then(|| font.get(b"Encoding").ok()?.as_reference().ok())?
        })
        .collect();
    for id in cmaps {
        if let Ok(Object::Stream(stream)) = doc.get_object_mut(id) {
            if !stream.is_compressed() {
                let widened = widened(&stream.content);
                stream.set_content(widened);
            }
        }
    }
}

/// `cmap` with every hex string between `begincodespacerange` and `endcodespacerange` preceded
/// by as many zero digits as it has.
fn widened(cmap: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(cmap.len() + 64);
    let mut rest = cmap;
    while let Some(start) = memchr::memmem::find(rest, b"begincodespacerange") {
        let body = start + b"begincodespacerange".len();
        let end = memchr::memmem::find(&rest[body..], b"endcodespacerange").map_or(rest.len(), |e| body + e);
        out.extend_from_slice(&rest[..body]);
        let mut section = rest[body..end].iter().peekable();
        while let Some(&b) = section.next() {
            out.push(b);
            if b == b'<' {
                let digits: Vec<u8> =
                    std::iter::from_fn(|| section.next_if(|c| c.is_ascii_hexdigit()).copied()).collect();
                out.extend(std::iter::repeat_n(b'0', digits.len()));
                out.extend_from_slice(&digits);
            }
        }
        rest = &rest[end..];
    }
    out.extend_from_slice(rest);
    out
}

/// ASCIIHexDecode: pairs of hex digits, white space ignored, `>` ends.
fn hex(data: &[u8]) -> Vec<u8> {
    let digits: Vec<u8> =
        data.iter().take_while(|&&b| b != b'>').filter_map(|&b| (b as char).to_digit(16).map(|d| d as u8)).collect();
    digits.chunks(2).map(|p| (p[0] << 4) | p.get(1).copied().unwrap_or(0)).collect()
}

/// Gives a page the resources and media box it inherits from the page tree.
fn inherit(doc: &mut Document, page: ObjectId) {
    let mut found: HashMap<&[u8], Object> = HashMap::new();
    let mut seen = HashSet::new();
    let mut at = Some(page);
    while let Some(id) = at.filter(|id| seen.insert(*id) && seen.len() <= 64) {
        let Ok(dict) = doc.get_dictionary(id) else { break };
        for key in [&b"Resources"[..], b"MediaBox"] {
            if let (false, Ok(value)) = (found.contains_key(key), dict.get(key)) {
                found.insert(key, value.clone());
            }
        }
        at = dict.get(b"Parent").and_then(Object::as_reference).ok();
    }
    let Ok(dict) = doc.get_object_mut(page).and_then(Object::as_dict_mut) else { return };
    let resources = found.remove(&b"Resources"[..]).unwrap_or_else(|| Object::Dictionary(Dictionary::new()));
    dict.set("Resources", resources);
    let media_box = found.remove(&b"MediaBox"[..]).filter(|m| m.as_array().is_ok_and(|a| a.len() == 4));
    let default = || Object::Array(vec![0.into(), 0.into(), 612.into(), 792.into()]);
    dict.set("MediaBox", media_box.unwrap_or_else(default));
}

/// The dictionary `object` is or refers to, as an owned copy.
fn dictionary(doc: &Document, object: &Object) -> Option<Dictionary> {
    doc.dereference(object).ok().and_then(|(_, o)| o.as_dict().ok().cloned())
}

fn number(o: &Object) -> Option<f64> {
    match o {
        Object::Integer(i) => Some(*i as f64),
        Object::Real(r) => Some(f64::from(*r)),
        _ => None,
    }
}

/// Draws the appearance of each visible annotation of `page` at the end of its content.
fn annotations(doc: &mut Document, page: ObjectId) {
    let Ok(page_dict) = doc.get_dictionary(page) else { return };
    let annots: Vec<Object> = match page_dict.get(b"Annots").map(|a| doc.dereference(a)) {
        Ok(Ok((_, Object::Array(a)))) => a.clone(),
        _ => return,
    };
    let mut draws = Vec::new();
    for annot in annots.iter().take(1000) {
        let Some(a) = dictionary(doc, annot) else { continue };
        let hidden = a.get(b"F").ok().and_then(|f| f.as_i64().ok()).is_some_and(|f| f & 2 != 0);
        if hidden || matches!(name_of(&a, b"Subtype"), Some(b"Popup" | b"Link")) {
            continue;
        }
        let Some(appearance) = a.get(b"AP").ok().and_then(|ap| dictionary(doc, ap)) else { continue };
        let normal = match appearance.get(b"N") {
            Ok(Object::Reference(id)) if matches!(doc.get_object(*id), Ok(Object::Stream(_))) => Some(*id),
            Ok(n) => {
                // One appearance a state: the one the annotation is in.
                let states = dictionary(doc, n);
                let state = name_of(&a, b"AS");
                states.and_then(|s| match state {
                    Some(st) => s.get(st).and_then(Object::as_reference).ok(),
                    None => s.iter().find_map(|(_, v)| v.as_reference().ok()),
                })
            }
            Err(_) => None,
        };
        let Some(form) = normal else { continue };
        let rect: Option<Vec<f64>> =
            a.get(b"Rect").ok().and_then(|r| r.as_array().ok()).map(|r| r.iter().filter_map(number).collect());
        let (x, y) = match rect.as_deref() {
            Some([x, y, ..]) => (*x, *y),
            _ => (0.0, 0.0),
        };
        draws.push((form, x, y));
    }
    if draws.is_empty() {
        return;
    }
    let Ok(page_dict) = doc.get_dictionary(page) else { return };
    let mut resources = page_dict.get(b"Resources").ok().and_then(|r| dictionary(doc, r)).unwrap_or_default();
    let mut xobjects = resources.get(b"XObject").ok().and_then(|x| dictionary(doc, x)).unwrap_or_default();
    let mut content = String::new();
    for (form, x, y) in draws {
        let name = format!("ShelfAnnot{}x{}", form.0, form.1);
        xobjects.set(name.as_bytes(), Object::Reference(form));
        content.push_str(&format!("q 1 0 0 1 {x:.2} {y:.2} cm /{name} Do Q\n"));
    }
    resources.set("XObject", Object::Dictionary(xobjects));
    // The contents: a stream, an array of them, or a reference to either.
    let mut contents = match page_dict.get(b"Contents").map(|c| (c, doc.dereference(c))) {
        Ok((_, Ok((_, Object::Array(a))))) => a.clone(),
        Ok((c, _)) => vec![c.clone()],
        Err(_) => Vec::new(),
    };
    let added = doc.add_object(Stream::new(Dictionary::new(), content.into_bytes()));
    let Ok(page_dict) = doc.get_object_mut(page).and_then(Object::as_dict_mut) else { return };
    contents.push(Object::Reference(added));
    page_dict.set("Contents", Object::Array(contents));
    page_dict.set("Resources", Object::Dictionary(resources));
}

/// Rewrites `'` and `"` in every content stream that has them as the operators they stand for.
fn rewrite_quotes(doc: &mut Document) {
    for object in doc.objects.values_mut() {
        let Object::Stream(stream) = object else { continue };
        if !stream.content.iter().any(|&b| b == b'\'' || b == b'"') || stream.is_compressed() {
            continue;
        }
        let Ok(content) = Content::decode(&stream.content) else { continue };
        if !content.operations.iter().any(|op| op.operator == "'" || op.operator == "\"") {
            continue;
        }
        let mut operations = Vec::with_capacity(content.operations.len() + 8);
        for op in content.operations {
            match (op.operator.as_str(), op.operands.as_slice()) {
                ("'", [text]) => {
                    operations.push(Operation::new("T*", Vec::new()));
                    operations.push(Operation::new("Tj", vec![text.clone()]));
                }
                ("\"", [word, character, text]) => {
                    operations.push(Operation::new("Tw", vec![word.clone()]));
                    operations.push(Operation::new("Tc", vec![character.clone()]));
                    operations.push(Operation::new("T*", Vec::new()));
                    operations.push(Operation::new("Tj", vec![text.clone()]));
                }
                _ => operations.push(op),
            }
        }
        if let Ok(encoded) = (Content { operations }).encode() {
            stream.set_content(encoded);
        }
    }
}

/// Drops from the content streams of `page` and from every form the operations whose operands
/// pdf-extract would panic on (`Tm` with five numbers, `Tj` of a number, `Do` of a string): for a
/// page on which it gave up, so that the rest of that page is read.
pub(super) fn sanitize(doc: &mut Document, page: ObjectId) {
    let mut ids: Vec<ObjectId> = doc.get_page_contents(page);
    ids.extend(doc.objects.iter().filter_map(|(id, o)| match o {
        Object::Stream(s) if name_of(&s.dict, b"Subtype") == Some(b"Form") => Some(*id),
        _ => None,
    }));
    for id in ids {
        let Ok(Object::Stream(stream)) = doc.get_object_mut(id) else { continue };
        if stream.is_compressed() {
            continue;
        }
        let Ok(content) = Content::decode(&stream.content) else {
            // Content pdf-extract cannot parse either: nothing of it can be read.
            stream.set_content(Vec::new());
            continue;
        };
        let before = content.operations.len();
        let operations: Vec<Operation> = content.operations.into_iter().filter(well_formed).collect();
        if operations.len() != before {
            if let Ok(encoded) = (Content { operations }).encode() {
                stream.set_content(encoded);
            }
        }
    }
}

/// Whether pdf-extract can take an operation as it is.
fn well_formed(op: &Operation) -> bool {
    let numbers = |n: usize| op.operands.len() == n && op.operands.iter().all(|o| number(o).is_some());
    let is_name = |o: &Object| matches!(o, Object::Name(_));
    let is_string = |o: &Object| matches!(o, Object::String(..));
    match (op.operator.as_str(), op.operands.as_slice()) {
        ("Tm" | "cm" | "c", _) => numbers(6),
        ("Td" | "TD" | "m" | "l", _) => numbers(2),
        ("v" | "y" | "re", _) => numbers(4),
        ("Tc" | "Tw" | "Tz" | "TL" | "Ts" | "w", _) => numbers(1),
        ("Tf", [font, size]) => is_name(font) && number(size).is_some(),
        ("Tj" | "'", [text]) => is_string(text),
        ("\"", [a, b, text]) => number(a).is_some() && number(b).is_some() && is_string(text),
        ("TJ", [array]) => matches!(array, Object::Array(_)),
        ("Do" | "gs" | "CS" | "cs", [name]) => is_name(name),
        ("sc" | "scn" | "SC" | "SCN" | "g" | "G" | "rg" | "RG" | "k" | "K", operands) => {
            operands.iter().all(|o| number(o).is_some())
        }
        ("Tf" | "Tj" | "'" | "\"" | "TJ" | "Do" | "gs" | "CS" | "cs", _) => false,
        _ => true,
    }
}

/// The XObject names a content stream draws with `Do`, with how often: a scan of its tokens
/// (`/Name Do`), not a parse.
fn draws_in(content: &[u8]) -> HashMap<Vec<u8>, usize> {
    let mut out: HashMap<Vec<u8>, usize> = HashMap::new();
    let delimiter = |b: u8| b.is_ascii_whitespace() || b"()<>[]{}/%".contains(&b);
    for at in memchr::memmem::find_iter(content, b"Do") {
        if at == 0 || !content[at - 1].is_ascii_whitespace() || content.get(at + 2).is_some_and(|&b| !delimiter(b)) {
            continue;
        }
        let mut end = at;
        while end > 0 && content[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        let mut start = end;
        while start > 0 && !delimiter(content[start - 1]) {
            start -= 1;
        }
        if start > 0 && content[start - 1] == b'/' && start < end {
            *out.entry(content[start..end].to_vec()).or_default() += 1;
        }
    }
    out
}

/// The form XObjects a resource dictionary names: name → object id.
fn forms_named(doc: &Document, resources: &Dictionary) -> HashMap<Vec<u8>, ObjectId> {
    let Some(xobjects) = resources.get(b"XObject").ok().and_then(|x| dictionary(doc, x)) else {
        return HashMap::new();
    };
    xobjects
        .iter()
        .filter_map(|(name, o)| {
            let id = o.as_reference().ok()?;
            let stream = doc.get_object(id).ok()?.as_stream().ok()?;
            (name_of(&stream.dict, b"Subtype") == Some(b"Form")).then(|| (name.clone(), id))
        })
        .collect()
}

/// Keeps the drawing of forms inside forms within bounds (see the module's notes).
fn bound_forms(doc: &mut Document, pages: &[ObjectId]) {
    // A form without resources of its own draws with those of whoever draws it: it is given a
    // copy of them without forms (those of the first page or form found drawing it), so that
    // what it draws is known and finite.
    let form_ids: Vec<ObjectId> = doc
        .objects
        .iter()
        .filter_map(|(id, o)| match o {
            Object::Stream(s) if name_of(&s.dict, b"Subtype") == Some(b"Form") => Some(*id),
            _ => None,
        })
        .collect();
    let holders = pages.iter().chain(&form_ids).copied().collect::<Vec<_>>();
    for holder in holders {
        let resources = match doc.get_object(holder) {
            Ok(Object::Dictionary(d)) => d.get(b"Resources").ok(),
            Ok(Object::Stream(s)) => s.dict.get(b"Resources").ok(),
            _ => None,
        };
        let Some(mut resources) = resources.and_then(|r| dictionary(doc, r)) else { continue };
        let named = forms_named(doc, &resources);
        resources.remove(b"XObject");
        for id in named.into_values() {
            if let Ok(Object::Stream(s)) = doc.get_object_mut(id) {
                if !s.dict.has(b"Resources") {
                    s.dict.set("Resources", Object::Dictionary(resources.clone()));
                }
            }
        }
    }
    for &id in &form_ids {
        if let Ok(Object::Stream(s)) = doc.get_object_mut(id) {
            if !s.dict.has(b"Resources") {
                s.dict.set("Resources", Object::Dictionary(Dictionary::new()));
            }
        }
    }
    let mut cost: HashMap<ObjectId, usize> = HashMap::new();
    let mut cut: Vec<(ObjectId, Vec<u8>)> = Vec::new();
    for &id in &form_ids {
        let mut path = Vec::new();
        draws_of(doc, id, &mut path, &mut cost, &mut cut);
    }
    for (form, name) in cut {
        drop_form(doc, form, &name);
    }
    // A page that would draw forms too often keeps only the forms it draws itself.
    let too_many = pages.iter().any(|&page| {
        let Ok(dict) = doc.get_dictionary(page) else { return false };
        let resources = dict.get(b"Resources").ok().and_then(|r| dictionary(doc, r)).unwrap_or_default();
        let named = forms_named(doc, &resources);
        let content = doc.get_page_content(page).unwrap_or_default();
        let total: usize = draws_in(&content)
            .iter()
            .map(|(name, n)| named.get(name).map_or(0, |f| n.saturating_mul(cost.get(f).copied().unwrap_or(1))))
            .fold(0usize, usize::saturating_add);
        total > MAX_PDF_FORM_DRAWS
    });
    if too_many {
        for &id in &form_ids {
            if let Ok(Object::Stream(s)) = doc.get_object_mut(id) {
                if let Ok(Object::Dictionary(resources)) = s.dict.get_mut(b"Resources") {
                    resources.remove(b"XObject");
                }
            }
        }
    }
}

/// How many form drawings drawing `form` costs (itself and, recursively, what it draws), noting
/// in `cut` the names to remove: those that would draw a form already being drawn, or nest too
/// deep.
fn draws_of(
    doc: &Document,
    form: ObjectId,
    path: &mut Vec<ObjectId>,
    cost: &mut HashMap<ObjectId, usize>,
    cut: &mut Vec<(ObjectId, Vec<u8>)>,
) -> usize {
    if let Some(&c) = cost.get(&form) {
        return c;
    }
    let Ok(stream) = doc.get_object(form).and_then(Object::as_stream) else { return 1 };
    let resources = stream.dict.get(b"Resources").ok().and_then(|r| dictionary(doc, r)).unwrap_or_default();
    let named = forms_named(doc, &resources);
    path.push(form);
    let mut total = 1usize;
    for (name, times) in draws_in(&stream.content) {
        let Some(&target) = named.get(&name) else { continue };
        if path.contains(&target) || path.len() >= MAX_PDF_FORM_DEPTH {
            cut.push((form, name));
            continue;
        }
        let inner = draws_of(doc, target, path, cost, cut);
        total = total.saturating_add(times.saturating_mul(inner));
    }
    path.pop();
    let total = total.min(MAX_PDF_FORM_DRAWS + 1);
    if total > MAX_PDF_FORM_DRAWS {
        // Too costly to draw at all: it keeps its own text and draws nothing.
        for name in named.keys() {
            cut.push((form, name.clone()));
        }
    }
    cost.insert(form, total.min(MAX_PDF_FORM_DRAWS));
    total
}

/// Removes `name` from the forms `form` may draw.
fn drop_form(doc: &mut Document, form: ObjectId, name: &[u8]) {
    let resources = match doc.get_object(form).and_then(Object::as_stream) {
        Ok(s) => s.dict.get(b"Resources").ok().and_then(|r| dictionary(doc, r)),
        Err(_) => None,
    };
    let Some(mut resources) = resources else { return };
    let Some(mut xobjects) = resources.get(b"XObject").ok().and_then(|x| dictionary(doc, x)) else { return };
    xobjects.remove(name);
    resources.set("XObject", Object::Dictionary(xobjects));
    if let Ok(Object::Stream(s)) = doc.get_object_mut(form) {
        s.dict.set("Resources", Object::Dictionary(resources));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drawn_forms_are_found_by_their_tokens() {
        let content = b"q /Fm1 Do Q /Fm1  Do\n/Fm2 Do (a /Fm3 Do) /Image9 Dot BT /F1 12 Tf ET";
        let draws = draws_in(content);
        assert_eq!(draws.get(&b"Fm1"[..]), Some(&2));
        assert_eq!(draws.get(&b"Fm2"[..]), Some(&1));
        assert!(!draws.contains_key(&b"Image9"[..]));
    }

    #[test]
    fn code_space_bounds_are_widened() {
        let cmap = b"1 begincodespacerange\n<00> <FF>\nendcodespacerange\n1 begincidrange\n<00> <FF> 0\nendcidrange";
        let want =
            b"1 begincodespacerange\n<0000> <00FF>\nendcodespacerange\n1 begincidrange\n<00> <FF> 0\nendcidrange";
        assert_eq!(String::from_utf8_lossy(&widened(cmap)), String::from_utf8_lossy(want));
        assert_eq!(widened(b"<0000> <ffff> no range"), b"<0000> <ffff> no range");
        assert_eq!(widened(b"begincodespacerange <8140> <FEFE"), b"begincodespacerange <00008140> <0000FEFE");
    }

    #[test]
    fn hex_data_decodes() {
        assert_eq!(hex(b"48 65 6C6c 6f>ignored"), b"Hello");
        assert_eq!(hex(b"4"), vec![0x40]);
    }
}
