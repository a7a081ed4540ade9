//! What the PDF carries besides its pages: the original message as an embedded file, and the
//! document's metadata, the way PDF/A-3 (ISO 19005-3) asks for an archival copy of a message.
//!
//! - The message's exact bytes are an embedded file stream of type `message/rfc822`, named in the
//!   catalog's `/EmbeddedFiles` name tree and associated with the document by the catalog's `/AF`
//!   array, its relationship `/Source`: the PDF is a rendering of that file (PDF/A-3 §6.8).
//! - `/Title` is the subject, `/Author` the sender, `/CreationDate` the message's date, in the
//!   document information dictionary and, identically, in XMP metadata (PDF/A wants the two to
//!   agree).
//!
//! What it does not add is an output intent (an ICC colour profile), so the file is not PDF/A
//! conformant and does not claim to be: there is no `pdfaid` entry in its metadata.

use lopdf::{dictionary, Document, Object, ObjectId, Stream, StringFormat};

use crate::error::Error;

/// What the PDF says about itself.
#[derive(Debug, Clone, Default)]
pub struct PdfMeta {
    /// The message's subject.
    pub title: String,
    /// The message's sender, as its From header reads.
    pub author: Option<String>,
    /// The message's Date, as seconds since the epoch and the zone it was written in (minutes
    /// east of UTC).
    pub date: Option<(i64, i16)>,
    /// The name the embedded message goes by (`<stem>.eml`).
    pub file_name: String,
}

fn fail(e: lopdf::Error) -> Error {
    Error::internal("pdf post-processing", e)
}

/// `pdf` with `original` embedded and the metadata set; the pages are left as they are.
pub fn attach(pdf: &[u8], original: &[u8], meta: &PdfMeta) -> Result<Vec<u8>, Error> {
    let mut doc = Document::load_mem(pdf).map_err(fail)?;
    let date = meta.date.map(|(ts, zone)| pdf_date(ts, zone));

    let mut params = dictionary! { "Size" => Object::Integer(i64::try_from(original.len()).unwrap_or(i64::MAX)) };
    if let Some(d) = &date {
        params.set("ModDate", Object::string_literal(d.as_bytes()));
    }
    let file = Stream::new(
        dictionary! { "Type" => "EmbeddedFile", "Subtype" => Object::Name(b"message/rfc822".to_vec()), "Params" => params },
        original.to_vec(),
    )
    // The message's exact bytes: never re-encoded or compressed, so what a reader extracts is what
    // `/raw/` serves.
    .with_compression(false);
    let file_id = doc.add_object(file);
    let spec_id = doc.add_object(dictionary! {
        "Type" => "Filespec",
        "F" => Object::string_literal(ascii_name(&meta.file_name).into_bytes()),
        "UF" => text_string(&meta.file_name),
        "Desc" => text_string("The original message, exactly as it was received"),
        "AFRelationship" => "Source",
        "EF" => dictionary! { "F" => file_id, "UF" => file_id },
    });

    let metadata_id = doc.add_object(
        Stream::new(dictionary! { "Type" => "Metadata", "Subtype" => "XML" }, xmp(meta, date.as_deref()).into_bytes())
            .with_compression(false),
    );
    let names_id = doc.add_object(dictionary! {
        "Names" => vec![text_string(&meta.file_name), Object::Reference(spec_id)],
    });
    let catalog = doc.catalog_mut().map_err(fail)?;
    catalog.set("AF", vec![Object::Reference(spec_id)]);
    catalog.set("Metadata", metadata_id);
    // Merge into a name dictionary Chromium may have written, else start one.
    let names = match catalog.get(b"Names") {
        Ok(Object::Dictionary(d)) => Some(d.clone()),
        _ => None,
    };
    let mut names = names.unwrap_or_default();
    names.set("EmbeddedFiles", names_id);
    catalog.set("Names", names);
    catalog.set("PageMode", "UseAttachments");

    let info_id: ObjectId = match doc.trailer.get(b"Info").and_then(Object::as_reference) {
        Ok(id) => id,
        Err(_) => {
            let id = doc.add_object(dictionary! {});
            doc.trailer.set("Info", id);
            id
        }
    };
    if let Ok(Object::Dictionary(info)) = doc.get_object_mut(info_id) {
        info.set("Title", text_string(&meta.title));
        match &meta.author {
            Some(a) => info.set("Author", text_string(a)),
            None => {
                info.remove(b"Author");
            }
        }
        info.set("Creator", text_string("mailshelf"));
        if let Some(d) = &date {
            info.set("CreationDate", Object::string_literal(d.as_bytes()));
            info.set("ModDate", Object::string_literal(d.as_bytes()));
        } else {
            info.remove(b"CreationDate");
            info.remove(b"ModDate");
        }
    }
    // Associated files and the name tree of embedded files are PDF 1.7 features (ISO 32000-1),
    // the base PDF/A-3 builds on; Chromium writes a 1.4 header.
    doc.version = "1.7".to_string();
    let mut out = Vec::with_capacity(pdf.len() + original.len() + 4096);
    doc.save_to(&mut out).map_err(|e| Error::internal("pdf post-processing", e))?;
    Ok(out)
}

/// A PDF text string: PDFDocEncoding is ASCII for ASCII text; anything else goes as UTF-16BE with a
/// byte order mark (ISO 32000 §7.9.2.2).
fn text_string(s: &str) -> Object {
    if s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Object::String(s.as_bytes().to_vec(), StringFormat::Literal);
    }
    let mut bytes = vec![0xfe, 0xff];
    for unit in s.encode_utf16() {
        bytes.extend_from_slice(&unit.to_be_bytes());
    }
    Object::String(bytes, StringFormat::Hexadecimal)
}

/// The `/F` file name, for readers that know only byte strings: ASCII, anything else `_`.
fn ascii_name(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '_' }).collect()
}

/// `D:YYYYMMDDHHmmSS+HH'mm'` (ISO 32000 §7.9.4) in the zone the message was written in.
fn pdf_date(timestamp: i64, zone_minutes: i16) -> String {
    let local = timestamp + i64::from(zone_minutes) * 60;
    let (y, m, d) = crate::dates::civil_from_days(local.div_euclid(86_400));
    let s = local.rem_euclid(86_400);
    let clock = format!("D:{y:04}{m:02}{d:02}{:02}{:02}{:02}", s / 3600, s % 3600 / 60, s % 60);
    if zone_minutes == 0 {
        format!("{clock}Z")
    } else {
        let sign = if zone_minutes < 0 { '-' } else { '+' };
        let z = zone_minutes.unsigned_abs();
        format!("{clock}{sign}{:02}'{:02}'", z / 60, z % 60)
    }
}

/// XMP metadata (ISO 16684-1) saying what the information dictionary says.
fn xmp(meta: &PdfMeta, _pdf_date: Option<&str>) -> String {
    let esc = |s: &str| html_escape::encode_text(s).into_owned();
    let created = meta.date.map(|(ts, zone)| crate::dates::rfc3339(ts, zone));
    let mut fields = String::new();
    fields.push_str(&format!(
        "<dc:title><rdf:Alt><rdf:li xml:lang=\"x-default\">{}</rdf:li></rdf:Alt></dc:title>\n",
        esc(&meta.title)
    ));
    fields.push_str("<dc:format>application/pdf</dc:format>\n");
    if let Some(a) = &meta.author {
        fields.push_str(&format!("<dc:creator><rdf:Seq><rdf:li>{}</rdf:li></rdf:Seq></dc:creator>\n", esc(a)));
    }
    if let Some(c) = &created {
        fields.push_str(&format!("<xmp:CreateDate>{c}</xmp:CreateDate>\n<xmp:ModifyDate>{c}</xmp:ModifyDate>\n"));
    }
    fields.push_str("<xmp:CreatorTool>mailshelf</xmp:CreatorTool>\n");
    format!(
        "<?xpacket begin=\"\u{feff}\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n\
         <x:xmpmeta xmlns:x=\"adobe:ns:meta/\">\n\
         <rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n\
         <rdf:Description rdf:about=\"\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\" \
         xmlns:xmp=\"http://ns.adobe.com/xap/1.0/\" xmlns:pdf=\"http://ns.adobe.com/pdf/1.3/\">\n\
         {fields}</rdf:Description>\n</rdf:RDF>\n</x:xmpmeta>\n<?xpacket end=\"w\"?>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_strings() {
        assert_eq!(pdf_date(0, 0), "D:19700101000000Z");
        assert_eq!(pdf_date(3600, -90), "D:19691231233000-01'30'");
        assert_eq!(pdf_date(0, 120), "D:19700101020000+02'00'");
        assert_eq!(text_string("abc"), Object::String(b"abc".to_vec(), StringFormat::Literal));
        match text_string("é") {
            Object::String(b, _) => assert_eq!(b, vec![0xfe, 0xff, 0x00, 0xe9]),
            other => panic!("{other:?}"),
        }
    }
}
