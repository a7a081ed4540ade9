//! Decoding like everyone else: every leaf of every real message of the corpus (each `.eml`, each
//! message of its mbox files and Maildir trees) decodes to what Python's `email` package decodes
//! (`tests/decoding/reference.py`: `get_payload(decode=True)` over `msg.walk()`), part by part.
//! Where the two differ on purpose, the difference is one of the named [`EXCEPTIONS`], each with
//! its reason (mailshelf reads the part as the RFCs say, or as mail clients show it); the README's
//! "Decoding" section lists them. Any other difference fails the test.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use mailshelf::index::content_hash;
use mailshelf::ingest::{self, Kind};
use mailshelf::model::{Body, Message};
use mailshelf::parse::{is_plain_message, parse_message};
use serde::Deserialize;

use crate::common::{corpus_dir, repo_path, walk};

/// One real message of the corpus: where it was found, and its bytes.
struct Sample {
    origin: String,
    raw: Vec<u8>,
}

/// Every distinct message of the corpus that is mail: `.eml` files, Maildir entries, and each
/// message of the mbox files (other projects' expected outputs that happen to be mbox-shaped, and
/// the corpus's own provenance notes, are not mail).
fn corpus_messages() -> Vec<Sample> {
    let corpus = corpus_dir();
    let mut files = walk(&corpus);
    files.sort();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut keep = |origin: String, raw: Vec<u8>, path: &Path| {
        if is_plain_message(&raw, Some(path)) && seen.insert(content_hash(&raw)) {
            out.push(Sample { origin, raw });
        }
    };
    for f in &files {
        let rel = f.strip_prefix(&corpus).unwrap_or(f).display().to_string();
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "PROVENANCE.txt" || name.ends_with("-summary.txt") {
            continue;
        }
        let found = ingest::Found { root: Arc::from(corpus.as_path()), path: f.clone() };
        let eml = f.extension().is_some_and(|e| e.eq_ignore_ascii_case("eml"));
        let in_maildir = f.parent().and_then(Path::file_name).is_some_and(|d| d == "cur" || d == "new");
        match ingest::sniff_file(f, ingest::Claim::of(&found)).expect("readable") {
            Kind::Message
                if eml
                    || in_maildir
                    || !matches!(
                        f.extension().and_then(|e| e.to_str()).unwrap_or(""),
                        "mht" | "mhtml" | "out" | "golden"
                    ) =>
            {
                keep(rel, std::fs::read(f).expect("read"), f)
            }
            Kind::Mbox => {
                let data = std::fs::read(f).expect("read");
                for (n, (o, l)) in ingest::split_mbox(&data).into_iter().enumerate() {
                    let src = ingest::Source::Mbox { path: f.clone(), offset: o, len: l };
                    keep(
                        format!("{rel} #{}", n + 1),
                        src.read(usize::MAX, &ingest::Within::new([f.as_path()])).expect("read").bytes,
                        f,
                    );
                }
            }
            _ => {}
        }
    }
    out
}

/// A leaf as Python's `email` decodes it.
#[derive(Deserialize, Debug)]
struct TheirLeaf {
    section: String,
    #[serde(rename = "type")]
    content_type: String,
    charset: Option<String>,
    cte: Option<String>,
    /// What `get_payload(decode=True)` gives, in base64.
    #[serde(default)]
    bytes: String,
    /// Those bytes decoded by the part's charset, when it is a text part with a charset Python knows.
    text: Option<String>,
    /// For a part Python reads as header blocks: their fields.
    blocks: Option<Vec<Vec<(String, String)>>>,
    /// The body after the header block, for the `message/*` types Python reads as a message.
    body: Option<String>,
}

impl TheirLeaf {
    fn bytes(&self) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD.decode(&self.bytes).expect("base64")
    }
}

#[derive(Deserialize)]
struct TheirMessage {
    #[serde(default)]
    leaves: Vec<TheirLeaf>,
    /// The sections of enclosed messages sent in base64 or quoted-printable.
    #[serde(default)]
    encoded: Vec<String>,
    error: Option<String>,
}

/// Runs the reference reader over every message, in order.
fn python_decodes(samples: &[Sample]) -> Vec<TheirMessage> {
    let mut child = std::process::Command::new("python3")
        .arg(repo_path("tests/decoding/reference.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let input: Vec<Vec<u8>> = samples.iter().map(|s| s.raw.clone()).collect();
    let writer = std::thread::spawn(move || {
        for raw in input {
            stdin.write_all(format!("{}\n", raw.len()).as_bytes()).expect("write");
            stdin.write_all(&raw).expect("write");
        }
    });
    let out = child.wait_with_output().expect("python3 finishes");
    writer.join().expect("writer");
    assert!(out.status.success(), "reference reader: {}", String::from_utf8_lossy(&out.stderr));
    let theirs: Vec<TheirMessage> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("json")).collect();
    assert_eq!(theirs.len(), samples.len(), "one answer per message");
    theirs
}

/// A leaf as mailshelf decodes it.
struct OurLeaf<'a> {
    content_type: &'a str,
    charset: Option<&'a str>,
    body: &'a Body,
}

impl OurLeaf<'_> {
    fn bytes(&self) -> &[u8] {
        match self.body {
            Body::Text(t) => t.as_bytes(),
            Body::Binary(b) => b,
            _ => &[],
        }
    }
}

/// mailshelf's leaves by section, `/` where an enclosed message begins (TNEF contents, which
/// mailshelf adds below a leaf, are not MIME parts and are left out).
fn our_leaves<'a>(msg: &'a Message, prefix: &str, out: &mut BTreeMap<String, OurLeaf<'a>>) {
    for p in &msg.parts {
        if p.parent.is_some_and(|i| !msg.parts[i].is_multipart()) {
            continue;
        }
        let section = format!("{prefix}{}", p.section);
        match &p.body {
            Body::Multipart => {}
            Body::Message(inner) => our_leaves(inner, &format!("{section}/"), out),
            body => {
                out.insert(section, OurLeaf { content_type: &p.content_type, charset: p.charset.as_deref(), body });
            }
        }
    }
}

/// One part of one message, as both readers decode it.
struct Case<'a> {
    section: &'a str,
    ours: Option<&'a OurLeaf<'a>>,
    theirs: Option<&'a TheirLeaf>,
    /// The whole message.
    raw: &'a [u8],
    /// Enclosed messages sent encoded (see [`TheirMessage::encoded`]).
    encoded: &'a [String],
}

/// Header blocks read from text: blank lines between blocks, folded lines unfolded, each field a
/// name and its value with white space runs made one space.
fn header_blocks(text: &str) -> Vec<Vec<(String, String)>> {
    let mut blocks = Vec::new();
    let mut block: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            if !block.is_empty() {
                blocks.push(std::mem::take(&mut block));
            }
        } else if line.starts_with([' ', '\t']) {
            if let Some((_, v)) = block.last_mut() {
                v.push(' ');
                v.push_str(line);
            }
        } else if let Some((n, v)) = line.split_once(':') {
            block.push((n.trim().to_string(), v.to_string()));
        }
    }
    if !block.is_empty() {
        blocks.push(block);
    }
    blocks
}

fn squash(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn same_fields(a: &[Vec<(String, String)>], b: &[Vec<(String, String)>]) -> bool {
    let norm = |x: &[Vec<(String, String)>]| -> Vec<Vec<(String, String)>> {
        x.iter()
            .filter(|b| !b.is_empty())
            .map(|b| b.iter().map(|(n, v)| (n.to_ascii_lowercase(), squash(v))).collect())
            .collect()
    };
    norm(a) == norm(b)
}

/// Whether both readers decode the part alike, else what differs.
fn compare(case: &Case<'_>) -> Result<(), String> {
    let (ours, theirs) = match (case.ours, case.theirs) {
        (Some(o), Some(t)) => (o, t),
        (None, Some(t)) => return Err(format!("only Python has it ({})", t.content_type)),
        (Some(o), None) => return Err(format!("only mailshelf has it ({})", o.content_type)),
        (None, None) => return Ok(()),
    };
    if let Some(blocks) = &theirs.blocks {
        // Python read header blocks (and, for a message/* type, a body after them).
        let text = String::from_utf8_lossy(ours.bytes());
        let ok = match &theirs.body {
            None if theirs.content_type == "message/delivery-status" => same_fields(&header_blocks(&text), blocks),
            body => {
                let (head, rest) = split_header(&text);
                let body = body.as_deref().map(|b| base64::engine::general_purpose::STANDARD.decode(b).expect("b64"));
                same_fields(&header_blocks(head), blocks)
                    && body.is_none_or(|b| rest.trim_end() == String::from_utf8_lossy(&b).trim_end())
            }
        };
        return if ok { Ok(()) } else { Err("fields differ".into()) };
    }
    let want = theirs.bytes();
    let same = match (ours.body, &theirs.text) {
        (Body::Text(t), Some(text)) => t == text,
        _ => ours.bytes() == &want[..],
    };
    if same {
        Ok(())
    } else {
        Err(format!("{} bytes here, {} from Python", ours.bytes().len(), want.len()))
    }
}

/// A header block and what follows its blank line.
fn split_header(text: &str) -> (&str, &str) {
    for sep in ["\r\n\r\n", "\n\n"] {
        if let Some(i) = text.find(sep) {
            return (&text[..i], &text[i + sep.len()..]);
        }
    }
    (text, "")
}

/// A difference made on purpose: where mailshelf reads a part as the RFCs say or as mail clients
/// show it, and Python's `email` does not. A difference takes the first exception that applies.
struct Exception {
    name: &'static str,
    why: &'static str,
    applies: fn(&Case<'_>) -> bool,
}

const EXCEPTIONS: &[Exception] = &[
    Exception {
        name: "boundary in angle brackets",
        why: "a boundary written as `\"<<001-3e1dcd5a-119e>>\"` is the value as written, as mail \
              clients use it; Python strips angle brackets off any parameter, finds no delimiter and \
              reads the whole multipart as one part",
        applies: |c| find(c.raw, b"boundary=\"<").is_some(),
    },
    Exception {
        name: "empty boundary",
        why: "RFC 2046 §5.1.1 wants a boundary of 1 to 70 characters; a multipart whose boundary is \
              empty (`boundary=\"\"`) is shown as the text it holds; Python cuts it at every `--` line",
        applies: |c| find(c.raw, b"boundary=\"\"").is_some(),
    },
    Exception {
        name: "line break before a delimiter",
        why: "RFC 2046 §5.1.1: the line break before a delimiter belongs to the delimiter; Python \
              keeps it at the end of a multipart that has no boundary",
        applies: |c| {
            let (Some(o), Some(t)) = (c.ours, c.theirs) else { return false };
            let theirs = t.bytes();
            t.content_type.starts_with("multipart/")
                && (theirs.strip_suffix(b"\r\n") == Some(o.bytes()) || theirs.strip_suffix(b"\n") == Some(o.bytes()))
        },
    },
    Exception {
        name: "8-bit bytes labelled US-ASCII",
        why: "a part labelled US-ASCII that holds 8-bit bytes is mislabelled: it is read as UTF-8 when \
              its bytes are UTF-8, else as windows-1252, to which the WHATWG Encoding Standard maps the \
              label; Python replaces each 8-bit byte",
        applies: |c| {
            let (Some(o), Some(t)) = (c.ours, c.theirs) else { return false };
            let label = t.charset.as_deref().unwrap_or("").trim().to_ascii_lowercase();
            let bytes = t.bytes();
            let read = match std::str::from_utf8(&bytes) {
                Ok(text) => text.to_string(),
                Err(_) => encoding_rs::WINDOWS_1252.decode_without_bom_handling(&bytes).0.into_owned(),
            };
            matches!(label.as_str(), "us-ascii" | "ascii") && !bytes.is_ascii() && o.bytes() == read.as_bytes()
        },
    },
    Exception {
        name: "byte order mark before the header",
        why: "a message whose file begins with a UTF-8 byte order mark (saved by a Windows editor) is \
              read from the header after it, as MimeKit reads it; Python takes the mark for a line \
              that is no field and reads the whole message as body",
        applies: |c| c.raw.starts_with(b"\xef\xbb\xbf"),
    },
    Exception {
        name: "carriage return before a line break",
        why: "in a header whose lines end in CR CR LF (a file converted to CRLF twice), the stray CR \
              is white space at the end of a line, as mail clients read it; Python takes it for a \
              line break of its own, so the first one ends the header",
        applies: |c| find(c.raw, b"\r\r\n").is_some(),
    },
    Exception {
        name: "HTML read by its <meta>",
        why: "an HTML part that declares no charset is read in the encoding its `<meta>` names, as a \
              browser reads a page; Python gives the bytes undecoded",
        applies: |c| {
            let (Some(o), Some(t)) = (c.ours, c.theirs) else { return false };
            let bytes = t.bytes();
            let head = String::from_utf8_lossy(&bytes[..bytes.len().min(1024)]).to_ascii_lowercase();
            let label = head.split_once("charset=").map(|(_, rest)| {
                rest.trim_start_matches(['"', '\''])
                    .chars()
                    .take_while(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_'))
                    .collect::<String>()
            });
            let encoding = label.and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()));
            o.charset.is_none()
                && o.content_type == "text/html"
                && encoding.is_some_and(|e| o.bytes() == e.decode_without_bom_handling(&bytes).0.as_bytes())
        },
    },
    Exception {
        name: "empty part closed on the next line",
        why: "a close delimiter on the line right after the only delimiter closes one empty part \
              (RFC 2046 §5.1.1 gives a multipart one part at least; MIME4J reads it so); Python finds \
              no close delimiter and reads the epilogue as the part",
        applies: |c| c.ours.is_some_and(|o| o.bytes().is_empty()) && empty_part_closed(c.raw),
    },
    Exception {
        name: "enclosed message sent encoded",
        why: "RFC 2046 §5.2.1 allows only 7bit, 8bit or binary for message/rfc822; one sent in base64 \
              or quoted-printable is decoded and shown as the message it is, as mail clients do; \
              Python reads the encoded text as the message",
        applies: |c| c.encoded.iter().any(|e| c.section.starts_with(&format!("{e}/"))),
    },
    Exception {
        name: "external body",
        why: "RFC 2046 §5.2.3: the header inside a message/external-body describes data kept \
              elsewhere; mailshelf shows where it is and holds no bytes for it; Python reads the \
              phantom header as a message",
        applies: |c| c.ours.is_some_and(|o| o.content_type == "message/external-body"),
    },
    Exception {
        name: "encrypted layer",
        why: "RFC 8551 §3.3: an S/MIME enveloped-data object is an encrypted layer, not an attachment; \
              mailshelf shows, in its place, the part saying it is encrypted and for whom (and the \
              message inside once a key opens it); Python gives the object as the one part it is",
        applies: |c| find(c.raw, b"enveloped-data").is_some() || find(c.raw, b"x-pkcs7-mime").is_some(),
    },
    Exception {
        name: "message fragment",
        why: "RFC 2046 §5.2.2: a message/partial is a fragment of a message, shown as the bytes it \
              is until its fragments are put together; Python reads the fragment as a message",
        applies: |c| c.ours.is_some_and(|o| o.content_type == "message/partial"),
    },
    Exception {
        name: "boundary folded across lines",
        why: "RFC 5322 §2.2.3: a folded header is unfolded by removing its line breaks, so \
              `boundary=\"foo<CRLF> bar\"` is `foo bar`; Python keeps the line break in the \
              boundary, finds no delimiter and reads the whole multipart as one part",
        applies: |c| folded_boundary(c.raw),
    },
    Exception {
        name: "header field Python cannot read",
        why: "a header line with white space in or after its name (`Fro :x`, which RFC 5322 §4.5 \
              allows, or `X-Invalid Header: x`) is read as the field it is, and the header goes on; \
              Python ends the header there and shows the rest of it as the body",
        applies: |c| odd_field_name(c.raw),
    },
    Exception {
        name: "parameters without their semicolon",
        why: "`Content-Type: multipart/mixed<LF><TAB>boundary=...` is read with its parameter, as \
              mail-parser and mail clients read it; Python takes the whole value for the type",
        applies: |c| c.theirs.is_some_and(|t| t.content_type.contains(char::is_whitespace)),
    },
    Exception {
        name: "text without a charset, not UTF-8",
        why: "a text part that declares no charset and is not UTF-8 is read in the encoding its \
              bytes most likely are (an HTML part by its `<meta>`, as browsers read a page), as mail \
              clients read unlabelled 8-bit mail; Python gives the bytes undecoded",
        applies: |c| {
            let (Some(o), Some(t)) = (c.ours, c.theirs) else { return false };
            let bytes = t.bytes();
            let ascii_ours: Vec<u8> = o.bytes().iter().copied().filter(u8::is_ascii).collect();
            let ascii_theirs: Vec<u8> = bytes.iter().copied().filter(u8::is_ascii).collect();
            o.charset.is_none()
                && matches!(o.body, Body::Text(_))
                && std::str::from_utf8(&bytes).is_err()
                && !String::from_utf8_lossy(o.bytes()).contains('\u{fffd}')
                && ascii_ours == ascii_theirs
        },
    },
    Exception {
        name: "encoding name with white space",
        why: "a Content-Transfer-Encoding written with white space around its name (`base64 `) is \
              that encoding; Python does not recognize it and leaves the part encoded",
        applies: |c| {
            c.theirs.and_then(|t| t.cte.as_deref()).is_some_and(|e| {
                e.trim() != e && matches!(e.trim().to_ascii_lowercase().as_str(), "base64" | "quoted-printable")
            })
        },
    },
    Exception {
        name: "base64 one character over",
        why: "RFC 2045 §6.8: a base64 body whose last quantum holds a single character gives no octet \
              for it, and the rest decodes; Python then leaves the whole part encoded",
        applies: |c| {
            c.theirs.is_some_and(|t| {
                let alphabet =
                    t.bytes().iter().filter(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/')).count();
                cte(t) == "base64" && alphabet % 4 == 1
            })
        },
    },
    Exception {
        name: "stray header line",
        why: "a line in a header that is not a field, with fields after it (a forwarded header whose \
              folding was lost): RFC 5322's header section goes on to the empty line, and mailshelf \
              reads the fields after it, as mail clients do; Python ends the header at that line",
        applies: |c| stray_header_line(c.raw, c.section),
    },
];

fn cte(t: &TheirLeaf) -> String {
    t.cte.as_deref().unwrap_or("").trim().to_ascii_lowercase()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Whether a delimiter line is followed right away by the close delimiter of the same boundary.
fn empty_part_closed(raw: &[u8]) -> bool {
    let text = String::from_utf8_lossy(raw);
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    lines.windows(2).any(|w| w[0].starts_with("--") && w[0].len() > 2 && w[1] == format!("{}--", w[0]))
}

/// Whether a quoted `boundary` parameter of the message holds a line break.
fn folded_boundary(raw: &[u8]) -> bool {
    let mut rest = raw;
    while let Some(at) = find(rest, b"boundary=\"") {
        rest = &rest[at + 10..];
        let value = &rest[..rest.iter().position(|&b| b == b'"').unwrap_or(rest.len())];
        if value.contains(&b'\n') {
            return true;
        }
    }
    false
}

/// Whether the header of the (enclosed) message `section` lies in has a line that is neither a
/// field nor a folded line, with a field after it.
fn stray_header_line(raw: &[u8], section: &str) -> bool {
    let text = String::from_utf8_lossy(raw);
    let is_field =
        |l: &str| l.split_once(':').is_some_and(|(n, _)| !n.is_empty() && !n.trim_end().contains([' ', '\t']));
    // The header blocks of the message and of every part: what lies between an empty line and
    // the next is looked at whole, which is enough to find one (this exception is tried last).
    let _ = section;
    text.split("\n\n")
        .flat_map(|block| {
            let lines: Vec<&str> = block.lines().collect();
            (0..lines.len())
                .map(move |i| {
                    let l = lines[i];
                    !l.is_empty()
                        && !l.starts_with([' ', '\t'])
                        && !l.starts_with("--")
                        && !is_field(l)
                        && lines[i + 1..].iter().any(|n| is_field(n))
                        && lines[..i].iter().any(|p| is_field(p))
                })
                .collect::<Vec<_>>()
        })
        .any(|x| x)
}

/// Whether the message's header has a field whose name holds or is followed by white space.
fn odd_field_name(raw: &[u8]) -> bool {
    let text = String::from_utf8_lossy(raw);
    text.lines()
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| !l.starts_with([' ', '\t']))
        .any(|l| l.split_once(':').is_some_and(|(name, _)| name.contains([' ', '\t'])))
}

#[test]
fn every_corpus_part_decodes_as_python_email_decodes_it() {
    if !(crate::common::needs::corpus("every_corpus_part_decodes_as_python_email_decodes_it")
        && crate::common::needs::program(
            "every_corpus_part_decodes_as_python_email_decodes_it",
            "python3",
            "apt-get install python3",
        ))
    {
        return;
    }
    let samples = corpus_messages();
    assert!(samples.len() > 2500, "messages in the corpus: {}", samples.len());
    let theirs = python_decodes(&samples);
    let (mut parts, mut same, mut only_ours) = (0usize, 0usize, 0usize);
    let mut excepted: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut listing, mut unexplained) = (Vec::new(), Vec::new());
    for (s, t) in samples.iter().zip(&theirs) {
        if let Some(e) = &t.error {
            unexplained.push(format!("{}: Python's email fails: {e}", s.origin));
            continue;
        }
        let Ok(msg) = parse_message(Arc::from(s.raw.clone())) else {
            unexplained.push(format!("{}: mailshelf reads no message", s.origin));
            continue;
        };
        let mut ours = BTreeMap::new();
        our_leaves(&msg, "", &mut ours);
        let theirs: BTreeMap<&str, &TheirLeaf> = t.leaves.iter().map(|l| (l.section.as_str(), l)).collect();
        let sections: std::collections::BTreeSet<&str> =
            ours.keys().map(String::as_str).chain(theirs.keys().copied()).collect();
        for sec in sections {
            let case = Case {
                section: sec,
                ours: ours.get(sec),
                theirs: theirs.get(sec).copied(),
                raw: &s.raw,
                encoded: &t.encoded,
            };
            // Python's leaves are the parts counted; a leaf only mailshelf has is listed apart.
            if case.theirs.is_some() {
                parts += 1;
            } else {
                only_ours += 1;
            }
            let Err(what) = compare(&case) else {
                same += 1;
                continue;
            };
            let line = format!("{} part {sec}: {what}", s.origin);
            match EXCEPTIONS.iter().find(|e| (e.applies)(&case)) {
                Some(e) => {
                    *excepted.entry(e.name).or_default() += 1;
                    listing.push(format!("{line} — {}", e.name));
                }
                None => unexplained.push(line),
            }
        }
    }
    println!("{}", listing.join("\n"));
    for e in EXCEPTIONS {
        println!("{:>4}  {}: {}", excepted.get(e.name).copied().unwrap_or(0), e.name, e.why);
    }
    println!(
        "decoding: {} messages; of Python's {parts} leaves, {} decode alike ({:.2} %); {only_ours} leaves only \
         mailshelf has",
        samples.len(),
        same.min(parts),
        same.min(parts) as f64 * 100.0 / parts.max(1) as f64,
    );
    assert!(unexplained.is_empty(), "differences no exception explains:\n{}", unexplained.join("\n"));
    assert!(same * 100 >= parts * 99, "{same} of {parts} parts decode alike");
}
