//! ASN.1 as S/MIME agents and PKCS#12 writers really send it, made readable by RustCrypto's
//! DER-only types: [`to_der`] turns BER (indefinite lengths, strings sent in pieces, as
//! Thunderbird, OpenSSL's streaming mode and Windows write them) into DER, and [`Tlv`] walks DER
//! item by item, for the exact bytes a signature covers (a certificate's `tbsCertificate`, a
//! signer's signed attributes) rather than a re-encoding of them.
//!
//! Every read is checked against what is left of the input, nesting stops at
//! [`MAX_ASN1_DEPTH`], and a structure of more than [`MAX_ASN1_ITEMS`] items is refused, so a
//! hostile blob costs at most a pass over its own bytes and memory in proportion to them.

use std::borrow::Cow;

use crate::limits::{MAX_ASN1_DEPTH, MAX_ASN1_ITEMS};

/// Why bytes do not read as ASN.1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asn1Error(pub &'static str);

impl std::fmt::Display for Asn1Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

type Result<T> = std::result::Result<T, Asn1Error>;

/// One DER item: its identifier octet, its contents, and the whole encoding.
#[derive(Debug, Clone, Copy)]
pub struct Tlv<'a> {
    pub tag: u8,
    pub value: &'a [u8],
    pub whole: &'a [u8],
}

impl<'a> Tlv<'a> {
    /// The first item of `input` (definite lengths only) and what follows it.
    pub fn read(input: &'a [u8]) -> Result<(Tlv<'a>, &'a [u8])> {
        let &tag = input.first().ok_or(Asn1Error("the data ends early"))?;
        if tag & 0x1f == 0x1f {
            return Err(Asn1Error("a high tag number, which these structures never use"));
        }
        let (len, header) = match read_length(input.get(1..).unwrap_or(&[]))? {
            (Some(len), n) => (len, 1 + n),
            (None, _) => return Err(Asn1Error("an indefinite length where DER was expected")),
        };
        let end = header.checked_add(len).ok_or(Asn1Error("a length beyond the data"))?;
        let whole = input.get(..end).ok_or(Asn1Error("a length beyond the data"))?;
        Ok((Tlv { tag, value: &whole[header..], whole }, &input[end..]))
    }

    /// The only item of `input`, which must hold nothing else.
    pub fn single(input: &'a [u8]) -> Result<Tlv<'a>> {
        match Tlv::read(input)? {
            (t, []) => Ok(t),
            _ => Err(Asn1Error("data after the structure")),
        }
    }

    /// The items inside a constructed item, in order.
    pub fn children(&self) -> Result<Vec<Tlv<'a>>> {
        let mut out = Vec::new();
        let mut rest = self.value;
        while !rest.is_empty() {
            let (t, r) = Tlv::read(rest)?;
            out.push(t);
            rest = r;
        }
        Ok(out)
    }
}

/// A length: `(Some(n), octets read)`, or `(None, 1)` for the indefinite form.
fn read_length(input: &[u8]) -> Result<(Option<usize>, usize)> {
    let &first = input.first().ok_or(Asn1Error("the data ends early"))?;
    match first {
        0x80 => Ok((None, 1)),
        n if n < 0x80 => Ok((Some(usize::from(n)), 1)),
        n => {
            let count = usize::from(n & 0x7f);
            if count > 4 {
                return Err(Asn1Error("a length of more than four octets"));
            }
            let octets = input.get(1..1 + count).ok_or(Asn1Error("the data ends early"))?;
            let len = octets.iter().fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
            Ok((Some(len), 1 + count))
        }
    }
}

/// An item read from BER: its identifier octet and either its contents or its children.
#[derive(Debug)]
struct Node<'a> {
    tag: u8,
    body: NodeBody<'a>,
    /// Length of the contents once encoded as DER (filled in before writing).
    len: usize,
}

#[derive(Debug)]
enum NodeBody<'a> {
    Primitive(Cow<'a, [u8]>),
    Constructed(Vec<Node<'a>>),
}

/// Universal string types, which BER may send constructed (in pieces) and DER sends whole.
fn is_string_type(tag: u8) -> bool {
    matches!(tag & 0x1f, 3 | 4 | 12 | 18 | 19 | 20 | 21 | 22 | 25 | 26 | 27 | 28 | 30) && tag & 0xc0 == 0
}

struct Reader {
    items: usize,
    /// Whether anything had to change: DER input is given back as it is.
    changed: bool,
}

impl Reader {
    fn node<'a>(&mut self, input: &'a [u8], depth: usize) -> Result<(Node<'a>, &'a [u8])> {
        if depth > MAX_ASN1_DEPTH {
            return Err(Asn1Error("nested too deeply"));
        }
        self.items += 1;
        if self.items > MAX_ASN1_ITEMS {
            return Err(Asn1Error("too many items"));
        }
        let &tag = input.first().ok_or(Asn1Error("the data ends early"))?;
        if tag & 0x1f == 0x1f {
            return Err(Asn1Error("a high tag number, which these structures never use"));
        }
        let constructed = tag & 0x20 != 0;
        let (len, n) = read_length(input.get(1..).unwrap_or(&[]))?;
        let after_header = &input[1 + n..];
        match len {
            Some(len) if !constructed => {
                let value = after_header.get(..len).ok_or(Asn1Error("a length beyond the data"))?;
                Ok((Node { tag, body: NodeBody::Primitive(Cow::Borrowed(value)), len: 0 }, &after_header[len..]))
            }
            Some(len) => {
                let mut inner = after_header.get(..len).ok_or(Asn1Error("a length beyond the data"))?;
                let mut children = Vec::new();
                while !inner.is_empty() {
                    let (child, rest) = self.node(inner, depth + 1)?;
                    children.push(child);
                    inner = rest;
                }
                Ok((self.finish(tag, children)?, &after_header[len..]))
            }
            None if !constructed => Err(Asn1Error("an indefinite length on a primitive item")),
            None => {
                self.changed = true;
                let mut rest = after_header;
                let mut children = Vec::new();
                loop {
                    if rest.starts_with(&[0, 0]) {
                        rest = &rest[2..];
                        break;
                    }
                    if rest.is_empty() {
                        return Err(Asn1Error("the data ends before the end of an item"));
                    }
                    let (child, r) = self.node(rest, depth + 1)?;
                    children.push(child);
                    rest = r;
                }
                Ok((self.finish(tag, children)?, rest))
            }
        }
    }

    /// A constructed item as DER has it: a string sent in pieces made whole; the content of an
    /// `EncryptedContentInfo` (RFC 5652 §6.1: `[0] IMPLICIT OCTET STRING`) too, which BER writers
    /// send as a constructed `[0]` of pieces.
    fn finish<'a>(&mut self, tag: u8, mut children: Vec<Node<'a>>) -> Result<Node<'a>> {
        if is_string_type(tag & !0x20) {
            self.changed = true;
            let joined = join_pieces(tag & 0x1f == 3, &children)?;
            return Ok(Node { tag: tag & !0x20, body: NodeBody::Primitive(Cow::Owned(joined)), len: 0 });
        }
        let encrypted_content_info = tag == 0x30
            && children.len() == 3
            && children[0].tag == 0x06
            && children[1].tag == 0x30
            && children[2].tag == 0xa0
            && matches!(&children[2].body, NodeBody::Constructed(c) if c.iter().all(|p| p.tag == 0x04));
        if encrypted_content_info {
            self.changed = true;
            if let Some(last) = children.pop() {
                let NodeBody::Constructed(pieces) = &last.body else { return Err(Asn1Error("unreachable")) };
                let joined = join_pieces(false, pieces)?;
                children.push(Node { tag: 0x80, body: NodeBody::Primitive(Cow::Owned(joined)), len: 0 });
            }
        }
        Ok(Node { tag, body: NodeBody::Constructed(children), len: 0 })
    }
}

/// The contents of a string's pieces, in order (already made whole by [`Reader::finish`]). For a
/// BIT STRING, each piece starts with its count of unused bits, which only the last may have.
fn join_pieces(bits: bool, pieces: &[Node<'_>]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    if bits {
        out.push(0);
    }
    for (i, p) in pieces.iter().enumerate() {
        let NodeBody::Primitive(data) = &p.body else {
            return Err(Asn1Error("a string piece that is not a string"));
        };
        if bits {
            let (&unused, rest) = data.split_first().ok_or(Asn1Error("an empty BIT STRING piece"))?;
            if unused != 0 && i + 1 != pieces.len() {
                return Err(Asn1Error("unused bits inside a BIT STRING"));
            }
            out[0] = unused;
            out.extend_from_slice(rest);
        } else {
            out.extend_from_slice(data);
        }
    }
    Ok(out)
}

fn length_octets(len: usize) -> usize {
    match len {
        0..=0x7f => 1,
        0x80..=0xff => 2,
        0x100..=0xffff => 3,
        0x1_0000..=0xff_ffff => 4,
        _ => 5,
    }
}

/// Fills in every node's DER content length; returns the node's whole encoded length.
fn measure(node: &mut Node<'_>) -> usize {
    node.len = match &mut node.body {
        NodeBody::Primitive(data) => data.len(),
        NodeBody::Constructed(children) => children.iter_mut().map(measure).sum(),
    };
    1 + length_octets(node.len) + node.len
}

fn write(node: &Node<'_>, out: &mut Vec<u8>) {
    out.push(node.tag);
    let len = node.len;
    match length_octets(len) {
        1 => out.push(len as u8),
        n => {
            out.push(0x80 | (n - 1) as u8);
            for i in (0..n - 1).rev() {
                out.push((len >> (8 * i)) as u8);
            }
        }
    }
    match &node.body {
        NodeBody::Primitive(data) => out.extend_from_slice(data),
        NodeBody::Constructed(children) => children.iter().for_each(|c| write(c, out)),
    }
}

/// `input` (one BER item, possibly followed by nothing but padding zeros) as DER; borrowed when it
/// already is. Sets are not re-sorted: what DER decoders check there, they check themselves.
pub fn to_der(input: &[u8]) -> Result<Cow<'_, [u8]>> {
    let mut reader = Reader { items: 0, changed: false };
    let (mut root, rest) = reader.node(input, 0)?;
    if !rest.iter().all(|&b| b == 0) {
        return Err(Asn1Error("data after the structure"));
    }
    if !reader.changed {
        let used = input.len() - rest.len();
        return Ok(Cow::Borrowed(&input[..used]));
    }
    let total = measure(&mut root);
    let mut out = Vec::with_capacity(total);
    write(&root, &mut out);
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ber_becomes_der() {
        let cases: &[(&str, &[u8], &[u8])] = &[
            ("DER stays as it is", &[0x30, 0x03, 0x02, 0x01, 0x05], &[0x30, 0x03, 0x02, 0x01, 0x05]),
            (
                "an indefinite length becomes definite",
                &[0x30, 0x80, 0x02, 0x01, 0x05, 0x00, 0x00],
                &[0x30, 0x03, 0x02, 0x01, 0x05],
            ),
            (
                "an OCTET STRING in pieces becomes whole",
                &[0x24, 0x80, 0x04, 0x02, b'a', b'b', 0x04, 0x01, b'c', 0x00, 0x00],
                &[0x04, 0x03, b'a', b'b', b'c'],
            ),
            (
                "pieces of pieces",
                &[0x24, 0x08, 0x24, 0x03, 0x04, 0x01, b'a', 0x04, 0x01, b'b'],
                &[0x04, 0x02, b'a', b'b'],
            ),
            (
                "a BIT STRING in pieces keeps the last piece's unused bits",
                &[0x23, 0x08, 0x03, 0x02, 0x00, 0xff, 0x03, 0x02, 0x04, 0xf0],
                &[0x03, 0x03, 0x04, 0xff, 0xf0],
            ),
            (
                "an EncryptedContentInfo's content in pieces becomes [0] IMPLICIT",
                &[
                    0x30, 0x80, 0x06, 0x01, 0x2a, 0x30, 0x00, 0xa0, 0x80, 0x04, 0x01, b'x', 0x04, 0x01, b'y', 0x00,
                    0x00, 0x00, 0x00,
                ],
                &[0x30, 0x09, 0x06, 0x01, 0x2a, 0x30, 0x00, 0x80, 0x02, b'x', b'y'],
            ),
            (
                "an explicit [0] around one OCTET STRING is kept",
                &[0x30, 0x80, 0x06, 0x01, 0x2a, 0xa0, 0x80, 0x04, 0x01, b'x', 0x00, 0x00, 0x00, 0x00],
                &[0x30, 0x08, 0x06, 0x01, 0x2a, 0xa0, 0x03, 0x04, 0x01, b'x'],
            ),
            ("trailing zeros are padding", &[0x05, 0x00, 0x00, 0x00], &[0x05, 0x00]),
        ];
        for (name, ber, der) in cases {
            assert_eq!(to_der(ber).as_deref(), Ok(*der), "{name}");
        }
    }

    #[test]
    fn long_contents_get_long_lengths() {
        let mut ber = vec![0x24, 0x80];
        for _ in 0..300 {
            ber.extend_from_slice(&[0x04, 0x01, b'z']);
        }
        ber.extend_from_slice(&[0, 0]);
        let der = to_der(&ber).expect("reads");
        assert_eq!(&der[..4], &[0x04, 0x82, 0x01, 0x2c]);
        assert_eq!(der.len(), 4 + 300);
        let t = Tlv::single(&der).expect("DER");
        assert_eq!(t.value.len(), 300);
    }

    #[test]
    fn broken_input_is_an_error_not_a_panic() {
        let cases: &[(&str, &[u8])] = &[
            ("empty", &[]),
            ("cut header", &[0x30]),
            ("cut length", &[0x30, 0x82, 0x01]),
            ("length beyond the data", &[0x04, 0x05, 1, 2]),
            ("indefinite primitive", &[0x04, 0x80, 0x00, 0x00]),
            ("no end of contents", &[0x30, 0x80, 0x02, 0x01, 0x05]),
            ("five length octets", &[0x04, 0x85, 0, 0, 0, 0, 1]),
            ("high tag number", &[0x1f, 0x81, 0x00, 0x00]),
            ("junk after", &[0x05, 0x00, 0x01]),
            ("string piece that is constructed SEQUENCE", &[0x24, 0x02, 0x30, 0x00]),
        ];
        for (name, input) in cases {
            assert!(to_der(input).is_err(), "{name}");
        }
        let deep: Vec<u8> = std::iter::repeat_n([0x30u8, 0x80], 10_000).flatten().collect();
        assert_eq!(to_der(&deep), Err(Asn1Error("nested too deeply")));
    }

    #[test]
    fn tlv_walks_der() {
        let der = [0x30, 0x06, 0x02, 0x01, 0x05, 0x04, 0x01, b'a'];
        let seq = Tlv::single(&der).expect("one item");
        let kids = seq.children().expect("children");
        assert_eq!(kids.len(), 2);
        assert_eq!((kids[0].tag, kids[0].value), (0x02, &[5u8][..]));
        assert_eq!(kids[1].whole, &[0x04, 0x01, b'a']);
        assert!(Tlv::single(&[0x30, 0x80, 0, 0]).is_err());
    }
}
