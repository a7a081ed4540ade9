//! Property lists (Apple's binary `bplist00` and XML forms) read through the `plist` crate's event
//! stream into a small tree of our own, with bounds: a property list is hostile input like any
//! other. The binary form lets one object be referenced from many places, so a file of a few
//! hundred bytes can stand for a tree of billions of values, and either form can nest without end.
//! Reading stops at [`MAX_PLIST_DEPTH`] levels, [`MAX_PLIST_VALUES`] values and a budget of string
//! and data bytes; what was read up to then is kept, with the reason it stopped. Reference loops
//! are refused by the crate's binary reader; nesting here is bounded, so building and dropping the
//! tree never recurses deeper than the bound.

use std::io::Cursor;

use plist::stream::{Event, Reader};

use crate::limits::{MAX_PLIST_DEPTH, MAX_PLIST_EXTRA_BYTES, MAX_PLIST_VALUES};

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    Dict(Vec<(String, Value)>),
    Array(Vec<Value>),
    String(String),
    Data(Vec<u8>),
    Integer(i128),
    Real(f64),
    Bool(bool),
    /// Dates and UIDs: nothing mailshelf reads.
    Other,
}

impl Value {
    pub(super) fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Dict(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(super) fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub(super) fn as_data(&self) -> Option<&[u8]> {
        match self {
            Value::Data(d) => Some(d),
            // Some writers keep text resources as strings.
            Value::String(s) => Some(s.as_bytes()),
            _ => None,
        }
    }

    pub(super) fn as_array(&self) -> &[Value] {
        match self {
            Value::Array(a) => a,
            _ => &[],
        }
    }

    pub(super) fn as_integer(&self) -> Option<i128> {
        match self {
            Value::Integer(i) => Some(*i),
            Value::Real(r) if r.is_finite() => Some(*r as i128),
            _ => None,
        }
    }
}

/// A property list read as far as it could be: the tree (`None` when not even its first value
/// was read) and, when reading stopped early, why.
#[derive(Debug)]
pub(super) struct Read {
    pub value: Option<Value>,
    pub problem: Option<String>,
}

/// A collection being filled: a dictionary waits for a key, then for its value.
enum Open {
    Array(Vec<Value>),
    Dict(Vec<(String, Value)>, Option<String>),
}

/// Reads a property list in either form, within the bounds.
pub(super) fn read(bytes: &[u8]) -> Read {
    let mut byte_budget = bytes.len().saturating_add(MAX_PLIST_EXTRA_BYTES);
    let mut stack: Vec<Open> = Vec::new();
    let mut root: Option<Value> = None;
    let mut problem = None;
    let mut values = 0usize;
    for event in Reader::new(Cursor::new(bytes)) {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                problem = Some(format!("the property list is damaged ({e})"));
                break;
            }
        };
        values += 1;
        if values > MAX_PLIST_VALUES {
            problem = Some(format!("the property list holds more than {MAX_PLIST_VALUES} values"));
            break;
        }
        let leaf = match event {
            Event::StartArray(_) | Event::StartDictionary(_) if stack.len() >= MAX_PLIST_DEPTH => {
                problem = Some(format!("the property list nests deeper than {MAX_PLIST_DEPTH} levels"));
                break;
            }
            Event::StartArray(_) => {
                stack.push(Open::Array(Vec::new()));
                continue;
            }
            Event::StartDictionary(_) => {
                stack.push(Open::Dict(Vec::new(), None));
                continue;
            }
            Event::EndCollection => match stack.pop() {
                Some(Open::Array(a)) => Value::Array(a),
                Some(Open::Dict(d, _)) => Value::Dict(d),
                None => break,
            },
            Event::String(s) => {
                byte_budget = match byte_budget.checked_sub(s.len()) {
                    Some(b) => b,
                    None => {
                        problem = Some("the property list holds more text and data than its size allows".into());
                        break;
                    }
                };
                Value::String(s.into_owned())
            }
            Event::Data(d) => {
                byte_budget = match byte_budget.checked_sub(d.len()) {
                    Some(b) => b,
                    None => {
                        problem = Some("the property list holds more text and data than its size allows".into());
                        break;
                    }
                };
                Value::Data(d.into_owned())
            }
            Event::Boolean(b) => Value::Bool(b),
            Event::Integer(i) => {
                Value::Integer(i.as_signed().map(i128::from).or(i.as_unsigned().map(i128::from)).unwrap_or(0))
            }
            Event::Real(r) => Value::Real(r),
            _ => Value::Other,
        };
        match stack.last_mut() {
            None => {
                root = Some(leaf);
                break;
            }
            Some(Open::Array(a)) => a.push(leaf),
            Some(Open::Dict(d, key)) => match key.take() {
                Some(k) => d.push((k, leaf)),
                None => match leaf {
                    Value::String(k) => *key = Some(k),
                    _ => {
                        problem = Some("a dictionary key in the property list is not a string".into());
                        break;
                    }
                },
            },
        }
    }
    // Whatever was open when reading stopped is closed as it stands, innermost first.
    while let Some(open) = stack.pop() {
        let v = match open {
            Open::Array(a) => Value::Array(a),
            Open::Dict(d, _) => Value::Dict(d),
        };
        match stack.last_mut() {
            None => root = Some(v),
            Some(Open::Array(a)) => a.push(v),
            Some(Open::Dict(d, key)) => {
                if let Some(k) = key.take() {
                    d.push((k, v));
                }
            }
        }
        if problem.is_none() {
            problem = Some("the property list ends early".into());
        }
    }
    if root.is_none() && problem.is_none() {
        problem = Some("the property list is empty".into());
    }
    Read { value: root, problem }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary property list from its objects (already encoded) and the index of the root.
    pub(crate) fn bplist(objects: &[Vec<u8>], root: u64) -> Vec<u8> {
        let mut out = b"bplist00".to_vec();
        let mut offsets = Vec::new();
        for o in objects {
            offsets.push(out.len() as u64);
            out.extend_from_slice(o);
        }
        let table = out.len() as u64;
        for o in &offsets {
            out.extend_from_slice(&(*o as u32).to_be_bytes());
        }
        out.extend_from_slice(&[0; 6]);
        out.push(4); // offset size
        out.push(2); // reference size
        out.extend_from_slice(&(objects.len() as u64).to_be_bytes());
        out.extend_from_slice(&root.to_be_bytes());
        out.extend_from_slice(&table.to_be_bytes());
        out
    }

    /// An array object referencing `refs` (2-byte references).
    pub(crate) fn array(refs: &[u16]) -> Vec<u8> {
        let mut o = vec![0xA0 | refs.len() as u8];
        for r in refs {
            o.extend_from_slice(&r.to_be_bytes());
        }
        o
    }

    fn bounded(bytes: &[u8]) -> (Read, std::time::Duration) {
        let t = std::time::Instant::now();
        let r = read(bytes);
        (r, t.elapsed())
    }

    #[test]
    fn reads_both_forms() {
        let xml = b"<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>flags</key><integer>8623689857</integer><key>name</key><string>x</string></dict></plist>";
        let r = read(xml);
        assert_eq!(r.problem, None);
        let v = r.value.expect("value");
        assert_eq!(v.get("flags").and_then(Value::as_integer), Some(8_623_689_857));
        assert_eq!(v.get("name").and_then(Value::as_str), Some("x"));
        // [ "ab" ]
        let bin = bplist(&[array(&[1]), b"\x52ab".to_vec()], 0);
        assert_eq!(read(&bin).value, Some(Value::Array(vec![Value::String("ab".into())])));
    }

    #[test]
    fn hostile_property_lists_stay_bounded() {
        // Each array references the one before it twice: 2^60 leaves from 61 objects.
        let mut objects = vec![b"\x41x".to_vec()];
        for i in 0..60u16 {
            objects.push(array(&[i, i]));
        }
        let shared = bplist(&objects, 60);
        // An array that contains itself, and two that contain each other.
        let self_loop = bplist(&[array(&[0])], 0);
        let pair_loop = bplist(&[array(&[1]), array(&[0])], 0);
        // A huge declared count: an array claiming 2^40 entries in a tiny file.
        let mut huge = vec![0xAF, 0x13];
        huge.extend_from_slice(&(1u64 << 40).to_be_bytes());
        let huge_count = bplist(&[huge], 0);
        // A trailer claiming 2^62 objects at an offset far outside the file.
        let mut bad_trailer = b"bplist00\x08".to_vec();
        bad_trailer.extend_from_slice(&[0; 6]);
        bad_trailer.extend_from_slice(&[8, 8]);
        bad_trailer.extend_from_slice(&(1u64 << 62).to_be_bytes());
        bad_trailer.extend_from_slice(&0u64.to_be_bytes());
        bad_trailer.extend_from_slice(&(u64::MAX - 7).to_be_bytes());
        // XML nested a million levels deep, and unterminated.
        let deep_xml = format!("<plist>{}", "<array>".repeat(1_000_000)).into_bytes();
        let deep_bin = {
            let objects: Vec<Vec<u8>> =
                (0..5000u16).map(|i| if i == 4999 { array(&[]) } else { array(&[i + 1]) }).collect();
            bplist(&objects, 0)
        };
        for (name, input) in [
            ("shared references", &shared),
            ("self loop", &self_loop),
            ("pair loop", &pair_loop),
            ("huge count", &huge_count),
            ("bad trailer", &bad_trailer),
            ("deep xml", &deep_xml),
            ("deep binary", &deep_bin),
        ] {
            let (r, took) = bounded(input);
            assert!(r.problem.is_some(), "{name}: should report a problem");
            assert!(took < std::time::Duration::from_secs(10), "{name}: took {took:?}");
        }
    }
}
