//! A message's page as a reader sees it, free of HTTP: its headers, where its body is (or its
//! text, rendered), its attachments and the parts it only points to, the messages enclosed in it,
//! its thread, every part, the other messages sharing its Message-ID, and its neighbours in the
//! list.

use super::format::{human_size, shown_subject};
use super::list::{label_links, LabelLink};
use super::{frame, part_filename, served_type, text, thumb, View};
use crate::archive::Loaded;
use crate::dates::{long_date, short_date};
use crate::index::{EntryId, Location};
use crate::model::{Body, External, Message, Part, PartIdx};
use crate::parse::extract;
use crate::route;

/// Deepest indentation of a reply in the thread.
const MAX_DEPTH: usize = 12;

/// A file a reader would call an attachment.
pub(crate) struct Attachment {
    pub name: String,
    pub content_type: String,
    pub size: String,
    pub open_url: String,
    pub download_url: String,
    /// `/thumb/…` for an image a thumbnail can be made of; the file icon shows otherwise.
    pub thumb_url: Option<String>,
    /// `?text=1` for a document whose text mailshelf reads.
    pub text_url: Option<String>,
}

/// An external body as the page lists it: what the data is, and where.
pub(crate) struct ExternalRow {
    pub label: String,
    pub content_type: String,
    pub size: Option<String>,
    pub expiration: Option<String>,
    pub expired: bool,
    /// How the data is reached ("URL", "anonymous FTP", "by mail, on request", …).
    pub access: String,
    /// A URL to follow: `http`, `https` or `ftp` only, opened in a new tab without a referrer.
    pub link: Option<String>,
    /// Where the data is, in words, when there is no link.
    pub place: String,
    /// For `MAIL-SERVER`: a `mailto:` link that writes the request, and the request itself.
    pub mailto: Option<String>,
    pub request: Option<String>,
}

/// A message enclosed in this one, shown inline.
pub(crate) struct Nested {
    pub subject: String,
    pub from: Option<String>,
    pub date: Option<String>,
    pub page_url: String,
    pub html_src: Option<String>,
    pub text_html: Option<String>,
    /// The class that sets its frame's starting height (see [`crate::view::frame`]).
    pub frame_class: &'static str,
}

/// One of the texts shown after the body ([`Message::more_bodies`]): an HTML part in a frame of
/// its own, or a text part rendered.
pub(crate) struct MoreBody {
    pub html_src: Option<String>,
    pub text_html: Option<String>,
    /// The class that sets its frame's starting height (see [`crate::view::frame`]).
    pub frame_class: &'static str,
}

/// The texts shown after the body, each as the body would be shown (with `remote_q` for frames).
pub(crate) fn more_bodies(key: &str, msg: &Message, remote_q: &str) -> Vec<MoreBody> {
    msg.more_bodies
        .iter()
        .map(|&i| match &msg.parts[i].body {
            Body::Text(html) if msg.parts[i].is_html() => MoreBody {
                html_src: Some(format!("{}{remote_q}", route::part_url(key, msg, i))),
                text_html: None,
                frame_class: frame::estimate(html).class(),
            },
            _ => MoreBody { html_src: None, text_html: Some(text_of(msg, i, false)), frame_class: "" },
        })
        .collect()
}

/// A row of the table of every part.
pub(crate) struct PartRow {
    /// The section number, indented by its depth.
    pub section: String,
    pub content_type: String,
    /// Its file name, else its Content-ID, else its Content-Location.
    pub label: String,
    pub size: String,
    pub url: Option<String>,
}

pub(crate) struct Link {
    pub url: String,
    pub label: String,
}

/// A message of the thread.
pub(crate) struct ThreadRow {
    /// Indentation in em, for the reply depth.
    pub indent: usize,
    pub subject: String,
    pub from: String,
    pub date: String,
    pub url: String,
    pub current: bool,
}

/// A message's page.
pub(crate) struct MessageView {
    pub subject: String,
    pub from: Option<String>,
    pub to: Option<String>,
    pub cc: Option<String>,
    pub date: Option<String>,
    pub flags: Option<String>,
    pub source: Option<String>,
    /// The folder it is filed in, and its list.
    pub folder: Option<LabelLink>,
    pub labels: Vec<LabelLink>,
    pub headers: Vec<(String, String)>,
    /// Where the body's frame loads from (the HTML body, or a body that is an image).
    pub html_src: Option<String>,
    /// The text body, rendered, when it is shown instead.
    pub text_html: Option<String>,
    /// The other inline texts, shown after the body.
    pub more: Vec<MoreBody>,
    pub has_html: bool,
    pub has_text: bool,
    pub view_text: bool,
    pub html_view_url: String,
    pub text_view_url: String,
    pub raw_url: String,
    pub raw_download_url: String,
    pub self_url: String,
    pub remote_url: String,
    pub remote: bool,
    /// Remote resources the body and its stylesheets would load, and do not.
    pub blocked: usize,
    pub damaged: bool,
    pub truncated: bool,
    pub max_parts: usize,
    /// What could not be read of a file in another format (see [`crate::model::Origin`]).
    pub notices: Vec<String>,
    pub attachments: Vec<Attachment>,
    pub externals: Vec<ExternalRow>,
    pub nested: Vec<Nested>,
    pub parts: Vec<PartRow>,
    /// Other messages with its Message-ID.
    pub duplicates: Vec<Link>,
    pub thread: Vec<ThreadRow>,
    pub conversation_url: String,
    pub prev_in_thread: Option<String>,
    pub next_in_thread: Option<String>,
    /// The messages above and below this one in the list (newest first), for the "Newer" and
    /// "Older" links and the `k`/`j` keys.
    pub newer: Option<String>,
    pub older: Option<String>,
    /// The class that sets the body frame's starting height (see [`crate::view::frame`]).
    pub frame_class: &'static str,
    /// Its signatures and encryption, one line each, above the body.
    pub security: Vec<super::security::Line>,
    /// An encrypted layer stayed closed: nothing of the content is shown.
    pub closed: bool,
}

impl MessageView {
    /// The page of a loaded message; with `remote`, its remote content allowed; with `want_text`,
    /// its text alternative shown rather than its HTML. Blocking (it rewrites the body to count
    /// what it blocks, and reads the thread).
    pub(crate) fn build(view: &View, loaded: &Loaded, remote: bool, want_text: bool) -> MessageView {
        let msg = loaded.message();
        let key = &loaded.entry.key;
        let self_url = route::message_url(key);
        let has_html = msg.html_body.is_some();
        let has_text = msg.text_body.is_some();
        let view_text = has_text && (want_text || !has_html);
        let remote_q = if remote { "?remote=1" } else { "" };
        let (html_src, blocked) = match msg.html_body {
            Some(idx) if !view_text => {
                (Some(format!("{}{remote_q}", route::part_url(key, msg, idx))), blocked_count(view, loaded, idx))
            }
            // A body that is an image: the frame opens it, and the browser shows it by itself.
            _ => (msg.image_body.map(|i| route::part_url(key, msg, i)), 0),
        };
        let text_html = if view_text { msg.text_body.map(|i| text_of(msg, i, false)) } else { None };
        let now = super::now();
        let externals = msg.parts.iter().filter_map(|p| Some(external_row(p, p.external.as_ref()?, now))).collect();
        let duplicates = view
            .duplicates(loaded.id, &loaded.entry)
            .iter()
            .map(|e| Link {
                url: route::message_url(&view.key_of(e)),
                label: format!(
                    "{} ({})",
                    shown_subject(e.summary.subject.as_deref()),
                    short_date(e.summary.date().as_deref())
                ),
            })
            .collect();
        let (thread, prev_in_thread, next_in_thread) = thread_rows(view, loaded.id);
        let (newer, older) = view.neighbours(loaded.id);
        let security = view.security(loaded);
        let (flags, source, folder) = match &loaded.entry.location {
            Location::Top { flags, .. } => {
                let path = view.archive().index().folder_path(loaded.entry.folder).to_string();
                let folder = (!path.is_empty()).then(|| LabelLink { url: route::folder_url(&path), name: path });
                (flags.clone().filter(|f| !f.is_empty()), loaded.entry.location.display(), folder)
            }
            Location::Nested { .. } => (None, None, None),
        };
        MessageView {
            folder,
            labels: label_links(&loaded.entry.labels),
            subject: shown_subject(msg.summary.subject.as_deref()),
            from: msg.summary.from.clone(),
            to: msg.summary.to.clone(),
            cc: msg.summary.cc.clone(),
            date: msg.summary.date.as_deref().map(long_date),
            flags,
            source,
            headers: crate::parse::header_fields(msg),
            html_src,
            text_html,
            more: more_bodies(key, msg, remote_q),
            has_html,
            has_text,
            view_text,
            html_view_url: self_url.clone(),
            text_view_url: format!("{self_url}?view=text"),
            raw_url: route::raw_url(key),
            raw_download_url: format!("{}?download=1", route::raw_url(key)),
            remote_url: format!("{self_url}?remote=1"),
            self_url,
            remote,
            blocked,
            damaged: msg.parts.iter().any(|p| p.damaged),
            truncated: msg.truncated,
            max_parts: crate::limits::MAX_PARTS,
            notices: crate::view::format::notices(msg),
            attachments: attachments(key, msg),
            externals,
            nested: msg.nested().map(|(_, m)| nested(view, m)).collect(),
            parts: part_rows(key, msg),
            duplicates,
            thread,
            conversation_url: route::thread_url(key),
            prev_in_thread,
            next_in_thread,
            newer: newer.map(|e| route::message_url(&view.key_of(&e))),
            older: older.map(|e| route::message_url(&view.key_of(&e))),
            frame_class: frame_class(msg),
            closed: security.closed(),
            security: security.summary(),
        }
    }
}

/// The files a reader would call attachments, with links to open and download each. The message
/// is addressed by `key`.
pub(crate) fn attachments(key: &str, msg: &Message) -> Vec<Attachment> {
    msg.attachment_indices()
        // Enclosed messages are shown in full below the body, not listed.
        .filter(|&i| !matches!(msg.parts[i].body, Body::Message(_)))
        .map(|i| {
            let p = &msg.parts[i];
            let url = route::part_url(key, msg, i);
            let content_type = served_type(p);
            let readable = matches!(extract::recognise(p), Some(extract::Recognised::Readable(_)));
            Attachment {
                name: part_filename(p),
                thumb_url: thumb::is_thumbnailable(&content_type).then(|| route::thumb_url(key, msg, i)),
                text_url: readable.then(|| format!("{url}?text=1")),
                content_type,
                size: human_size(p.size() as u64),
                download_url: format!("{url}?download=1"),
                open_url: url,
            }
        })
        .collect()
}

/// A text part rendered for the page (empty for a part that is not text); with `fold`, each
/// quoted passage folded away behind a “Quoted text” switch.
pub(crate) fn text_of(msg: &Message, idx: PartIdx, fold: bool) -> String {
    text::render_part(msg, idx, fold).unwrap_or_default()
}

/// The starting height of the frame for a message's HTML body, guessed from it.
pub(crate) fn frame_class(msg: &Message) -> &'static str {
    let html = msg.html_body.and_then(|i| match &msg.parts[i].body {
        Body::Text(t) => Some(t.as_str()),
        _ => None,
    });
    html.map_or(frame::FrameHeight::Tall, frame::estimate).class()
}

/// Every part, for the table at the foot of the page.
fn part_rows(key: &str, msg: &Message) -> Vec<PartRow> {
    msg.parts
        .iter()
        .enumerate()
        .map(|(i, p)| PartRow {
            section: format!("{}{}", "  ".repeat(p.section.matches('.').count()), p.section),
            content_type: p.content_type.clone(),
            label: p
                .filename
                .clone()
                .or_else(|| p.reference_id().map(|c| format!("<{c}>")))
                .or_else(|| p.content_location.clone())
                .unwrap_or_default(),
            size: if p.is_multipart() || p.external.is_some() { String::new() } else { human_size(p.size() as u64) },
            url: Some(route::part_url(key, msg, i)),
        })
        .collect()
}

/// An external body for the page. Only `http`, `https` and `ftp` URLs become links, a mail server
/// a `mailto:` link; a local file, a TFTP site or anything else is text. Nothing is loaded.
fn external_row(part: &Part, e: &External, now: i64) -> ExternalRow {
    let access = match e.access_type.as_deref() {
        Some("url") => "URL".to_string(),
        Some("anon-ftp") => "anonymous FTP".into(),
        Some("ftp") => "FTP (with a login)".into(),
        Some("tftp") => "TFTP".into(),
        Some("local-file") => "a file on another machine".into(),
        Some("mail-server") => "by mail, on request".into(),
        Some(other) => format!("unknown access type \u{201c}{other}\u{201d}"),
        None => "no access type given".into(),
    };
    let place = match (e.access_type.as_deref(), &e.url) {
        (Some("local-file"), _) => match (&e.name, &e.site) {
            (Some(n), Some(s)) => format!("{n} on {s}"),
            (Some(n), None) => n.clone(),
            (None, Some(s)) => format!("a file on {s}"),
            (None, None) => "a file it does not name".into(),
        },
        (Some("mail-server"), _) => match (&e.server, &e.subject) {
            (Some(s), Some(subject)) => format!("{s}, subject \u{201c}{subject}\u{201d}"),
            (Some(s), None) => s.clone(),
            (None, _) => "a server it does not name".into(),
        },
        (_, Some(url)) => url.clone(),
        (Some("url"), None) => "no URL given".into(),
        (Some("anon-ftp" | "ftp" | "tftp"), None) => "no usable site and file name given".into(),
        (Some(_), None) => "not a way mailshelf knows to name a place".into(),
        (None, None) => "it does not say where the data is".into(),
    };
    let from_url = e.url.as_deref().and_then(|u| {
        let url = url::Url::parse(u).ok()?;
        url.path_segments()?.rfind(|s| !s.is_empty()).map(crate::ids::decode_percent)
    });
    let label = e
        .description
        .clone()
        .or_else(|| e.name.clone())
        .or(from_url)
        .or_else(|| e.subject.clone())
        .or_else(|| e.content_id.as_ref().map(|c| format!("<{c}>")))
        .unwrap_or_else(|| format!("Part {}", part.section));
    ExternalRow {
        label,
        content_type: e.content_type.clone().unwrap_or_else(|| "type not given".into()),
        size: e.size.map(human_size),
        expiration: e.expiration.clone(),
        expired: e.is_expired(now),
        access,
        link: e.link.clone(),
        place,
        mailto: match e.access_type.as_deref() {
            Some("mail-server") => {
                e.server.as_deref().and_then(|s| mailto(s, e.subject.as_deref(), e.request.as_deref()))
            }
            _ => None,
        },
        request: e.request.clone(),
    }
}

/// `mailto:` (RFC 6068) for a plain address, with the subject and body the request needs; `None`
/// for anything that is not a plain address.
fn mailto(server: &str, subject: Option<&str>, body: Option<&str>) -> Option<String> {
    let (local, domain) = server.split_once('@')?;
    let local_ok =
        !local.is_empty() && local.chars().all(|c| c.is_ascii_alphanumeric() || "!$'*+-=^_`{|}~.".contains(c));
    let domain_ok = !domain.is_empty() && domain.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'));
    if !(local_ok && domain_ok) {
        return None;
    }
    // Everything but RFC 3986's unreserved characters is encoded (RFC 6068 §2).
    const FIELD: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');
    let enc = |s: &str| percent_encoding::utf8_percent_encode(s, FIELD).to_string();
    let fields: Vec<String> = [("subject", subject), ("body", body)]
        .into_iter()
        .filter_map(|(k, v)| Some(format!("{k}={}", enc(v?))))
        .collect();
    Some(if fields.is_empty() { format!("mailto:{server}") } else { format!("mailto:{server}?{}", fields.join("&")) })
}

/// The message's thread (none for a message alone in it), and the messages before and after it
/// in reading order.
fn thread_rows(view: &View, id: EntryId) -> (Vec<ThreadRow>, Option<String>, Option<String>) {
    let thread = view.thread(id);
    if thread.len() < 2 {
        return (Vec::new(), None, None);
    }
    let pos = thread.iter().position(|t| t.id == id);
    let url_at = |i: usize| thread.get(i).map(|t| route::message_url(&view.key_of(&t.entry)));
    let prev = pos.and_then(|p| p.checked_sub(1)).and_then(url_at);
    let next = pos.and_then(|p| url_at(p + 1));
    let rows = thread
        .iter()
        .map(|t| ThreadRow {
            indent: t.depth.min(MAX_DEPTH),
            subject: shown_subject(t.entry.summary.subject.as_deref()),
            from: t.entry.summary.from.clone().unwrap_or_default(),
            date: short_date(t.entry.summary.date().as_deref()),
            url: route::message_url(&view.key_of(&t.entry)),
            current: t.id == id,
        })
        .collect();
    (rows, prev, next)
}

/// How many remote resources the body and the stylesheets of its message would load. The rewrites
/// are kept, so the body's frame and its stylesheets then load without rewriting again.
fn blocked_count(view: &View, loaded: &Loaded, html: PartIdx) -> usize {
    let msg = loaded.message();
    let stylesheets =
        msg.parts.iter().enumerate().filter(|(_, p)| p.is_text() && p.is_type("text/css")).map(|(i, _)| i);
    std::iter::once(html).chain(stylesheets).map(|i| view.render(loaded, i, false).blocked).sum()
}

/// An enclosed message, shown inline: its headers and its body (from its own entry's URLs).
fn nested(view: &View, m: &Message) -> Nested {
    let key = view.enclosed_key(m);
    Nested {
        subject: shown_subject(m.summary.subject.as_deref()),
        from: m.summary.from.clone(),
        date: m.summary.date.as_deref().map(long_date),
        page_url: route::message_url(&key),
        html_src: m.html_body.or(m.image_body).map(|i| route::part_url(&key, m, i)),
        text_html: if m.html_body.is_none() { m.text_body.map(|i| text_of(m, i, false)) } else { None },
        frame_class: frame_class(m),
    }
}

#[cfg(test)]
mod tests;
