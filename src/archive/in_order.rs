//! Batches of work numbered as they are handed out, and taken back in that order however the
//! workers finish them. The collector gives ids in the order it adds messages; taken as workers
//! finished, the same archive indexed twice gave its messages different ids, and of two messages
//! with one Message-ID a different one got the plain `/message/<id>` address each time. In order,
//! a message found first in the walk is added first, on every run.
//!
//! A batch waiting for an earlier one keeps its [`Share`] of a [`crate::par::Quota`] of batches
//! handed out, so the walker stops handing out more once that many are out, however slow the
//! earliest one is.

use std::collections::BTreeMap;

use crate::par::Share;

/// How many batches may be handed out and not yet taken back in order.
pub(super) const BATCHES_OUT: u64 = 64;

/// A batch of items with its place in the order, and its share of the batches out (given back
/// once the batch has been taken back). Items that need no place (`place: None`) are taken back
/// as soon as they come.
pub(super) struct Numbered<T> {
    pub(super) place: Option<u64>,
    pub(super) items: Vec<T>,
    pub(super) turn: Option<Share>,
}

/// The items of `from`'s batches, batch after batch in the order of their places (the first is
/// 0); unnumbered batches as they come. When `from` ends with a place never filled (a worker that
/// stopped), what waits is taken back in order all the same.
pub(super) struct InOrder<I, T> {
    from: I,
    next: u64,
    waiting: BTreeMap<u64, Numbered<T>>,
    taking: std::vec::IntoIter<T>,
    /// The share of the batch being taken back, given back when the next one is taken.
    turn: Option<Share>,
}

impl<I: Iterator<Item = Numbered<T>>, T> InOrder<I, T> {
    pub(super) fn new(from: I) -> Self {
        InOrder { from, next: 0, waiting: BTreeMap::new(), taking: Vec::new().into_iter(), turn: None }
    }

    /// Starts taking back `batch`.
    fn take(&mut self, batch: Numbered<T>) {
        self.taking = batch.items.into_iter();
        self.turn = batch.turn;
    }
}

impl<I: Iterator<Item = Numbered<T>>, T> Iterator for InOrder<I, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        loop {
            if let Some(item) = self.taking.next() {
                return Some(item);
            }
            self.turn = None;
            if let Some(batch) = self.waiting.remove(&self.next) {
                self.next += 1;
                self.take(batch);
                continue;
            }
            match self.from.next() {
                Some(batch) => match batch.place {
                    None => self.take(batch),
                    Some(place) => {
                        self.waiting.insert(place, batch);
                    }
                },
                None => {
                    let (place, batch) = self.waiting.pop_first()?;
                    self.next = place + 1;
                    self.take(batch);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::par::Quota;

    fn numbered(place: Option<u64>, items: &[u32]) -> Numbered<u32> {
        Numbered { place, items: items.to_vec(), turn: None }
    }

    #[test]
    fn batches_come_back_in_the_order_they_were_handed_out() {
        // A name, the batches as they come back, the items taken back.
        type Case = (&'static str, Vec<Numbered<u32>>, Vec<u32>);
        let cases: Vec<Case> = vec![
            ("in order", vec![numbered(Some(0), &[1, 2]), numbered(Some(1), &[3])], vec![1, 2, 3]),
            (
                "reversed",
                vec![numbered(Some(2), &[5]), numbered(Some(1), &[3, 4]), numbered(Some(0), &[1, 2])],
                vec![1, 2, 3, 4, 5],
            ),
            (
                "unnumbered at once",
                vec![numbered(Some(1), &[3]), numbered(None, &[9]), numbered(Some(0), &[1])],
                vec![9, 1, 3],
            ),
            ("a place never filled", vec![numbered(Some(3), &[7]), numbered(Some(1), &[3])], vec![3, 7]),
            ("empty batches", vec![numbered(Some(1), &[]), numbered(Some(0), &[]), numbered(Some(2), &[4])], vec![4]),
            ("nothing", vec![], vec![]),
        ];
        for (name, batches, want) in cases {
            let got: Vec<u32> = InOrder::new(batches.into_iter()).collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn a_batch_gives_its_turn_back_once_taken_back() {
        let turns = Arc::new(Quota::new(2));
        let batches = vec![
            Numbered { place: Some(1), items: vec![2], turn: Some(turns.take(1)) },
            Numbered { place: Some(0), items: vec![1], turn: Some(turns.take(1)) },
        ];
        assert!(turns.try_take(1).is_none(), "both turns are out");
        let mut in_order = InOrder::new(batches.into_iter());
        assert_eq!(in_order.next(), Some(1));
        assert!(turns.try_take(1).is_none(), "the first batch is still being taken back");
        assert_eq!(in_order.next(), Some(2));
        assert!(turns.try_take(1).is_some(), "the first batch's turn came back");
    }
}
