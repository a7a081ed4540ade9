//! Shared fixtures: the corpus location, an app over given paths, and request helpers that drive
//! the router in-process with `oneshot` (no sockets, no ports). `process` runs the real binary on a
//! loopback port instead, for what only a socket shows.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use mailshelf::{app, AppState, Archive, Config};
use tower::ServiceExt;

pub mod cdp;
pub mod doveadm;
pub mod needs;
pub mod postgres;
pub mod process;

/// `../shared/corpus` beside the repository (or `MAILSHELF_CORPUS`).
pub fn corpus_dir() -> PathBuf {
    std::env::var_os("MAILSHELF_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"))
}

pub fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A server's state over `paths`, fully indexed, with uploads in a fresh temporary folder, or,
/// with `MAILSHELF_TEST_BACKEND=postgres`, everything in a fresh database.
pub struct TestApp {
    pub router: Router,
    pub archive: Arc<Archive>,
    pub data_dir: tempfile::TempDir,
    /// The database this app keeps its index in, when it runs on PostgreSQL.
    pub database_url: Option<String>,
    /// Its state, for what tests look into (accounts, the audit log).
    pub state: AppState,
}

pub fn config_for(paths: &[PathBuf], data_dir: &Path) -> Config {
    Config {
        paths: paths.to_vec(),
        listen: "127.0.0.1:0".parse().expect("address"),
        data_dir: data_dir.to_path_buf(),
        max_upload: 1 << 20,
        max_message: mailshelf::limits::DEFAULT_MAX_MESSAGE,
        cors_origins: Vec::new(),
        allowed_hosts: Vec::new(),
        search: true,
        attachment_text: true,
        max_connections: 512,
        header_timeout: std::time::Duration::from_secs(10),
        chromium: mailshelf::config::find_chromium(
            std::env::var_os("MAILSHELF_CHROMIUM").map(PathBuf::from).as_deref(),
        ),
        database_url: None,
        keys: Default::default(),
        index_decrypted: false,
        accounts: Default::default(),
        tls: None,
    }
}

impl TestApp {
    pub fn new(paths: &[PathBuf]) -> TestApp {
        let data_dir = tempfile::tempdir().expect("temp dir");
        Self::with_data_dir(paths, data_dir)
    }

    pub fn with_data_dir(paths: &[PathBuf], data_dir: tempfile::TempDir) -> TestApp {
        let database_url = postgres::backend_is_postgres().then(|| postgres::Cluster::shared().database());
        Self::open(paths, data_dir, database_url)
    }

    /// An app over `paths` whose index lives in the database at `url` (`None`: in `data_dir`).
    pub fn open(paths: &[PathBuf], data_dir: tempfile::TempDir, database_url: Option<String>) -> TestApp {
        Self::open_with(paths, data_dir, database_url, |_| {})
    }

    /// [`TestApp::new`] with the keys and trust given (`--key`, `--trust`), decrypted mail indexed
    /// or not (`--index-decrypted`).
    pub fn with_keys(paths: &[PathBuf], keys: mailshelf::crypto::Keyring, index_decrypted: bool) -> TestApp {
        let keys = Arc::new(keys);
        Self::with_config(paths, move |c| {
            c.keys = keys;
            c.index_decrypted = index_decrypted;
        })
    }

    /// An app over `paths` on the backend under test, with settings changed by `set` (accounts,
    /// the audit log, attachment text…).
    pub fn with_config(paths: &[PathBuf], set: impl FnOnce(&mut Config)) -> TestApp {
        let data_dir = tempfile::tempdir().expect("temp dir");
        let database_url = postgres::backend_is_postgres().then(|| postgres::Cluster::shared().database());
        Self::open_with(paths, data_dir, database_url, set)
    }

    pub fn open_with(
        paths: &[PathBuf],
        data_dir: tempfile::TempDir,
        database_url: Option<String>,
        configure: impl FnOnce(&mut Config),
    ) -> TestApp {
        let mut config = config_for(paths, data_dir.path());
        config.database_url = database_url.clone();
        configure(&mut config);
        let archive = Arc::new(
            match &database_url {
                Some(url) => {
                    let db = mailshelf::postgres::Database::connect(url).expect("database");
                    Archive::open_shared(db, config.search).expect("archive opens")
                }
                None => Archive::open_with(data_dir.path(), config.search).expect("archive opens"),
            }
            .with_attachment_text(config.attachment_text)
            .with_max_message(config.max_message),
        );
        if config.index_decrypted {
            archive.index_decrypted(config.keys.clone());
        }
        archive.ingest_paths(&archive.roots(paths));
        let state = AppState::open(archive.clone(), Arc::new(config)).expect("state");
        let router = app(state.clone());
        TestApp { router, archive, data_dir, database_url, state }
    }

    /// Stops this server's state and starts a new one over the same paths and data folder.
    pub fn restart(self, paths: &[PathBuf]) -> TestApp {
        let TestApp { router, archive, data_dir, database_url, state } = self;
        drop(router);
        drop(state);
        // A watcher thread may still hold the archive for a moment after its watcher was dropped.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while Arc::strong_count(&archive) > 1 {
            assert!(std::time::Instant::now() < deadline, "the archive is still in use");
            std::thread::yield_now();
        }
        drop(archive);
        Self::open(paths, data_dir, database_url)
    }

    pub async fn request(&self, req: Request<Body>) -> Reply {
        let res = self.router.clone().oneshot(req).await.expect("infallible");
        let status = res.status();
        let headers = res.headers().clone();
        let body = res.into_body().collect().await.expect("body").to_bytes().to_vec();
        Reply { status, headers, body }
    }

    pub async fn get(&self, uri: &str) -> Reply {
        self.request(Request::get(uri).body(Body::empty()).expect("request")).await
    }

    pub async fn get_with(&self, uri: &str, headers: &[(&str, &str)]) -> Reply {
        let mut req = Request::get(uri);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.request(req.body(Body::empty()).expect("request")).await
    }

    pub async fn json(&self, uri: &str) -> serde_json::Value {
        let r = self.get(uri).await;
        assert_eq!(r.status, StatusCode::OK, "{uri}: {}", r.text());
        serde_json::from_slice(&r.body).expect("json")
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    /// The body decoded from its `Content-Encoding`.
    pub fn decoded(&self) -> Vec<u8> {
        use std::io::Read;
        let bytes = self.body.as_slice();
        let mut out = Vec::new();
        match self.header("content-encoding") {
            "" => out.extend_from_slice(bytes),
            "gzip" => {
                flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).expect("gzip");
            }
            "deflate" => {
                flate2::read::ZlibDecoder::new(bytes).read_to_end(&mut out).expect("deflate");
            }
            "br" => {
                brotli::Decompressor::new(bytes, 4096).read_to_end(&mut out).expect("br");
            }
            "zstd" => out = zstd::stream::decode_all(bytes).expect("zstd"),
            other => panic!("unexpected coding {other}"),
        }
        out
    }
}

/// Every file under `dir` with one of the extensions (case-insensitive).
/// `bytes` compressed with gzip, as the `gzip` tool writes them.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).expect("gzip");
    e.finish().expect("gzip")
}

pub fn files_with_ext(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walk(dir)
        .into_iter()
        .filter(|p| {
            p.extension().and_then(|e| e.to_str()).is_some_and(|e| exts.iter().any(|x| x.eq_ignore_ascii_case(e)))
        })
        .collect();
    out.sort();
    out
}

pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Percent-decodes a URL path segment.
pub fn seg_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// Pictures for thumbnail tests, made here so their sizes are known: `(file name, declared type,
/// bytes)`. A photograph, a wide diagram, a small icon, and the kinds that must not become a
/// thumbnail: a truncated PNG, a PNG whose header claims 100,000 × 100,000 pixels (a decompression
/// bomb), a PDF declared as PNG, an SVG, and a PDF.
pub fn pictures() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    use image::{DynamicImage, ImageFormat, RgbImage, RgbaImage};
    let encode = |img: DynamicImage, f: ImageFormat| {
        let mut out = Vec::new();
        img.write_to(std::io::Cursor::new(&mut out), f).expect("encode");
        out
    };
    let photo = RgbImage::from_fn(1600, 1200, |x, y| image::Rgb([(x / 7) as u8, (y / 5) as u8, 120]));
    let diagram = RgbaImage::from_fn(900, 300, |x, _| image::Rgba([20, 90, 160, if x % 50 < 25 { 255 } else { 0 }]));
    let icon = RgbImage::from_pixel(32, 32, image::Rgb([200, 60, 60]));
    let png_diagram = encode(DynamicImage::ImageRgba8(diagram), ImageFormat::Png);
    let mut bomb = encode(DynamicImage::ImageRgb8(RgbImage::new(1, 1)), ImageFormat::Png);
    bomb[16..20].copy_from_slice(&100_000u32.to_be_bytes());
    bomb[20..24].copy_from_slice(&100_000u32.to_be_bytes());
    let crc = crc32fast::hash(&bomb[12..29]);
    bomb[29..33].copy_from_slice(&crc.to_be_bytes());
    vec![
        ("photo.jpg", "image/jpeg", encode(DynamicImage::ImageRgb8(photo), ImageFormat::Jpeg)),
        ("diagram.png", "image/png", png_diagram.clone()),
        ("icon.png", "image/png", encode(DynamicImage::ImageRgb8(icon), ImageFormat::Png)),
        ("broken.png", "image/png", png_diagram[..200].to_vec()),
        ("bomb.png", "image/png", bomb),
        ("lying.png", "image/png", b"%PDF-1.4\n%\xe2\xe3\n1 0 obj\n<<>>\nendobj\n".to_vec()),
        ("drawing.svg", "image/svg+xml", b"<svg xmlns='http://www.w3.org/2000/svg'/>".to_vec()),
        ("notes.pdf", "application/pdf", b"%PDF-1.4\n%\xe2\xe3\n".to_vec()),
    ]
}

/// A short HTML message carrying [`pictures`] as attachments, Message-ID `<pictures@example.com>`.
pub fn message_with_pictures() -> Vec<u8> {
    use base64::Engine;
    let mut m = String::from(
        "From: Ana Pereira <ana@example.com>\r\nTo: you@example.com\r\nSubject: Photos from the workshop\r\n\
         Message-ID: <pictures@example.com>\r\nDate: Tue, 03 Nov 2026 09:30:00 +0000\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=\"PICS\"\r\n\r\n--PICS\r\n\
         Content-Type: text/html; charset=utf-8\r\n\r\n<p>Here are the photos from Saturday.</p>\r\n",
    );
    for (name, ct, bytes) in pictures() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
        m.push_str(&format!(
            "--PICS\r\nContent-Type: {ct}; name=\"{name}\"\r\nContent-Disposition: attachment; filename=\"{name}\"\r\n\
             Content-Transfer-Encoding: base64\r\n\r\n"
        ));
        for line in b64.as_bytes().chunks(76) {
            m.push_str(std::str::from_utf8(line).expect("ascii"));
            m.push_str("\r\n");
        }
    }
    m.push_str("--PICS--\r\n");
    m.into_bytes()
}
