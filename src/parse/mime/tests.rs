//! What mail-parser reads, and what it misreads and mailshelf reads again: each case a message
//! written here, with the parts a reader of the RFCs (and Python's `email`, and mail clients) finds
//! in it.

use std::sync::Arc;

use super::header::{clean_bytes, clean_owned, clean_text};
use super::{header_fields, parse};
use crate::model::{Body, HeaderAt, Message};

#[test]
fn header_text_loses_controls_and_outer_space() {
    let cases = [
        ("plain", "plain"),
        ("  padded \t", "padded"),
        ("line\r\n folded", "line   folded"),
        ("\u{1}\u{7f}edge\u{85}", "edge"),
        ("in\u{9c}side", "in side"),
        ("caf\u{e9} \u{a0}nbsp", "caf\u{e9} \u{a0}nbsp"),
        ("", ""),
        ("\r\n", ""),
        ("\u{e9}\u{9f}\u{85}\u{fc}", "\u{e9}  \u{fc}"),
        ("a\u{80}b\u{ff}\tc\u{7f}", "a b\u{ff} c"),
        ("DKIM: v=1;\r\n\tb=abc", "DKIM: v=1;   b=abc"),
    ];
    for (raw, want) in cases {
        let reference: String = raw.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        assert_eq!(reference.trim(), want, "{raw:?}");
        assert_eq!(clean_text(raw), want, "{raw:?}");
        assert_eq!(clean_owned(raw.to_string()), want, "{raw:?}");
        assert_eq!(clean_bytes(raw.as_bytes()), want, "{raw:?}");
    }
}

#[test]
fn header_text_loses_controls_at_any_place_in_a_long_value() {
    // Values are searched 16 bytes at a time: a control at each place in and across blocks.
    for at in 0..40 {
        for mark in ["\r", "\u{1}", "\u{7f}", "\u{85}", "\u{9f}", "\u{a0}", "\u{e9}", "\r\n\t"] {
            let raw = format!("a{}{mark}{}z", "x".repeat(at), "y".repeat(40 - at));
            let reference: String = raw.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
            assert_eq!(clean_text(&raw), reference.trim(), "{raw:?}");
            assert_eq!(clean_owned(raw.clone()), reference.trim(), "{raw:?}");
            assert_eq!(clean_bytes(raw.as_bytes()), reference.trim(), "{raw:?}");
        }
    }
}

#[test]
fn raw_header_bytes_are_read_as_lossy_utf8_then_cleaned() {
    let cases: &[&[u8]] = &[
        b"",
        b" from a.example\r\n\tby b.example ",
        b"caf\xe9\r\n au lait",
        b"\xff\xfe",
        b"ok\xc2",
        b"\xc2\x85next\xc2\xa0line\r\n",
        b"\xe6\x97\xa5\xe6\x9c\xac \xe6\x97",
        b"\t\x01\x7f",
    ];
    for &raw in cases {
        let want = clean_text(&String::from_utf8_lossy(raw));
        assert_eq!(clean_bytes(raw), want, "{raw:?}");
    }
}

#[test]
fn address_headers_are_written_as_one_line() {
    let cases: &[(&str, &str)] = &[
        ("ann@example.org", "ann@example.org"),
        ("Ann Lee <ann@example.org>", "Ann Lee <ann@example.org>"),
        ("\"  \" <ann@example.org>, Bob <bob@example.org>", "ann@example.org, Bob <bob@example.org>"),
        ("Team: ann@example.org, Bob <bob@example.org>;", "Team: ann@example.org, Bob <bob@example.org>;"),
        ("undisclosed-recipients:;", "undisclosed-recipients: ;"),
        ("A: a@x.org;, B: b@x.org;", "A: a@x.org;, B: b@x.org;"),
        // A comment is white space, not a mailbox; one that gives an address its name stays.
        ("unlisted-recipients:; (no To-header on input)", "unlisted-recipients: ;"),
        ("ann@example.org (Ann Lee), (nobody)", "Ann Lee <ann@example.org>"),
        // A sender hidden as Mailman's archives hide it is the mailbox it stands for; words with
        // an "at" between them that are no address stay the name they are.
        ("ann at example.org (Ann Lee)", "Ann Lee <ann@example.org>"),
        ("ann at example.org", "ann@example.org"),
        ("gpoo at example.com (=?ISO-8859-1?Q?Germ=E1n_Poo-Caama=F1o?=)", "Germán Poo-Caamaño <gpoo@example.com>"),
        ("ann at example.org\r\n (Ann Lee)", "Ann Lee <ann@example.org>"),
        ("Meet at noon", "Meet at noon"),
        ("ann at example (Ann)", "\"ann at example (Ann)\""),
        ("ann at example.org and bob", "ann at example.org and bob"),
        ("\"ann at example.org\" <ann@example.org>", "ann at example.org <ann@example.org>"),
        // Mailboxes written without the comma between them are the mailboxes they are.
        (
            "Bob Dunite <bob@example.com> Bobby Dunite <bobby@example.com>",
            "Bob Dunite <bob@example.com>, Bobby Dunite <bobby@example.com>",
        ),
        ("<a@x.org> <b@x.org>\r\n <c@x.org>", "a@x.org, b@x.org, c@x.org"),
        ("\"Bob <b@x.org> Dunite\" <bob@x.org>", "\"Bob <b@x.org> Dunite\" <bob@x.org>"),
    ];
    for (header, want) in cases {
        let raw = format!("From: x@example.org\r\nTo: {header}\r\nSubject: s\r\n\r\nbody\r\n");
        let msg = parse(raw.into_bytes().into()).expect("parses");
        assert_eq!(msg.summary.to.as_deref(), Some(*want), "{header:?}");
        let headers = header_fields(&msg);
        let shown = headers.iter().find(|(n, _)| n == "To").map(|(_, v)| v.as_str());
        assert_eq!(shown, Some(*want), "{header:?}");
    }
    // A field of comments alone names no one.
    let raw = b"From: x@example.org\r\nTo: (no To-header on input)\r\nSubject: s\r\n\r\nbody\r\n";
    assert_eq!(parse(raw.as_slice().into()).expect("parses").summary.to, None);
}

#[test]
fn every_header_is_shown_with_its_own_value() {
    let raw: &[u8] = b"Received: from a.example by b.example;\r\n Mon, 1 Jan 2024 00:00:00 +0000\r\n\
X-Latin1: caf\xe9\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
List-Id: Team <team.example.org>\r\n\
Subject: =?utf-8?q?caf=C3=A9?=\r\n\r\nbody\r\n";
    let msg = parse(raw.into()).expect("parses");
    let want = [
        ("Received", "from a.example by b.example; Mon, 1 Jan 2024 00:00:00 +0000"),
        ("X-Latin1", "caf\u{e9}"),
        ("Content-Type", "text/plain; charset=utf-8"),
        ("List-ID", "Team <team.example.org>"),
        ("Subject", "caf\u{e9}"),
    ];
    let headers = header_fields(&msg);
    let got: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    assert_eq!(got, want);
    assert_eq!(msg.summary.list.as_deref(), Some("team.example.org"));
}

#[test]
fn list_ids_are_read_as_written() {
    for (value, want) in [
        ("Team <team.example.org>", Some("team.example.org")),
        ("=?utf-8?q?=C3=89quipe?= <equipe.example.org>", Some("equipe.example.org")),
        // No identifier in brackets (as it should have): the value, decoded.
        ("=?utf-8?q?example_of_list_id?=", Some("example of list id")),
        ("plain.example.org", Some("plain.example.org")),
        ("", None),
    ] {
        let raw = format!("From: a@example.org\r\nList-Id: {value}\r\nSubject: s\r\n\r\nbody\r\n");
        let msg = parse(raw.into_bytes().into()).expect("parses");
        assert_eq!(msg.summary.list.as_deref(), want, "{value}");
    }
}

/// The header fields shown are read again from the message's bytes: where mail-parser read them,
/// or, for a message read again by RFC 2046, where that reading found its header; an enclosed
/// message's from its own bytes.
#[test]
fn header_fields_are_read_again_where_parsing_found_them() {
    fn enclosed(msg: &Message) -> &Message {
        msg.parts
            .iter()
            .find_map(|p| match &p.body {
                Body::Message(m) => Some(&**m),
                _ => None,
            })
            .expect("an enclosed message")
    }
    fn names(fields: &[(String, String)]) -> Vec<String> {
        fields.iter().map(|(n, v)| format!("{n}: {v}")).collect()
    }
    /// What the message is, its bytes, its fields shown, and those of the message it encloses.
    type Shown<'a> = (&'a str, &'a [u8], &'a [&'a str], &'a [&'a str]);
    let cases: &[Shown<'_>] = &[
        (
            "read by mail-parser, after a line of spaces, with an enclosed message",
            b"  \r\nX-Outer: 1\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: message/rfc822\r\n\r\n\
Received: from a.example;\r\n Mon, 1 Jan 2024 00:00:00 +0000\r\nSubject: inner\r\n\r\nhi\r\n--b--\r\n",
            &["X-Outer: 1", "Content-Type: multipart/mixed; boundary=b"],
            &["Received: from a.example; Mon, 1 Jan 2024 00:00:00 +0000", "Subject: inner"],
        ),
        (
            "read again by RFC 2046 (a forwarded message whose multipart never closes)",
            b"X-Outer: 2\nContent-Type: multipart/mixed; boundary=\"outer\"\n\n--outer\nContent-Type: text/plain\n\nHello\n\
--outer\nContent-Type: message/rfc822\n\nSubject: forwarded\nContent-Type: multipart/alternative; boundary=\"inner\"\n\n\
--inner\nContent-Type: text/plain\n\ninner text\n--outer--\n",
            &["X-Outer: 2", "Content-Type: multipart/mixed; boundary=\"outer\""],
            &["Subject: forwarded", "Content-Type: multipart/alternative; boundary=\"inner\""],
        ),
    ];
    for (what, raw, outer, inner) in cases {
        let msg = parse(Arc::from(*raw)).expect("parses");
        assert_eq!(names(&header_fields(&msg)), *outer, "{what}");
        assert_eq!(names(&header_fields(enclosed(&msg))), *inner, "{what}");
    }
    assert_eq!(parse(Arc::from(cases[0].1)).expect("parses").header, HeaderAt::From(4), "after the spaces");
    let misread = parse(Arc::from(cases[1].1)).expect("parses");
    assert!(matches!(misread.header, HeaderAt::Within(_)), "the second case is read again");
}

/// The leaves of a message, enclosed messages' too: section (`/` where an enclosed message begins),
/// type, and decoded bytes.
fn leaves(msg: &Message) -> Vec<(String, String, Vec<u8>)> {
    fn walk(msg: &Message, prefix: &str, out: &mut Vec<(String, String, Vec<u8>)>) {
        for p in &msg.parts {
            let section = format!("{prefix}{}", p.section);
            match &p.body {
                Body::Multipart => {}
                Body::Message(inner) => walk(inner, &format!("{section}/"), out),
                _ => out.push((section, p.content_type.clone(), p.bytes().to_vec())),
            }
        }
    }
    let mut out = Vec::new();
    walk(msg, "", &mut out);
    out
}

/// A message written out, what it is about, and its leaves (see [`leaves`]).
type Case<'a> = (&'a str, &'a [u8], &'a [(&'a str, &'a str, &'a [u8])]);

fn read(raw: &[u8]) -> Message {
    parse(Arc::from(raw)).expect("parses")
}

#[test]
fn structures_mail_parser_misreads_are_read_as_the_rfcs_say() {
    let cases: &[Case<'_>] = &[
        (
            "a forwarded message whose own multipart never closes: the enclosing delimiter ends it",
            b"Content-Type: multipart/mixed; boundary=\"outer\"\n\n--outer\nContent-Type: text/plain\n\nHello\n\
--outer\nContent-Type: message/rfc822\n\nSubject: forwarded\nContent-Type: multipart/alternative; boundary=\"inner\"\n\n\
--inner\nContent-Type: text/plain\n\ninner text\n--inner\nContent-Type: text/html\n\n<p>inner html</p>\n\
--outer\nContent-Type: text/plain\n\nafter\n--outer--\n",
            &[
                ("1", "text/plain", b"Hello"),
                ("2/1", "text/plain", b"inner text"),
                ("2/2", "text/html", b"<p>inner html</p>"),
                ("3", "text/plain", b"after"),
            ],
        ),
        (
            "a last part cut short, without its close delimiter, decodes to where the message ends",
            b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nbody\r\n\
--b\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\naGVsbG8gd29ybGQ=\r\n",
            &[("1", "text/plain", b"body"), ("2", "application/octet-stream", b"hello world")],
        ),
        (
            "a close delimiter on the line after the only delimiter: one empty part",
            b"Content-Type: multipart/mixed; boundary=b\r\n\r\npreamble\r\n--b\r\n--b--\r\n\r\nEpilogue\r\n",
            &[("1", "text/plain", b"")],
        ),
        (
            "a boundary in the middle of a line, or beginning a longer one, is no delimiter",
            b"Content-Type: multipart/mixed; boundary=b\n\n--b\n\none--b two\n--bc\nthree\n--b--\n",
            &[("1", "text/plain", b"one--b two\n--bc\nthree")],
        ),
        (
            "the parts after a message enclosed in an enclosed message",
            b"Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: message/rfc822\n\n\
Content-Type: message/rfc822\n\nSubject: innermost\n\nFoo!\n--b\nContent-Type: text/html\n\n<p>after</p>\n--b--\n",
            &[("1/1/1", "text/plain", b"Foo!"), ("2", "text/html", b"<p>after</p>")],
        ),
        (
            "a part's header that runs into its body without the blank line",
            b"Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: application/zip\n\
Content-Transfer-Encoding: base64\nUEsDBAo=\n\n--b--\n",
            &[("1", "application/zip", b"PK\x03\x04\n")],
        ),
        (
            "the message's header that runs into its preamble",
            b"Subject: x\nContent-Type: multipart/alternative;\n boundary=b\nThis is a multi-part message in MIME format.\n\
--b\nContent-Type: text/plain\n\nplain\n--b\nContent-Type: text/html\n\n<p>html</p>\n--b--\n",
            &[("1", "text/plain", b"plain"), ("2", "text/html", b"<p>html</p>")],
        ),
        (
            "a boundary whose value begins on the next line",
            b"Content-Type: multipart/signed; boundary=\r\n \"b\"; protocol=\"application/pkcs7-signature\"\r\n\r\n\
--b\r\nContent-Type: text/plain\r\n\r\nsigned text\r\n--b\r\nContent-Type: application/pkcs7-signature\r\n\
Content-Transfer-Encoding: base64\r\n\r\nAAEC\r\n--b--\r\n",
            &[("1", "text/plain", b"signed text"), ("2", "application/pkcs7-signature", b"\x00\x01\x02")],
        ),
        (
            "a header that says its Content-Type twice: the first counts",
            b"Content-Type: multipart/mixed; boundary=b\nContent-Type: text/plain\n\npreamble\n--b\n\
Content-Type: text/plain\n\none\n--b--\n",
            &[("1", "text/plain", b"one")],
        ),
        (
            "a nested multipart with its parent's boundary: the parent's delimiters end it",
            b"Content-Type: multipart/mixed; boundary=x\n\n--x\nContent-Type: multipart/mixed; boundary=x\n\n\
--x\nContent-Type: text/plain\n\nHello\n--x--\n",
            &[("1", "multipart/mixed", b""), ("2", "text/plain", b"Hello")],
        ),
        (
            "an enclosed message with no header is its text",
            b"Content-Type: multipart/report; boundary=b\n\n--b\nContent-Type: message/rfc822\n\n\
[original message goes here]\n--b--\n",
            &[("1/1", "text/plain", b"[original message goes here]")],
        ),
        (
            "message/news is a message",
            b"Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: message/news\n\n\
Newsgroups: comp.mail.mime\nSubject: news\n\nan article\n--b--\n",
            &[("1/1", "text/plain", b"an article")],
        ),
        (
            "a line of spaces before the header is no part of it",
            b"    \r\nSubject: x\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nHello\r\n--b--\r\n",
            &[("1", "text/plain", b"Hello")],
        ),
    ];
    for (case, raw, want) in cases {
        let got = leaves(&read(raw));
        let want: Vec<(String, String, Vec<u8>)> =
            want.iter().map(|(s, t, b)| (s.to_string(), t.to_string(), b.to_vec())).collect();
        assert_eq!(got, want, "{case}");
    }
}

#[test]
fn bodies_mail_parser_misdecodes_decode_as_rfc_2045_says() {
    let latin1 = b"Die Hasen klagten einst \xfcber ihre mi\xdfliche Lage; \"wir leben\", sprach ein Redner, \
\"in steter Furcht vor Menschen und Tieren, eine Beute der Hunde, der Adler, ja fast aller Raubtiere!\" Die Fr\xf6sche";
    let mut undeclared = b"Subject: x\n\n".to_vec();
    undeclared.extend_from_slice(latin1);
    let cases: &[Case<'_>] = &[
        (
            "quoted-printable: `=1` at the end of a line (a URL), `=20` before a line break, a soft break at the end",
            b"Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n\
https://example.com/?ie=UTF8&psc=1\n\nnext line=20\nlast;=\n",
            &[("1", "text/plain", b"https://example.com/?ie=UTF8&psc=1\n\nnext line \nlast;")],
        ),
        (
            "base64: a last quantum without its padding, and what follows a padding",
            b"Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: application/pdf\n\
Content-Transfer-Encoding: base64\n\nJVBERi0xLjIK\nRW5kRg\n--b\nContent-Type: text/plain; charset=utf-8\n\
Content-Transfer-Encoding: base64\n\naGVsbG8= ignored\n--b--\n",
            &[("1", "application/pdf", b"%PDF-1.2\nEndF"), ("2", "text/plain", b"hello")],
        ),
        (
            "base64 with characters outside its alphabet",
            b"Content-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\naGVsbG8*gd29y.bGQ=\n",
            &[("1", "application/octet-stream", b"hello world")],
        ),
        (
            "uuencoded",
            b"Content-Type: text/plain\nContent-Transfer-Encoding: x-uuencode\n\nbegin 644 hello.txt\n\
,:&5L;&\\@=V]R;&0*\n`\nend\n",
            &[("1", "text/plain", b"hello world\n")],
        ),
        (
            "a Content-Type no one can read, on a body that is not text: its bytes",
            b"Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: ; name=\"face.jpg\"\n\
Content-Transfer-Encoding: base64\n\n/9j/4AAQ\n--b--\n",
            &[("1", "text/plain", b"\xff\xd8\xff\xe0\x00\x10")],
        ),
    ];
    for (case, raw, want) in cases {
        let got = leaves(&read(raw));
        let want: Vec<(String, String, Vec<u8>)> =
            want.iter().map(|(s, t, b)| (s.to_string(), t.to_string(), b.to_vec())).collect();
        assert_eq!(got, want, "{case}");
    }
    // Text that declares no charset and is not UTF-8: the legacy encoding it most likely is.
    let msg = read(&undeclared);
    let text = String::from_utf8_lossy(msg.parts[0].bytes()).into_owned();
    assert!(text.contains("über ihre mißliche") && text.ends_with("Frösche"), "{text}");
}

#[test]
fn a_part_cut_short_is_decoded_and_says_so() {
    let msg = read(
        b"Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nbody\n--b\n\
Content-Type: image/png\nContent-Transfer-Encoding: base64\n\niVBORw0KGgo",
    );
    assert!(!msg.parts[1].damaged, "{:?}", msg.parts[1]);
    assert!(msg.parts[2].damaged, "the last part was cut short");
    assert_eq!(msg.parts[2].bytes(), b"\x89PNG\r\n\x1a\n");
}

#[test]
fn parts_of_enclosed_messages_point_at_their_own_bytes() {
    for raw in [
        &b"Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: message/rfc822\n\nSubject: inner\n\
Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\ncaf=C3=A9\n--b--\n"[..],
        // The same, read again because of a line of spaces before the header.
        b"  \nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: message/rfc822\n\nSubject: inner\n\
Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\ncaf=C3=A9\n--b--\n",
    ] {
        let msg = read(raw);
        let (_, inner) = msg.nested().next().expect("an enclosed message");
        let part = &inner.parts[0];
        assert_eq!(&inner.raw[part.raw_range.clone()], b"caf=C3=A9", "{:?}", part.raw_range);
        assert_eq!(part.bytes(), "café".as_bytes());
    }
}

#[test]
fn a_message_with_no_header_is_its_text() {
    let msg = read(b"A message with no header.\r\nAll of it is body.\r\n");
    assert_eq!(
        leaves(&msg),
        [("1".to_string(), "text/plain".to_string(), b"A message with no header.\r\nAll of it is body.\r\n".to_vec())]
    );
}

#[test]
fn text_labelled_us_ascii_that_is_not_reads_as_what_it_is() {
    let cases: &[(&[u8], &str)] = &[
        ("\u{222e} E\u{22c5}da = Q".as_bytes(), "\u{222e} E\u{22c5}da = Q"),
        (b"caf\xe9 \x80", "caf\u{e9} \u{20ac}"),
        (b"plain", "plain"),
    ];
    for (body, want) in cases {
        for cte in ["8bit", "base64"] {
            let body = if cte == "base64" {
                base64::Engine::encode(&base64::engine::general_purpose::STANDARD, body).into_bytes()
            } else {
                body.to_vec()
            };
            let mut raw =
                format!("Content-Type: text/plain; charset=\"US-ASCII\"\nContent-Transfer-Encoding: {cte}\n\n")
                    .into_bytes();
            raw.extend_from_slice(&body);
            let msg = read(&raw);
            assert_eq!(String::from_utf8_lossy(msg.parts[0].bytes()), *want, "{cte}");
        }
    }
}

#[test]
fn eight_bit_bytes_in_encoded_words_read_in_the_words_charset() {
    let raw: &[u8] = b"From: Doug <d@example.com>\r\n\
To: =?iso-8859-1?Q?J\xfcrgen?= =?iso-8859-1?Q?_Schm\xfcrgen?= <j@example.com>,\r\n \
Heinz =?iso-8859-1?Q?M\xfcller?= <m@example.com>\r\n\
Subject: =?iso-8859-1?Q?Die_Hasen_und_die_Fr\xf6sche?=\r\n\
Content-Type: multipart/mixed; boundary=b\r\n\r\n\
--b\r\nContent-Type: text/plain\r\n\r\nHallo\r\n\
--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=\"HasenundFr\xf6sche.txt\"\r\n\r\nx\r\n\
--b\r\nContent-Type: application/octet-stream; name=Gr\xfc\xdfe.bin\r\n\r\ny\r\n--b--\r\n";
    let msg = read(raw);
    assert_eq!(msg.summary.subject.as_deref(), Some("Die Hasen und die Fr\u{f6}sche"));
    assert_eq!(
        msg.summary.to.as_deref(),
        Some("J\u{fc}rgen Schm\u{fc}rgen <j@example.com>, Heinz M\u{fc}ller <m@example.com>")
    );
    let headers = header_fields(&msg);
    let shown = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    assert_eq!(shown("Subject").as_deref(), Some("Die Hasen und die Fr\u{f6}sche"));
    let names: Vec<Option<&str>> = msg.parts.iter().map(|p| p.filename.as_deref()).collect();
    assert_eq!(names, [None, None, Some("HasenundFr\u{f6}sche.txt"), Some("Gr\u{fc}\u{df}e.bin")]);
}

#[test]
fn dates_with_zones_old_mailers_wrote_are_read() {
    for (date, want) in [
        ("Tue, 28 May 1996 12:24:23 cst", Some("1996-05-28T12:24:23-06:00")),
        ("Mon, 21 Aug 95 13:30:57 -600", Some("1995-08-21T13:30:57-06:00")),
        ("Mon, 21 Aug 95 13:30:57 -6000", Some("1995-08-21T13:30:57Z")),
    ] {
        let raw = format!("From: a@example.com\r\nDate: {date}\r\nSubject: s\r\n\r\nbody\r\n");
        assert_eq!(read(raw.as_bytes()).summary.date.as_deref(), want, "{date}");
    }
}

/// A Content-Type that names no type that can be read is text/plain (RFC 2045 §5.2), or, on a
/// part sent as a file, application/octet-stream; a multipart that cannot be cut is its text.
#[test]
fn parts_of_no_readable_type_are_text_or_data() {
    let cases: &[Case<'_>] = &[
        (
            "a file of a type without a subtype",
            b"Content-Type: X-ZIP; name=\"a.zip\"\r\nContent-Transfer-Encoding: base64\r\n\r\nUEsDBA==\r\n",
            &[("1", "application/octet-stream", b"PK\x03\x04")],
        ),
        (
            "an attachment of a type without a subtype",
            b"Content-Type: BINARY\r\nContent-Disposition: attachment\r\n\r\n\x00\x01",
            &[("1", "application/octet-stream", b"\x00\x01")],
        ),
        (
            "text of a type that is no type",
            b"Content-Type: multipart/alternative; boundary=b\n\n--b\nContent-Type: <html>\n\nUse the View function.<br>\n--b--\n",
            &[("1", "text/plain", b"Use the View function.<br>")],
        ),
        (
            "text of a type without a subtype, in the charset it names",
            b"Content-Type: text; charset=iso-8859-1\n\nFr\xf6sche",
            &[("1", "text/plain", "Fr\u{f6}sche".as_bytes())],
        ),
        (
            "a multipart with an empty boundary",
            b"Content-Type: multipart/mixed; boundary=\"\"\r\n\r\n--\r\nContent-Type: text/plain\r\n\r\nHello world.\r\n",
            &[("1", "text/plain", b"--\r\nContent-Type: text/plain\r\n\r\nHello world.\r\n")],
        ),
    ];
    for (about, raw, want) in cases {
        let msg = read(raw);
        let want: Vec<(String, String, Vec<u8>)> =
            want.iter().map(|(s, t, b)| (s.to_string(), t.to_string(), b.to_vec())).collect();
        assert_eq!(leaves(&msg), want, "{about}");
    }
    // The text of a multipart that cannot be cut is the message's text.
    let empty = read(b"Content-Type: multipart/mixed; boundary=\"\"\r\n\r\n--\r\n\r\nHello world.\r\n");
    assert!(empty.text_body.is_some_and(|t| empty.parts[t].bytes().ends_with(b"Hello world.\r\n")));
}

#[test]
fn a_multipart_never_cut_into_parts_is_its_text_and_says_so() {
    for raw in [
        &b"Content-Type: multipart/mixed; boundary=zzz\n\nHello there\n"[..],
        b"Content-Type: multipart/mixed; boundary=zzz\n\nHello there\n--other\nContent-Type: text/plain\n\nx\n--other--\n",
        b"Content-Type: multipart/mixed\n\nHello there\n",
    ] {
        let msg = read(raw);
        assert_eq!(msg.parts.len(), 1, "{raw:?}");
        assert_eq!(msg.parts[0].content_type, "text/plain");
        assert!(String::from_utf8_lossy(msg.parts[0].bytes()).starts_with("Hello there"));
        assert!(msg.parts[0].damaged, "{raw:?}");
    }
    let fine = read(b"Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nx\n--b--\n");
    assert!(fine.parts.iter().all(|p| !p.damaged));
}
