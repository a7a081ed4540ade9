//! Every document of Apache Tika's test set (`../shared/corpus/tika-documents`: PDF, Office Open
//! XML, OpenDocument, RTF and legacy Office files), each wrapped in a message: the text mailshelf
//! shows (`?text=1`, what search finds) holds at least 95 % of the distinct words an independent
//! reader finds in it (`tests/extract/reference.py`: pdftotext, docx2txt, openpyxl, python-pptx,
//! odfpy, striprtf), and the documents it does not read (legacy formats, password-encrypted,
//! damaged) are told as such, with the reason.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use axum::http::StatusCode;
use serde::Deserialize;

use crate::common::{corpus_dir, repo_path, walk, TestApp};

#[derive(Deserialize)]
struct Reference {
    path: String,
    tool: Option<String>,
    text: Option<String>,
    error: Option<String>,
}

/// Why a file is expected not to be read, by its name.
fn expected_unreadable(name: &str) -> Option<&'static str> {
    let ext = name.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    if ["doc", "xls", "ppt"].contains(&ext.as_str()) {
        return Some("97–2003");
    }
    if ["protected_passtika", "Password", "owner_user", "Encrypted"].iter().any(|p| name.contains(p)) {
        return Some("password");
    }
    if name.contains("truncated") || name.contains("notaZip") {
        return Some("damaged");
    }
    None
}

/// Distinct words and all words of a text, by the analyzer search uses.
fn words(text: &str) -> (HashSet<String>, HashMap<String, usize>) {
    let mut counts = HashMap::new();
    for w in mailshelf::search::words(text) {
        *counts.entry(w).or_insert(0) += 1;
    }
    (counts.keys().cloned().collect(), counts)
}

#[derive(Default)]
struct Tally {
    files: usize,
    compared: usize,
    distinct: usize,
    distinct_found: usize,
    all: usize,
    all_found: usize,
    unreadable: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_documents_agree_with_independent_readers() {
    if !(crate::common::needs::corpus("corpus_documents_agree_with_independent_readers")
        && crate::common::needs::program(
            "corpus_documents_agree_with_independent_readers",
            "python3",
            "apt-get install python3",
        )
        && crate::common::needs::python_module(
            "corpus_documents_agree_with_independent_readers",
            "docx2txt, striprtf, openpyxl, pptx",
            "pip install docx2txt striprtf openpyxl python-pptx",
        ))
    {
        return;
    }
    let dir = corpus_dir().join("tika-documents");
    let mut files: Vec<PathBuf> = walk(&dir)
        .into_iter()
        .filter(|p| !matches!(p.file_name().and_then(|n| n.to_str()), Some("LICENSE.txt" | "NOTICE.txt")))
        .collect();
    files.sort();
    assert_eq!(files.len(), 73, "documents in {}", dir.display());
    let mail = tempfile::tempdir().expect("dir");
    let names: Vec<String> =
        files.iter().map(|p| p.file_name().expect("name").to_string_lossy().into_owned()).collect();
    for (i, (path, name)) in files.iter().zip(&names).enumerate() {
        let bytes = std::fs::read(path).expect("read");
        super::wrap(mail.path(), &format!("tika{i}"), name, "application/octet-stream", "a corpus document", &bytes);
    }
    let out = std::process::Command::new("python3")
        .arg(repo_path("tests/extract/reference.py"))
        .args(&files)
        .output()
        .expect("python3 runs (scripts/test installs the reference readers)");
    assert!(out.status.success(), "reference readers: {}", String::from_utf8_lossy(&out.stderr));
    let references: HashMap<String, Reference> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Reference>(l).expect("json"))
        .map(|r| (r.path.clone(), r))
        .collect();

    let app = TestApp::new(&[mail.path().to_path_buf()]);
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    let mut failures = Vec::new();
    for (i, (path, name)) in files.iter().zip(&names).enumerate() {
        let ext = name.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
        let tally = tallies.entry(ext).or_default();
        tally.files += 1;
        let url = super::attachment_url(&app, &format!("tika{i}"), name).await;
        let got = app.get(&format!("{url}?text=1")).await;
        assert!(!got.status.is_server_error(), "{name}: {}", got.status);
        if let Some(reason) = expected_unreadable(name) {
            assert_eq!(got.status, StatusCode::UNPROCESSABLE_ENTITY, "{name} is told unreadable: {}", got.text());
            assert!(got.text().contains(reason), "{name}: the reason says {reason}: {}", got.text());
            tally.unreadable.push(name.clone());
            continue;
        }
        assert_eq!(got.status, StatusCode::OK, "{name}: {}", got.text());
        let text = got.text();
        let ours: String = text.lines().filter(|l| !l.starts_with("[mailshelf: ")).collect::<Vec<_>>().join("\n");
        let reference = references.get(&path.to_string_lossy().into_owned()).expect("a reference line");
        let Some(theirs) = reference.text.as_deref() else {
            println!(
                "{name}: {} did not read it ({:?}); mailshelf read {} bytes",
                reference.tool.as_deref().unwrap_or("no tool"),
                reference.error,
                ours.len()
            );
            continue;
        };
        let ((their_set, their_counts), (our_set, our_counts)) = (words(theirs), words(&ours));
        if their_set.is_empty() {
            continue;
        }
        let found = their_set.intersection(&our_set).count();
        let all: usize = their_counts.values().sum();
        let all_found: usize =
            their_counts.iter().map(|(w, n)| (*n).min(our_counts.get(w).copied().unwrap_or(0))).sum();
        tally.compared += 1;
        tally.distinct += their_set.len();
        tally.distinct_found += found;
        tally.all += all;
        tally.all_found += all_found;
        let share = found as f64 / their_set.len() as f64;
        println!(
            "{name}: {found}/{} distinct words of {} ({:.1} %), {all_found}/{all} words",
            their_set.len(),
            reference.tool.as_deref().unwrap_or("?"),
            share * 100.0
        );
        if share < 0.95 {
            let mut missing: Vec<&String> = their_set.difference(&our_set).collect();
            missing.sort();
            missing.truncate(20);
            failures.push(format!(
                "{name}: {:.1} % of {}'s words; missing {missing:?}",
                share * 100.0,
                reference.tool.as_deref().unwrap_or("?")
            ));
        }
    }
    println!("\n| format | files | compared | distinct words found | all words found | not read |");
    for (ext, t) in &tallies {
        println!(
            "| .{ext} | {} | {} | {}/{} | {}/{} | {} |",
            t.files,
            t.compared,
            t.distinct_found,
            t.distinct,
            t.all_found,
            t.all,
            t.unreadable.join(", ")
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
