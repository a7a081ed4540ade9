//! Command-line arguments (each with an environment variable) and the validated [`Config`] they
//! become. Raw arguments are checked once, here; the rest of the program trusts a `Config`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::crypto::Keyring;
use crate::error::Error;

mod accounts;
pub use accounts::{check_folder, AccountsArgs, AccountsConfig, OidcConfig, TlsFiles};

#[derive(Debug, Parser)]
#[command(name = "mailshelf", version, about = "Serve saved email and MHTML archives to a browser and to scripts")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Index the given files and folders and serve them over HTTP.
    Serve(Box<ServeArgs>),
    /// Ask a running server whether it is up (exit 0) or not (exit 1); for container health checks.
    Healthcheck(HealthArgs),
    /// Show the given files in the browser: serve them on a free local port with a temporary data
    /// folder (removed at exit), open the message (or the list, for several), until Ctrl-C.
    Open(OpenArgs),
    /// Manage the users file (`--users`): `mailshelf user add NAME`.
    User(UserArgs),
}

#[derive(Debug, Args)]
pub struct UserArgs {
    #[command(subcommand)]
    pub command: UserCommand,
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Add a user to the users file: asks for the password twice (not shown) and appends the
    /// user with the password hashed (argon2id).
    Add(UserAddArgs),
}

#[derive(Debug, Args)]
pub struct UserAddArgs {
    /// The user's name (what they sign in with; compared ignoring case).
    pub name: String,
    /// A folder the user may read, with those below it, as /api/folders names it (repeatable);
    /// none: every folder.
    #[arg(long = "folder", value_name = "FOLDER")]
    pub folders: Vec<String>,
    /// The user may upload and delete messages.
    #[arg(long)]
    pub admin: bool,
    /// The users file (made if there is none).
    #[arg(long, env = "MAILSHELF_USERS", value_name = "FILE")]
    pub users: PathBuf,
    /// Read the password from the first line of standard input instead of asking for it (for
    /// scripts; it is never an argument).
    #[arg(long)]
    pub password_stdin: bool,
}

#[derive(Debug, Args)]
pub struct OpenArgs {
    /// The files (or folders) to show: a saved email, a web archive, an mbox, anything `serve` reads.
    #[arg(required = true, value_name = "FILE")]
    pub paths: Vec<PathBuf>,

    /// Print the URL and do not start a browser.
    #[arg(long, env = "MAILSHELF_NO_BROWSER", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_browser: bool,

    #[command(flatten)]
    pub keys: KeyArgs,
}

/// Keys to decrypt signed and encrypted mail with, and whom to trust for signatures (S/MIME and
/// OpenPGP; see [`crate::crypto`]). The passphrase of an encrypted key comes from the environment
/// (`MAILSHELF_KEY_PASSPHRASE`) or a file, never from the command line, where other users of the
/// machine could read it.
#[derive(Debug, Clone, Default, Args)]
pub struct KeyArgs {
    /// A private key to decrypt with (repeatable; comma-separated in the variable): a PEM file
    /// with the key and its certificate, a PKCS #12 file (.p12/.pfx), or an ASCII-armored OpenPGP
    /// secret key. Held in memory only.
    #[arg(long = "key", env = "MAILSHELF_KEYS", value_delimiter = ',', value_name = "FILE")]
    pub keys: Vec<PathBuf>,

    /// Whom signatures are checked against (repeatable; comma-separated in the variable): PEM CA
    /// certificates for S/MIME, ASCII-armored OpenPGP public keys. Without a CA certificate here,
    /// S/MIME signatures are checked against the system's roots (/etc/ssl/certs/ca-certificates.crt).
    #[arg(long = "trust", env = "MAILSHELF_TRUST", value_delimiter = ',', value_name = "FILE")]
    pub trust: Vec<PathBuf>,

    /// A file whose first line is the passphrase of the --key files that need one (else
    /// MAILSHELF_KEY_PASSPHRASE).
    #[arg(long, env = "MAILSHELF_KEY_PASSPHRASE_FILE", value_name = "FILE")]
    pub key_passphrase_file: Option<PathBuf>,

    /// Put the text of decrypted mail into the search index (and so into the data folder or the
    /// database), and index the messages it encloses. Off by default: decrypted mail is then
    /// decrypted when it is shown and held only in memory.
    #[arg(long, env = "MAILSHELF_INDEX_DECRYPTED", value_parser = clap::builder::BoolishValueParser::new())]
    pub index_decrypted: bool,
}

impl OpenArgs {
    /// The server `open` runs: the given paths, a free loopback port, the data folder given, and
    /// every other setting at its default.
    pub fn serve_args(&self, data_dir: PathBuf) -> ServeArgs {
        ServeArgs {
            paths: self.paths.clone(),
            listen: "127.0.0.1:0".into(),
            data_dir: Some(data_dir),
            max_upload: crate::limits::DEFAULT_MAX_UPLOAD.into(),
            max_message: crate::limits::DEFAULT_MAX_MESSAGE.to_string(),
            search: true,
            attachment_text: true,
            cors_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_connections: crate::limits::DEFAULT_MAX_CONNECTIONS,
            header_timeout: crate::limits::DEFAULT_HEADER_TIMEOUT_SECS,
            // Looked for on PATH, as `serve` does: a PDF of the opened message works when there is one.
            chromium: None,
            database_url: None,
            keys: self.keys.clone(),
            accounts: AccountsArgs::default(),
        }
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Files and folders to serve: .eml, .mht/.mhtml, mbox files, Maildir and folder trees
    /// (walked recursively; a file is taken as a message when it looks like one, whatever its name).
    /// Opened read-only.
    #[arg(env = "MAILSHELF_PATH", value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Address to listen on; port 0 picks a free port.
    #[arg(long, env = "MAILSHELF_LISTEN", default_value = "127.0.0.1:8025")]
    pub listen: String,

    /// Folder for mailshelf's own data: the index, the search index, uploads. Default:
    /// $XDG_DATA_HOME/mailshelf or ~/.local/share/mailshelf.
    #[arg(long, env = "MAILSHELF_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Largest upload accepted, in bytes (suffixes K, M, G allowed); larger ones get 413.
    #[arg(long, env = "MAILSHELF_MAX_UPLOAD", default_value = crate::limits::DEFAULT_MAX_UPLOAD)]
    pub max_upload: String,

    /// Largest message read whole, in bytes (suffixes K, M, G allowed): a longer one is listed,
    /// shown and searched as far as that, with a notice; its file keeps the rest.
    #[arg(long, env = "MAILSHELF_MAX_MESSAGE", default_value = "256M")]
    pub max_message: String,

    /// Keep a full-text search index (on by default; `false` indexes faster and smaller, and the
    /// search box answers that search is off).
    #[arg(long, env = "MAILSHELF_SEARCH", default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub search: bool,

    /// Search the text of attached documents (on by default; `false` indexes only messages' own
    /// text and attachments' names, and faster when mail carries many documents).
    #[arg(long, env = "MAILSHELF_ATTACHMENT_TEXT", default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub attachment_text: bool,

    /// Origins allowed to call the API from a browser (CORS), comma-separated; none by default.
    #[arg(long = "cors-origin", env = "MAILSHELF_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origins: Vec<String>,

    /// Host names this server answers to, besides IP addresses, `localhost` and `*.localhost`
    /// (repeatable, or comma-separated in the variable): the name of a reverse proxy or a LAN host.
    /// `*` answers any name, which lets any website read your mail through DNS rebinding: unsafe.
    #[arg(long = "allowed-host", env = "MAILSHELF_ALLOWED_HOSTS", value_delimiter = ',', value_name = "NAME")]
    pub allowed_hosts: Vec<String>,

    /// Most connections open at once; past it, new ones wait in the kernel's listen queue until
    /// one closes. Keep it below the open-file limit (`ulimit -n`) less what the indexes use.
    #[arg(long, env = "MAILSHELF_MAX_CONNECTIONS", default_value_t = crate::limits::DEFAULT_MAX_CONNECTIONS, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,

    /// Seconds a client has to send a request's headers, and how long an idle keep-alive
    /// connection waits for its next request, before it is closed.
    #[arg(long, env = "MAILSHELF_HEADER_TIMEOUT", default_value_t = crate::limits::DEFAULT_HEADER_TIMEOUT_SECS, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout: u64,

    /// The Chromium (or Chrome) that renders PDFs of messages: a path, or a name looked up on
    /// PATH; `none` turns PDFs off. Default: the first of chromium, chromium-browser and
    /// google-chrome on PATH; without one the PDF route answers 501.
    #[arg(long, env = "MAILSHELF_CHROMIUM", value_name = "PATH")]
    pub chromium: Option<String>,

    /// Accounts, single sign-on, the audit log and HTTPS.
    #[command(flatten)]
    pub accounts: AccountsArgs,

    /// Keep the index, the search index and uploads in this PostgreSQL database instead of
    /// --data-dir, so that several servers over the same paths serve the same answers (one of
    /// them indexes, the others follow). A `postgres://user:password@host:port/database` URL or
    /// a `host=… dbname=…` string. Default: none (everything in --data-dir).
    #[arg(long, env = "MAILSHELF_DATABASE_URL", value_name = "URL")]
    pub database_url: Option<String>,

    #[command(flatten)]
    pub keys: KeyArgs,
}

#[derive(Debug, Args)]
pub struct HealthArgs {
    /// The server's address.
    #[arg(long, env = "MAILSHELF_LISTEN", default_value = "127.0.0.1:8025")]
    pub listen: String,
    /// The server speaks HTTPS with this certificate (as `serve --tls-cert`, from the same
    /// variable): ask over HTTPS.
    #[arg(long, env = "MAILSHELF_TLS_CERT", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
}

/// Everything the server needs, checked.
#[derive(Debug, Clone)]
pub struct Config {
    pub paths: Vec<PathBuf>,
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub max_upload: usize,
    /// Bytes read of one message.
    pub max_message: usize,
    pub cors_origins: Vec<String>,
    /// Host names answered besides IP literals and `localhost`, lower case; `*` for any.
    pub allowed_hosts: Vec<String>,
    pub search: bool,
    /// Whether the text of attached documents is indexed for search.
    pub attachment_text: bool,
    /// Connections served at once (at least 1).
    pub max_connections: usize,
    /// Time to send a request's headers, and to start the next one on a kept-alive connection.
    pub header_timeout: Duration,
    /// The browser that renders PDFs; `None`: PDFs are not available (501).
    pub chromium: Option<PathBuf>,
    /// The shared database; `None`: everything lives in `data_dir`.
    pub database_url: Option<String>,
    /// The keys and trust anchors given (`--key`, `--trust`), read and checked.
    pub keys: Arc<Keyring>,
    /// Whether decrypted mail goes into the index (`--index-decrypted`).
    pub index_decrypted: bool,
    /// Who may sign in, and how (all off by default: the single-person server).
    pub accounts: AccountsConfig,
    /// HTTPS: the certificate and key files; `None`: plain HTTP.
    pub tls: Option<TlsFiles>,
}

impl Config {
    /// Validates raw arguments: every path must exist and be readable.
    pub fn from_args(args: ServeArgs) -> Result<Config, Error> {
        let mut paths = Vec::new();
        for p in args.paths {
            let meta = std::fs::metadata(&p).map_err(|e| Error::BadPath {
                path: p.clone(),
                reason: match e.kind() {
                    std::io::ErrorKind::NotFound => "no such file or folder".to_string(),
                    std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                    _ => e.to_string(),
                },
            })?;
            if !(meta.is_file() || meta.is_dir()) {
                return Err(Error::BadPath { path: p, reason: "not a file or folder".into() });
            }
            paths.push(p);
        }
        let listen = parse_listen(&args.listen)?;
        let data_dir = args.data_dir.unwrap_or_else(default_data_dir);
        let max_upload = parse_size(&args.max_upload)
            .ok_or_else(|| Error::BadSetting(format!("--max-upload: cannot read {:?} as a size", args.max_upload)))?;
        let max_message = parse_size(&args.max_message).filter(|&n| n > 0).ok_or_else(|| {
            Error::BadSetting(format!("--max-message: cannot read {:?} as a size above 0", args.max_message))
        })?;
        // An empty item is no item: a variable set to nothing (`MAILSHELF_ALLOWED_HOSTS=`, as a
        // compose file's `${VAR:-}` gives) or a trailing comma.
        let listed = |items: &[String]| -> Vec<String> {
            items.iter().map(|s| s.trim()).filter(|s| !s.is_empty()).map(str::to_string).collect()
        };
        let (cors, hosts) = (listed(&args.cors_origins), listed(&args.allowed_hosts));
        for o in &cors {
            if !is_origin(o) {
                return Err(Error::BadSetting(format!(
                    "--cors-origin: {o:?} is not an origin like https://tools.example:8443"
                )));
            }
        }
        let cors_origins = cors.iter().map(|o| o.trim_end_matches('/').to_string()).collect();
        let mut allowed_hosts = Vec::new();
        for h in &hosts {
            let name = h.trim_end_matches('.').to_ascii_lowercase();
            let valid = name == "*"
                || (!name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')));
            if !valid {
                return Err(Error::BadSetting(format!(
                    "--allowed-host: {h:?} is not a host name like mail.example.org (no scheme, no port)"
                )));
            }
            allowed_hosts.push(name);
        }
        let chromium = chromium_setting(args.chromium.as_deref())?;
        let database_url = args.database_url.map(|u| u.trim().to_string()).filter(|u| !u.is_empty());
        let keys = Arc::new(load_keys(&args.keys)?);
        let (accounts, tls) = args.accounts.check()?;
        Ok(Config {
            paths,
            listen,
            data_dir,
            max_upload,
            max_message,
            cors_origins,
            allowed_hosts,
            search: args.search,
            attachment_text: args.attachment_text,
            max_connections: args.max_connections as usize,
            header_timeout: Duration::from_secs(args.header_timeout),
            chromium,
            database_url,
            keys,
            index_decrypted: args.keys.index_decrypted,
            accounts,
            tls,
        })
    }
}

/// Reads the `--key` and `--trust` files; a file that cannot be used stops start-up, named.
fn load_keys(args: &KeyArgs) -> Result<Keyring, Error> {
    let passphrase = match &args.key_passphrase_file {
        Some(path) => {
            let text = zeroize::Zeroizing::new(std::fs::read_to_string(path).map_err(|e| Error::BadPath {
                path: path.clone(),
                reason: format!("the passphrase file cannot be read: {e}"),
            })?);
            Some(zeroize::Zeroizing::new(text.lines().next().unwrap_or("").to_string()))
        }
        None => std::env::var("MAILSHELF_KEY_PASSPHRASE").ok().map(zeroize::Zeroizing::new),
    };
    let list =
        |items: &[PathBuf]| -> Vec<PathBuf> { items.iter().filter(|p| !p.as_os_str().is_empty()).cloned().collect() };
    let (keys, trust) = (list(&args.keys), list(&args.trust));
    let roots = std::path::Path::new(crate::crypto::keys::SYSTEM_ROOTS);
    Keyring::load(&keys, &trust, passphrase.as_deref().map(String::as_str), Some(roots))
        .map_err(|e| Error::BadPath { path: e.path, reason: e.reason })
}

/// `--chromium`: unset, look on PATH (none found is not an error: PDFs answer 501); `none` or
/// empty, no PDFs; a name, looked up on PATH; a path, which must be a file. A browser that was
/// asked for and is not there is a start-up error, not a surprise at the first PDF.
fn chromium_setting(value: Option<&str>) -> Result<Option<PathBuf>, Error> {
    let Some(v) = value.map(str::trim) else { return Ok(find_chromium(None)) };
    if v.is_empty() || v.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let found = if v.contains('/') {
        Some(PathBuf::from(v)).filter(|p| p.is_file())
    } else {
        std::env::var_os("PATH")
            .and_then(|path| std::env::split_paths(&path).map(|dir| dir.join(v)).find(|c| c.is_file()))
    };
    found.map(Some).ok_or_else(|| Error::BadSetting(format!("--chromium: {v:?} is not a file or a program on PATH")))
}

/// The browser to render PDFs with: the one named, else the first of `chromium`,
/// `chromium-browser`, `google-chrome` on `PATH`; `None` when there is none (PDFs then answer 501).
pub fn find_chromium(named: Option<&std::path::Path>) -> Option<PathBuf> {
    if let Some(p) = named {
        return Some(p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

pub fn parse_listen(s: &str) -> Result<SocketAddr, Error> {
    s.parse().map_err(|_| Error::BadSetting(format!("--listen: {s:?} is not an address like 127.0.0.1:8025")))
}

/// An origin is `scheme://host[:port]` and nothing more; anything else never matches a browser's.
fn is_origin(o: &str) -> bool {
    match url::Url::parse(o) {
        Ok(u) => {
            matches!(u.scheme(), "http" | "https")
                && u.path() == "/"
                && u.query().is_none()
                && u.fragment().is_none()
                && u.origin().ascii_serialization() == o.trim_end_matches('/')
        }
        Err(_) => false,
    }
}

fn default_data_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(x).join("mailshelf");
    }
    match std::env::var_os("HOME") {
        Some(h) => PathBuf::from(h).join(".local/share/mailshelf"),
        None => PathBuf::from("mailshelf-data"),
    }
}

/// Reads `123`, `64K`, `64M`, `1G` (binary multiples).
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1usize << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve_args(args: &[&str]) -> ServeArgs {
        let cli = Cli::try_parse_from(["mailshelf", "serve"].iter().chain(args)).expect("parses");
        match cli.command {
            Command::Serve(a) => *a,
            other => panic!("not serve: {other:?}"),
        }
    }

    /// A list setting given as nothing (an empty variable, as compose's `${VAR:-}` makes, or a
    /// trailing comma) is no entry, not a bad one; a bad entry is still refused.
    #[test]
    fn empty_list_items_are_no_items() {
        let config = Config::from_args(serve_args(&["--allowed-host", "", "--cors-origin", ""])).expect("valid");
        assert!(config.allowed_hosts.is_empty() && config.cors_origins.is_empty());
        let config = Config::from_args(serve_args(&["--allowed-host", "mail.example.org,"])).expect("valid");
        assert_eq!(config.allowed_hosts, ["mail.example.org"]);
        assert!(Config::from_args(serve_args(&["--allowed-host", "http://x"])).is_err());
    }

    /// The setting's default is the limit's.
    #[test]
    fn max_message_default() {
        let config = Config::from_args(serve_args(&[])).expect("valid");
        assert_eq!(config.max_message, crate::limits::DEFAULT_MAX_MESSAGE);
        assert!(Config::from_args(serve_args(&["--max-message", "0"])).is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64M"), Some(64 << 20));
        assert_eq!(parse_size("10"), Some(10));
        assert_eq!(parse_size("2k"), Some(2048));
        assert_eq!(parse_size("x"), None);
    }
}
