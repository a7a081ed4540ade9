//! The flags of accounts, single sign-on, the audit log and HTTPS, and the checked settings they
//! become ([`AccountsConfig`], [`TlsFiles`]). Each has an environment variable; secrets are read
//! from files (`--oidc-client-secret-file`), never taken from the command line, where any user of
//! the machine could read them.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::Args;

use crate::error::Error;
use crate::limits::DEFAULT_SESSION_HOURS;

#[derive(Debug, Args, Clone)]
pub struct AccountsArgs {
    /// The users file (TOML, `[[user]]` tables: name, password hash, optional folders and admin);
    /// with it every route but `/api/status` and the sign-in page needs a signed-in user.
    #[arg(long, env = "MAILSHELF_USERS", value_name = "FILE")]
    pub users: Option<PathBuf>,

    /// Hours a sign-in lasts.
    #[arg(long, env = "MAILSHELF_SESSION_HOURS", default_value_t = DEFAULT_SESSION_HOURS, value_name = "HOURS",
          value_parser = clap::value_parser!(u64).range(1..=8760))]
    pub session_hours: u64,

    /// Mark the session cookie `Secure` (sent over HTTPS only) although this server speaks plain
    /// HTTP: behind a proxy that serves HTTPS. On with --tls-cert anyway.
    #[arg(long, env = "MAILSHELF_SECURE_COOKIES", value_parser = clap::builder::BoolishValueParser::new())]
    pub secure_cookies: bool,

    /// A request header in which a reverse proxy names the signed-in user (oauth2-proxy:
    /// `X-Forwarded-Email` or `X-Forwarded-User`), honoured only from --trusted-proxy addresses.
    #[arg(long, env = "MAILSHELF_TRUSTED_HEADER", value_name = "NAME")]
    pub trusted_header: Option<String>,

    /// Addresses (CIDR ranges, or single addresses) of the proxies trusted to set
    /// --trusted-header and `X-Forwarded-For` (repeatable; comma-separated in the variable).
    #[arg(long = "trusted-proxy", env = "MAILSHELF_TRUSTED_PROXIES", value_delimiter = ',', value_name = "CIDR")]
    pub trusted_proxies: Vec<String>,

    /// Folders a user named by a proxy or by OpenID Connect may read when the users file does not
    /// know the name (`*`: everything); without it such a user reads nothing.
    #[arg(long, env = "MAILSHELF_DEFAULT_FOLDERS", value_delimiter = ',', value_name = "FOLDER")]
    pub default_folders: Vec<String>,

    /// The OpenID Connect provider (its issuer URL, where `/.well-known/openid-configuration`
    /// is found); needs --oidc-client-id, --oidc-client-secret-file and --public-url.
    #[arg(long, env = "MAILSHELF_OIDC_ISSUER", value_name = "URL")]
    pub oidc_issuer: Option<String>,

    /// This server's client id at the provider.
    #[arg(long, env = "MAILSHELF_OIDC_CLIENT_ID", value_name = "ID")]
    pub oidc_client_id: Option<String>,

    /// A file holding this server's client secret at the provider.
    #[arg(long, env = "MAILSHELF_OIDC_CLIENT_SECRET_FILE", value_name = "FILE")]
    pub oidc_client_secret_file: Option<PathBuf>,

    /// The URL people reach this server at (`https://mail.example.org`), from which the provider
    /// sends them back (to `/login/oidc/callback`).
    #[arg(long, env = "MAILSHELF_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,

    /// Append a JSON line for every sign-in, message or part read, raw download, search, export
    /// and PDF to this file (`-`: standard output). One that cannot be opened stops the server.
    #[arg(long, env = "MAILSHELF_AUDIT_LOG", value_name = "FILE")]
    pub audit_log: Option<String>,

    /// Serve HTTPS with this certificate chain (PEM); read again when the file changes.
    #[arg(long, env = "MAILSHELF_TLS_CERT", value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, env = "MAILSHELF_TLS_KEY", value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

impl Default for AccountsArgs {
    fn default() -> AccountsArgs {
        AccountsArgs {
            users: None,
            session_hours: DEFAULT_SESSION_HOURS,
            secure_cookies: false,
            trusted_header: None,
            trusted_proxies: Vec::new(),
            default_folders: Vec::new(),
            oidc_issuer: None,
            oidc_client_id: None,
            oidc_client_secret_file: None,
            public_url: None,
            audit_log: None,
            tls_cert: None,
            tls_key: None,
        }
    }
}

/// Who may sign in, and how; [`AccountsConfig::enabled`] is false by default.
#[derive(Debug, Clone)]
pub struct AccountsConfig {
    pub users: Option<PathBuf>,
    pub session_hours: u64,
    /// `Secure` cookies: asked for, or served over TLS.
    pub secure_cookies: bool,
    /// The trusted header's name, lower case.
    pub trusted_header: Option<String>,
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// `None`: a name the users file does not know reads nothing.
    pub default_folders: Option<Vec<String>>,
    pub oidc: Option<OidcConfig>,
    pub audit_log: Option<String>,
}

impl Default for AccountsConfig {
    fn default() -> AccountsConfig {
        AccountsConfig {
            users: None,
            session_hours: DEFAULT_SESSION_HOURS,
            secure_cookies: false,
            trusted_header: None,
            trusted_proxies: Vec::new(),
            default_folders: None,
            oidc: None,
            audit_log: None,
        }
    }
}

impl AccountsConfig {
    /// Whether anyone has to sign in: a users file, a trusted header or a provider.
    pub fn enabled(&self) -> bool {
        self.users.is_some() || self.trusted_header.is_some() || self.oidc.is_some()
    }
}

/// The OpenID Connect provider and this client at it.
#[derive(Debug, Clone)]
pub struct OidcConfig {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    /// Where the provider sends the browser back: `--public-url` and `/login/oidc/callback`.
    pub redirect: String,
}

/// HTTPS: the certificate chain and its key, PEM files.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl AccountsArgs {
    /// The checked settings: every setting that needs another is given it, addresses and URLs
    /// parse, the client secret is read.
    pub fn check(self) -> Result<(AccountsConfig, Option<TlsFiles>), Error> {
        let bad = |s: String| Error::BadSetting(s);
        let mut proxies = Vec::new();
        for p in self.trusted_proxies.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            let net = p
                .parse::<ipnet::IpNet>()
                .or_else(|_| p.parse::<IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| bad(format!("--trusted-proxy: {p:?} is not an address or a range like 10.0.0.0/8")))?;
            proxies.push(net);
        }
        let header = match self.trusted_header.as_deref().map(str::trim).filter(|h| !h.is_empty()) {
            None => None,
            Some(h) => {
                axum::http::HeaderName::from_bytes(h.as_bytes())
                    .map_err(|_| bad(format!("--trusted-header: {h:?} is not a header name")))?;
                if proxies.is_empty() {
                    return Err(
                        bad("--trusted-header needs --trusted-proxy: the addresses it is honoured from".into()),
                    );
                }
                Some(h.to_ascii_lowercase())
            }
        };
        let oidc = match (self.oidc_issuer, self.oidc_client_id, self.oidc_client_secret_file, &self.public_url) {
            (None, None, None, _) => None,
            (Some(issuer), Some(client_id), Some(secret_file), Some(public)) => {
                let secret = std::fs::read_to_string(&secret_file)
                    .map_err(|e| bad(format!("--oidc-client-secret-file {}: {e}", secret_file.display())))?;
                let secret = secret.trim().to_string();
                if secret.is_empty() {
                    return Err(bad(format!("--oidc-client-secret-file {}: empty", secret_file.display())));
                }
                let public = url::Url::parse(public.trim())
                    .ok()
                    .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
                    .ok_or_else(|| bad(format!("--public-url: {public:?} is not a URL like https://mail.example.org")))?;
                let redirect = format!("{}/login/oidc/callback", public.as_str().trim_end_matches('/'));
                Some(OidcConfig { issuer: issuer.trim().to_string(), client_id: client_id.trim().to_string(), client_secret: secret, redirect })
            }
            _ => {
                return Err(bad(
                    "OpenID Connect needs all of --oidc-issuer, --oidc-client-id, --oidc-client-secret-file and --public-url"
                        .into(),
                ))
            }
        };
        let folders: Vec<String> =
            self.default_folders.iter().map(|f| f.trim().to_string()).filter(|f| !f.is_empty()).collect();
        for f in folders.iter().filter(|f| *f != "*") {
            check_folder(f).map_err(|why| bad(format!("--default-folders: {f:?}: {why}")))?;
        }
        let tls = match (self.tls_cert, self.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            (None, None) => None,
            _ => return Err(bad("--tls-cert and --tls-key go together".into())),
        };
        let audit_log = self.audit_log.map(|a| a.trim().to_string()).filter(|a| !a.is_empty());
        let accounts = AccountsConfig {
            users: self.users,
            session_hours: self.session_hours,
            secure_cookies: self.secure_cookies || tls.is_some(),
            trusted_header: header,
            trusted_proxies: proxies,
            default_folders: (!folders.is_empty()).then_some(folders),
            oidc,
            audit_log,
        };
        Ok((accounts, tls))
    }
}

/// A folder of the users file: a path as `/api/folders` names it, with at least one segment and
/// no `.` or `..` segments.
pub fn check_folder(f: &str) -> Result<(), String> {
    let segments: Vec<&str> = f.split('/').map(str::trim).filter(|s| !s.is_empty()).collect();
    if segments.is_empty() {
        return Err("names no folder".into());
    }
    if segments.iter().any(|s| *s == "." || *s == "..") {
        return Err("`.` and `..` are not folders: give the path as /api/folders names it".into());
    }
    if f.chars().any(char::is_control) {
        return Err("control characters are not in folder names".into());
    }
    Ok(())
}
