//! The list pages as a reader sees them, free of HTTP: one row per message (or per conversation),
//! the folder tree and labels beside them, the pager, and the links to the other views of the same
//! scope (messages, conversations, overview, exports).

use super::browse::{Conversation, Scope};
use super::format::{human_size, query_value, shown_subject};
use super::{Found, View};
use crate::dates::short_date;
use crate::error::Error;
use crate::index::folders::FolderNode;
use crate::index::labels::LabelNode;
use crate::index::{Entry, Location};
use crate::route;

/// Messages (or conversations) per list page.
pub(crate) const PAGE_SIZE: usize = 50;

/// Folders the list page shows beside the list; a larger tree is whole in `/api/folders`.
const SIDEBAR_FOLDERS: usize = 2000;

/// Labels the list page shows, the most used (with the labels they are in); all are in `/api/labels`.
const SIDEBAR_LABELS: usize = 200;

/// Deepest indentation of a folder or label in the sidebar.
const MAX_DEPTH: usize = 12;

/// One message of a list.
pub(crate) struct Row {
    pub url: String,
    /// The search's highlighted excerpt (HTML, escaped but for the marks).
    pub snippet: Option<String>,
    /// For a search: the attachments whose text matched ("order.pdf, terms.docx").
    pub matched_in: Option<String>,
    pub subject: String,
    pub from: String,
    pub date: String,
    pub size: String,
    pub attachment: bool,
    /// Maildir flags.
    pub flags: String,
    pub labels: Vec<LabelLink>,
}

/// One conversation of a list grouped into conversations.
pub(crate) struct ConversationRow {
    pub url: String,
    pub subject: String,
    pub participants: String,
    pub count: usize,
    /// Its newest message's date.
    pub date: String,
    pub attachment: bool,
}

/// A label or folder, and its list.
pub(crate) struct LabelLink {
    pub name: String,
    pub url: String,
}

/// The folder tree and labels beside the list, the one being shown marked.
pub(crate) struct Sidebar {
    /// Messages in all.
    pub all: usize,
    pub all_current: bool,
    /// The tree flattened, each folder after its parent.
    pub folders: Vec<FolderRow>,
    pub labels: Vec<LabelRow>,
}

pub(crate) struct FolderRow {
    pub name: String,
    pub path: String,
    pub url: String,
    /// Its own messages (not its subfolders').
    pub count: usize,
    pub depth: usize,
    pub current: bool,
}

/// A label in the sidebar's label tree.
pub(crate) struct LabelRow {
    /// Its own name (the last of its path).
    pub name: String,
    /// The whole label, `Parent/Child`.
    pub label: String,
    pub url: String,
    /// Messages carrying it or a label below it: what its list shows.
    pub count: usize,
    pub depth: usize,
    pub current: bool,
}

/// A list page: the messages of a scope, newest first, or those matching a search, best first, or
/// the scope's conversations.
pub(crate) struct ListView {
    /// What is listed, when not everything: "Folder Archives/2017", "Label Work".
    pub heading: Option<String>,
    /// Why the search could not run, if it could not.
    pub query_error: Option<String>,
    pub rows: Vec<Row>,
    pub conversations: Vec<ConversationRow>,
    /// Grouped into conversations.
    pub threads: bool,
    pub messages_url: String,
    pub threads_url: String,
    pub overview_url: String,
    /// The scope's parameters for the export links (`&folder=…`), empty for the whole list.
    pub export_scope: String,
    pub sidebar: Sidebar,
    /// Messages (or conversations) in all, and the numbers of the first and last shown, from 1.
    pub total: usize,
    pub first: usize,
    pub last: usize,
    /// The pages before and after this one.
    pub prev: Option<String>,
    pub next: Option<String>,
}

impl ListView {
    /// Page `page` (from 1) of `scope`: its messages, or with a `query` those matching it, or with
    /// `threads` (and no query) its conversations. Blocking. A search that cannot run is a list
    /// that says why; other failures are errors.
    pub(crate) fn build(
        view: &View,
        scope: &Scope,
        query: &str,
        page: usize,
        threads: bool,
    ) -> Result<ListView, Error> {
        let page = page.max(1);
        let offset = (page - 1).saturating_mul(PAGE_SIZE);
        let threads = threads && query.trim().is_empty();
        let mut query_error = None;
        let (rows, conversations, total) = if threads {
            let (page, total) = view.conversations(scope, offset, PAGE_SIZE);
            (Vec::new(), page.iter().map(conversation_row).collect(), total)
        } else if query.trim().is_empty() {
            let (page, total) = view.page(scope, offset, PAGE_SIZE);
            (page.iter().map(|(_, e)| row(view, e, None, Vec::new())).collect(), Vec::new(), total)
        } else {
            match view.search(&scope.restrict(query), offset, PAGE_SIZE) {
                Ok(Found { total, hits }) => {
                    let rows = hits.into_iter().map(|h| row(view, &h.entry, h.snippet, h.matched_in)).collect();
                    (rows, Vec::new(), total)
                }
                Err(Error::BadQuery(why)) => {
                    query_error = Some(why);
                    (Vec::new(), Vec::new(), 0)
                }
                Err(e) => return Err(e),
            }
        };
        let shown = rows.len() + conversations.len();
        let base = list_url(scope);
        let mut params: Vec<String> = Vec::new();
        if !query.is_empty() {
            params.push(format!("q={}", query_value(query)));
        }
        if threads {
            params.push("threads=1".into());
        }
        let link = |p: usize| {
            let mut all = params.clone();
            all.push(format!("page={p}"));
            format!("{base}?{}", all.join("&"))
        };
        let overview_url = match scope {
            Scope::All => "/overview".to_string(),
            Scope::Folder(p) => format!("/overview?folder={}", query_value(p)),
            Scope::Label(l) => format!("/overview?label={}", query_value(l)),
        };
        let overview_url = if query.is_empty() {
            overview_url
        } else {
            let join = if overview_url.contains('?') { "&" } else { "?" };
            format!("{overview_url}{join}q={}", query_value(query))
        };
        Ok(ListView {
            heading: match scope {
                Scope::All => None,
                Scope::Folder(p) => Some(format!("Folder {p}")),
                Scope::Label(l) => Some(format!("Label {l}")),
            },
            query_error,
            rows,
            conversations,
            threads,
            threads_url: format!("{base}?threads=1"),
            overview_url,
            export_scope: match scope {
                Scope::All => String::new(),
                Scope::Folder(p) => format!("&folder={}", query_value(p)),
                Scope::Label(l) => format!("&label={}", query_value(l)),
            },
            sidebar: sidebar(view, scope),
            total,
            first: if shown == 0 { 0 } else { offset + 1 },
            last: offset + shown,
            prev: (page > 1).then(|| link(page - 1)),
            next: (offset + shown < total).then(|| link(page + 1)),
            messages_url: base,
        })
    }
}

/// Where a scope's list lives.
pub(crate) fn list_url(scope: &Scope) -> String {
    match scope {
        Scope::All => "/".into(),
        Scope::Folder(p) => route::folder_url(p),
        Scope::Label(l) => route::label_url(l),
    }
}

/// Links to the lists of these labels.
pub(crate) fn label_links(labels: &[String]) -> Vec<LabelLink> {
    labels.iter().map(|l| LabelLink { name: l.clone(), url: route::label_url(l) }).collect()
}

fn row(view: &View, e: &Entry, snippet: Option<String>, matched_in: Vec<String>) -> Row {
    Row {
        url: route::message_url(&view.key_of(e)),
        snippet,
        matched_in: (!matched_in.is_empty()).then(|| matched_in.join(", ")),
        subject: shown_subject(e.summary.subject.as_deref()),
        from: e.summary.from.clone().unwrap_or_default(),
        date: short_date(e.summary.date().as_deref()),
        size: human_size(e.size),
        attachment: e.has_attachments,
        flags: match &e.location {
            Location::Top { flags: Some(f), .. } => f.clone(),
            _ => String::new(),
        },
        labels: label_links(&e.labels),
    }
}

fn conversation_row(c: &Conversation) -> ConversationRow {
    ConversationRow {
        url: route::thread_url(&c.key),
        subject: shown_subject(c.first.summary.subject.as_deref()),
        participants: c.participants.join(", "),
        count: c.count,
        date: short_date(c.latest.summary.date().as_deref()),
        attachment: c.first.has_attachments || c.latest.has_attachments,
    }
}

/// The folder tree (flattened, each row with its depth) and the labels, the shown one marked.
fn sidebar(view: &View, scope: &Scope) -> Sidebar {
    // The reader's folders and labels only (see `View::folder_tree`).
    let (tree, _) = view.folder_tree();
    let mut folders = Vec::new();
    let mut stack: Vec<(usize, &FolderNode)> = tree.iter().rev().map(|f| (0, f)).collect();
    while let Some((depth, f)) = stack.pop() {
        if folders.len() >= SIDEBAR_FOLDERS {
            break;
        }
        folders.push(FolderRow {
            name: f.name.clone(),
            path: f.path.clone(),
            url: route::folder_url(&f.path),
            count: f.messages,
            depth: depth.min(MAX_DEPTH),
            current: matches!(scope, Scope::Folder(p) if p.trim_matches('/') == f.path),
        });
        stack.extend(f.folders.iter().rev().map(|c| (depth + 1, c)));
    }
    let tree = view.label_tree();
    // The most used labels when there are too many: a label's total is at least that of any label
    // below it, so the labels above a kept one are kept too.
    let mut totals: Vec<usize> = Vec::new();
    let mut stack: Vec<&LabelNode> = tree.iter().collect();
    while let Some(l) = stack.pop() {
        totals.push(l.total);
        stack.extend(l.labels.iter());
    }
    totals.sort_unstable_by(|a, b| b.cmp(a));
    let least = totals.get(SIDEBAR_LABELS - 1).copied().filter(|_| totals.len() > SIDEBAR_LABELS).unwrap_or(0);
    let shown = scope_label(scope);
    let mut labels = Vec::new();
    let mut stack: Vec<(usize, &LabelNode)> = tree.iter().rev().map(|l| (0, l)).collect();
    while let Some((depth, l)) = stack.pop() {
        if labels.len() >= SIDEBAR_LABELS {
            break;
        }
        if l.total < least {
            continue;
        }
        labels.push(LabelRow {
            name: l.name.clone(),
            label: l.label.clone(),
            url: route::label_url(&l.label),
            count: l.total,
            depth: depth.min(MAX_DEPTH),
            current: shown.as_deref() == Some(crate::parse::labels::key(&l.label).as_str()),
        });
        stack.extend(l.labels.iter().rev().map(|c| (depth + 1, c)));
    }
    Sidebar { all: view.listed_count(), all_current: *scope == Scope::All, folders, labels }
}

/// The key of the label a list shows, if it shows one.
fn scope_label(scope: &Scope) -> Option<String> {
    match scope {
        Scope::Label(l) => Some(crate::parse::labels::key(l)),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
