//! A reader limited to some folders learns nothing of the others, by any route: every route of the
//! router (read from `src/web/app.rs` itself, so a route added later is walked too) is asked,
//! with every id, folder and label of the archive put in its parameters and the searches, counts
//! and groupings a query can ask for, by a user who may read only `Open`. The archive holds a
//! folder `Vaultroom` (with a subfolder) full of words, ids, Content-IDs and labels of its own,
//! a loose file in no folder, and a folder `Openish` (whose name starts like `Open`); no answer,
//! body or header, may hold any of their words, and every id out of reach answers exactly as one
//! that does not exist.

use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::{Request, StatusCode};

use crate::common::{Reply, TestApp};

/// Words found only in messages the scoped user may not read (compared ignoring case).
const SECRETS: &[&str] = &["zebracorn", "quokka", "mallory", "vaultroom", "toplevelword", "prefixword", "openish"];

/// Ids of messages out of reach, and one of no message at all.
const HIDDEN_IDS: &[&str] =
    &["hidden-1@far.example", "hidden-2@far.example", "loose@top.example", "openish-1@x.example"];
const NO_SUCH_ID: &str = "nobody-at-all@nowhere.example";
const OPEN_IDS: &[&str] = &["open-1@example.org", "open-2@example.org"];

fn png() -> String {
    use base64::Engine;
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(image::RgbImage::from_pixel(4, 4, image::Rgb([9, 9, 9])))
        .write_to(std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    base64::engine::general_purpose::STANDARD.encode(out)
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text.replace('\n', "\r\n")).unwrap();
}

/// The archive: `Open` (readable), `Vaultroom` and `Vaultroom/deeper` (not), `Openish` (not), and a
/// loose file (not). The readable messages refer into the hidden ones by `cid:` and `mid:`, and
/// a conversation runs from `Open` through `Vaultroom` back to `Open`.
pub fn archive() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let mail = dir.path().join("mail");
    let png = png();
    write(
        &mail,
        "Open/o1.eml",
        "From: Ann <ann@example.org>\nTo: Bob <bob@example.org>\nSubject: Plans\n\
        Date: Mon, 01 Jan 2024 10:00:00 +0000\nMessage-ID: <open-1@example.org>\nX-Keywords: Shared\n\
        MIME-Version: 1.0\nContent-Type: text/html; charset=utf-8\n\n\
        <p>See <img src=\"cid:hidden-logo@far.example\"> and <a href=\"mid:hidden-1@far.example\">this</a>,\n\
        <a href=\"mid:hidden-1@far.example/hidden-logo@far.example\">that</a>.</p>\n",
    );
    write(
        &mail,
        "Open/sub/o2.eml",
        &format!(
            "From: Ann <ann@example.org>\nTo: Bob <bob@example.org>\n\
        Subject: Re: Plans\nDate: Wed, 03 Jan 2024 10:00:00 +0000\nMessage-ID: <open-2@example.org>\n\
        In-Reply-To: <hidden-1@far.example>\nReferences: <open-1@example.org> <hidden-1@far.example>\n\
        X-Keywords: Shared\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\n\
        Content-Type: text/plain\n\nAgreed.\n--B\nContent-Type: image/png; name=\"dot.png\"\n\
        Content-ID: <open-logo@example.org>\nContent-Disposition: attachment; filename=\"dot.png\"\n\
        Content-Transfer-Encoding: base64\n\n{png}\n--B--\n"
        ),
    );
    write(
        &mail,
        "Vaultroom/k1.eml",
        &format!(
            "From: Mallory <mallory@deep.example>\nTo: Bob <bob@example.org>\n\
        Subject: Zebracorn quarterly\nDate: Tue, 02 Jan 2024 10:00:00 +0000\nMessage-ID: <hidden-1@far.example>\n\
        In-Reply-To: <open-1@example.org>\nX-Keywords: Quokka\nMIME-Version: 1.0\n\
        Content-Type: multipart/mixed; boundary=\"K\"\n\n--K\nContent-Type: multipart/related; boundary=\"R\"\n\n\
        --R\nContent-Type: text/html\n\n<p>zebracorn numbers <img src=\"cid:hidden-logo@far.example\"></p>\n\
        --R\nContent-Type: image/png\nContent-ID: <hidden-logo@far.example>\nContent-Transfer-Encoding: base64\n\n\
        {png}\n--R--\n--K\nContent-Type: application/pdf; name=\"quokka-plans.pdf\"\n\
        Content-Disposition: attachment; filename=\"quokka-plans.pdf\"\n\n%PDF-1.4 zebracorn\n--K--\n"
        ),
    );
    write(
        &mail,
        "Vaultroom/deeper/k2.eml",
        "From: Mallory <mallory@deep.example>\nSubject: Zebracorn again\n\
        Date: Thu, 04 Jan 2024 10:00:00 +0000\nMessage-ID: <hidden-2@far.example>\nX-Keywords: Quokka\n\n\
        zebracorn zebracorn\n",
    );
    write(
        &mail,
        "loose.eml",
        "From: Mallory <mallory@deep.example>\nSubject: toplevelword\n\
        Date: Fri, 05 Jan 2024 10:00:00 +0000\nMessage-ID: <loose@top.example>\n\ntoplevelword\n",
    );
    write(
        &mail,
        "Openish/p.eml",
        "From: Mallory <mallory@deep.example>\nSubject: prefixword\n\
        Date: Sat, 06 Jan 2024 10:00:00 +0000\nMessage-ID: <openish-1@x.example>\nX-Keywords: Quokka\n\n\
        prefixword\n",
    );
    (dir, mail)
}

/// A password hashed as the users file keeps it (cheap parameters, for tests).
fn hashed(pw: &str) -> String {
    mailshelf::auth::password::hash_with(pw.as_bytes(), mailshelf::auth::password::test_params()).unwrap()
}

/// The server over `mail` with the users of [`users_file`] (written in `dir`); the PDF route
/// answers without rendering (a renderer adds nothing to what is read).
fn scoped_app(dir: &Path, mail: PathBuf) -> TestApp {
    let users = users_file(dir);
    TestApp::with_config(&[mail], |c| {
        c.accounts.users = Some(users);
        c.chromium = None;
    })
}

/// A users file: `scoped` reads `Open` only; `boss` reads everything and is an admin. Cheap hashes.
pub fn users_file(dir: &Path) -> PathBuf {
    let path = dir.join("users.toml");
    std::fs::write(
        &path,
        format!(
            "[[user]]\nname = \"scoped\"\npassword = \"{}\"\nfolders = [\"Open\"]\n\n\
             [[user]]\nname = \"boss\"\npassword = \"{}\"\nadmin = true\n",
            hashed("scoped-pw"),
            hashed("boss-pw")
        ),
    )
    .unwrap();
    path
}

pub fn basic(name: &str, password: &str) -> String {
    use base64::Engine;
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{name}:{password}")))
}

/// Every route of the router, as written in `src/web/app.rs`.
fn routes() -> Vec<String> {
    let source = include_str!("../src/web/app.rs");
    let routes: Vec<String> = source
        .split(".route(\n")
        .flat_map(|s| s.split(".route("))
        .skip(1)
        .filter_map(|s| s.trim_start().strip_prefix('"')?.split('"').next().map(str::to_string))
        .collect();
    assert!(routes.len() >= 20, "{routes:?}");
    routes
}

/// The values each path parameter is walked with.
fn values(param: &str) -> Vec<String> {
    let ids = || HIDDEN_IDS.iter().chain(OPEN_IDS).chain([&NO_SUCH_ID]).map(|s| s.to_string());
    match param {
        "mid" | "id" => ids().collect(),
        "cid" => {
            ["hidden-logo@far.example", "open-logo@example.org", "~1", "~2", "~1.2", "~0"].map(String::from).to_vec()
        }
        "*path" => ["Open", "Vaultroom", "vaultroom", "Vaultroom/deeper", "Open/../Vaultroom", "Openish", "Open/sub"]
            .map(String::from)
            .to_vec(),
        "name" => ["Quokka", "quokka", "Shared"].map(String::from).to_vec(),
        "file" => vec!["style.css".into()],
        other => panic!("a route parameter the walk does not know: {other}"),
    }
}

/// Queries each route is asked with besides none.
const QUERIES: &[&str] = &[
    "q=zebracorn",
    "q=folder%3AVaultroom",
    "q=label%3AQuokka",
    "q=message-id%3Ahidden-1%40far.example",
    "q=plans",
    "q=from%3Amallory",
    "threads=1",
    "folder=Vaultroom",
    "folder=Open",
    "label=Quokka",
    "label=Shared",
    "format=csv",
    "format=mbox&q=zebracorn",
    "remote=1",
    "view=text",
    "raw=1",
    "download=1",
];

fn fill(route: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    for segment in route.trim_start_matches('/').split('/') {
        let options: Vec<String> = match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(param) => values(param)
                .into_iter()
                .map(|v| {
                    if param == "*path" {
                        v.split('/').map(mailshelf::ids::encode_segment).collect::<Vec<_>>().join("/")
                    } else {
                        mailshelf::ids::encode_segment(&v)
                    }
                })
                .collect(),
            None => vec![segment.to_string()],
        };
        out = out.iter().flat_map(|prefix| options.iter().map(move |o| format!("{prefix}/{o}"))).collect();
    }
    out
}

fn leaks(reply: &Reply, asked: &str) -> Vec<String> {
    let asked = asked.to_lowercase();
    let mut text = String::from_utf8_lossy(&reply.body).to_lowercase();
    for (k, v) in &reply.headers {
        text.push_str(&format!("\n{k}: {}", String::from_utf8_lossy(v.as_bytes()).to_lowercase()));
    }
    SECRETS.iter().filter(|s| !asked.contains(*s) && text.contains(*s)).map(|s| s.to_string()).collect()
}

async fn as_user(app: &TestApp, method: &str, uri: &str, who: &str) -> Reply {
    let req = Request::builder().method(method).uri(uri).header("authorization", who).body(Body::empty()).unwrap();
    app.request(req).await
}

#[tokio::test]
async fn a_reader_of_some_folders_learns_nothing_of_the_others_by_any_route() {
    let (dir, mail) = archive();
    let app = scoped_app(dir.path(), mail);
    let scoped = basic("scoped", "scoped-pw");
    // The archive holds what the walk looks for.
    let boss = basic("boss", "boss-pw");
    let all = as_user(&app, "GET", "/api/messages?q=zebracorn", &boss).await;
    assert_eq!(all.status, StatusCode::OK);
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&all.body).unwrap()["total"], 2);

    let mut asked = 0;
    let mut failures = Vec::new();
    for route in routes() {
        for path in fill(&route) {
            for query in std::iter::once("").chain(QUERIES.iter().copied()) {
                let uri = if query.is_empty() { path.clone() } else { format!("{path}?{query}") };
                let mut methods = vec!["GET"];
                if route == "/api/messages" {
                    methods.push("POST");
                }
                if route == "/api/messages/{id}" {
                    methods.push("DELETE");
                }
                if route == "/message/{mid}" {
                    // The PDF of a message is asked at its own address.
                    let pdf = format!("{path}.pdf");
                    let r = as_user(&app, "GET", &pdf, &scoped).await;
                    asked += 1;
                    let found = leaks(&r, &pdf);
                    if !found.is_empty() {
                        failures.push(format!("GET {pdf}: {found:?}"));
                    }
                }
                for method in methods {
                    let r = as_user(&app, method, &uri, &scoped).await;
                    asked += 1;
                    let found = leaks(&r, &uri);
                    if !found.is_empty() {
                        failures.push(format!("{method} {uri} ({}): {found:?}", r.status));
                    }
                    if method != "GET" {
                        assert_eq!(
                            r.status,
                            StatusCode::FORBIDDEN,
                            "{method} {uri}: uploads and deletes need an admin"
                        );
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {asked} answers leak:\n{}", failures.len(), failures.join("\n"));
    assert!(asked > 1000, "{asked} requests");
    drop(dir);
}

/// A method no route takes is `405` for a reader who is no admin too, not a refusal for want of
/// rights they would not need.
#[tokio::test]
async fn methods_no_route_takes_are_not_allowed_for_every_reader() {
    let (dir, mail) = archive();
    let users = users_file(dir.path());
    let app = TestApp::with_config(&[mail], |c| c.accounts.users = Some(users));
    for (who, creds) in [("scoped", basic("scoped", "scoped-pw")), ("boss", basic("boss", "boss-pw"))] {
        for (method, uri) in
            [("PUT", "/api/folders"), ("PATCH", "/api/messages/open-1@example.org"), ("PUT", "/api/messages")]
        {
            let r = as_user(&app, method, uri, &creds).await;
            assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{who}: {method} {uri}: {}", r.text());
        }
    }
    drop(dir);
}

#[tokio::test]
async fn what_is_out_of_reach_answers_as_what_does_not_exist() {
    let (dir, mail) = archive();
    let users = users_file(dir.path());
    let app = TestApp::with_config(&[mail], |c| c.accounts.users = Some(users));
    let scoped = basic("scoped", "scoped-pw");
    let templates = [
        "/message/{}",
        "/message/{}/print",
        "/raw/{}",
        "/part/{}/~1",
        "/part/{}/hidden-logo@far.example",
        "/thumb/{}/~1",
        "/api/messages/{}",
        "/thread/{}",
    ];
    for t in templates {
        let absent = as_user(&app, "GET", &t.replace("{}", NO_SUCH_ID), &scoped).await;
        assert_eq!(absent.status, StatusCode::NOT_FOUND, "{t}");
        for id in HIDDEN_IDS {
            let hidden = as_user(&app, "GET", &t.replace("{}", id), &scoped).await;
            assert_eq!(hidden.status, absent.status, "{t} {id}");
            assert_eq!(hidden.text().replace(id, "X"), absent.text().replace(NO_SUCH_ID, "X"), "{t} {id}");
        }
        let open = as_user(&app, "GET", &t.replace("{}", OPEN_IDS[0]), &scoped).await;
        assert!(open.status != StatusCode::FORBIDDEN, "{t}: never 403");
    }
    // References from a readable message into a hidden one resolve to nothing.
    let body = as_user(&app, "GET", "/part/open-1@example.org/~1", &scoped).await;
    assert_eq!(body.status, StatusCode::OK);
    let text = body.text();
    assert!(!text.contains("/part/hidden") && !text.contains("/message/hidden"), "{text}");
    let boss = basic("boss", "boss-pw");
    let seen_by_boss = as_user(&app, "GET", "/part/open-1@example.org/~1", &boss).await.text();
    assert!(seen_by_boss.contains("/part/hidden-1@far.example/hidden-logo@far.example"), "{seen_by_boss}");
    assert!(seen_by_boss.contains("/message/hidden-1@far.example"), "{seen_by_boss}");
    // Counts and totals are of the readable messages.
    let json = |r: Reply| serde_json::from_slice::<serde_json::Value>(&r.body).unwrap();
    let list = json(as_user(&app, "GET", "/api/messages", &scoped).await);
    assert_eq!(list["total"], 2);
    let status = json(as_user(&app, "GET", "/api/status", &scoped).await);
    assert_eq!((status["messages"].as_u64(), status["total"].as_u64()), (Some(2), Some(0)));
    let stats = json(as_user(&app, "GET", "/api/stats", &scoped).await);
    assert_eq!(stats["messages"], 2);
    let folders = json(as_user(&app, "GET", "/api/folders", &scoped).await);
    assert_eq!(folders["top"], 0);
    assert_eq!(folders["folders"][0]["path"], "Open");
    assert_eq!(folders["folders"].as_array().unwrap().len(), 1);
    let labels = json(as_user(&app, "GET", "/api/labels", &scoped).await);
    assert_eq!(labels["labels"], serde_json::json!([{ "name": "Shared", "messages": 2 }]));
    let thread = json(as_user(&app, "GET", "/api/messages/open-2@example.org", &scoped).await);
    let in_thread: Vec<&str> = thread["thread"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(in_thread, ["open-1@example.org", "open-2@example.org"]);
    let threads = json(as_user(&app, "GET", "/api/messages?threads=1", &scoped).await);
    assert_eq!((threads["total"].as_u64(), threads["threads"][0]["messages"].as_u64()), (Some(1), Some(2)));
    let export = as_user(&app, "GET", "/api/export?format=csv", &scoped).await;
    assert_eq!((export.header("x-mailshelf-messages"), export.text().lines().count()), ("2", 3));
    drop(dir);
}

/// The same bytes filed in two folders are a copy in each: a reader of either folder reads, finds
/// and counts the copy filed there (one who may read both sees both); the same bytes twice in
/// one folder are one message. With a Message-ID and without; the copy the reader may not read is
/// found first (`Attic` is walked before `Open`).
#[tokio::test]
async fn the_same_message_in_two_folders_is_read_in_each() {
    let dir = tempfile::tempdir().unwrap();
    let mail = dir.path().join("mail");
    let with_id = "From: Ann <ann@example.org>\nSubject: Shared plans\nDate: Mon, 01 Jan 2024 10:00:00 +0000\n\
        Message-ID: <copied@example.org>\n\ncopiedword\n";
    let without_id = "From: Ann <ann@example.org>\nSubject: No id\nDate: Tue, 02 Jan 2024 10:00:00 +0000\n\nnoidword\n";
    for rel in ["Attic/a.eml", "Open/a.eml", "Open/a-again.eml"] {
        write(&mail, rel, with_id);
    }
    for rel in ["Attic/b.eml", "Open/b.eml"] {
        write(&mail, rel, without_id);
    }
    let users = users_file(dir.path());
    let app = TestApp::with_config(&[mail], |c| c.accounts.users = Some(users));
    let (scoped, boss) = (basic("scoped", "scoped-pw"), basic("boss", "boss-pw"));
    let json = |r: Reply| serde_json::from_slice::<serde_json::Value>(&r.body).unwrap();
    let found = |q: &str| format!("/api/messages?q={q}");
    for (who, q, total) in [
        (&scoped, "copiedword", 1),
        (&scoped, "noidword", 1),
        (&boss, "copiedword", 2),
        (&boss, "noidword", 2),
        (&boss, "folder:Attic", 2),
        (&boss, "folder:Open", 2),
    ] {
        let list = json(as_user(&app, "GET", &found(q), who).await);
        assert_eq!(list["total"], total, "{q}: {list}");
    }
    let page = as_user(&app, "GET", "/message/copied@example.org", &scoped).await;
    assert_eq!(page.status, StatusCode::OK, "the copy in the reader's own folder");
    let listed = json(as_user(&app, "GET", "/api/messages", &scoped).await);
    for m in listed["messages"].as_array().unwrap() {
        let id = m["id"].as_str().unwrap();
        let r = as_user(&app, "GET", &format!("/api/messages/{id}"), &scoped).await;
        assert_eq!(r.status, StatusCode::OK, "{id}");
    }
    let folders = json(as_user(&app, "GET", "/api/folders", &scoped).await);
    assert_eq!(folders["folders"][0]["messages"], 2, "{folders}");
}

/// An admin limited to some folders who uploads the bytes of a message held in a folder beyond
/// them gets a copy of their own under Uploads: the answer names nothing of that folder (its
/// path, its flags), and the message there stays as it was.
#[tokio::test]
async fn an_upload_of_a_message_held_out_of_reach_is_a_copy_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let mail = dir.path().join("mail");
    let secret = "From: Mallory <mallory@deep.example>\nSubject: Zebracorn memo\n\
        Date: Tue, 02 Jan 2024 10:00:00 +0000\nMessage-ID: <held@far.example>\n\nzebracorn\n";
    write(&mail, "Vaultroom/cur/1700000000.1.host:2,FS", secret);
    let users = dir.path().join("users.toml");
    std::fs::write(
        &users,
        format!(
            "[[user]]\nname = \"limited\"\npassword = \"{}\"\nadmin = true\nfolders = [\"Open\", \"Uploads\"]\n\n\
             [[user]]\nname = \"boss\"\npassword = \"{}\"\nadmin = true\n",
            hashed("limited-pw"),
            hashed("boss-pw")
        ),
    )
    .unwrap();
    let app = TestApp::with_config(&[mail], |c| c.accounts.users = Some(users));
    let (limited, boss) = (basic("limited", "limited-pw"), basic("boss", "boss-pw"));
    for round in 0..2 {
        let req = Request::post("/api/messages")
            .header("content-type", "message/rfc822")
            .header("authorization", &limited)
            .body(Body::from(secret.replace('\n', "\r\n")))
            .unwrap();
        let r = app.request(req).await;
        assert_eq!(r.status, StatusCode::CREATED, "{round}: {}", r.text());
        let answer = r.text();
        assert!(!answer.contains("Vaultroom") && !answer.contains("1700000000"), "{round}: {answer}");
        let created: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        let id = created[0]["id"].as_str().unwrap().to_string();
        let mine = as_user(&app, "GET", &format!("/api/messages/{id}"), &limited).await;
        assert_eq!(mine.status, StatusCode::OK, "{round}: the uploader reads the copy");
    }
    let all = as_user(&app, "GET", "/api/messages?q=zebracorn", &boss).await;
    let all: serde_json::Value = serde_json::from_slice(&all.body).unwrap();
    assert_eq!(all["total"], 2, "the message in its folder and one copy uploaded (twice): {all}");
}

/// Uploads are filed under Uploads: an admin whose folders leave it out would get an upload they
/// could not open, so they are told so and nothing is kept; the upload form is offered only to
/// those who may upload (not to readers who are no admins either).
#[tokio::test]
async fn only_readers_who_may_open_their_uploads_may_upload() {
    let dir = tempfile::tempdir().unwrap();
    let mail = dir.path().join("mail");
    write(&mail, "Open/o.eml", "From: Ann <ann@example.org>\nSubject: Open\nMessage-ID: <o@example.org>\n\nopen\n");
    let users = dir.path().join("users.toml");
    let user = |name: &str, admin: bool, folders: &str| {
        format!("[[user]]\nname = \"{name}\"\npassword = \"{}\"\nadmin = {admin}\n{folders}\n", hashed("pw"))
    };
    std::fs::write(
        &users,
        [
            user("narrow", true, "folders = [\"Open\"]"),
            user("limited", true, "folders = [\"Open\", \"Uploads\"]"),
            user("boss", true, ""),
            user("reader", false, ""),
        ]
        .join("\n"),
    )
    .unwrap();
    let app = TestApp::with_config(&[mail], |c| c.accounts.users = Some(users));
    let raw = "From: Bo <bo@example.org>\r\nSubject: Dropped\r\nMessage-ID: <dropped@example.org>\r\n\r\ndropped\r\n";
    let post = |who: &str, accept: &str| {
        Request::post("/api/messages")
            .header("content-type", "message/rfc822")
            .header("accept", accept)
            .header("authorization", basic(who, "pw"))
            .body(Body::from(raw))
            .unwrap()
    };
    for (who, form, status, kind) in [
        ("narrow", false, StatusCode::FORBIDDEN, Some("uploads-out-of-reach")),
        ("reader", false, StatusCode::FORBIDDEN, Some("not-admin")),
        ("limited", true, StatusCode::CREATED, None),
        ("boss", true, StatusCode::CREATED, None),
    ] {
        let page = as_user(&app, "GET", "/", &basic(who, "pw")).await;
        assert_eq!(page.text().contains("class=\"upload\""), form, "{who}: the upload form");
        let r = app.request(post(who, "application/json")).await;
        assert_eq!(r.status, status, "{who}: {}", r.text());
        if let Some(kind) = kind {
            assert!(r.text().contains(kind), "{who}: {}", r.text());
            let page = app.request(post(who, "text/html")).await;
            assert_eq!(page.status, status, "{who}: as a page");
            assert!(page.text().contains("<html"), "{who}: a page says why: {}", page.text());
        }
    }
    let dropped = as_user(&app, "GET", "/api/messages?q=dropped", &basic("boss", "pw")).await;
    let dropped: serde_json::Value = serde_json::from_slice(&dropped.body).unwrap();
    assert_eq!(dropped["total"], 1, "uploaded once, by those who may: {dropped}");
}

/// An answer as one text to compare: its status, its headers but the date (sorted), its body.
fn whole_answer(r: &Reply) -> String {
    let mut headers: Vec<String> = r
        .headers
        .iter()
        .filter(|(k, _)| k.as_str() != "date")
        .map(|(k, v)| format!("{k}: {}", String::from_utf8_lossy(v.as_bytes())))
        .collect();
    headers.sort();
    format!("{}\n{}\n{}", r.status, headers.join("\n"), r.text())
}

/// Uploads `raw` as `who`; the id the answer gives it.
async fn upload_as(app: &TestApp, who: &str, raw: &str) -> String {
    let req = Request::post("/api/messages")
        .header("content-type", "message/rfc822")
        .header("authorization", who)
        .body(Body::from(raw.replace('\n', "\r\n")))
        .unwrap();
    let r = app.request(req).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let created: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    created[0]["id"].as_str().unwrap().to_string()
}

/// The id an upload gets tells its uploader nothing of the messages they may not read: an admin
/// limited to some folders who uploads messages whose Message-ID (or whose very bytes) a folder
/// beyond them holds gets ids of the same kinds as when that folder holds nothing (never the id
/// derived from the bytes, which would tell which way a choice went). The uploader reads each
/// upload by its id and by its Message-ID.
#[tokio::test]
async fn an_uploads_id_tells_nothing_of_messages_out_of_the_uploaders_reach() {
    let held = "From: Mallory <mallory@deep.example>\nSubject: Zebracorn memo\n\
        Date: Tue, 02 Jan 2024 10:00:00 +0000\nMessage-ID: <held@far.example>\n\nzebracorn\n";
    let other_bytes = |mid: &str| {
        format!(
            "From: Ann <ann@example.org>\nSubject: Minutes\nDate: Wed, 03 Jan 2024 10:00:00 +0000\n\
             Message-ID: <{mid}>\n\nminutes of {mid}\n"
        )
    };
    let unheld = "From: Ann <ann@example.org>\nSubject: Zebracorn memo\n\
        Date: Tue, 02 Jan 2024 10:00:00 +0000\nMessage-ID: <unheld@far.example>\n\nzebracorn\n";
    // What is uploaded, in turn, and its Message-ID.
    let cases = [
        (other_bytes("held@far.example"), "held@far.example"),
        (held.to_string(), "held@far.example"),
        (other_bytes("fresh@example.org"), "fresh@example.org"),
        (unheld.to_string(), "unheld@far.example"),
    ];
    let mut runs = Vec::new();
    for holding in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let mail = dir.path().join("mail");
        if holding {
            write(&mail, "Vaultroom/held.eml", held);
        }
        write(&mail, "Open/o.eml", "From: Ann <ann@example.org>\nSubject: Open\nMessage-ID: <o@example.org>\n\nopen\n");
        let users = dir.path().join("users.toml");
        std::fs::write(
            &users,
            format!(
                "[[user]]\nname = \"limited\"\npassword = \"{}\"\nadmin = true\nfolders = [\"Open\", \"Uploads\"]\n",
                hashed("limited-pw")
            ),
        )
        .unwrap();
        let app = TestApp::with_config(&[mail], |c| c.accounts.users = Some(users));
        let limited = basic("limited", "limited-pw");
        let mut kinds = Vec::new();
        for (raw, mid) in &cases {
            let id = upload_as(&app, &limited, raw).await;
            let derived = mailshelf::ids::derived_message_id(raw.replace('\n', "\r\n").as_bytes());
            assert_ne!(id, derived, "{mid}: the id derived from the bytes says why it was chosen");
            kinds.push((id == *mid, id.ends_with("@mailshelf.invalid")));
            for asked in [id.as_str(), mid] {
                let r =
                    as_user(&app, "GET", &format!("/api/messages/{}", mailshelf::ids::encode_segment(asked)), &limited)
                        .await;
                assert_eq!(r.status, StatusCode::OK, "{mid}: asked as {asked}");
                assert!(!r.text().to_lowercase().contains("vaultroom"), "{mid}: {}", r.text());
            }
            // The same upload again is the same message.
            assert_eq!(upload_as(&app, &limited, raw).await, id, "{mid}");
        }
        runs.push(kinds);
    }
    assert_eq!(runs[0], runs[1], "ids with a message held out of reach, and without");
    // The first message of a Message-ID the uploader reads is known by it; the second by an id of
    // its own.
    assert_eq!(runs[1], [(true, false), (false, true), (true, false), (true, false)]);
}

/// The same bytes in two folders answer with the same validators: the ETag of the message's
/// source, of its parts (as shown, as sent, as text) and of a thumbnail is that of the bytes, the
/// same whether or not a copy is held in a folder the reader may not read (a copy is kept under a
/// hash of its own, which an ETag made from it would give away).
#[tokio::test]
async fn etags_are_the_same_whether_or_not_a_copy_is_held_out_of_reach() {
    let raw = format!(
        "From: Ann <ann@example.org>\nSubject: Shared plans\nDate: Mon, 01 Jan 2024 10:00:00 +0000\n\
         Message-ID: <copied@example.org>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n\
         --B\nContent-Type: text/plain\n\ncopiedword\n--B\nContent-Type: image/png; name=\"dot.png\"\n\
         Content-Disposition: attachment; filename=\"dot.png\"\nContent-Transfer-Encoding: base64\n\n{}\n--B--\n",
        png()
    );
    let urls = [
        "/raw/copied@example.org",
        "/part/copied@example.org/~1",
        "/part/copied@example.org/~1?download=1",
        "/part/copied@example.org/~1?text=1",
        "/part/copied@example.org/~1?raw=1",
        "/part/copied@example.org/~2",
        "/part/copied@example.org/~0",
        "/thumb/copied@example.org/~2",
    ];
    let mut seen: Vec<Vec<String>> = Vec::new();
    for with_copy in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mail = dir.path().join("mail");
        // `Attic` is walked first: its copy is the first, the reader's the second.
        let rels: &[&str] = if with_copy { &["Attic/a.eml", "Open/a.eml"] } else { &["Open/a.eml"] };
        for rel in rels {
            write(&mail, rel, &raw);
        }
        let users = users_file(dir.path());
        let app = TestApp::with_config(&[mail], |c| c.accounts.users = Some(users));
        let scoped = basic("scoped", "scoped-pw");
        let mut etags = Vec::new();
        for url in urls {
            let r = as_user(&app, "GET", url, &scoped).await;
            assert_eq!(r.status, StatusCode::OK, "{url}: {}", r.text());
            etags.push(r.header("etag").to_string());
        }
        seen.push(etags);
    }
    assert_eq!(seen[0], seen[1], "{urls:?}");
}

/// An enclosed message (a `message/rfc822` attachment of a message the reader may read) reads the
/// same whether or not its very bytes are also filed as a message of their own in a folder the
/// reader may not read, found before the message enclosing it (`Attic`) or after it (`Vault`): its
/// page, source, parts, thumbnail, print, API forms and conversation answer as they do when no
/// such copy exists (status, headers and body), and nothing of the copy's folder or flags shows.
/// The enclosing message, the list, the folders, the counts and the searches answer the same too.
#[tokio::test]
async fn an_enclosed_message_reads_the_same_whether_or_not_a_copy_is_filed_out_of_reach() {
    let inner = format!(
        "From: Carol <carol@example.org>\nTo: Ann <ann@example.org>\nSubject: Forwarded plans\n\
         Date: Tue, 02 Jan 2024 10:00:00 +0000\nMessage-ID: <enclosed@example.org>\nX-Keywords: Inner\n\
         MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"I\"\n\n--I\nContent-Type: text/html\n\n\
         <p>enclosedword <img src=\"cid:inner-dot@example.org\"></p>\n--I\n\
         Content-Type: image/png; name=\"dot.png\"\nContent-ID: <inner-dot@example.org>\n\
         Content-Disposition: attachment; filename=\"dot.png\"\nContent-Transfer-Encoding: base64\n\n{}\n--I--\n",
        png()
    );
    let outer = format!(
        "From: Ann <ann@example.org>\nTo: Bob <bob@example.org>\nSubject: Fwd: plans\n\
         Date: Wed, 03 Jan 2024 10:00:00 +0000\nMessage-ID: <outer@example.org>\nMIME-Version: 1.0\n\
         Content-Type: multipart/mixed; boundary=\"O\"\n\n--O\nContent-Type: text/plain\n\nouterword, see below\n\
         --O\nContent-Type: message/rfc822\n\n{inner}\n--O--\n"
    );
    let urls = [
        "/message/enclosed@example.org",
        "/message/enclosed@example.org?view=text",
        "/message/enclosed@example.org/print",
        "/message/enclosed@example.org.pdf",
        "/raw/enclosed@example.org",
        "/raw/enclosed@example.org?download=1",
        "/part/enclosed@example.org/~0",
        "/part/enclosed@example.org/~1",
        "/part/enclosed@example.org/inner-dot@example.org",
        "/part/enclosed@example.org/~2?download=1",
        "/thumb/enclosed@example.org/~2",
        "/api/messages/enclosed@example.org",
        "/thread/enclosed@example.org",
        "/message/outer@example.org",
        "/message/outer@example.org/print",
        "/api/messages/outer@example.org",
        "/part/outer@example.org/~2",
        "/thread/outer@example.org",
        "/api/messages",
        "/api/messages?q=enclosedword",
        "/api/messages?q=outerword",
        "/api/messages?q=message-id%3Aenclosed%40example.org",
        "/api/messages?q=label%3AInner",
        "/api/messages?threads=1",
        "/api/messages?folder=Attic",
        "/api/folders",
        "/api/labels",
        "/api/stats",
        "/api/export?format=csv",
        "/",
    ];
    let mut seen: Vec<(&str, Vec<String>)> = Vec::new();
    for hidden in [None, Some("Attic/cur/1700000000.1.host:2,FS"), Some("Vault/cur/1700000000.2.host:2,FS")] {
        let dir = tempfile::tempdir().unwrap();
        let mail = dir.path().join("mail");
        write(&mail, "Open/outer.eml", &outer);
        if let Some(rel) = hidden {
            write(&mail, rel, &inner);
        }
        let app = scoped_app(dir.path(), mail);
        let (scoped, boss) = (basic("scoped", "scoped-pw"), basic("boss", "boss-pw"));
        if let Some(rel) = hidden {
            // The copy is filed on its own, with its folder and flags, for whoever may read it.
            let folder = rel.split('/').next().unwrap();
            let r = as_user(&app, "GET", "/api/messages/enclosed@example.org", &boss).await;
            assert_eq!(r.status, StatusCode::OK, "{rel}: {}", r.text());
            assert!(r.text().contains(folder), "{rel}: {}", r.text());
            let listed = as_user(&app, "GET", &format!("/api/messages?folder={folder}"), &boss).await;
            assert!(listed.text().contains("enclosed@example.org"), "{rel}: {}", listed.text());
        }
        let mut answers = Vec::new();
        for url in urls {
            let answer = whole_answer(&as_user(&app, "GET", url, &scoped).await);
            for word in ["Attic", "Vault", "1700000000"] {
                assert!(!answer.contains(word), "{hidden:?}: {word} shows in {url}: {answer}");
            }
            answers.push(format!("{url}\n{answer}"));
        }
        seen.push((hidden.unwrap_or("no copy"), answers));
    }
    let (_, without) = &seen[0];
    assert!(without[0].starts_with("/message/enclosed@example.org\n200 OK"), "{}", without[0]);
    for (hidden, answers) in &seen[1..] {
        for (want, got) in without.iter().zip(answers) {
            assert_eq!(got, want, "with a copy in {hidden}");
        }
    }
}

/// A message sharing its Message-ID with another one out of the reader's reach is known to them
/// by its Message-ID, as it would be were the other not there: found first (`Attic`), the other
/// takes the Message-ID as its id and this one gets an id derived from its bytes, which would tell
/// the reader that a message they may not read carries the same Message-ID. Its page, parts,
/// thread, the list, the searches, the conversations and the pages that link to it (a reply, a
/// `mid:` link, a `cid:` picture taken from it) answer the same with such a message found before
/// it, after it (`Vault`), or nowhere; its copy filed in the reader's folder too.
#[tokio::test]
async fn a_message_sharing_its_message_id_with_one_out_of_reach_reads_the_same() {
    let mine = format!(
        "From: Ann <ann@example.org>\nTo: Bob <bob@example.org>\nSubject: Shared plans\n\
         Date: Tue, 02 Jan 2024 10:00:00 +0000\nMessage-ID: <shared@example.org>\nMIME-Version: 1.0\n\
         Content-Type: multipart/related; boundary=\"R\"\n\n--R\nContent-Type: text/html\n\n\
         <p>sharedword <img src=\"cid:shared-dot@example.org\"></p>\n--R\nContent-Type: image/png\n\
         Content-ID: <shared-dot@example.org>\nContent-Transfer-Encoding: base64\n\n{}\n--R--\n",
        png()
    );
    let reply = "From: Bob <bob@example.org>\nTo: Ann <ann@example.org>\nSubject: Re: Shared plans\n\
        Date: Wed, 03 Jan 2024 10:00:00 +0000\nMessage-ID: <reply@example.org>\nIn-Reply-To: <shared@example.org>\n\
        MIME-Version: 1.0\nContent-Type: text/html\n\n<p>replyword <a href=\"mid:shared@example.org\">the plans</a>\
        <img src=\"cid:shared-dot@example.org\"></p>\n";
    let other = "From: Mallory <mallory@deep.example>\nSubject: Zebracorn memo\n\
        Date: Mon, 01 Jan 2024 10:00:00 +0000\nMessage-ID: <shared@example.org>\n\nzebracorn\n";
    let urls = [
        "/message/shared@example.org",
        "/message/shared@example.org?view=text",
        "/message/shared@example.org/print",
        "/raw/shared@example.org",
        "/part/shared@example.org/~1",
        "/part/shared@example.org/shared-dot@example.org",
        "/thumb/shared@example.org/~2",
        "/api/messages/shared@example.org",
        "/thread/shared@example.org",
        "/message/reply@example.org",
        "/part/reply@example.org/~1",
        "/api/messages/reply@example.org",
        "/thread/reply@example.org",
        "/api/messages",
        "/api/messages?q=sharedword",
        "/api/messages?q=replyword",
        "/api/messages?q=message-id%3Ashared%40example.org",
        "/api/messages?threads=1",
        "/api/export?format=csv",
        "/?q=sharedword",
        "/?threads=1",
        "/",
    ];
    let mut seen: Vec<(String, Vec<String>)> = Vec::new();
    for (hidden, copy) in [(None, false), (Some("Attic"), false), (Some("Vault"), false), (Some("Attic"), true)] {
        let dir = tempfile::tempdir().unwrap();
        let mail = dir.path().join("mail");
        write(&mail, "Open/mine.eml", &mine);
        write(&mail, "Open/reply.eml", reply);
        if let Some(folder) = hidden {
            write(&mail, &format!("{folder}/other.eml"), other);
            if copy {
                // The reader's message filed out of reach as well, found first.
                write(&mail, &format!("{folder}/mine.eml"), &mine);
            }
        }
        let app = scoped_app(dir.path(), mail);
        let (scoped, boss) = (basic("scoped", "scoped-pw"), basic("boss", "boss-pw"));
        if hidden == Some("Attic") && !copy {
            // The message found first is the one out of reach: everyone else knows it by the id.
            let r = as_user(&app, "GET", "/api/messages/shared@example.org", &boss).await;
            assert!(r.text().contains("Zebracorn"), "{}", r.text());
        }
        let mut answers = Vec::new();
        for url in urls {
            let answer = whole_answer(&as_user(&app, "GET", url, &scoped).await);
            for word in ["Attic", "Vault", "mailshelf.invalid", "Zebracorn"] {
                assert!(!answer.contains(word), "{hidden:?}: {word} shows in {url}: {answer}");
            }
            answers.push(format!("{url}\n{answer}"));
        }
        seen.push((format!("{hidden:?}, copy {copy}"), answers));
    }
    let (_, without) = &seen[0];
    assert!(without[0].starts_with("/message/shared@example.org\n200 OK"), "{}", without[0]);
    assert!(without[10].contains("/part/shared@example.org/shared-dot@example.org"), "{}", without[10]);
    for (hidden, answers) in &seen[1..] {
        for (want, got) in without.iter().zip(answers) {
            assert_eq!(got, want, "with another message of the same Message-ID in {hidden}");
        }
    }
}

/// A message without a Message-ID filed in two folders is two messages: the copy found second is
/// keyed by its bytes and its folder. A reader who may read only that copy knows it by the id
/// derived from its bytes alone, as they would were the other copy not there: its page, parts,
/// source, thread, the list, searches and exports answer the same with the other copy found
/// before it (`Attic`), after it (`Vault`), or nowhere.
#[tokio::test]
async fn a_copy_without_a_message_id_reads_the_same_whether_or_not_one_is_held_out_of_reach() {
    let mine = format!(
        "From: Ann <ann@example.org>\nTo: Bob <bob@example.org>\nSubject: Unnamed plans\n\
         Date: Tue, 02 Jan 2024 10:00:00 +0000\nMIME-Version: 1.0\n\
         Content-Type: multipart/related; boundary=\"R\"\n\n--R\nContent-Type: text/html\n\n\
         <p>unnamedword <img src=\"cid:unnamed-dot@example.org\"></p>\n--R\nContent-Type: image/png\n\
         Content-ID: <unnamed-dot@example.org>\nContent-Transfer-Encoding: base64\n\n{}\n--R--\n",
        png()
    );
    let id = mailshelf::ids::derived_message_id(mine.replace('\n', "\r\n").as_bytes());
    let urls: Vec<String> = [
        "/message/{id}",
        "/message/{id}?view=text",
        "/message/{id}/print",
        "/raw/{id}",
        "/part/{id}/~1",
        "/part/{id}/unnamed-dot@example.org",
        "/thumb/{id}/~2",
        "/api/messages/{id}",
        "/thread/{id}",
        "/api/messages",
        "/api/messages?q=unnamedword",
        "/api/messages?threads=1",
        "/api/export?format=csv",
        "/?q=unnamedword",
        "/",
    ]
    .iter()
    .map(|u| u.replace("{id}", &id))
    .collect();
    let mut seen: Vec<(String, Vec<String>)> = Vec::new();
    for hidden in [None, Some("Attic"), Some("Vault")] {
        let dir = tempfile::tempdir().unwrap();
        let mail = dir.path().join("mail");
        write(&mail, "Open/mine.eml", &mine);
        if let Some(folder) = hidden {
            write(&mail, &format!("{folder}/mine.eml"), &mine);
        }
        let app = scoped_app(dir.path(), mail);
        let (scoped, boss) = (basic("scoped", "scoped-pw"), basic("boss", "boss-pw"));
        let mut ids: Vec<String> = Vec::new();
        let all = as_user(&app, "GET", "/api/messages", &boss).await;
        let all: serde_json::Value = serde_json::from_slice(&all.body).unwrap();
        for m in all["messages"].as_array().unwrap() {
            ids.push(m["id"].as_str().unwrap().to_string());
        }
        assert_eq!(ids.len(), if hidden.is_some() { 2 } else { 1 }, "{ids:?}");
        // The copy's own key, which whoever may read both copies knows it by, never shows.
        let own = ids.iter().find(|k| **k != id).cloned();
        let mut answers = Vec::new();
        for url in &urls {
            let answer = whole_answer(&as_user(&app, "GET", url, &scoped).await);
            for word in ["Attic", "Vault"].into_iter().chain(own.as_deref()) {
                assert!(!answer.contains(word), "{hidden:?}: {word} shows in {url}: {answer}");
            }
            answers.push(format!("{url}\n{answer}"));
        }
        seen.push((format!("{hidden:?}"), answers));
    }
    let (_, without) = &seen[0];
    assert!(without[0].starts_with(&format!("/message/{id}\n200 OK")), "{}", without[0]);
    for (hidden, answers) in &seen[1..] {
        for (want, got) in without.iter().zip(answers) {
            assert_eq!(got, want, "with a copy in {hidden}");
        }
    }
}
