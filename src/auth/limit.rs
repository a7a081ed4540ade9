//! Failed sign-ins, counted per client address and per name: after
//! [`MAX_SIGN_IN_FAILURES`] within [`SIGN_IN_WINDOW_SECS`], more attempts from that address or for
//! that name are refused without checking the password (429 with `Retry-After`) until the oldest
//! failure is a window old. So guessing costs an attacker a minute per ten guesses of one name
//! from anywhere, or of any name from one address.
//!
//! Someone failing for a name on purpose must not keep its owner out, so the name's count does
//! not hold where the name signed in before: an address (or /64) it signed in from within
//! [`SIGN_IN_KNOWN_DAYS`] is a known place for it, and there only the address's own count holds.
//! To guess from a known place, an attacker would have to share the owner's address, and then
//! the address's count stops them as it stops anyone. (The known places are kept in memory, at
//! most [`MAX_SIGN_IN_KEYS`] of them; a restart forgets them, and the failures with them.)
//!
//! IPv6 addresses are counted by their /64 (one machine commonly has a whole /64 to pick from).
//! Memory is bounded: at most [`MAX_SIGN_IN_KEYS`] addresses and names are remembered, and what a
//! window no longer covers is forgotten first.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::limits::{MAX_SIGN_IN_FAILURES, MAX_SIGN_IN_KEYS, SIGN_IN_KNOWN_DAYS, SIGN_IN_WINDOW_SECS};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Address(IpAddr),
    Name(String),
}

/// The failures of the last window, per address and per name, and where each name signed in.
#[derive(Debug, Default)]
pub struct Limiter {
    failures: Mutex<HashMap<Key, VecDeque<Instant>>>,
    /// A name and an address it signed in from: when it last did.
    known: Mutex<HashMap<(String, IpAddr), Instant>>,
}

const WINDOW: Duration = Duration::from_secs(SIGN_IN_WINDOW_SECS);
const KNOWN_FOR: Duration = Duration::from_secs(SIGN_IN_KNOWN_DAYS * 86_400);

impl Limiter {
    /// `Err(wait)` when the address or the name has used up its failures: try again after `wait`.
    /// The name's count does not hold at a place it is known at.
    pub fn check(&self, address: Option<IpAddr>, name: &str, now: Instant) -> Result<(), Duration> {
        let known = self.is_known(address, name, now);
        let map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let mut wait = Duration::ZERO;
        for key in keys(address, name) {
            if known && matches!(key, Key::Name(_)) {
                continue;
            }
            if let Some(times) = map.get(&key) {
                let recent: Vec<&Instant> = times.iter().filter(|t| now.duration_since(**t) < WINDOW).collect();
                if recent.len() >= MAX_SIGN_IN_FAILURES {
                    // Free again when the oldest of the last MAX failures is a window old.
                    let oldest = recent[recent.len() - MAX_SIGN_IN_FAILURES];
                    wait = wait.max(WINDOW.saturating_sub(now.duration_since(*oldest)));
                }
            }
        }
        if wait.is_zero() {
            Ok(())
        } else {
            Err(wait.max(Duration::from_secs(1)))
        }
    }

    /// Counts a failed sign-in.
    pub fn failed(&self, address: Option<IpAddr>, name: &str, now: Instant) {
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_SIGN_IN_KEYS {
            map.retain(|_, times| times.back().is_some_and(|t| now.duration_since(*t) < WINDOW));
            if map.len() >= MAX_SIGN_IN_KEYS {
                // Full of fresh failures (an attack from very many addresses): start afresh rather
                // than grow; names and addresses still under attack are counted again at once.
                map.clear();
            }
        }
        for key in keys(address, name) {
            let times = map.entry(key).or_default();
            times.push_back(now);
            while times.len() > MAX_SIGN_IN_FAILURES || times.front().is_some_and(|t| now.duration_since(*t) >= WINDOW)
            {
                times.pop_front();
            }
        }
    }

    /// A name signed in from `address`: its failures are forgotten (the address's are not), and
    /// the address is a known place for it.
    pub fn succeeded(&self, address: Option<IpAddr>, name: &str, now: Instant) {
        let name = name_key(name);
        self.failures.lock().unwrap_or_else(|e| e.into_inner()).remove(&Key::Name(name.clone()));
        let Some(address) = address else { return };
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if known.len() >= MAX_SIGN_IN_KEYS {
            known.retain(|_, at| now.duration_since(*at) < KNOWN_FOR);
            // Still full (only successes fill it): the place least recently signed in from goes.
            if known.len() >= MAX_SIGN_IN_KEYS {
                if let Some(oldest) = known.iter().min_by_key(|(_, at)| **at).map(|(k, _)| k.clone()) {
                    known.remove(&oldest);
                }
            }
        }
        known.insert((name, network_of(address)), now);
    }

    /// Whether `name` signed in from `address` within [`KNOWN_FOR`].
    fn is_known(&self, address: Option<IpAddr>, name: &str, now: Instant) -> bool {
        let Some(address) = address else { return false };
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known.get(&(name_key(name), network_of(address))).is_some_and(|at| now.duration_since(*at) < KNOWN_FOR)
    }
}

fn keys(address: Option<IpAddr>, name: &str) -> Vec<Key> {
    let mut keys = vec![Key::Name(name_key(name))];
    if let Some(a) = address {
        keys.push(Key::Address(network_of(a)));
    }
    keys
}

fn name_key(name: &str) -> String {
    name.trim().to_lowercase().chars().take(crate::limits::MAX_USER_NAME).collect()
}

/// An IPv4 address as it is; an IPv6 one as its /64 (an IPv4-mapped one as the IPv4 address).
fn network_of(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V4(_) => a,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_failures_a_minute_per_address_and_per_name() {
        let limiter = Limiter::default();
        let t0 = Instant::now();
        let here: Option<IpAddr> = Some("192.0.2.7".parse().unwrap());
        for i in 0..10 {
            assert!(limiter.check(here, "ann", t0).is_ok(), "attempt {i}");
            limiter.failed(here, "ann", t0 + Duration::from_secs(i));
        }
        let later = t0 + Duration::from_secs(10);
        let wait = limiter.check(here, "ann", later).unwrap_err();
        assert_eq!(wait, Duration::from_secs(50));
        // The name is locked from anywhere, the address for any name.
        assert!(limiter.check(Some("198.51.100.1".parse().unwrap()), "ANN", later).is_err());
        assert!(limiter.check(here, "bob", later).is_err());
        assert!(limiter.check(Some("198.51.100.1".parse().unwrap()), "bob", later).is_ok());
        assert!(limiter.check(here, "ann", t0 + Duration::from_secs(61)).is_ok(), "a window later");
        // One /64 is one address.
        let v6 = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        for i in 0..10 {
            limiter.failed(v6(&format!("2001:db8::{i:x}")), &format!("n{i}"), t0);
        }
        assert!(limiter.check(v6("2001:db8::ffff"), "someone", t0).is_err());
        assert!(limiter.check(v6("2001:db8:0:1::1"), "someone", t0).is_ok());
    }

    #[test]
    fn failures_elsewhere_do_not_lock_a_name_out_where_it_signed_in() {
        let limiter = Limiter::default();
        let t0 = Instant::now();
        let at = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        let (home, office, attacker) = (at("192.0.2.7"), at("2001:db8:1:2::5"), at("203.0.113.9"));
        limiter.succeeded(home, "ann", t0);
        limiter.succeeded(office, "ANN", t0);
        for i in 0..10 {
            limiter.failed(attacker, "ann", t0 + Duration::from_secs(i));
        }
        let later = t0 + Duration::from_secs(10);
        // Locked where she never signed in (and the attacker's address for every name).
        assert!(limiter.check(at("198.51.100.1"), "ann", later).is_err());
        assert!(limiter.check(attacker, "ann", later).is_err());
        // Not at home, nor from another address of her office's /64.
        assert!(limiter.check(home, "ann", later).is_ok());
        assert!(limiter.check(at("2001:db8:1:2::77"), "Ann", later).is_ok());
        // A known place is one for that name only, and for a while.
        assert!(limiter.check(home, "bob", later).is_ok());
        for i in 0..10 {
            limiter.failed(at("203.0.113.10"), "bob", later + Duration::from_secs(i));
        }
        assert!(limiter.check(home, "bob", later + Duration::from_secs(10)).is_err());
        assert!(limiter.check(home, "ann", t0 + KNOWN_FOR + Duration::from_secs(1)).is_ok(), "failures gone by then");
        // Failures at home still count for home.
        for i in 0..10 {
            limiter.failed(home, "ann", later + Duration::from_secs(i));
        }
        assert!(limiter.check(home, "ann", later + Duration::from_secs(10)).is_err());
    }
}
