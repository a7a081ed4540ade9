//! What the PDF carries besides its pages: the original message as an embedded file, and the
//! document's metadata, the way PDF/A-3 (ISO 19005-3) asks for an archival copy of a message.
//!
//! - The message's exact bytes are an embedded file stream of type `message/rfc822` (a file in
//!   another format: its own type and extension, an Outlook `.msg` or an Apple `.emlx`), named in the
//!   catalog's `/EmbeddedFiles` name tree and associated with the document by the catalog's `/AF`
//!   array, its relationship `/Source`: the PDF is a rendering of that file (PDF/A-3 §6.8).
//! - `/Title` is the subject, `/Author` the sender, `/CreationDate` the message's date, in the
//!   document information dictionary and, identically, in XMP metadata (PDF/A wants the two to
//!   agree).
//!
//! - An output intent with an sRGB ICC profile says what Chromium's device RGB colours mean, and
//!   the trailer gets the file identifier Chromium leaves out.
//!
//! No validator has checked the result against the rest of ISO 19005-3, so it does not claim to be
//! PDF/A: there is no `pdfaid` entry in its metadata.

use lopdf::{dictionary, Document, Object, ObjectId, Stream, StringFormat};

use crate::dates::pdf_date;
use crate::error::Error;

/// An sRGB profile (ICC v4 layout, marked 4.2, the version ISO 32000-1 names): Little CMS's built-in
/// sRGB, written by `PIL.ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()` with
/// bytes 8..12 set to `04 20 00 00`. Its header has no profile ID, so the version can be set alone.
const SRGB_ICC: &[u8] = include_bytes!("srgb.icc");

/// What the PDF says about itself.
#[derive(Debug, Clone, Default)]
pub(crate) struct PdfMeta {
    /// The message's subject.
    pub title: String,
    /// The message's sender, as its From header reads.
    pub author: Option<String>,
    /// The message's Date, as seconds since the epoch and the zone it was written in (minutes
    /// east of UTC).
    pub date: Option<(i64, i16)>,
    /// The name the embedded message goes by (`<stem>.eml`, `<stem>.msg`, `<stem>.emlx`…).
    pub file_name: String,
    /// Its type (`message/rfc822` for an Internet message).
    pub file_type: &'static str,
}

fn fail(e: lopdf::Error) -> Error {
    Error::internal("pdf post-processing", e)
}

/// `pdf` with `original` embedded and the metadata set; the pages are left as they are.
pub(crate) fn attach(pdf: &[u8], original: &[u8], meta: &PdfMeta) -> Result<Vec<u8>, Error> {
    let mut doc = Document::load_mem(pdf).map_err(fail)?;
    let date = meta.date.map(|(ts, zone)| pdf_date(ts, zone));

    let mut params = dictionary! { "Size" => Object::Integer(i64::try_from(original.len()).unwrap_or(i64::MAX)) };
    if let Some(d) = &date {
        params.set("ModDate", Object::string_literal(d.as_bytes()));
    }
    let file = Stream::new(
        dictionary! { "Type" => "EmbeddedFile", "Subtype" => Object::Name(meta.file_type.as_bytes().to_vec()), "Params" => params },
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

    let names_id = doc.add_object(dictionary! {
        "Names" => vec![text_string(&meta.file_name), Object::Reference(spec_id)],
    });
    let icc_id = doc.add_object(Stream::new(dictionary! { "N" => 3 }, SRGB_ICC.to_vec()));
    let intent = dictionary! {
        "Type" => "OutputIntent",
        "S" => "GTS_PDFA1",
        "OutputConditionIdentifier" => text_string("sRGB IEC61966-2.1"),
        "Info" => text_string("sRGB IEC61966-2.1"),
        "DestOutputProfile" => icc_id,
    };
    let producer = doc
        .trailer
        .get(b"Info")
        .and_then(Object::as_reference)
        .and_then(|id| doc.get_dictionary(id))
        .and_then(|info| info.get(b"Producer"))
        .ok()
        .and_then(|p| p.as_str().ok())
        .map(|p| String::from_utf8_lossy(p).into_owned());
    let metadata_id = doc.add_object(
        Stream::new(
            dictionary! { "Type" => "Metadata", "Subtype" => "XML" },
            xmp(meta, producer.as_deref()).into_bytes(),
        )
        .with_compression(false),
    );
    let catalog = doc.catalog_mut().map_err(fail)?;
    catalog.set("OutputIntents", vec![Object::Dictionary(intent)]);
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
    // A file identifier, which PDF/A requires and Chromium does not write: from the message's
    // bytes, so the same message always gives the same one.
    if doc.trailer.get(b"ID").is_err() {
        let id = blake3::hash(original).as_bytes()[..16].to_vec();
        let id = Object::String(id, StringFormat::Hexadecimal);
        doc.trailer.set("ID", vec![id.clone(), id]);
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

/// XMP metadata (ISO 16684-1) saying what the information dictionary says.
fn xmp(meta: &PdfMeta, producer: Option<&str>) -> String {
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
    if let Some(p) = producer {
        fields.push_str(&format!("<pdf:Producer>{}</pdf:Producer>\n", esc(p)));
    }
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
    fn text_strings() {
        assert_eq!(text_string("abc"), Object::String(b"abc".to_vec(), StringFormat::Literal));
        match text_string("é") {
            Object::String(b, _) => assert_eq!(b, vec![0xfe, 0xff, 0x00, 0xe9]),
            other => panic!("{other:?}"),
        }
    }
}
