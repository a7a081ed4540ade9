//! Failed sign-ins, counted per client address and per name: after
//! [`MAX_SIGN_IN_FAILURES`] within [`SIGN_IN_WINDOW_SECS`], more attempts from that address or for
//! that name are refused without checking the password (429 with `Retry-After`) until the oldest
//! failure is a window old. So guessing costs an attacker a minute per ten guesses of one name
//! from anywhere, or of any name from one address; the price is that someone failing for a name
//! on purpose keeps its owner out for that minute too.
//!
//! IPv6 addresses are counted by their /64 (one machine commonly has a whole /64 to pick from).
//! Memory is bounded: at most [`MAX_SIGN_IN_KEYS`] addresses and names are remembered, and what a
//! window no longer covers is forgotten first.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::limits::{MAX_SIGN_IN_FAILURES, MAX_SIGN_IN_KEYS, SIGN_IN_WINDOW_SECS};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Address(IpAddr),
    Name(String),
}

/// The failures of the last window, per address and per name.
#[derive(Debug, Default)]
pub struct Limiter {
    failures: Mutex<HashMap<Key, VecDeque<Instant>>>,
}

const WINDOW: Duration = Duration::from_secs(SIGN_IN_WINDOW_SECS);

impl Limiter {
    /// `Err(wait)` when the address or the name has used up its failures: try again after `wait`.
    pub fn check(&self, address: Option<IpAddr>, name: &str, now: Instant) -> Result<(), Duration> {
        let map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let mut wait = Duration::ZERO;
        for key in keys(address, name) {
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

    /// A name signed in: its failures are forgotten (the address's are not).
    pub fn succeeded(&self, name: &str) {
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(&Key::Name(name_key(name)));
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
        limiter.succeeded("bob");
    }
}
