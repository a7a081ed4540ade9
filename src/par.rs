//! Work spread over every core, for slices too large for one thread (a warm start stats and looks
//! up every source file), and [`Quota`]: an amount threads take from and give back, waiting while
//! it is spent (bytes of messages read ahead of indexing, PDFs read at once).

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// Threads worth starting: the cores there are, within reason.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8)
}

/// Below this many items a slice is done on the calling thread.
const SMALL: usize = 256;

/// Runs `f` over `items` split into one slice per core and joins the results in order. A panic in
/// a slice is passed on, never turned into missing results.
pub(crate) fn map_slices<T: Sync, R: Send>(items: &[T], f: impl Fn(&[T]) -> Vec<R> + Sync) -> Vec<R> {
    let threads = cores();
    if threads < 2 || items.len() < SMALL {
        return f(items);
    }
    let chunk = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items.chunks(chunk).map(|part| scope.spawn(move || f(part))).collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    })
}

/// An amount shared by threads, each taking some and giving it back when done, and waiting while
/// what it asks for does not fit. What is taken at once when nothing is held always fits, however
/// large: the bound holds back what comes beside it, never the one thing alone.
pub(crate) struct Quota {
    used: Mutex<u64>,
    freed: Condvar,
    most: u64,
}

impl Quota {
    pub(crate) fn new(most: u64) -> Quota {
        Quota { used: Mutex::new(0), freed: Condvar::new(), most }
    }

    /// Waits as long as it takes for `amount` to fit.
    pub(crate) fn take(self: &Arc<Self>, amount: u64) -> Share {
        let mut used = self.used();
        while !self.fits(*used, amount) {
            used = self.freed.wait(used).unwrap_or_else(|e| e.into_inner());
        }
        self.hand_out(used, amount)
    }

    /// Takes `amount` if it fits now.
    pub(crate) fn try_take(self: &Arc<Self>, amount: u64) -> Option<Share> {
        let used = self.used();
        self.fits(*used, amount).then(|| self.hand_out(used, amount))
    }

    /// Waits for `amount` to fit until `deadline`; `None` when it did not by then.
    pub(crate) fn take_by(self: &Arc<Self>, amount: u64, deadline: Instant) -> Option<Share> {
        let mut used = self.used();
        while !self.fits(*used, amount) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            used = self.freed.wait_timeout(used, left).map_or_else(|e| e.into_inner().0, |(u, _)| u);
        }
        Some(self.hand_out(used, amount))
    }

    /// Whether `amount` more may be taken while `used` is.
    fn fits(&self, used: u64, amount: u64) -> bool {
        used == 0 || used.saturating_add(amount) <= self.most
    }

    fn hand_out(self: &Arc<Self>, mut used: MutexGuard<'_, u64>, amount: u64) -> Share {
        *used += amount;
        Share { of: Arc::clone(self), amount }
    }

    fn used(&self) -> MutexGuard<'_, u64> {
        self.used.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What was taken from a [`Quota`], given back when dropped (on whichever thread drops it).
pub(crate) struct Share {
    of: Arc<Quota>,
    amount: u64,
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut used = self.of.used();
        *used = used.saturating_sub(self.amount);
        drop(used);
        self.of.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_holds_back_what_does_not_fit_beside_what_is_held() {
        const MAX: u64 = 100;
        let quota = Quota::new(MAX);
        for (used, amount, fits_now) in [
            (0, 1, true),
            (0, MAX, true),
            // One thing larger than the whole quota goes alone.
            (0, 10 * MAX, true),
            (MAX - 10, 10, true),
            (MAX - 10, 11, false),
            (1, MAX, false),
            (MAX, 0, true),
        ] {
            assert_eq!(quota.fits(used, amount), fits_now, "{used} used, {amount} more");
        }
    }

    #[test]
    fn shares_are_given_back_when_dropped() {
        let quota = Arc::new(Quota::new(100));
        let first = quota.take(50);
        let second = quota.take(50);
        assert_eq!(*quota.used(), 100);
        assert!(quota.take_by(1, Instant::now()).is_none(), "nothing more fits");
        drop(first);
        assert_eq!(*quota.used(), 50);
        drop(second);
        assert_eq!(*quota.used(), 0);
    }

    #[test]
    fn results_keep_their_order() {
        let items: Vec<u32> = (0..10_000).collect();
        let doubled = map_slices(&items, |part| part.iter().map(|n| n * 2).collect());
        assert_eq!(doubled, items.iter().map(|n| n * 2).collect::<Vec<_>>());
    }
}
