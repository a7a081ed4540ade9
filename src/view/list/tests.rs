use super::*;
use crate::view::fixtures::{mail, Fixture};

/// `n` messages `m0`… `m{n-1}`, one a minute (so `m{n-1}` is the newest), subjects `Subject i`.
fn many(n: u32) -> Vec<(String, String)> {
    (0..n)
        .map(|i| {
            let date = format!("Mon, 1 Jan 2024 {:02}:{:02}:00 +0000", i / 60, i % 60);
            (format!("m{i}.eml"), format!("Subject: Subject {i}\nDate: {date}\nMessage-ID: <m{i}@x>\n\nhello\n"))
        })
        .collect()
}

fn files(v: &[(String, String)]) -> Vec<(&str, String)> {
    v.iter().map(|(p, c)| (p.as_str(), c.clone())).collect()
}

#[test]
fn rows_show_subject_sender_date_size_flags_and_labels() {
    let fx = Fixture::of(&[
        ("cur/1.host:2,FS", mail("flagged@x", "Flagged", 3, "X-Keywords: Work, Later\n", "hello")),
        ("none.eml", mail("nosubject@x", "", 2, "", "hello")),
        (
            "files.eml",
            mail(
                "files@x",
                "Files",
                1,
                "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n",
                "--b\nContent-Type: text/plain\n\nsee\n--b\nContent-Type: application/pdf\n\
                 Content-Disposition: attachment; filename=a.pdf\n\n%PDF\n--b--",
            ),
        ),
    ]);
    let list = ListView::build(&fx.view, &Scope::All, "", 1, false).unwrap();
    let shown: Vec<_> = list
        .rows
        .iter()
        .map(|r| {
            let labels: Vec<_> = r.labels.iter().map(|l| (l.name.as_str(), l.url.as_str())).collect();
            (r.url.as_str(), r.subject.as_str(), r.date.as_str(), r.attachment, r.flags.as_str(), labels)
        })
        .collect();
    assert_eq!(
        shown,
        [
            (
                "/message/flagged@x",
                "Flagged",
                "2024-01-03 10:00",
                false,
                "FS",
                vec![("Work", "/label/Work"), ("Later", "/label/Later")]
            ),
            ("/message/nosubject@x", "(no subject)", "2024-01-02 10:00", false, "", vec![]),
            ("/message/files@x", "Files", "2024-01-01 10:00", true, "", vec![]),
        ]
    );
    assert!(list.rows.iter().all(|r| r.from == "Ann <ann@example.org>" && r.size.ends_with(" B")));
    assert_eq!((list.total, list.first, list.last, list.heading), (3, 1, 3, None));
}

#[test]
fn pages_of_a_long_list_link_to_each_other() {
    let fx = Fixture::of(&files(&many(120)));
    let cases = [
        // scope, query, threads, page: first, last, total, prev, next
        (Scope::All, "", false, 1, (1, 50, 120), None, Some("/?page=2")),
        (Scope::All, "", false, 0, (1, 50, 120), None, Some("/?page=2")),
        (Scope::All, "", false, 3, (101, 120, 120), Some("/?page=2"), None),
        (Scope::All, "", false, 9, (0, 400, 120), Some("/?page=8"), None),
        (Scope::All, "hello", false, 2, (51, 100, 120), Some("/?q=hello&page=1"), Some("/?q=hello&page=3")),
        (Scope::All, "hello", true, 2, (51, 100, 120), Some("/?q=hello&page=1"), Some("/?q=hello&page=3")),
    ];
    for (scope, query, threads, page, (first, last, total), prev, next) in cases {
        let list = ListView::build(&fx.view, &scope, query, page, threads).unwrap();
        let at = format!("{scope:?} {query:?} {threads} page {page}");
        assert_eq!((list.first, list.last, list.total), (first, last, total), "{at}");
        assert_eq!((list.prev.as_deref(), list.next.as_deref()), (prev, next), "{at}");
        assert!(!list.threads && list.conversations.is_empty(), "{at}: a search is never grouped");
    }
    let newest = ListView::build(&fx.view, &Scope::All, "", 1, false).unwrap();
    assert_eq!(newest.rows[0].subject, "Subject 119", "newest first, then in the order found");
}

#[test]
fn conversations_are_one_row_each() {
    let fx = Fixture::of(&[
        ("a.eml", mail("a@x", "Plans", 1, "", "first")),
        ("b.eml", mail("b@x", "Re: Plans", 2, "In-Reply-To: <a@x>\n", "second")),
        ("c.eml", mail("c@x", "Other", 3, "", "alone")),
    ]);
    let list = ListView::build(&fx.view, &Scope::All, "", 1, true).unwrap();
    assert!(list.threads && list.rows.is_empty());
    let rows: Vec<_> = list.conversations.iter().map(|c| (c.url.as_str(), c.subject.as_str(), c.count)).collect();
    assert_eq!(rows, [("/thread/c@x", "Other", 1), ("/thread/a@x", "Plans", 2)]);
    assert_eq!(list.conversations[1].date, "2024-01-02 10:00", "the newest message's date");
    assert_eq!((list.total, list.next), (2, None));
}

#[test]
fn a_search_that_cannot_run_says_why() {
    let fx = Fixture::of(&files(&many(3)));
    for query in ["\"open", "before:yesterday", "(a"] {
        let list = ListView::build(&fx.view, &Scope::All, query, 1, false).unwrap();
        assert!(list.query_error.is_some(), "{query}");
        assert_eq!((list.rows.len(), list.total, list.first, list.last), (0, 0, 0, 0), "{query}");
    }
}

#[test]
fn every_view_of_a_scope_links_to_the_others() {
    let fx = Fixture::of(&[
        ("Work/Plans 2024/a.eml", mail("a@x", "A", 1, "X-Keywords: Big deal\n", "a")),
        ("Work/b.eml", mail("b@x", "B", 2, "", "b")),
        ("top.eml", mail("t@x", "T", 3, "", "t")),
    ]);
    let folder = Scope::Folder("Work/Plans 2024".into());
    let label = Scope::Label("Big deal".into());
    let cases = [
        (&Scope::All, "", None, "/", "/overview", ""),
        (&Scope::All, "x y", None, "/", "/overview?q=x%20y", ""),
        (
            &folder,
            "",
            Some("Folder Work/Plans 2024"),
            "/folder/Work/Plans%202024",
            "/overview?folder=Work%2FPlans%202024",
            "&folder=Work%2FPlans%202024",
        ),
        (
            &label,
            "a",
            Some("Label Big deal"),
            "/label/Big%20deal",
            "/overview?label=Big%20deal&q=a",
            "&label=Big%20deal",
        ),
    ];
    for (scope, query, heading, messages, overview, export) in cases {
        let list = ListView::build(&fx.view, scope, query, 1, false).unwrap();
        assert_eq!(list.heading.as_deref(), heading, "{scope:?}");
        assert_eq!(list.messages_url, messages, "{scope:?}");
        assert_eq!(list.threads_url, format!("{messages}?threads=1"), "{scope:?}");
        assert_eq!((list.overview_url.as_str(), list.export_scope.as_str()), (overview, export), "{scope:?}");
    }
    let own = ListView::build(&fx.view, &folder, "", 1, false).unwrap();
    assert_eq!(own.rows.iter().map(|r| r.subject.as_str()).collect::<Vec<_>>(), ["A"]);
}

#[test]
fn the_sidebar_marks_what_is_shown() {
    let fx = Fixture::of(&[
        ("Work/Plans/a.eml", mail("a@x", "A", 1, "X-Keywords: Big deal\n", "a")),
        ("Work/b.eml", mail("b@x", "B", 2, "", "b")),
        ("top.eml", mail("t@x", "T", 3, "", "t")),
    ]);
    let sidebar = |scope: &Scope| ListView::build(&fx.view, scope, "", 1, false).unwrap().sidebar;
    let all = sidebar(&Scope::All);
    let folders: Vec<_> =
        all.folders.iter().map(|f| (f.name.as_str(), f.path.as_str(), f.depth, f.count, f.current)).collect();
    assert_eq!(folders, [("Work", "Work", 0, 1, false), ("Plans", "Work/Plans", 1, 1, false)]);
    assert_eq!(all.folders[1].url, "/folder/Work/Plans");
    let labels: Vec<_> = all.labels.iter().map(|l| (l.name.as_str(), l.url.as_str(), l.count, l.current)).collect();
    assert_eq!(labels, [("Big deal", "/label/Big%20deal", 1, false)]);
    assert!(all.all_current && all.all == 3);
    let plans = sidebar(&Scope::Folder("/Work/Plans/".into()));
    assert_eq!(plans.folders.iter().map(|f| f.current).collect::<Vec<_>>(), [false, true]);
    assert!(!plans.all_current);
    let label = sidebar(&Scope::Label("BIG DEAL".into()));
    assert!(label.labels[0].current, "labels match whatever their case");
}
