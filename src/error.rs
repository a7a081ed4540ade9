//! The one error type. Each variant is a noun a user can act on; [`Error::status`] is the one place
//! that maps them to HTTP status codes, and the web layer renders them (HTML or problem+json).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The bytes do not read as an Internet message at all.
    #[error("this does not read as an email message or MHTML archive")]
    Unparseable,
    /// No message with that id is loaded.
    #[error("no message with that id")]
    MessageNotFound,
    /// The message has no part with that id.
    #[error("no part with that id in this message")]
    PartNotFound,
    /// The part is a `message/external-body`: its data lives where the text says, and mailshelf
    /// never goes there.
    #[error("this part's data is not in the message: {0}; mailshelf does not fetch it")]
    ExternalBody(String),
    /// A part whose text was asked for (`?text=1`) is no document mailshelf reads, or one it could
    /// not read: the reason.
    #[error("no text of this part can be shown: {0}")]
    NoDocumentText(String),
    /// Nothing is served at that path.
    #[error("nothing is served at this address")]
    NoRoute,
    /// Something is served at that path, but not to that method (the `Allow` header says which).
    #[error("this address does not take that method")]
    MethodNotAllowed,
    /// An id in the URL is not a well-formed RFC 2392 url-addr-spec.
    #[error("malformed id in the URL")]
    BadId,
    /// A request the route cannot take (bad parameter, bad upload form).
    #[error("{0}")]
    BadRequest(String),
    /// A search query that does not parse.
    #[error("bad search query: {0}")]
    BadQuery(String),
    /// An upload beyond the configured size limit.
    #[error("the upload is larger than the limit")]
    TooLarge,
    /// A request addressed to a host name this server does not answer to (DNS rebinding defence).
    #[error("this server does not answer to that host name; add it with --allowed-host if it is yours")]
    UnknownHost,
    /// A write sent by another site's page (cross-site request forgery defence).
    #[error("writes are accepted only from mailshelf's own pages or origins allowed with --cors-origin")]
    CrossSiteWrite,
    /// A route that needs a signed-in reader, asked without credentials or with wrong ones.
    #[error("sign in to read this archive")]
    Unauthorized,
    /// A signed-in reader who may not do this: uploads and deletes need an admin.
    #[error("only an admin may upload or delete messages")]
    NotAdmin,
    /// An admin limited to folders that leave out Uploads, where uploads are filed.
    #[error(
        "uploads are filed in the Uploads folder, which is not among your folders: ask for it to be added to them"
    )]
    UploadsOutOfReach,
    /// Too many failed sign-ins from this address or for this name, lately.
    #[error("too many failed sign-ins; try again in {0} seconds")]
    TooManyAttempts(u64),
    /// A sign-in with the identity provider that did not come through (the log says why).
    #[error("the sign-in with the identity provider did not succeed; try again")]
    SignInFailed,
    /// A mounted message is read-only; only uploads can be deleted.
    #[error("mounted messages are read-only")]
    ReadOnly,
    /// A path given on the command line cannot be used.
    #[error("{path}: {reason}")]
    BadPath { path: PathBuf, reason: String },
    /// A setting given at start-up cannot be used (a flag's value, an address to listen on).
    #[error("{0}")]
    BadSetting(String),
    /// PDFs are made with a browser this server does not have.
    #[error(
        "PDFs are rendered with Chromium, which this server does not have; install it (Debian: apt-get install chromium) \
         or name it with --chromium / MAILSHELF_CHROMIUM. The print view works without it"
    )]
    NoRenderer,
    /// The browser that renders PDFs could not be started or stopped answering (it was removed
    /// after start-up, or the machine is out of processes or memory): worth a retry, and the
    /// print view still works. The cause goes to the log.
    #[error(
        "the PDF renderer (Chromium) could not be started or stopped answering; try again, or print the print view"
    )]
    RendererFailed {
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The message's PDF would be larger or take longer to render than the limits allow (a page
    /// drawn miles long, a table of a hundred thousand rows): the print view still shows it.
    #[error(
        "this message's PDF would be larger than 64 MiB or take longer than 60 seconds to render; \
         its print view shows it, and the browser can print that"
    )]
    PdfOverLimit,
    /// As many PDFs as may wait for the renderer are waiting: worth a retry in a moment.
    #[error("the PDF renderer is busy with other PDFs; try again in a moment")]
    RendererBusy,
    /// The source a message was indexed from is gone or changed under us.
    #[error("the source of this message is no longer readable")]
    SourceGone,
    /// The shared database cannot be reached (restarting, or the network is down): the same
    /// request will work once it is back.
    #[error("the database cannot be reached; try again in a moment")]
    StoreUnavailable,
    /// Reading or writing storage failed.
    #[error("storage error: {0}")]
    Io(#[from] std::io::Error),
    /// Anything else that is our fault: what we were doing and why it failed, logged with its
    /// source chain, never shown.
    #[error("internal error: {context}")]
    Internal {
        context: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl Error {
    /// Our fault while doing `context`, keeping the cause as the error's source.
    pub fn internal(context: &'static str, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
        Error::Internal { context, source: source.into() }
    }
}

impl Error {
    /// The HTTP status for each error: one exhaustive mapping.
    pub fn status(&self) -> u16 {
        match self {
            Error::Unparseable | Error::NoDocumentText(_) | Error::PdfOverLimit => 422,
            Error::MessageNotFound | Error::PartNotFound | Error::ExternalBody(_) | Error::NoRoute => 404,
            Error::BadId | Error::BadRequest(_) | Error::BadQuery(_) => 400,
            Error::TooLarge => 413,
            Error::UnknownHost => 421,
            Error::CrossSiteWrite => 403,
            Error::Unauthorized | Error::SignInFailed => 401,
            Error::NotAdmin | Error::UploadsOutOfReach => 403,
            Error::TooManyAttempts(_) => 429,
            Error::ReadOnly | Error::MethodNotAllowed => 405,
            Error::SourceGone => 410,
            Error::NoRenderer => 501,
            Error::StoreUnavailable | Error::RendererFailed { .. } | Error::RendererBusy => 503,
            // Start-up errors never reach a request; were one to, it is ours to fix.
            Error::BadPath { .. } | Error::BadSetting(_) => 500,
            Error::Io(_) | Error::Internal { .. } => 500,
        }
    }

    /// A short stable title and a type slug for problem+json (RFC 9457).
    pub fn kind(&self) -> (&'static str, &'static str) {
        match self {
            Error::Unparseable => ("unparseable", "Unparseable message"),
            Error::MessageNotFound => ("message-not-found", "Message not found"),
            Error::PartNotFound => ("part-not-found", "Part not found"),
            Error::ExternalBody(_) => ("external-body", "Part stored elsewhere"),
            Error::NoDocumentText(_) => ("no-document-text", "No text to show"),
            Error::NoRoute => ("not-found", "Not found"),
            Error::MethodNotAllowed => ("method-not-allowed", "Method not allowed"),
            Error::BadId => ("bad-id", "Malformed id"),
            Error::BadRequest(_) => ("bad-request", "Bad request"),
            Error::BadQuery(_) => ("bad-query", "Bad search query"),
            Error::TooLarge => ("too-large", "Payload too large"),
            Error::UnknownHost => ("unknown-host", "Misdirected request"),
            Error::CrossSiteWrite => ("cross-site-write", "Cross-site write refused"),
            Error::ReadOnly => ("read-only", "Read-only message"),
            Error::Unauthorized => ("unauthorized", "Sign in first"),
            Error::NotAdmin => ("not-admin", "Admins only"),
            Error::UploadsOutOfReach => ("uploads-out-of-reach", "Uploads not among your folders"),
            Error::TooManyAttempts(_) => ("too-many-attempts", "Too many failed sign-ins"),
            Error::SignInFailed => ("sign-in-failed", "Sign-in failed"),
            Error::BadPath { .. } => ("bad-path", "Unusable path"),
            Error::BadSetting(_) => ("bad-setting", "Unusable setting"),
            Error::SourceGone => ("source-gone", "Source no longer readable"),
            Error::NoRenderer => ("no-renderer", "PDF rendering not available"),
            Error::RendererFailed { .. } => ("renderer-failed", "PDF renderer failed"),
            Error::PdfOverLimit => ("pdf-over-limit", "PDF beyond the limits"),
            Error::RendererBusy => ("renderer-busy", "PDF renderer busy"),
            Error::StoreUnavailable => ("unavailable", "Database unavailable"),
            Error::Io(_) | Error::Internal { .. } => ("internal", "Internal error"),
        }
    }

    /// What a user may be told: internal details stay in the log. (A missing or failed renderer is
    /// a 5xx that is no secret: it says what to install or to retry; nor is a database that is away.)
    pub fn public_detail(&self) -> String {
        if self.status() >= 500
            && !matches!(
                self,
                Error::NoRenderer | Error::RendererFailed { .. } | Error::RendererBusy | Error::StoreUnavailable
            )
        {
            "Something went wrong on our side; the server log has the details.".to_string()
        } else {
            self.to_string()
        }
    }
}
