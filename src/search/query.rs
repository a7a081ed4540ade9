//! The search language mail users already type: words, `"quoted phrases"`, `word*` (words that
//! start so), `field:value`, `field:(…)` (the field for every term inside, as Gmail reads it),
//! `-` or `NOT` negation, `OR`, `AND` (what terms side by side mean anyway), and parentheses.
//! Parsed into a small tree, independent of the search engine, so the grammar is pinned by its
//! own tests and a bad query gets a clear message.
//!
//! Fields: `from:` `to:` `cc:` `subject:` `body:` `filename:` `attachment:` (the text of attached
//! documents) `message-id:` `has:attachment`
//! `folder:` (a folder and those below it) `label:` `list:` (a List-Id) `before:` / `after:` (YYYY, YYYY-MM or YYYY-MM-DD; `after:` includes that day, `before:` does
//! not) and `larger:` / `smaller:` (bytes, or with K, M, G).

use crate::error::Error;
// The longest query and deepest nesting accepted: a search box needs no more, and they bound the
// work a query costs.
use crate::limits::{MAX_QUERY_DEPTH as MAX_DEPTH, MAX_QUERY_LEN as MAX_LEN};

#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    /// Every message (an empty query, or one of only negations).
    All,
    /// Words or a phrase, in one field or in all text fields (`None`); with `prefix` (typed with a
    /// `*` after it) its last word is the start of a word.
    Text {
        field: Option<TextField>,
        text: String,
        phrase: bool,
        prefix: bool,
    },
    MessageId(String),
    /// Messages filed in this folder or one below it (`folder:Archives` covers `Archives/2017`).
    Folder(String),
    /// Messages carrying this label, ignoring case.
    Label(String),
    /// Messages that came through this mailing list (its List-Id), ignoring case.
    List(String),
    HasAttachment,
    /// Seconds since the epoch: at or after `from`, before `to`. A message without a date is in
    /// no range.
    Date {
        from: Option<i64>,
        to: Option<i64>,
    },
    /// Bytes: at least `min`, less than `max`.
    Size {
        min: Option<u64>,
        max: Option<u64>,
    },
    Not(Box<Query>),
    And(Vec<Query>),
    Or(Vec<Query>),
}

impl Query {
    /// Calls `f` with the text of every term that looks in `field` (a term of that field or one
    /// in every field), outside negations, and whether its last word is a prefix.
    pub fn each_text_in(&self, field: TextField, f: &mut dyn FnMut(&str, bool)) {
        match self {
            Query::Text { field: None, text, prefix, .. } => f(text, *prefix),
            Query::Text { field: Some(tf), text, prefix, .. } if *tf == field => f(text, *prefix),
            Query::And(all) | Query::Or(all) => all.iter().for_each(|q| q.each_text_in(field, f)),
            _ => {}
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextField {
    From,
    To,
    Cc,
    Subject,
    Body,
    Filename,
    /// The text of the documents a message carries.
    Attachment,
}

pub fn parse(input: &str) -> Result<Query, Error> {
    if input.len() > MAX_LEN {
        return Err(bad(format!("the query is longer than {MAX_LEN} characters")));
    }
    let tokens = lex(input)?;
    let mut p = Parser { tokens, pos: 0, depth: 0, left_out: false, fields: Vec::new() };
    let q = p.or()?;
    if p.pos < p.tokens.len() {
        return Err(bad("unexpected “)”".to_string()));
    }
    match q {
        Some(q) => Ok(q),
        None if input.trim().is_empty() => Ok(Query::All),
        // Typed, but no word in it (`---`, `&`, an undecodable `%FF`, only `AND` or `NOT`):
        // matching every message would list, and export, the whole archive for what was surely
        // no such request.
        None => Err(bad(format!("“{}” holds no word to search for", input.trim()))),
    }
}

/// The fewest letters and digits before a `*`: one letter would stand for a good part of every
/// word there is, which costs a search the work of reading most of the index.
const MIN_PREFIX_LETTERS: usize = 2;

fn bad(msg: String) -> Error {
    Error::BadQuery(msg)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// `(`, or `field:(` whose field every term inside takes.
    Open(Option<String>),
    Close,
    Or,
    /// A term, possibly negated, possibly `field:`, possibly quoted.
    Term {
        neg: bool,
        field: Option<String>,
        value: String,
        quoted: bool,
    },
    /// A `-` before a parenthesis.
    Neg,
}

fn lex(input: &str) -> Result<Vec<Tok>, Error> {
    let chars: Vec<char> = input.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    // A `NOT` before the next term or parenthesis.
    let mut negate_next = false;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c == '(' {
            if std::mem::take(&mut negate_next) {
                out.push(Tok::Neg);
            }
            out.push(Tok::Open(None));
            i += 1;
            continue;
        }
        if c == ')' {
            out.push(Tok::Close);
            i += 1;
            continue;
        }
        let mut neg = false;
        if c == '-' && chars.get(i + 1).is_some_and(|n| !n.is_whitespace()) {
            neg = true;
            i += 1;
            if chars[i] == '(' {
                out.push(Tok::Neg);
                continue;
            }
        }
        // A field name runs to ':' when one comes before white space or a quote.
        let mut field = None;
        let mut j = i;
        while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '-' || chars[j] == '_') {
            j += 1;
        }
        if j > i && chars.get(j) == Some(&':') {
            let name: String = chars[i..j].iter().collect::<String>().to_ascii_lowercase();
            // `from: alice` is `from:alice`, as typed with a space; `re: hello` stays two words.
            let mut value_at = j + 1;
            while chars.get(value_at).is_some_and(|c| c.is_whitespace()) {
                value_at += 1;
            }
            let value_follows = chars.get(value_at).is_some_and(|&c| c != '(' && c != ')');
            if FIELDS.contains(&name.as_str()) && chars.get(value_at) == Some(&'(') {
                // `subject:(a b)`, `-from:(a OR b)`, `from: (a OR b)`: the group, its terms in
                // that field.
                if neg != std::mem::take(&mut negate_next) {
                    out.push(Tok::Neg);
                }
                out.push(Tok::Open(Some(name)));
                i = value_at + 1;
                continue;
            }
            if FIELDS.contains(&name.as_str()) && value_follows {
                field = Some(name);
                i = value_at;
            }
        }
        let (value, quoted) = if chars.get(i) == Some(&'"') {
            let end = chars[i + 1..].iter().position(|&c| c == '"').map(|p| i + 1 + p);
            match end {
                Some(e) => {
                    let v: String = chars[i + 1..e].iter().collect();
                    i = e + 1;
                    (v, true)
                }
                None => return Err(bad("a quote is not closed".into())),
            }
        } else {
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && chars[i] != ')' && chars[i] != '(' {
                i += 1;
            }
            (chars[start..i].iter().collect(), false)
        };
        let operator = !neg && !quoted && field.is_none();
        if operator && value == "OR" {
            out.push(Tok::Or);
        } else if operator && value == "AND" {
            // What two terms side by side mean already.
        } else if operator && value == "NOT" {
            // `NOT x` is `-x`, `NOT (…)` is `-(…)`; the term or parenthesis is the next one.
            negate_next = !negate_next;
            continue;
        } else if value.is_empty() && !quoted && negate_next {
            // `NOT )`: the NOT stands before nothing.
            return Err(bad("“NOT” must stand before a word or “(”".into()));
        } else if value.is_empty() && !quoted {
            continue;
        } else {
            out.push(Tok::Term { neg: neg != negate_next, field, value, quoted });
        }
        negate_next = false;
    }
    if negate_next {
        return Err(bad("“NOT” must stand before a word or “(”".into()));
    }
    Ok(out)
}

const FIELDS: &[&str] = &[
    "from",
    "to",
    "cc",
    "subject",
    "body",
    "filename",
    "attachment",
    "message-id",
    "msgid",
    "has",
    "before",
    "after",
    "larger",
    "smaller",
    "folder",
    "label",
    "list",
];

struct Parser {
    tokens: Vec<Tok>,
    pos: usize,
    depth: usize,
    /// Whether a term holding no word was left out.
    left_out: bool,
    /// The field of each group the parser is in (`subject:(…)`), innermost last; a plain group
    /// keeps the one around it.
    fields: Vec<Option<String>>,
}

impl Parser {
    fn or(&mut self) -> Result<Option<Query>, Error> {
        let mut alts = Vec::new();
        // Whether a side held only terms left out (`!!! OR report`): nothing to look for, not
        // a mistake.
        let mut left_out = false;
        loop {
            let before = self.pos;
            match self.and()? {
                Some(q) => alts.push(q),
                None if self.pos > before => left_out = true,
                None if left_out => {}
                None if !alts.is_empty() || self.tokens.get(self.pos) == Some(&Tok::Or) => {
                    return Err(bad("OR needs something on both sides".into()))
                }
                None => {}
            }
            if self.tokens.get(self.pos) == Some(&Tok::Or) {
                self.pos += 1;
            } else {
                break;
            }
        }
        Ok(match alts.len() {
            0 => None,
            1 => alts.pop(),
            _ => Some(Query::Or(alts)),
        })
    }

    fn and(&mut self) -> Result<Option<Query>, Error> {
        let mut all = Vec::new();
        while let Some(t) = self.tokens.get(self.pos).cloned() {
            match t {
                Tok::Or | Tok::Close => break,
                Tok::Open(_) | Tok::Neg => {
                    self.pos += 1;
                    let neg = t == Tok::Neg;
                    let group_field = match (neg, t) {
                        // The lexer saw `-(` or `-field:(`: the parenthesis is next.
                        (true, _) => match self.tokens.get(self.pos).cloned() {
                            Some(Tok::Open(field)) => {
                                self.pos += 1;
                                field
                            }
                            _ => return Err(bad("“-” must stand before a word or “(”".into())),
                        },
                        (false, Tok::Open(field)) => field,
                        (false, _) => None,
                    };
                    self.depth += 1;
                    if self.depth > MAX_DEPTH {
                        return Err(bad("too many nested parentheses".into()));
                    }
                    let around = self.fields.last().cloned().flatten();
                    self.fields.push(group_field.or(around));
                    let inner = self.or();
                    self.fields.pop();
                    let inner = inner?.ok_or_else(|| bad("empty parentheses".into()))?;
                    self.depth -= 1;
                    if self.tokens.get(self.pos) != Some(&Tok::Close) {
                        return Err(bad("a parenthesis is not closed".into()));
                    }
                    self.pos += 1;
                    all.push(if neg { Query::Not(Box::new(inner)) } else { inner });
                }
                Tok::Term { neg, field, value, quoted } => {
                    self.pos += 1;
                    let field = field.or_else(|| self.fields.last().cloned().flatten());
                    match term(field.as_deref(), &value, quoted)? {
                        Some(q) => all.push(if neg { Query::Not(Box::new(q)) } else { q }),
                        None => self.left_out = true,
                    }
                }
            }
        }
        Ok(match all.len() {
            0 => None,
            1 => all.pop(),
            _ => Some(Query::And(all)),
        })
    }
}

/// The query a term asks; `None` for text of no letter or digit (a `-`, `&` or `—` pasted
/// between words), which holds no word to look for and is left out, as search engines leave it.
/// Text ending in `*` looks for words that start with its last word.
fn term(field: Option<&str>, value: &str, quoted: bool) -> Result<Option<Query>, Error> {
    let text_field =
        matches!(field, None | Some("from" | "to" | "cc" | "subject" | "body" | "filename" | "attachment"));
    let (value, prefix) = match value.strip_suffix('*') {
        Some(start) if text_field => (start.trim_end_matches('*'), true),
        _ => (value, false),
    };
    let letters = value.chars().filter(|c| c.is_alphanumeric()).count();
    if text_field && letters == 0 {
        return Ok(None);
    }
    if prefix && letters < MIN_PREFIX_LETTERS {
        return Err(bad(format!("“{value}*”: a word's start needs {MIN_PREFIX_LETTERS} letters or digits at least")));
    }
    let text = |f: Option<TextField>| Query::Text { field: f, text: value.to_string(), phrase: quoted, prefix };
    Ok(Some(match field {
        None => text(None),
        Some("from") => text(Some(TextField::From)),
        Some("to") => text(Some(TextField::To)),
        Some("cc") => text(Some(TextField::Cc)),
        Some("subject") => text(Some(TextField::Subject)),
        Some("body") => text(Some(TextField::Body)),
        Some("filename") => text(Some(TextField::Filename)),
        Some("attachment") => text(Some(TextField::Attachment)),
        Some("message-id" | "msgid") => Query::MessageId(crate::ids::strip_angles(value).to_string()),
        Some("has") if value.eq_ignore_ascii_case("attachment") => Query::HasAttachment,
        Some("has") => return Err(bad(format!("has:{value} is not known; has:attachment is"))),
        Some("before") => Query::Date { from: None, to: Some(day_start(value)?) },
        Some("after") => Query::Date { from: Some(day_start(value)?), to: None },
        Some("folder") => Query::Folder(value.to_string()),
        Some("label") => Query::Label(value.to_string()),
        Some("list") => Query::List(crate::ids::strip_angles(value).to_string()),
        Some("larger") => Query::Size { min: Some(size(value)?), max: None },
        Some("smaller") => Query::Size { min: None, max: Some(size(value)?) },
        Some(other) => return Err(bad(format!("{other}: is not a known field"))),
    }))
}

/// `2024`, `2024-03`, `2024-03-31` (also with `/`) → the first second of that period, UTC.
fn day_start(v: &str) -> Result<i64, Error> {
    let parts: Vec<&str> = v.split(['-', '/']).collect();
    let num = |s: &str| s.parse::<i64>().ok();
    let (y, m, d) = match parts.as_slice() {
        [y] => (num(y), Some(1), Some(1)),
        [y, m] => (num(y), num(m), Some(1)),
        [y, m, d] => (num(y), num(m), num(d)),
        _ => (None, None, None),
    };
    match (y, m, d) {
        (Some(y), Some(m), Some(d))
            if (1..=9999).contains(&y)
                && crate::dates::days_in_month(y, m).is_some_and(|days| (1..=days).contains(&d)) =>
        {
            Ok(crate::dates::days_from_civil(y, m, d) * 86_400)
        }
        _ => Err(bad(format!("“{v}” is not a date like 2024-03-31"))),
    }
}

fn size(v: &str) -> Result<u64, Error> {
    crate::config::parse_size(v).map(|n| n as u64).ok_or_else(|| bad(format!("“{v}” is not a size like 100K or 2M")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(field: Option<TextField>, text: &str, phrase: bool) -> Query {
        Query::Text { field, text: text.into(), phrase, prefix: false }
    }

    fn starts(field: Option<TextField>, text: &str, phrase: bool) -> Query {
        Query::Text { field, text: text.into(), phrase, prefix: true }
    }

    #[test]
    fn operators() {
        let cases = [
            ("", Query::All),
            ("hello", t(None, "hello", false)),
            (
                "from:alice subject:\"build fails\"",
                Query::And(vec![
                    t(Some(TextField::From), "alice", false),
                    t(Some(TextField::Subject), "build fails", true),
                ]),
            ),
            ("a OR b", Query::Or(vec![t(None, "a", false), t(None, "b", false)])),
            ("-spam", Query::Not(Box::new(t(None, "spam", false)))),
            (
                "-(a OR b) c",
                Query::And(vec![
                    Query::Not(Box::new(Query::Or(vec![t(None, "a", false), t(None, "b", false)]))),
                    t(None, "c", false),
                ]),
            ),
            ("has:attachment", Query::HasAttachment),
            ("message-id:<a@b>", Query::MessageId("a@b".into())),
            ("before:2024-02-01", Query::Date { from: None, to: Some(1_706_745_600) }),
            ("after:1970", Query::Date { from: Some(0), to: None }),
            ("larger:2K", Query::Size { min: Some(2048), max: None }),
            ("smaller:100", Query::Size { min: None, max: Some(100) }),
            ("filename:report.pdf", t(Some(TextField::Filename), "report.pdf", false)),
            ("attachment:\"tax number\"", t(Some(TextField::Attachment), "tax number", true)),
            ("Attachment:DE123", t(Some(TextField::Attachment), "DE123", false)),
            ("会議", t(None, "会議", false)),
            ("re: hello", Query::And(vec![t(None, "re:", false), t(None, "hello", false)])),
            ("http://x.example/a", t(None, "http://x.example/a", false)),
            // Punctuation pasted between words holds no word: left out, not matched.
            ("maven - surefire", Query::And(vec![t(None, "maven", false), t(None, "surefire", false)])),
            ("Q3 & budget —", Query::And(vec![t(None, "Q3", false), t(None, "budget", false)])),
            ("maven \"\" :", t(None, "maven", false)),
            ("   ", Query::All),
            ("from:@ alice", t(None, "alice", false)),
            // AND, NOT in capitals are operators, as OR is; in lower case they are words.
            ("maven AND surefire", Query::And(vec![t(None, "maven", false), t(None, "surefire", false)])),
            (
                "maven NOT surefire",
                Query::And(vec![t(None, "maven", false), Query::Not(Box::new(t(None, "surefire", false)))]),
            ),
            ("NOT (a OR b)", Query::Not(Box::new(Query::Or(vec![t(None, "a", false), t(None, "b", false)])))),
            ("NOT -spam", t(None, "spam", false)),
            ("not and", Query::And(vec![t(None, "not", false), t(None, "and", false)])),
            ("\"NOT\"", t(None, "NOT", true)),
            ("!!! OR report", t(None, "report", false)),
            (
                "from: alice  subject:  \"build fails\"",
                Query::And(vec![
                    t(Some(TextField::From), "alice", false),
                    t(Some(TextField::Subject), "build fails", true),
                ]),
            ),
            ("after:2024-02-29", Query::Date { from: Some(1_709_164_800), to: None }),
            ("report OR &", t(None, "report", false)),
            // A `*` after a word: words starting with it.
            ("invoic*", starts(None, "invoic", false)),
            (
                "subject:rep** Q3",
                Query::And(vec![starts(Some(TextField::Subject), "rep", false), t(None, "Q3", false)]),
            ),
            ("\"nightly link*\"", starts(None, "nightly link", true)),
            ("e-m*", starts(None, "e-m", false)),
            ("会議*", starts(None, "会議", false)),
            ("folder:Arch*", Query::Folder("Arch*".into())),
            ("report *", t(None, "report", false)),
            ("in*voice", t(None, "in*voice", false)),
            // `field:(…)`: the field for each term inside, as Gmail reads it.
            ("subject:(hasen)", t(Some(TextField::Subject), "hasen", false)),
            (
                "subject:(dinner \"at eight\")",
                Query::And(vec![
                    t(Some(TextField::Subject), "dinner", false),
                    t(Some(TextField::Subject), "at eight", true),
                ]),
            ),
            (
                "-from:(alice OR bob) report",
                Query::And(vec![
                    Query::Not(Box::new(Query::Or(vec![
                        t(Some(TextField::From), "alice", false),
                        t(Some(TextField::From), "bob", false),
                    ]))),
                    t(None, "report", false),
                ]),
            ),
            (
                "NOT subject:(a (b OR to:c))",
                Query::Not(Box::new(Query::And(vec![
                    t(Some(TextField::Subject), "a", false),
                    Query::Or(vec![t(Some(TextField::Subject), "b", false), t(Some(TextField::To), "c", false)]),
                ]))),
            ),
            ("label:(Work OR Home)", Query::Or(vec![Query::Label("Work".into()), Query::Label("Home".into())])),
            (
                "from: (alice OR bob)",
                Query::Or(vec![t(Some(TextField::From), "alice", false), t(Some(TextField::From), "bob", false)]),
            ),
            // A word that names no field before a parenthesis stays a word.
            ("re: (hello)", Query::And(vec![t(None, "re:", false), t(None, "hello", false)])),
        ];
        for (input, want) in cases {
            assert_eq!(parse(input).expect(input), want, "{input}");
        }
    }

    #[test]
    fn bad_queries_say_why() {
        for input in [
            "\"open",
            "(a",
            "a)",
            "before:yesterday",
            "larger:huge",
            "has:wings",
            "OR a",
            "a OR",
            "()",
            "after:2024-02-31",
            "before:2023-02-29",
            "after:2024-13",
            // Nothing to search for, typed: not every message.
            "- --",
            "&",
            "\u{fffd}",
            "*",
            "-!!!",
            // A prefix of one letter.
            "e*",
            "from:a*",
            // Only operators: nothing to search for either.
            "NOT",
            "AND",
            "NOT AND",
            "AND AND",
            "NOT NOT",
            "report NOT",
            "(report NOT)",
            "subject:()",
            "has:(wings)",
        ] {
            let err = parse(input).expect_err(input);
            assert!(matches!(err, Error::BadQuery(_)), "{input}: {err:?}");
        }
        assert!(parse(&"x ".repeat(600)).is_err());
    }
}
