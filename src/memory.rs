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
//! The search index's files are read through memory maps, and every page a search or a merge
//! touched stays counted against the process until its map goes, although the kernel holds the
//! same page in its cache and could drop it at any time: at a million messages that was as much
//! as everything else the server holds. [`map_file`] maps each file once and keeps track of it;
//! [`release`] also tells the kernel that no mapped page is needed now (`MADV_DONTNEED`), so the
//! pages are counted as cache, not as the server's, and the next search reads them from there.
//! While indexing, [`release_maps`] does that alone every quarter of a second: the search index's
//! merges read whole segments through maps, faster than commits come.
//!
//! These are the only calls into C and the only maps the crate makes itself, which is why this
//! module alone may use `unsafe`. Elsewhere (musl, macOS, Windows) the allocator calls are
//! nothing: those allocators give memory back by themselves or have no such call.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use memmap2::Mmap;

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

/// Returns the pages the allocator holds free to the system, and the pages of mapped files to the
/// page cache. It locks each arena in turn, so it is called at quiet points: after a durable
/// commit, at the end of an indexing run, every [`RELEASE_EVERY`] while serving.
pub fn release() {
    release_heap();
    release_maps();
}

/// How often pages of mapped files are released while indexing.
pub const RELEASE_MAPS_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn release_heap() {
    // SAFETY: malloc_trim has no preconditions; it frees nothing that is in use.
    let released = unsafe { libc::malloc_trim(0) } == 1;
    tracing::trace!(released, "free memory returned");
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_heap() {}

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

/// A file's bytes, mapped into memory: read-only, shared with every other reader of the same file.
#[derive(Clone)]
pub struct MappedFile(Arc<Mmap>);

impl Deref for MappedFile {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

// SAFETY: the bytes live in the map, which the Arc keeps in place for as long as any clone lives;
// moving a MappedFile moves the pointer, not the bytes.
#[allow(unsafe_code)]
unsafe impl stable_deref_trait::StableDeref for MappedFile {}

/// Every file mapped by [`map_file`] and still in use, by path: a file opened again (each search
/// reader's reload opens every segment) shares its map.
static MAPPED: Mutex<BTreeMap<PathBuf, Weak<Mmap>>> = Mutex::new(BTreeMap::new());

/// Maps the file at `path`, or shares its map when it is mapped already; `None` for an empty file,
/// which cannot be mapped. Only for files that are written once and never changed afterwards (a
/// search segment): a map shows the file as it is now, and one shortened underneath would fault.
#[allow(unsafe_code)]
pub fn map_file(path: &Path) -> io::Result<Option<MappedFile>> {
    let mut mapped = MAPPED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(map) = mapped.get(path).and_then(Weak::upgrade) {
        return Ok(Some(MappedFile(map)));
    }
    let file = File::open(path)?;
    if file.metadata()?.len() == 0 {
        return Ok(None);
    }
    // SAFETY: read-only; the callers' files are never written after they are complete (see above).
    let map = Arc::new(unsafe { Mmap::map(&file) }?);
    mapped.retain(|_, m| m.strong_count() > 0);
    mapped.insert(path.to_path_buf(), Arc::downgrade(&map));
    Ok(Some(MappedFile(map)))
}

/// Tells the kernel that no page of any mapped file is needed now. They stay in the page cache,
/// and the next read of one maps it again from there. The half of [`release`] that takes no
/// allocator lock: while indexing it runs alone every [`RELEASE_MAPS_EVERY`], for the segments the
/// search index merges, whose pages a merge would otherwise gather faster than commits release them.
#[cfg(unix)]
#[allow(unsafe_code)]
pub fn release_maps() {
    let mapped = MAPPED.lock().unwrap_or_else(PoisonError::into_inner);
    for map in mapped.values().filter_map(Weak::upgrade) {
        // SAFETY: the map is a read-only shared map of a file: a dropped page is read back from
        // the file, unchanged, at the next access (only private maps lose what was in them).
        let dropped = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        if let Err(e) = dropped {
            tracing::debug!(error = %e, "mapped pages not released");
        }
    }
}

#[cfg(not(unix))]
pub fn release_maps() {}

#[cfg(test)]
mod tests {
    use std::io::Write;

    #[test]
    fn a_mapped_file_reads_the_same_after_its_pages_are_released() {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        let bytes: Vec<u8> = (0..3 * 4096 + 17).map(|i| (i % 251) as u8).collect();
        file.write_all(&bytes).expect("write");
        let map = super::map_file(file.path()).expect("maps").expect("not empty");
        assert_eq!(&map[..], &bytes[..]);
        let again = super::map_file(file.path()).expect("maps").expect("not empty");
        assert_eq!(again.as_ptr(), map.as_ptr(), "one map per file");
        super::release();
        assert_eq!(&map[..], &bytes[..]);
        super::release_maps();
        assert_eq!(&map[..], &bytes[..]);
        drop((map, again));
        let empty = tempfile::NamedTempFile::new().expect("temp file");
        assert!(super::map_file(empty.path()).expect("opens").is_none());
    }

    #[test]
    fn configuring_and_releasing_are_harmless_at_any_time() {
        super::configure();
        let big: Vec<u8> = vec![1; 8 << 20];
        drop(big);
        super::release();
        super::release();
    }
}
