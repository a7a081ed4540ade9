//! Windows code page numbers (as Outlook properties and RTF `\ansicpg` give them) to encodings. A
//! leaf: it imports nothing of the crate, so that the MAPI properties ([`crate::mapi`]) can decode
//! through it from any stage.

use encoding_rs::Encoding;

/// The encoding a Windows code page number stands for; `None` when it names none we know.
pub(crate) fn encoding(cp: u32) -> Option<&'static Encoding> {
    let label: &[u8] = match cp {
        437 | 850 | 1252 | 20127 | 28591 => b"windows-1252",
        866 => b"ibm866",
        874 => b"windows-874",
        932 => b"shift_jis",
        936 | 54936 => b"gb18030",
        949 => b"euc-kr",
        950 => b"big5",
        1200 => b"utf-16le",
        1201 => b"utf-16be",
        1250..=1258 => return Encoding::for_label(format!("windows-{cp}").as_bytes()),
        10000 => b"macintosh",
        10007 => b"x-mac-cyrillic",
        20866 => b"koi8-r",
        21866 => b"koi8-u",
        28592..=28606 => return Encoding::for_label(format!("iso-8859-{}", cp - 28590).as_bytes()),
        50220..=50222 => b"iso-2022-jp",
        51932 => b"euc-jp",
        51949 => b"euc-kr",
        65001 => b"utf-8",
        _ => return None,
    };
    Encoding::for_label(label)
}

/// `bytes` in code page `cp` (Windows-1252 when it names none we know), as text.
pub(crate) fn decode(bytes: &[u8], cp: Option<u32>) -> String {
    let enc = cp.and_then(encoding).unwrap_or(encoding_rs::WINDOWS_1252);
    enc.decode_without_bom_handling(bytes).0.into_owned()
}

/// `bytes` as UTF-16 little-endian (Outlook's Unicode strings), an odd last byte dropped.
pub(crate) fn utf16le(bytes: &[u8]) -> String {
    let units: Vec<u16> = bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    String::from_utf16_lossy(&units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_pages_name_their_encodings() {
        let cases: &[(u32, Option<&str>)] = &[
            (1252, Some("windows-1252")),
            (1251, Some("windows-1251")),
            (932, Some("Shift_JIS")),
            (936, Some("gb18030")),
            (28605, Some("ISO-8859-15")),
            (65001, Some("UTF-8")),
            (20866, Some("KOI8-R")),
            (12345, None),
        ];
        for (cp, want) in cases {
            assert_eq!(encoding(*cp).map(|e| e.name()), *want, "{cp}");
        }
        assert_eq!(decode(b"\xcf\xf0\xe8", Some(1251)), "При");
    }
}
