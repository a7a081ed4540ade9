//! Content-codings for answers kept compressed: which coding a request takes, decided as the
//! router's compression layer (tower-http) decides it, so an answer compressed once and kept
//! ([`super::served`]) goes out exactly as that layer would have sent it; and the compression
//! itself, done once per document and coding.

use std::io::Write;

use axum::http::{header, HeaderMap, HeaderValue};
use bytes::Bytes;

/// A content-coding the server sends. The order is the compression layer's preference between
/// codings a request accepts equally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Coding {
    Identity,
    Gzip,
    Brotli,
    Zstd,
}

/// Every coding, in preference order.
const CODINGS: [Coding; 4] = [Coding::Identity, Coding::Gzip, Coding::Brotli, Coding::Zstd];

/// Levels for compressing once and keeping the result: the libraries' usual defaults for gzip
/// and zstd, and a middle brotli quality (11, brotli's own default, takes tens of milliseconds
/// for a page of mail).
const GZIP_LEVEL: u32 = 6;
const BROTLI_QUALITY: u32 = 5;
const BROTLI_WINDOW: u32 = 22;
const ZSTD_LEVEL: i32 = 3;

impl Coding {
    /// Its `Content-Encoding`.
    pub(crate) fn header(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Brotli => "br",
            Coding::Zstd => "zstd",
        })
    }

    fn parse(name: &str) -> Option<Coding> {
        let is = |n: &str| name.eq_ignore_ascii_case(n);
        if is("gzip") || is("x-gzip") {
            Some(Coding::Gzip)
        } else if is("br") {
            Some(Coding::Brotli)
        } else if is("zstd") {
            Some(Coding::Zstd)
        } else if is("identity") {
            Some(Coding::Identity)
        } else {
            None
        }
    }

    /// `bytes` in this coding.
    pub(crate) fn compress(self, bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        match self {
            Coding::Identity => Ok(bytes.to_vec()),
            Coding::Gzip => {
                let mut gz = flate2::write::GzEncoder::new(
                    Vec::with_capacity(bytes.len() / 3),
                    flate2::Compression::new(GZIP_LEVEL),
                );
                gz.write_all(bytes)?;
                gz.finish()
            }
            Coding::Brotli => {
                let mut br = brotli::CompressorWriter::new(
                    Vec::with_capacity(bytes.len() / 3),
                    4096,
                    BROTLI_QUALITY,
                    BROTLI_WINDOW,
                );
                br.write_all(bytes)?;
                br.flush()?;
                Ok(br.into_inner())
            }
            Coding::Zstd => zstd::bulk::compress(bytes, ZSTD_LEVEL),
        }
    }
}

/// Compressed bytes, for an answer that keeps them.
pub(crate) fn compressed(coding: Coding, bytes: &[u8]) -> Option<Bytes> {
    match coding.compress(bytes) {
        Ok(out) => Some(Bytes::from(out)),
        Err(e) => {
            tracing::warn!(error = %e, "could not compress an answer");
            None
        }
    }
}

/// A q-value in thousandths, as `Accept-Encoding` gives it (`q=0.5` is 500); `None` when malformed.
fn qvalue(s: &str) -> Option<u16> {
    let rest = s.strip_prefix(['q', 'Q'])?.strip_prefix('=')?;
    let mut chars = rest.chars();
    let mut value: u16 = match chars.next()? {
        '0' => 0,
        '1' => 1000,
        _ => return None,
    };
    match chars.next() {
        None => return Some(value),
        Some('.') => {}
        Some(_) => return None,
    }
    let mut factor = 100;
    for c in chars {
        let digit = c.to_digit(10)? as u16;
        if factor < 1 {
            return None;
        }
        value += factor * digit;
        factor /= 10;
    }
    (value <= 1000).then_some(value)
}

/// Each `Accept-Encoding` item: its coding name (trimmed) and its q-value (`None` when malformed;
/// 1000 when not given).
fn items(req: &HeaderMap) -> impl Iterator<Item = (&str, Option<u16>)> {
    req.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).flat_map(|s| s.split(',')).map(|item| {
        let mut it = item.splitn(2, ';');
        let name = it.next().unwrap_or("").trim();
        let q = match it.next() {
            Some(q) => qvalue(q.trim()),
            None => Some(1000),
        };
        (name, q)
    })
}

/// The coding a request gets, as the compression layer chooses it (RFC 9110 §12.5.3): the highest
/// q-value among the codings named, `*` standing for those not named, ties to the later coding of
/// [`Coding`]; identity when nothing is named. `None` when every coding is refused (the layer then
/// answers 406).
pub(crate) fn preferred(req: &HeaderMap) -> Option<Coding> {
    let explicit: Vec<(Coding, u16)> = items(req).filter_map(|(name, q)| Some((Coding::parse(name)?, q?))).collect();
    let best = |pairs: &mut dyn Iterator<Item = (Coding, u16)>| {
        pairs.filter(|&(_, q)| q > 0).max_by_key(|&(c, q)| (q, c)).map(|(c, _)| c)
    };
    let wildcard = items(req).find_map(|(name, q)| (name == "*").then_some(q).flatten());
    match wildcard {
        None => best(&mut explicit.iter().copied()).or_else(|| {
            let identity_refused = explicit.iter().any(|&(c, q)| c == Coding::Identity && q == 0);
            (!identity_refused).then_some(Coding::Identity)
        }),
        Some(w) => best(&mut CODINGS.iter().map(|&c| {
            let q = explicit.iter().find(|&&(e, _)| e == c).map_or(w, |&(_, q)| q);
            (c, q)
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn codings_are_chosen_as_the_compression_layer_chooses_them() {
        use Coding::*;
        let cases: &[(&[&str], Option<Coding>)] = &[
            (&[], Some(Identity)),
            (&["gzip"], Some(Gzip)),
            (&["x-gzip"], Some(Gzip)),
            (&["gzip, deflate, br"], Some(Brotli)),
            (&["gzip, deflate, br, zstd"], Some(Zstd)),
            (&["deflate"], Some(Identity)),
            (&["gzip;q=0.5, br;q=0.4"], Some(Gzip)),
            (&["gzip;q=0.5", "br;q=0.9"], Some(Brotli)),
            (&["gzip;q=0, br;q=0"], Some(Identity)),
            (&["identity;q=0"], None),
            (&["identity;q=0, gzip"], Some(Gzip)),
            (&["*"], Some(Zstd)),
            (&["*;q=0"], None),
            (&["*;q=0, gzip"], Some(Gzip)),
            (&["zstd;q=0, *"], Some(Brotli)),
            (&["gzip;q=1.5"], Some(Identity)),
            (&["gzip;q=0.1234"], Some(Identity)),
            (&["GZIP;Q=1"], Some(Gzip)),
            (&["compress, sdch"], Some(Identity)),
        ];
        for (values, want) in cases {
            assert_eq!(preferred(&accept(values)), *want, "{values:?}");
        }
    }

    #[test]
    fn compressed_bytes_decompress_to_the_original() {
        let text = "<p>a page of mail</p>".repeat(500);
        for coding in [Coding::Gzip, Coding::Brotli, Coding::Zstd] {
            let out = coding.compress(text.as_bytes()).unwrap();
            assert!(out.len() < text.len() / 4, "{coding:?}");
            let mut back = Vec::new();
            match coding {
                Coding::Gzip => {
                    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&out[..]), &mut back).unwrap();
                }
                Coding::Brotli => {
                    brotli::BrotliDecompress(&mut &out[..], &mut back).unwrap();
                }
                _ => back = zstd::stream::decode_all(&out[..]).unwrap(),
            }
            assert_eq!(back, text.as_bytes(), "{coding:?}");
        }
    }
}
