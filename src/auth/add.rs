//! `mailshelf user add NAME [--folder F]… [--admin]`: appends a user to the users file with their
//! password hashed (argon2id), so that nobody edits hashes by hand. The file is checked before and
//! after: a name already there, a folder that is no folder path, or a file that does not read is
//! an error, and the file is left as it was. A new file is made readable by its owner only.

use std::io::Write;
use std::path::Path;

use super::password;
use super::users::{check_folder, entry_text, Users};
use crate::error::Error;

/// Appends `name` with `password` (and its folders, and admin) to the users file at `path`.
pub fn add_user(path: &Path, name: &str, password: &str, folders: &[String], admin: bool) -> Result<(), Error> {
    let bad = |why: String| Error::BadSetting(format!("{}: {why}", path.display()));
    let before = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(bad(e.to_string())),
    };
    let users = Users::parse(&before).map_err(bad)?;
    if users.get(name).is_some() {
        return Err(bad(format!("{name:?} is in the file already")));
    }
    for f in folders {
        check_folder(f).map_err(|why| bad(format!("folder {f:?}: {why}")))?;
    }
    if password.is_empty() || password.len() > password::MAX_PASSWORD {
        return Err(bad(format!("a password is 1 to {} bytes", password::MAX_PASSWORD)));
    }
    let hash = password::hash_new(password.as_bytes()).ok_or_else(|| bad("the password could not be hashed".into()))?;
    let mut entry = entry_text(name.trim(), &hash, folders, admin);
    if !before.is_empty() && !before.ends_with('\n') {
        entry.insert(0, '\n');
    }
    // What the file will say must read, with the new user in it.
    let after = Users::parse(&format!("{before}{entry}")).map_err(bad)?;
    if after.get(name).is_none() {
        return Err(bad(format!("{name:?} cannot be a name of the users file")));
    }
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(|e| bad(e.to_string()))?;
    file.write_all(entry.as_bytes()).and_then(|()| file.sync_all()).map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_are_appended_hashed_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users.toml");
        add_user(&path, "ann", "correct horse", &[], true).unwrap();
        add_user(&path, "bob", "battery staple", &["Work".into(), "Private/Taxes".into()], false).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("correct horse") && text.contains("$argon2id$"), "{text}");
        let users = Users::parse(&text).unwrap();
        assert!(users.get("ann").unwrap().admin && users.get("ann").unwrap().hash.verify(b"correct horse"));
        assert!(users.get("bob").unwrap().access.covers("work/x"));
        for (name, folders) in [("ANN", vec![]), ("carol", vec!["../etc".to_string()]), ("dave:x", vec![])] {
            assert!(add_user(&path, name, "pw", &folders, false).is_err(), "{name}");
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "left as it was");
        #[cfg(unix)]
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions()) & 0o777,
            0o600
        );
    }
}
