//! The users file (`--users FILE`): TOML, one `[[user]]` table a person, with `name`, `password`
//! (a [`Hash`](enum@Hash)), optional `folders` (what they may read, as `/api/folders` names folders,
//! subfolders included; omitted: everything) and optional `admin = true` (may upload and delete).
//!
//! A file that cannot be used is refused whole, with the line at fault: at start-up that stops
//! the server. The file is read again whenever its bytes change ([`UsersFile::watch`], once a
//! second), so a user removed or given other folders is so within seconds; a file that has become
//! unusable meanwhile keeps the last good one in force and says why in the log, every time it
//! changes, until it is fixed.
//!
//! Names are matched ignoring case (a proxy or an identity provider may spell them otherwise).
//! Folders are checked as paths: empty ones and `.` or `..` segments are refused (a folder list
//! is no place for relative paths), and each is compared by [`crate::index::folders::key`], never
//! as a string of a request.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use serde::Deserialize;

use super::password::{self, Hash};
pub use crate::config::check_folder;
use crate::error::Error;
use crate::index::Access;
use crate::limits::{MAX_USERS_FILE, MAX_USER_NAME};

/// One person of the users file.
#[derive(Debug)]
pub struct User {
    /// As the file spells it.
    pub name: String,
    pub hash: Hash,
    pub access: Access,
    pub admin: bool,
}

impl User {
    /// What a sign-in of this user remembers of their password, so that changing it in the file
    /// ends the sessions begun with the old one: a digest of the hash, never the hash itself.
    pub fn credential_tag(&self) -> String {
        let text = match &self.hash {
            Hash::Argon2(s) | Hash::Bcrypt(s) => s,
        };
        blake3::hash(text.as_bytes()).to_hex()[..32].to_string()
    }
}

/// The users of one reading of the file.
#[derive(Debug)]
pub struct Users {
    by_name: HashMap<String, Arc<User>>,
    /// What an unknown name is checked against: the first user's algorithm and cost.
    dummy: Hash,
}

impl Users {
    /// Nobody (a server signing people in through a proxy or OpenID Connect alone).
    pub fn none() -> Users {
        Users { by_name: HashMap::new(), dummy: dummy_default() }
    }

    /// Reads the text of a users file; the error names the line at fault.
    pub fn parse(text: &str) -> Result<Users, String> {
        let file: FileForm = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start));
            let what = e.message().trim().to_string();
            match line {
                Some(n) => format!("line {n}: {what}"),
                None => what,
            }
        })?;
        let mut by_name = HashMap::new();
        let mut first_hash = None;
        for spanned in file.user {
            let at = line_of(text, spanned.span().start);
            let raw = spanned.into_inner();
            let fail = |why: String| format!("line {at}: user {:?}: {why}", raw.name);
            let name = raw.name.trim().to_string();
            if name.is_empty() || name.len() > MAX_USER_NAME || name.chars().any(|c| c.is_control() || c == ':') {
                return Err(fail(format!(
                    "a name is 1 to {MAX_USER_NAME} bytes without control characters or ':' (HTTP Basic ends the name there)"
                )));
            }
            let hash = Hash::parse(&raw.password).map_err(|why| fail(format!("password: {why}")))?;
            let access = match &raw.folders {
                None => Access::everything(),
                Some(folders) => {
                    for f in folders {
                        check_folder(f).map_err(|why| fail(format!("folder {f:?}: {why}")))?;
                    }
                    Access::folders(folders)
                }
            };
            first_hash.get_or_insert_with(|| hash.clone());
            let user = User { name: name.clone(), hash, access, admin: raw.admin };
            if by_name.insert(name.to_lowercase(), Arc::new(user)).is_some() {
                return Err(fail("the name is given twice (names are compared ignoring case)".into()));
            }
        }
        let dummy = first_hash.map_or_else(dummy_default, |h| h.dummy_like());
        Ok(Users { by_name, dummy })
    }

    /// The user of this name, ignoring case.
    pub fn get(&self, name: &str) -> Option<Arc<User>> {
        self.by_name.get(&name.trim().to_lowercase()).cloned()
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The hash a name is checked against: the user's, or for a name not in the file the dummy.
    pub fn hash_for(&self, name: &str) -> (Option<Arc<User>>, &Hash) {
        match self.by_name.get(&name.trim().to_lowercase()) {
            Some(u) => (Some(Arc::clone(u)), &u.hash),
            None => (None, &self.dummy),
        }
    }
}

fn dummy_default() -> Hash {
    Hash::Argon2(password::hash_new(b"no one").unwrap_or_default()).dummy_like()
}

/// The 1-based line of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.get(..at).map_or(1, |before| before.matches('\n').count() + 1)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileForm {
    #[serde(default)]
    user: Vec<toml::Spanned<UserForm>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserForm {
    name: String,
    password: String,
    #[serde(default)]
    folders: Option<Vec<String>>,
    #[serde(default)]
    admin: bool,
}

/// The users file as it is now: read at start, read again when it changes.
#[derive(Debug)]
pub struct UsersFile {
    path: Option<PathBuf>,
    current: RwLock<Arc<Users>>,
    /// A hash of the bytes last read, so that only a change is parsed.
    seen: AtomicU64,
}

impl UsersFile {
    /// Reads the file at `path`; an unusable file is a start-up error naming the file and line.
    pub fn open(path: &Path) -> Result<UsersFile, Error> {
        let bytes = read(path).map_err(|why| bad(path, &why))?;
        let text = String::from_utf8(bytes.clone()).map_err(|_| bad(path, "not UTF-8 text"))?;
        let users = Users::parse(&text).map_err(|why| bad(path, &why))?;
        if users.is_empty() {
            tracing::warn!(path = %path.display(), "the users file names nobody: no one can sign in with a password");
        }
        Ok(UsersFile {
            path: Some(path.to_path_buf()),
            current: RwLock::new(Arc::new(users)),
            seen: AtomicU64::new(fingerprint(&bytes)),
        })
    }

    /// No file: nobody signs in with a password (single sign-on only).
    pub fn none() -> UsersFile {
        UsersFile { path: None, current: RwLock::new(Arc::new(Users::none())), seen: AtomicU64::new(0) }
    }

    /// The users now in force.
    pub fn users(&self) -> Arc<Users> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Reads the file again if its bytes changed; a file that cannot be used keeps the last good
    /// one in force, and the log says why. Returns whether new users are in force.
    pub fn reload(&self) -> bool {
        let Some(path) = &self.path else { return false };
        let bytes = match read(path) {
            Ok(b) => b,
            Err(why) => {
                if self.seen.swap(1, Ordering::AcqRel) != 1 {
                    tracing::error!(path = %path.display(), why, "the users file cannot be read; the last good one stays in force");
                }
                return false;
            }
        };
        let print = fingerprint(&bytes);
        if self.seen.swap(print, Ordering::AcqRel) == print {
            return false;
        }
        let parsed = String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string()).and_then(|t| Users::parse(&t));
        match parsed {
            Ok(users) => {
                tracing::info!(path = %path.display(), users = users.len(), "users file read again");
                *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(users);
                true
            }
            Err(why) => {
                tracing::error!(path = %path.display(), why, "the users file cannot be used; the last good one stays in force");
                false
            }
        }
    }

    /// Reads the file again once a second while `self` lives (on the blocking pool: a changed file
    /// costs one hash for its dummy).
    pub fn watch(self: &Arc<Self>) {
        if self.path.is_none() {
            return;
        }
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
            loop {
                tick.tick().await;
                let Some(file) = weak.upgrade() else { break };
                let _ = tokio::task::spawn_blocking(move || file.reload()).await;
            }
        });
    }
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.len() > MAX_USERS_FILE {
        return Err(format!("larger than {MAX_USERS_FILE} bytes"));
    }
    std::fs::read(path).map_err(|e| e.to_string())
}

fn fingerprint(bytes: &[u8]) -> u64 {
    let h = blake3::hash(bytes);
    let mut first = [0u8; 8];
    first.copy_from_slice(&h.as_bytes()[..8]);
    // 0 and 1 stand for "nothing read" and "unreadable".
    u64::from_le_bytes(first) | 2
}

fn bad(path: &Path, why: &str) -> Error {
    Error::BadSetting(format!("--users {}: {why}", path.display()))
}

/// A `[[user]]` table for the users file, as `mailshelf user add` appends it.
pub fn entry_text(name: &str, hash: &str, folders: &[String], admin: bool) -> String {
    let quote = |s: &str| {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    };
    let mut text = format!("\n[[user]]\nname = {}\npassword = {}\n", quote(name), quote(hash));
    if !folders.is_empty() {
        let list: Vec<String> = folders.iter().map(|f| quote(f)).collect();
        text.push_str(&format!("folders = [{}]\n", list.join(", ")));
    }
    if admin {
        text.push_str("admin = true\n");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash() -> String {
        password::hash_with(b"pw", password::test_params()).unwrap()
    }

    #[test]
    fn users_have_folders_admin_and_names_ignoring_case() {
        let text = format!(
            "[[user]]\nname = \"Ann\"\npassword = \"{h}\"\nadmin = true\n\n\
             [[user]]\nname = \"bob\"\npassword = \"{h}\"\nfolders = [\"Work\", \"Private/Taxes\"]\n",
            h = hash()
        );
        let users = Users::parse(&text).unwrap();
        let ann = users.get("ANN").unwrap();
        assert!(ann.admin && ann.access.is_everything() && ann.name == "Ann");
        let bob = users.get(" bob ").unwrap();
        assert!(!bob.admin && bob.access.covers("work/x") && !bob.access.covers("Private"));
        assert!(users.get("carol").is_none());
        assert!(matches!(users.hash_for("carol"), (None, Hash::Argon2(_))));
        let appended = format!("{text}{}", entry_text("Carol \"C\"", &hash(), &["Legal".into()], false));
        let carol = Users::parse(&appended).unwrap().get("carol \"c\"").unwrap();
        assert!(carol.access.covers("Legal/2024"));
    }

    #[test]
    fn a_malformed_users_file_is_refused_naming_the_line() {
        let h = hash();
        let cases: Vec<(String, &str)> = vec![
            ("[[user]]\nname = \"a\"\npassword = \"x\n".into(), "line 3"),
            (format!("[[user]]\nname = \"a\"\npassword = \"{h}\"\n\n[[user]]\nname = \"b\"\n"), "line 5"),
            (format!("[[user]]\nname = \"a\"\npassword = \"{h}\"\nfolder = [\"x\"]\n"), "line 4"),
            ("\n\n[[user]]\nname = \"a\"\npassword = \"hunter2\"\n".into(), "line 3"),
            (
                format!("[[user]]\nname = \"a\"\npassword = \"{h}\"\n[[user]]\nname = \"A\"\npassword = \"{h}\"\n"),
                "line 4",
            ),
            (format!("[[user]]\nname = \"a:b\"\npassword = \"{h}\"\n"), "line 1"),
            (format!("[[user]]\nname = \"\"\npassword = \"{h}\"\n"), "line 1"),
            (format!("[[user]]\nname = \"a\"\npassword = \"{h}\"\nfolders = [\"../Legal\"]\n"), "line 1"),
            (format!("[[user]]\nname = \"a\"\npassword = \"{h}\"\nfolders = [\"Work/./x\"]\n"), "line 1"),
            (format!("[[user]]\nname = \"a\"\npassword = \"{h}\"\nfolders = [\"/\"]\n"), "line 1"),
            (format!("[[user]]\nname = \"a\"\npassword = \"{h}\"\nadmin = \"yes\"\n"), "line 4"),
        ];
        for (text, line) in cases {
            let err = Users::parse(&text).expect_err(&text);
            assert!(err.starts_with(line), "{text:?}: {err}");
        }
    }

    #[test]
    fn a_changed_file_is_read_again_and_a_broken_one_keeps_the_last_good() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users.toml");
        let user = |name: &str| format!("[[user]]\nname = \"{name}\"\npassword = \"{}\"\n", hash());
        std::fs::write(&path, user("ann")).unwrap();
        let file = UsersFile::open(&path).unwrap();
        assert!(!file.reload(), "unchanged");
        std::fs::write(&path, user("bob")).unwrap();
        assert!(file.reload());
        assert!(file.users().get("ann").is_none() && file.users().get("bob").is_some());
        std::fs::write(&path, "[[user]\n").unwrap();
        assert!(!file.reload());
        assert!(file.users().get("bob").is_some(), "the last good file stays in force");
        std::fs::write(&path, "[[user]\nname = ").unwrap();
        assert!(matches!(UsersFile::open(&path), Err(Error::BadSetting(m)) if m.contains("line 1")));
    }
}
