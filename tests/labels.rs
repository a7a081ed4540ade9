//! Gmail labels as Gmail Takeout and Gmail backups write them: `X-Gmail-Labels` with RFC 2047
//! encoded-words (a whole list in one word, a label split between folded words, commas and quotes
//! inside), quoted labels, nested labels (`Parent/Child`, names with parentheses, `@` and commas).
//! Every label is listed whole with the number of messages carrying it, nested labels are a tree,
//! and each label of the tree counts what `label:` and its page find, on either search engine.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::TestApp;

/// `value` as RFC 2047 encoded-words, made by Python's `email.header` (an encoder other than
/// Gmail's and ours): `b` or `q` words, folded at `width` characters.
fn python_encoded(value: &str, encoding: &str, width: usize) -> String {
    let script = "import sys\nfrom email.header import Header\nfrom email.charset import Charset, BASE64, QP\n\
                  c = Charset('utf-8'); c.header_encoding = BASE64 if sys.argv[2] == 'b' else QP\n\
                  print(Header(sys.argv[1], c, header_name='X-Gmail-Labels').encode(maxlinelen=int(sys.argv[3])))";
    let out = Command::new("python3")
        .args(["-c", script, value, encoding, &width.to_string()])
        .output()
        .expect("these tests need python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let encoded = String::from_utf8(out.stdout).expect("ascii").trim_end().to_string();
    assert!(encoded.contains("\n "), "folded across lines: {encoded}");
    encoded
}

fn message(n: usize, labels: &str) -> String {
    format!(
        "From: Sender {n} <s{n}@example.org>\nSubject: labelled {n}\nDate: Mon, {} Jan 2024 10:00:00 +0000\n\
         Message-ID: <labelled-{n}@example.org>\nX-GM-THRID: 17{n}\nX-Gmail-Labels: {labels}\n\nbody {n}\n",
        n + 1
    )
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

/// Every node of a label tree, depth first.
fn nodes(tree: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    let mut stack: Vec<&Value> = tree.as_array().expect("tree").iter().rev().collect();
    while let Some(n) = stack.pop() {
        out.push(n.clone());
        stack.extend(n["labels"].as_array().expect("children").iter().rev());
    }
    out
}

fn brief(n: &Value) -> (String, String, u64, u64) {
    (
        n["name"].as_str().expect("name").to_string(),
        n["label"].as_str().expect("label").to_string(),
        n["messages"].as_u64().expect("messages"),
        n["total"].as_u64().expect("total"),
    )
}

#[tokio::test]
async fn gmail_labels_are_read_whole_and_nested_labels_are_a_tree() {
    if !crate::common::needs::program(
        "gmail_labels_are_read_whole_and_nested_labels_are_a_tree",
        "python3",
        "apt-get install python3",
    ) {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let python_b = python_encoded(r#"Inbox,Clients/Acme (2019)/Invoices,"Lists/dev@example.org, old",Škola"#, "b", 60);
    let python_q = python_encoded("Otevřené,Archived,Důležité/Účty ☯", "q", 50);
    let mails = [
        // As Gmail writes a list with a label that is not ASCII: the whole of it in one word.
        message(0, "=?UTF-8?Q?Archived,Category_Updates,Otev=C5=99en=C3=A9,=E2=98=AF,takeout?="),
        message(1, &python_b),
        message(2, "Archived,Clients/Acme (2019)"),
        message(3, "\"Clients/Beta\",Clients/Acme (2019)/Invoices"),
        message(4, &python_q),
        // Gmail folds a long list between words, splitting a label (and a quoted one) across them.
        message(5, "=?UTF-8?Q?Archived,\"Clients/Acme_(2019)/Invo?=\n =?UTF-8?Q?ices\",Clients/Beta?="),
    ];
    let mbox: String =
        mails.iter().map(|m| format!("From 1750000000000000000@xxx Mon Jan 01 10:00:00 +0000 2024\n{m}\n")).collect();
    write(&dir.path().join("Takeout/Mail/All mail Including Spam and Trash.mbox"), mbox);
    // A Gmail backup tool's folder of .eml files, one message each, with the same header.
    let backup = message(6, &python_encoded("Archived,Clients/Beta,Lists/dev@example.org", "b", 40));
    write(&dir.path().join("gmail-backup/2024/labelled-6.eml"), backup);
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    assert_eq!(app.archive.index().listed_count(), 7);

    let labels = app.json("/api/labels").await;
    let mut flat: Vec<(String, u64)> = labels["labels"]
        .as_array()
        .expect("labels")
        .iter()
        .map(|l| (l["name"].as_str().expect("name").to_string(), l["messages"].as_u64().expect("n")))
        .collect();
    flat.sort();
    let want: Vec<(String, u64)> = [
        ("Archived", 5),
        ("Category Updates", 1),
        ("Clients/Acme (2019)", 1),
        ("Clients/Acme (2019)/Invoices", 3),
        ("Clients/Beta", 3),
        ("Důležité/Účty ☯", 1),
        ("Inbox", 1),
        ("Lists/dev@example.org", 1),
        ("Lists/dev@example.org, old", 1),
        ("Otevřené", 2),
        ("takeout", 1),
        ("Škola", 1),
        ("☯", 1),
    ]
    .iter()
    .map(|(n, c)| (n.to_string(), *c))
    .collect();
    assert_eq!(flat, want, "{labels:#}");
    assert!(!labels.to_string().contains("=?") && !labels.to_string().contains("?="), "no fragments: {labels}");

    // The tree: Clients holds three messages (one carries two labels below it), though no message
    // carries Clients itself.
    let tree: Vec<_> = nodes(&labels["tree"]).iter().map(brief).collect();
    let node =
        |label: &str| tree.iter().find(|n| n.1 == label).cloned().unwrap_or_else(|| panic!("{label}: {tree:#?}"));
    assert_eq!(node("Clients"), ("Clients".into(), "Clients".into(), 0, 5));
    assert_eq!(node("Clients/Acme (2019)"), ("Acme (2019)".into(), "Clients/Acme (2019)".into(), 1, 4));
    assert_eq!(node("Clients/Acme (2019)/Invoices").3, 3);
    assert_eq!(node("Lists"), ("Lists".into(), "Lists".into(), 0, 2));
    assert_eq!(node("Lists/dev@example.org, old").0, "dev@example.org, old");
    assert_eq!(node("Důležité"), ("Důležité".into(), "Důležité".into(), 0, 1));
    let top: Vec<&str> =
        labels["tree"].as_array().expect("tree").iter().map(|n| n["name"].as_str().expect("name")).collect();
    assert_eq!(
        top,
        ["Archived", "Category Updates", "Clients", "Důležité", "Inbox", "Lists", "Otevřené", "takeout", "Škola", "☯"]
    );

    // Each label of the tree finds, by `label:`, by `label=` and on its page, what it counts.
    for (_, label, _, total) in &tree {
        let q = format!("label:\"{label}\"");
        let found = app.json(&format!("/api/messages?limit=100&q={}", urlencoding(&q))).await;
        assert_eq!(found["total"].as_u64(), Some(*total), "{q}");
        let scoped = app.json(&format!("/api/messages?limit=100&label={}", urlencoding(label))).await;
        assert_eq!(scoped["total"].as_u64(), Some(*total), "label={label}");
        let page = app.get(&format!("/label/{}", urlencoding(label))).await.text();
        assert_eq!(page.matches("href=\"/message/labelled-").count() as u64, *total, "/label/{label}");
    }
    assert_eq!(app.json("/api/messages?q=label:clients").await["total"], 5, "case does not matter");
    assert_eq!(app.json("/api/messages?q=label:otev%C5%99en%C3%A9").await["total"], 2);

    // The sidebar shows the tree: each label under the one it is in, counting what it lists.
    let list = app.get("/").await.text();
    for (depth, label, name, count) in [
        (0, "Clients", "Clients", 5),
        (1, "Clients/Acme (2019)", "Acme (2019)", 4),
        (2, "Clients/Acme (2019)/Invoices", "Invoices", 3),
        (1, "Lists/dev@example.org, old", "dev@example.org, old", 1),
    ] {
        let row = format!(
            "<li class=\"depth-{depth}\" title=\"{}\"><a href=\"/label/{}\">{}</a> <span class=\"count\">{count}</span></li>",
            html(label),
            urlencoding(label),
            html(name)
        );
        assert!(list.contains(&row), "{row} in\n{list}");
    }
    assert!(!list.contains("=?UTF-8") && !list.contains("?=<"), "no fragments in the sidebar");
}

fn urlencoding(s: &str) -> String {
    mailshelf::ids::encode_segment(s)
}

fn html(s: &str) -> String {
    s.replace('&', "&amp;").replace('"', "&#34;").replace('<', "&lt;").replace('>', "&gt;")
}

/// mu's test messages label themselves in `X-Label` (as mutt writes it), `X-Keywords` and
/// `Keywords`: each is a label.
#[tokio::test]
async fn labels_of_mu_test_messages() {
    if !crate::common::needs::corpus("labels_of_mu_test_messages") {
        return;
    }
    let app = crate::common::TestApp::new(&[crate::common::corpus_dir().join("mu/testdata/testdir2")]);
    let labels = app.json("/api/labels").await;
    let names: Vec<&str> =
        labels["labels"].as_array().expect("labels").iter().filter_map(|l| l["name"].as_str()).collect();
    for want in ["Paradise losT", "milton", "john", "\\backslash", "@NextActions operation:mindcrime Queensrÿche"] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
}
