//! Where message files may be read from: the paths served, made canonical. A message's file is
//! opened first and then asked where it really is (Linux's `/proc/self/fd`), so that a file or a
//! folder swapped for a link at any moment — between the walk and the read, or after indexing, by
//! whoever may write the mail folder — cannot have the server read, index or show a file they
//! could not read themselves (its keys, its users file, `/proc`). Where `/proc` is not there, the
//! path is followed through its links just before, which leaves the instant between the two.
//!
//! Indexing opens a folder's files through its [`Opener`]: the folder is opened and asked once,
//! then each file is opened in it by name without following a link (a link is asked on its own),
//! which costs no more than opening it by its path.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The canonical paths message files are read from.
#[derive(Debug, Clone, Default)]
pub struct Within {
    roots: Vec<PathBuf>,
}

/// What an opened file that lies elsewhere answers.
fn outside() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::PermissionDenied, "leads outside the paths served")
}

impl Within {
    /// The paths given, made canonical (a path that cannot be, being gone, holds nothing).
    pub fn new<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Within {
        Within::canonical(paths.into_iter().filter_map(|p| p.canonicalize().ok()))
    }

    /// Paths already canonical.
    pub fn canonical(roots: impl IntoIterator<Item = PathBuf>) -> Within {
        Within { roots: roots.into_iter().collect() }
    }

    /// Whether the canonical path `real` lies inside one of the paths (or is one of them: a file
    /// given as the path to serve).
    pub fn holds(&self, real: &Path) -> bool {
        self.roots.iter().any(|root| real.starts_with(root))
    }

    /// Whether `path`, followed through every link now, lies inside: the one rule for where a
    /// link in a mail folder may lead, when walked and when read again.
    pub fn leads_inside(&self, path: &Path) -> bool {
        path.canonicalize().is_ok_and(|real| self.holds(&real))
    }

    /// [`Within::leads_inside`] as a read's error: `PermissionDenied` for a path leading out, for
    /// a file read by a reader of its own that opens it by path (an Outlook data file's).
    pub fn refuse_outside(&self, path: &Path) -> std::io::Result<()> {
        if self.leads_inside(path) {
            Ok(())
        } else {
            Err(outside())
        }
    }

    /// Opens the file (or folder) at `path` for reading if what is opened lies inside; else an
    /// error of kind `PermissionDenied`, and nothing of it read.
    pub fn open(&self, path: &Path) -> std::io::Result<File> {
        let file = File::open(path)?;
        let real =
            std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).or_else(|_| path.canonicalize())?;
        if self.holds(&real) {
            Ok(file)
        } else {
            Err(outside())
        }
    }

    /// An opener of many files, mostly in few folders (one indexing worker's).
    pub fn opener(&self) -> Opener<'_> {
        Opener { within: self, folder: None }
    }
}

/// Opens files as [`Within::open`] does, keeping the last folder opened (and found inside): a
/// file in it is opened by name relative to that folder, not following a link, so neither it
/// nor any folder above it can have been swapped for one; a file that is a link is asked where
/// it leads, as by [`Within::open`].
#[derive(Debug)]
pub struct Opener<'a> {
    within: &'a Within,
    folder: Option<(PathBuf, OwnedFd)>,
}

impl Opener<'_> {
    pub fn open(&mut self, path: &Path) -> std::io::Result<File> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else { return self.within.open(path) };
        let folder = match &self.folder {
            Some((at, fd)) if at == parent => fd,
            _ => {
                self.folder = None;
                match self.within.open(parent) {
                    Ok(fd) => &self.folder.insert((parent.to_path_buf(), OwnedFd::from(fd))).1,
                    // A file given by itself as a path to serve, whose folder is not served.
                    Err(_) => return self.within.open(path),
                }
            }
        };
        use rustix::fs::{Mode, OFlags};
        match rustix::fs::openat(folder, name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()) {
            Ok(fd) => Ok(File::from(fd)),
            Err(rustix::io::Errno::LOOP) => self.within.open(path),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_opened_only_where_they_really_are_inside() {
        let dir = tempfile::tempdir().expect("dir");
        let (mail, outside) = (dir.path().join("mail"), dir.path().join("outside"));
        for d in [mail.join("cur"), outside.clone()] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(mail.join("cur/1"), "inside").expect("write");
        std::fs::write(outside.join("1"), "outside").expect("write");
        std::os::unix::fs::symlink(outside.join("1"), mail.join("cur/2")).expect("link");
        std::os::unix::fs::symlink(mail.join("cur/1"), mail.join("cur/3")).expect("link");
        std::os::unix::fs::symlink(&outside, mail.join("swapped")).expect("link");
        let within = Within::new([mail.as_path()]);
        assert!(within.open(&mail.join("cur/1")).is_ok(), "a file inside");
        assert!(within.open(&mail.join("cur/3")).is_ok(), "a link to a file inside");
        for out in ["cur/2", "swapped/1"] {
            let e = within.open(&mail.join(out)).expect_err(out);
            assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{out}");
        }
        assert_eq!(within.open(&mail.join("cur/9")).expect_err("gone").kind(), std::io::ErrorKind::NotFound);
        // A file given as the path served, itself a link, is read wherever it leads.
        let given = Within::new([mail.join("cur/2").as_path()]);
        assert!(given.open(&mail.join("cur/2")).is_ok());
        assert!(given.opener().open(&mail.join("cur/2")).is_ok());
        assert!(given.opener().open(&mail.join("cur/1")).is_err());
        assert!(Within::default().open(&mail.join("cur/1")).is_err(), "nothing served, nothing read");
        // Through an opener, folder by folder: the same answers.
        let mut opener = within.opener();
        for (name, inside) in
            [("cur/1", true), ("cur/3", true), ("cur/2", false), ("swapped/1", false), ("cur/1", true)]
        {
            let opened = opener.open(&mail.join(name));
            assert_eq!(opened.is_ok(), inside, "{name}: {opened:?}");
        }
        // A folder swapped for a link once its files were listed.
        std::fs::create_dir_all(dir.path().join("other")).expect("mkdir");
        std::fs::write(dir.path().join("other/1"), "elsewhere").expect("write");
        std::fs::rename(mail.join("cur"), mail.join("was")).expect("rename");
        std::os::unix::fs::symlink(dir.path().join("other"), mail.join("cur")).expect("link");
        let mut opener = within.opener();
        assert!(opener.open(&mail.join("cur/1")).is_err(), "a folder leading out");
    }
}
