//! The two Content-Security-Policies: a script-free one for mailshelf's own pages, and a sandboxing
//! one for anything that came from a message.

/// The policy for mailshelf's own pages: no script at all, nothing from outside, never framed.
pub const APP_CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; \
    frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The policy for anything that comes from a message: a sandbox without scripts or same-origin
/// access; images, styles, fonts and media only from our routes and `data:`. No `frame-ancestors`:
/// a frame inside a sandboxed message has an opaque-origin parent that no source list can name.
pub fn content_csp(allow_remote: bool) -> String {
    let remote = if allow_remote { " http: https:" } else { "" };
    format!(
        "sandbox allow-popups allow-popups-to-escape-sandbox allow-top-navigation-by-user-activation; \
         default-src 'none'; img-src 'self' data:{remote}; style-src 'self' 'unsafe-inline'{remote}; \
         font-src 'self' data:{remote}; media-src 'self' data:{remote}; frame-src 'self'; \
         form-action 'none'; base-uri 'none'"
    )
}
