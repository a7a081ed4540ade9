//! Dates, the one place they are computed and written: calendar arithmetic for dates kept as
//! seconds since the epoch (Howard Hinnant's algorithms for the proleptic Gregorian calendar), for
//! search ranges and RFC 3339 dates rebuilt from what the index keeps; and every layout a date is
//! written in for someone else: the pages' short and long dates, an overview's months and years,
//! the mbox `From ` line's `asctime`, a PDF's date string and a zip entry's time stamp.

/// Days since 1970-01-01 of a date.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// RFC 3339 for an instant as it was written in a zone `offset_minutes` east of UTC (`Z` for UTC).
pub fn rfc3339(timestamp: i64, offset_minutes: i16) -> String {
    let t = Clock::at(timestamp, offset_minutes);
    let clock = format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", t.year, t.month, t.day, t.hour, t.minute, t.second);
    format!("{clock}{}", zone(offset_minutes, ":"))
}

/// The zone offset, in minutes east of UTC, of an RFC 3339 date (`Z` or `±hh:mm`).
pub fn offset_minutes(rfc3339: &str) -> Option<i16> {
    if rfc3339.ends_with('Z') {
        return Some(0);
    }
    let tail = rfc3339.get(rfc3339.len().checked_sub(6)?..)?;
    let sign = match tail.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let h: i16 = tail.get(1..3)?.parse().ok()?;
    let m: i16 = tail.get(4..6)?.parse().ok()?;
    Some(sign * (h * 60 + m))
}

// Layouts: a date written for each of its readers.

/// An instant as a clock in a zone `offset_minutes` east of UTC showed it.
struct Clock {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    /// Days since 1970-01-01 of that local date.
    days: i64,
}

impl Clock {
    fn at(timestamp: i64, offset_minutes: i16) -> Clock {
        let local = timestamp + i64::from(offset_minutes) * 60;
        let days = local.div_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        let s = local.rem_euclid(86_400);
        Clock { year, month, day, hour: s / 3600, minute: s % 3600 / 60, second: s % 60, days }
    }
}

/// A zone offset: `Z` for UTC, else `+hh{sep}mm` (`-` west of UTC).
fn zone(offset_minutes: i16, sep: &str) -> String {
    if offset_minutes == 0 {
        return "Z".into();
    }
    let sign = if offset_minutes < 0 { '-' } else { '+' };
    let o = offset_minutes.unsigned_abs();
    format!("{sign}{:02}{sep}{:02}", o / 60, o % 60)
}

/// The list's date: `2026-10-01T14:03:00+02:00` → `2026-10-01 14:03` (the writer's wall clock).
pub fn short_date(rfc3339: Option<&str>) -> String {
    match rfc3339 {
        Some(d) => match d.get(..16) {
            Some(head) => head.replacen('T', " ", 1),
            None => d.to_string(),
        },
        None => String::new(),
    }
}

/// A message page's date: `2026-10-01T14:03:00+02:00` → `2026-10-01 14:03:00 +02:00`.
pub fn long_date(rfc3339: &str) -> String {
    match (rfc3339.get(..19), rfc3339.get(19..)) {
        (Some(head), Some(zone)) => format!("{} {}", head.replacen('T', " ", 1), zone.replace('Z', "+00:00")),
        _ => rfc3339.to_string(),
    }
}

/// C's `asctime` layout, in UTC, as an mbox `From ` line has it: `Mon Jan  1 00:00:00 2024`.
pub fn asctime(timestamp: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let t = Clock::at(timestamp, 0);
    let weekday = DAYS[t.days.rem_euclid(7) as usize];
    let month = MONTHS[(t.month - 1).clamp(0, 11) as usize];
    format!("{weekday} {month} {:>2} {:02}:{:02}:{:02} {}", t.day, t.hour, t.minute, t.second, t.year)
}

/// The month of an instant (UTC), numbered `year × 12 + month − 1`: the periods an overview counts
/// messages by.
pub fn month_number(timestamp: i64) -> i64 {
    let t = Clock::at(timestamp, 0);
    t.year * 12 + t.month - 1
}

/// A month (a [`month_number`]) as an overview and the search language write it: `2024-03`.
pub fn month_label(month: i64) -> String {
    format!("{:04}-{:02}", month.div_euclid(12), month.rem_euclid(12) + 1)
}

/// A year as an overview and the search language write it: `2024`.
pub fn year_label(year: i64) -> String {
    format!("{year:04}")
}

/// A PDF date, `D:YYYYMMDDHHmmSS+HH'mm'` (ISO 32000 §7.9.4), in the zone the message was written in.
pub fn pdf_date(timestamp: i64, zone_minutes: i16) -> String {
    let t = Clock::at(timestamp, zone_minutes);
    let clock = format!("D:{:04}{:02}{:02}{:02}{:02}{:02}", t.year, t.month, t.day, t.hour, t.minute, t.second);
    match zone_minutes {
        0 => format!("{clock}Z"),
        _ => format!("{clock}{}'", zone(zone_minutes, "'")),
    }
}

/// A zip entry's time stamp (MS-DOS: local time, no zone, two-second steps, 1980–2107) for a
/// message date, in the zone it was written in; `None` outside those years.
pub fn zip_time(timestamp: i64, zone_minutes: i16) -> Option<zip::DateTime> {
    let t = Clock::at(timestamp, zone_minutes);
    zip::DateTime::from_date_and_time(
        u16::try_from(t.year).ok()?,
        u8::try_from(t.month).ok()?,
        u8::try_from(t.day).ok()?,
        u8::try_from(t.hour).ok()?,
        u8::try_from(t.minute).ok()?,
        u8::try_from(t.second).ok()?,
    )
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_show_short_and_long_dates() {
        for (rfc3339, short, long) in [
            ("2026-10-01T14:03:00+02:00", "2026-10-01 14:03", "2026-10-01 14:03:00 +02:00"),
            ("2026-10-01T14:03:00Z", "2026-10-01 14:03", "2026-10-01 14:03:00 +00:00"),
            ("1999-12-31T23:59:59-05:30", "1999-12-31 23:59", "1999-12-31 23:59:59 -05:30"),
            ("2026-10-01", "2026-10-01", "2026-10-01"),
            ("", "", ""),
            ("2026-10-01T14:03:00é", "2026-10-01 14:03", "2026-10-01 14:03:00 é"),
            ("2026-10-01T14:é", "2026-10-01 14:é", "2026-10-01T14:é"),
            ("2026-10-01T14:0é", "2026-10-01T14:0é", "2026-10-01T14:0é"),
        ] {
            assert_eq!(short_date(Some(rfc3339)), short, "{rfc3339}");
            assert_eq!(long_date(rfc3339), long, "{rfc3339}");
        }
        assert_eq!(short_date(None), "");
    }

    #[test]
    fn overviews_count_by_month_and_name_months_and_years() {
        for (ts, month, label) in [
            (0, 1970 * 12, "1970-01"),
            (-1, 1970 * 12 - 1, "1969-12"),
            (1_709_251_200, 2024 * 12 + 2, "2024-03"),
            (1_709_251_199, 2024 * 12 + 1, "2024-02"),
            (1_735_689_599, 2024 * 12 + 11, "2024-12"),
        ] {
            assert_eq!(month_number(ts), month, "{ts}");
            assert_eq!(month_label(month), label, "{ts}");
        }
        assert_eq!(
            (year_label(2024), year_label(7), year_label(12_345)),
            ("2024".into(), "0007".into(), "12345".into())
        );
    }

    #[test]
    fn mbox_from_lines_have_asctime_dates() {
        for (ts, want) in [
            (0, "Thu Jan  1 00:00:00 1970"),
            (1_700_000_000, "Tue Nov 14 22:13:20 2023"),
            (-1, "Wed Dec 31 23:59:59 1969"),
            (1_709_164_800, "Thu Feb 29 00:00:00 2024"),
        ] {
            assert_eq!(asctime(ts), want, "{ts}");
        }
    }

    #[test]
    fn pdfs_have_pdf_dates() {
        for (ts, zone, want) in [
            (0, 0, "D:19700101000000Z"),
            (3600, -90, "D:19691231233000-01'30'"),
            (0, 120, "D:19700101020000+02'00'"),
            (1_790_838_000, 120, "D:20261001090000+02'00'"),
        ] {
            assert_eq!(pdf_date(ts, zone), want, "{ts} {zone}");
        }
    }

    #[test]
    fn zip_entries_have_local_times_in_their_years() {
        let fields = |t: zip::DateTime| (t.year(), t.month(), t.day(), t.hour(), t.minute(), t.second());
        for (ts, zone, want) in [
            (1_790_838_000, 120, Some((2026, 10, 1, 9, 0, 0))),
            (1_790_838_000, 0, Some((2026, 10, 1, 7, 0, 0))),
            (315_532_800, 0, Some((1980, 1, 1, 0, 0, 0))),
            (315_532_800, -60, None),
            (0, 0, None),
            (i64::from(u32::MAX) * 2, 0, None),
        ] {
            assert_eq!(zip_time(ts, zone).map(fields), want, "{ts} {zone}");
        }
    }

    #[test]
    fn round_trips() {
        for (ts, off, want) in [
            (0, 0, "1970-01-01T00:00:00Z"),
            (1_790_838_000, 120, "2026-10-01T09:00:00+02:00"),
            (951_782_400, -300, "2000-02-28T19:00:00-05:00"),
            (1_709_164_800, 330, "2024-02-29T05:30:00+05:30"),
        ] {
            assert_eq!(rfc3339(ts, off), want);
            assert_eq!(offset_minutes(want), Some(off));
        }
        assert_eq!(days_from_civil(2024, 2, 29), 19_782);
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }
}

// Dates as Internet messages write them (RFC 5322 §3.3), and as Windows keeps them, for the
// messages made of files in other formats.

/// An RFC 5322 date-time in UTC (`Thu, 01 Jan 1970 00:00:00 +0000`) for seconds since the epoch.
pub fn rfc5322_utc(t: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let days = t.div_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let s = t.rem_euclid(86_400);
    let weekday = DAYS[days.rem_euclid(7) as usize];
    let month = MONTHS[((m - 1).clamp(0, 11)) as usize];
    format!("{weekday}, {d:02} {month} {y:04} {:02}:{:02}:{:02} +0000", s / 3600, s % 3600 / 60, s % 60)
}

/// A `Date:` field's value (RFC 5322 §3.3, and the obsolete forms of §4.3 that mail still
/// carries: two- and three-digit years, zone names, military zones) as the instant it names and
/// the zone it was written in, in minutes east of UTC. `None` for a value that names no real
/// instant (the 32nd of February, 25:61, a year of five digits), where a date made up by rolling
/// the fields over would put the message in the wrong place of every list.
///
/// mail-parser reads the fields; this checks them. It is given the value alone, never the message:
/// reading a one- or two-letter zone, mail-parser takes the two bytes after its first letter
/// whatever they are, which in a message are the line's end and the next field's first letter.
pub fn parse_mail_date(value: &str) -> Option<(i64, i16)> {
    // mail-parser keeps the first four digits of a longer number as the year.
    let mut run = 0;
    for b in value.bytes() {
        run = if b.is_ascii_digit() { run + 1 } else { 0 };
        if run > 4 {
            return None;
        }
    }
    let mended = zone_mended(value);
    let value = mended.as_deref().unwrap_or(value);
    let d = mail_parser::DateTime::parse_rfc822(value)
        .or_else(|| mail_parser::DateTime::parse_rfc822(&completed(value)?))?;
    // RFC 5322 §4.3: a year of three digits is counted from 1900 (two digits are mail-parser's).
    let year = match d.year {
        100..=999 => i64::from(d.year) + 1900,
        y => i64::from(y),
    };
    let (month, day) = (i64::from(d.month), i64::from(d.day));
    let days_in_month = days_in_month(year, month)?;
    // A leap second (60) is the next minute's first.
    if !(1..=days_in_month).contains(&day) || d.hour > 23 || d.minute > 59 || d.second > 60 || year < 1000 {
        return None;
    }
    let offset = (i16::from(d.tz_hour) * 60 + i16::from(d.tz_minute)) * if d.tz_before_gmt { -1 } else { 1 };
    let local = days_from_civil(year, month, day) * 86_400
        + i64::from(d.hour) * 3600
        + i64::from(d.minute) * 60
        + i64::from(d.second);
    Some((local - i64::from(offset) * 60, offset))
}

/// How many days a month of a year has (the proleptic Gregorian calendar); `None` for a month
/// that is not one.
pub fn days_in_month(year: i64, month: i64) -> Option<i64> {
    Some(match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => return None,
    })
}

/// `value` with its zone (the word after the time) written as RFC 5322 writes one, where an old
/// mailer did not; `None` when it is so written already, as nearly every zone is. A zone name in
/// lower or mixed case (`cst`) is upper-cased: RFC 5234's literals, so RFC 5322's obs-zone names,
/// are case-insensitive, and mail-parser knows them in capitals only. A numeric offset of three
/// digits (`-600`) is an `hhmm` that lost its leading zero, as Python's `email` reads it. Any other
/// offset that is not four digits, or whose hours pass 23 or minutes 59, is `-0000` (RFC 5322
/// §3.3: no zone known), never an offset made up from its digits (mail-parser takes `-6000` for
/// `-1200`).
fn zone_mended(value: &str) -> Option<String> {
    let mut words = value.split_ascii_whitespace();
    words.find(|w| w.contains(':') && w.bytes().all(|b| b.is_ascii_digit() || b == b':'))?;
    let zone = words.next()?;
    let mended = match zone.as_bytes() {
        [b'+' | b'-', digits @ ..] if digits.iter().all(u8::is_ascii_digit) => match digits {
            [h1, h2, m1, _] if (*h1, *h2) <= (b'2', b'3') && *m1 <= b'5' => return None,
            [_, tens, _] if *tens <= b'5' => format!("{}0{}", &zone[..1], &zone[1..]),
            _ => "-0000".to_string(),
        },
        letters if letters.iter().all(u8::is_ascii_alphabetic) && letters.iter().any(u8::is_ascii_lowercase) => {
            zone.to_ascii_uppercase()
        }
        _ => return None,
    };
    // The zone is a slice of `value`: where it starts in it.
    let at = zone.as_ptr() as usize - value.as_ptr() as usize;
    Some(format!("{}{mended}{}", &value[..at], &value[at + zone.len()..]))
}

/// A date old mailers wrote that mail-parser does not read, written out in full: a time without
/// seconds before a zone of letters (`20 Dec 95 19:59 CST`) gains them, and a time with no zone
/// after it (`15 Feb 1995 09:38:18`) is taken as `-0000`, a local time in a zone not known (RFC
/// 5322 §3.3), as mail programs show it. `None` when there is no time to complete.
fn completed(value: &str) -> Option<String> {
    let mut words: Vec<String> = value.split_whitespace().map(str::to_string).collect();
    let at = words.iter().position(|w| w.contains(':') && w.bytes().all(|b| b.is_ascii_digit() || b == b':'))?;
    if words[at].matches(':').count() == 1 {
        words[at].push_str(":00");
    }
    match words.get_mut(at + 1) {
        None => words.push("-0000".into()),
        Some(w) if w.starts_with('(') => words.insert(at + 1, "-0000".into()),
        // A zone, already as RFC 5322 writes it (see `zone_mended`).
        Some(_) => {}
    }
    Some(words.join(" "))
}

/// A Windows FILETIME (100 ns since 1601, as Outlook keeps times) as seconds since the epoch;
/// `None` for 0 (no time) and for times outside years 1970 to 9999.
pub fn from_filetime(ft: u64) -> Option<i64> {
    (ft != 0).then(|| (ft / 10_000_000) as i64 - 11_644_473_600).filter(|t| *t > 0 && *t < 253_402_300_800)
}

#[cfg(test)]
mod rfc5322_tests {
    use super::*;

    #[test]
    fn internet_and_windows_dates() {
        assert_eq!(rfc5322_utc(0), "Thu, 01 Jan 1970 00:00:00 +0000");
        assert_eq!(rfc5322_utc(1_700_000_000), "Tue, 14 Nov 2023 22:13:20 +0000");
        assert_eq!(from_filetime(116_444_736_000_000_000 + 10_000_000), Some(1));
        assert_eq!(from_filetime(0), None);
        assert_eq!(from_filetime(u64::MAX), None);
    }

    /// Dates as mail writes them, the obsolete forms among them, and values that name no instant.
    #[test]
    fn mail_dates_read_and_checked() {
        let rfc3339 = |v: &str| parse_mail_date(v).map(|(t, o)| rfc3339(t, o));
        for (value, want) in [
            ("Tue, 1 Jul 2003 10:52:37 +0200", Some("2003-07-01T10:52:37+02:00")),
            ("1 Jul 2003 10:52 -0330", Some("2003-07-01T10:52:00-03:30")),
            ("Fri, 21 Nov 1997 09:55:06 -0600 (MDT)", Some("1997-11-21T09:55:06-06:00")),
            ("Thu, 13 Feb 69 23:32:54 -0330", Some("1969-02-13T23:32:54-03:30")),
            ("Thu, 1 Jan 04 10:00:00 +0000", Some("2004-01-01T10:00:00Z")),
            ("Thu, 1 Jan 104 10:00:00 +0000", Some("2004-01-01T10:00:00Z")),
            ("Mon, 6 Jan 2020 10:00:00 EST", Some("2020-01-06T10:00:00-05:00")),
            ("Mon, 6 Jan 2020 10:00:00 GMT", Some("2020-01-06T10:00:00Z")),
            ("Mon, 6 Jan 2020 10:00:00 UT", Some("2020-01-06T10:00:00Z")),
            ("Mon, 6 Jan 2020 10:00:00 Z", Some("2020-01-06T10:00:00Z")),
            ("Sat, 29 Feb 2020 12:00:00 +0000", Some("2020-02-29T12:00:00Z")),
            ("Sat, 31 Dec 2016 23:59:60 +0000", Some("2017-01-01T00:00:00Z")),
            // Old mailers: no seconds before a zone of letters, no zone at all.
            ("Wed, 20 Dec 95 19:59 CST", Some("1995-12-20T19:59:00-06:00")),
            ("Wed, 20 Dec 1995 19:59 cst", Some("1995-12-20T19:59:00-06:00")),
            ("Wed, 15 Feb 1995 09:38:18", Some("1995-02-15T09:38:18Z")),
            ("Wed, 15 Feb 1995 09:38 (local)", Some("1995-02-15T09:38:00Z")),
            // A zone name in any case; an offset of three digits is `hhmm` without its leading
            // zero; any other offset not of four digits, or with minutes past 59, is no zone.
            ("Tue, 28 May 1996 12:24:23 cst", Some("1996-05-28T12:24:23-06:00")),
            ("Tue, 28 May 1996 12:24:23 Pdt (daylight)", Some("1996-05-28T12:24:23-07:00")),
            ("Mon, 21 Aug 95 13:30:57 -600", Some("1995-08-21T13:30:57-06:00")),
            ("Mon, 21 Aug 95 13:30:57 +530 (IST)", Some("1995-08-21T13:30:57+05:30")),
            ("Mon, 21 Aug 95 13:30:57 -690", Some("1995-08-21T13:30:57Z")),
            ("Mon, 21 Aug 95 13:30:57 -6000", Some("1995-08-21T13:30:57Z")),
            ("Mon, 21 Aug 95 13:30:57 +2460", Some("1995-08-21T13:30:57Z")),
            ("Mon, 21 Aug 95 13:30:57 +2359", Some("1995-08-21T13:30:57+23:59")),
            ("Mon, 21 Aug 95 13:30:57 -06", Some("1995-08-21T13:30:57Z")),
            ("Mon, 21 Aug 95 13:30:57 +6", Some("1995-08-21T13:30:57Z")),
            ("Mon, 21 Aug 95 13:30:57 -", Some("1995-08-21T13:30:57Z")),
            ("Wed, 15 Feb 1995", None),
            ("Sat, 1 Jan 10000 00:00:00 +0000", None),
            ("32 Feb 2020 25:61:00 +0000", None),
            ("Fri, 29 Feb 2019 12:00:00 +0000", None),
            ("Mon, 6 Jan 2020 24:00:00 +0000", None),
            ("soon", None),
            ("", None),
        ] {
            assert_eq!(rfc3339(value).as_deref(), want, "{value}");
        }
    }
}
