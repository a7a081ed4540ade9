//! Where the search index keeps its files: tantivy's own directory for everything it writes, locks
//! and watches, with one change for reading, where each file is mapped through
//! [`crate::memory::map_file`]. tantivy's maps stay with it and their pages are counted against the
//! server for as long as they live; ours are known to `memory`, which gives their pages back to
//! the page cache when the server is idle.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::directory::error::{DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, OwnedBytes, WatchCallback, WatchHandle, WritePtr,
};

#[derive(Clone, Debug)]
pub(super) struct ReleasableDirectory {
    root: PathBuf,
    inner: MmapDirectory,
}

impl ReleasableDirectory {
    pub(super) fn open(root: &Path) -> Result<ReleasableDirectory, OpenDirectoryError> {
        Ok(ReleasableDirectory { root: root.to_path_buf(), inner: MmapDirectory::open(root)? })
    }
}

impl Directory for ReleasableDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        match crate::memory::map_file(&self.root.join(path)) {
            Ok(Some(map)) => Ok(Arc::new(OwnedBytes::new(map))),
            Ok(None) => Ok(Arc::new(OwnedBytes::empty())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(OpenReadError::FileDoesNotExist(path.to_path_buf())),
            Err(e) => Err(OpenReadError::wrap_io_error(e, path.to_path_buf())),
        }
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        self.inner.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(callback)
    }
}
