//! Parts that point elsewhere: `message/external-body` (RFC 2046 §5.2.3, RFC 2017's URL access type)
//! described in the part tree, listed on the page, reached by `cid:` and by their part URL, and never
//! fetched by the server.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};

use crate::common::{corpus_dir, repo_path, Reply, TestApp};

fn fixture(name: &str) -> PathBuf {
    repo_path(&format!("tests/fixtures/external/{name}"))
}

fn fixtures() -> TestApp {
    let files: Vec<PathBuf> =
        ["rfc2017.eml", "rfc2046.eml", "whole-body.eml", "html-cid.eml", "bad.eml"].into_iter().map(fixture).collect();
    TestApp::new(&files)
}

/// Every node of a message's part tree, depth first.
fn nodes(detail: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    let mut stack: Vec<&Value> = detail["parts"].as_array().expect("parts").iter().rev().collect();
    while let Some(p) = stack.pop() {
        out.push(p.clone());
        stack.extend(p["parts"].as_array().expect("children").iter().rev());
    }
    out
}

fn external_nodes(detail: &Value) -> Vec<Value> {
    nodes(detail).into_iter().filter(|n| n.get("external").is_some()).collect()
}

/// The external node whose phantom (or own) Content-ID is `cid`.
fn external_by_cid(detail: &Value, cid: &str) -> Value {
    external_nodes(detail)
        .into_iter()
        .find(|n| n["content_id"] == cid || n["external"]["content_id"] == cid)
        .unwrap_or_else(|| panic!("no external body {cid} in {detail:#}"))
}

fn url_of(node: &Value) -> String {
    node["url"].as_str().expect("url").to_string()
}

fn problem(r: &Reply) -> Value {
    assert_eq!(r.header("content-type"), "application/problem+json", "{}", r.text());
    serde_json::from_slice(&r.body).expect("problem json")
}

/// The page's "Stored elsewhere" section.
fn externals_section(page: &str) -> &str {
    let start = page.find("<section class=\"attachments externals\">").expect("an externals section");
    let end = page[start..].find("</section>").map(|e| start + e).expect("section end");
    &page[start..end]
}

/// Every `<a …>` tag in `html`.
fn anchors(html: &str) -> Vec<&str> {
    html.match_indices("<a ").map(|(i, _)| &html[i..i + html[i..].find('>').expect("tag end") + 1]).collect()
}

#[tokio::test]
async fn rfc2017_urls_are_recovered_and_described() {
    let app = fixtures();
    let d = app.json("/api/messages/rfc2017@external.test").await;
    let ext = external_nodes(&d);
    assert_eq!(ext.len(), 2, "{d:#}");
    assert_eq!(
        ext[0]["external"],
        json!({"access_type": "url", "url": "http://www.foo.com/file", "content_type": "text/html"})
    );
    assert_eq!(
        ext[1]["external"],
        json!({
            "access_type": "url",
            "url": "ftp://ftp.deepdirs.org/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/20/21/file.html",
            "content_type": "text/html",
        })
    );
    for n in &ext {
        assert_eq!(n["content_type"], "message/external-body");
        assert_eq!(n["size"], 0, "the phantom is not the part's content");
        assert_eq!(n["filename"], Value::Null);
    }
    // Other nodes have no `external` key at all.
    let others: Vec<Value> = nodes(&d).into_iter().filter(|n| n.get("external").is_none()).collect();
    assert_eq!(others.len(), 2);
    for n in others {
        assert_eq!(n.as_object().map(|o| o.len()), Some(9), "{n}");
    }
    assert_eq!(d["text_url"], "/part/rfc2017@external.test/~1");
}

#[tokio::test]
async fn rfc2046_access_types_are_described() {
    let app = fixtures();
    let d = app.json("/api/messages/rfc2046@external.test").await;
    let ext = external_nodes(&d);
    assert_eq!(ext.len(), 4, "{d:#}");
    let expired = "Fri, 14 Jun 1991 19:13:14 -0400 (EDT)";
    assert_eq!(
        ext[0]["external"],
        json!({
            "access_type": "anon-ftp",
            "url": "ftp://thumper.bellcore.com/pub/BodyFormats.ps",
            "content_type": "application/postscript",
            "content_id": "id42@guppylake.bellcore.com",
            "name": "BodyFormats.ps",
            "site": "thumper.bellcore.com",
            "directory": "pub",
            "mode": "image",
            "expiration": expired,
            "expired": true,
        })
    );
    assert_eq!(
        ext[1]["external"],
        json!({
            "access_type": "local-file",
            "content_type": "application/postscript",
            "content_id": "id42@guppylake.bellcore.com",
            "name": "/u/nsb/writing/rfcs/RFC-MIME.ps",
            "site": "thumper.bellcore.com",
            "expiration": expired,
            "expired": true,
        })
    );
    assert_eq!(
        ext[2]["external"],
        json!({
            "access_type": "mail-server",
            "content_type": "application/postscript",
            "content_id": "id42@guppylake.bellcore.com",
            "server": "listserv@bogus.bitnet",
            "expiration": expired,
            "expired": true,
        })
    );
    let me = &ext[3]["external"];
    assert_eq!(me["access_type"], "local-file");
    assert_eq!(me["name"], "/u/nsb/Me.jpeg");
    assert_eq!(me["content_type"], "image/jpeg");
    assert_eq!(me["content_id"], "id43@guppylake.bellcore.com");
    assert!(me["description"].as_str().is_some_and(|s| s.contains("Me")), "{me}");
    assert!(me.get("url").is_none() && me.get("expired").is_none(), "{me}");
    // Three alternatives share the phantom Content-ID: it names the first, and each keeps its
    // section URL.
    assert_eq!(url_of(&ext[0]), "/part/rfc2046@external.test/id42@guppylake.bellcore.com");
    assert_eq!(url_of(&ext[1]), "/part/rfc2046@external.test/~2.2");
    assert_eq!(url_of(&ext[3]), "/part/rfc2046@external.test/id43@guppylake.bellcore.com");
}

#[tokio::test]
async fn a_message_whose_whole_body_is_external() {
    if !crate::common::needs::chromium("a_message_whose_whole_body_is_external") {
        return;
    }
    let app = fixtures();
    let d = app.json("/api/messages/whole-body@external.test").await;
    let root = &d["parts"][0];
    assert_eq!(root["content_type"], "message/external-body");
    assert_eq!(
        root["external"],
        json!({
            "access_type": "url",
            "url": "https://reports.example.org/2026/annual-report.pdf",
            "content_type": "application/pdf",
            "content_id": "annual-report@example.org",
            "description": "Annual report 2026",
            "expiration": "Thu, 31 Dec 2099 23:59:59 +0000",
            "size": 48213,
            "permission": "read",
        })
    );
    assert_eq!((&d["html_url"], &d["text_url"]), (&Value::Null, &Value::Null));
    assert_eq!(url_of(root), "/part/whole-body@external.test/annual-report@example.org");
    let r = app.get(&url_of(root)).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(r.header("location"), "https://reports.example.org/2026/annual-report.pdf");
    let page = app.get("/message/whole-body@external.test").await.text();
    assert!(page.contains("it points to data stored elsewhere"), "{page}");
    let section = externals_section(&page);
    assert!(section.contains("Annual report 2026") && section.contains("application/pdf"), "{section}");
    assert!(section.contains("47 KB") && section.contains("expires Thu, 31 Dec 2099"), "{section}");
}

#[tokio::test]
async fn part_urls_redirect_to_web_urls_and_describe_the_rest() {
    if !crate::common::needs::chromium("part_urls_redirect_to_web_urls_and_describe_the_rest") {
        return;
    }
    let app = fixtures();
    let web = "/part/whole-body@external.test/annual-report@example.org";
    for suffix in ["", "?raw=1", "?download=1", "?remote=1"] {
        let r = app.get_with(&format!("{web}{suffix}"), &[("range", "bytes=0-3")]).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{suffix}");
        assert_eq!(r.header("location"), "https://reports.example.org/2026/annual-report.pdf");
        assert!(r.body.is_empty() && r.header("content-range").is_empty(), "{suffix}");
        assert_eq!(r.header("referrer-policy"), "no-referrer");
    }
    let head = app.request(Request::head(web).body(Body::empty()).expect("request")).await;
    assert_eq!(head.status, StatusCode::SEE_OTHER);

    let rfc2017 = app.json("/api/messages/rfc2017@external.test").await;
    let ext = external_nodes(&rfc2017);
    let r = app.get(&url_of(&ext[0])).await;
    assert_eq!((r.status, r.header("location")), (StatusCode::SEE_OTHER, "http://www.foo.com/file"));

    let rfc2046 = app.json("/api/messages/rfc2046@external.test").await;
    let rfc2046 = external_nodes(&rfc2046);
    let described = [
        (url_of(&ext[1]), "ftp://ftp.deepdirs.org/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/20/21/file.html"),
        (url_of(&rfc2046[0]), "ftp://thumper.bellcore.com/pub/BodyFormats.ps"),
        (url_of(&rfc2046[1]), "/u/nsb/writing/rfcs/RFC-MIME.ps on thumper.bellcore.com"),
        (url_of(&rfc2046[2]), "listserv@bogus.bitnet"),
        (url_of(&rfc2046[3]), "/u/nsb/Me.jpeg"),
    ];
    for (url, place) in described {
        for suffix in ["", "?raw=1"] {
            let r = app.get(&format!("{url}{suffix}")).await;
            assert_eq!(r.status, StatusCode::NOT_FOUND, "{url}{suffix}");
            assert_eq!(r.header("location"), "");
            let p = problem(&r);
            assert_eq!(p["type"], "/api/problems/external-body");
            assert_eq!(p["status"], 404);
            let detail = p["detail"].as_str().expect("detail");
            assert!(detail.contains(place) && detail.contains("does not fetch"), "{url}: {detail}");
            assert!(!r.text().contains("NOT REALLY"), "never the phantom");
        }
    }
}

#[tokio::test]
async fn cid_references_reach_external_bodies() {
    let app = fixtures();
    let d = app.json("/api/messages/html-cid@external.test").await;
    // The image's Content-ID is in its phantom header, the data file's on the entity itself.
    let chart = external_by_cid(&d, "chart@charts.example.org");
    assert_eq!(chart["content_id"], Value::Null);
    assert_eq!(url_of(&chart), "/part/html-cid@external.test/chart@charts.example.org");
    let r = app.get(&url_of(&chart)).await;
    assert_eq!((r.status, r.header("location")), (StatusCode::SEE_OTHER, "http://images.example.org/weekly/chart.png"));
    let data = external_by_cid(&d, "data@charts.example.org");
    assert_eq!(url_of(&data), "/part/html-cid@external.test/data@charts.example.org");
    assert_eq!(app.get(&url_of(&data)).await.status, StatusCode::NOT_FOUND);

    let html_url = d["html_url"].as_str().expect("an HTML body");
    let blocked = app.get(html_url).await.text();
    assert!(!blocked.contains("cid:"), "{blocked}");
    assert!(!blocked.contains("images.example.org"), "a blocked image names nothing: {blocked}");
    assert!(blocked.contains(r#"<a href="ftp://ftp.charts.example.org/weekly/data.csv" target="_blank""#), "{blocked}");
    assert!(blocked.contains(r#"href="/part/html-cid@external.test/archive@charts.example.org""#), "{blocked}");
    let page = app.get("/message/html-cid@external.test").await.text();
    assert!(page.contains("1 remote resource blocked"), "the external image counts as remote: {page}");
    assert!(page.contains("/message/html-cid@external.test?remote=1"));

    let allowed = app.get(&format!("{html_url}?remote=1")).await;
    assert!(allowed.header("content-security-policy").contains("img-src 'self' data: http: https:"));
    assert!(allowed.text().contains(r#"src="http://images.example.org/weekly/chart.png""#), "{}", allowed.text());
    let page = app.get("/message/html-cid@external.test?remote=1").await.text();
    assert!(page.contains("Remote content is loaded for this message"));
}

#[tokio::test]
async fn message_page_lists_where_the_data_is() {
    let app = fixtures();
    let page = app.get("/message/rfc2046@external.test").await;
    assert_eq!(page.status, StatusCode::OK);
    let page = page.text();
    let section = externals_section(&page);
    for shown in [
        "BodyFormats.ps",
        "application/postscript",
        "anonymous FTP",
        "/u/nsb/writing/rfcs/RFC-MIME.ps on thumper.bellcore.com",
        "listserv@bogus.bitnet",
        "<pre class=\"request\">get RFC-MIME.DOC</pre>",
        "<strong>expired</strong> Fri, 14 Jun 1991 19:13:14 -0400 (EDT)",
        "image/jpeg",
        "/u/nsb/Me.jpeg",
    ] {
        assert!(section.contains(shown), "{shown} in {section}");
    }
    let links = anchors(section);
    assert_eq!(
        links,
        [
            r#"<a href="ftp://thumper.bellcore.com/pub/BodyFormats.ps" target="_blank" rel="noopener noreferrer">"#,
            r#"<a href="mailto:listserv@bogus.bitnet?body=get%20RFC-MIME.DOC" target="_blank" rel="noopener noreferrer">"#,
        ]
    );
    assert!(!page.contains("href=\"file:") && !page.contains("<img"), "{page}");
    assert!(!page.contains("NOT REALLY"), "the phantom's filler is not shown");
    // Not attachments: their data is not here to open or download.
    assert!(!page.contains("<h2>Attachments</h2>"), "{page}");

    let page = app.get("/message/html-cid@external.test").await.text();
    let section = externals_section(&page);
    assert!(section.contains("Weekly chart") && section.contains("image/png"), "{section}");
    assert!(section.contains(
        r#"<a href="http://images.example.org/weekly/chart.png" target="_blank" rel="noopener noreferrer">"#
    ));
    assert!(section.contains("/srv/charts/archive.tar on charts.example.org"), "{section}");
}

#[tokio::test]
async fn bad_external_bodies_are_shown_never_linked_never_5xx() {
    if !crate::common::needs::chromium("bad_external_bodies_are_shown_never_linked_never_5xx") {
        return;
    }
    let app = fixtures();
    let d = app.json("/api/messages/bad@external.test").await;
    let ext = |cid: &str| external_by_cid(&d, cid);
    // (Content-ID, access type, url, where its part URL leads)
    type Case<'a> = (&'a str, Option<&'a str>, Option<&'a str>, Option<&'a str>);
    let cases: &[Case] = &[
        ("no-url@bad.test", Some("url"), None, None),
        ("empty-url@bad.test", Some("url"), None, None),
        ("unknown@bad.test", Some("x-carrier-pigeon"), None, None),
        ("control@bad.test", Some("url"), Some("http://ctl.example/a\u{FFFD}b"), None),
        // RFC 2017 §3.1 removes all white space: what is left is a good URL.
        (
            "spaces@bad.test",
            Some("url"),
            Some("http://space.example/myreport.pdf"),
            Some("http://space.example/myreport.pdf"),
        ),
        ("eight-bit@bad.test", Some("url"), Some("http://bytes.example/café"), None),
        ("javascript@bad.test", Some("url"), Some("javascript:alert(document.domain)"), None),
        ("data@bad.test", Some("url"), Some("data:text/html,<script>alert(1)</script>"), None),
        ("file-url@bad.test", Some("url"), Some("file:///etc/passwd"), None),
        ("local-file@bad.test", Some("local-file"), None, None),
        ("bad-server@bad.test", Some("mail-server"), None, None),
        ("bad-site@bad.test", Some("anon-ftp"), None, None),
        ("no-phantom@bad.test", Some("url"), Some("http://no-phantom.example/x"), Some("http://no-phantom.example/x")),
        ("no-access-type@bad.test", None, None, None),
    ];
    for &(cid, access, url, redirect) in cases {
        let n = ext(cid);
        let e = &n["external"];
        assert_eq!(e["access_type"].as_str(), access, "{cid}: {e}");
        assert_eq!(e["url"].as_str(), url, "{cid}: {e}");
        let r = app.get(&url_of(&n)).await;
        match redirect {
            Some(to) => assert_eq!((r.status, r.header("location")), (StatusCode::SEE_OTHER, to), "{cid}"),
            None => {
                assert_eq!(r.status, StatusCode::NOT_FOUND, "{cid}");
                assert_eq!(problem(&r)["type"], "/api/problems/external-body", "{cid}");
                assert!(!r.text().contains("root:"), "{cid}: nothing read from the server's disk");
            }
        }
    }
    assert_eq!(ext("no-phantom@bad.test")["external"].get("content_type"), None);
    assert_eq!(ext("bad-site@bad.test")["external"]["site"], "evil.example/x@y");
    assert_eq!(ext("bad-site@bad.test")["external"].get("size"), None, "size=lots is not a size");

    let page = app.get("/message/bad@external.test").await;
    assert_eq!(page.status, StatusCode::OK);
    let page = page.text();
    let section = externals_section(&page);
    let links = anchors(section);
    assert_eq!(links.len(), 2, "only the two good web URLs are links: {links:#?}");
    assert!(links.iter().all(|a| a.contains("target=\"_blank\" rel=\"noopener noreferrer\"")));
    for shown in
        ["javascript:alert(document.domain)", "file:///etc/passwd", "http://bytes.example/café", "not an address"]
    {
        assert!(section.contains(shown), "{shown} is shown as text: {section}");
    }
    assert!(section.contains("data:text/html,&#60;script&#62;"), "escaped: {section}");
    assert!(section.contains("unknown access type"), "{section}");
    for scheme in ["javascript:", "data:", "file:", "mailto:", "tftp:"] {
        assert!(!page.contains(&format!("href=\"{scheme}")), "{scheme} is never a link");
    }
    assert!(!page.contains('\u{1}'), "control characters are not passed on");
}

#[tokio::test]
async fn phantom_text_is_not_searched_but_descriptions_are() {
    let app = fixtures();
    let total = |q: &str| {
        let q = percent_encoding::utf8_percent_encode(q, percent_encoding::NON_ALPHANUMERIC).to_string();
        let app = &app;
        async move { app.json(&format!("/api/messages?q={q}")).await["total"].as_u64().expect("total") }
    };
    assert_eq!(total("really").await, 0, "the phantom's filler is not message text");
    assert_eq!(total("get RFC-MIME.DOC").await, 0, "nor a mail-server request");
    assert_eq!(total("body:annual").await, 1, "a Content-Description is");
    assert_eq!(total("weekly chart").await, 1);
    assert_eq!(total("filename:BodyFormats.ps").await, 1, "an external body's name is found with file names");
}

/// A listener that only counts who connects.
async fn counting_listener() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    (addr.to_string(), count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_never_goes_where_external_bodies_point() {
    let (hostport, connections) = counting_listener().await;
    let dir = tempfile::tempdir().expect("dir");
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "the-secret-on-the-server's-disk").expect("write");
    let part = |ct: &str, cid: &str| {
        format!("--b\r\nContent-Type: message/external-body; {ct}\r\n\r\nContent-Type: image/png\r\nContent-ID: <{cid}>\r\n\r\n")
    };
    let message = [
        "Message-ID: <ssrf@external.test>\r\nSubject: everywhere\r\nContent-Type: multipart/related; boundary=b\r\n\r\n".to_string(),
        "--b\r\nContent-Type: text/html\r\n\r\n<img src=\"cid:http@x\"><img src=\"cid:https@x\"><img src=\"cid:ftp@x\"><img src=\"cid:file@x\"><a href=\"cid:local@x\">l</a>\r\n".to_string(),
        part(&format!("access-type=URL; URL=\"http://{hostport}/x.png\""), "http@x"),
        part(&format!("access-type=URL; URL=\"https://{hostport}/x.png\""), "https@x"),
        part(&format!("access-type=anon-ftp; site=\"{hostport}\"; name=x.png"), "ftp@x"),
        part(&format!("access-type=tftp; site=\"{hostport}\"; name=x.png"), "tftp@x"),
        part(&format!("access-type=URL; URL=\"file://{}\"", secret.display()), "file@x"),
        part(&format!("access-type=local-file; name=\"{}\"", secret.display()), "local@x"),
        part(&format!("access-type=mail-server; server=\"probe@{hostport}\""), "mail@x"),
        "--b--\r\n".to_string(),
    ]
    .concat();
    let mail = tempfile::tempdir().expect("dir");
    std::fs::write(mail.path().join("ssrf.eml"), message).expect("write");
    let app = TestApp::new(&[mail.path().to_path_buf()]);
    let d = app.json("/api/messages/ssrf@external.test").await;
    assert_eq!(external_nodes(&d).len(), 7, "{d:#}");
    let mut urls = vec![
        "/message/ssrf@external.test".to_string(),
        "/message/ssrf@external.test?remote=1".to_string(),
        "/api/messages?q=everywhere".to_string(),
        "/raw/ssrf@external.test".to_string(),
    ];
    for n in nodes(&d) {
        let url = url_of(&n);
        urls.extend([format!("{url}?remote=1"), format!("{url}?raw=1"), url]);
    }
    for url in &urls {
        let r = app.get(url).await;
        assert!(!r.status.is_server_error(), "{url}: {}", r.status);
        assert!(!r.text().contains("the-secret-on-the-server"), "{url} read the disk");
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(connections.load(Ordering::SeqCst), 0, "the server connected where a message pointed");
}

#[tokio::test]
async fn corpus_external_bodies_are_described() {
    if !crate::common::needs::corpus("corpus_external_bodies_are_described") {
        return;
    }
    let corpus = corpus_dir();
    let flanker = corpus.join("flanker/tests/fixtures/messages/message-external-body.eml");
    let rfc = corpus.join("stalwart-mail-parser/resources/eml/rfc/001.eml");
    assert!(flanker.exists() && rfc.exists(), "corpus not found at {}", corpus.display());
    let app = TestApp::new(&[flanker, rfc]);

    // The flanker message: the phantom is missing from both parts.
    let id = "Pine.BSF.3.95.971201104619.22475B-120000@alive.znep.com";
    let d = app.json(&format!("/api/messages/{id}")).await;
    let ext = external_nodes(&d);
    assert_eq!(ext.len(), 2, "{d:#}");
    assert_eq!(ext[0]["external"], json!({"access_type": "mail-server", "server": "mailserv@ds.internic.net"}));
    assert_eq!(
        ext[1]["external"],
        json!({
            "access_type": "anon-ftp",
            "url": "ftp://ds.internic.net/internet-drafts/draft-ietf-http-authentication-00.txt",
            "name": "draft-ietf-http-authentication-00.txt",
            "site": "ds.internic.net",
            "directory": "internet-drafts",
        })
    );
    for n in &ext {
        let r = app.get(&url_of(n)).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        assert_eq!(problem(&r)["type"], "/api/problems/external-body");
    }
    let page = app.get(&format!("/message/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    let page = page.text();
    let links = anchors(externals_section(&page));
    assert_eq!(
        links,
        [
            r#"<a href="mailto:mailserv@ds.internic.net" target="_blank" rel="noopener noreferrer">"#,
            r#"<a href="ftp://ds.internic.net/internet-drafts/draft-ietf-http-authentication-00.txt" target="_blank" rel="noopener noreferrer">"#,
        ]
    );

    // RFC 2046's alternatives as mail-parser's tests carry them (one `;` missing).
    let d = app.json("/api/messages/id1@host.com").await;
    let ext = external_nodes(&d);
    let access: Vec<&str> = ext.iter().map(|n| n["external"]["access_type"].as_str().expect("access type")).collect();
    assert_eq!(access, ["anon-ftp", "local-file", "mail-server"]);
    assert_eq!(ext[2]["external"]["server"], "listserv@bogus.bitnet");
    assert!(ext.iter().all(|n| n["external"]["expired"] == true));
    assert_eq!(app.get("/message/id1@host.com").await.status, StatusCode::OK);
}

#[tokio::test]
async fn openapi_describes_external_bodies() {
    let app = fixtures();
    let doc = app.json("/api/openapi.json").await;
    let schemas = &doc["components"]["schemas"];
    let props = schemas["ExternalBody"]["properties"].as_object().expect("ExternalBody schema");
    for key in [
        "access_type",
        "url",
        "content_type",
        "content_id",
        "description",
        "name",
        "site",
        "directory",
        "mode",
        "server",
        "subject",
        "expiration",
        "expired",
        "size",
        "permission",
    ] {
        assert!(props.contains_key(key), "{key} in {props:?}");
    }
    assert!(schemas["PartNode"]["properties"]["external"].is_object(), "{}", schemas["PartNode"]);
    let part = &doc["paths"]["/part/{mid}/{cid}"]["get"]["responses"];
    assert!(part["303"]["headers"]["location"].is_object(), "{part}");
}
