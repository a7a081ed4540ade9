//! The render path's rules, one small message each: which reference becomes which URL, and which
//! stays inert (RFC 2392, RFC 2557 §5, §7, §8, §9).

use crate::common::TestApp;

/// A case: a message, and for each reference in its HTML root, the part it must reach (by the
/// Content-ID or Content-Location of that part) or `None` for "stays unresolved".
struct Case {
    name: &'static str,
    message: &'static str,
    expect: &'static [(&'static str, Option<&'static str>)],
}

const CASES: &[Case] = &[
    Case {
        name: "related_start_parameter_names_the_root",
        message: "Message-ID: <start@t>\nContent-Type: multipart/related; boundary=b; start=\"<root@t>\"\n\n--b\nContent-Type: text/html\nContent-ID: <decoy@t>\n\n<p>decoy <img src=\"cid:img@t\" id=decoy></p>\n--b\nContent-Type: image/png\nContent-ID: <img@t>\n\nPNG\n--b\nContent-Type: text/html\nContent-ID: <root@t>\n\n<img src=\"cid:img@t\">\n--b--\n",
        expect: &[("cid:img@t", Some("img@t"))],
    },
    Case {
        name: "related_root_alternative_uses_its_html",
        message: "Message-ID: <alt@t>\nContent-Type: multipart/related; boundary=r\n\n--r\nContent-Type: multipart/alternative; boundary=a\n\n--a\nContent-Type: text/plain\n\nplain\n--a\nContent-Type: text/html\n\n<img src=\"cid:logo@t\">\n--a--\n--r\nContent-Type: image/gif\nContent-ID: <logo@t>\n\nGIF\n--r--\n",
        expect: &[("cid:logo@t", Some("logo@t"))],
    },
    Case {
        name: "cid_is_percent_decoded",
        message: "Message-ID: <pct@t>\nContent-Type: multipart/related; boundary=b\n\n--b\nContent-Type: text/html\n\n<img src=\"cid:part1%2Fa%25b$@host.example\">\n--b\nContent-Type: image/png\nContent-ID: <part1/a%b$@host.example>\n\nPNG\n--b--\n",
        expect: &[("cid:part1%2Fa%25b$@host.example", Some("part1/a%b$@host.example"))],
    },
    Case {
        name: "cid_falls_back_to_a_content_location_as_chromium_does",
        message: "Message-ID: <nocl@t>\nContent-Type: multipart/related; boundary=b\n\n--b\nContent-Type: text/html\n\n<img src=\"cid:foo@x\">\n--b\nContent-Type: image/png\nContent-Location: cid:foo@x\n\nPNG\n--b--\n",
        expect: &[("cid:foo@x", Some("cid:foo@x"))],
    },
    Case {
        name: "cid_never_matches_another_part_s_content_location_when_a_content_id_exists",
        message: "Message-ID: <cidwins@t>\nContent-Type: multipart/related; boundary=b\n\n--b\nContent-Type: text/html\n\n<img src=\"cid:foo@y\">\n--b\nContent-Type: image/png\nContent-Location: cid:foo@y\n\nDECOY\n--b\nContent-Type: image/png\nContent-ID: <foo@y>\n\nPNG\n--b--\n",
        expect: &[("cid:foo@y", Some("foo@y"))],
    },
    Case {
        name: "a_chrome_css_part_is_found_by_its_cid_location",
        message: "Message-ID: <blink@t>\nContent-Type: multipart/related; type=\"text/html\"; boundary=b\n\n--b\nContent-Type: text/html\nContent-Location: http://example.com/\n\n<link rel=\"stylesheet\" href=\"cid:css-0f1e2d3c@mhtml.blink\">\n--b\nContent-Type: text/css\nContent-Location: cid:css-0f1e2d3c@mhtml.blink\n\np { color: green }\n--b--\n",
        expect: &[("cid:css-0f1e2d3c@mhtml.blink", Some("cid:css-0f1e2d3c@mhtml.blink"))],
    },
    Case {
        name: "relative_location_resolves_against_the_outer_one",
        message: "Message-ID: <outer@t>\nContent-Type: multipart/related; boundary=b\nContent-Location: http://www.ietf.cnri.reston.va.us/images/\n\n--b\nContent-Type: text/html\nContent-Location: page.html\n\n<img src=\"ietflogo.gif\"><img src=\"http://www.ietf.cnri.reston.va.us/images/ietflogo.gif\">\n--b\nContent-Type: image/gif\nContent-Location: ietflogo.gif\n\nGIF\n--b--\n",
        expect: &[
            ("ietflogo.gif", Some("http://www.ietf.cnri.reston.va.us/images/ietflogo.gif")),
            ("http://www.ietf.cnri.reston.va.us/images/ietflogo.gif", Some("http://www.ietf.cnri.reston.va.us/images/ietflogo.gif")),
        ],
    },
    Case {
        name: "no_base_means_thismessage",
        message: "Message-ID: <this@t>\nContent-Type: multipart/related; boundary=b\n\n--b\nContent-Type: text/html\n\n<img src=\"images/a.gif\"><img src=\"b.gif\">\n--b\nContent-Type: image/gif\nContent-Location: images/a.gif\n\nGIF\n--b--\n",
        expect: &[("images/a.gif", Some("thismessage:/images/a.gif")), ("b.gif", None)],
    },
    Case {
        name: "nested_related_parts_are_not_reachable_from_outside",
        message: "Message-ID: <nest@t>\nContent-Type: multipart/related; boundary=o\n\n--o\nContent-Type: text/html\n\n<img src=\"inner.png\"><iframe src=\"cid:frame@t\"></iframe>\n--o\nContent-Type: multipart/related; boundary=i\nContent-ID: <frame@t>\n\n--i\nContent-Type: text/html\n\n<img src=\"inner.png\">\n--i\nContent-Type: image/png\nContent-Location: inner.png\n\nPNG\n--i--\n--o--\n",
        expect: &[("inner.png", None), ("cid:frame@t", Some("frame@t"))],
    },
    Case {
        name: "base_href_sets_the_base",
        message: "Message-ID: <base@t>\nContent-Type: multipart/related; boundary=b\n\n--b\nContent-Type: text/html\n\n<base href=\"http://example.com/dir/\"><img src=\"a.png\">\n--b\nContent-Type: image/png\nContent-Location: http://example.com/dir/a.png\n\nPNG\n--b--\n",
        expect: &[("a.png", Some("http://example.com/dir/a.png"))],
    },
    Case {
        name: "mid_urls_reach_other_messages_and_their_parts",
        message: "Message-ID: <mids@t>\nContent-Type: text/html\n\n<a href=\"mid:start@t\">m</a><img src=\"mid:start@t/img@t\"><a href=\"mid:nowhere@t\">x</a>\n",
        expect: &[("mid:start@t", Some("page:start@t")), ("mid:start@t/img@t", Some("img@t")), ("mid:nowhere@t", None)],
    },
    Case {
        name: "cid_falls_back_to_other_messages",
        message: "Message-ID: <fallback@t>\nContent-Type: text/html\n\n<img src=\"cid:logo@t\">\n",
        expect: &[("cid:logo@t", Some("logo@t"))],
    },
];

#[tokio::test]
async fn references_resolve_by_the_rfc_rules() {
    let dir = tempfile::tempdir().expect("dir");
    for c in CASES {
        std::fs::write(dir.path().join(format!("{}.eml", c.name)), c.message.replace('\n', "\r\n")).expect("write");
    }
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    for c in CASES {
        let mid = c.message.split("Message-ID: <").nth(1).and_then(|s| s.split('>').next()).expect("mid");
        let detail = app.json(&format!("/api/messages/{}", mailshelf::ids::encode_segment(mid))).await;
        let html_url = detail["html_url"].as_str().unwrap_or_else(|| panic!("{}: no HTML body", c.name));
        let id = app.archive.find(mid).expect("indexed");
        let loaded = app.archive.load(id).expect("loads");
        let msg = loaded.message();
        let root = msg.html_body.expect("html root");
        let mailshelf::model::Body::Text(html) = &msg.parts[root].body else { panic!("text") };
        let resolver = mailshelf::route::Resolver {
            archive: Some(&app.archive),
            access: &mailshelf::index::Access::EVERYTHING,
            key: &loaded.entry.key,
            msg,
            part: root,
            remote: false,
        };
        let out = mailshelf::rewrite::rewrite_html(
            html,
            &msg.parts[root].base,
            &resolver,
            mailshelf::rewrite::Options { record: true, ..Default::default() },
        );
        for (reference, want) in c.expect {
            let got = out
                .references
                .iter()
                .find(|(_, r, _)| r == reference)
                .unwrap_or_else(|| panic!("{}: {reference} not seen", c.name))
                .2
                .clone();
            match (want, got) {
                (None, mailshelf::rewrite::Target::Unresolved) => {}
                (Some(page), mailshelf::rewrite::Target::Page(url)) if page.starts_with("page:") => {
                    assert_eq!(url, format!("/message/{}", &page[5..]), "{}", c.name);
                }
                (Some(label), mailshelf::rewrite::Target::Part(url)) => {
                    // The URL answers with the part that carries that Content-ID or Location.
                    let r = app.get(&url).await;
                    assert_eq!(r.status, 200, "{}: {url}", c.name);
                    let detail = app.json(&format!("/api/messages/{}", url.split('/').nth(2).expect("mid"))).await;
                    let mut stack = vec![&detail["parts"][0]];
                    let mut found = false;
                    while let Some(p) = stack.pop() {
                        // A relative Content-Location is the tail of the resolved one.
                        let located = p["content_location"].as_str().is_some_and(|l| label.ends_with(l));
                        if (p["content_id"] == *label || located) && p["url"] == url.split('?').next().unwrap_or(&url) {
                            found = true;
                        }
                        stack.extend(p["parts"].as_array().expect("parts"));
                    }
                    assert!(found, "{}: {reference} → {url}, not the part {label}", c.name);
                }
                (want, got) => panic!("{}: {reference}: wanted {want:?}, got {got:?}", c.name),
            }
        }
        // The served body holds no raw cid:/mid: references, only our own URLs.
        let body = app.get(html_url).await.text();
        assert!(!body.contains("cid:") && !body.contains("mid:"), "{}: {body}", c.name);
    }
}

#[tokio::test]
async fn cid_prefers_the_same_message_over_another() {
    // Content-IDs should be unique but are not: the referencing message's own part wins.
    let dir = tempfile::tempdir().expect("dir");
    let own = "Message-ID: <own@t>\r\nContent-Type: multipart/related; boundary=b\r\n\r\n--b\r\nContent-Type: text/html\r\n\r\n<img src=\"cid:shared@t\">\r\n--b\r\nContent-Type: image/png\r\nContent-ID: <shared@t>\r\n\r\nMINE\r\n--b--\r\n";
    let other = own.replace("own@t", "other@t").replace("MINE", "THEIRS");
    std::fs::write(dir.path().join("own.eml"), own).expect("write");
    std::fs::write(dir.path().join("other.eml"), other).expect("write");
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let body = app.get("/part/own@t/~1").await.text();
    assert!(body.contains("/part/own@t/shared@t"), "{body}");
    assert_eq!(app.get("/part/own@t/shared@t").await.body, b"MINE");
}

#[tokio::test]
async fn related_type_parameter_finds_a_root_saved_after_its_resources() {
    // Internet Explorer saves multi-frame pages with the images first and `type=` naming the root.
    let dir = tempfile::tempdir().expect("dir");
    let msg = "Message-ID: <ie@t>\r\nContent-Type: multipart/related; type=\"multipart/alternative\"; boundary=r\r\n\r\n--r\r\nContent-Type: image/png\r\nContent-Location: http://x.example/a.png\r\n\r\nPNG\r\n--r\r\nContent-Type: multipart/alternative; boundary=a\r\n\r\n--a\r\nContent-Type: text/html\r\nContent-Location: http://x.example/\r\n\r\n<img src=\"a.png\">\r\n--a--\r\n--r--\r\n";
    std::fs::write(dir.path().join("ie.eml"), msg).expect("write");
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let detail = app.json("/api/messages/ie@t").await;
    let body = app.get(detail["html_url"].as_str().expect("an HTML root")).await.text();
    assert!(body.contains("/part/ie@t/~1"), "{body}");
}

/// The fixtures in `tests/fixtures/render`: where a file's README section names the marker its
/// root must show, it does; every part answers and no `cid:` is left in what is served.
#[tokio::test]
async fn render_fixtures_show_their_roots() {
    let dir = crate::common::repo_path("tests/fixtures/render");
    let readme = std::fs::read_to_string(dir.join("README.md")).expect("README");
    let app = TestApp::new(std::slice::from_ref(&dir));
    let mut checked = 0;
    for section in readme.split("\n## ").skip(1) {
        let file = section.lines().next().unwrap_or("").trim();
        let Some(name) = file.strip_suffix(".eml") else { continue };
        let marker = section
            .lines()
            .find(|l| l.starts_with("- root"))
            .and_then(|l| l.split("(marker `").nth(1))
            .and_then(|m| m.split('`').next());
        let detail = app.json(&format!("/api/messages/render-{name}@test.invalid")).await;
        let body = app.get(detail["html_url"].as_str().expect("html body")).await.text();
        if let Some(marker) = marker {
            assert!(body.contains(marker), "{file}: the root shows {marker}");
        }
        assert!(!body.contains("cid:"), "{file}: {body}");
        let mut stack = vec![&detail["parts"][0]];
        while let Some(p) = stack.pop() {
            assert_eq!(app.get(p["url"].as_str().expect("url")).await.status, 200, "{file}: {}", p["url"]);
            stack.extend(p["parts"].as_array().expect("parts"));
        }
        checked += 1;
    }
    assert!(checked >= 9, "render fixtures checked: {checked}");
}

#[tokio::test]
async fn html_without_a_charset_parameter_reads_as_its_meta_says() {
    let dir = tempfile::tempdir().expect("dir");
    let (koi8, _, _) = encoding_rs::KOI8_R.encode("Новости дня");
    let (cp1251, _, _) =
        encoding_rs::WINDOWS_1251.encode("Новини України: останні події, коментарі та аналітика експертів");
    let page = |mid: &str, head: &[u8], body: &[u8]| {
        let mut m = format!(
            "From: a@example.com\r\nMessage-ID: <{mid}>\r\nMIME-Version: 1.0\r\nContent-Type: text/html\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
        )
        .into_bytes();
        m.extend_from_slice(head);
        m.extend_from_slice(body);
        m
    };
    std::fs::write(
        dir.path().join("koi8.mht"),
        page("koi8@t", b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=koi8-r\"><p>", &koi8),
    )
    .expect("write");
    std::fs::write(dir.path().join("cp1251.mht"), page("cp1251@t", b"<p>", &cp1251)).expect("write");
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    for (mid, want) in [("koi8@t", "Новости дня"), ("cp1251@t", "Новини України")] {
        let detail = app.json(&format!("/api/messages/{mid}")).await;
        let body = app.get(detail["html_url"].as_str().expect("html")).await;
        assert_eq!(body.header("content-type"), "text/html; charset=utf-8");
        assert!(body.text().contains(want), "{mid}: {}", body.text());
    }
}

#[tokio::test]
async fn chrome_stylesheets_at_cid_locations_resolve_against_the_page() {
    let dir = tempfile::tempdir().expect("dir");
    let message = "From: a@example.com\nMessage-ID: <blinkcss@t>\nContent-Type: multipart/related; type=\"text/html\"; boundary=b\n\n--b\nContent-Type: text/html\nContent-Location: http://example.com/page/\n\n<link rel=\"stylesheet\" href=\"cid:css-1@mhtml.blink\"><template shadowmode=\"open\"><p>in the shadow</p></template>\n--b\nContent-Type: text/css\nContent-Location: cid:css-1@mhtml.blink\n\nbody { background: url(/img/bg.png) }\n--b\nContent-Type: image/png\nContent-Location: http://example.com/img/bg.png\n\nPNG\n--b--\n";
    std::fs::write(dir.path().join("blink.mht"), message.replace('\n', "\r\n")).expect("write");
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let detail = app.json("/api/messages/blinkcss@t").await;
    let page = app.get(detail["html_url"].as_str().expect("html")).await.text();
    assert!(page.contains("shadowrootmode=\"open\""), "{page}");
    let css_url = page.split("href=\"").nth(1).and_then(|s| s.split('"').next()).expect("stylesheet link");
    let css = app.get(&css_url.replace("&amp;", "&")).await.text();
    assert!(css.contains("/part/blinkcss@t/") && !css.contains("about:invalid"), "{css}");
}

/// A saved page as the browser that saved it shows it: one case per behaviour, each a small MHTML
/// file, the body URL the API gives for it, and what that body must and must not contain.
struct Shown {
    name: &'static str,
    message: &'static str,
    /// `html_url` or `image_url`.
    body: &'static str,
    contains: &'static [&'static str],
    absent: &'static [&'static str],
}

const SHOWN: &[Shown] = &[
    Shown {
        // Blink once wrote `=` unescaped in quoted-printable (`id="h1"`); RFC 2045 §6.7's robust
        // decoder keeps such an `=`, where a strict one gave up and left every `=3D` in the page.
        name: "quoted_printable_keeps_an_equals_sign_that_starts_no_escape",
        message: "From: <Saved by Blink>\nMessage-ID: <qp@t>\nContent-Type: multipart/related; type=\"text/html\"; boundary=b\n\n--b\nContent-Type: text/html\nContent-Transfer-Encoding: quoted-printable\nContent-Location: file:///form.html\n\n<meta http-equiv=3D\"Content-Type\" content=3D\"text/html; charset=\n=3DUTF-8\">\n<h1 id=\"h1\">Form</h1>\n<p class=3D\"note\">caf=C3=A9</p>\n--b--\n",
        body: "html_url",
        contains: &["<h1 id=\"h1\">Form</h1>", "<p class=\"note\">café</p>"],
        absent: &["=3D", "3D\""],
    },
    Shown {
        // Nothing in a message can submit a form; its controls look it, as Chromium greys them.
        name: "form_controls_show_disabled",
        message: "Message-ID: <form@t>\nContent-Type: text/html; charset=utf-8\n\n<form action=\"http://evil.example/\"><input name=q><input type=submit value=Go><button formaction=\"http://evil.example/\">b</button><select name=s><option>o</select><textarea>t</textarea></form>\n",
        body: "html_url",
        contains: &[
            "<input name=q disabled=\"\">",
            "<input type=submit value=Go disabled=\"\">",
            "<button disabled=\"\">b</button>",
            "<select name=s disabled=\"\">",
            "<textarea disabled=\"\">t</textarea>",
        ],
        absent: &["action=", "evil.example"],
    },
    Shown {
        // An image found nowhere (blocked, or missing from the archive) shows as a broken image,
        // as Chromium shows it in a saved page, and still loads nothing.
        name: "an_unavailable_image_shows_as_broken",
        message: "Message-ID: <broken@t>\nContent-Type: text/html; charset=utf-8\nContent-Location: http://localhost:3000/the/file/path.html\n\n<img src=\"http://localhost:3000/dot.png\"><img alt=\"missing\" src=\"missing.png\"><img src=\"data:image/gif;base64,R0lGODlhAQABAAAAACw=\">\n",
        body: "html_url",
        contains: &["<img src=\"data:,\">", "<img alt=\"missing\" src=\"data:,\">", "<img src=\"data:image/gif;base64,"],
        absent: &["dot.png", "missing.png"],
    },
    Shown {
        // A page of frames saved with its frames: the frameset stays, each frame opens its part.
        name: "a_frameset_shows_its_frames",
        message: "From: <Saved by Blink>\nMessage-ID: <frameset@t>\nContent-Type: multipart/related; type=\"text/html\"; boundary=b\n\n--b\nContent-Type: text/html\nContent-Location: http://example.com/\n\n<html><frameset cols=\"30%,*\"><frame src=\"nav.html\"><frame src=\"http://elsewhere.example/\"></frameset></html>\n--b\nContent-Type: text/html\nContent-Location: http://example.com/nav.html\n\n<p>nav</p>\n--b--\n",
        body: "html_url",
        contains: &["<frameset cols=\"30%,*\"><frame src=\"/part/frameset@t/~2\"><frame></frameset>"],
        absent: &["elsewhere.example"],
    },
    Shown {
        // A page served as XHTML is saved with its type, and is the page all the same.
        name: "an_xhtml_root_is_the_page",
        message: "From: <Saved by Blink>\nMessage-ID: <xhtml@t>\nContent-Type: multipart/related; type=\"text/html\"; boundary=b\n\n--b\nContent-Type: application/xhtml+xml\nContent-Location: http://example.com/\n\n<html xmlns=\"http://www.w3.org/1999/xhtml\"><body><p>caf\u{e9} xhtml</p><img src=\"a.png\"/><script>x()</script></body></html>\n--b\nContent-Type: image/png\nContent-Location: http://example.com/a.png\n\nPNG\n--b--\n",
        body: "html_url",
        contains: &["<p>caf\u{e9} xhtml</p>", "<img src=\"/part/xhtml@t/~2\""],
        absent: &["<script", "x()"],
    },
];

#[tokio::test]
async fn saved_pages_render_as_the_browser_shows_them() {
    let dir = tempfile::tempdir().expect("dir");
    for case in SHOWN {
        std::fs::write(dir.path().join(format!("{}.mht", case.name)), case.message.replace('\n', "\r\n"))
            .expect("write");
    }
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    for case in SHOWN {
        let mid = case.message.split("Message-ID: <").nth(1).and_then(|s| s.split('>').next()).expect("mid");
        let detail = app.json(&format!("/api/messages/{mid}")).await;
        let url = detail[case.body].as_str().unwrap_or_else(|| panic!("{}: no {}", case.name, case.body));
        let body = app.get(url).await.text();
        for want in case.contains {
            assert!(body.contains(want), "{}: {want} in {body}", case.name);
        }
        for unwanted in case.absent {
            assert!(!body.contains(unwanted), "{}: {unwanted} in {body}", case.name);
        }
    }
}

/// An XHTML page is shown as the HTML the rewrite read it as: markup HTML takes for text (a
/// `<title>`, a `<textarea>`) is text to the browser too, never elements the rewrite did not see.
#[tokio::test]
async fn an_xhtml_page_is_served_as_the_html_it_was_read_as() {
    let dir = tempfile::tempdir().expect("dir");
    let message = "From: <Saved by Blink>\nMessage-ID: <xhtml-as-html@t>\nContent-Type: multipart/related; type=\"text/html\"; boundary=b\n\n--b\nContent-Type: application/xhtml+xml; charset=utf-8\nContent-Location: http://example.com/\n\n<html xmlns=\"http://www.w3.org/1999/xhtml\"><head><title><img src=\"http://remote.example/t.gif\"/></title></head><body><textarea><img src=\"http://remote.example/u.gif\"/></textarea><p>shown</p></body></html>\n--b--\n";
    std::fs::write(dir.path().join("x.mht"), message.replace('\n', "\r\n")).expect("write");
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let detail = app.json("/api/messages/xhtml-as-html@t").await;
    let url = detail["html_url"].as_str().expect("html_url");
    let page = app.get(url).await;
    let content_type = page.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
    assert!(content_type.starts_with("text/html"), "{content_type}");
    // The part tree says what the URL answers with.
    let root = &detail["parts"][0]["parts"][0];
    assert_eq!(
        (root["content_type"].as_str(), root["served_type"].as_str()),
        (Some("application/xhtml+xml"), Some("text/html")),
        "{root}"
    );
    assert!(page.text().contains("<p>shown</p>"));
}

/// A saved page whose root part is an image (Chromium saves an image it shows by itself so) has
/// that image for its body: the API names it, the message page's frame opens it, and the browser
/// shows it as it shows any image by itself. A message with a text or HTML body keeps that.
#[tokio::test]
async fn a_saved_image_is_its_page_s_body() {
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==";
    let cases = [
        // (file, message, the image is the body)
        ("root.mht", format!("Message-ID: <imgroot@t>\nContent-Type: multipart/related; type=\"text/html\"; boundary=b\n\n--b\nContent-Type: image/png\nContent-Transfer-Encoding: base64\nContent-Location: http://localhost/red.png\n\n{PNG}\n--b--\n"), true),
        ("single.eml", format!("Message-ID: <imgonly@t>\nContent-Type: image/png\nContent-Transfer-Encoding: base64\n\n{PNG}\n"), true),
        ("attached.eml", format!("Message-ID: <imgattached@t>\nContent-Type: image/png\nContent-Disposition: attachment; filename=a.png\nContent-Transfer-Encoding: base64\n\n{PNG}\n"), false),
        ("svg.mht", "Message-ID: <imgsvg@t>\nContent-Type: multipart/related; boundary=b\n\n--b\nContent-Type: image/svg+xml\n\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n--b--\n".to_string(), false),
        ("text.mht", format!("Message-ID: <imgtext@t>\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: image/png\nContent-Transfer-Encoding: base64\n\n{PNG}\n--b\nContent-Type: text/plain\n\nhello\n--b--\n"), false),
    ];
    let dir = tempfile::tempdir().expect("dir");
    for (file, message, _) in &cases {
        std::fs::write(dir.path().join(file), message.replace('\n', "\r\n")).expect("write");
    }
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    for (file, message, is_body) in &cases {
        let mid = message.split("Message-ID: <").nth(1).and_then(|s| s.split('>').next()).expect("mid");
        let detail = app.json(&format!("/api/messages/{mid}")).await;
        let page = app.get(&format!("/message/{mid}")).await.text();
        if !is_body {
            assert!(detail["image_url"].is_null(), "{file}: {detail}");
            continue;
        }
        assert!(detail["html_url"].is_null() && detail["text_url"].is_null(), "{file}: {detail}");
        let url = detail["image_url"].as_str().unwrap_or_else(|| panic!("{file}: no image_url"));
        let image = app.get(url).await;
        assert_eq!(image.header("content-type"), "image/png", "{file}");
        let frame = page.split("<iframe class=\"body").nth(1).unwrap_or_else(|| panic!("{file}: no body frame"));
        let frame = &frame[..frame.find('>').expect("tag end")];
        assert!(frame.contains(&format!("src=\"{url}\"")), "{file}: {frame}");
        assert!(!frame.contains("allow-scripts") && !frame.contains("allow-same-origin"), "{file}: {frame}");
    }
}

/// The saved XHTML pages of `tests/fixtures/xhtml-saves` (written by its `make.py` as a saving tool
/// that keeps each resource as it was served), each the message `<name@xhtml-saves.test>`.
fn xhtml_saves() -> TestApp {
    let dir = crate::common::repo_path("tests/fixtures/xhtml-saves");
    TestApp::new(&crate::common::files_with_ext(&dir, &["mht"]))
}

/// The rewritten body of one of [`xhtml_saves`], as the message's frame loads it.
async fn saved_page(app: &TestApp, name: &str, query: &str) -> crate::common::Reply {
    let detail = app.json(&format!("/api/messages/{name}@xhtml-saves.test")).await;
    let url = detail["html_url"].as_str().unwrap_or_else(|| panic!("{name}: no html_url"));
    let url = url.split('?').next().unwrap_or(url);
    app.get(&format!("{url}{query}")).await
}

/// ISO-8859-15 has the euro sign where windows-1252, which a guess would take, has `¤`.
const FRENCH: &str = "Crème brûlée à la française : 5 €";

/// A page whose part names no charset says its encoding in its XML declaration, and is read in it
/// as a browser reads it: before a `<meta>` in XHTML (XML knows no `<meta>`), after one in HTML
/// (the HTML Standard's prescan turns to the declaration when it finds no `<meta>`).
#[tokio::test]
async fn an_xhtml_page_reads_in_the_encoding_its_xml_declaration_names() {
    let app = xhtml_saves();
    for (name, want) in [
        ("latin9-declared", FRENCH),
        ("shift-jis-declared", "保存したページは、保存したブラウザが表示したとおりに見える"),
        ("utf-16-bom", FRENCH),
        ("declaration-over-meta", FRENCH),
        ("html-with-xml-declaration", FRENCH),
    ] {
        let page = saved_page(&app, name, "").await;
        assert_eq!(page.header("content-type"), "text/html; charset=utf-8", "{name}");
        assert!(page.text().contains(&format!("<p id=\"marker\">{want}</p>")), "{name}: {}", page.text());
    }
    // An XML part names its encoding the same way, and is served as the UTF-8 it was read into.
    let dir = tempfile::tempdir().expect("dir");
    let mut message = b"Message-ID: <xml-part@t>\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nsee the file\r\n--b\r\nContent-Type: text/xml\r\nContent-Disposition: attachment; filename=menu.xml\r\nContent-Transfer-Encoding: 8bit\r\n\r\n<?xml version=\"1.0\" encoding=\"iso-8859-15\"?>\r\n<menu>".to_vec();
    message.extend_from_slice(&encoding_rs::ISO_8859_15.encode(FRENCH).0);
    message.extend_from_slice(b"</menu>\r\n--b--\r\n");
    std::fs::write(dir.path().join("xml.eml"), message).expect("write");
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let xml = app.get("/part/xml-part@t/~2").await;
    assert_eq!(xml.header("content-type"), "text/xml; charset=utf-8");
    assert!(xml.text().contains(&format!("<menu>{FRENCH}</menu>")), "{}", xml.text());
}

/// An XHTML page's `<?xml-stylesheet?>` is applied by a browser reading it as XML, as Chromium
/// applies it from a saved page; the page is answered as HTML, where it would mean nothing, so it
/// becomes the `<link rel="stylesheet">` it stands for, found in the file as any stylesheet is. A
/// stylesheet on the network loads only when remote content is asked for; a page read as HTML
/// gets none (no browser applies the instruction there).
#[tokio::test]
async fn an_xhtml_page_s_xml_stylesheet_applies_as_a_link() {
    let app = xhtml_saves();
    let page = saved_page(&app, "xml-stylesheet", "").await.text();
    let (before, after) = page.split_once("<html").expect("root element");
    assert!(before.ends_with("<link rel=\"stylesheet\" href=\"/part/xml-stylesheet@xhtml-saves.test/~2\">"), "{page}");
    assert!(
        before.find("<!DOCTYPE").is_some_and(|d| d < before.find("<link").unwrap_or(0)),
        "the doctype stays first: {page}"
    );
    assert!(!after.contains("<link") && before.matches("<link").count() == 1, "the remote one loads nothing: {page}");
    let css = app.get("/part/xml-stylesheet@xhtml-saves.test/~2").await.text();
    assert!(css.contains("#ffe8b0"), "{css}");
    let remote = saved_page(&app, "xml-stylesheet", "?remote=1").await.text();
    assert!(remote.contains("<link rel=\"stylesheet\" href=\"http://cdn.shelf-test.example/remote.css\">"), "{remote}");
    let html = saved_page(&app, "xml-stylesheet-in-html", "").await.text();
    assert!(!html.contains("<link"), "{html}");
}

/// A picture placed with `<object data>` or `<embed src>` shows as the picture, as a browser shows
/// it (Chrome's save of such a page, `tests/fixtures/chrome-saves/object-embed-images.mhtml`):
/// an `<img>` of the element's size and title, the fallback gone. Through `<img>` an SVG runs no
/// script, and its part keeps the sandboxing policy of every part. What is no picture keeps its
/// fallback, as before.
#[tokio::test]
async fn pictures_in_object_and_embed_show_as_images() {
    let save = crate::common::repo_path("tests/fixtures/chrome-saves/object-embed-images.mhtml");
    let app = TestApp::new(&[save]);
    let list = app.json("/api/messages?limit=10").await;
    let id = list["messages"][0]["id"].as_str().expect("the save's id").to_string();
    let detail = app.json(&format!("/api/messages/{id}")).await;
    let page = app.get(detail["html_url"].as_str().expect("html_url")).await.text();
    assert!(!page.contains("<object") && !page.contains("<embed") && !page.contains("did not load"), "{page}");
    let images: Vec<&str> = page.split("<img ").skip(1).map(|s| &s[..s.find('>').unwrap_or(s.len())]).collect();
    assert_eq!(images.len(), 5, "{page}");
    let expect = [
        ("width=\"240\" height=\"160\" alt=\"Sales chart\"", "image/png"),
        ("width=\"96\" height=\"96\"", "image/svg+xml"),
        ("width=\"48\" height=\"48\"", "image/svg+xml"),
        ("width=\"200\" height=\"120\"", "image/jpeg"),
        ("", "image/gif"),
    ];
    for (img, (attributes, served)) in images.iter().zip(expect) {
        assert!(img.contains(attributes), "{img}");
        let src = img.split("src=\"").nth(1).and_then(|s| s.split('"').next()).expect("src");
        assert!(src.starts_with("/part/"), "{img}");
        let part = app.get(&src.replace("&amp;", "&")).await;
        assert_eq!(part.header("content-type"), served, "{img}");
        let csp = part.header("content-security-policy");
        assert!(csp.starts_with("sandbox") && csp.contains("default-src 'none'"), "{img}: {csp}");
        assert_eq!(part.header("x-content-type-options"), "nosniff");
    }
    // Not a picture: a plugin's data, or a picture the file does not hold; the fallback shows.
    let dir = tempfile::tempdir().expect("dir");
    let message = "Message-ID: <not-pictures@t>\nContent-Type: multipart/related; boundary=b\n\n--b\nContent-Type: text/html\nContent-Location: http://example.com/\n\n<object data=\"movie.swf\" type=\"image/png\" width=\"10\" height=\"10\"><p>no Flash</p></object><embed src=\"movie.swf\"><object data=\"http://elsewhere.example/a.png\" type=\"image/png\"><p>not saved</p></object>\n--b\nContent-Type: application/x-shockwave-flash\nContent-Location: http://example.com/movie.swf\n\nFWS\n--b--\n";
    std::fs::write(dir.path().join("flash.mht"), message.replace('\n', "\r\n")).expect("write");
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let detail = app.json("/api/messages/not-pictures@t").await;
    let page = app.get(detail["html_url"].as_str().expect("html_url")).await.text();
    assert!(page.contains("<p>no Flash</p>") && page.contains("<p>not saved</p>"), "{page}");
    assert!(!page.contains("<img") && !page.contains("<embed") && !page.contains("<object"), "{page}");
}
