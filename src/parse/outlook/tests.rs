//! `.msg` files built in the tests, stream by stream, and read back: one-off addresses, transport
//! headers, a whole message, damaged compound files.

use super::*;
use crate::ingest::OLE_MAGIC;

#[test]
fn one_off_addresses_of_list_members() {
    let one_off = |flags: u16, strings: [&str; 3]| {
        let mut b = vec![0u8; 4];
        b.extend_from_slice(&ONE_OFF_PROVIDER);
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&flags.to_le_bytes());
        for s in strings {
            if flags & 0x8000 != 0 {
                b.extend(s.encode_utf16().chain([0]).flat_map(u16::to_le_bytes));
            } else {
                b.extend(s.bytes().chain([0]));
            }
        }
        b
    };
    let cases: Vec<(Vec<u8>, Option<&str>)> = vec![
        (one_off(0x9001, ["Ann Lee", "SMTP", "ann@example.com"]), Some("Ann Lee <ann@example.com>")),
        (one_off(0x0001, ["Bob", "SMTP", "bob@example.com"]), Some("Bob <bob@example.com>")),
        (one_off(0x9001, ["ann@example.com", "SMTP", "ann@example.com"]), Some("ann@example.com")),
        (one_off(0x9001, ["", "SMTP", "cy@example.com"]), Some("cy@example.com")),
        (one_off(0x9001, ["Zoë\r\nBcc: x", "SMTP", "z@example.com"]), Some("Zoë  Bcc: x <z@example.com>")),
        (one_off(0x9001, ["", "", ""]), None),
        // A reference to a contact, not a one-off address.
        (vec![0u8; 40], None),
    ];
    for (bytes, want) in cases {
        assert_eq!(one_off_address(&bytes, None).as_deref(), want, "{bytes:?}");
    }
    // Cut anywhere: nothing, never a panic.
    let whole = one_off(0x9001, ["Ann Lee", "SMTP", "ann@example.com"]);
    for cut in 0..whole.len() {
        assert_eq!(one_off_address(&whole[..cut], None), None);
    }
}

#[test]
fn transport_headers_unfold_and_stop_at_the_body() {
    let h = unfold("Received: a\r\n\tb\r\nSubject: hi\r\nbad line\r\n\r\nX-After: no\r\n");
    assert_eq!(h, vec![("Received".into(), "a b".into()), ("Subject".into(), "hi".into())]);
}

/// A `.msg` written with cfb: `props` are (storage, property tag, value) streams.
fn build(streams: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut cf = cfb::CompoundFile::create(Cursor::new(Vec::new())).expect("create");
    for (path, data) in streams {
        if let Some(parent) = Path::new(path).parent() {
            cf.create_storage_all(parent).expect("storage");
        }
        let mut s = cf.create_stream(path).expect("stream");
        std::io::Write::write_all(&mut s, data).expect("write");
    }
    cf.into_inner().into_inner()
}

fn utf16(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// A property stream with one fixed property (PT_LONG), after a header of `header` bytes.
fn fixed_long(header: usize, id: u16, value: i32) -> Vec<u8> {
    let mut v = vec![0u8; header];
    v.extend_from_slice(&PT_LONG.to_le_bytes());
    v.extend_from_slice(&id.to_le_bytes());
    v.extend_from_slice(&[0; 4]);
    v.extend_from_slice(&value.to_le_bytes());
    v.extend_from_slice(&[0; 4]);
    v
}

#[test]
fn a_msg_becomes_its_internet_message() {
    let inner = "/__attach_version1.0_#00000001/__substg1.0_3701000D";
    let data = build(&[
        ("/__properties_version1.0", vec![0; 32]),
        ("/__substg1.0_0037001F", utf16("Quarterly report")),
        ("/__substg1.0_0C1A001F", utf16("Ann Lee")),
        ("/__substg1.0_5D01001F", utf16("ann@example.com")),
        ("/__substg1.0_0C1E001F", utf16("EX")),
        ("/__substg1.0_0C1F001F", utf16("/O=ORG/OU=EXCHANGE/CN=RECIPIENTS/CN=ANN")),
        ("/__substg1.0_1000001F", utf16("see the chart")),
        ("/__substg1.0_10130102", b"<p>see <img src=\"cid:chart@x\"></p>".to_vec()),
        ("/__recip_version1.0_#00000000/__properties_version1.0", fixed_long(8, RECIPIENT_TYPE, 2)),
        ("/__recip_version1.0_#00000000/__substg1.0_3001001F", utf16("Bob")),
        ("/__recip_version1.0_#00000000/__substg1.0_39FE001F", utf16("bob@example.com")),
        ("/__attach_version1.0_#00000000/__properties_version1.0", fixed_long(8, ATTACH_METHOD, 1)),
        ("/__attach_version1.0_#00000000/__substg1.0_3707001F", utf16("chart.png")),
        ("/__attach_version1.0_#00000000/__substg1.0_3712001F", utf16("chart@x")),
        ("/__attach_version1.0_#00000000/__substg1.0_37010102", b"\x89PNG".to_vec()),
        ("/__attach_version1.0_#00000001/__properties_version1.0", fixed_long(8, ATTACH_METHOD, 5)),
        ("/__attach_version1.0_#00000001/__substg1.0_3001001F", utf16("Earlier mail")),
        (&format!("{inner}/__properties_version1.0"), vec![0; 24]),
        (&format!("{inner}/__substg1.0_0037001E"), b"Caf\xe9 menu".to_vec()),
    ]);
    let msg = parse(Arc::from(data.clone())).expect("parses");
    assert_eq!(msg.summary.subject.as_deref(), Some("Quarterly report"));
    assert_eq!(msg.summary.from.as_deref(), Some("Ann Lee <ann@example.com>"));
    assert_eq!(msg.summary.cc.as_deref(), Some("Bob <bob@example.com>"));
    assert_eq!(msg.given(), &data[..]);
    let html = msg.html_body.expect("html body");
    assert!(String::from_utf8_lossy(msg.parts[html].bytes()).contains("cid:chart@x"));
    let text = msg.text_body.expect("text alternative");
    assert_eq!(msg.parts[text].bytes(), b"see the chart");
    let image = msg.part_by_content_id("chart@x").expect("cid resolves");
    assert_eq!(msg.parts[image].content_type, "image/png");
    assert_eq!(msg.parts[image].filename.as_deref(), Some("chart.png"));
    assert_eq!(msg.parts[image].related_scope.map(|s| msg.parts[s].content_type.as_str()), Some("multipart/related"));
    let enclosed: Vec<_> = msg.nested().collect();
    assert_eq!(enclosed.len(), 1);
    // 8-bit strings without a code page read as Windows-1252.
    assert_eq!(enclosed[0].1.summary.subject.as_deref(), Some("Café menu"));
    // An OLE file with no message in it (a Word document) is not a message.
    assert!(matches!(parse(Arc::from(build(&[("/WordDocument", vec![1, 2, 3])]))), Err(Error::Unparseable)));
}

#[test]
fn damaged_compound_files_become_a_message_that_says_so() {
    let mut data = OLE_MAGIC.to_vec();
    data.extend_from_slice(&[0xff; 600]);
    let c = convert(&data, None).expect("a notice");
    assert!(c.damaged);
    assert!(String::from_utf8_lossy(&c.mime).contains("cannot be read"));
}
