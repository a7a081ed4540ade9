//! Marked content's `/ActualText` (ISO 32000-1, 14.9.4): the text a span of glyphs stands for,
//! which PDF writers give where the glyphs do not say it themselves (LibreOffice for characters
//! drawn with a fallback glyph, ligatures, words hyphenated at a line's end). pdf-extract does not
//! read marked content, so the text-showing operators of each such span on a page become one
//! showing, in a font added here, of one code whose `ToUnicode` entry is the span's text; the font
//! in use before is set again after it.

use lopdf::content::{Content, Operation};
use lopdf::{Dictionary, Document, Object, ObjectId, Stream};

/// The name the added font has in a page's resources.
const FONT: &str = "MailshelfActualText";

/// Codes a document's spans can take (one each; two-byte codes, 0 left out).
const MAX_SPANS: usize = 0xFFFF;

/// Replaces the glyphs of every `/ActualText` span on `pages` by its text (see the module's
/// notes). Streams still compressed are left as they are.
pub(super) fn actual_text(doc: &mut Document, pages: &[ObjectId]) {
    let mut texts: Vec<String> = Vec::new();
    let mut on_pages: Vec<ObjectId> = Vec::new();
    for &page in pages {
        let mut rewrote = false;
        for id in doc.get_page_contents(page) {
            let Ok(Object::Stream(stream)) = doc.get_object_mut(id) else { continue };
            if stream.is_compressed() || memchr::memmem::find(&stream.content, b"ActualText").is_none() {
                continue;
            }
            let Ok(content) = Content::decode(&stream.content) else { continue };
            let Some(operations) = rewrite(content.operations, &mut texts) else { continue };
            if let Ok(encoded) = (Content { operations }).encode() {
                stream.set_content(encoded);
                rewrote = true;
            }
        }
        if rewrote {
            on_pages.push(page);
        }
    }
    if texts.is_empty() {
        return;
    }
    let font = font(doc, &texts);
    let font = doc.add_object(font);
    for page in on_pages {
        add_font(doc, page, font);
    }
}

/// The operations with each span's showing replaced, or `None` when there was no span to replace.
fn rewrite(operations: Vec<Operation>, texts: &mut Vec<String>) -> Option<Vec<Operation>> {
    let mut out = Vec::with_capacity(operations.len());
    // The font and size set last, to set again after a span's text.
    let mut font: Option<Vec<Object>> = None;
    // Marked-content depth, and the depth at which the span being replaced began with whether its
    // text was shown yet.
    let mut depth = 0usize;
    let mut span: Option<(usize, bool)> = None;
    let mut changed = false;
    for op in operations {
        match op.operator.as_str() {
            "BDC" | "BMC" => {
                depth += 1;
                if span.is_none() && texts.len() < MAX_SPANS {
                    if let Some(text) = actual_text_of(&op) {
                        texts.push(text);
                        span = Some((depth, false));
                        changed = true;
                        continue;
                    }
                }
            }
            "EMC" => {
                if span.is_some_and(|(at, _)| at == depth) {
                    depth = depth.saturating_sub(1);
                    span = None;
                    continue;
                }
                depth = depth.saturating_sub(1);
            }
            "Tf" => font = Some(op.operands.clone()),
            "Tj" | "TJ" | "'" | "\"" => {
                if let Some((_, shown)) = span.as_mut() {
                    if !*shown {
                        *shown = true;
                        let size = font.as_ref().and_then(|f| f.get(1).cloned()).unwrap_or(Object::Integer(10));
                        out.push(Operation::new("Tf", vec![Object::Name(FONT.into()), size]));
                        let code = texts.len() as u16;
                        out.push(Operation::new("Tj", vec![Object::string_literal(code.to_be_bytes().to_vec())]));
                        if let Some(f) = &font {
                            out.push(Operation::new("Tf", f.clone()));
                        }
                    }
                    continue;
                }
            }
            _ => {}
        }
        out.push(op);
    }
    changed.then_some(out)
}

/// The `/ActualText` of a `BDC` operation whose properties are given inline.
fn actual_text_of(op: &Operation) -> Option<String> {
    if op.operator != "BDC" {
        return None;
    }
    let Some(Object::Dictionary(properties)) = op.operands.get(1) else { return None };
    match properties.get(b"ActualText").ok()? {
        Object::String(bytes, _) => Some(text_string(bytes)),
        _ => None,
    }
}

/// A PDF text string: UTF-16BE after its byte order mark, else PDFDocEncoding (read as Latin-1,
/// which it matches for letters).
fn text_string(bytes: &[u8]) -> String {
    match bytes {
        [0xFE, 0xFF, rest @ ..] => {
            let units: Vec<u16> = rest.chunks_exact(2).map(|p| u16::from_be_bytes([p[0], p[1]])).collect();
            String::from_utf16_lossy(&units)
        }
        _ => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

/// A Type 0 font whose code `n` (from 1) stands for `texts[n - 1]`.
fn font(doc: &mut Document, texts: &[String]) -> Dictionary {
    let mut cmap = String::from(
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n/CIDSystemInfo << /Registry (Adobe) \
         /Ordering (UCS) /Supplement 0 >> def\n/CMapName /Adobe-Identity-UCS def /CMapType 2 def\n\
         1 begincodespacerange <0000> <FFFF> endcodespacerange\n",
    );
    for (block, chunk) in texts.chunks(100).enumerate() {
        cmap.push_str(&format!("{} beginbfchar\n", chunk.len()));
        for (i, text) in chunk.iter().enumerate() {
            let code = block * 100 + i + 1;
            let mut units: String = text.encode_utf16().map(|u| format!("{u:04X}")).collect();
            if units.is_empty() {
                // An empty text (a hyphen that is no character): a space is the nearest.
                units.push_str("0020");
            }
            cmap.push_str(&format!("<{code:04X}> <{units}>\n"));
        }
        cmap.push_str("endbfchar\n");
    }
    cmap.push_str("endcmap CMapName currentdict /CMap defineresource pop end end\n");
    let to_unicode = doc.add_object(Stream::new(Dictionary::new(), cmap.into_bytes()));
    let descriptor = Dictionary::from_iter(vec![
        ("Type", Object::Name(b"FontDescriptor".to_vec())),
        ("FontName", Object::Name(FONT.into())),
        ("Flags", 4.into()),
        ("FontBBox", Object::Array(vec![0.into(), 0.into(), 1000.into(), 1000.into()])),
        ("ItalicAngle", 0.into()),
        ("Ascent", 1000.into()),
        ("Descent", 0.into()),
        ("CapHeight", 1000.into()),
        ("StemV", 80.into()),
    ]);
    let system = Dictionary::from_iter(vec![
        ("Registry", Object::string_literal("Adobe")),
        ("Ordering", Object::string_literal("Identity")),
        ("Supplement", 0.into()),
    ]);
    let descendant = Dictionary::from_iter(vec![
        ("Type", Object::Name(b"Font".to_vec())),
        ("Subtype", Object::Name(b"CIDFontType2".to_vec())),
        ("BaseFont", Object::Name(FONT.into())),
        ("CIDSystemInfo", Object::Dictionary(system)),
        ("FontDescriptor", Object::Dictionary(descriptor)),
        ("DW", 1000.into()),
    ]);
    Dictionary::from_iter(vec![
        ("Type", Object::Name(b"Font".to_vec())),
        ("Subtype", Object::Name(b"Type0".to_vec())),
        ("BaseFont", Object::Name(FONT.into())),
        ("Encoding", Object::Name(b"Identity-H".to_vec())),
        ("DescendantFonts", Object::Array(vec![Object::Dictionary(descendant)])),
        ("ToUnicode", Object::Reference(to_unicode)),
    ])
}

/// Puts `font` among the fonts of `page`'s resources (which [`super::prepare`] made its own).
fn add_font(doc: &mut Document, page: ObjectId, font: ObjectId) {
    let Ok(page_dict) = doc.get_dictionary(page) else { return };
    let mut resources = match page_dict.get(b"Resources").map(|r| doc.dereference(r)) {
        Ok(Ok((_, Object::Dictionary(d)))) => d.clone(),
        _ => Dictionary::new(),
    };
    let mut fonts = match resources.get(b"Font").map(|f| doc.dereference(f)) {
        Ok(Ok((_, Object::Dictionary(d)))) => d.clone(),
        _ => Dictionary::new(),
    };
    fonts.set(FONT, Object::Reference(font));
    resources.set("Font", Object::Dictionary(fonts));
    if let Ok(page_dict) = doc.get_object_mut(page).and_then(Object::as_dict_mut) {
        page_dict.set("Resources", Object::Dictionary(resources));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_become_one_showing_of_their_text() {
        let content = b"BT /F1 10 Tf (a) Tj /Span << /ActualText <FEFF3053> >> BDC (x) Tj (y) Tj EMC (b) Tj ET";
        let ops = Content::decode(content).map(|c| c.operations).unwrap_or_default();
        let mut texts = Vec::new();
        let out = rewrite(ops, &mut texts).unwrap_or_default();
        assert_eq!(texts, vec!["こ".to_string()]);
        let names: Vec<&str> = out.iter().map(|o| o.operator.as_str()).collect();
        assert_eq!(names, vec!["BT", "Tf", "Tj", "Tf", "Tj", "Tf", "Tj", "ET"]);
        assert_eq!(text_string(b"fi"), "fi");
    }
}
