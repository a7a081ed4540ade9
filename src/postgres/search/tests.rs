//! The PostgreSQL search engine against a live throwaway cluster: the query language as SQL, counts
//! kept and dropped, folders and attachments, paging.

use std::collections::{HashMap, HashSet};

use super::*;
use crate::postgres::testing::Cluster;
use crate::search::Embedded;

fn day(y: i64, m: i64, d: i64) -> i64 {
    crate::dates::days_from_civil(y, m, d) * 86_400
}

/// An id past `i32::MAX`, stored as a negative `integer`.
const BIG_ID: u32 = 3_000_000_000;

fn docs() -> Vec<Doc> {
    let doc = |id: u32, subject: &str, from: &str, body: &str| Doc {
        id,
        subject: subject.into(),
        from: from.into(),
        body: body.into(),
        size: 1_000 + u64::from(id),
        timestamp: Some(day(2020, 1, 1) + i64::from(id % 1000) * 3_600),
        ..Doc::default()
    };
    let alice = "Alice Martin <alice@example.org>";
    let bob = "Bob <bob@example.com>";
    vec![
        Doc {
            to: "bob@example.com".into(),
            cc: "carol@example.net".into(),
            filenames: "report-q3.pdf".into(),
            timestamp: Some(day(2017, 3, 5)),
            size: 120_000,
            has_attachment: true,
            folder: "Archives/2017".into(),
            labels: vec!["Work".into()],
            attachments: "Q3 revenue summary\nTax number DE129273398; turnover grew".into(),
            ..doc(1, "Quarterly report", alice, "Please find the quarterly report attached. Numbers look good.")
        },
        Doc {
            to: "alice@example.org".into(),
            timestamp: Some(day(2018, 6, 1)),
            size: 2_000,
            folder: "Inbox".into(),
            labels: vec!["Personal".into(), "Important".into()],
            ..doc(2, "Café au lait", bob, "On se retrouve au Café de Flore à 10h ?")
        },
        Doc {
            to: "bob@example.com".into(),
            timestamp: Some(day(2018, 6, 2)),
            folder: "Inbox".into(),
            labels: vec!["personal".into()],
            ..doc(3, "Re: Café au lait", alice, "Oui, le cafe est parfait.\n> On se retrouve au Café de Flore")
        },
        Doc {
            to: "team@example.jp".into(),
            timestamp: Some(day(2019, 11, 20)),
            folder: "Archives/2019/Japan".into(),
            ..doc(4, "会議の議事録", "田中 <tanaka@example.jp>", "東京タワーで会議をしましょう。")
        },
        Doc {
            list: Some("rust-users.lists.example.org".into()),
            folder: "Lists/Rust".into(),
            size: 8_000,
            ..doc(
                5,
                "[rust-users] Build fails on nightly",
                "dev@lists.example.org",
                "The build fails with error E0308 on nightly: cargo build --release",
            )
        },
        Doc {
            list: Some("Rust-Users.Lists.Example.Org".into()),
            folder: "Lists/Rust".into(),
            ..doc(
                6,
                "Re: [rust-users] Build fails on nightly",
                alice,
                "Fixed by updating the toolchain; the build no longer fails.",
            )
        },
        Doc { timestamp: None, size: 500, ..doc(7, "Undated note", "", "This message has no date header at all") },
        Doc {
            filenames: "IMG_0001.jpg IMG_0002.jpg".into(),
            size: 5_000_000,
            has_attachment: true,
            folder: "Archives/2017/Travel".into(),
            labels: vec!["Travel".into()],
            attachments: "itinerary: the quarterly mountains".into(),
            timestamp: Some(day(2017, 8, 20)),
            ..doc(8, "Photos from the trip", bob, "See attached photos of the mountains")
        },
        doc(9, "Fox", alice, "the quick brown fox jumps over the lazy dog"),
        doc(10, "Dog", bob, "the lazy dog jumps over the quick brown fox"),
        // The long word is left out but keeps its place: "alpha beta" is no phrase here.
        doc(11, "Gap", "", &format!("alpha {} beta gamma", "x".repeat(60))),
        doc(12, "No gap", "", "alpha beta that that is"),
        doc(13, "Ωmega launch", "", "ΩMEGA is launching"),
        // Folded to "(1)" and "1.": lexemes that need quoting.
        doc(14, "Items", "", "Item ⑴ and ⒈ apply; O'Reilly's book isn't here"),
        Doc {
            labels: vec!["Projects/Alpha".into(), " Urgent ".into()],
            folder: "/Projects/".into(),
            ..doc(15, "Labels", "", "labelled")
        },
        Doc { id: 16, timestamp: None, ..Doc::default() },
        Doc {
            to: "team@example.org, dave@example.com".into(),
            cc: "alice@example.org".into(),
            ..doc(17, "Team meeting", "carol@example.net", "Agenda: budget, hiring")
        },
        Doc {
            filenames: "Budget 2024 (final).xlsx".into(),
            has_attachment: true,
            timestamp: Some(day(2024, 2, 1) - 1),
            size: 2_047,
            ..doc(18, "Budget", "", "the final budget")
        },
        Doc { timestamp: Some(day(2024, 2, 1)), size: 2_048, ..doc(19, "February", "", "first of february") },
        Doc { list: Some(String::new()), ..doc(20, "Empty list id", "", "nothing") },
        // Names PostgreSQL's text cannot hold as they are.
        Doc {
            list: Some("nul\0list".into()),
            labels: vec!["nul\0label".into()],
            folder: "Nul\0folder/inner".into(),
            ..doc(21, "Nul", "", "a\0b")
        },
        Doc { folder: "Archives/2017".into(), ..doc(BIG_ID, "Large id", alice, "a message with a large id") },
    ]
}

fn ids_of(m: &str) -> Vec<u32> {
    match m {
        "a1@example.org" => vec![1],
        "thread@x" => vec![2, 3, BIG_ID],
        "missing@x" => vec![99],
        _ => Vec::new(),
    }
}

const QUERIES: &[&str] = &[
    "",
    "attachment:turnover",
    "attachment:\"tax number\"",
    "attachment:quarterly",
    "attachment:report",
    "DE129273398",
    "turnover -attachment:revenue",
    "body:turnover",
    "report",
    "Report",
    "quarterly report",
    "\"quarterly report\"",
    "\"report quarterly\"",
    "subject:café",
    "cafe",
    "CAFÉ",
    "body:\"café de flore\"",
    "body:\"flore de café\"",
    "from:alice",
    "from:alice@example.org",
    "to:bob",
    "cc:carol",
    "cc:alice",
    "to:\"example.org\"",
    "example.org",
    "filename:pdf",
    "filename:report-q3.pdf",
    "filename:\"budget 2024\"",
    "filename:img_0001",
    "会議",
    "東京",
    "タワー",
    "京東",
    "subject:議事録",
    "\"brown fox jumps\"",
    "\"quick brown fox\"",
    "\"lazy dog jumps\"",
    "\"the the\"",
    "\"that that is\"",
    "\"that is that\"",
    "\"alpha beta\"",
    "\"beta gamma\"",
    "ωmega",
    "Ωmega",
    "⑴",
    "o'reilly's",
    "\"isn't here\"",
    "message-id:<a1@example.org>",
    "message-id:thread@x",
    "msgid:nobody@x",
    "message-id:missing@x",
    "-message-id:thread@x",
    "folder:Archives",
    "folder:archives/2017",
    "folder:/Archives/2017/",
    "folder:Archive",
    "folder:Inbox",
    "folder:projects",
    "-folder:archives",
    "label:work",
    "label:URGENT",
    "label:projects/alpha",
    "label:projects",
    "-label:personal",
    "list:rust-users.lists.example.org",
    "list:<Rust-Users.Lists.Example.Org>",
    "list:other",
    "list:\"\"",
    "list:nul\0list",
    "label:nul\0label",
    "folder:nul\0folder",
    "\"a\0b\"",
    "-list:rust-users.lists.example.org",
    "has:attachment",
    "-has:attachment",
    "before:2018",
    "after:2018",
    "after:2018 before:2019-01",
    "before:2024-02-01",
    "after:2024-02-01",
    "-before:2018",
    "larger:2K",
    "smaller:2K",
    "larger:1M",
    "larger:1K smaller:100K",
    "larger:99999999G",
    "-cafe",
    "-(cafe OR report)",
    "cafe OR report",
    "(from:alice OR from:bob) -label:personal",
    "build fails -subject:re",
    "subject:re: build",
    "(has:attachment OR list:rust-users.lists.example.org) after:2017-06",
    "-(-has:attachment)",
    "!!! OR report",
    "repo*",
    "Rep*",
    "cafe*",
    "subject:caf*",
    "\"quarterly rep*\"",
    "\"brown fox jum*\"",
    "东京*",
    "東京*",
    "filename:repo*",
    "filename:report-q*",
    "attachment:turn*",
    "from:ali* -rep*",
    "zzz*",
    "nothing-at-all",
    "http://alice.example.org/x",
];

/// Every query answers the same set on both engines, and a page covering every match too.
#[test]
fn answers_as_the_embedded_engine() {
    let Some(cluster) = Cluster::start() else { return };
    let dir = tempfile::tempdir().expect("dir");
    let embedded = Embedded::open(dir.path()).expect("opens");
    let pg = PgSearch::new(cluster.database());
    for d in docs() {
        embedded.add(&d);
        pg.add(&d);
    }
    embedded.commit();
    pg.commit();
    let all: Vec<u32> = {
        let mut all: Vec<u32> = docs().iter().map(|d| d.id).collect();
        all.sort_unstable();
        all
    };
    assert_eq!(pg.ids(), all);
    assert_eq!(embedded.ids(), all);
    let dates: HashMap<u32, i64> = docs().iter().map(|d| (d.id, d.timestamp.unwrap_or(i64::MIN))).collect();
    let mut matched_some = 0;
    for q in QUERIES {
        let want = embedded.matching(q, &ids_of).expect(q);
        let got = pg.matching(q, &ids_of).expect(q);
        let sorted = |s: &HashSet<u32>| {
            let mut v: Vec<u32> = s.iter().copied().collect();
            v.sort_unstable();
            v
        };
        assert_eq!(sorted(&got), sorted(&want), "matching {q:?}");
        matched_some += usize::from(!want.is_empty() && want.len() < all.len());

        let want_hits = embedded.search(q, 0, 100, &ids_of).expect(q);
        let hits = pg.search(q, 0, 100, &ids_of).expect(q);
        assert_eq!(hits.total, want_hits.total, "total of {q:?}");
        assert_eq!(hits.total, want.len(), "total of {q:?}");
        let page: HashSet<u32> = hits.ids.iter().copied().collect();
        assert_eq!(page, want_hits.ids.iter().copied().collect::<HashSet<u32>>(), "page of {q:?}");
        // Newest first, then by id.
        let mut ordered = hits.ids.clone();
        ordered.sort_by_key(|id| std::cmp::Reverse((dates[id], pg_id(*id))));
        assert_eq!(hits.ids, ordered, "order of {q:?}");

        let counted = pg.search(q, 0, 0, &ids_of).expect(q);
        assert_eq!((counted.total, counted.ids.len()), (want.len(), 0), "count of {q:?}");
        let paged = pg.search(q, 1, 2, &ids_of).expect(q);
        assert_eq!(paged.total, want.len(), "total of a page of {q:?}");
        assert_eq!(paged.ids, hits.ids.iter().skip(1).take(2).copied().collect::<Vec<_>>(), "page 2 of {q:?}");
    }
    // The table is no trivial one: most queries pick some of the documents.
    assert!(matched_some > QUERIES.len() / 2, "{matched_some} of {}", QUERIES.len());
    for bad in ["\"open", "has:wings", "a OR", "!!!", "-!!!", "\"\"", "e*"] {
        assert!(matches!(pg.search(bad, 0, 10, &ids_of), Err(Error::BadQuery(_))), "{bad}");
        assert!(matches!(pg.matching(bad, &ids_of), Err(Error::BadQuery(_))), "{bad}");
    }
    assert_eq!(
        pg.snippets("flore", &["au Café de Flore".into()]),
        embedded.snippets("flore", &["au Café de Flore".into()])
    );
    // Which messages' attachments hold the words, among those asked about.
    for (q, among, want) in [
        ("quarterly", vec![1, 2, 8], vec![8]),
        ("\"tax number\" OR mountains", vec![1, 8, 9], vec![1, 8]),
        ("attachment:turnover -report", vec![1, 8], vec![1]),
        ("body:turnover", vec![1], vec![]),
        ("from:alice", vec![1], vec![]),
    ] {
        let mut got: Vec<u32> = pg.attachment_matches(q, &among).into_iter().collect();
        got.sort_unstable();
        assert_eq!(got, want, "{q}");
        let mut embedded_got: Vec<u32> = embedded.attachment_matches(q, &among).into_iter().collect();
        embedded_got.sort_unstable();
        assert_eq!(embedded_got, want, "embedded: {q}");
    }
    let text = vec!["Tax number DE129273398; turnover grew".to_string()];
    let marked = pg.attachment_snippets("turnover", &text);
    assert!(marked[0].as_deref().is_some_and(|s| s.contains("<mark>turnover</mark>")), "{marked:?}");
    assert_eq!(marked, embedded.attachment_snippets("turnover", &text));
}

#[test]
fn deletes_and_re_adds_apply_in_order() {
    let Some(cluster) = Cluster::start() else { return };
    let pg = PgSearch::new(cluster.database());
    let doc = |id: u32, body: &str| Doc { id, body: body.into(), ..Doc::default() };
    for id in 1..=5 {
        pg.add(&doc(id, "first"));
    }
    pg.commit();
    assert_eq!(pg.ids(), vec![1, 2, 3, 4, 5]);
    pg.delete(2);
    // Deleted, then added again in the same batch: the add is the last word.
    pg.delete(3);
    pg.add(&doc(3, "second"));
    // Added, then deleted: gone.
    pg.add(&doc(6, "second"));
    pg.delete(6);
    // Added twice: the later one.
    pg.add(&doc(7, "first"));
    pg.add(&doc(7, "second"));
    pg.delete(BIG_ID);
    pg.commit();
    assert_eq!(pg.ids(), vec![1, 3, 4, 5, 7]);
    let none: &IdsOf<'_> = &|_| Vec::new();
    assert_eq!(pg.matching("second", none).expect("runs"), HashSet::from([3, 7]));
    assert_eq!(pg.matching("first", none).expect("runs"), HashSet::from([1, 4, 5]));
    // A commit with nothing buffered is harmless.
    pg.commit();
    assert_eq!(pg.ids(), vec![1, 3, 4, 5, 7]);
}

/// A count kept from an earlier search is used only while nothing was written since, by this
/// replica or another one on the same database.
#[test]
fn kept_counts_follow_every_write() {
    let Some(cluster) = Cluster::start() else { return };
    let db = cluster.database();
    let (here, there) = (PgSearch::new(Arc::clone(&db)), PgSearch::new(db));
    let none: &IdsOf<'_> = &|_| Vec::new();
    let doc = |id: u32| Doc { id, body: "quarterly figures".into(), timestamp: Some(i64::from(id)), ..Doc::default() };
    here.add(&doc(1));
    here.commit();
    for limit in [0, 10] {
        assert_eq!(here.search("quarterly", 0, limit, none).expect("runs").total, 1);
    }
    there.add(&doc(2));
    there.commit();
    let hits = here.search("quarterly", 0, 10, none).expect("runs");
    assert_eq!((hits.total, hits.ids), (2, vec![2, 1]), "a write on another replica is counted");
    assert_eq!(here.search("quarterly", 0, 0, none).expect("runs").total, 2);
    here.delete(1);
    here.commit();
    assert_eq!(here.search("quarterly", 0, 0, none).expect("runs").total, 1);
    assert_eq!(here.search("quarterly", 0, 10, none).expect("runs").ids, vec![2]);
}

/// Pages read by walking newest first are the pages a fetch of every match gives: when the
/// walk reaches the page's end, when it runs out before (matches bunched in the past), at the
/// last page, and within dates the query names.
#[test]
fn pages_walked_newest_first_are_the_pages_fetched() {
    let Some(cluster) = Cluster::start() else { return };
    let pg = PgSearch::new(cluster.database());
    let none: &IdsOf<'_> = &|_| Vec::new();
    let count = 3_000u32;
    let hour = |id: u32| day(2020, 1, 1) + i64::from(id) * 3_600;
    for id in 0..count {
        // Every message is "common"; the 300 oldest are "rare", too few for a walk newest
        // first to reach them within its bound; every third is "third".
        let mut body = String::from("common");
        if id < 300 {
            body.push_str(" rare");
        }
        if id % 3 == 0 {
            body.push_str(" third");
        }
        pg.add(&Doc { id, body, timestamp: Some(hour(id)), ..Doc::default() });
    }
    pg.commit();
    let newest_first = |ids: Vec<u32>| {
        let mut ids = ids;
        ids.sort_by_key(|id| std::cmp::Reverse(*id));
        ids
    };
    let after = crate::dates::civil_from_days((hour(2_000)).div_euclid(86_400));
    let cases: Vec<(String, Vec<u32>)> = vec![
        ("common".into(), (0..count).collect()),
        ("rare".into(), (0..300).collect()),
        ("third".into(), (0..count).filter(|id| id % 3 == 0).collect()),
        (
            format!("third after:{:04}-{:02}-{:02}", after.0, after.1, after.2),
            (0..count).filter(|id| id % 3 == 0 && hour(*id) >= day(after.0, after.1, after.2)).collect(),
        ),
    ];
    for (q, matches) in cases {
        let all = newest_first(matches);
        // The first ask counts; the later ones know the count and may walk.
        assert_eq!(pg.search(&q, 0, 0, none).expect("runs").total, all.len(), "{q}");
        for (offset, limit) in [(0, 10), (5, 10), (290, 20), (all.len() - 7, 20), (all.len(), 5)] {
            let hits = pg.search(&q, offset, limit, none).expect("runs");
            let want: Vec<u32> = all.iter().skip(offset).take(limit).copied().collect();
            assert_eq!((hits.total, hits.ids), (all.len(), want), "{q} at {offset}+{limit}");
        }
    }
}

#[test]
fn a_full_buffer_is_written_before_the_commit() {
    let Some(cluster) = Cluster::start() else { return };
    let pg = PgSearch::new(cluster.database());
    let count = FLUSH_DOCS as u32 + 10;
    for id in 0..count {
        pg.add(&Doc { id, subject: format!("number {id}"), ..Doc::default() });
    }
    assert_eq!(pg.ids().len(), FLUSH_DOCS);
    pg.commit();
    assert_eq!(pg.ids(), (0..count).collect::<Vec<_>>());
    let hits = pg.search("number", 0, 5, &|_| Vec::new()).expect("runs");
    assert_eq!((hits.total, hits.ids.len()), (count as usize, 5));
}

/// Texts past PostgreSQL's limits go in, trimmed as the module's notes say.
#[test]
fn long_texts_are_kept_within_postgres_limits() {
    let Some(cluster) = Cluster::start() else { return };
    let pg = PgSearch::new(cluster.database());
    // More words than positions.
    let long: String = (0..20_000).map(|i| format!("w{i} ")).collect();
    // More than a tsvector holds: 150,000 distinct words of 8 letters.
    let huge: String = (0..150_000).map(|i| format!("h{i:07} ")).collect();
    // One word more often than its positions.
    let repeated = format!("{}end", "common ".repeat(300));
    let dir = tempfile::tempdir().expect("dir");
    let embedded = Embedded::open(dir.path()).expect("opens");
    for d in [
        Doc { id: 1, body: long, ..Doc::default() },
        Doc { id: 2, body: huge, ..Doc::default() },
        Doc { id: 3, body: "w5 w6 common end".into(), ..Doc::default() },
        Doc { id: 4, body: repeated, ..Doc::default() },
    ] {
        pg.add(&d);
        embedded.add(&d);
    }
    pg.commit();
    embedded.commit();
    assert_eq!(pg.ids(), vec![1, 2, 3, 4]);
    let none: &IdsOf<'_> = &|_| Vec::new();
    let found = |q: &str| {
        let mut v: Vec<u32> = pg.matching(q, none).expect(q).into_iter().collect();
        v.sort_unstable();
        v
    };
    let embedded_found = |q: &str| {
        let mut v: Vec<u32> = embedded.matching(q, none).expect(q).into_iter().collect();
        v.sort_unstable();
        v
    };
    // Both engines find every word and phrase: the passages hold what the columns cannot.
    for (q, want) in [
        ("w19999", vec![1]),
        ("w5", vec![1, 3]),
        ("\"w5 w6\"", vec![1, 3]),
        ("\"w8000 w8001 w8002\"", vec![1]),
        // Across the last exact position (16,380 and 16,381), and past it.
        ("\"w16379 w16380\"", vec![1]),
        ("\"w16380 w16381\"", vec![1]),
        ("\"w17000 w17001\"", vec![1]),
        ("\"w19998 w19999\"", vec![1]),
        ("\"w19999 w0\"", vec![]),
        ("\"common common common\"", vec![4]),
        // A word's 301st place.
        ("\"common end\"", vec![3, 4]),
        ("h0000000", vec![2]),
        ("\"h0000000 h0000001\"", vec![2]),
        ("h0074999", vec![2]),
        // A phrase past what one tsvector holds.
        ("\"h0149998 h0149999\"", vec![2]),
        ("body:\"w17000 w17001\"", vec![1]),
        ("subject:\"w17000 w17001\"", vec![]),
    ] {
        assert_eq!(embedded_found(q), want, "embedded: {q}");
        assert_eq!(found(q), want, "{q}");
    }
    // The documented difference: a word (not a phrase) only found past what the column holds.
    for q in ["h0075000", "h0149999"] {
        assert_eq!((embedded_found(q), found(q)), (vec![2], vec![]), "{q}");
    }
    // A negation is the complement. (Not asked of the embedded engine here: tantivy 0.27's phrase
    // scorer checks, in debug builds only, an order its exclusion does not keep, and panics.)
    assert_eq!(found("-\"w17000 w17001\""), vec![2, 3, 4]);
    // Added again with a short text, a message loses its passages.
    pg.add(&Doc { id: 1, body: "w1 w2".into(), ..Doc::default() });
    pg.commit();
    assert_eq!(found("\"w17000 w17001\""), Vec::<u32>::new());
    pg.delete(2);
    pg.commit();
    assert_eq!(found("\"h0149998 h0149999\""), Vec::<u32>::new());
}

#[test]
fn long_texts_are_cut_into_passages_that_hold_every_place() {
    let long: String = (0..40_000).map(|i| format!("w{i} ")).collect();
    let (column, whole) = tsvector(&long);
    assert!(!whole && column.contains("'w39999':16383"), "the column keeps every word");
    let cut = passages(&long);
    assert_eq!(cut.len(), 3, "16,381 words each, 32 shared");
    assert!(cut[0].contains("'w0':1 ") && cut[0].contains("'w16380':16381"), "{}", &cut[0][..60]);
    assert!(cut[1].contains("'w16349':1 "), "{}", &cut[1][..60]);
    assert!(cut[2].contains("'w39999':"));
    // Every word's 257th place starts a passage; a text of one word repeated is cut short.
    let table: String = (0..3_000).map(|i| format!("2023 {i} EUR\n")).collect();
    let cut = passages(&table);
    assert!(cut.len() > 1 && cut.iter().all(|p| !p.contains(",16383")), "{}", cut.len());
    assert_eq!(passages(&"a ".repeat(200_000)).len(), MAX_PASSAGES);
    assert!(tsvector("short text").1, "a short text needs no passages");
}

#[test]
fn tsvectors_in_text_form() {
    assert_eq!(tsvector("").0, "");
    assert_eq!(tsvector("Café, café! x").0, "'cafe':1,2 'x':3");
    // A word left out as too long keeps its place.
    assert_eq!(tsvector(&format!("a {} b", "y".repeat(60))).0, "'a':1 'b':3");
    assert_eq!(tsvector("⑴").0, "'(1)':1");
    let mut quoted = String::new();
    quote("it's a\\b", &mut quoted);
    assert_eq!(quoted, "'it''s a\\\\b'");
    let tsq = |text: &str, prefix: bool| Terms::of(text, prefix).map(|terms| tsquery(&terms));
    assert_eq!(tsq("Quick brown", false), Some("'quick' <-> 'brown'".into()));
    assert_eq!(tsq("Quick bro", true), Some("'quick' <-> 'bro':*".into()));
    assert_eq!(tsq("!!!", false), None);
    assert_eq!((pg_position(0), pg_position(16_380), pg_position(16_381)), (1, 16_381, 16_383));
    assert_eq!(pg_position(usize::MAX - 1), 16_383);
    // One word repeated past its positions keeps 256 of them, and the far one once.
    let many = tsvector(&"z ".repeat(20_000));
    assert_eq!(many.0.matches(',').count(), MAX_POSITIONS - 1);
}

#[test]
fn trimmed_tsvectors_fit_the_budget() {
    let cost = |lexemes: &[(String, Vec<u16>)]| -> usize {
        lexemes.iter().map(|(w, p)| lexeme_cost(w) + 2 * (p.len() - 1)).sum()
    };
    // Positions trimmed first: every word stays.
    let mut lexemes: Vec<(String, Vec<u16>)> =
        (0..3_000u16).map(|i| (format!("w{i:05}"), (0..200).map(|k| k * 50 + i % 50 + 1).collect())).collect();
    fit(&mut lexemes);
    assert_eq!(lexemes.len(), 3_000);
    assert!(cost(&lexemes) <= TSVECTOR_BUDGET);
    // Words trimmed when their first positions alone are too many.
    let mut lexemes: Vec<(String, Vec<u16>)> = (0..200_000).map(|i| (format!("w{i:07}"), vec![1])).collect();
    fit(&mut lexemes);
    assert!(cost(&lexemes) <= TSVECTOR_BUDGET);
    assert_eq!(lexemes.len(), TSVECTOR_BUDGET / lexeme_cost("w0000000"));
    assert_eq!(lexemes[0].0, "w0000000");
}

#[test]
fn the_upgrade_removes_only_the_rows_that_need_passages() {
    let Some(cluster) = Cluster::start() else { return };
    let pg = PgSearch::new(cluster.database());
    let long: String = (0..17_000).map(|i| format!("w{i} ")).collect();
    for d in [
        Doc { id: 1, body: long, ..Doc::default() },
        Doc { id: 2, attachments: "common ".repeat(300), ..Doc::default() },
        Doc { id: 3, body: "a short text".into(), to: "w1 ".repeat(200), ..Doc::default() },
    ] {
        pg.add(&d);
    }
    pg.commit();
    // What migration 0008 removes of the rows a server of the version before wrote.
    let sql = include_str!("../migrations/0008_search_passages.sql");
    let removal = sql[sql.find("DELETE FROM search_docs").expect("a removal")..].to_string();
    cluster
        .database()
        .run(move |c| async move {
            c.batch_execute("DELETE FROM search_passages").await.map_err(failed("passages"))?;
            c.batch_execute(&removal).await.map_err(failed("removal"))
        })
        .expect("runs");
    assert_eq!(pg.ids(), vec![3]);
}
