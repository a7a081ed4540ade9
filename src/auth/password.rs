//! Password hashes: argon2id PHC strings (what `mailshelf user add` writes) and bcrypt `$2b$`
//! strings (accepted, for users files moved from elsewhere), checked with the `argon2` and
//! `bcrypt` crates. A password is bounded in length before it is hashed ([`MAX_PASSWORD`]), so a
//! megabyte sent as a password costs nothing; a name that is not in the users file is checked
//! against a dummy hash made with the same parameters as a real one ([`Hash::dummy_like`]), so
//! that a wrong name costs what a wrong password does.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

pub use crate::limits::MAX_PASSWORD_BYTES as MAX_PASSWORD;

/// A password hash from the users file, checked for its form when the file is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hash {
    /// `$argon2id$v=19$m=…,t=…,p=…$salt$hash`.
    Argon2(String),
    /// `$2b$NN$…` (also `$2a$` and `$2y$`, which differ only in old bugs of other writers).
    Bcrypt(String),
}

impl Hash {
    /// Reads a hash as the users file gives it; the error says what is wrong with it.
    pub fn parse(s: &str) -> Result<Hash, String> {
        let s = s.trim();
        if s.starts_with("$argon2") {
            let parsed = PasswordHash::new(s).map_err(|e| format!("not an argon2 PHC string ({e})"))?;
            if parsed.algorithm != Algorithm::Argon2id.ident() {
                return Err(format!("{} is not argon2id", parsed.algorithm));
            }
            Params::try_from(&parsed).map_err(|e| format!("argon2 parameters out of range ({e})"))?;
            if parsed.salt.is_none() || parsed.hash.is_none() {
                return Err("an argon2 PHC string without its salt or hash".into());
            }
            return Ok(Hash::Argon2(s.to_string()));
        }
        if ["$2b$", "$2a$", "$2y$"].iter().any(|p| s.starts_with(p)) {
            s.parse::<bcrypt::HashParts>().map_err(|e| format!("not a bcrypt hash ({e})"))?;
            return Ok(Hash::Bcrypt(s.to_string()));
        }
        Err("not a password hash: use `mailshelf user add`, which writes an argon2id one".into())
    }

    /// Whether `password` is the one hashed. `false` for a password over [`MAX_PASSWORD`] bytes,
    /// which is never hashed. Costs one hash: call it off the async threads.
    pub fn verify(&self, password: &[u8]) -> bool {
        if password.len() > MAX_PASSWORD {
            return false;
        }
        match self {
            Hash::Argon2(s) => {
                PasswordHash::new(s).is_ok_and(|h| Argon2::default().verify_password(password, &h).is_ok())
            }
            Hash::Bcrypt(s) => bcrypt::verify(password, s).unwrap_or(false),
        }
    }

    /// A hash of a random password with the same algorithm and cost as this one: what a name
    /// that is not in the users file is checked against, so that it takes as long as a real one.
    pub fn dummy_like(&self) -> Hash {
        let mut secret = [0u8; 32];
        let _ = getrandom::fill(&mut secret);
        match self {
            Hash::Argon2(s) => {
                let params = PasswordHash::new(s).ok().and_then(|h| Params::try_from(&h).ok()).unwrap_or_default();
                Hash::Argon2(hash_with(&secret, params).unwrap_or_else(|| s.clone()))
            }
            Hash::Bcrypt(s) => {
                let cost = s.parse::<bcrypt::HashParts>().map(|p| p.get_cost()).unwrap_or(bcrypt::DEFAULT_COST);
                Hash::Bcrypt(bcrypt::hash(secret, cost).unwrap_or_else(|_| s.clone()))
            }
        }
    }
}

/// A new argon2id PHC string for `password` with the crate's recommended parameters (19 MiB,
/// two passes, one lane: OWASP's first choice), as `mailshelf user add` writes it.
pub fn hash_new(password: &[u8]) -> Option<String> {
    hash_with(password, Params::default())
}

/// An argon2id PHC string for `password` with `params` and a random salt.
pub fn hash_with(password: &[u8], params: Params) -> Option<String> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).ok()?;
    let salt = SaltString::encode_b64(&salt).ok()?;
    let hasher = Argon2::new(Algorithm::Argon2id, Version::V0x13, params);
    hasher.hash_password(password, &salt).ok().map(|h| h.to_string())
}

/// Cheap argon2id parameters, for tests only (never for a real users file): the smallest memory and time the algorithm allows.
#[doc(hidden)]
pub fn test_params() -> Params {
    Params::new(Params::MIN_M_COST, 1, 1, None).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argon2id_and_bcrypt_hashes_are_checked() {
        let argon = Hash::parse(&hash_with(b"correct horse", test_params()).unwrap()).unwrap();
        assert!(argon.verify(b"correct horse") && !argon.verify(b"wrong horse"));
        let bcrypt = Hash::parse(&bcrypt::hash("battery staple", 4).unwrap()).unwrap();
        assert!(matches!(bcrypt, Hash::Bcrypt(_)));
        assert!(bcrypt.verify(b"battery staple") && !bcrypt.verify(b"battery stapler"));
        let dummy = argon.dummy_like();
        assert!(matches!(&dummy, Hash::Argon2(s) if s.contains("m=8,t=1,p=1")), "{dummy:?}");
        assert!(!dummy.verify(b"correct horse"));
        assert!(matches!(bcrypt.dummy_like(), Hash::Bcrypt(s) if s.starts_with("$2b$04$")));
    }

    #[test]
    fn what_is_not_an_argon2id_or_bcrypt_hash_is_refused_with_a_reason() {
        let argon2i = argon2::Argon2::new(Algorithm::Argon2i, Version::V0x13, test_params())
            .hash_password(b"x", &SaltString::encode_b64(b"saltsaltsalt").unwrap())
            .unwrap()
            .to_string();
        for bad in ["", "hunter2", "$argon2id$garbage", &argon2i, "$2b$99$nonsense", "$5$rounds=5000$x$y"] {
            assert!(Hash::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_password_of_a_megabyte_is_never_hashed() {
        let hash = Hash::parse(&hash_with(b"x", test_params()).unwrap()).unwrap();
        let mut huge = b"x".to_vec();
        huge.resize(1 << 20, b' ');
        assert!(!hash.verify(&huge), "refused by its length, before any hashing");
    }
}
