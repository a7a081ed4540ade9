//! What every handler can reach: the archive as viewed, and the checked configuration.

use std::sync::Arc;

use crate::archive::Archive;
use crate::config::Config;
use crate::view::thumb::Thumbnails;
use crate::view::View;

#[derive(Clone)]
pub struct AppState {
    pub view: Arc<View>,
    pub config: Arc<Config>,
    /// Thumbnails of image attachments, made on demand and kept within a byte budget.
    pub thumbs: Arc<Thumbnails>,
}

impl AppState {
    pub fn new(archive: Arc<Archive>, config: Arc<Config>) -> AppState {
        let view = View::with_keys(archive, Arc::clone(&config.keys));
        AppState { view: Arc::new(view), config, thumbs: Arc::default() }
    }

    pub fn archive(&self) -> &Arc<Archive> {
        self.view.archive()
    }
}
