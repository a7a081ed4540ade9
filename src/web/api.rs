//! JSON for scripts: status, the message list, one message with its part tree, uploads and deletes.

use std::sync::atomic::Ordering;

use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use super::error::{wants_html, ApiError, PageError, Problem};
use super::extract::{flag, Ids, Params};
use super::gate::Viewer;
use super::seals::{part_role, PartRole, SecurityInfo};
use super::state::AppState;
use crate::archive::Loaded;
use crate::error::Error;
use crate::ids::encode_segment;
use crate::index::folders::FolderNode;
use crate::index::labels::LabelNode;
use crate::index::{Entry, Location};
use crate::model::{Body, External, Message, PartIdx};
use crate::route;
use crate::view::browse::Scope;
use crate::view::security::Security;
use crate::view::stats::Stats;
use crate::view::{blocking, now, Found, View};

#[derive(Debug, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub(crate) struct Status {
    /// True once what `ready_means` names holds: a load balancer may send users here. Without
    /// credentials on a server with accounts, the only field.
    pub ready: bool,
    /// `indexed`: every given path is indexed (a data folder's server, or the replica that
    /// indexes from its start); `loaded`: this replica follows another's indexing, and has loaded
    /// what the shared database held when it started.
    #[serde(default)]
    pub ready_means: String,
    /// Messages in the list.
    #[serde(default)]
    pub messages: usize,
    /// Files looked at so far.
    #[serde(default)]
    pub indexed: usize,
    /// Files found so far.
    #[serde(default)]
    pub total: usize,
    /// True while this server reads the given paths (at start, or after a change under them).
    #[serde(default)]
    pub indexing: bool,
    /// Where the index lives: `embedded` (the data folder) or `postgresql` (a shared database).
    #[serde(default)]
    pub backend: String,
    /// Whether this server indexes the given paths (with a shared database, exactly one replica
    /// does: the holder of the indexer lock).
    #[serde(default)]
    pub indexer: bool,
    /// With a shared database: whether it answered this replica lately (`null` without one).
    /// While it does not, every other route answers 503 with `Retry-After`.
    #[serde(default)]
    pub database_reachable: Option<bool>,
}

/// Indexing progress and the number of messages. Without credentials on a server with accounts,
/// only `{"ready": …}`; to a reader limited to some folders, the messages they may read, and no
/// count of the archive's files.
#[utoipa::path(get, path = "/api/status", tag = "status",
    responses((status = 200, description = "Progress of indexing", body = Status)))]
pub(crate) async fn status(State(state): State<AppState>, req: axum::extract::Request) -> Response {
    let p = &state.archive().progress;
    let ready = p.ready.load(Ordering::Acquire);
    let Some(reader) = req.extensions().get::<crate::auth::Reader>() else {
        return Json(serde_json::json!({ "ready": ready })).into_response();
    };
    let view = state.view_for(&reader.access);
    let whole = reader.access.is_everything();
    let files = |n: &std::sync::atomic::AtomicUsize| if whole { n.load(Ordering::Relaxed) } else { 0 };
    let backend = state.archive().backend();
    Json(Status {
        ready,
        ready_means: p.readiness().name().to_string(),
        messages: view.listed_count(),
        indexed: files(&p.indexed),
        total: files(&p.total),
        indexing: p.running.load(Ordering::Acquire),
        backend: backend.name.to_string(),
        indexer: state.archive().is_indexer(),
        database_reachable: backend.shared.then_some(backend.reachable),
    })
    .into_response()
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq, utoipa::ToSchema)]
pub(crate) struct MessageSummary {
    /// The message's path segment: `/message/<id>`, `/api/messages/<id>`.
    pub id: String,
    pub message_id: Option<String>,
    pub subject: Option<String>,
    pub from: Option<String>,
    pub date: Option<String>,
    /// The message's page.
    pub url: String,
    /// For a search: the best-matching text, HTML-escaped, matched words in `<mark>` (from the
    /// attachment the words are in when they are not in the message itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// For a search: the names of the attachments whose text matched (empty when only the message
    /// did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_in: Option<Vec<String>>,
}

impl MessageSummary {
    /// The summary of `e` as `view`'s reader knows it (its id: [`View::key_of`]).
    pub(crate) fn of(view: &View, e: &Entry) -> Self {
        let key = view.key_of(e);
        MessageSummary {
            id: encode_segment(&key),
            message_id: e.message_id().map(str::to_string),
            subject: e.summary.subject.clone(),
            from: e.summary.from.clone(),
            date: e.summary.date(),
            url: route::message_url(&key),
            snippet: None,
            matched_in: None,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub(crate) struct MessageList {
    /// Messages (or, with `threads=1`, conversations) in all.
    pub total: usize,
    /// The page of messages; empty with `threads=1`.
    pub messages: Vec<MessageSummary>,
    /// With `threads=1`: the page of conversations, newest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<Vec<ConversationSummary>>,
}

/// One conversation: the messages of one thread in the list asked for.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq, utoipa::ToSchema)]
pub(crate) struct ConversationSummary {
    /// Its first message (the oldest listed), whose subject names it and whose id opens it:
    /// `/thread/<id>`.
    pub first: MessageSummary,
    /// Its newest message.
    pub latest: MessageSummary,
    /// Messages in it.
    pub messages: usize,
    /// Who wrote them, in the order they first wrote (at most four).
    pub participants: Vec<String>,
    /// The conversation's page.
    pub url: String,
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// A search in mailshelf's query language (`from:` `to:` `cc:` `subject:` `body:`
    /// `filename:` `attachment:` `message-id:` `folder:` `label:` `list:` `has:attachment` `before:` `after:`
    /// `larger:` `smaller:`, quoted phrases, `word*` for words that start so, `-` negation, `OR`,
    /// parentheses, `field:(…)` for a field on every term inside); results best first. A query
    /// holding no word (`---`, `NOT`) is a 400.
    q: Option<String>,
    /// Only the messages filed in this folder itself (`/`-separated path, as `/api/folders` gives
    /// it); with `q`, the folder and those below it.
    folder: Option<String>,
    /// Only the messages carrying this label (case does not matter).
    label: Option<String>,
    /// `1`: one entry per conversation, newest first (ignored with `q`).
    threads: Option<String>,
    /// Messages (or conversations) to skip. With `q`, `offset + limit` may be at most 10,000
    /// (a 400 past that: narrow the search to see further).
    offset: Option<usize>,
    /// Messages (or conversations) to return, at most 1000 (default 50; more is taken as 1000).
    limit: Option<usize>,
}

/// The messages given to mailshelf, newest first, or those matching a search, best first; of
/// one folder or label; one by one or grouped into conversations.
#[utoipa::path(get, path = "/api/messages", tag = "messages", params(ListQuery),
    responses(
        (status = 200, description = "A page of the list or of the results", body = MessageList),
        (status = 400, description = "A query that does not parse or holds no word, or a page of results past the 10,000th", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn list_messages(
    Viewer(view, _): Viewer,
    Params(q, _): Params<ListQuery>,
) -> Result<Json<MessageList>, ApiError> {
    let limit = q.limit.unwrap_or(50).min(crate::limits::MAX_PAGE);
    let offset = q.offset.unwrap_or(0);
    let scope = Scope::named(q.folder, q.label);
    match q.q.filter(|s| !s.trim().is_empty()) {
        None if flag(&q.threads) => {
            // The summaries too: a reader's ids may ask the index (a database, when shared).
            let (threads, total) = blocking(move || {
                let (page, total) = view.conversations(&scope, offset, limit);
                let threads = page
                    .into_iter()
                    .map(|c| ConversationSummary {
                        url: route::thread_url(&c.key),
                        first: MessageSummary::of(&view, &c.first),
                        latest: MessageSummary::of(&view, &c.latest),
                        messages: c.count,
                        participants: c.participants,
                    })
                    .collect();
                Ok((threads, total))
            })
            .await?;
            Ok(Json(MessageList { total, messages: Vec::new(), threads: Some(threads) }))
        }
        None => {
            let (messages, total) = blocking(move || {
                let (page, total) = view.page(&scope, offset, limit);
                Ok((page.into_iter().map(|(_, e)| MessageSummary::of(&view, &e)).collect(), total))
            })
            .await?;
            Ok(Json(MessageList { total, messages, threads: None }))
        }
        Some(query) => {
            let query = scope.restrict(&query);
            let (messages, total) = blocking(move || {
                let Found { total, hits } = view.search(&query, offset, limit)?;
                let messages = hits
                    .into_iter()
                    .map(|h| MessageSummary {
                        snippet: h.snippet,
                        matched_in: Some(h.matched_in),
                        ..MessageSummary::of(&view, &h.entry)
                    })
                    .collect();
                Ok((messages, total))
            })
            .await?;
            Ok(Json(MessageList { total, messages, threads: None }))
        }
    }
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub(crate) struct FolderList {
    /// Each PATH's folders (the trees of several PATHs merge where their paths meet), then `Uploads`.
    pub folders: Vec<FolderNode>,
    /// Messages found at the top of a PATH, in no folder (a file given on its own, the files
    /// directly in a folder given).
    pub top: usize,
}

/// The folder tree: folders, Maildir and Maildir++ folders, Thunderbird and Apple Mail mailboxes,
/// each mbox file, and `Uploads`, with how many messages each holds itself.
#[utoipa::path(get, path = "/api/folders", tag = "messages",
    responses((status = 200, description = "The folder tree", body = FolderList)))]
pub(crate) async fn folders(Viewer(view, _): Viewer) -> Json<FolderList> {
    let (folders, top) = view.folder_tree();
    Json(FolderList { folders, top })
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub(crate) struct LabelList {
    /// Every label carried, each once (spellings that differ only by case are one label), by name.
    pub labels: Vec<LabelCount>,
    /// The same labels as a tree, as Gmail shows nested labels: `Parent/Child` below `Parent`
    /// (which is in the tree even when no message carries it itself).
    pub tree: Vec<LabelNode>,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub(crate) struct LabelCount {
    /// The whole label, `Parent/Child` for a nested one.
    pub name: String,
    /// Messages carrying this label itself.
    pub messages: usize,
}

/// Every label (Gmail's `X-Gmail-Labels`, `Keywords`, mutt's `X-Label`, Thunderbird tags, Maildir
/// keywords) with how many messages carry it, by name; and the same labels as a tree, each with
/// how many messages carry it or a label below it (what `label:` and `/label/<name>` find).
#[utoipa::path(get, path = "/api/labels", tag = "messages",
    responses((status = 200, description = "The labels", body = LabelList)))]
pub(crate) async fn labels(Viewer(view, _): Viewer) -> Result<Json<LabelList>, ApiError> {
    let (labels, tree) = blocking(move || Ok((view.labels(), view.label_tree()))).await?;
    let labels = labels.into_iter().map(|(name, messages)| LabelCount { name, messages }).collect();
    Ok(Json(LabelList { labels, tree }))
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct StatsQuery {
    /// Count only the messages matching this search.
    q: Option<String>,
    /// Count only this folder's own messages.
    folder: Option<String>,
    /// Count only the messages carrying this label.
    label: Option<String>,
}

/// What is in the archive (or a folder, a label, a search): messages per month, top senders and
/// lists, attachment types and sizes. The numbers the overview page draws.
#[utoipa::path(get, path = "/api/stats", tag = "messages", params(StatsQuery),
    responses(
        (status = 200, description = "The counts", body = Stats),
        (status = 400, description = "A query that does not parse", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn stats(Viewer(view, _): Viewer, Params(q, _): Params<StatsQuery>) -> Result<Json<Stats>, ApiError> {
    let scope = Scope::named(q.folder, q.label);
    let query = q.q.unwrap_or_default();
    let counted = blocking(move || view.stats(&scope, &query)).await?;
    Ok(Json(counted.as_ref().clone()))
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub(crate) struct PartNode {
    /// The type the message declares (`text/plain` when it declares none, as RFC 2045 says).
    pub content_type: String,
    /// The media type `url` answers with (its parameters aside): `content_type`, or for a part
    /// declared `application/octet-stream` (or without a type) the one its file name or location
    /// says (`report.pdf`: `application/pdf`).
    #[serde(default)]
    pub served_type: String,
    pub content_id: Option<String>,
    pub content_location: Option<String>,
    pub filename: Option<String>,
    pub disposition: Option<String>,
    /// Decoded size in bytes.
    pub size: usize,
    pub url: String,
    /// For a `message/rfc822` part: the message it encloses, whose part tree is this node's `parts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<EnclosedMessage>,
    #[schema(no_recursion)]
    pub parts: Vec<PartNode>,
    /// Only on a `message/external-body` part: where its data lives. `url` then answers `303` to
    /// an http or https URL, else `404`; mailshelf never fetches the data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalBody>,
    /// Only on the machinery of a signed or encrypted layer, which is no attachment: `signature`
    /// (a `smime.p7s` or `signature.asc`, checked in the message's `security`), `signed` (S/MIME
    /// signed-data whose content is this node's `parts`), `encrypted` (encrypted data, whose
    /// content, once decrypted with a key given, is this node's `parts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<PartRole>,
}

/// Where the data of a `message/external-body` part lives (RFC 2046 §5.2.3, RFC 2017), with what
/// the message gives; absent fields were not given (or, for `url`, could not be formed).
#[derive(Debug, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub(crate) struct ExternalBody {
    /// `url`, `anon-ftp`, `ftp`, `tftp`, `local-file`, `mail-server`, or another value as written,
    /// lower case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_type: Option<String>,
    /// For `url`: the URL, its quotes and white space removed (RFC 2017 §3.1). For `anon-ftp`,
    /// `ftp` and `tftp`: the URL they stand for (`ftp://site/directory/name`, `tftp://site/name`).
    /// Any scheme may appear here; only `http`, `https` and `ftp` are ever linked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The data's Content-Type, from the phantom header, `type/subtype` in lower case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The data's Content-ID, from the phantom header, without angle brackets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_id: Option<String>,
    /// The Content-Description of the phantom header, else of the part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// For `mail-server`: the address to mail a request to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// For `mail-server`: the subject that request should carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// As written: an RFC 822 date after which the data may be gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration: Option<String>,
    /// `true` once `expiration` has passed (absent before, or without a readable date).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
    /// The data's size in octets, as the message states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// `read` or `read-write`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<String>,
}

impl ExternalBody {
    fn of(e: &External, now: i64) -> Self {
        ExternalBody {
            access_type: e.access_type.clone(),
            url: e.url.clone(),
            content_type: e.content_type.clone(),
            content_id: e.content_id.clone(),
            description: e.description.clone(),
            name: e.name.clone(),
            site: e.site.clone(),
            directory: e.directory.clone(),
            mode: e.mode.clone(),
            server: e.server.clone(),
            subject: e.subject.clone(),
            expiration: e.expiration.clone(),
            expired: e.is_expired(now),
            size: e.size,
            permission: e.permission.clone(),
        }
    }
}

/// A message enclosed in a part, with its own page and API URL.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub(crate) struct EnclosedMessage {
    /// Its path segment: `/message/<id>`, `/api/messages/<id>`.
    pub id: String,
    pub message_id: Option<String>,
    pub url: String,
    pub api_url: String,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub(crate) struct MessageDetail {
    #[serde(flatten)]
    pub summary: MessageSummary,
    pub to: Option<String>,
    pub cc: Option<String>,
    pub in_reply_to: Vec<String>,
    pub references: Vec<String>,
    /// The file it came from, relative to the PATH given (null for enclosed messages).
    pub source: Option<String>,
    pub uploaded: bool,
    pub html_url: Option<String>,
    pub text_url: Option<String>,
    /// With neither an HTML nor a text body: the image that is the body (a saved page whose root
    /// part is an image), which the message page shows by itself, as a browser shows an image.
    pub image_url: Option<String>,
    /// The other inline texts of a `multipart/mixed` (a list's footer, a text written after an
    /// attachment), which the message page shows after the body, in order.
    pub more_urls: Vec<String>,
    pub raw_url: String,
    /// The flags kept for the message, as Maildir letters: from a Maildir file name, the property
    /// list of an Apple Mail `.emlx`, an mbox message's status fields (`X-Mozilla-Status`,
    /// `Status`, `X-Status`), MH's sequences, Babyl's attributes or Dovecot's index of a dbox
    /// store (null for enclosed messages and where none are kept).
    pub flags: Option<String>,
    /// What could not be read of a damaged file in another format (an `.emlx`, a `.webarchive`).
    pub notices: Vec<String>,
    pub parts: Vec<PartNode>,
    /// The thread in reading order (the message itself included), each with its reply depth.
    pub thread: Vec<ThreadItem>,
    /// Its signatures, checked now against the trust given (`--trust`), and its encryption.
    pub security: SecurityInfo,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub(crate) struct ThreadItem {
    pub depth: usize,
    #[serde(flatten)]
    pub message: MessageSummary,
}

/// A part and everything under it, down through enclosed messages (as IMAP's BODYSTRUCTURE does),
/// so every leaf of every enclosed message is reachable from the top-level message's tree.
fn part_node(view: &View, key: &str, msg: &Message, idx: PartIdx, now: i64) -> PartNode {
    let p = &msg.parts[idx];
    let (message, parts) = match &p.body {
        Body::Message(inner) => {
            let inner_key = view.enclosed_key(inner);
            let id = encode_segment(&inner_key);
            let enclosed = EnclosedMessage {
                message_id: inner.message_id.clone(),
                url: route::message_url(&inner_key),
                api_url: format!("/api/messages/{id}"),
                id,
            };
            let parts =
                if inner.parts.is_empty() { Vec::new() } else { vec![part_node(view, &inner_key, inner, 0, now)] };
            (Some(enclosed), parts)
        }
        _ => (None, p.children.iter().map(|&c| part_node(view, key, msg, c, now)).collect()),
    };
    PartNode {
        content_type: p.content_type.clone(),
        served_type: crate::view::answered_type(p),
        content_id: p.content_id.clone(),
        content_location: p.content_location.clone(),
        filename: p.filename.clone(),
        disposition: p.disposition.clone(),
        size: p.size(),
        url: route::part_url(key, msg, idx),
        message,
        parts,
        external: p.external.as_ref().map(|e| ExternalBody::of(e, now)),
        role: part_role(msg, idx),
    }
}

/// A message's JSON; `security` is what [`View::security_of`] found of it.
pub(crate) fn detail(view: &View, loaded: &Loaded, security: &Security) -> MessageDetail {
    let msg = loaded.message();
    let e = &loaded.entry;
    let key = &*view.key_of(e);
    let (source, uploaded, flags) = match &e.location {
        Location::Top { uploaded, flags, .. } => (e.location.display(), *uploaded, flags.clone()),
        Location::Nested { .. } => (None, false, None),
    };
    MessageDetail {
        summary: MessageSummary::of(view, e),
        to: msg.summary.to.clone(),
        cc: msg.summary.cc.clone(),
        in_reply_to: msg.summary.in_reply_to.clone(),
        references: msg.summary.references.clone(),
        source,
        uploaded,
        html_url: msg.html_body.map(|i| route::part_url(key, msg, i)),
        text_url: msg.text_body.map(|i| route::part_url(key, msg, i)),
        image_url: msg.image_body.map(|i| route::part_url(key, msg, i)),
        more_urls: msg.more_bodies.iter().map(|&i| route::part_url(key, msg, i)).collect(),
        raw_url: route::raw_url(key),
        flags: flags.filter(|f| !f.is_empty()),
        notices: crate::view::format::notices(msg),
        parts: if msg.parts.is_empty() { Vec::new() } else { vec![part_node(view, key, msg, 0, now())] },
        thread: view
            .thread(loaded.id)
            .into_iter()
            .map(|t| ThreadItem { depth: t.depth, message: MessageSummary::of(view, &t.entry) })
            .collect(),
        security: SecurityInfo::of(security),
    }
}

/// One message: its headers, its part tree, its thread, and what its signatures and encryption
/// come to (checked when asked, against `--trust`; decrypted with `--key`, in memory only).
#[utoipa::path(get, path = "/api/messages/{id}", tag = "messages",
    params(("id" = String, Path, description = "The message id (an RFC 2392 url-addr-spec, percent-encoded)")),
    responses(
        (status = 200, description = "The message", body = MessageDetail),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such message", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn get_message(
    Viewer(view, _): Viewer,
    Ids(id, _): Ids<String>,
) -> Result<Json<MessageDetail>, ApiError> {
    let loaded = view.load(&id).await?;
    let security = view.security_of(&loaded).await?;
    Ok(Json(detail(&view, &loaded, &security)))
}

/// Upload: one raw message (`Content-Type: message/rfc822`) or a multipart form of files (messages
/// or mbox files). Answers 201 with the messages' JSON once they are on disk. A request that asks
/// for HTML (`Accept: text/html`, as a browser submitting the list page's form does) is answered
/// as a form should be: `303 See Other` to the message's page when the upload held one message,
/// else to the `Uploads` folder's list; errors as an HTML page.
#[utoipa::path(post, path = "/api/messages", tag = "messages",
    request_body(content(
        (Vec<u8> = "message/rfc822"),
        (Vec<u8> = "multipart/form-data"),
    ), description = "A message, an mbox, or a form of files"),
    params(("accept" = Option<String>, Header, description = "`text/html` (a browser's form): answer with a redirect or an error page")),
    responses(
        (status = 201, description = "Stored and indexed; Location names the first", body = Vec<MessageDetail>,
            headers(("location" = String, description = "The first message's API URL"))),
        (status = 303, description = "With `Accept: text/html`: stored; Location is the message's page (one message) or the Uploads folder",
            headers(("location" = String, description = "Where the browser goes next"))),
        (status = 400, description = "Unreadable upload, or a form with no file chosen", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Sent by a page of another site", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Larger than --max-upload", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a message", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn upload(State(state): State<AppState>, Viewer(view, reader): Viewer, req: Request) -> Response {
    let html = wants_html(req.headers());
    // Only admins get here (the gate); one who could not read the upload is told so before it is
    // kept.
    let received = if reader.may_upload() {
        receive(&state, req, view.access().clone()).await
    } else {
        Err(Error::UploadsOutOfReach)
    };
    match received {
        Ok(loaded) if html => {
            let to = match loaded.as_slice() {
                [one] => route::message_url(&view.key_of(&one.entry)),
                // Several: the folder they were filed in, which lists them all.
                _ => route::folder_url(crate::index::folders::UPLOADS),
            };
            match HeaderValue::from_str(&to) {
                Ok(location) => (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response(),
                Err(e) => PageError(Error::internal("redirect after upload", e)).into_response(),
            }
        }
        Ok(loaded) => {
            let mut body: Vec<MessageDetail> = Vec::with_capacity(loaded.len());
            for l in &loaded {
                let security = match view.security_of(l).await {
                    Ok(s) => s,
                    Err(e) => return ApiError(e).into_response(),
                };
                body.push(detail(&view, l, &security));
            }
            let mut res = (StatusCode::CREATED, Json(&body)).into_response();
            if let Some(first) = body.first() {
                if let Ok(v) = HeaderValue::from_str(&format!("/api/messages/{}", first.summary.id)) {
                    res.headers_mut().insert(header::LOCATION, v);
                }
            }
            res
        }
        Err(e) if html => PageError(e).into_response(),
        Err(e) => ApiError(e).into_response(),
    }
}

/// Reads the upload and stores every message in it. In a form, a file input left empty is no
/// file, and a form with no file at all is a mistake worth saying (from the page or from a script
/// alike).
async fn receive(state: &AppState, req: Request, uploader: crate::index::Access) -> Result<Vec<Loaded>, Error> {
    let limit = state.config.max_upload;
    let ct = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    let mut files: Vec<(Option<String>, Vec<u8>)> = Vec::new();
    if ct.starts_with("multipart/form-data") {
        let mut multipart = Multipart::from_request(req, state)
            .await
            .map_err(|e| Error::BadRequest(format!("unreadable form: {}", e.body_text())))?;
        loop {
            match multipart.next_field().await {
                Ok(Some(field)) => {
                    let name = field.file_name().map(str::to_string);
                    let unchosen = name.as_deref() == Some("");
                    let bytes = field.bytes().await.map_err(|e| too_large_or_bad(e.status(), e.body_text()))?;
                    if !(unchosen && bytes.is_empty()) {
                        files.push((name, bytes.to_vec()));
                    }
                }
                Ok(None) => break,
                Err(e) => return Err(too_large_or_bad(e.status(), e.body_text())),
            }
        }
        if files.is_empty() {
            return Err(Error::BadRequest("no file was chosen: pick one or more messages to upload".into()));
        }
    } else {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| too_large_or_bad(e.status(), e.body_text()))?;
        files.push((None, bytes.to_vec()));
    }
    if files.iter().map(|(_, f)| f.len()).sum::<usize>() > limit {
        return Err(Error::TooLarge);
    }
    let (archive, view) = (state.archive().clone(), state.unscoped().clone());
    blocking(move || {
        let mut out = Vec::new();
        for (name, f) in files {
            // As a page would show them: encrypted layers opened with the keys given.
            out.extend(archive.store_upload(f, name.as_deref(), &uploader)?.into_iter().map(|l| view.opened(l)));
        }
        Ok(out)
    })
    .await
}

fn too_large_or_bad(status: StatusCode, text: String) -> Error {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        Error::TooLarge
    } else {
        Error::BadRequest(format!("unreadable upload: {text}"))
    }
}

/// Delete an uploaded message; mounted messages are read-only (405).
#[utoipa::path(delete, path = "/api/messages/{id}", tag = "messages",
    params(("id" = String, Path, description = "The message id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such message", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Sent by a page of another site", body = Problem, content_type = "application/problem+json"),
        (status = 405, description = "A mounted message: read-only", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn delete_message(Viewer(view, _): Viewer, Ids(id, _): Ids<String>) -> Result<StatusCode, ApiError> {
    blocking(move || {
        let entry = view.find(&id).ok_or(Error::MessageNotFound)?;
        view.archive().delete_upload(entry)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
