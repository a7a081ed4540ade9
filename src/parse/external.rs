//! `message/external-body` (RFC 2046 §5.2.3, RFC 2017): a part that carries no data, only where the
//! data is. Its Content-Type parameters name the place (`access-type=URL; URL="…"`, or the older
//! `ANON-FTP`, `FTP`, `TFTP`, `LOCAL-FILE`, `MAIL-SERVER`), and its body is a "phantom": the header
//! of the data that lives there, then text that is not the data. This module reads both into
//! [`External`]; nothing here (or anywhere in mailshelf) goes to the place to fetch it.

use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

use crate::ingest::starts_with_field;
use crate::limits::{MAX_MAIL_SERVER_REQUEST, MAX_PHANTOM_HEADER};
use crate::model::External;
use crate::uri;

/// What the phantom header says of the data, read by the caller (which knows the header parser).
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Phantom {
    /// `type/subtype` as written (checked and lower-cased here).
    pub content_type: Option<(String, String)>,
    pub content_id: Option<String>,
    pub description: Option<String>,
}

/// What may stand unencoded in a path segment of a URL we form (RFC 3986 pchar, less `;`).
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b';')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// Splits a phantom body into its header block and the text after it, reading at most
/// [`MAX_PHANTOM_HEADER`] bytes for the header. A body that does not start with a header field
/// (RFC 2017's "THIS IS NOT REALLY THE BODY!" on its own, or nothing at all) has no header.
pub(super) fn split_phantom(body: &[u8]) -> (&[u8], &[u8]) {
    if let Some(rest) = body.strip_prefix(b"\r\n").or_else(|| body.strip_prefix(b"\n")) {
        return (&[], rest);
    }
    if !starts_with_field(body) {
        return (&[], body);
    }
    let window = &body[..body.len().min(MAX_PHANTOM_HEADER)];
    let mut line_start = 0;
    while line_start < window.len() {
        let Some(nl) = window[line_start..].iter().position(|&b| b == b'\n') else { break };
        let next = line_start + nl + 1;
        let line = &window[line_start..next];
        if line == b"\n" || line == b"\r\n" {
            return (&body[..line_start], &body[next..]);
        }
        line_start = next;
    }
    if body.len() <= MAX_PHANTOM_HEADER {
        (body, &[])
    } else {
        // No end in sight: the whole lines that fit are the header, the rest is not read as one.
        (&body[..line_start], &body[line_start..])
    }
}

/// The external body described by the entity's Content-Type parameters (names in lower case, as
/// [`crate::model::Part::params`] keeps them), its phantom header and the text after it.
pub(super) fn describe(
    params: &[(String, String)],
    phantom: Phantom,
    after_header: &[u8],
    entity_description: Option<&str>,
    expires_at: Option<i64>,
) -> External {
    let param = |name: &str| params.iter().find(|(n, _)| n == name).map(|(_, v)| clean(v)).filter(|v| !v.is_empty());
    let access_type = param("access-type").map(|a| a.to_ascii_lowercase());
    let (name, site, directory) = (param("name"), param("site"), param("directory"));
    let url = match access_type.as_deref() {
        Some("url") => params.iter().find(|(n, _)| n == "url").and_then(|(_, v)| recover_url(v)),
        Some("anon-ftp" | "ftp") => formed_url("ftp", site.as_deref(), directory.as_deref(), name.as_deref()),
        Some("tftp") => formed_url("tftp", site.as_deref(), None, name.as_deref()),
        _ => None,
    };
    let link = url.as_deref().filter(|u| is_linkable(u)).map(str::to_string);
    let request = match access_type.as_deref() {
        Some("mail-server") => mail_request(after_header),
        _ => None,
    };
    External {
        url,
        link,
        content_type: phantom.content_type.and_then(|(t, s)| media_type(&t, &s)),
        content_id: phantom.content_id.map(|c| clean(crate::ids::strip_angles(&c))).filter(|c| !c.is_empty()),
        description: phantom
            .description
            .or(entity_description.map(str::to_string))
            .map(|d| clean(&d))
            .filter(|d| !d.is_empty()),
        name,
        site,
        directory,
        mode: param("mode"),
        server: param("server"),
        subject: param("subject"),
        expiration: param("expiration"),
        expires_at,
        size: param("size").and_then(|s| s.parse().ok()),
        permission: param("permission").map(|p| p.to_ascii_lowercase()),
        request,
        access_type,
    }
}

/// RFC 2017 §3.1: "The enclosing quotes and any linear whitespace are removed and the remaining
/// material is the URL string." A long URL arrives as quoted words over several folded lines. The
/// `<…>` of the ABNF there is taken off too. Control characters are kept out of what we show.
pub(super) fn recover_url(value: &str) -> Option<String> {
    let t = value.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\r' | '\n'));
    let t = t.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or(t);
    let joined: String = t.chars().filter(|c| !matches!(c, ' ' | '\t' | '\r' | '\n')).collect();
    let joined = joined.strip_prefix('<').and_then(|s| s.strip_suffix('>')).unwrap_or(&joined);
    let shown: String = joined.chars().map(|c| if c.is_control() { '\u{FFFD}' } else { c }).collect();
    (!shown.is_empty()).then_some(shown)
}

/// The URL an `ANON-FTP`, `FTP` or `TFTP` reference stands for (`ftp://site/directory/name`,
/// `tftp://site/name`), each path segment percent-encoded; `None` without a usable site or name.
fn formed_url(scheme: &str, site: Option<&str>, directory: Option<&str>, name: Option<&str>) -> Option<String> {
    let site = site?.trim();
    let host_ok = !site.is_empty()
        && site.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':' | '[' | ']'));
    if !host_ok {
        return None;
    }
    // `.` and `..` are names here, not steps up a path: they are encoded so they stay names.
    let segments = |s: &str| {
        s.split('/')
            .filter(|seg| !seg.is_empty())
            .map(|seg| match seg {
                "." => "%2E".to_string(),
                ".." => "%2E%2E".to_string(),
                _ => utf8_percent_encode(seg, SEGMENT).to_string(),
            })
            .collect::<Vec<_>>()
    };
    let file = segments(name?);
    if file.is_empty() {
        return None;
    }
    let mut path = directory.map(segments).unwrap_or_default();
    path.extend(file);
    Some(format!("{scheme}://{}/{}", site.to_ascii_lowercase(), path.join("/")))
}

/// A URL a reader may follow: `http`, `https` or `ftp`, printable ASCII without the characters
/// RFC 2017 says must be encoded, with a host written out (`scheme://host…`: browsers would
/// make a host of whatever follows `http:///`).
pub(super) fn is_linkable(url: &str) -> bool {
    let printable = url.bytes().all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'<' | b'>' | b'\\'));
    let Some(scheme) = uri::scheme_of(url).filter(|s| matches!(s.as_str(), "http" | "https" | "ftp")) else {
        return false;
    };
    let authority = url.get(scheme.len() + 1..).and_then(|r| r.strip_prefix("//")).is_some_and(|r| !r.starts_with('/'));
    printable && authority && url::Url::parse(url).is_ok_and(|u| u.host_str().is_some_and(|h| !h.is_empty()))
}

/// `type/subtype` in lower case when both are tokens.
fn media_type(main: &str, sub: &str) -> Option<String> {
    let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b));
    let (main, sub) = (main.trim().to_ascii_lowercase(), sub.trim().to_ascii_lowercase());
    (token(&main) && token(&sub)).then(|| format!("{main}/{sub}"))
}

/// The request to mail to a `MAIL-SERVER`: the phantom's text, lines kept, control characters out,
/// at most [`MAX_MAIL_SERVER_REQUEST`] characters.
fn mail_request(text: &[u8]) -> Option<String> {
    // A character is at most 4 bytes: nothing beyond that many is looked at.
    let text = String::from_utf8_lossy(&text[..text.len().min(MAX_MAIL_SERVER_REQUEST * 4)]);
    let kept: String = text
        .replace("\r\n", "\n")
        .chars()
        .filter(|&c| c == '\n' || !c.is_control())
        .take(MAX_MAIL_SERVER_REQUEST)
        .collect();
    let kept = kept.trim();
    (!kept.is_empty()).then(|| kept.to_string())
}

/// A parameter or header value as shown: control characters become spaces, ends trimmed.
fn clean(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect::<String>().trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Body, Message};
    use crate::parse::parse_message;
    use std::sync::Arc;

    fn parse(s: &str) -> Message {
        parse_message(Arc::from(s.replace('\n', "\r\n").into_bytes())).expect("parses")
    }

    fn external_of(m: &Message) -> &External {
        m.parts.iter().find_map(|p| p.external.as_ref()).expect("an external body")
    }

    fn params(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    #[test]
    fn url_is_recovered_as_rfc2017_says() {
        let cases = [
            ("\"http://www.foo.com/file\"", Some("http://www.foo.com/file")),
            ("http://www.foo.com/file", Some("http://www.foo.com/file")),
            (
                "ftp://ftp.deepdirs.org/1/2/3/4/5/6/7/\r\n                  8/9/10/11/12/13/14/15/16/17/18/20/21/\r\n                  file.html",
                Some("ftp://ftp.deepdirs.org/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/20/21/file.html"),
            ),
            ("ftp://a.example/x/ \t y.txt", Some("ftp://a.example/x/y.txt")),
            ("<http://a.example/b>", Some("http://a.example/b")),
            ("\"<http://a.example/ b>\"", Some("http://a.example/b")),
            ("http://a.example/\u{1}x", Some("http://a.example/\u{FFFD}x")),
            ("", None),
            ("  \"\" ", None),
        ];
        for (value, want) in cases {
            assert_eq!(recover_url(value).as_deref(), want, "{value:?}");
        }
    }

    #[test]
    fn only_sane_http_https_and_ftp_urls_are_links() {
        let cases = [
            ("http://www.foo.com/file", true),
            ("HTTPS://a.example/x?y=1#z", true),
            ("ftp://ftp.deepdirs.org/1/file.html", true),
            ("tftp://a.example/f", false),
            ("file:///etc/passwd", false),
            ("javascript:alert(1)", false),
            ("data:text/html,<script>alert(1)</script>", false),
            ("mailto:a@b.example", false),
            ("http://a.example/\u{FFFD}x", false),
            ("http://a.example/a\"b", false),
            ("http:///nohost", false),
            ("http://", false),
            ("/relative/path", false),
            ("http://a.example/é", false),
        ];
        for (url, want) in cases {
            assert_eq!(is_linkable(url), want, "{url:?}");
        }
    }

    #[test]
    fn ftp_and_tftp_references_form_their_urls() {
        // (parameters, the URL formed, whether it is a link)
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, bool);
        let cases: &[Case] = &[
            (
                &[
                    ("access-type", "ANON-FTP"),
                    ("site", "thumper.bellcore.com"),
                    ("directory", "pub"),
                    ("name", "BodyFormats.ps"),
                ],
                Some("ftp://thumper.bellcore.com/pub/BodyFormats.ps"),
                true,
            ),
            (
                &[
                    ("access-type", "FTP"),
                    ("site", "Ds.Internic.Net"),
                    ("directory", "/internet-drafts/"),
                    ("name", "a b.txt"),
                ],
                Some("ftp://ds.internic.net/internet-drafts/a%20b.txt"),
                true,
            ),
            (&[("access-type", "anon-ftp"), ("site", "a.example"), ("name", "f")], Some("ftp://a.example/f"), true),
            (
                &[("access-type", "tftp"), ("site", "a.example"), ("name", "boot/img")],
                Some("tftp://a.example/boot/img"),
                false,
            ),
            (&[("access-type", "anon-ftp"), ("site", "a.example")], None, false),
            (&[("access-type", "anon-ftp"), ("name", "f")], None, false),
            (&[("access-type", "anon-ftp"), ("site", "evil.example/x@y"), ("name", "f")], None, false),
            (
                &[("access-type", "anon-ftp"), ("site", "a.example"), ("name", "../..")],
                Some("ftp://a.example/%2E%2E/%2E%2E"),
                true,
            ),
        ];
        for (list, want, linked) in cases {
            let e = describe(&params(list), Phantom::default(), b"", None, None);
            assert_eq!(e.url.as_deref(), *want, "{list:?}");
            assert_eq!(e.link.is_some(), *linked, "{list:?}");
        }
    }

    #[test]
    fn parameters_are_read_case_insensitively() {
        let m = parse("Content-Type: MESSAGE/EXTERNAL-BODY; ACCESS-TYPE=Anon-FTP; NAME=\"x.txt\"; SITE=\"ftp.example\";\n DIRECTORY=pub; MODE=image; SIZE=1234; PERMISSION=Read; EXPIRATION=\"Fri, 14 Jun 1991 19:13:14 -0400 (EDT)\"\n\nContent-Type: Text/Plain\n\n");
        assert_eq!(m.parts.len(), 1, "the whole body is external");
        let e = external_of(&m);
        assert_eq!(e.access_type.as_deref(), Some("anon-ftp"));
        assert_eq!(e.url.as_deref(), Some("ftp://ftp.example/pub/x.txt"));
        assert_eq!(e.content_type.as_deref(), Some("text/plain"));
        assert_eq!(e.mode.as_deref(), Some("image"));
        assert_eq!(e.size, Some(1234));
        assert_eq!(e.permission.as_deref(), Some("read"));
        assert_eq!(e.expiration.as_deref(), Some("Fri, 14 Jun 1991 19:13:14 -0400 (EDT)"));
        assert_eq!(e.expires_at, Some(676_941_194));
        assert!(e.is_expired(676_941_194) && !e.is_expired(676_941_193));
    }

    #[test]
    fn rfc2017_folded_examples_parse() {
        let m = parse(
            "Message-ID: <u@x>\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-type: message/external-body; access-type=URL;\n              URL=\"http://www.foo.com/file\"\n\nContent-type: text/html\nContent-Transfer-Encoding: binary\n\nTHIS IS NOT REALLY THE BODY!\n--b\nContent-type: message/external-body; access-type=URL;\n              URL=\"ftp://ftp.deepdirs.org/1/2/3/4/5/6/7/\n                  8/9/10/11/12/13/14/15/16/17/18/20/21/\n                  file.html\"\n\nContent-type: text/html\nContent-Transfer-Encoding: binary\n\nTHIS IS NOT REALLY THE BODY!\n--b--\n",
        );
        let ext: Vec<&External> = m.parts.iter().filter_map(|p| p.external.as_ref()).collect();
        assert_eq!(ext.len(), 2);
        assert_eq!(ext[0].url.as_deref(), Some("http://www.foo.com/file"));
        assert_eq!(ext[0].redirect(), Some("http://www.foo.com/file"));
        assert_eq!(
            ext[1].url.as_deref(),
            Some("ftp://ftp.deepdirs.org/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/20/21/file.html")
        );
        assert_eq!(ext[1].link.as_deref(), ext[1].url.as_deref());
        assert_eq!(ext[1].redirect(), None, "ftp is a link, never a redirect");
        for e in ext {
            assert_eq!(e.access_type.as_deref(), Some("url"));
            assert_eq!(e.content_type.as_deref(), Some("text/html"));
        }
        for p in m.parts.iter().filter(|p| p.external.is_some()) {
            assert!(p.bytes().is_empty(), "the phantom is not the part's content");
            assert!(matches!(p.body, Body::Binary(_)));
        }
    }

    #[test]
    fn rfc2231_continued_urls_are_joined() {
        let m = parse(
            "Content-Type: message/external-body; access-type=URL;\n    URL*0=\"ftp://\";\n    URL*1=\"cs.utk.edu/pub/moore/bulk-mailer/bulk-mailer.tar\"\n\nContent-Type: application/x-tar\n\n",
        );
        let e = external_of(&m);
        assert_eq!(e.url.as_deref(), Some("ftp://cs.utk.edu/pub/moore/bulk-mailer/bulk-mailer.tar"));
        assert_eq!(e.link, e.url);
    }

    #[test]
    fn rfc2046_examples_parse() {
        let m = parse(
            "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: message/external-body; access-type=local-file;\n     name=\"/u/nsb/Me.jpeg\"\n\nContent-type: image/jpeg\nContent-ID: <id42@guppylake.bellcore.com>\nContent-Transfer-Encoding: base64\nContent-Description: \"Me\"\n\nTHIS IS NOT REALLY THE BODY!\n--b\nContent-Type: message/external-body;\n     access-type=mail-server;\n     server=\"listserv@bogus.bitnet\";\n     expiration=\"Fri, 14 Jun 1991 19:13:14 -0400 (EDT)\"\n\nContent-type: application/postscript\nContent-ID: <id43@guppylake.bellcore.com>\n\nget RFC-MIME.DOC\n--b--\n",
        );
        let local = m.parts[1].external.as_ref().expect("local-file");
        assert_eq!(local.access_type.as_deref(), Some("local-file"));
        assert_eq!(local.name.as_deref(), Some("/u/nsb/Me.jpeg"));
        assert_eq!((local.url.as_deref(), local.link.as_deref()), (None, None));
        assert_eq!(local.content_type.as_deref(), Some("image/jpeg"));
        assert_eq!(local.content_id.as_deref(), Some("id42@guppylake.bellcore.com"));
        assert_eq!(local.description.as_deref(), Some("\"Me\""));
        assert_eq!(m.parts[1].filename, None, "the name is where the data is, not a file here");
        assert_eq!(m.part_by_content_id("id42@guppylake.bellcore.com"), Some(1), "the phantom's Content-ID");
        let mail = m.parts[2].external.as_ref().expect("mail-server");
        assert_eq!(mail.server.as_deref(), Some("listserv@bogus.bitnet"));
        assert_eq!(mail.request.as_deref(), Some("get RFC-MIME.DOC"));
        assert_eq!(mail.content_type.as_deref(), Some("application/postscript"));
        assert!(mail.is_expired(0x7fff_ffff));
    }

    #[test]
    fn entity_content_id_wins_over_the_phantoms() {
        let m = parse(
            "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: message/external-body; access-type=URL; URL=\"http://a.example/x.png\"\nContent-ID: <outer@x>\n\nContent-Type: image/png\nContent-ID: <inner@x>\n\n--b--\n",
        );
        assert_eq!(m.part_by_content_id("outer@x"), Some(1));
        assert_eq!(m.part_by_content_id("inner@x"), None);
        assert_eq!(external_of(&m).content_id.as_deref(), Some("inner@x"));
    }

    #[test]
    fn bad_input_is_shown_as_far_as_sane() {
        // (Content-Type parameters, access type, url, link)
        type Case<'a> = (&'a str, Option<&'a str>, Option<&'a str>, Option<&'a str>);
        let cases: &[Case] = &[
            ("access-type=URL", Some("url"), None, None),
            ("access-type=URL; URL=\"\"", Some("url"), None, None),
            ("access-type=URL; url=\"javascript:alert(1)\"", Some("url"), Some("javascript:alert(1)"), None),
            ("access-type=URL; URL=\"data:text/html,x\"", Some("url"), Some("data:text/html,x"), None),
            ("access-type=URL; URL=\"file:///etc/passwd\"", Some("url"), Some("file:///etc/passwd"), None),
            ("access-type=URL; URL=\"http://a.example/\u{7}b\"", Some("url"), Some("http://a.example/\u{FFFD}b"), None),
            ("access-type=X-Carrier-Pigeon; URL=\"http://a.example/\"", Some("x-carrier-pigeon"), None, None),
            ("URL=\"http://a.example/\"", None, None, None),
            ("access-type=content-id", Some("content-id"), None, None),
        ];
        for (ps, access, url, link) in cases {
            let m = parse(&format!("Content-Type: message/external-body; {ps}\n\n"));
            let e = external_of(&m);
            assert_eq!(e.access_type.as_deref(), *access, "{ps}");
            assert_eq!(e.url.as_deref(), *url, "{ps}");
            assert_eq!(e.link.as_deref(), *link, "{ps}");
            assert_eq!(e.redirect(), None, "{ps}");
        }
    }

    #[test]
    fn phantoms_split_at_their_blank_line() {
        let long = format!("Content-Type: text/plain\n{}", "X-Pad: y\n".repeat(MAX_PHANTOM_HEADER / 9 + 10));
        let cases: &[(&[u8], &[u8], &[u8])] = &[
            (
                b"Content-Type: text/plain\r\nContent-ID: <a@b>\r\n\r\nnot the body",
                b"Content-Type: text/plain\r\nContent-ID: <a@b>\r\n",
                b"not the body",
            ),
            (b"Content-Type: text/plain\n\n", b"Content-Type: text/plain\n", b""),
            (b"Content-Type: text/plain\n", b"Content-Type: text/plain\n", b""),
            (b"\r\nget RFC-MIME.DOC\r\n", b"", b"get RFC-MIME.DOC\r\n"),
            (b"THIS IS NOT REALLY THE BODY!\r\n", b"", b"THIS IS NOT REALLY THE BODY!\r\n"),
            (b"", b"", b""),
            (b": no name\n\n", b"", b": no name\n\n"),
        ];
        for (body, header, rest) in cases {
            assert_eq!(split_phantom(body), (*header, *rest), "{}", String::from_utf8_lossy(body));
        }
        let (header, rest) = split_phantom(long.as_bytes());
        assert!(header.len() <= MAX_PHANTOM_HEADER && header.ends_with(b"\n"));
        assert_eq!(header.len() + rest.len(), long.len());
    }

    #[test]
    fn missing_phantom_and_corpus_shapes() {
        // As in flanker's message-external-body.eml: upper-case names, no phantom at all.
        let m = parse(
            "Content-Type: multipart/alternative; boundary=OtherAccess\n\n--OtherAccess\nContent-Type: MESSAGE/EXTERNAL-BODY; ACCESS-TYPE=mail-server; SERVER=\"mailserv@ds.internic.net\"\nContent-ID: <f@x>\n\n--OtherAccess\nContent-Type: MESSAGE/EXTERNAL-BODY; NAME=\"draft-ietf-http-authentication-00.txt\"; SITE=\"ds.internic.net\"; ACCESS-TYPE=anon-ftp; DIRECTORY=internet-drafts\nContent-ID: <g@x>\n\n--OtherAccess--\n",
        );
        let mail = m.parts[1].external.as_ref().expect("mail-server");
        assert_eq!(mail.server.as_deref(), Some("mailserv@ds.internic.net"));
        assert_eq!((mail.content_type.as_deref(), mail.request.as_deref()), (None, None));
        let ftp = m.parts[2].external.as_ref().expect("anon-ftp");
        assert_eq!(
            ftp.url.as_deref(),
            Some("ftp://ds.internic.net/internet-drafts/draft-ietf-http-authentication-00.txt")
        );
        assert_eq!(m.part_by_content_id("g@x"), Some(2));
        assert_eq!((m.html_body, m.text_body), (None, None), "a phantom is never a body");
    }

    #[test]
    fn description_comes_from_the_phantom_else_the_entity() {
        let m = parse(
            "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: message/external-body; access-type=URL; URL=\"http://a.example/1\"\nContent-Description: outer\n\nContent-Type: text/plain\nContent-Description: =?utf-8?q?Caf=C3=A9_menu?=\n\n--b\nContent-Type: message/external-body; access-type=URL; URL=\"http://a.example/2\"\nContent-Description: only outer\n\nContent-Type: text/plain\n\n--b--\n",
        );
        assert_eq!(m.parts[1].external.as_ref().and_then(|e| e.description.as_deref()), Some("Café menu"));
        assert_eq!(m.parts[2].external.as_ref().and_then(|e| e.description.as_deref()), Some("only outer"));
    }
}
