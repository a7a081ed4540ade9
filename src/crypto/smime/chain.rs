//! The certificate path walk (RFC 5280 §6, as much as mail needs): from a signer's certificate up
//! through the certificates the message carries to a trust anchor the user gave, each link's
//! signature checked by the crates, each issuer a CA allowed to sign certificates within its path
//! length, every certificate valid at the time of signing. Bounded: at most
//! [`MAX_CHAIN_LENGTH`] links and [`MAX_CHAIN_CHECKS`] signature checks per signer, whatever a
//! message carries.

use super::cert::Cert;
use crate::limits::{MAX_CHAIN_CHECKS, MAX_CHAIN_LENGTH};

/// What the walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Path {
    /// A chain to a trust anchor whose every certificate was valid at the time asked.
    Trusted,
    /// A chain to a trust anchor, but some certificate on it was not valid then (its subject).
    Expired(String),
    /// No chain to any trust anchor.
    Untrusted,
}

struct Walk<'a> {
    pool: &'a [Cert],
    anchors: &'a [Cert],
    at: i64,
    checks: usize,
    /// An anchored chain with a certificate out of its validity, kept while a better one is sought.
    expired: Option<String>,
}

/// Walks from `leaf` to `anchors` through `pool` (the certificates the message carries), at the
/// time `at` (seconds since the epoch).
pub(crate) fn walk(leaf: &Cert, pool: &[Cert], anchors: &[Cert], at: i64) -> Path {
    let mut w = Walk { pool, anchors, at, checks: 0, expired: None };
    let mut chain = vec![leaf];
    if w.up(&mut chain) {
        return Path::Trusted;
    }
    match w.expired {
        Some(subject) => Path::Expired(subject),
        None => Path::Untrusted,
    }
}

impl<'a> Walk<'a> {
    /// Whether `chain` (leaf first) reaches an anchor with every certificate valid; anchored chains
    /// with a certificate out of date are remembered in `expired`.
    fn up(&mut self, chain: &mut Vec<&'a Cert>) -> bool {
        let Some(&top) = chain.last() else { return false };
        // A certificate the user trusts as it is (a self-signed one given with --trust).
        if self.anchors.iter().any(|a| a.der == top.der) {
            return self.finish(chain);
        }
        if chain.len() > MAX_CHAIN_LENGTH {
            return false;
        }
        // Issuers below the one being added, not counting the leaf: what a path length limits.
        let below = chain.len() - 1;
        let candidates = self.anchors.iter().map(|c| (c, true)).chain(self.pool.iter().map(|c| (c, false)));
        for (issuer, is_anchor) in candidates {
            if chain.iter().any(|c| c.der == issuer.der) || issuer.subject_der() != top.issuer_der() {
                continue;
            }
            match issuer.as_issuer() {
                Some(Some(limit)) if below > usize::from(limit) => continue,
                Some(_) => {}
                // An anchor given as a bare self-signed certificate without CA extensions is still
                // trusted to have signed what it signed; a carried certificate must be a CA.
                None if is_anchor && issuer.parsed.tbs_certificate.extensions.is_none() => {}
                None => continue,
            }
            if self.checks >= MAX_CHAIN_CHECKS {
                return false;
            }
            self.checks += 1;
            if !issuer.issued(top) {
                continue;
            }
            chain.push(issuer);
            let reached = if is_anchor { self.finish(chain) } else { self.up(chain) };
            chain.pop();
            if reached {
                return true;
            }
        }
        false
    }

    /// An anchored chain: good when every certificate on it was valid at the time.
    fn finish(&mut self, chain: &[&Cert]) -> bool {
        match chain.iter().find(|c| !c.valid_at(self.at)) {
            None => true,
            Some(c) => {
                self.expired.get_or_insert_with(|| c.subject().to_string());
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(name: &str) -> Cert {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crypto/keys").join(name);
        let pem = std::fs::read(&path).expect("fixture");
        Cert::from_pem_all(&pem).expect("reads").remove(0)
    }

    #[test]
    fn paths_lead_to_anchors_only_through_authorities_valid_at_the_time() {
        let (alice, dave, mallory, bob) = (cert("alice.pem"), cert("dave.pem"), cert("mallory.pem"), cert("bob.pem"));
        let (ca, foreign) = (cert("ca.pem"), cert("foreign-ca.pem"));
        let now = 1_800_000_000;
        let in_2020 = 1_590_000_000;
        /// What is walked: a name, the leaf, the message's certificates, the anchors, the time.
        type Case<'a> = (&'a str, &'a Cert, Vec<Cert>, Vec<Cert>, i64, Path);
        let cases: Vec<Case<'_>> = vec![
            ("issued by the anchor", &alice, vec![], vec![ca.clone()], now, Path::Trusted),
            ("another authority's", &alice, vec![], vec![foreign.clone()], now, Path::Untrusted),
            ("no anchor at all", &alice, vec![], vec![], now, Path::Untrusted),
            ("the leaf itself trusted", &alice, vec![], vec![alice.clone()], now, Path::Trusted),
            ("an authority carried, not trusted", &alice, vec![ca.clone()], vec![], now, Path::Untrusted),
            ("one of several anchors", &mallory, vec![], vec![ca.clone(), foreign.clone()], now, Path::Trusted),
            ("expired at the time", &dave, vec![], vec![ca.clone()], now, Path::Expired("CN=Dave Expired".into())),
            (
                "valid, but not its authority then",
                &dave,
                vec![],
                vec![ca.clone()],
                in_2020,
                Path::Expired("CN=mailshelf Test CA".into()),
            ),
            ("a leaf is no authority", &alice, vec![], vec![bob.clone()], now, Path::Untrusted),
            (
                "before the authority existed",
                &alice,
                vec![],
                vec![ca.clone()],
                0,
                Path::Expired("CN=Alice Signer".into()),
            ),
        ];
        for (name, leaf, pool, anchors, at, want) in cases {
            assert_eq!(walk(leaf, &pool, &anchors, at), want, "{name}");
        }
    }

    #[test]
    fn a_message_full_of_look_alike_authorities_costs_a_bounded_walk() {
        let (alice, ca) = (cert("alice.pem"), cert("ca.pem"));
        // A thousand copies of her issuer among the message's certificates, and no anchor: at most
        // MAX_CHAIN_CHECKS signature checks are spent.
        let pool = vec![ca.clone(); 1000];
        let started = std::time::Instant::now();
        assert_eq!(walk(&alice, &pool, &[], 1_800_000_000), Path::Untrusted);
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
}
