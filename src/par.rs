//! Work spread over every core, for slices too large for one thread (a warm start stats and looks
//! up every source file).

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

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_their_order() {
        let items: Vec<u32> = (0..10_000).collect();
        let doubled = super::map_slices(&items, |part| part.iter().map(|n| n * 2).collect());
        assert_eq!(doubled, items.iter().map(|n| n * 2).collect::<Vec<_>>());
    }
}
