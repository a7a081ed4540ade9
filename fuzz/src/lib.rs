//! What the fuzz targets run, kept apart from them so the regression tests at the top
//! (`tests/fuzz_regressions.rs`) can take the very same path over the inputs the fuzzer found.
//! It depends on nothing but `mailshelf` and `std`.

use std::sync::Arc;

use mailshelf::ids;
use mailshelf::model::{Body, Message};
use mailshelf::rewrite::{rewrite_css, rewrite_html, visible_text, Options};
use mailshelf::{route, view, view::text};

/// Bytes → `parse_message` → the model → its search document (body and attachments' text) → for
/// every part of the message and of every message it encloses, what the server does with it: HTML
/// is rewritten and its visible text extracted (search index), CSS is rewritten, plain text is rendered, and every part gets its URL. The options vary with the input's length so
/// that both the blocking and the remote-allowing paths run.
pub fn message(data: &[u8]) {
    take_message(data);
}

/// [`message`], saying whether the bytes parsed as a message.
fn take_message(data: &[u8]) -> bool {
    let Ok(msg) = mailshelf::parse::parse_message(Arc::from(data)) else { return false };
    // What the search index gets of it: its text and its documents' text, within bounds.
    let doc = mailshelf::archive::search_doc(0, &msg, true);
    assert!(doc.attachments.len() <= mailshelf::limits::MAX_INDEXED_TEXT + 64 * msg.parts.len());
    let opts = Options {
        allow_remote: data.len() % 2 == 1,
        record: data.len() % 4 >= 2,
        fold_quotes: data.len() % 8 >= 4,
        xml_stylesheets: false,
    };
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
                        served @ ("text/html" | "application/xhtml+xml") => {
                            // XHTML's `<?xml-stylesheet?>`s apply, as the server reads them.
                            let opts = Options { xml_stylesheets: served != "text/html", ..opts };
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
    true
}

/// Items of one Outlook data file the `pst` target takes through [`message`]: enough to reach
/// every kind of item, few enough that an input listing thousands stays fast.
const PST_ITEMS: usize = 16;

/// Any bytes as an Outlook data file (`.pst`, `.ost`), as the indexer reads one: from a file (the
/// reader reads a page or block at a time), listed, its first items each written out as the `.msg`
/// the indexer makes of it and taken through [`message`], and its notices as the message that
/// tells them. Listing and reading must answer, not panic; what an item gives must parse as a
/// message (it is a `.msg` this program wrote).
pub fn pst(data: &[u8]) {
    use mailshelf::ingest::pst;
    use std::sync::atomic::{AtomicU64, Ordering};
    static FILES: AtomicU64 = AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "mailshelf-fuzz-{}-{}.pst",
        std::process::id(),
        FILES.fetch_add(1, Ordering::Relaxed)
    ));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(listing) = pst::list(&path) {
        for item in listing.items.iter().take(PST_ITEMS) {
            if let Ok(raw) = pst::item_msg(&path, item.node) {
                assert!(take_message(&raw), "an item's .msg does not parse");
            }
        }
        message(&pst::notice_message(&path, &listing.notices));
    }
    let _ = std::fs::remove_file(&path);
}

/// The keyring the crypto targets check and decrypt with: the test CA as a trust anchor, Alice's
/// RSA key and Bob's P-256 key for S/MIME, Alice's OpenPGP key (`tests/fixtures/crypto/`), so that
/// inputs reach the signature, path and decryption code, not only the readers.
fn keyring() -> &'static mailshelf::crypto::Keyring {
    static RING: std::sync::OnceLock<mailshelf::crypto::Keyring> = std::sync::OnceLock::new();
    RING.get_or_init(|| {
        let keys: [&[u8]; 3] = [
            include_bytes!("../../tests/fixtures/crypto/keys/alice.key-and-cert.pem"),
            include_bytes!("../../tests/fixtures/crypto/keys/bob.key-and-cert.pem"),
            include_bytes!("../../tests/fixtures/crypto/keys/alice-openpgp.sec.asc"),
        ];
        let trust: [&[u8]; 2] = [
            include_bytes!("../../tests/fixtures/crypto/keys/ca.pem"),
            include_bytes!("../../tests/fixtures/crypto/keys/openpgp-trusted.asc"),
        ];
        mailshelf::crypto::Keyring::from_material(&keys, &trust, None).unwrap_or_default()
    })
}

/// Any bytes as an S/MIME (CMS) object, BER or DER: its kind, the content an opaque signature
/// carries, every signature checked (with and without a detached content), its recipients, an
/// attempt to decrypt it, and the same bytes as a PKCS #12 file. Each must answer, not panic.
pub fn cms(data: &[u8]) {
    use mailshelf::crypto::{smime, Context};
    let _ = mailshelf::crypto::asn1::to_der(data);
    let _ = smime::kind(data);
    let _ = smime::opaque_content(data);
    let ctx = Context { keys: keyring(), sender: Some("alice@example.org"), date: None, now: 1_700_000_000 };
    let half = data.len() / 2;
    let _ = smime::verify(data, None, &ctx);
    let _ = smime::verify(&data[..half], Some(&data[half..]), &ctx);
    let _ = smime::recipients(data);
    let _ = smime::decrypt(data, keyring());
    let _ = mailshelf::crypto::pkcs12::read(data, "");
}

/// Any bytes as OpenPGP: a message (its kind, opened, decrypted), a detached signature over the
/// rest of the input, and a clear-signed text.
pub fn openpgp(data: &[u8]) {
    use mailshelf::crypto::{openpgp, Context};
    let ctx = Context { keys: keyring(), sender: Some("alice@example.org"), date: None, now: 1_700_000_000 };
    let _ = openpgp::kind(data);
    let _ = openpgp::open(data);
    let _ = openpgp::decrypt(data, keyring());
    let half = data.len() / 2;
    let _ = openpgp::verify_detached(&data[..half], &data[half..], &ctx);
    let text = String::from_utf8_lossy(data);
    if let Some(block) = openpgp::find_cleartext(&text) {
        let _ = openpgp::cleartext_text(block.armored);
        let _ = openpgp::verify_cleartext(block.armored, &ctx);
    }
    let _ = openpgp::find_message(&text);
}

/// Any bytes as a document of each of `formats` (a PDF, a Word file…) and as an attachment of any
/// name: the reader must answer (text, cut with a notice, or unreadable with a reason) within the
/// bounds of one document, and never panic. `fuzz/README.md` has one target per reader.
pub fn document(formats: &[mailshelf::parse::extract::Format], data: &[u8]) {
    use mailshelf::parse::extract::{read_as, read_file, Outcome};
    for &format in formats {
        let got = read_as(format, data, visible_text);
        assert!(got.text.len() <= mailshelf::limits::MAX_INDEXED_TEXT, "{format:?}: {} bytes of text", got.text.len());
        assert!(
            got.outcome == Outcome::Whole || !got.notices.is_empty(),
            "{format:?}: cut or unreadable without a reason"
        );
    }
    let _ = read_file(data, Some("attachment.bin"), "application/octet-stream", visible_text);
}

/// Bytes as an mbox file, split as the indexer reads a file (a 256 KiB buffer) and again through a
/// buffer of a few bytes that the input's length chooses: both must find the same messages, and
/// each must be the very bytes of the input where it says it lies; and once more keeping at most a
/// few hundred bytes of a message, which must find them in the same places, each cut to its first
/// bytes.
pub fn mbox(data: &[u8]) {
    use mailshelf::ingest::{unescape_from_lines, MboxReader};
    let split = |capacity: usize| -> Vec<(u64, u64, Vec<u8>)> {
        MboxReader::with_capacity(capacity, std::io::Cursor::new(data), 0)
            .flatten()
            .map(|m| (m.offset, m.len, m.raw))
            .collect()
    };
    let indexed = split(256 * 1024);
    assert_eq!(indexed, split(1 + data.len() % 61), "messages depend on the buffer");
    // Within a limit: the same messages in the same places, each its first bytes.
    let limit = data.len() % 1500;
    let cut: Vec<_> =
        MboxReader::with_capacity(1 + data.len() % 67, std::io::Cursor::new(data), 0).limit(limit).flatten().collect();
    assert_eq!(cut.len(), indexed.len(), "the limit changes the messages");
    for (c, (offset, len, raw)) in cut.iter().zip(&indexed) {
        assert_eq!((c.offset, c.len), (*offset, *len), "the limit moves a message");
        assert_eq!(c.raw, raw[..raw.len().min(limit)], "a cut message is not its first bytes");
    }
    for (offset, len, raw) in indexed {
        let at = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = at.saturating_add(usize::try_from(len).unwrap_or(usize::MAX));
        assert_eq!(data.get(at..end), Some(&raw[..]), "a message that is not where it says");
        unescape_from_lines(raw);
    }
    // As a Dovecot dbox file, through a small buffer: each message within the file and the limit.
    let reader = std::io::BufReader::with_capacity(1 + data.len() % 53, data);
    for m in mailshelf::ingest::DboxReader::new(reader, limit.max(1)).map_while(Result::ok) {
        let end = m.offset.checked_add(m.len).expect("a dbox message's end overflows");
        assert!(end <= data.len() as u64, "a dbox message past the file's end");
        assert!(m.given.bytes.len() <= limit.max(1), "more kept of a dbox message than the limit");
    }
    // As an MMDF and as a Babyl file: the same messages through any buffer, each within the file
    // and the limit, and read back from its place as the bytes the reader kept.
    for framing in [mailshelf::ingest::Framing::Mmdf, mailshelf::ingest::Framing::Babyl] {
        let read = |capacity: usize, limit: usize| -> Vec<mailshelf::ingest::SpanMessage> {
            let reader = std::io::BufReader::with_capacity(capacity, data);
            mailshelf::ingest::SpansReader::new(reader, framing, limit).map_while(Result::ok).collect()
        };
        let whole = read(256 * 1024, usize::MAX);
        let small = read(1 + data.len() % 59, usize::MAX);
        let places =
            |ms: &[mailshelf::ingest::SpanMessage]| ms.iter().map(|m| (m.offset, m.len, m.skip)).collect::<Vec<_>>();
        let bytes =
            |ms: &[mailshelf::ingest::SpanMessage]| ms.iter().map(|m| m.given.bytes.clone()).collect::<Vec<_>>();
        assert_eq!(places(&whole), places(&small), "{framing:?}: messages depend on the buffer");
        assert_eq!(bytes(&whole), bytes(&small), "{framing:?}: messages depend on the buffer");
        let cut = read(1 + data.len() % 71, limit);
        assert_eq!(cut.len(), whole.len(), "{framing:?}: the limit changes the messages");
        for (c, m) in cut.iter().zip(&whole) {
            assert_eq!((c.offset, c.len, c.skip), (m.offset, m.len, m.skip), "{framing:?}: the limit moves a message");
            assert_eq!(
                c.given.bytes,
                m.given.bytes[..m.given.bytes.len().min(limit)],
                "{framing:?}: not its first bytes"
            );
            let end = m.offset.checked_add(m.len).expect("a message's end overflows");
            assert!(end <= data.len() as u64, "{framing:?}: a message past the file's end");
            if let Some((at, len)) = m.skip {
                assert!(at >= m.offset && at + len <= end, "{framing:?}: a skip outside its message");
            }
            let again = mailshelf::ingest::splice(c.offset, c.len, c.skip, limit, |at, want| {
                Ok(data[at as usize..(at + want) as usize].to_vec())
            })
            .expect("splices");
            assert_eq!(again.bytes, c.given.bytes, "{framing:?}: read back otherwise than indexed");
            assert_eq!(again.cut_from, c.given.cut_from, "{framing:?}: another size read back");
        }
    }
}

/// Any bytes as a file kept compressed (gzip, zstd, bzip2, xz: the input is taken as each in
/// turn, and as what its own first bytes say): its first bytes inflated, the message it holds read
/// within a limit (never more kept, the whole size at least the limit when cut), and the mbox it
/// holds read through the decompressor, forward only, as the indexer reads one.
pub fn packed(data: &[u8]) {
    use mailshelf::ingest::{packing, read_unpacked, unpacked_head, unpacked_mbox, MboxReader, Packing};
    let said = packing(data);
    let every = [Packing::Gzip, Packing::Zstd, Packing::Bzip2, Packing::Xz, Packing::Lz4, Packing::DovecotLz4];
    for p in every.into_iter().chain(said) {
        let _ = unpacked_head(data, p, 512);
        let limit = 1 + data.len() % 4096;
        if let Ok(given) = read_unpacked(data, p, limit) {
            assert!(given.bytes.len() <= limit, "more kept than the limit");
            if let Some(size) = given.cut_from {
                assert!(size > limit as u64, "a cut message said to be no longer than the limit");
            }
        }
        let Ok(mbox) = unpacked_mbox(data, p, data.len() as u64) else { continue };
        let mut end = 0;
        // A small input may inflate to the 1 GiB bound (bzip2 makes megabytes of a few hundred
        // bytes): the first 16 MiB say what the rest would, and the reader's buffer is small but
        // not byte-sized, so that an input's time is the decoders', not the harness's.
        for m in MboxReader::with_capacity(256 + data.len() % 61, mbox, 0).limit(limit).map_while(Result::ok) {
            assert!(m.offset >= end, "messages overlap");
            assert!(m.raw.len() <= limit, "more kept of a message than the limit");
            end = m.offset + m.len;
            if end > 16 << 20 {
                break;
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

/// What separates the files of one `dovecot_index` input.
const DOVECOT_FILE_SEPARATOR: &[u8] = b"--8<--";

/// Bytes as Dovecot's index files of one mailbox, and of mdbox's map: split at `--8<--`, the first
/// piece is `dovecot.index` (none when empty), the others its logs. Whatever is read must stay
/// within what the bytes could hold, and the map's places must find their own messages.
pub fn dovecot_index(data: &[u8]) {
    use mailshelf::ingest::{MailboxIndex, MapIndex};
    let mut pieces = Vec::new();
    let mut rest = data;
    while let Some(at) = rest.windows(DOVECOT_FILE_SEPARATOR.len()).position(|w| w == DOVECOT_FILE_SEPARATOR) {
        pieces.push(&rest[..at]);
        rest = &rest[at + DOVECOT_FILE_SEPARATOR.len()..];
    }
    pieces.push(rest);
    let index = pieces.first().copied().filter(|p| !p.is_empty());
    let logs = &pieces[1..];
    // Each message takes at least 8 bytes of a record or an append.
    let most = data.len() / 8;
    if let Ok(mailbox) = MailboxIndex::from_bytes(index, logs) {
        assert!(mailbox.messages.len() <= most, "more messages than the files could hold");
        for message in mailbox.messages.values() {
            let letters: Vec<char> = message.flags.chars().collect();
            assert!(letters.windows(2).all(|w| w[0] < w[1]), "flag letters unsorted or repeated");
            assert!(letters.iter().all(|c| "DFRST".contains(*c)), "a flag letter that is none");
        }
    }
    if let Ok(map) = MapIndex::from_bytes(index, logs) {
        assert!(map.mails.len() <= most, "more map messages than the files could hold");
        for mail in map.mails.values() {
            let (_, found) = map.at(mail.file_id, u64::from(mail.offset)).expect("a map message not at its place");
            assert_eq!((found.file_id, found.offset), (mail.file_id, mail.offset));
            if let Some((_, holding)) = map.holding(mail.file_id, u64::from(mail.offset)) {
                assert_eq!(holding.file_id, mail.file_id, "a place in another file");
            }
        }
    }
}
