//! Thumbnails of image attachments, free of HTTP: decoded within bounds, shrunk to fit a small
//! box, and kept in a cache bounded by bytes.
//!
//! An attachment's bytes are hostile. They are sniffed (never trusted for their declared type),
//! decoded with `image::Limits` on dimensions and memory so a small file that claims to be a huge
//! picture (a decompression bomb) is refused before it allocates, and decoded a few at a time on
//! the blocking pool. Anything that does not decode is "no thumbnail", never an error: the page
//! shows a file icon instead. An image that already fits the box is given as it is (a thumbnail is
//! never larger than its original); a larger one is shrunk and written as PNG when it has
//! transparency or came from a lossless format, else as JPEG.

use std::io::Cursor;
use std::sync::Arc;

use bytes::Bytes;
use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};
use quick_cache::sync::Cache;
use tokio::sync::Semaphore;

use crate::error::Error;
use crate::index::ContentHash;
use crate::limits::{MAX_THUMB_ALLOC, MAX_THUMB_CACHE, MAX_THUMB_DECODES, MAX_THUMB_SIDE, THUMB_AS_IS, THUMB_BOX};

/// A thumbnail ready to serve: its bytes and their type.
#[derive(Clone, Debug, PartialEq)]
pub struct Thumb {
    pub bytes: Bytes,
    pub content_type: &'static str,
    /// Width and height in pixels.
    pub size: (u32, u32),
    /// The original's own bytes, as it already fit.
    pub original: bool,
}

/// The message (by the hash of its bytes, so the key never goes stale) and the part's section.
type Key = (ContentHash, String);

/// `None` is kept too: an image that failed to decode fails again, and a bomb should cost once.
type Cached = Option<Thumb>;

#[derive(Clone)]
struct Weight;

impl quick_cache::Weighter<Key, Cached> for Weight {
    fn weight(&self, key: &Key, val: &Cached) -> u64 {
        let bytes = val.as_ref().map_or(0, |t| t.bytes.len());
        (bytes + key.1.len() + 64) as u64
    }
}

/// Thumbnails made so far, and the gate that keeps decodes few at a time.
pub struct Thumbnails {
    cache: Cache<Key, Cached, Weight>,
    decodes: Arc<Semaphore>,
}

impl Default for Thumbnails {
    fn default() -> Self {
        Thumbnails {
            cache: Cache::with_weighter(1024, MAX_THUMB_CACHE, Weight),
            decodes: Arc::new(Semaphore::new(MAX_THUMB_DECODES)),
        }
    }
}

impl Thumbnails {
    /// The thumbnail of `bytes` (part `section` of the message with hash `hash`), from the cache
    /// or made on the blocking pool; `None` when the bytes are not an image mailshelf can shrink.
    pub async fn get(&self, hash: ContentHash, section: &str, bytes: Bytes) -> Result<Option<Thumb>, Error> {
        let key = (hash, section.to_string());
        if let Some(hit) = self.cache.get(&key) {
            return Ok(hit);
        }
        // Waiting here, not on the blocking pool: a burst of requests for large images queues
        // instead of decoding dozens at once, each with its own memory allowance.
        let permit = self.decodes.clone().acquire_owned().await.map_err(|e| Error::internal("thumbnail gate", e))?;
        let made = crate::view::blocking(move || {
            let out = make(&bytes);
            drop(permit);
            Ok(out)
        })
        .await?;
        self.cache.insert(key, made.clone());
        Ok(made)
    }
}

/// The image formats decoded (the `image` crate is built with only these codecs), and the type
/// each is served as.
fn served_as(format: ImageFormat) -> Option<&'static str> {
    match format {
        ImageFormat::Png => Some("image/png"),
        ImageFormat::Jpeg => Some("image/jpeg"),
        ImageFormat::Gif => Some("image/gif"),
        ImageFormat::WebP => Some("image/webp"),
        ImageFormat::Bmp => Some("image/bmp"),
        _ => None,
    }
}

/// Whether a served Content-Type is one a thumbnail may be made of (the page shows an icon for the
/// rest without asking).
pub(crate) fn is_thumbnailable(content_type: &str) -> bool {
    matches!(
        content_type,
        "image/png"
            | "image/jpeg"
            | "image/pjpeg"
            | "image/jpg"
            | "image/gif"
            | "image/webp"
            | "image/bmp"
            | "image/x-ms-bmp"
    )
}

fn limits() -> Limits {
    let mut l = Limits::default();
    l.max_image_width = Some(MAX_THUMB_SIDE);
    l.max_image_height = Some(MAX_THUMB_SIDE);
    l.max_alloc = Some(MAX_THUMB_ALLOC);
    l
}

fn reader(bytes: &[u8]) -> Option<ImageReader<Cursor<&[u8]>>> {
    let mut r = ImageReader::new(Cursor::new(bytes)).with_guessed_format().ok()?;
    r.limits(limits());
    Some(r)
}

/// Makes the thumbnail of `bytes`. Blocking: call it on the blocking pool.
pub(crate) fn make(bytes: &[u8]) -> Option<Thumb> {
    let reader = reader(bytes)?;
    let format = reader.format()?;
    let content_type = served_as(format)?;
    // The header alone first: the decoder refuses sides beyond the limits, and a picture whose
    // pixels would need more memory than allowed is refused here, before any is decoded.
    let mut decoder = reader.into_decoder().ok()?;
    let (w, h) = decoder.dimensions();
    if w == 0 || h == 0 || decoder.total_bytes() > MAX_THUMB_ALLOC {
        return None;
    }
    // A photograph taken sideways says so in its Exif data; browsers turn the original
    // accordingly, and a thumbnail, which carries no Exif, must be turned the same way.
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let mut image = DynamicImage::from_decoder(decoder).ok()?;
    image.apply_orientation(orientation);
    let fits = w <= THUMB_BOX && h <= THUMB_BOX;
    // Small enough already: the original, unless it is a format browsers store large (BMP) or a
    // file much bigger than its pixels need (metadata, an animation).
    if fits && format != ImageFormat::Bmp && bytes.len() <= THUMB_AS_IS {
        let size = (image.width(), image.height());
        return Some(Thumb { bytes: Bytes::copy_from_slice(bytes), content_type, size, original: true });
    }
    let small = if fits { image } else { image.thumbnail(THUMB_BOX, THUMB_BOX) };
    encode(&small, format)
}

/// PNG for transparency and lossless sources, JPEG for photographs.
fn encode(image: &DynamicImage, source: ImageFormat) -> Option<Thumb> {
    let size = (image.width(), image.height());
    let mut out = Vec::new();
    if image.color().has_alpha() || matches!(source, ImageFormat::Png | ImageFormat::Gif | ImageFormat::Bmp) {
        image.write_to(Cursor::new(&mut out), ImageFormat::Png).ok()?;
        return Some(Thumb { bytes: Bytes::from(out), content_type: "image/png", size, original: false });
    }
    let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
    rgb.write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 82)).ok()?;
    Some(Thumb { bytes: Bytes::from(out), content_type: "image/jpeg", size, original: false })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32, alpha: bool) -> Vec<u8> {
        let img = if alpha {
            DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(w, h, image::Rgba([10, 200, 30, 128])))
        } else {
            DynamicImage::ImageRgb8(image::RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8, y as u8, 90])))
        };
        let mut out = Vec::new();
        img.write_to(Cursor::new(&mut out), ImageFormat::Png).unwrap();
        out
    }

    fn jpeg(w: u32, h: u32) -> Vec<u8> {
        let img = DynamicImage::ImageRgb8(image::RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8, y as u8, 90])));
        let mut out = Vec::new();
        img.write_to(Cursor::new(&mut out), ImageFormat::Jpeg).unwrap();
        out
    }

    /// A JPEG whose Exif data says it was taken turned 90° (orientation 6).
    fn sideways_jpeg(w: u32, h: u32) -> Vec<u8> {
        use image::ImageEncoder;
        let img = image::RgbImage::from_fn(w, h, |x, _| image::Rgb([(x % 256) as u8, 40, 90]));
        let exif = b"II*\0\x08\0\0\0\x01\0\x12\x01\x03\0\x01\0\0\0\x06\0\0\0\0\0\0\0".to_vec();
        let mut out = Vec::new();
        let mut enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80);
        enc.set_exif_metadata(exif).unwrap();
        enc.write_image(img.as_raw(), w, h, image::ExtendedColorType::Rgb8).unwrap();
        out
    }

    /// A PNG header claiming `w`×`h` pixels, with a tiny compressed body: what a bomb looks like.
    fn png_claiming(w: u32, h: u32) -> Vec<u8> {
        let mut v = png(1, 1, false);
        v[16..20].copy_from_slice(&w.to_be_bytes());
        v[20..24].copy_from_slice(&h.to_be_bytes());
        let crc = crc32fast::hash(&v[12..29]);
        v[29..33].copy_from_slice(&crc.to_be_bytes());
        v
    }

    #[test]
    fn thumbnails_fit_the_box_and_never_grow() {
        let small = png(40, 30, false);
        // name, bytes, and the type and size of the thumbnail (none for no thumbnail)
        type Case = (&'static str, Vec<u8>, Option<(&'static str, (u32, u32))>);
        let cases: Vec<Case> = vec![
            ("small png as is", small.clone(), Some(("image/png", (40, 30)))),
            ("wide photo shrunk to jpeg", jpeg(1200, 600), Some(("image/jpeg", (THUMB_BOX, THUMB_BOX / 2)))),
            ("tall png shrunk to png", png(300, 900, false), Some(("image/png", (THUMB_BOX / 3, THUMB_BOX)))),
            ("transparent png stays png", png(800, 800, true), Some(("image/png", (THUMB_BOX, THUMB_BOX)))),
            ("not an image", b"%PDF-1.4 hello".to_vec(), None),
            ("truncated png", png(500, 500, false)[..60].to_vec(), None),
            ("decompression bomb", png_claiming(100_000, 100_000), None),
            ("bomb within the side limit, past the memory one", png_claiming(16_000, 16_000), None),
            ("empty", Vec::new(), None),
            (
                "a photograph taken sideways is turned upright",
                sideways_jpeg(1200, 600),
                Some(("image/jpeg", (THUMB_BOX / 2, THUMB_BOX))),
            ),
        ];
        for (name, bytes, want) in cases {
            let got = make(&bytes);
            match (got, want) {
                (None, None) => {}
                (Some(t), Some((ct, size))) => {
                    assert_eq!((t.content_type, t.size), (ct, size), "{name}");
                    let back = image::load_from_memory(&t.bytes).unwrap();
                    assert_eq!((back.width(), back.height()), size, "{name}: the bytes are what they say");
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
        assert_eq!(make(&small).unwrap().bytes, small, "a small image is served as it is");
    }

    #[test]
    fn types_offered_for_thumbnails() {
        for (ct, want) in
            [("image/png", true), ("image/jpeg", true), ("image/svg+xml", false), ("application/pdf", false)]
        {
            assert_eq!(is_thumbnailable(ct), want, "{ct}");
        }
    }
}
