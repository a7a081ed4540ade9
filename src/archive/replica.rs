//! Keeping a server's archive current. With a data folder there is one server: it indexes the
//! given paths, then watches them. With a shared database there may be many: each follows the
//! database's feed of changes every second (new uploads and messages indexed elsewhere appear
//! within that time, without scanning anything), and exactly one of them, the holder of the
//! indexer lock, indexes and watches the paths. When it dies its lock goes with its connection,
//! and the next replica to ask takes over, resuming from the source states in the database.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::archive::watch::Watch;
use crate::archive::Archive;

/// How often a replica follows the change feed and asks for the indexer lock.
pub const FOLLOW_EVERY: Duration = Duration::from_secs(1);

/// Indexes `roots` (when this server may), then watches them; with a shared database, also
/// follows the other replicas and takes over indexing when it falls free. Runs for as long as
/// the server does.
pub async fn run(archive: Arc<Archive>, roots: Vec<PathBuf>) {
    let mut role = Role::Following;
    loop {
        let a = Arc::clone(&archive);
        let held = tokio::task::spawn_blocking(move || {
            if let Err(e) = a.catch_up() {
                tracing::debug!(error = %e, "changes from other replicas not read yet");
            }
            a.hold_indexer_lock()
        })
        .await
        .unwrap_or(false);
        if !held && !archive.progress.ready.load(std::sync::atomic::Ordering::Acquire) {
            // Following from the start: what the database held then was loaded when the archive
            // opened, and what was committed since has just been read.
            archive.progress.set_ready(crate::archive::Readiness::Loaded);
        }
        role = match role {
            Role::Indexing(run) if run.is_finished() => Role::Watching(run.await.ok().flatten()),
            Role::Following if held => {
                if archive.backend().shared {
                    tracing::info!("this replica indexes the given paths");
                }
                Role::Indexing(tokio::task::spawn_blocking({
                    let archive = Arc::clone(&archive);
                    let roots = roots.clone();
                    move || index_and_watch(archive, roots)
                }))
            }
            Role::Indexing(_) | Role::Watching(_) if !held => {
                // A run under way stops at its next checkpoint and takes back what it read since
                // the last (see `Archive::collect`); watching stops, and the new holder takes over.
                tracing::warn!("this replica lost the indexer lock (its database connection ended)");
                if let Role::Watching(Some(watch)) = role {
                    drop(watch);
                }
                Role::Following
            }
            other => other,
        };
        if !archive.backend().shared && matches!(role, Role::Watching(_)) {
            // Alone: nothing to follow, nobody to take over from; the watch goes on by itself.
            let _keep = role;
            std::future::pending::<()>().await;
            return;
        }
        tokio::time::sleep(FOLLOW_EVERY).await;
    }
}

/// What a server does about the given paths.
enum Role {
    /// Another replica indexes them.
    Following,
    /// Indexing them now; watching next.
    Indexing(tokio::task::JoinHandle<Option<Watch>>),
    /// Watching them for changes (`None`: watching failed, see the log).
    Watching(Option<Watch>),
}

fn index_and_watch(archive: Arc<Archive>, roots: Vec<PathBuf>) -> Option<Watch> {
    let started = std::time::Instant::now();
    archive.ingest_paths(&roots);
    if !archive.is_indexer() {
        // The run was given up (the lock went with its connection): the new holder watches.
        return None;
    }
    tracing::info!(messages = archive.index().listed_count(), seconds = started.elapsed().as_secs_f64(), "indexed");
    match crate::archive::watch::watch(archive, roots) {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!(error = %e, "new mail will appear only after a restart");
            None
        }
    }
}
