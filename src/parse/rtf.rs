//! Rich Text as Outlook keeps it: compressed RTF (MS-OXRTFCP), HTML encapsulated in RTF
//! (MS-OXRTFEX, `\fromhtml1`) taken back out, and any other RTF read as plain text.
//!
//! Every loop here is bounded by its input or by [`MAX_RTF_OUTPUT`]; declared sizes are checked
//! against that limit before anything is allocated.

use crate::limits::MAX_RTF_OUTPUT;
use crate::mapi::codepage;

/// The dictionary every compressed RTF stream starts from (MS-OXRTFCP §3.1.1.1.1).
const PREFIX: &[u8] = b"{\\rtf1\\ansi\\mac\\deff0\\deftab720{\\fonttbl;}{\\f0\\fnil \\froman \\fswiss \\fmodern \\fscript \\fdecor MS Sans SerifSymbolArialTimes New RomanCourier{\\colortbl\\red0\\green0\\blue0\r\n\\par \\pard\\plain\\f0\\fs20\\b\\i\\u\\tab\\tx";

const COMPRESSED: u32 = 0x7546_5a4c; // "LZFu"
const UNCOMPRESSED: u32 = 0x414c_454d; // "MELA"

/// What came out of a compressed RTF stream.
#[derive(Debug, PartialEq)]
pub(super) struct Decompressed {
    pub rtf: Vec<u8>,
    /// The stream was short, its CRC did not match, or it claimed more than it held.
    pub damaged: bool,
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// The CRC of MS-OXRTFCP §3.1.3.2: the CRC-32 table, started at 0, not inverted.
fn crc(bytes: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (n, slot) in table.iter_mut().enumerate() {
        let mut c = n as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
        }
        *slot = c;
    }
    bytes.iter().fold(0u32, |c, &b| table[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8))
}

/// Decompresses an RTF stream (MS-OXRTFCP); `None` when it is no compressed RTF at all.
pub(super) fn decompress(data: &[u8]) -> Option<Decompressed> {
    let comp_size = le32(data, 0)? as usize;
    let raw_size = le32(data, 4)? as usize;
    let kind = le32(data, 8)?;
    let want_crc = le32(data, 12)?;
    // compSize counts the bytes after itself: the 12 header bytes that follow, then the data.
    let end = comp_size.saturating_add(4).min(data.len());
    let body = data.get(16..end).unwrap_or(&[]);
    let mut damaged = comp_size.saturating_add(4) > data.len();
    let limit = raw_size.min(MAX_RTF_OUTPUT);
    damaged |= raw_size > MAX_RTF_OUTPUT;
    match kind {
        UNCOMPRESSED => {
            let rtf = body.get(..limit.min(body.len())).unwrap_or(&[]).to_vec();
            return Some(Decompressed { damaged: damaged || rtf.len() < raw_size, rtf });
        }
        COMPRESSED => {}
        _ => return None,
    }
    damaged |= crc(body) != want_crc;
    let mut dict = [0u8; 4096];
    dict[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut write = PREFIX.len();
    // The output never exceeds what the header declares (itself capped), so a stream that claims
    // little cannot make much.
    let mut out = Vec::with_capacity(limit.min(body.len().saturating_mul(8)));
    let mut pos = 0;
    let mut finished = false;
    'outer: while pos < body.len() {
        let control = body[pos];
        pos += 1;
        for bit in 0..8 {
            if out.len() >= limit {
                break 'outer;
            }
            if control & (1 << bit) == 0 {
                let Some(&b) = body.get(pos) else { break 'outer };
                pos += 1;
                out.push(b);
                dict[write] = b;
                write = (write + 1) % 4096;
            } else {
                let Some(pair) = body.get(pos..pos + 2) else { break 'outer };
                pos += 2;
                let token = u16::from_be_bytes([pair[0], pair[1]]) as usize;
                let offset = token >> 4;
                let length = (token & 0xf) + 2;
                if offset == write {
                    finished = true;
                    break 'outer;
                }
                for i in 0..length {
                    if out.len() >= limit {
                        break 'outer;
                    }
                    let b = dict[(offset + i) % 4096];
                    out.push(b);
                    dict[write] = b;
                    write = (write + 1) % 4096;
                }
            }
        }
    }
    damaged |= !finished && out.len() < raw_size;
    Some(Decompressed { rtf: out, damaged })
}

/// What an RTF document holds for a reader.
#[derive(Debug, PartialEq)]
pub(super) enum Content {
    /// HTML taken back out of `\fromhtml1` RTF (MS-OXRTFEX).
    Html(String),
    /// The text of any other RTF.
    Text(String),
}

/// Destinations whose text is not the document's (tables of fonts and colours, pictures, fields'
/// instructions, metadata).
const SKIPPED: &[&str] = &[
    "fonttbl",
    "colortbl",
    "stylesheet",
    "info",
    "pict",
    "object",
    "header",
    "footer",
    "headerl",
    "headerr",
    "footerl",
    "footerr",
    "fldinst",
    "listtable",
    "listoverridetable",
    "rsidtbl",
    "generator",
    "xmlnstbl",
    "themedata",
    "colorschememapping",
    "latentstyles",
    "datastore",
    "filetbl",
    "revtbl",
    "pgdsctbl",
    "mmathPr",
];

#[derive(Clone, Copy)]
struct State {
    /// Text here is not output (a skipped or unknown `\*` destination).
    skip: bool,
    /// `\htmlrtf`: RTF that only stands in for the HTML, not output when de-encapsulating.
    htmlrtf: bool,
    /// Inside `{\*\htmltag…}`: HTML to output as is.
    htmltag: bool,
    /// `\ucN`: characters after `\uN` that stand in for it.
    uc: usize,
}

/// Reads an RTF document: the HTML it encapsulates, else its text.
pub(super) fn read(rtf: &[u8]) -> Content {
    let fromhtml = rtf.get(..rtf.len().min(1024)).is_some_and(|h| h.windows(10).any(|w| w == b"\\fromhtml1"));
    let mut reader = Reader { out: String::new(), pending: Vec::new(), cp: None };
    let mut stack: Vec<State> = Vec::new();
    let mut st = State { skip: false, htmlrtf: false, htmltag: false, uc: 1 };
    // Characters still to drop after a `\uN`.
    let mut skip_chars = 0usize;
    // Just after `{` (and `\*`): the next control word names the group's destination.
    let mut group_start = false;
    let mut starred = false;
    let mut i = 0;
    let shown = |st: &State| !st.skip && (!fromhtml || st.htmltag || !st.htmlrtf);
    while i < rtf.len() && reader.out.len() < MAX_RTF_OUTPUT {
        let c = rtf[i];
        match c {
            b'{' => {
                // Nesting deeper than the limit is read as flat text, not remembered.
                if stack.len() < 4096 {
                    stack.push(st);
                }
                group_start = true;
                starred = false;
                skip_chars = 0;
                i += 1;
            }
            b'}' => {
                reader.flush();
                if let Some(prev) = stack.pop() {
                    st = prev;
                }
                group_start = false;
                skip_chars = 0;
                i += 1;
            }
            b'\\' => {
                let Some(&next) = rtf.get(i + 1) else { break };
                if next.is_ascii_alphabetic() {
                    let start = i + 1;
                    let mut j = start;
                    while j < rtf.len() && rtf[j].is_ascii_alphabetic() && j - start < 32 {
                        j += 1;
                    }
                    let word = std::str::from_utf8(&rtf[start..j]).unwrap_or("");
                    let num_start = j;
                    if j < rtf.len() && rtf[j] == b'-' {
                        j += 1;
                    }
                    while j < rtf.len() && rtf[j].is_ascii_digit() && j - num_start < 10 {
                        j += 1;
                    }
                    let param: Option<i64> = std::str::from_utf8(&rtf[num_start..j]).ok().and_then(|s| s.parse().ok());
                    if j < rtf.len() && rtf[j] == b' ' {
                        j += 1;
                    }
                    i = j;
                    let first = group_start;
                    group_start = false;
                    if first && (starred || SKIPPED.contains(&word)) {
                        if fromhtml && starred && word == "htmltag" {
                            st.htmltag = true;
                            st.skip = false;
                        } else {
                            st.skip = true;
                        }
                        continue;
                    }
                    match word {
                        "htmlrtf" => st.htmlrtf = param != Some(0),
                        "ansicpg" => reader.cp = param.and_then(|p| u32::try_from(p).ok()),
                        "uc" => st.uc = param.and_then(|p| usize::try_from(p).ok()).unwrap_or(1).min(8),
                        "u" if shown(&st) => {
                            reader.flush();
                            let n = param.unwrap_or(0);
                            let n = if n < 0 { n + 65536 } else { n };
                            reader.push(char::from_u32(u32::try_from(n).unwrap_or(0xfffd)).unwrap_or('\u{fffd}'));
                            skip_chars = st.uc;
                        }
                        "par" | "line" | "row" if shown(&st) => reader.push_str("\r\n"),
                        "tab" | "cell" if shown(&st) => reader.push('\t'),
                        "emdash" if shown(&st) => reader.push('—'),
                        "endash" if shown(&st) => reader.push('–'),
                        "bullet" if shown(&st) => reader.push('•'),
                        "lquote" if shown(&st) => reader.push('‘'),
                        "rquote" if shown(&st) => reader.push('’'),
                        "ldblquote" if shown(&st) => reader.push('“'),
                        "rdblquote" if shown(&st) => reader.push('”'),
                        "bin" => {
                            // Binary data of the stated length follows.
                            let n = param.and_then(|p| usize::try_from(p).ok()).unwrap_or(0);
                            i = i.saturating_add(n).min(rtf.len());
                        }
                        _ => {}
                    }
                } else {
                    i += 2;
                    group_start = false;
                    match next {
                        b'*' => {
                            starred = true;
                            group_start = true;
                        }
                        b'\'' => {
                            let hex = rtf.get(i..i + 2).and_then(|h| std::str::from_utf8(h).ok());
                            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                                i += 2;
                                if skip_chars > 0 {
                                    skip_chars -= 1;
                                } else if shown(&st) {
                                    reader.pending.push(b);
                                }
                            }
                        }
                        b'~' if shown(&st) => reader.push('\u{a0}'),
                        b'_' if shown(&st) => reader.push('\u{2011}'),
                        b'\\' | b'{' | b'}' if shown(&st) => {
                            if skip_chars > 0 {
                                skip_chars -= 1;
                            } else {
                                reader.push(char::from(next));
                            }
                        }
                        b'\r' | b'\n' if shown(&st) => reader.push_str("\r\n"),
                        _ => {}
                    }
                }
            }
            b'\r' | b'\n' => i += 1,
            _ => {
                group_start = false;
                if skip_chars > 0 {
                    skip_chars -= 1;
                } else if shown(&st) {
                    reader.pending.push(c);
                }
                i += 1;
            }
        }
    }
    reader.flush();
    if fromhtml {
        Content::Html(reader.out)
    } else {
        Content::Text(reader.out.trim().to_string())
    }
}

/// Output being built: bytes in the document's code page wait in `pending` until a character of
/// another kind comes, so that double-byte sequences decode together.
struct Reader {
    out: String,
    pending: Vec<u8>,
    cp: Option<u32>,
}

impl Reader {
    fn flush(&mut self) {
        if !self.pending.is_empty() {
            self.out.push_str(&codepage::decode(&self.pending, self.cp));
            self.pending.clear();
        }
    }

    fn push(&mut self, c: char) {
        self.flush();
        self.out.push(c);
    }

    fn push_str(&mut self, s: &str) {
        self.flush();
        self.out.push_str(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MS-OXRTFCP §4.1: the compressed form of `{\rtf1\ansi\ansicpg1252\pard hello world}\r\n`.
    const SPEC_COMPRESSED: &[u8] = &[
        0x2d, 0x00, 0x00, 0x00, 0x2b, 0x00, 0x00, 0x00, 0x4c, 0x5a, 0x46, 0x75, 0xf1, 0xc5, 0xc7, 0xa7, 0x03, 0x00,
        0x0a, 0x00, 0x72, 0x63, 0x70, 0x67, 0x31, 0x32, 0x35, 0x42, 0x32, 0x0a, 0xf3, 0x20, 0x68, 0x65, 0x6c, 0x09,
        0x00, 0x20, 0x62, 0x77, 0x05, 0xb0, 0x6c, 0x64, 0x7d, 0x0a, 0x80, 0x0f, 0xa0,
    ];

    #[test]
    fn decompresses_the_specification_example() {
        let d = decompress(SPEC_COMPRESSED).expect("compressed RTF");
        assert_eq!(d.rtf, b"{\\rtf1\\ansi\\ansicpg1252\\pard hello world}\r\n");
        assert!(!d.damaged);
    }

    #[test]
    fn damaged_streams_are_bounded_and_flagged() {
        let cases: &[(&str, Vec<u8>)] = &[
            ("truncated", SPEC_COMPRESSED[..30].to_vec()),
            ("bad crc", {
                let mut v = SPEC_COMPRESSED.to_vec();
                v[12] ^= 1;
                v
            }),
            ("huge declared size", {
                let mut v = SPEC_COMPRESSED.to_vec();
                v[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
                v
            }),
        ];
        for (name, input) in cases {
            let d = decompress(input).expect(name);
            assert!(d.damaged, "{name}");
            assert!(d.rtf.len() <= MAX_RTF_OUTPUT, "{name}");
        }
        // Back-references only, over and over: the output stops at the declared size.
        let mut loop_input = vec![0u8; 16];
        loop_input[4..8].copy_from_slice(&1000u32.to_le_bytes());
        loop_input[8..12].copy_from_slice(&COMPRESSED.to_le_bytes());
        for _ in 0..10_000 {
            loop_input
                .extend_from_slice(&[0xff, 0, 0x0f, 0, 0x0f, 0, 0x0f, 0, 0x0f, 0, 0x0f, 0, 0x0f, 0, 0x0f, 0, 0x0f]);
        }
        let len = loop_input.len() as u32 - 4;
        loop_input[0..4].copy_from_slice(&len.to_le_bytes());
        assert_eq!(decompress(&loop_input).expect("compressed").rtf.len(), 1000);
        assert_eq!(decompress(b"short"), None);
        assert_eq!(decompress(b"\x10\0\0\0\x10\0\0\0XXXX\0\0\0\0"), None);
    }

    #[test]
    fn rtf_reads_as_html_or_text() {
        let cases: &[(&str, Content)] = &[
            (
                r#"{\rtf1\ansi\ansicpg1252\fromhtml1 \deff0{\fonttbl{\f0\fswiss Arial;}}{\*\htmltag19 <html>}{\*\htmltag34 <body>}\htmlrtf {\htmlrtf0 Hi \'e9t\'e9{\*\htmltag84 &nbsp;}\htmlrtf \~\htmlrtf0 there\par}{\*\htmltag <img src="cid:a@b">}{\*\htmltag35 </body></html>}}"#,
                Content::Html("<html><body>Hi été&nbsp;there\r\n<img src=\"cid:a@b\"></body></html>".into()),
            ),
            (
                r"{\rtf1\ansi\ansicpg1251\deff0{\fonttbl{\f0 Arial;}}{\colortbl;\red0\green0\blue0;}\pard \'cf\'f0\'e8\'e2\'e5\'f2\par second\tab line {\*\generator x;}\u8364?\par}",
                Content::Text("Привет\r\nsecond\tline €".into()),
            ),
            (r"{\rtf1 a\{b\}c\\d}", Content::Text(r"a{b}c\d".into())),
            (r"{\rtf1 {\pict 0123abcd}text{\*\unknown hidden}}", Content::Text("text".into())),
            (r"{\rtf1\uc2 \u20320\'c4\'e3x}", Content::Text("你x".into())),
            (r"{\rtf1 unterminated {{{", Content::Text("unterminated".into())),
        ];
        for (input, want) in cases {
            assert_eq!(read(input.as_bytes()), *want, "{input}");
        }
    }

    #[test]
    fn deep_nesting_stays_bounded() {
        let deep = format!("{{\\rtf1 {}x{}}}", "{".repeat(100_000), "}".repeat(100_000));
        assert_eq!(read(deep.as_bytes()), Content::Text("x".into()));
    }
}
