//! Start-up only: arguments into a `Config`, logging, indexing in the background, bind, serve, and a
//! clean shutdown on Ctrl-C or SIGTERM.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use mailshelf::config::{Cli, Command, HealthArgs};
use mailshelf::{app, AppState, Archive, Config};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        Command::Serve(args) => {
            let config = match Config::from_args(args) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("mailshelf: {e}");
                    return ExitCode::from(2);
                }
            };
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("mailshelf: cannot start: {e}");
                    return ExitCode::FAILURE;
                }
            };
            match runtime.block_on(serve(config)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("mailshelf: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Healthcheck(args) => healthcheck(&args),
    }
}

async fn serve(config: Config) -> Result<(), mailshelf::Error> {
    let listener = tokio::net::TcpListener::bind(config.listen).await.map_err(|e| {
        mailshelf::Error::BadRequest(format!("cannot listen on {}: {e}", config.listen))
    })?;
    let addr = listener.local_addr()?;
    let archive = Arc::new(Archive::new());
    archive.set_uploads_dir(config.data_dir.join("uploads"));
    let state = AppState { archive: archive.clone(), config: Arc::new(config.clone()) };

    // Index in the background: the server answers (and reports progress) while it runs.
    let mut paths = config.paths.clone();
    paths.push(config.data_dir.join("uploads"));
    let indexing = tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        archive.ingest_paths(&paths);
        let messages = archive.index().listed_count();
        tracing::info!(messages, seconds = started.elapsed().as_secs_f64(), "indexed");
    });

    println!("mailshelf serving on http://{addr}/");
    let _ = std::io::stdout().flush();
    axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    indexing.abort();
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}

/// `mailshelf healthcheck`: GET /api/status on the local server; exit 0 on a 200.
fn healthcheck(args: &HealthArgs) -> ExitCode {
    let Ok(mut addr) = mailshelf::config::parse_listen(&args.listen) else {
        eprintln!("mailshelf: bad address {:?}", args.listen);
        return ExitCode::FAILURE;
    };
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let attempt = || -> std::io::Result<bool> {
        let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(3))?;
        s.set_read_timeout(Some(Duration::from_secs(3)))?;
        write!(s, "GET /api/status HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
        let mut head = [0u8; 12];
        s.read_exact(&mut head)?;
        Ok(head.starts_with(b"HTTP/1.1 200"))
    };
    match attempt() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("mailshelf: {addr}: {e}");
            ExitCode::FAILURE
        }
    }
}
