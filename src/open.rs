//! `mailshelf open FILE…`, for someone holding a saved email rather than an archive: the files are
//! served as `serve` would, from a data folder of its own that is removed when it stops, on a free
//! loopback port, and the system's browser is sent to the message (or to the list when there are
//! several). The URL is always printed, alone on standard output, so a script or a person without
//! a desktop browser can use it.

use std::future::Future;
use std::io::Write;
use std::sync::Arc;

use crate::archive::Archive;
use crate::config::{Config, OpenArgs};
use crate::error::Error;
use crate::route;
use crate::web::{server, service, AppState};

/// Serves `args.paths` until `shutdown` completes. Errors are those of `serve` (an unusable path
/// is [`Error::BadPath`]).
pub async fn run(args: OpenArgs, shutdown: impl Future<Output = ()>) -> Result<(), Error> {
    let data = tempfile::Builder::new().prefix("mailshelf-open-").tempdir()?;
    let config = Config::from_args(args.serve_args(data.path().to_path_buf()))?;
    let archive = Arc::new(Archive::open_with(&config.data_dir, config.search)?);
    if config.index_decrypted {
        archive.index_decrypted(config.keys.clone());
    }
    // A few files: read them all before answering, so the URL leads to the message itself.
    let roots = archive.roots(&config.paths);
    let indexer = archive.clone();
    crate::view::blocking(move || {
        indexer.ingest_paths(&roots);
        Ok(())
    })
    .await?;

    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| Error::BadSetting(format!("cannot listen on {}: {e}", config.listen)))?;
    let addr = listener.local_addr()?;
    let url = format!("http://{addr}{}", landing(&archive));
    // Written, not `println!`: a reader that already went away (`| head -1`) must not stop it.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{url}").and_then(|()| out.flush());
    drop(out);
    eprintln!("mailshelf: showing {} message(s); Ctrl-C stops", archive.index().listed_count());
    if !args.no_browser {
        let target = url.clone();
        // Some openers wait for the browser to start; the server answers meanwhile.
        tokio::task::spawn_blocking(move || {
            if let Err(e) = opener::open_browser(&target) {
                tracing::warn!(error = %e, "could not start a browser; open the URL above");
            }
        });
    }
    let limits = server::Limits::from(&config);
    let state = AppState::new(archive, Arc::new(config));
    server::serve(listener, service(state), limits, shutdown).await;
    // The data folder goes with `data`; say so if it cannot.
    let path = data.path().to_path_buf();
    if let Err(e) = data.close() {
        tracing::warn!(error = %e, path = %path.display(), "could not remove the temporary data folder");
    }
    Ok(())
}

/// Where the browser lands: the message itself when exactly one was given, else the list.
pub fn landing(archive: &Archive) -> String {
    let index = archive.index();
    if index.listed_count() == 1 {
        if let Some((_, entry)) = index.page(0, 1).into_iter().next() {
            return route::message_url(&entry.key);
        }
    }
    "/".to_string()
}
