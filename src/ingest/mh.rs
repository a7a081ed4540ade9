//! MH folders (nmh, mh-e, Sylpheed and Claws Mail's MH trees): a folder of messages named by
//! number, whose `.mh_sequences` file lists the numbers in each sequence (`unseen: 1-3 7`). The
//! sequences MH clients keep for what Maildir says in flags become those flags, as Python's
//! `mailbox` converts them: a message not in `unseen` has been seen (`S`), one in `flagged` is
//! `F`, one in `replied` is `R`. A folder without the file says nothing of its messages.

use std::path::Path;

/// The name MH gives the file of a folder's public sequences.
const SEQUENCES: &str = ".mh_sequences";

/// At most this many ranges are kept of one sequence, over all its lines (a damaged file cannot
/// make each message's flags cost without end).
const MAX_RANGES: usize = 100_000;

/// The sequences of one MH folder that mean flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MhSequences {
    unseen: Vec<(u64, u64)>,
    flagged: Vec<(u64, u64)>,
    replied: Vec<(u64, u64)>,
}

impl MhSequences {
    /// Reads a `.mh_sequences` file's text: `name: ranges` per line, a range `n` or `n-m`, lines
    /// continued by leading white space; other sequences, and what cannot be read, left out.
    pub fn parse(text: &str) -> MhSequences {
        let mut out = MhSequences::default();
        let mut logical: Vec<String> = Vec::new();
        for line in text.lines() {
            match logical.last_mut() {
                Some(last) if line.starts_with([' ', '\t']) => last.push_str(line),
                _ => logical.push(line.to_string()),
            }
        }
        for line in &logical {
            let Some((name, ranges)) = line.split_once(':') else { continue };
            let into = match name.trim() {
                "unseen" => &mut out.unseen,
                "flagged" => &mut out.flagged,
                "replied" => &mut out.replied,
                _ => continue,
            };
            for range in ranges.split_whitespace().take(MAX_RANGES.saturating_sub(into.len())) {
                let (from, to) = range.split_once('-').unwrap_or((range, range));
                if let (Ok(from), Ok(to)) = (from.parse::<u64>(), to.parse::<u64>()) {
                    into.push((from.min(to), from.max(to)));
                }
            }
        }
        for ranges in [&mut out.unseen, &mut out.flagged, &mut out.replied] {
            merge(ranges);
        }
        out
    }

    /// The sequences of the MH folder `folder`, when it keeps them.
    pub fn of_folder(folder: &Path) -> Option<MhSequences> {
        let text = std::fs::read(folder.join(SEQUENCES)).ok()?;
        Some(MhSequences::parse(&String::from_utf8_lossy(&text[..text.len().min(1 << 20)])))
    }

    /// The Maildir flags of message `number`.
    pub fn flags(&self, number: u64) -> String {
        let holds = |ranges: &[(u64, u64)]| {
            let after = ranges.partition_point(|&(from, _)| from <= number);
            after.checked_sub(1).and_then(|i| ranges.get(i)).is_some_and(|&(_, to)| number <= to)
        };
        let mut flags = String::new();
        if holds(&self.flagged) {
            flags.push('F');
        }
        if holds(&self.replied) {
            flags.push('R');
        }
        if !holds(&self.unseen) {
            flags.push('S');
        }
        flags
    }
}

/// Sorts `ranges` and joins those that overlap or touch, so that one is found by a binary search.
fn merge(ranges: &mut Vec<(u64, u64)>) {
    ranges.sort_unstable();
    let mut joined: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for &(from, to) in ranges.iter() {
        match joined.last_mut() {
            Some(last) if from <= last.1.saturating_add(1) => last.1 = last.1.max(to),
            _ => joined.push((from, to)),
        }
    }
    *ranges = joined;
}

/// The number of an MH message file (`17`), when its name is one.
pub fn mh_number(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mh_sequences_become_flags() {
        let seqs = MhSequences::parse("cur: 4\nunseen: 1-3 7\nflagged: 2 9-8\n 12\nreplied: 3\nbad: x\nunseen: 20-x\n");
        let got: Vec<(u64, String)> = [1, 2, 3, 4, 7, 8, 9, 12].iter().map(|&n| (n, seqs.flags(n))).collect();
        let want = [(1, ""), (2, "F"), (3, "R"), (4, "S"), (7, ""), (8, "FS"), (9, "FS"), (12, "FS")];
        assert_eq!(got, want.map(|(n, f)| (n, f.to_string())));
        assert_eq!(mh_number(Path::new("Mail/inbox/17")), Some(17));
        assert_eq!(mh_number(Path::new("Mail/inbox/17.eml")), None);
        assert_eq!(mh_number(Path::new("Mail/inbox/,17")), None);
    }

    /// Ranges given out of order, overlapping, touching or on several lines are one sorted list,
    /// searched by halves; however many lines a file repeats, a sequence keeps at most
    /// [`MAX_RANGES`].
    #[test]
    fn mh_ranges_are_merged_and_bounded() {
        let seqs = MhSequences::parse(
            "unseen: 5-9 1-3
unseen: 2-6 20 11 10
flagged: 7
",
        );
        assert_eq!(seqs.unseen, [(1, 11), (20, 20)]);
        let got: Vec<String> = [0, 1, 7, 11, 12, 19, 20, 21, u64::MAX].iter().map(|&n| seqs.flags(n)).collect();
        assert_eq!(got, ["S", "", "F", "", "S", "S", "", "S", "S"]);
        let line =
            |i: u64| format!("unseen: {}\n", (0..60_000).map(|n| format!("{} ", n * 10 + i * 3)).collect::<String>());
        let many: String = (0..3).map(line).collect();
        assert_eq!(MhSequences::parse(&many).unseen.len(), MAX_RANGES);
    }
}
