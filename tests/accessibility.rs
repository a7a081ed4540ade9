//! axe-core's WCAG 2.1 A and AA rules over every kind of page mailshelf serves, in Chromium, on
//! a desktop in the light and the dark theme and on a phone: no violation at all. A message's body
//! is the sender's document (framed, or inlined in the print view) and is left out; everything
//! of mailshelf's around it is checked.

use std::path::PathBuf;

use serde_json::json;

use crate::browser::serve;
use crate::common::cdp::Browser;
use crate::common::{message_with_pictures, needs, repo_path, TestApp};

/// Where axe-core's `axe.min.js` is: `MAILSHELF_AXE`, else where `scripts/test` installs it
/// (`npm install axe-core` in `~/.cache/mailshelf-tests`).
fn axe_path() -> PathBuf {
    std::env::var_os("MAILSHELF_AXE").map(PathBuf::from).unwrap_or_else(|| {
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache"));
        cache.join("mailshelf-tests/node_modules/axe-core/axe.min.js")
    })
}

/// The violations of WCAG 2.0 and 2.1 A/AA rules on the page loaded, outside `exclude`, each as
/// `rule (impact): element: what fails`. Frames are not entered (a body's frame is the sender's).
fn violations(b: &mut Browser, axe: &str, exclude: &[&str]) -> Vec<String> {
    if b.eval("typeof window.axe") != "object" {
        b.eval(&format!("{axe};\n0"));
    }
    let context = json!({ "exclude": exclude.iter().map(|s| json!([s])).collect::<Vec<_>>() });
    let run = format!(
        "axe.run({context}, {{ runOnly: {{ type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }}, \
         iframes: false, resultTypes: ['violations'] }}).then(r => r.violations.flatMap(v => v.nodes.map(n => \
         v.id + ' (' + v.impact + '): ' + n.target.join(' ') + ': ' + n.failureSummary.replace(/\\s+/g, ' '))))"
    );
    let found = b.eval_async(&run);
    found.as_array().expect("violations").iter().map(|v| v.as_str().unwrap_or("").to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_kind_passes_axe_in_every_layout() {
    let test = "every_page_kind_passes_axe_in_every_layout";
    let how = "npm install axe-core@4.14.1 in ~/.cache/mailshelf-tests, or set MAILSHELF_AXE";
    if !(needs::chromium(test) && needs::present(test, "axe-core", axe_path().is_file(), how)) {
        return;
    }
    let axe = std::fs::read_to_string(axe_path()).expect("axe-core");
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("pictures.eml"), message_with_pictures()).expect("write");
    std::fs::write(
        dir.path().join("labelled.eml"),
        "From: Ana <ana@example.com>\r\nTo: you@example.com\r\nSubject: Filed under a nested label\r\n\
         Message-ID: <labelled@example.com>\r\nDate: Wed, 04 Nov 2026 08:00:00 +0000\r\n\
         X-Gmail-Labels: Inbox,Clients/Acme (2019)/Invoices,=?UTF-8?Q?=C5=A0kola?=\r\n\r\nFiled.\r\n",
    )
    .expect("write");
    // A body with a remote image (the blocked notice and its link), two messages sharing a
    // Message-ID (the notice naming the other), parts stored elsewhere (their own section).
    std::fs::write(
        dir.path().join("remote.eml"),
        "From: Ana <ana@example.com>\r\nSubject: A picture from the web\r\nMessage-ID: <remote@example.com>\r\n\
         Date: Wed, 04 Nov 2026 09:00:00 +0000\r\nContent-Type: text/html; charset=utf-8\r\n\r\n\
         <p>Look: <img src=\"https://example.com/view.png\" alt=\"the view\"></p>\r\n",
    )
    .expect("write");
    for (file, body) in [("twin-1.eml", "One."), ("twin-2.eml", "Two.")] {
        let twin =
            format!("From: Bo <bo@example.com>\r\nSubject: Twins\r\nMessage-ID: <twin@example.com>\r\n\r\n{body}\r\n");
        std::fs::write(dir.path().join(file), twin).expect("write");
    }
    std::fs::copy(repo_path("tests/fixtures/external/rfc2046.eml"), dir.path().join("external.eml")).expect("copy");
    let app = TestApp::new(&[repo_path("samples"), dir.path().to_path_buf()]);
    let (base, _) = serve(app.router.clone()).await;
    // An archive with nothing in it yet: the pages as a new user first sees them.
    let nothing = tempfile::tempdir().expect("dir");
    let empty = TestApp::new(&[nothing.path().to_path_buf()]);
    let (empty_base, _) = serve(empty.router.clone()).await;
    // Every kind of page: where it is, what of it is the sender's, and what shows it is that page.
    let body: &[&str] = &[".mailshelf-body"];
    let pages: &[(&str, &str, &[&str], &str)] = &[
        ("list", "/", &[], "table.list tbody tr"),
        ("list with a row selected (j)", "/", &[], "table.list tr.selected"),
        ("folder", "/folder/mbox/list-archive", &[], "nav.sidebar strong[aria-current]"),
        ("label", "/label/Clients%2FAcme%20(2019)", &[], "nav.sidebar li.depth-2"),
        ("search results", "/?q=Maison", &[], ".snippet"),
        ("search without results", "/?q=nothing-matches-this", &[], "p.empty"),
        ("search that cannot run", "/?q=%22unclosed", &[], "p.notice"),
        ("conversation list", "/?threads=1", &[], "table.conversations"),
        ("conversation", "/thread/20261005094512.GA1187@alice.example.org", &[], ".conversation article"),
        ("overview", "/overview", &[], "svg.chart a"),
        ("message with an HTML body", "/message/newsletter-2026-10@example.com", &[], "iframe.body"),
        ("message with a text body", "/message/welcome@example.com", &[], "pre.text"),
        ("message with attachments and thumbnails", "/message/pictures@example.com", &[], ".attachments .thumb img"),
        ("message with an enclosed message", "/message/fwd-5b2c9a@example.net", &[], "section.nested"),
        ("message with remote content blocked", "/message/remote@example.com", &[], ".notice.remote a"),
        ("message with remote content loaded", "/message/remote@example.com?remote=1", &[], "p.notice a"),
        ("message sharing its Message-ID", "/message/twin@example.com", &[], "p.notice a"),
        ("message with parts stored elsewhere", "/message/rfc2046@external.test", &[], ".externals li"),
        ("print view of an HTML body", "/message/newsletter-2026-10@example.com/print", body, ".mailshelf-body img"),
        ("print view of a text body", "/message/welcome@example.com/print", body, "pre.mailshelf-text"),
        ("unknown message", "/message/nobody@example.com", &[], "section.error"),
        ("unknown page", "/no/such/page", &[], "section.error"),
        ("malformed address", "/message/%FF", &[], "section.error"),
        ("empty archive: list", "empty:/", &[], "p.empty"),
        ("empty archive: overview", "empty:/overview", &[], "main"),
    ];
    let mut b = Browser::launch();
    // axe is a script of the test's: the print view's policy (a sandbox without scripts, under
    // which its timers never fire) would stop it, and has no bearing on what it checks.
    b.call("Page.setBypassCSP", json!({"enabled": true}));
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for (layout, width, height, mobile, scheme) in [
        ("desktop", 1280, 900, false, "light"),
        ("dark", 1280, 900, false, "dark"),
        ("phone", 390, 844, true, "light"),
        ("phone, dark", 390, 844, true, "dark"),
    ] {
        b.emulate(width, height, mobile, scheme);
        for (kind, path, exclude, shows) in pages {
            match path.strip_prefix("empty:") {
                Some(path) => b.goto(&format!("{empty_base}{path}")),
                None => b.goto(&format!("{base}{path}")),
            }
            if kind.ends_with("(j)") {
                b.press("j");
            }
            let selector = serde_json::to_string(shows).expect("json");
            assert_eq!(b.eval(&format!("!!document.querySelector({selector})")), true, "{kind} ({layout}): no {shows}");
            let found = violations(&mut b, &axe, exclude);
            report.push(format!("{kind} ({layout}): {} violations", found.len()));
            failures.extend(found.into_iter().map(|v| format!("{kind} ({layout}): {v}")));
        }
    }
    println!("axe-core, WCAG 2.1 A/AA:\n{}", report.join("\n"));
    assert!(failures.is_empty(), "{} violations:\n{}", failures.len(), failures.join("\n"));
}
