//! What every handler can reach: the archive, the checked configuration, the accounts (when anyone
//! has to sign in) and the audit log (when one is kept).
//!
//! There is no view of the archive here that a handler could read without saying who reads: the
//! view a handler uses is its reader's, from the [`super::gate::Viewer`] extractor (or
//! [`AppState::view_for`]), and the shared one left here ([`AppState::unscoped`]) reads nothing.

use std::sync::Arc;

use super::served::Served;
use crate::archive::Archive;
use crate::auth::audit::Audit;
use crate::auth::Accounts;
use crate::config::Config;
use crate::error::Error;
use crate::index::Access;
use crate::view::thumb::Thumbnails;
use crate::view::View;

#[derive(Clone)]
pub struct AppState {
    /// Every reader's view is made from this one (sharing its caches); by itself it may read
    /// nothing at all.
    view: Arc<View>,
    pub config: Arc<Config>,
    /// Thumbnails of image attachments, made on demand and kept within a byte budget.
    pub thumbs: Arc<Thumbnails>,
    /// Answers of `/part/` kept whole, by reader, with the compressed forms of documents.
    pub(crate) served: Arc<Served>,
    /// Who may sign in; `None`: nobody has to (the single-person server).
    pub accounts: Option<Arc<Accounts>>,
    /// Where reads are recorded; `None`: nowhere.
    pub audit: Option<Arc<Audit>>,
}

impl AppState {
    /// A server without accounts or audit log, whatever `config` says of them (see
    /// [`AppState::open`]).
    pub fn new(archive: Arc<Archive>, config: Arc<Config>) -> AppState {
        let view = Arc::new(View::with_keys(archive, Arc::clone(&config.keys)).scoped(Access::nothing()));
        AppState { view, config, thumbs: Arc::default(), served: Arc::default(), accounts: None, audit: None }
    }

    /// A server as `config` asks for it: with the users file read, sessions kept (in the shared
    /// database when there is one) and the audit log opened. A users file or audit log that
    /// cannot be used is an error.
    pub fn open(archive: Arc<Archive>, config: Arc<Config>) -> Result<AppState, Error> {
        let accounts = Accounts::open(&config.accounts, archive.database().cloned())?.map(Arc::new);
        let audit = config.accounts.audit_log.as_deref().map(Audit::open).transpose()?.map(Arc::new);
        Ok(AppState { accounts, audit, ..AppState::new(archive, config) })
    }

    /// Whether people sign in to this server (then message content is sandboxed with its origin:
    /// see [`super::csp::sandbox`]).
    pub(crate) fn signs_in(&self) -> bool {
        self.accounts.is_some()
    }

    /// The view of a reader with `access`.
    pub fn view_for(&self, access: &Access) -> Arc<View> {
        Arc::new(self.view.scoped(access.clone()))
    }

    /// The shared view, which reads nothing: for what needs the archive's caches but no message.
    pub fn unscoped(&self) -> &Arc<View> {
        &self.view
    }

    pub fn archive(&self) -> &Arc<Archive> {
        self.view.archive()
    }
}
