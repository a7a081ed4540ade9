//! The two Content-Security-Policies: one for mailshelf's own pages, which may run exactly one
//! script of ours and nothing else, and a sandboxing one for anything that came from a message;
//! and the other headers of that kind every answer carries.

use std::sync::LazyLock;

use axum::http::{header, HeaderMap, HeaderName, HeaderValue};
use base64::Engine;
use sha2::{Digest, Sha256};

/// The pages' keyboard script. Its hash, not a source like `'self'`, is what the pages' policy
/// allows: `/part/` URLs are same-origin too and serve whatever bytes a message carries, so
/// `'self'` would let a message's attachment run as a script of mailshelf's pages.
pub(crate) const KEYS_JS: &[u8] = include_bytes!("../../static/keys.js");

/// `sha256-…` of [`KEYS_JS`]: the `integrity` of its `<script>` element and, quoted, the only
/// source the pages' `script-src` names. A hash source matches an external script only through
/// its `integrity` metadata (CSP Level 3), so both carry the same value.
pub(crate) static KEYS_JS_INTEGRITY: LazyLock<String> =
    LazyLock::new(|| format!("sha256-{}", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(KEYS_JS))));

/// The policy for mailshelf's own pages: no script but the keyboard script (by its hash), nothing
/// from outside, never framed.
pub(crate) static APP_CSP: LazyLock<String> = LazyLock::new(|| {
    format!(
        "default-src 'none'; script-src '{}'; style-src 'self'; img-src 'self' data:; \
         frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        *KEYS_JS_INTEGRITY
    )
});

/// [`APP_CSP`] as a header value, made once.
pub(crate) static APP_CSP_HEADER: LazyLock<HeaderValue> = LazyLock::new(|| {
    HeaderValue::from_str(&APP_CSP).unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'"))
});

/// The sandbox of anything that comes from a message, as the frame's `sandbox` attribute and the
/// policy's `sandbox` directive: no script, no form, no plugin; links may open outside it, and the
/// page may be left only when the reader clicks. With `same_origin` (a server people sign in to),
/// also `allow-same-origin`, still without scripts: a document of an opaque origin makes every
/// request for its pictures, styles and fonts cross-site, and a browser sends no `SameSite`
/// session cookie with those, so a signed-in reader would see a body without its pictures. Without
/// script, the origin grants the document nothing it could use.
pub(crate) fn sandbox(same_origin: bool) -> &'static str {
    if same_origin {
        "allow-same-origin allow-popups allow-popups-to-escape-sandbox allow-top-navigation-by-user-activation"
    } else {
        "allow-popups allow-popups-to-escape-sandbox allow-top-navigation-by-user-activation"
    }
}

/// The policy for anything that comes from a message: the [`sandbox`]; images, styles, fonts and
/// media only from our routes and `data:`. No `frame-ancestors`: a frame inside a sandboxed
/// message has an opaque-origin parent that no source list can name.
pub(crate) fn content_csp(allow_remote: bool, same_origin: bool) -> String {
    let remote = if allow_remote { " http: https:" } else { "" };
    format!(
        "sandbox {}; \
         default-src 'none'; img-src 'self' data:{remote}; style-src 'self' 'unsafe-inline'{remote}; \
         font-src 'self' data:{remote}; media-src 'self' data:{remote}; frame-src 'self'; \
         form-action 'none'; base-uri 'none'",
        sandbox(same_origin)
    )
}

/// Headers every answer carries (added by [`super::guard`] to each response): no sniffing, no
/// referrer, a window of its own, and the pages' policy where an answer sets none. Kept answers
/// ([`super::served`]) carry them from the start, so that adding them again only replaces them.
pub(crate) fn add_security_headers(h: &mut HeaderMap) {
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.entry(header::CONTENT_SECURITY_POLICY).or_insert_with(|| APP_CSP_HEADER.clone());
    h.entry(HeaderName::from_static("cross-origin-opener-policy")).or_insert(HeaderValue::from_static("same-origin"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pages_may_run_the_keyboard_script_and_nothing_else() {
        let csp = APP_CSP.as_str();
        let script = csp.split(';').map(str::trim).find(|d| d.starts_with("script-src")).unwrap();
        assert_eq!(script, format!("script-src '{}'", *KEYS_JS_INTEGRITY));
        assert!(!csp.contains("'self' ") || !script.contains("'self'"));
        assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"));
        assert_eq!(KEYS_JS_INTEGRITY.len(), "sha256-".len() + 44);
        assert_eq!(APP_CSP_HEADER.to_str().unwrap(), csp);
    }
}
