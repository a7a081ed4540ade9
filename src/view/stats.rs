//! What is in an archive, at a glance: messages per month, who wrote most, which mailing lists
//! they came through, and what files they carry (types, counts, sizes). Counted from the index
//! alone — no message is read — so an overview of a whole archive costs one pass over its entries.
//! HTTP-free; the overview page draws these numbers and `/api/stats` returns them.

use std::collections::HashMap;

use serde::Serialize;

use super::browse::display_name;
use crate::dates::{month_label, month_number, year_label};
use crate::index::Entry;

/// Rows kept of each ranking (senders, lists, attachment types).
pub(crate) const TOP: usize = 10;

/// Months shown one bar each; a longer span is shown one bar a year.
const MAX_MONTH_BARS: usize = 120;

/// Years shown at most: every year of a span up to this long, else the busiest ones.
const MAX_YEAR_BARS: usize = 200;

#[derive(Debug, Clone, Default, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Stats {
    /// Messages counted.
    pub messages: usize,
    /// Messages with no readable date (not in `periods`).
    pub undated: usize,
    /// `month` (`2024-03`) or, for spans over ten years, `year` (`2024`).
    pub period: String,
    /// Messages per period, oldest first, every period between the first and the last included.
    pub periods: Vec<Count>,
    /// Who wrote most: the display name (or address), by address.
    pub senders: Vec<Count>,
    /// The mailing lists most messages came through (List-Id).
    pub lists: Vec<Count>,
    pub attachments: Attachments,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Count {
    pub name: String,
    pub messages: usize,
    /// What to search for to see them (`from:…`, `list:…`), when there is such a query.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Attachments {
    /// Attachments counted (of the first few of each message).
    pub count: usize,
    /// Their decoded size in bytes, all together.
    pub bytes: u64,
    /// By type, most first.
    pub types: Vec<TypeCount>,
    /// By size: under 10 KB, under 100 KB, under 1 MB, under 10 MB, larger.
    pub sizes: Vec<Count>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, utoipa::ToSchema)]
pub struct TypeCount {
    pub content_type: String,
    pub count: usize,
    pub bytes: u64,
}

const SIZE_BUCKETS: [(u64, &str); 5] = [
    (10 << 10, "under 10 KB"),
    (100 << 10, "10–100 KB"),
    (1 << 20, "100 KB–1 MB"),
    (10 << 20, "1–10 MB"),
    (u64::MAX, "10 MB and more"),
];

/// Counts the entries given.
#[cfg(test)]
fn stats<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Stats {
    let mut t = Tally::default();
    for e in entries {
        t.add(e);
    }
    t.finish()
}

/// Counts entries one at a time (as a pass over the store hands them over): each sender, list and
/// type is allocated once, when first seen; spellings that differ only in case are merged at the end.
#[derive(Default)]
pub(crate) struct Tally {
    s: Stats,
    months: HashMap<i64, usize>,
    senders: HashMap<String, (String, usize)>,
    lists: HashMap<String, usize>,
    types: HashMap<String, (usize, u64)>,
    sizes: [usize; SIZE_BUCKETS.len()],
}

/// Updates the count of `key`, allocating the key only the first time it is seen.
fn bump<V: Default>(map: &mut HashMap<String, V>, key: &str, update: impl FnOnce(&mut V)) {
    match map.get_mut(key) {
        Some(v) => update(v),
        None => update(map.entry(key.to_string()).or_default()),
    }
}

impl Tally {
    pub(crate) fn add(&mut self, e: &Entry) {
        let s = &mut self.s;
        s.messages += 1;
        match e.summary.timestamp {
            Some(ts) => *self.months.entry(month_number(ts)).or_default() += 1,
            None => s.undated += 1,
        }
        if let Some(from) = &e.summary.from {
            bump(&mut self.senders, address(from), |slot: &mut (String, usize)| {
                if slot.0.is_empty() {
                    slot.0 = from.clone();
                }
                slot.1 += 1;
            });
        }
        if let Some(list) = &e.list {
            bump(&mut self.lists, list, |n| *n += 1);
        }
        for a in &e.attachments {
            bump(&mut self.types, &a.content_type, |t| {
                t.0 += 1;
                t.1 += a.size;
            });
            s.attachments.count += 1;
            s.attachments.bytes += a.size;
            let bucket = SIZE_BUCKETS.iter().position(|(max, _)| a.size < *max).unwrap_or(SIZE_BUCKETS.len() - 1);
            self.sizes[bucket] += 1;
        }
    }

    pub(crate) fn finish(self) -> Stats {
        let Tally { mut s, months, senders, lists, types, sizes } = self;
        (s.period, s.periods) = periods(&months);
        // The name shown is that of the most frequent spelling (then the first in order): stable.
        let mut senders: Vec<(String, (String, usize))> = senders.into_iter().collect();
        senders.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then_with(|| a.1 .0.cmp(&b.1 .0)));
        let mut by_address: HashMap<String, (String, usize)> = HashMap::new();
        for (addr, (from, n)) in senders {
            by_address.entry(addr.to_lowercase()).or_insert((from, 0)).1 += n;
        }
        s.senders = top(by_address.into_iter().map(|(addr, (from, n))| {
            let query = (!addr.is_empty()).then(|| format!("from:{}", quote(&addr)));
            Count { name: display_name(&from), messages: n, query }
        }));
        let mut by_list: HashMap<String, usize> = HashMap::new();
        for (l, n) in lists {
            *by_list.entry(l.to_lowercase()).or_default() += n;
        }
        s.lists = top(by_list.into_iter().map(|(l, n)| Count {
            query: Some(format!("list:{}", quote(&l))),
            name: l,
            messages: n,
        }));
        let mut types: Vec<TypeCount> =
            types.into_iter().map(|(t, (count, bytes))| TypeCount { content_type: t, count, bytes }).collect();
        types.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.content_type.cmp(&b.content_type)));
        types.truncate(TOP);
        s.attachments.types = types;
        s.attachments.sizes = SIZE_BUCKETS
            .iter()
            .zip(sizes)
            .map(|((_, label), n)| Count { name: (*label).to_string(), messages: n, query: None })
            .collect();
        s
    }
}

/// The most frequent first, then by name; at most [`TOP`].
fn top(counts: impl Iterator<Item = Count>) -> Vec<Count> {
    let mut v: Vec<Count> = counts.collect();
    v.sort_by(|a, b| b.messages.cmp(&a.messages).then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase())));
    v.truncate(TOP);
    v
}

/// A search term, quoted when it needs to be.
fn quote(s: &str) -> String {
    if s.chars().any(|c| c.is_whitespace() || matches!(c, '"' | '(' | ')')) {
        format!("\"{}\"", s.replace('"', ""))
    } else {
        s.to_string()
    }
}

/// The address in a From value (`Ann <ann@example.org>` → `ann@example.org`).
fn address(from: &str) -> &str {
    match (from.rfind('<'), from.rfind('>')) {
        (Some(a), Some(b)) if a < b => from[a + 1..b].trim(),
        _ => from.trim(),
    }
}

/// Every month (or year) from the first to the last, with its count.
fn periods(months: &HashMap<i64, usize>) -> (String, Vec<Count>) {
    let (Some(&first), Some(&last)) = (months.keys().min(), months.keys().max()) else {
        return ("month".into(), Vec::new());
    };
    if ((last - first) as usize) < MAX_MONTH_BARS {
        let out = (first..=last)
            .map(|m| Count {
                name: month_label(m),
                messages: months.get(&m).copied().unwrap_or(0),
                query: Some(format!("after:{} before:{}", month_label(m), month_label(m + 1))),
            })
            .collect();
        return ("month".into(), out);
    }
    let mut years: HashMap<i64, usize> = HashMap::new();
    for (m, n) in months {
        *years.entry(m.div_euclid(12)).or_default() += n;
    }
    let (first, last) = (first.div_euclid(12), last.div_euclid(12));
    // A stray date centuries away would make thousands of empty bars: years with mail only, then.
    let out = if last - first < MAX_YEAR_BARS as i64 {
        (first..=last).map(|y| (y, years.get(&y).copied().unwrap_or(0))).collect::<Vec<_>>()
    } else {
        let mut v: Vec<(i64, usize)> = years.into_iter().collect();
        // Dates a message may claim are many; the bars are not: the busiest years, in order.
        v.sort_unstable_by_key(|&(y, n)| (std::cmp::Reverse(n), y));
        v.truncate(MAX_YEAR_BARS);
        v.sort_unstable();
        v
    };
    let out = out
        .into_iter()
        .map(|(y, n)| Count {
            name: year_label(y),
            messages: n,
            query: Some(format!("after:{} before:{}", year_label(y), year_label(y + 1))),
        })
        .collect();
    ("year".into(), out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{AttachmentInfo, Listing};

    fn entry(ts: Option<i64>, from: &str, list: Option<&str>, attachments: &[(&str, u64)]) -> Entry {
        let mut e: Entry = serde_json::from_value(serde_json::json!({
            "key": "k", "other_message_id": null, "mid_is_key": false,
            "summary": {"subject": null, "from": null, "timestamp": null, "zone": null},
            "location": {"Nested": {"parent": 0, "part": 0}}, "size": 1, "hash": vec![0u8; 16],
            "content_ids": [], "has_attachments": false, "parent": null,
            "labels": [], "list": null, "attachments": [], "folder": 0,
        }))
        .unwrap();
        e.summary = Listing { from: Some(from.into()), timestamp: ts, ..Listing::default() };
        e.list = list.map(str::to_string);
        e.attachments =
            attachments.iter().map(|(t, n)| AttachmentInfo { content_type: t.to_string(), size: *n }).collect();
        e
    }

    #[test]
    fn the_overview_counts_months_senders_lists_and_files() {
        let march = 1_709_251_200; // 2024-03-01
        let may = 1_714_521_600; // 2024-05-01
        let es = [
            entry(Some(march), "Ann <ann@example.org>", Some("dev.example.org"), &[("image/png", 5_000)]),
            entry(Some(march + 86_400), "\"Ann A.\" <ANN@example.org>", None, &[("application/pdf", 2 << 20)]),
            entry(Some(may), "bob@example.org", Some("dev.example.org"), &[]),
            entry(None, "bob@example.org", None, &[("image/png", 50_000)]),
        ];
        let s = stats(&es);
        assert_eq!((s.messages, s.undated, s.period.as_str()), (4, 1, "month"));
        let months: Vec<(&str, usize)> = s.periods.iter().map(|c| (c.name.as_str(), c.messages)).collect();
        assert_eq!(months, [("2024-03", 2), ("2024-04", 0), ("2024-05", 1)]);
        assert_eq!(s.periods[0].query.as_deref(), Some("after:2024-03 before:2024-04"));
        assert_eq!((s.senders[0].name.as_str(), s.senders[0].messages), ("Ann A.", 2));
        assert_eq!(s.senders[0].query.as_deref(), Some("from:ann@example.org"));
        assert_eq!((s.lists[0].name.as_str(), s.lists[0].messages), ("dev.example.org", 2));
        assert_eq!((s.attachments.count, s.attachments.types[0].content_type.as_str()), (3, "image/png"));
        let sizes: Vec<usize> = s.attachments.sizes.iter().map(|c| c.messages).collect();
        assert_eq!(sizes, [1, 1, 0, 1, 0]);
    }

    #[test]
    fn long_spans_are_counted_by_year_and_stray_dates_stay_bounded() {
        let es = [entry(Some(0), "a@x", None, &[]), entry(Some(1_700_000_000), "a@x", None, &[])];
        let s = stats(&es);
        assert_eq!(s.period, "year");
        assert_eq!(s.periods.len(), 2023 - 1970 + 1);
        let far = [entry(Some(-60_000_000_000), "a@x", None, &[]), entry(Some(1_700_000_000), "a@x", None, &[])];
        assert_eq!(stats(&far).periods.len(), 2);
        // A message a year for a thousand years, and a busy one: the bars stay bounded.
        let mut scattered: Vec<Entry> =
            (0..1000i64).map(|y| entry(Some(y * 400 * 86_400 * 366), "a@x", None, &[])).collect();
        scattered.extend((0..3).map(|_| entry(Some(1_700_000_000), "a@x", None, &[])));
        let s = stats(&scattered);
        assert_eq!(s.periods.len(), MAX_YEAR_BARS);
        assert!(s.periods.iter().any(|c| c.name == "2023" && c.messages >= 3));
    }
}
