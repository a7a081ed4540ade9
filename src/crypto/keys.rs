//! The user's keys and trust, read once at start-up into a [`Keyring`] held in memory only.
//!
//! `--key FILE` is a PEM file with a private key (PKCS #8, PKCS #1 or SEC 1; PKCS #8 may be
//! encrypted) and its certificate, a PKCS #12 file (binary, or `gpgsm`'s PEM-armored form), or
//! an ASCII-armored OpenPGP secret key. `--trust FILE` is PEM CA certificates (S/MIME trust
//! anchors) and ASCII-armored OpenPGP public keys. When no file gives a CA certificate, the
//! system's roots are the anchors (Debian's `ca-certificates`, [`SYSTEM_ROOTS`]), when present.
//!
//! A file that cannot be read stops start-up with a [`KeyError`] naming it and saying why; no key
//! material is ever logged, and the keyring's `Debug` shows only how many keys it holds.

use std::path::{Path, PathBuf};

use der::Decode;
use pgp::composed::{Deserializable, SignedPublicKey, SignedSecretKey};
use pkcs8::DecodePrivateKey;
use zeroize::Zeroizing;

use super::smime::algorithms::{rsa_public_key, EC_PUBLIC_KEY, P256, P384, RSA_ENCRYPTION};
use super::smime::Cert;
use super::CryptoError;

/// Where Debian (and Ubuntu) keep the system's trusted roots, one PEM file.
pub const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// A private key S/MIME can decrypt with.
pub(crate) enum PrivateKey {
    Rsa(Box<rsa::RsaPrivateKey>),
    P256(p256::SecretKey),
    P384(p384::SecretKey),
}

/// An S/MIME key and the certificate it belongs to.
pub(crate) struct SmimeKey {
    pub cert: Cert,
    pub key: PrivateKey,
}

/// Where the S/MIME trust anchors came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anchors {
    /// CA certificates given with `--trust`.
    Given,
    /// The system's roots, from this file.
    System(PathBuf),
    /// None at all: no S/MIME signature can be `valid`.
    None,
}

/// Every key and trust anchor the user gave.
pub struct Keyring {
    smime: Vec<SmimeKey>,
    /// Certificates that came with keys (their chains): found as signers, never trusted as such.
    carried: Vec<Cert>,
    anchors: Vec<Cert>,
    anchors_from: Anchors,
    pgp_secret: Vec<SignedSecretKey>,
    pgp_public: Vec<SignedPublicKey>,
    /// What unlocks passphrase-protected OpenPGP secret keys (checked at start-up).
    passphrase: Zeroizing<String>,
}

impl Default for Keyring {
    fn default() -> Self {
        Keyring {
            smime: Vec::new(),
            carried: Vec::new(),
            anchors: Vec::new(),
            anchors_from: Anchors::None,
            pgp_secret: Vec::new(),
            pgp_public: Vec::new(),
            passphrase: Zeroizing::new(String::new()),
        }
    }
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyring")
            .field("smime_keys", &self.smime.len())
            .field("anchors", &self.anchors.len())
            .field("anchors_from", &self.anchors_from)
            .field("openpgp_secret_keys", &self.pgp_secret.len())
            .field("openpgp_public_keys", &self.pgp_public.len())
            .finish()
    }
}

/// A key or trust file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    pub path: PathBuf,
    pub reason: String,
}

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

impl std::error::Error for KeyError {}

impl Keyring {
    /// Reads every `--key` and `--trust` file; `passphrase` opens encrypted keys. `system_roots`
    /// is read when no trust file holds a CA certificate (and is skipped when it is not there).
    pub fn load(
        keys: &[PathBuf],
        trust: &[PathBuf],
        passphrase: Option<&str>,
        system_roots: Option<&Path>,
    ) -> Result<Keyring, KeyError> {
        let mut ring =
            Keyring { passphrase: Zeroizing::new(passphrase.unwrap_or("").to_string()), ..Keyring::default() };
        for path in keys {
            let at = |reason: String| KeyError { path: path.clone(), reason };
            let bytes = read(path)?;
            ring.add_key(&bytes, passphrase).map_err(|e| at(e.0))?;
        }
        for path in trust {
            let at = |reason: String| KeyError { path: path.clone(), reason };
            let bytes = read(path)?;
            ring.add_trust(&bytes).map_err(|e| at(e.0))?;
        }
        if !ring.anchors.is_empty() {
            ring.anchors_from = Anchors::Given;
        } else if let Some(roots) = system_roots.filter(|p| p.is_file()) {
            let bytes = read(roots)?;
            // A bundle of a hundred roots may hold one the crates cannot read: the rest still count.
            let certs: Vec<Cert> = super::pem_blocks(&bytes)
                .iter()
                .filter(|b| b.label == "CERTIFICATE")
                .filter_map(|b| Cert::from_der(&b.der).ok())
                .collect();
            if !certs.is_empty() {
                ring.anchors = certs;
                ring.anchors_from = Anchors::System(roots.to_path_buf());
            }
        }
        Ok(ring)
    }

    /// A keyring from key and trust material already in memory, as [`Keyring::load`] reads it
    /// from files (without the system's roots).
    pub fn from_material(keys: &[&[u8]], trust: &[&[u8]], passphrase: Option<&str>) -> Result<Keyring, CryptoError> {
        let mut ring =
            Keyring { passphrase: Zeroizing::new(passphrase.unwrap_or("").to_string()), ..Keyring::default() };
        for k in keys {
            ring.add_key(k, passphrase)?;
        }
        for t in trust {
            ring.add_trust(t)?;
        }
        if !ring.anchors.is_empty() {
            ring.anchors_from = Anchors::Given;
        }
        Ok(ring)
    }

    /// Whether any key or trust was given at all.
    pub fn is_empty(&self) -> bool {
        self.smime.is_empty() && self.pgp_secret.is_empty() && self.pgp_public.is_empty() && self.anchors.is_empty()
    }

    /// Whether it holds any key to decrypt with.
    pub fn can_decrypt(&self) -> bool {
        !self.smime.is_empty() || !self.pgp_secret.is_empty()
    }

    pub fn anchors_from(&self) -> &Anchors {
        &self.anchors_from
    }

    pub(crate) fn smime_keys(&self) -> &[SmimeKey] {
        &self.smime
    }

    pub(crate) fn anchors(&self) -> &[Cert] {
        &self.anchors
    }

    /// Certificates a signer may be found among besides those its message carries.
    pub(crate) fn smime_certificates(&self) -> impl Iterator<Item = &Cert> {
        self.smime.iter().map(|k| &k.cert).chain(&self.carried)
    }

    pub(crate) fn pgp_secret_keys(&self) -> &[SignedSecretKey] {
        &self.pgp_secret
    }

    pub(crate) fn pgp_public_keys(&self) -> &[SignedPublicKey] {
        &self.pgp_public
    }

    pub(crate) fn pgp_passphrase(&self) -> pgp::types::Password {
        pgp::types::Password::from(self.passphrase.as_str())
    }

    fn add_key(&mut self, bytes: &[u8], passphrase: Option<&str>) -> Result<(), CryptoError> {
        let text = String::from_utf8_lossy(bytes);
        if text.contains("-----BEGIN PGP PRIVATE KEY BLOCK-----") {
            return self.add_pgp_secret(bytes);
        }
        if text.contains("-----BEGIN PGP PUBLIC KEY BLOCK-----") {
            return Err(CryptoError::new("it is an OpenPGP public key: give it with --trust; --key takes secret keys"));
        }
        let blocks = super::pem_blocks(bytes);
        if let Some(p12) = blocks.iter().find(|b| b.label == "PKCS12") {
            return self.add_pkcs12(&p12.der, passphrase);
        }
        if blocks.is_empty() {
            if bytes.first() == Some(&0x30) {
                return self.add_pkcs12(bytes, passphrase);
            }
            return Err(CryptoError::new(
                "it is neither a PEM key with its certificate, a PKCS #12 file, nor an OpenPGP secret key",
            ));
        }
        let mut keys = Vec::new();
        for b in &blocks {
            if b.label.ends_with("PRIVATE KEY") && b.has_headers {
                return Err(CryptoError::new(
                    "its key is in OpenSSL's old encrypted form; convert it with `openssl pkcs8 -topk8`",
                ));
            }
            match b.label.as_str() {
                "PRIVATE KEY" => keys.push(pkcs8_key(&b.der)?),
                "RSA PRIVATE KEY" => {
                    use rsa::pkcs1::DecodeRsaPrivateKey;
                    let k = rsa::RsaPrivateKey::from_pkcs1_der(&b.der)
                        .map_err(|_| CryptoError::new("its RSA key is unreadable"))?;
                    keys.push(PrivateKey::Rsa(Box::new(k)));
                }
                "EC PRIVATE KEY" => keys.push(
                    p256::SecretKey::from_sec1_der(&b.der)
                        .map(PrivateKey::P256)
                        .or_else(|_| p384::SecretKey::from_sec1_der(&b.der).map(PrivateKey::P384))
                        .map_err(|_| CryptoError::new("its EC key is unreadable, or not on P-256 or P-384"))?,
                ),
                "ENCRYPTED PRIVATE KEY" => {
                    let pass = passphrase.ok_or(CryptoError::new(
                        "its key is encrypted: give the passphrase in MAILSHELF_KEY_PASSPHRASE or --key-passphrase-file",
                    ))?;
                    let info = pkcs8::EncryptedPrivateKeyInfo::from_der(&b.der)
                        .map_err(|_| CryptoError::new("its encrypted key is unreadable"))?;
                    let doc =
                        info.decrypt(pass).map_err(|_| CryptoError::new("the passphrase does not open its key"))?;
                    keys.push(pkcs8_key(doc.as_bytes())?);
                }
                _ => {}
            }
        }
        let certs: Vec<Cert> = blocks
            .iter()
            .filter(|b| b.label == "CERTIFICATE")
            .map(|b| Cert::from_der(&b.der))
            .collect::<Result<_, _>>()?;
        if keys.is_empty() {
            return Err(CryptoError::new("it holds no private key"));
        }
        self.pair(keys, certs)
    }

    fn add_pkcs12(&mut self, der: &[u8], passphrase: Option<&str>) -> Result<(), CryptoError> {
        let bundle = super::pkcs12::read(der, passphrase.unwrap_or(""))
            .map_err(|e| CryptoError::new(format!("as a PKCS #12 file: {e}")))?;
        let keys = bundle.keys.iter().map(|k| pkcs8_key(k)).collect::<Result<Vec<_>, _>>()?;
        let certs = bundle.certs.iter().map(|c| Cert::from_der(c)).collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() {
            return Err(CryptoError::new("it holds no private key"));
        }
        self.pair(keys, certs)
    }

    /// Each key with the certificate of its public key; the other certificates are kept to find
    /// signers by.
    fn pair(&mut self, keys: Vec<PrivateKey>, mut certs: Vec<Cert>) -> Result<(), CryptoError> {
        for key in keys {
            let at = certs.iter().position(|c| fits(&key, c)).ok_or(CryptoError::new(
                "it holds no certificate for its private key (put the certificate in the same file)",
            ))?;
            let cert = certs.remove(at);
            self.smime.push(SmimeKey { cert, key });
        }
        self.carried.extend(certs);
        Ok(())
    }

    fn add_pgp_secret(&mut self, bytes: &[u8]) -> Result<(), CryptoError> {
        let (keys, _) = SignedSecretKey::from_armor_many(bytes)
            .map_err(|e| CryptoError::new(format!("its OpenPGP secret key is unreadable: {e}")))?;
        let mut added = 0;
        for key in keys {
            let key = key.map_err(|e| CryptoError::new(format!("its OpenPGP secret key is unreadable: {e}")))?;
            let pw = self.pgp_passphrase();
            let opens = key.primary_key.unlock(&pw, |_, _| Ok(())).is_ok_and(|r| r.is_ok())
                && key.secret_subkeys.iter().all(|s| s.key.unlock(&pw, |_, _| Ok(())).is_ok_and(|r| r.is_ok()));
            if !opens {
                return Err(CryptoError::new(
                    "its OpenPGP secret key is locked and the passphrase given (MAILSHELF_KEY_PASSPHRASE or --key-passphrase-file) does not open it",
                ));
            }
            // The user's own key also checks the user's own signatures.
            self.pgp_public.push(key.to_public_key());
            self.pgp_secret.push(key);
            added += 1;
        }
        if added == 0 {
            return Err(CryptoError::new("it holds no OpenPGP secret key"));
        }
        Ok(())
    }

    fn add_trust(&mut self, bytes: &[u8]) -> Result<(), CryptoError> {
        let text = String::from_utf8_lossy(bytes);
        let mut found = 0;
        if text.contains("-----BEGIN PGP PUBLIC KEY BLOCK-----") {
            let (keys, _) = SignedPublicKey::from_armor_many(bytes)
                .map_err(|e| CryptoError::new(format!("its OpenPGP public key is unreadable: {e}")))?;
            for key in keys {
                let key = key.map_err(|e| CryptoError::new(format!("its OpenPGP public key is unreadable: {e}")))?;
                self.pgp_public.push(self_signed_only(key));
                found += 1;
            }
        }
        if text.contains("-----BEGIN PGP PRIVATE KEY BLOCK-----") {
            return Err(CryptoError::new(
                "it holds an OpenPGP secret key: give that with --key, and only public keys with --trust",
            ));
        }
        let certs = Cert::from_pem_all(bytes)?;
        found += certs.len();
        self.anchors.extend(certs);
        if found == 0 && bytes.first() == Some(&0x30) {
            self.anchors.push(Cert::from_der(bytes)?);
            found += 1;
        }
        if found == 0 {
            return Err(CryptoError::new("it holds neither PEM certificates nor OpenPGP public keys"));
        }
        Ok(())
    }
}

fn read(path: &Path) -> Result<Vec<u8>, KeyError> {
    std::fs::read(path).map_err(|e| KeyError {
        path: path.to_path_buf(),
        reason: match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".into(),
            std::io::ErrorKind::PermissionDenied => "permission denied".into(),
            _ => e.to_string(),
        },
    })
}

/// A private key from its PKCS #8 `PrivateKeyInfo`.
fn pkcs8_key(der: &[u8]) -> Result<PrivateKey, CryptoError> {
    let info = pkcs8::PrivateKeyInfo::from_der(der).map_err(|_| CryptoError::new("its private key is unreadable"))?;
    match info.algorithm.oid {
        RSA_ENCRYPTION => rsa::RsaPrivateKey::from_pkcs8_der(der)
            .map(|k| PrivateKey::Rsa(Box::new(k)))
            .map_err(|_| CryptoError::new("its RSA key is unreadable")),
        EC_PUBLIC_KEY => match info.algorithm.parameters_oid().ok() {
            Some(P256) => p256::SecretKey::from_pkcs8_der(der)
                .map(PrivateKey::P256)
                .map_err(|_| CryptoError::new("its P-256 key is unreadable")),
            Some(P384) => p384::SecretKey::from_pkcs8_der(der)
                .map(PrivateKey::P384)
                .map_err(|_| CryptoError::new("its P-384 key is unreadable")),
            _ => Err(CryptoError::new("its EC key is on a curve other than P-256 and P-384")),
        },
        other => Err(CryptoError::new(format!("its key type ({other}) is not supported: RSA, P-256 and P-384 are"))),
    }
}

/// Whether `cert` is for `key`'s public key.
fn fits(key: &PrivateKey, cert: &Cert) -> bool {
    let Ok(info) = spki::SubjectPublicKeyInfoRef::from_der(cert.spki_der()) else { return false };
    let Some(bits) = info.subject_public_key.as_bytes() else { return false };
    match key {
        PrivateKey::Rsa(k) => {
            use rsa::traits::PublicKeyParts;
            rsa_public_key(bits).is_ok_and(|p| p.n() == k.n() && p.e() == k.e())
        }
        PrivateKey::P256(k) => p256::PublicKey::from_sec1_bytes(bits).is_ok_and(|p| p == k.public_key()),
        PrivateKey::P384(k) => p384::PublicKey::from_sec1_bytes(bits).is_ok_and(|p| p == k.public_key()),
    }
}

/// `key` as OpenPGP implementations take a key in (RFC 9580 §10.1, as `gpg --import` does): only
/// the user IDs, subkeys, revocations and direct-key signatures its primary key itself signed.
/// A user ID without a valid self-signature, or a subkey without a valid binding (and, for a
/// signing subkey, its back signature), is anyone's addition to the key and would let them speak
/// in its name; third-party certifications are dropped with them, as nothing here reads them.
fn self_signed_only(mut key: SignedPublicKey) -> SignedPublicKey {
    let primary = key.primary_key.clone();
    let details = &mut key.details;
    details.revocation_signatures.retain(|s| s.verify_key(&primary).is_ok());
    details.direct_signatures.retain(|s| s.verify_key(&primary).is_ok());
    for user in &mut details.users {
        let id = user.id.clone();
        user.signatures.retain(|s| s.verify_certification(&primary, pgp::types::Tag::UserId, &id).is_ok());
    }
    details.users.retain(|u| !u.signatures.is_empty());
    details.user_attributes.clear();
    for sub in &mut key.public_subkeys {
        let k = sub.key.clone();
        sub.signatures.retain(|s| {
            pgp::composed::SignedPublicSubKey { key: k.clone(), signatures: vec![s.clone()] }
                .verify_bindings(&primary)
                .is_ok()
        });
    }
    key.public_subkeys.retain(|s| !s.signatures.is_empty());
    key
}
