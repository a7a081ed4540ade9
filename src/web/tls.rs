//! HTTPS (`--tls-cert`, `--tls-key`): rustls with the ring provider, TLS 1.2 and 1.3, HTTP/1.1.
//! The certificate and key are PEM files, read at start (an unusable pair stops the server) and
//! read again whenever either file changes ([`Certificates::watch`], every few seconds), so a
//! renewed certificate (Let's Encrypt, a mounted secret) is served from the next handshake on
//! without a restart; a pair that cannot be used meanwhile leaves the last good one in force and
//! says why in the log. The accept loop ([`super::server`]) gives each handshake the header
//! deadline, inside the connection's slot, so slow or silent clients cost HTTPS no more than HTTP.

use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;

use crate::config::TlsFiles;
use crate::error::Error;

/// How often the files are looked at for a change.
const RELOAD_EVERY: Duration = Duration::from_secs(5);

/// The certificate being served, and the files it comes from.
pub struct Certificates {
    files: TlsFiles,
    current: RwLock<Arc<CertifiedKey>>,
    /// The files' modification times and sizes when last read.
    seen: Mutex<Option<Stamp>>,
    config: Arc<ServerConfig>,
}

type Stamp = (Option<SystemTime>, u64, Option<SystemTime>, u64);

impl std::fmt::Debug for Certificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificates").field("cert", &self.files.cert).finish()
    }
}

#[derive(Debug)]
struct Resolver(std::sync::Weak<Certificates>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let certs = self.0.upgrade()?;
        let current = certs.current.read().unwrap_or_else(|e| e.into_inner());
        Some(Arc::clone(&current))
    }
}

impl Certificates {
    /// Reads the pair; an error names the file and what is wrong with it.
    pub fn open(files: &TlsFiles) -> Result<Arc<Certificates>, Error> {
        let key = load(files).map_err(Error::BadSetting)?;
        let stamp = stamp(files);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        Ok(Arc::new_cyclic(|weak| {
            let mut config = ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|b| b.with_no_client_auth().with_cert_resolver(Arc::new(Resolver(weak.clone()))))
                .unwrap_or_else(|_| {
                    ServerConfig::builder().with_no_client_auth().with_cert_resolver(Arc::new(Resolver(weak.clone())))
                });
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Certificates {
                files: files.clone(),
                current: RwLock::new(Arc::new(key)),
                seen: Mutex::new(Some(stamp)),
                config: Arc::new(config),
            }
        }))
    }

    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(Arc::clone(&self.config))
    }

    /// Reads the pair again if either file changed. Returns whether a new certificate is served.
    pub fn reload(&self) -> bool {
        let now = stamp(&self.files);
        {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            if seen.as_ref() == Some(&now) {
                return false;
            }
            *seen = Some(now);
        }
        match load(&self.files) {
            Ok(key) => {
                *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(key);
                tracing::info!(cert = %self.files.cert.display(), "TLS certificate read again");
                true
            }
            Err(why) => {
                tracing::error!(why, "the TLS certificate cannot be read again; the last good one is still served");
                false
            }
        }
    }

    /// Looks at the files every few seconds while `self` lives.
    pub fn watch(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(RELOAD_EVERY);
            loop {
                tick.tick().await;
                let Some(certs) = weak.upgrade() else { break };
                let _ = tokio::task::spawn_blocking(move || certs.reload()).await;
            }
        });
    }
}

fn stamp(files: &TlsFiles) -> Stamp {
    let of = |p: &Path| std::fs::metadata(p).map(|m| (m.modified().ok(), m.len())).unwrap_or((None, 0));
    let (a, b) = of(&files.cert);
    let (c, d) = of(&files.key);
    (a, b, c, d)
}

/// The certificate chain and a signing key for its private key.
fn load(files: &TlsFiles) -> Result<CertifiedKey, String> {
    let cert_err = |e: &dyn std::fmt::Display| format!("--tls-cert {}: {e}", files.cert.display());
    let key_err = |e: &dyn std::fmt::Display| format!("--tls-key {}: {e}", files.key.display());
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| cert_err(&e))?
        .collect::<Result<_, _>>()
        .map_err(|e| cert_err(&e))?;
    if chain.is_empty() {
        return Err(cert_err(&"no PEM certificate in it"));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| key_err(&e))?;
    let signing = rustls::crypto::ring::sign::any_supported_type(&key).map_err(|e| key_err(&e))?;
    let certified = CertifiedKey::new(chain, signing);
    certified.keys_match().map_err(|e| key_err(&format!("does not go with the certificate ({e})")))?;
    Ok(certified)
}

/// `mailshelf healthcheck` of a server on HTTPS: whether `GET /api/status` at `addr` answers 200.
/// The certificate is not checked: the question is whether this machine's server answers, and
/// its certificate may name a public host, not the loopback address asked.
pub fn status_answers(addr: std::net::SocketAddr, timeout: Duration) -> std::io::Result<bool> {
    use std::io::{Read, Write};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    let conn = rustls::ClientConnection::new(Arc::new(config), name).map_err(std::io::Error::other)?;
    let tcp = std::net::TcpStream::connect_timeout(&addr, timeout)?;
    tcp.set_read_timeout(Some(timeout))?;
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    write!(tls, "GET /api/status HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
    let mut head = [0u8; 12];
    tls.read_exact(&mut head)?;
    Ok(head.starts_with(b"HTTP/1.1 200"))
}

/// Takes any certificate (for the health check alone), checking only the handshake's signatures.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
