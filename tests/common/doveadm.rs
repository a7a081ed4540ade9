//! What `doveadm fetch 'mailbox uid flags hdr.message-id' all` prints, read: Dovecot's own view
//! of a store, which the tests of its index files compare with mailshelf's. Used by the
//! integration tests and, included by path, by the index reader's unit tests
//! (`src/ingest/dovecot_index/tests.rs`).

/// One message as Dovecot lists it: its mailbox, uid, Message-ID (without angle brackets), flags
/// as Maildir's letters (sorted) and keywords (sorted).
pub type Fetched = (String, u32, String, String, Vec<String>);

/// The messages of `doveadm fetch`'s output, which ends each message with a form feed line.
pub fn fetched(text: &str) -> Vec<Fetched> {
    let mut all = Vec::new();
    for block in text.split('\x0c').filter(|b| !b.trim().is_empty()) {
        let field = |name: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(name).map(str::trim))
                .unwrap_or_else(|| panic!("{name} in {block}"))
        };
        let mut letters = Vec::new();
        let mut keywords = Vec::new();
        for flag in field("flags:").split_whitespace() {
            match flag {
                "\\Draft" => letters.push('D'),
                "\\Flagged" => letters.push('F'),
                "\\Answered" => letters.push('R'),
                "\\Seen" => letters.push('S'),
                "\\Deleted" => letters.push('T'),
                // Dovecot's flag for this session alone, never stored.
                "\\Recent" => {}
                keyword => keywords.push(keyword.to_string()),
            }
        }
        letters.sort_unstable();
        keywords.sort();
        let uid = field("uid:").parse().unwrap_or_else(|e| panic!("uid in {block}: {e}"));
        let message_id = field("hdr.message-id:").trim_matches(['<', '>']).to_string();
        all.push((field("mailbox:").to_string(), uid, message_id, letters.into_iter().collect(), keywords));
    }
    all
}
