use std::sync::Arc;

use super::*;
use crate::parse::parse_message;
use crate::view::fixtures::{mail, Fixture};

fn parsed(raw: &str) -> Message {
    parse_message(Arc::from(raw.as_bytes())).unwrap()
}

/// A multipart message of `parts`, each its header lines and body.
fn multipart(kind: &str, parts: &[(&str, &str)]) -> String {
    let mut out =
        format!("Subject: parts\nMessage-ID: <parts@x>\nMIME-Version: 1.0\nContent-Type: {kind}; boundary=b\n\n");
    for (headers, body) in parts {
        out.push_str(&format!("--b\n{headers}\n\n{body}\n"));
    }
    out.push_str("--b--\n");
    out
}

#[test]
fn neighbours_are_the_messages_around_it_in_the_list() {
    let files: Vec<(String, String)> =
        (1..=5).map(|d| (format!("{d}.eml"), mail(&format!("d{d}@x"), "day", d, "", "x"))).collect();
    let mut files: Vec<(&str, String)> = files.iter().map(|(p, c)| (p.as_str(), c.clone())).collect();
    files.push((
        "fwd.eml",
        multipart(
            "multipart/mixed",
            &[
                ("Content-Type: text/plain", "see below"),
                ("Content-Type: message/rfc822", "Subject: inner\nMessage-ID: <inner@x>\n\ninner body"),
            ],
        )
        .replace("Subject: parts", "Subject: fwd\nDate: Sat, 6 Jan 2024 10:00:00 +0000"),
    ));
    let fx = Fixture::of(&files);
    let key = |e: Option<Arc<crate::index::Entry>>| e.map(|e| e.key.clone());
    let check = |fx: &Fixture| {
        let listed = fx.listed();
        for (i, k) in listed.iter().enumerate() {
            let (newer, older) = fx.view.neighbours(fx.id(k));
            let want_newer = i.checked_sub(1).map(|j| listed[j].clone());
            assert_eq!((key(newer), key(older)), (want_newer, listed.get(i + 1).cloned()), "{k} in {listed:?}");
        }
    };
    assert_eq!(fx.listed(), ["parts@x", "d5@x", "d4@x", "d3@x", "d2@x", "d1@x"]);
    check(&fx);
    let (newer, older) = fx.view.neighbours(fx.id("inner@x"));
    assert!(newer.is_none() && older.is_none(), "an enclosed message is not listed");
    // A new message: a new index generation, a new table.
    fx.add(&[("0.eml", mail("d3b@x", "day", 3, "", "x"))]);
    assert_eq!(fx.listed().len(), 7);
    check(&fx);
    // A table that no longer matches the list (the list sorted anew) is made again.
    let generation = fx.view.archive.index().generation();
    let listed: Vec<EntryId> = fx.view.archive.index().listed().iter().rev().copied().collect();
    fx.view.caches.positions.insert(generation, Arc::new(crate::view::positions(&listed)));
    check(&fx);
}

#[test]
fn duplicates_are_the_other_messages_with_its_message_id() {
    let fx = Fixture::of(&[
        ("a.eml", mail("same@x", "First copy", 1, "", "one")),
        ("b.eml", mail("same@x", "Second copy", 2, "", "two")),
        ("c.eml", mail("other@x", "Other", 3, "", "three")),
        ("d.eml", "Subject: no id\n\nnone\n".to_string()),
    ]);
    let index_keys: Vec<(EntryId, Arc<crate::index::Entry>)> = {
        let index = fx.view.archive().index();
        index.listed().iter().map(|&id| (id, index.get(id).unwrap())).collect()
    };
    let mut seen = Vec::new();
    for (id, entry) in &index_keys {
        let others: Vec<String> =
            fx.view.duplicates(*id, entry).iter().map(|e| e.summary.subject.clone().unwrap_or_default()).collect();
        seen.push((entry.summary.subject.clone().unwrap_or_default(), others));
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            ("First copy".to_string(), vec!["Second copy".to_string()]),
            ("Other".into(), vec![]),
            ("Second copy".into(), vec!["First copy".into()]),
            ("no id".into(), vec![]),
        ]
    );
    let (id, entry) = index_keys.iter().find(|(_, e)| e.summary.subject.as_deref() == Some("First copy")).unwrap();
    let page = MessageView::build(&fx.view, &fx.view.archive().load(*id).unwrap(), false, false);
    assert_eq!(page.duplicates.len(), 1);
    assert!(page.duplicates[0].label.starts_with("Second copy (2024-01-02"), "{}", page.duplicates[0].label);
    assert!(entry.message_id().is_some());
}

#[test]
fn attachments_are_files_not_bodies_or_inline_resources() {
    // The multipart type, its parts (header lines, body), and the attachments' names.
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str]);
    let cases: &[Case] = &[
        (
            "multipart/mixed",
            &[
                ("Content-Type: text/plain", "body"),
                ("Content-Type: application/pdf\nContent-Disposition: attachment; filename=a.pdf", "%PDF"),
                ("Content-Type: image/png; name=b.png", "png"),
                ("Content-Type: message/rfc822", "Subject: inner\n\ninner"),
            ],
            &["a.pdf", "b.png"],
        ),
        (
            "multipart/related",
            &[
                ("Content-Type: text/html", "<img src=cid:i1>"),
                ("Content-Type: image/png; name=inline.png\nContent-ID: <i1>", "png"),
                ("Content-Type: image/png\nContent-Disposition: attachment; filename=marked.png", "png"),
            ],
            &["marked.png"],
        ),
        ("multipart/mixed", &[("Content-Type: text/plain", "just text")], &[]),
    ];
    for (kind, parts, want) in cases {
        let msg = parsed(&multipart(kind, parts));
        let found = attachments("k@x", &msg);
        let names: Vec<&str> = found.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(&names, want, "{kind} {parts:?}");
        // The list's badge, `has:attachment`, print and the exports ask the model by the same
        // rule; the page only leaves out enclosed messages, which it shows in full.
        let shown: Vec<String> = msg
            .attachments()
            .filter(|p| !matches!(p.body, crate::model::Body::Message(_)))
            .map(crate::view::part_filename)
            .collect();
        assert_eq!(shown, *want, "the model's rule, {kind}");
        for a in &found {
            assert!(a.open_url.starts_with("/part/k@x/") && a.download_url == format!("{}?download=1", a.open_url));
            assert_eq!(a.thumb_url.is_some(), a.content_type == "image/png", "{}", a.name);
        }
    }
}

#[test]
fn external_bodies_say_where_their_data_is() {
    let ext = |f: &dyn Fn(&mut External)| {
        let mut e = External::default();
        f(&mut e);
        e
    };
    let part = Part { section: "2".into(), ..parsed("\nx").parts[0].clone() };
    let cases = [
        (
            ext(&|e| {
                e.access_type = Some("url".into());
                e.url = Some("https://example.org/files/report%20v2.pdf".into());
                e.link = e.url.clone();
            }),
            ("report v2.pdf", "URL", "https://example.org/files/report%20v2.pdf", None),
        ),
        (
            ext(&|e| {
                e.access_type = Some("local-file".into());
                e.name = Some("/srv/a.tar".into());
                e.site = Some("files.example".into());
            }),
            ("/srv/a.tar", "a file on another machine", "/srv/a.tar on files.example", None),
        ),
        (
            ext(&|e| {
                e.access_type = Some("mail-server".into());
                e.server = Some("listserv@example.org".into());
                e.subject = Some("get file".into());
                e.request = Some("SEND a b".into());
            }),
            (
                "get file",
                "by mail, on request",
                "listserv@example.org, subject \u{201c}get file\u{201d}",
                Some("mailto:listserv@example.org?subject=get%20file&body=SEND%20a%20b"),
            ),
        ),
        (
            ext(&|e| e.access_type = Some("afs".into())),
            ("Part 2", "unknown access type \u{201c}afs\u{201d}", "not a way mailshelf knows to name a place", None),
        ),
        (ext(&|_| {}), ("Part 2", "no access type given", "it does not say where the data is", None)),
        (
            ext(&|e| {
                e.access_type = Some("anon-ftp".into());
                e.content_id = Some("c@x".into());
            }),
            ("<c@x>", "anonymous FTP", "no usable site and file name given", None),
        ),
    ];
    for (e, (label, access, place, mailto)) in cases {
        let row = external_row(&part, &e, 0);
        assert_eq!(
            (row.label.as_str(), row.access.as_str(), row.place.as_str(), row.mailto.as_deref()),
            (label, access, place, mailto),
            "{e:?}"
        );
    }
    let expiring = ext(&|e| {
        e.expiration = Some("Mon, 1 Jan 2024 00:00:00 +0000".into());
        e.expires_at = Some(1_704_067_200);
        e.size = Some(2048);
    });
    let row = external_row(&part, &expiring, 1_704_067_200);
    assert!(row.expired && row.size.as_deref() == Some("2.0 KB") && row.content_type == "type not given");
    assert!(!external_row(&part, &expiring, 1_704_067_199).expired);
}

#[test]
fn mail_servers_get_mailto_links_only_for_plain_addresses() {
    for (server, subject, body, want) in [
        ("list@example.org", None, None, Some("mailto:list@example.org")),
        ("list@example.org", Some("a&b"), Some("x=y\n"), Some("mailto:list@example.org?subject=a%26b&body=x%3Dy%0A")),
        ("a.b-c+d@mail.example.org", None, Some("~ok_"), Some("mailto:a.b-c+d@mail.example.org?body=~ok_")),
        ("list@example.org?cc=evil@x", None, None, None),
        ("two words@example.org", None, None, None),
        ("@example.org", None, None, None),
        ("list@", None, None, None),
        ("no-at-sign", None, None, None),
        ("javascript:alert(1)//@x", None, None, None),
    ] {
        assert_eq!(mailto(server, subject, body).as_deref(), want, "{server}");
    }
}

#[test]
fn message_pages_show_bodies_enclosed_messages_and_threads() {
    let fwd = multipart(
        "multipart/mixed",
        &[
            ("Content-Type: text/plain; format=flowed", "See the note \nbelow.\n> quoted"),
            (
                "Content-Type: message/rfc822",
                "Subject: Inner\nFrom: Cy <cy@example.org>\nMessage-ID: <inner@x>\n\ninner text",
            ),
        ],
    )
    .replace(
        "Message-ID: <parts@x>",
        "Message-ID: <fwd@x>\nIn-Reply-To: <root@x>\nFrom: Ann <ann@example.org>\nDate: Tue, 2 Jan 2024 10:00:00 +0000",
    );
    let fx = Fixture::of(&[
        ("Box/root.eml", mail("root@x", "Root", 1, "", "root")),
        ("Box/fwd.eml", fwd),
        (
            "html.eml",
            mail("html@x", "Html", 3, "Content-Type: text/html\n", "<p>hi <img src=http://remote.example/x.png>"),
        ),
    ]);
    let load = |key: &str| fx.view.archive().load(fx.id(key)).unwrap();
    let page = MessageView::build(&fx.view, &load("fwd@x"), false, false);
    assert_eq!((page.subject.as_str(), page.from.as_deref()), ("parts", Some("Ann <ann@example.org>")));
    assert!(page.view_text && !page.has_html && page.html_src.is_none());
    let text = page.text_html.as_deref().unwrap();
    assert!(text.contains("See the note below.") && text.contains("<blockquote class=\"quote\">"), "{text}");
    assert_eq!(page.nested.len(), 1);
    let inner = &page.nested[0];
    assert_eq!((inner.subject.as_str(), inner.page_url.as_str()), ("Inner", "/message/inner@x"));
    assert!(inner.text_html.as_deref().is_some_and(|t| t.contains("inner text")) && inner.html_src.is_none());
    assert_eq!(page.folder.as_ref().map(|f| (f.name.as_str(), f.url.as_str())), Some(("Box", "/folder/Box")));
    let thread: Vec<_> = page.thread.iter().map(|t| (t.subject.as_str(), t.indent, t.current)).collect();
    assert_eq!(thread, [("Root", 0, false), ("parts", 1, true)]);
    assert_eq!((page.prev_in_thread.as_deref(), page.next_in_thread), (Some("/message/root@x"), None));
    for p in &page.parts {
        let depth = p.section.trim_start().matches('.').count();
        assert!(p.section.starts_with(&"  ".repeat(depth)) && p.url.is_some(), "{}", p.section);
        assert_eq!(p.size.is_empty(), p.content_type.starts_with("multipart/"), "{}", p.section);
    }
    assert_eq!((page.newer.as_deref(), page.older.as_deref()), (Some("/message/html@x"), Some("/message/root@x")));

    let html = MessageView::build(&fx.view, &load("html@x"), false, false);
    assert!(html.has_html && !html.view_text && html.text_html.is_none());
    assert_eq!(html.html_src.as_deref(), Some("/part/html@x/~1"));
    assert_eq!((html.blocked, html.folder.is_none(), html.thread.is_empty()), (1, true, true));
    let remote = MessageView::build(&fx.view, &load("html@x"), true, false);
    assert_eq!(remote.html_src.as_deref(), Some("/part/html@x/~1?remote=1"));
    let enclosed = MessageView::build(&fx.view, &load("inner@x"), false, false);
    assert!(enclosed.source.is_none() && enclosed.newer.is_none() && enclosed.older.is_none());
}
