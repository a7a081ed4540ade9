//! What every handler can reach: the archive as viewed, and the checked configuration.

use std::sync::Arc;

use crate::archive::Archive;
use crate::config::Config;
use crate::view::View;

#[derive(Clone)]
pub struct AppState {
    pub view: Arc<View>,
    pub config: Arc<Config>,
}

impl AppState {
    pub fn new(archive: Arc<Archive>, config: Arc<Config>) -> AppState {
        AppState { view: Arc::new(View::new(archive)), config }
    }

    pub fn archive(&self) -> &Arc<Archive> {
        self.view.archive()
    }
}
