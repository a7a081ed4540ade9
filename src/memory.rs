//! Giving memory back. glibc's allocator keeps what a thread freed in that thread's arena and
//! hands it back to the system only from the top of the main heap, so a process that indexed a
//! million messages (batches of parsed mail, search buffers, the list growing by doubling) stays
//! at its high-water mark long after that memory is free: a fresh process on the same index used
//! a third of what the indexing one kept. `malloc_trim(0)` walks every arena and returns its free
//! pages (after durable commits, at the end of a run, and every 30 seconds while serving), and a
//! fixed mmap threshold keeps large buffers out of the arenas so that freeing them returns them at
//! once (glibc otherwise raises the threshold after the first large free, up to 32 MiB, and keeps
//! later ones in the heap).
//!
//! These are the only two calls into C the crate makes itself, which is why this module alone
//! may use `unsafe`. Elsewhere (musl, macOS, Windows) both are nothing: those allocators give
//! memory back by themselves or have no such call.

/// Large allocations (a search segment's buffers, a commit's serialised rows, the list of a
/// million ids) get pages of their own from this size up.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 256 * 1024;

/// Sets the allocator up for a long-running server; called once at start, before threads.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn configure() {
    // SAFETY: mallopt only changes allocator parameters; any value is accepted or refused (0).
    let accepted = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) } == 1;
    tracing::debug!(accepted, "fixed mmap threshold");
}

/// Returns the pages the allocator holds free to the system. It locks each arena in turn, so it
/// is called at quiet points: after a durable commit, at the end of an indexing run.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn release() {
    // SAFETY: malloc_trim has no preconditions; it frees nothing that is in use.
    let released = unsafe { libc::malloc_trim(0) } == 1;
    tracing::trace!(released, "free memory returned");
}

/// How often a serving process hands back what bursts of requests left free (each blocking thread
/// that built a page or answered a search keeps its own arena).
const RELEASE_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// Releases free memory every [`RELEASE_EVERY`], for as long as the server runs.
pub async fn release_periodically() {
    let mut tick = tokio::time::interval(RELEASE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        // A walk over every arena: off the async threads.
        let _ = tokio::task::spawn_blocking(release).await;
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn configure() {}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release() {}

#[cfg(test)]
mod tests {
    #[test]
    fn configuring_and_releasing_are_harmless_at_any_time() {
        super::configure();
        let big: Vec<u8> = vec![1; 8 << 20];
        drop(big);
        super::release();
        super::release();
    }
}
