//! Calendar arithmetic for dates kept as seconds since the epoch (Howard Hinnant's algorithms for the
//! proleptic Gregorian calendar): search ranges, and RFC 3339 dates rebuilt from what the index keeps.

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
    let local = timestamp + i64::from(offset_minutes) * 60;
    let (y, m, d) = civil_from_days(local.div_euclid(86_400));
    let s = local.rem_euclid(86_400);
    let clock = format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60);
    if offset_minutes == 0 {
        format!("{clock}Z")
    } else {
        let sign = if offset_minutes < 0 { '-' } else { '+' };
        let o = offset_minutes.unsigned_abs();
        format!("{clock}{sign}{:02}:{:02}", o / 60, o % 60)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
