//! Every bound on what one message or one request can make the server do, in one place. Messages
//! and requests are hostile input: each limit turns what would be unbounded memory or CPU into a
//! clear answer (a 4xx problem, or the message shown as far as it is sane, with a notice). The
//! ones a deployment may want to move are also settings (see [`crate::config`]); the README lists
//! them all with their defaults.

/// Multiparts and enclosed messages nested deeper than this are shown as opaque data.
pub const MAX_DEPTH: usize = 48;

/// Parts kept of one message (enclosed messages count their own). Beyond it the rest of the
/// message is not shown and the page says so.
pub const MAX_PARTS: usize = 10_000;

/// Text of one message that goes into the search index.
pub const MAX_INDEXED_TEXT: usize = 1 << 20;

/// Bytes of documents handed to the embedded search index and not yet indexed by its thread.
/// tantivy queues up to 10,000 documents, which held 1.2 GB of 2,000 messages of 600 KB of text
/// each (the thread is slower than parsing); adding waits while this much is queued.
pub const MAX_SEARCH_QUEUE: u64 = 16 << 20;

/// Characters of a search query; longer ones are refused with 400.
pub const MAX_QUERY_LEN: usize = 1000;

/// Nesting of parentheses and negations in a search query.
pub const MAX_QUERY_DEPTH: usize = 20;

/// Messages one list or search request returns.
pub const MAX_PAGE: usize = 1000;

/// How deep into search results a request may page (`offset + limit`): ranking keeps that many
/// candidates in memory. Like the result windows of search servers; a narrower query goes further.
pub const MAX_SEARCH_WINDOW: usize = 10_000;

/// Labels kept of one message; a header naming more is cut short.
pub const MAX_LABELS: usize = 64;

/// Bytes of one label header field (`X-Gmail-Labels`, `Keywords`, …) that are read; the rest of
/// a longer one is not looked at. Far more than [`MAX_LABELS`] labels of 100 characters, encoded.
pub const MAX_LABEL_FIELD: usize = 32 * 1024;

/// Bytes of a message's subject, and of one of its address lines (From, To, Cc), kept for lists,
/// pages and search: beyond, a line is cut with `…` (its header field, on the header page and in
/// the raw message, keeps all of it). A subject of megabytes made every list page that size.
pub const MAX_SUBJECT: usize = 4 * 1024;
/// See [`MAX_SUBJECT`].
pub const MAX_ADDRESS_LINE: usize = 64 * 1024;

/// Attachments of one message whose type and size are kept for the overview.
pub const MAX_LISTED_ATTACHMENTS: usize = 32;

/// Enclosed messages walked up to reach a nested one.
pub const MAX_NESTED_WALK: usize = 64;

/// Entries one name (a Message-ID, a Content-ID, the message replied to) is looked up to at most:
/// a name shared by more (one thread with ten thousand replies) reaches the first of them.
pub const MAX_SHARED_NAME: usize = 10_000;

/// Bytes of an external body's phantom header that are read; beyond them it is not looked at.
pub const MAX_PHANTOM_HEADER: usize = 16 * 1024;

/// Characters kept of the request an external body asks to mail to its server.
pub const MAX_MAIL_SERVER_REQUEST: usize = 4096;

/// What an upload kept compressed (gzip, zstd) may inflate to; a larger one is refused (`413`).
pub const MAX_UPLOAD_INFLATED: usize = 256 << 20;

/// Default for `--max-upload`: the largest request body.
pub const DEFAULT_MAX_UPLOAD: &str = "64M";

/// Default for `--max-message`: bytes read of one message, a file or a message of an mbox (an
/// Outlook item is bounded by [`MAX_PST_ITEM`]). A longer one is listed, shown and searched as far
/// as that, with a notice; its file keeps the rest.
pub const DEFAULT_MAX_MESSAGE: usize = 256 << 20;

/// Default for `--max-connections`: connections open at once; further ones wait to be accepted.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 512;

/// Default for `--header-timeout`: seconds a client has to send a request's header block, and an
/// idle kept-alive connection waits for its next request.
pub const DEFAULT_HEADER_TIMEOUT_SECS: u64 = 10;

/// Nesting of arrays and dictionaries read from a property list (an Apple Mail `.emlx` trailer, a
/// Safari `.webarchive`); deeper values are not read and the file is shown as far as it was.
pub const MAX_PLIST_DEPTH: usize = 64;

/// Values read from one property list. A binary property list may reference one object from many
/// places, so a small file can stand for an exponential tree; reading stops here.
pub const MAX_PLIST_VALUES: usize = 200_000;

/// Bytes of strings and data read from one property list, beyond the size of the file itself
/// (shared objects are counted each time they are reached).
pub const MAX_PLIST_EXTRA_BYTES: usize = 64 << 20;

/// Bytes of one attachment Apple Mail stored beside a `.partial.emlx` (`Attachments/<n>/<part>/`),
/// and of all of them together for one message; larger ones are shown as missing, with a notice.
pub const MAX_STORED_ATTACHMENT: u64 = 64 << 20;
pub const MAX_STORED_ATTACHMENTS: u64 = 256 << 20;

/// Bytes one stream of an Outlook `.msg` compound file (or one TNEF attribute) may hold to be read;
/// a larger one is left out and the message says so.
pub const MAX_MSG_STREAM: usize = 64 << 20;

/// Bytes of RTF one compressed body may expand to, and of text read out of RTF; the rest is cut.
pub const MAX_RTF_OUTPUT: usize = 32 << 20;

/// Bytes read in all from the streams of one Outlook `.msg` file, as a multiple of its own size
/// (plus 1 MiB): streams that share their sectors cannot make a small file read as a huge one.
pub const MSG_READ_FACTOR: usize = 4;

/// Messages attached to messages inside one Outlook `.msg` file: deeper ones are left out.
pub const MAX_MSG_NESTING: usize = 16;

/// Recipients and attachments read of one Outlook message (each).
pub const MAX_MSG_ENTRIES: usize = 2048;

/// Levels of a B-tree in an Outlook data file (`.pst`) followed: real ones have a handful, so a
/// deeper (or cyclic) one is damaged and reading it stops.
pub const MAX_PST_DEPTH: usize = 16;

/// Nodes read from the node index of one Outlook data file: far more than any archive Outlook can
/// write holds, few enough that the list of them stays small.
pub const MAX_PST_NODES: usize = 8_000_000;

/// Bytes read from the blocks of an Outlook data file for one item (its attachments and attached
/// messages included), and for the folders of one listing; the rest is left out and the item says
/// it could not all be read.
pub const MAX_PST_ITEM: usize = 256 << 20;

/// The box a thumbnail fits in, in pixels (shown at half that on the page, sharp on dense screens).
pub const THUMB_BOX: u32 = 240;

/// An image that already fits [`THUMB_BOX`] is its own thumbnail when its file is at most this
/// large; a bigger file is re-encoded.
pub const THUMB_AS_IS: usize = 256 * 1024;

/// Width or height beyond which an attachment gets no thumbnail (checked from its header, before
/// any pixel is decoded).
pub const MAX_THUMB_SIDE: u32 = 16_384;

/// Memory one image decode may take (`image::Limits::max_alloc`): a 40-megapixel photograph fits;
/// a decompression bomb does not and gets the file icon.
pub const MAX_THUMB_ALLOC: u64 = 160 << 20;

/// Images decoded at once for thumbnails; further requests wait their turn.
pub const MAX_THUMB_DECODES: usize = 2;

/// Bytes of thumbnails kept in memory.
pub const MAX_THUMB_CACHE: u64 = 32 << 20;

/// Bytes of rewritten documents kept (HTML and CSS parts, by message, part, switches, index
/// generation and the reader's folders).
pub const MAX_RENDERED_CACHE: u64 = 8 << 20;

/// Bytes of `/part/` answers kept whole (their bytes and compressed forms of documents), so that
/// a part asked for again is answered without reading, rewriting or compressing it again. With
/// [`MAX_RENDERED_CACHE`], 16 MiB on top of the 75 MB the scale benchmark measures serving a
/// million messages, within its 100 MB.
pub const MAX_SERVED_CACHE: u64 = 8 << 20;

/// A part's answer (or compressed form) larger than this is not kept: it would push out many
/// small ones, and sending it costs more than making it.
pub const MAX_SERVED_ANSWER: usize = 4 << 20;

/// Signed and encrypted layers unwrapped inside one another (signed inside encrypted inside
/// signed…); a deeper one is shown as it is, with an `error` signature status saying why.
pub const MAX_SECURITY_LAYERS: usize = 8;

/// Bytes of one S/MIME (CMS) object read; a larger one is not opened (its status says so).
pub const MAX_CMS_BYTES: usize = 128 << 20;

/// Bytes one decrypted (or opened) OpenPGP message may expand to; a compressed message that would
/// grow beyond it is not shown.
pub const MAX_DECRYPTED_BYTES: usize = 128 << 20;

/// Nesting of ASN.1 items read from one CMS object or key file.
pub const MAX_ASN1_DEPTH: usize = 64;

/// ASN.1 items read from one CMS object or key file (a certificate has about a hundred).
pub const MAX_ASN1_ITEMS: usize = 1_000_000;

/// The largest RSA key used, in bits: beyond it a signature is an `error` (checking one would
/// take minutes of CPU). OpenPGP keys have the same bound (rPGP's `large-rsa`).
pub const MAX_RSA_BITS: usize = 16_384;

/// Signatures checked of one signed object (S/MIME signers, OpenPGP signatures).
pub const MAX_SIGNERS: usize = 16;

/// Certificates between a signer and a trust anchor followed, and signature checks spent walking
/// one signer's certificate path, whatever certificates a message carries.
pub const MAX_CHAIN_LENGTH: usize = 8;
pub const MAX_CHAIN_CHECKS: usize = 64;

/// Key derivation rounds a PKCS #12 file may ask for (real ones ask 2,048 to 600,000; two million
/// take a couple of seconds).
pub const MAX_KDF_ITERATIONS: u32 = 2_000_000;

/// Bytes of messages read from their sources and not yet indexed, while indexing: the walker
/// reading an mbox waits for indexing to catch up rather than read further ahead (a message larger
/// than this is read alone).
pub const MAX_IN_FLIGHT_BYTES: u64 = 32 << 20;

/// Wall-clock time one document attached to a message may take to read for its text (a PDF, an
/// Office or OpenDocument file, a zip archive with what it holds); what was read by then is kept,
/// and the document is said to be cut.
pub const MAX_DOCUMENT_TIME: std::time::Duration = std::time::Duration::from_secs(2);

/// Wall-clock time all the documents of one message may take together.
pub const MAX_MESSAGE_DOCUMENTS_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// Bytes one document may decompress while it is read for its text (the streams of a PDF, the
/// members of an Office, OpenDocument or zip file), and all the documents of one message together.
pub const MAX_DOCUMENT_INFLATED: u64 = 64 << 20;
pub const MAX_MESSAGE_INFLATED: u64 = 256 << 20;

/// Documents inside documents followed for their text: the members of a zip archive, a message
/// attached as a file and its own attachments, the files embedded in an Office document. A zip
/// inside a zip is named, never opened.
pub const MAX_DOCUMENT_NESTING: usize = 3;

/// Bytes of a zip file's central directory (the list of its members) read, about 10,000 members:
/// each listed member costs memory before any of it is read.
pub const MAX_ZIP_DIRECTORY: u64 = 1 << 20;

/// Documents whose text is kept in memory for search results and `?text=1`, in bytes of text.
pub const MAX_DOCUMENT_TEXT_CACHE: u64 = 32 << 20;

/// Requests for a message's PDF at once, the one being rendered and those waiting for the one
/// browser; more are answered 503 "busy" (each render may take up to a minute).
pub const MAX_PDF_QUEUE: usize = 4;

/// PDF documents being read at once, in the whole process. A PDF is read on a reading thread,
/// and one whose reading outlasts [`MAX_DOCUMENT_TIME`] is left to finish there, holding its
/// document until it does: it keeps its place in this count, and a further PDF waits for a place,
/// within its message's [`MAX_MESSAGE_DOCUMENTS_TIME`] (then it is listed as not read), and its own
/// time starts when it has one. Files of at most [`MAX_SMALL_PDF_BYTES`] are first read within
/// [`MAX_SMALL_PDF_INFLATED`] of decompression, [`MAX_SMALL_PDF_READERS`] at once; any other PDF,
/// or a small one that needs more, is read alone with the whole [`MAX_DOCUMENT_INFLATED`]: two
/// large PDFs read at once could take 120 MB more than indexing without them.
pub const MAX_PDF_READERS: usize = 1;
/// Small PDFs read at once (each parse worker may read one).
pub const MAX_SMALL_PDF_READERS: usize = 2;
/// The largest PDF file read as a small one.
pub const MAX_SMALL_PDF_BYTES: usize = 1 << 20;
/// Bytes a small PDF may decompress before it is read again, alone, with the whole budget.
pub const MAX_SMALL_PDF_INFLATED: u64 = 8 << 20;

/// Levels of PDF form XObjects inside one another followed for their text.
pub const MAX_PDF_FORM_DEPTH: usize = 12;

/// Times one page of a PDF may draw form XObjects (counting those drawn inside others).
pub const MAX_PDF_FORM_DRAWS: usize = 10_000;

/// Bytes of a password that are checked at all: a longer one is wrong without being hashed, so a
/// megabyte sent as a password costs nothing.
pub const MAX_PASSWORD_BYTES: usize = 1024;

/// Password hashes checked at once (each argon2id check takes 19 MiB and a core for tens of
/// milliseconds); more sign-ins wait their turn.
pub const MAX_PASSWORD_CHECKS: usize = 4;

/// Failed sign-ins from one client address, or for one name, within [`SIGN_IN_WINDOW_SECS`]
/// after which more are answered 429 without being checked.
pub const MAX_SIGN_IN_FAILURES: usize = 10;
pub const SIGN_IN_WINDOW_SECS: u64 = 60;

/// Client addresses and names whose failed sign-ins are remembered at once; and places a name
/// signed in from.
pub const MAX_SIGN_IN_KEYS: usize = 100_000;

/// How long an address a name signed in from stays a place where failures for that name made
/// elsewhere do not lock it out.
pub const SIGN_IN_KNOWN_DAYS: u64 = 30;

/// Bytes of a users file read.
pub const MAX_USERS_FILE: u64 = 16 << 20;

/// Default for `--session-hours`: how long a sign-in lasts.
pub const DEFAULT_SESSION_HOURS: u64 = 12;

/// Sign-ins in memory at once (the embedded backend); the oldest go first past it.
pub const MAX_SESSIONS: usize = 100_000;

/// Bytes of a sign-in form (name and password), of a users file line's name, of a header naming
/// a user behind a proxy.
pub const MAX_SIGN_IN_FORM: usize = 16 * 1024;
pub const MAX_USER_NAME: usize = 256;
