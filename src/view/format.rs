//! How the pages write the small things every view shows: a subject, a size, a value in a query
//! string. (Dates are written by [`crate::dates`], the one place for date layouts.)

/// A subject as the pages show it: an empty or missing one says so.
pub(crate) fn shown_subject(subject: Option<&str>) -> String {
    subject.filter(|s| !s.is_empty()).unwrap_or("(no subject)").to_string()
}

/// A size in bytes for people: `512 B`, `1.5 KB`, `20 MB` (units of 1024).
pub(crate) fn human_size(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if v < 10.0 {
        format!("{v:.1} {}", UNITS[unit])
    } else {
        format!("{v:.0} {}", UNITS[unit])
    }
}

/// What a reader is told could not be read of a message: its own notices, and that only its first
/// bytes were, when it is longer than the server reads of one message.
pub(crate) fn notices(msg: &crate::model::Message) -> Vec<String> {
    let mut out = msg.origin.notices.clone();
    if msg.too_deep {
        out.push(format!(
            "This message nests parts or messages more than {} levels deep: what lies deeper is shown as a part \
             of raw data. The raw source has all of it.",
            crate::limits::MAX_DEPTH
        ));
    }
    if let Some(whole) = msg.origin.cut_from {
        out.push(format!(
            "This message is {}, more than this server reads of one message (--max-message): only its first {} \
             are shown and searched. Its file still holds all of it.",
            human_size(whole),
            human_size(msg.given().len() as u64)
        ));
    }
    out
}

/// A value for a query string (`?q=…`, `&folder=…`), every byte but letters and digits encoded.
pub(crate) fn query_value(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_are_shown_or_said_to_be_missing() {
        for (subject, shown) in
            [(Some("Hello"), "Hello"), (Some(""), "(no subject)"), (None, "(no subject)"), (Some(" "), " ")]
        {
            assert_eq!(shown_subject(subject), shown, "{subject:?}");
        }
    }

    #[test]
    fn sizes_are_shown_in_binary_units() {
        for (n, shown) in [
            (0, "0 B"),
            (1023, "1023 B"),
            (1024, "1.0 KB"),
            (1536, "1.5 KB"),
            (10 * 1024, "10 KB"),
            (5 * 1024 * 1024, "5.0 MB"),
            (3 << 30, "3.0 GB"),
            (2048 << 40, "2048 TB"),
            (u64::MAX, "16777216 TB"),
        ] {
            assert_eq!(human_size(n), shown, "{n}");
        }
    }

    #[test]
    fn query_values_encode_all_but_letters_and_digits() {
        for (value, encoded) in [("abc123", "abc123"), ("a b&c=d", "a%20b%26c%3Dd"), ("Archiv/2017", "Archiv%2F2017")] {
            assert_eq!(query_value(value), encoded);
        }
        assert_eq!(query_value("é"), "%C3%A9");
    }
}
