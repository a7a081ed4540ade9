//! Start-up only: arguments into a `Config`, logging, indexing in the background, bind, serve, and a
//! clean shutdown on Ctrl-C or SIGTERM.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use mailshelf::config::{Cli, Command, HealthArgs, UserAddArgs, UserCommand};
use mailshelf::{AppState, Archive, Config};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .with_writer(std::io::stderr)
        // Colours for a person at a terminal; plain lines for a container's or a service's log.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none())
        .init();
    mailshelf::memory::configure();
    match cli.command {
        Command::Serve(args) => {
            let config = match Config::from_args(*args) {
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
            let result = runtime.block_on(serve(config));
            // Indexing may still run; what it committed is safe, the rest is redone next start.
            runtime.shutdown_timeout(Duration::from_secs(2));
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("mailshelf: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Healthcheck(args) => healthcheck(&args),
        Command::User(args) => match args.command {
            UserCommand::Add(add) => user_add(&add),
        },
        Command::Open(args) => {
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("mailshelf: cannot start: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let result = runtime.block_on(async { mailshelf::open::run(args, shutdown_signal()).await });
            runtime.shutdown_timeout(Duration::from_secs(2));
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e @ (mailshelf::Error::BadPath { .. } | mailshelf::Error::BadSetting(_))) => {
                    eprintln!("mailshelf: {e}");
                    ExitCode::from(2)
                }
                Err(e) => {
                    eprintln!("mailshelf: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

async fn serve(config: Config) -> Result<(), mailshelf::Error> {
    let opened = std::time::Instant::now();
    let archive = Arc::new(
        match &config.database_url {
            Some(url) => {
                let database = mailshelf::postgres::Database::connect(url)?;
                Archive::open_shared(database, config.search)?
            }
            None => Archive::open_with(&config.data_dir, config.search)?,
        }
        .with_attachment_text(config.attachment_text)
        .with_max_message(config.max_message),
    );
    tracing::debug!(
        seconds = opened.elapsed().as_secs_f64(),
        messages = archive.index().listed_count(),
        "index loaded"
    );
    announce_keys(&config);
    if config.index_decrypted {
        archive.index_decrypted(config.keys.clone());
    }
    let roots = archive.roots(&config.paths);
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| mailshelf::Error::BadSetting(format!("cannot listen on {}: {e}", config.listen)))?;
    let addr = listener.local_addr()?;
    let state = AppState::open(archive.clone(), Arc::new(config.clone()))?;
    if let Some(accounts) = &state.accounts {
        accounts.watch();
    }
    let tls = config.tls.as_ref().map(mailshelf::web::tls::Certificates::open).transpose()?;
    if let Some(certs) = &tls {
        certs.watch();
    }

    // Index in the background (the server answers, and reports progress, while it runs), then
    // watch for new mail; with a shared database, follow the other replicas.
    tokio::spawn(mailshelf::archive::replica::run(archive.clone(), roots));
    tokio::spawn(show_progress(archive.clone()));
    tokio::spawn(mailshelf::memory::release_periodically());

    let shutdown = shutdown_signal();
    let scheme = if tls.is_some() { "https" } else { "http" };
    println!("mailshelf serving on {scheme}://{addr}/");
    let _ = std::io::stdout().flush();
    let limits = mailshelf::web::server::Limits::from(&config);
    mailshelf::web::server::serve_with(listener, mailshelf::web::service(state), limits, tls, shutdown).await;
    archive.close();
    Ok(())
}

/// Says what keys and trust were given (how many, never what they are).
fn announce_keys(config: &Config) {
    let keys = &config.keys;
    if keys.is_empty() {
        return;
    }
    let anchors = match keys.anchors_from() {
        mailshelf::crypto::keys::Anchors::Given => "the certificates given with --trust",
        mailshelf::crypto::keys::Anchors::System(_) => "the system's roots",
        mailshelf::crypto::keys::Anchors::None => "none",
    };
    tracing::info!(
        decrypting = keys.can_decrypt(),
        index_decrypted = config.index_decrypted,
        smime_anchors = anchors,
        "keys and trust read"
    );
}

/// A progress bar on a terminal; plain lines every few seconds otherwise (logs, containers).
async fn show_progress(archive: Arc<Archive>) {
    use std::io::IsTerminal;
    use std::sync::atomic::Ordering;
    let p = &archive.progress;
    let tty = std::io::stderr().is_terminal();
    let bar = tty.then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template("indexing {bar:40} {pos}/{len} files, {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let mut ticks = 0u32;
    while !p.ready.load(Ordering::Acquire) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (done, total) = (p.indexed.load(Ordering::Relaxed), p.total.load(Ordering::Relaxed));
        let messages = archive.index().listed_count();
        match &bar {
            Some(bar) => {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(format!("{messages} messages"));
            }
            None => {
                ticks += 1;
                if ticks.is_multiple_of(25) {
                    tracing::info!(files = done, of = total, messages, "indexing");
                }
            }
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}

/// Ctrl-C or SIGTERM. The handlers are installed here, before the server says it listens, so a
/// signal sent the moment the URL is printed already stops it cleanly.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate());
        let int = signal(SignalKind::interrupt());
        async move {
            match (term, int) {
                (Ok(mut term), Ok(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => {},
                        _ = int.recv() => {},
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
            tracing::info!("shutting down");
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down");
    }
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
    if args.tls_cert.is_some() {
        return match mailshelf::web::tls::status_answers(addr, Duration::from_secs(3)) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(e) => {
                eprintln!("mailshelf: {addr}: {e}");
                ExitCode::FAILURE
            }
        };
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

/// `mailshelf user add`: the password asked for twice without echo (or read from standard input
/// with `--password-stdin`), then appended hashed.
fn user_add(args: &UserAddArgs) -> ExitCode {
    let password = if args.password_stdin {
        let mut line = String::new();
        if let Err(e) = std::io::stdin().read_line(&mut line) {
            eprintln!("mailshelf: cannot read the password: {e}");
            return ExitCode::FAILURE;
        }
        line.trim_end_matches(['\r', '\n']).to_string()
    } else {
        let asked = rpassword::prompt_password(format!("Password for {}: ", args.name))
            .and_then(|first| rpassword::prompt_password("Again: ").map(|again| (first, again)));
        match asked {
            Ok((first, again)) if first == again => first,
            Ok(_) => {
                eprintln!("mailshelf: the two passwords differ; nothing was written");
                return ExitCode::from(2);
            }
            Err(e) => {
                eprintln!("mailshelf: cannot ask for the password ({e}); use --password-stdin");
                return ExitCode::from(2);
            }
        }
    };
    match mailshelf::auth::add::add_user(&args.users, &args.name, &password, &args.folders, args.admin) {
        Ok(()) => {
            eprintln!("mailshelf: {} added to {}", args.name, args.users.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mailshelf: {e}");
            ExitCode::from(2)
        }
    }
}
