//! Zip files: the container of Office Open XML and OpenDocument files, and zip archives attached
//! as they are. An archive is opened only once the size of its central directory (its list of
//! members, which the zip crate holds in memory) is known to be small; every member is read
//! through a [`Metered`] reader, and the zip crate itself refuses to give more than a member's
//! declared size. Only stored and deflated members are read.
//!
//! An attached archive gives the text of the documents inside it, each under its name (one level:
//! a zip inside is named, not opened), and the names of the rest.

use std::io::{BufReader, Cursor, Read};
use std::rc::Rc;

use ::zip::ZipArchive;

use super::{unreadable, Format, Halt, Metered, Recognised, Sink};
use crate::limits::MAX_ZIP_DIRECTORY;

pub(super) type Archive<'a> = ZipArchive<Cursor<&'a [u8]>>;

/// Members of an attached archive whose names are listed (and read, when documents).
const MAX_MEMBERS: usize = 10_000;

/// The size the end of a zip file gives its central directory (ZIP64's when it defers to it);
/// `None` when no end record is found.
fn directory_size(bytes: &[u8]) -> Option<u64> {
    // The end record is 22 bytes and a comment of at most 65,535.
    let from = bytes.len().saturating_sub(22 + 65_535);
    let tail = &bytes[from..];
    let at = memchr::memmem::rfind(tail, b"PK\x05\x06")? + from;
    let le16 = |p: usize| bytes.get(p..p + 2).map(|b| u64::from(u16::from_le_bytes([b[0], b[1]])));
    let le32 = |p: usize| bytes.get(p..p + 4).map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])));
    let size = le32(at + 12)?;
    let count = le16(at + 10)?;
    if size != 0xFFFF_FFFF && count != 0xFFFF {
        return Some(size);
    }
    // ZIP64: the locator just before the end record says where the ZIP64 end record is.
    let locator = at.checked_sub(20)?;
    if bytes.get(locator..locator + 4) != Some(b"PK\x06\x07") {
        return Some(size);
    }
    let le64 =
        |p: usize| bytes.get(p..p + 8).map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]));
    let record = usize::try_from(le64(locator + 8)?).ok()?;
    if bytes.get(record..record + 4) != Some(b"PK\x06\x06") {
        return Some(u64::MAX);
    }
    le64(record + 40)
}

/// Opens a zip file whose central directory is small enough to hold.
pub(super) fn open(bytes: &[u8]) -> Result<Archive<'_>, Halt> {
    match directory_size(bytes) {
        None => return Err(unreadable("damaged: the zip file has no end record")),
        Some(size) if size > MAX_ZIP_DIRECTORY => {
            return Err(unreadable("not read: the zip file lists more members than are read"))
        }
        Some(_) => {}
    }
    ZipArchive::new(Cursor::new(bytes)).map_err(|_| unreadable("damaged: an unreadable zip file"))
}

/// What a zip file is: an Office Open XML or OpenDocument file, else an archive.
pub(super) fn classify(bytes: &[u8]) -> Recognised {
    let Ok(mut archive) = open(bytes) else {
        return Recognised::NotRead("damaged: an unreadable zip file");
    };
    let has = |a: &Archive<'_>, n: &str| a.index_for_name(n).is_some();
    if has(&archive, "[Content_Types].xml") {
        if has(&archive, "word/document.xml") {
            return Recognised::Readable(Format::Word);
        }
        if has(&archive, "xl/workbook.xml") {
            return Recognised::Readable(Format::Excel);
        }
        if has(&archive, "ppt/presentation.xml") {
            return Recognised::Readable(Format::PowerPoint);
        }
    }
    if let Some(mimetype) = small_member(&mut archive, "mimetype") {
        if let Some(format) = super::odf::format_of(mimetype.trim()) {
            return Recognised::Readable(format);
        }
    }
    Recognised::Readable(Format::Zip)
}

/// A member of at most a few bytes, as text (an OpenDocument file's `mimetype`).
fn small_member(archive: &mut Archive<'_>, name: &str) -> Option<String> {
    let file = archive.by_name(name).ok()?;
    let mut out = String::new();
    file.take(256).read_to_string(&mut out).ok()?;
    Some(out)
}

/// Names of the members of `archive`, in its order.
pub(super) fn names(archive: &Archive<'_>) -> Vec<String> {
    archive.file_names().filter_map(Result::ok).map(|n| n.into_owned()).collect()
}

/// A member's bytes, within what the document may still decompress; `Ok(None)` when there is no
/// such member.
pub(super) fn member(archive: &mut Archive<'_>, name: &str, sink: &Sink) -> Result<Option<Vec<u8>>, Halt> {
    let Ok(file) = archive.by_name(name) else { return Ok(None) };
    if file.encrypted() {
        return Err(unreadable("encrypted with a password"));
    }
    if file.size() > sink.meter.left() {
        sink.meter.charge(file.size());
        return Err(Halt::Stop(super::Stop::Inflated));
    }
    let mut out = Vec::with_capacity(usize::try_from(file.size()).unwrap_or(0).min(1 << 20));
    Metered::new(file, Rc::clone(&sink.meter)).read_to_end(&mut out).map_err(|_| sink.read_error(name))?;
    Ok(Some(out))
}

/// Reads a member as XML by `rules`; nothing when there is no such member.
pub(super) fn walk(
    archive: &mut Archive<'_>,
    name: &str,
    rules: &super::xml::Rules,
    sink: &mut Sink,
) -> Result<(), Halt> {
    let meter = Rc::clone(&sink.meter);
    let Ok(file) = archive.by_name(name) else { return Ok(()) };
    if file.encrypted() {
        return Err(unreadable("encrypted with a password"));
    }
    super::xml::walk(BufReader::new(Metered::new(file, meter)), rules, sink)
}

/// Extensions of members that are never documents: not read, only named.
const MEDIA: &[&str] = &[
    "jpg", "jpeg", "png", "gif", "bmp", "tif", "tiff", "webp", "heic", "svg", "ico", "mp3", "wav", "ogg", "flac",
    "m4a", "mp4", "mov", "avi", "mkv", "webm", "exe", "dll", "so", "dylib", "class", "jar", "iso", "dmg", "bin",
];

/// An attached zip archive: each member's name, and the text of those that are documents.
pub(super) fn read(bytes: &[u8], sink: &mut Sink) -> Result<(), Halt> {
    let outer = sink.inside_zip(true);
    let result = members(bytes, sink);
    sink.inside_zip(outer);
    result
}

fn members(bytes: &[u8], sink: &mut Sink) -> Result<(), Halt> {
    let mut archive = open(bytes)?;
    let names = names(&archive);
    if names.len() > MAX_MEMBERS {
        sink.notices.push(format!("only the first {MAX_MEMBERS} of its {} members are read", names.len()));
    }
    for name in names.iter().take(MAX_MEMBERS) {
        sink.tick()?;
        if name.ends_with('/') {
            continue;
        }
        let ext = super::recognise::extension(Some(name));
        if ext.as_deref().is_some_and(|e| MEDIA.contains(&e)) {
            sink.newline()?;
            sink.push(name)?;
            continue;
        }
        let declared = ext.as_deref().and_then(|e| mime_guess::from_ext(e).first_raw()).unwrap_or("");
        match member(&mut archive, name, sink) {
            Ok(Some(data)) => {
                if !sink.nested(&data, name, declared)? {
                    sink.newline()?;
                    sink.push(name)?;
                }
            }
            Ok(None) => {}
            Err(Halt::Stop(stop)) => return Err(Halt::Stop(stop)),
            Err(Halt::Unreadable(why)) => sink.notices.push(format!("{name}: {why}")),
        }
    }
    Ok(())
}
