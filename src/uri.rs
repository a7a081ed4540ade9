//! RFC 2557 base URIs: resolving a reference against its base, and the `thismessage:/` default.
//!
//! Both sides of every comparison (a reference in HTML, a Content-Location header) go through the same
//! [`resolve`], so they compare octet by octet as §8.2 asks, after the same normalisation.

use url::Url;

/// The base of last resort (RFC 2557 §5 e).
pub(crate) const THIS_MESSAGE: &str = "thismessage:/";

/// Resolves `reference` against `base`; `None` when either is not a URI we can read.
/// Percent-encoding in the reference is kept as written (no decoding, §8.2).
pub(crate) fn resolve(base: &str, reference: &str) -> Option<String> {
    let reference = clean_reference(reference);
    if reference.is_empty() {
        return None;
    }
    let base = Url::parse(base).or_else(|_| Url::parse(THIS_MESSAGE)).ok()?;
    base.join(&reference).ok().map(String::from)
}

/// Removes the white space that header folding or HTML attribute wrapping leaves inside a URI
/// (RFC 2557 §4.4, RFC 2017 §3: it is not part of the URI).
pub(crate) fn clean_reference(reference: &str) -> String {
    let t = reference.trim();
    let t = t.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or(t);
    t.chars().filter(|c| !matches!(c, '\r' | '\n' | '\t')).collect::<String>().trim().to_string()
}

/// The scheme of a URI in lower case, if it has one.
pub(crate) fn scheme_of(uri: &str) -> Option<String> {
    let (scheme, _) = uri.split_once(':')?;
    let mut chars = scheme.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (first_ok && rest_ok).then(|| scheme.to_ascii_lowercase())
}

/// True for references that would leave the machine: `http:`, `https:`, `ftp:` and
/// protocol-relative `//host` references (which inherit the viewer's scheme).
pub(crate) fn is_network(resolved_or_raw: &str) -> bool {
    let t = resolved_or_raw.trim_start();
    if t.starts_with("//") || t.starts_with("\\\\") {
        return true;
    }
    matches!(scheme_of(t).as_deref(), Some("http" | "https" | "ftp" | "ws" | "wss"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 2557 §9: each example's reference, the base in force, and the URI it must resolve to.
    #[test]
    fn rfc2557_section9_examples() {
        let cases = [
            // 9.1 / 9.2: absolute Content-Location, absolute reference
            (
                "http://www.ietf.cnri.reston.va.us/images/",
                "http://www.ietf.cnri.reston.va.us/images/ietflogo.gif",
                "http://www.ietf.cnri.reston.va.us/images/ietflogo.gif",
            ),
            // 9.3: relative Content-Location against the outer absolute one
            (
                "http://www.ietf.cnri.reston.va.us/images/",
                "ietflogo.gif",
                "http://www.ietf.cnri.reston.va.us/images/ietflogo.gif",
            ),
            (
                "http://www.ietf.cnri.reston.va.us/images/page.html",
                "../logo.gif",
                "http://www.ietf.cnri.reston.va.us/logo.gif",
            ),
            // 9.4: no base at all: thismessage:/
            (THIS_MESSAGE, "images/ietflogo.gif", "thismessage:/images/ietflogo.gif"),
            (THIS_MESSAGE, "ietflogo.gif", "thismessage:/ietflogo.gif"),
            // a base that is itself unreadable falls back to thismessage:/
            ("not a uri", "a.gif", "thismessage:/a.gif"),
            // folding white space inside a Content-Location is removed
            ("http://x.example/", "dir/\r\n\tpage.html", "http://x.example/dir/page.html"),
            // percent-encoding is kept, not decoded
            ("http://x.example/", "a%20b.png", "http://x.example/a%20b.png"),
        ];
        for (base, reference, want) in cases {
            assert_eq!(resolve(base, reference).as_deref(), Some(want), "{base} + {reference}");
        }
    }

    #[test]
    fn network_references() {
        for (u, net) in [
            ("http://a/b", true),
            ("HTTPS://a", true),
            ("//a.example/x.png", true),
            ("cid:x", false),
            ("thismessage:/a", false),
            ("data:image/png;base64,AA", false),
            ("img.png", false),
        ] {
            assert_eq!(is_network(u), net, "{u}");
        }
    }
}
