//! HTTPS served directly (`--tls-cert`, `--tls-key`): a real process on a loopback port, a rustls
//! client that trusts the tests' own CA, the certificate replaced on disk and served from a later
//! handshake on without a restart, and a client that never finishes its handshake dropped like
//! one that never sends its headers.

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::process::Served;
use crate::common::repo_path;

fn fixture(name: &str) -> std::path::PathBuf {
    repo_path(&format!("tests/fixtures/tls/{name}"))
}

/// Connects, and gives the server's certificate and the answer to `GET /api/status`.
async fn ask(addr: std::net::SocketAddr) -> (CertificateDer<'static>, String) {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(fixture("ca.pem")).unwrap()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut tls = connector.connect(ServerName::try_from("localhost").unwrap(), tcp).await.unwrap();
    let cert = tls.get_ref().1.peer_certificates().unwrap()[0].clone().into_owned();
    tls.write_all(b"GET /api/status HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    tls.read_to_string(&mut answer).await.unwrap_or_default();
    (cert, answer)
}

#[tokio::test]
async fn https_is_served_and_a_renewed_certificate_is_taken_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::copy(fixture("first.pem"), &cert).unwrap();
    std::fs::copy(fixture("first-key.pem"), &key).unwrap();
    let data = tempfile::tempdir().unwrap();
    let samples = repo_path("samples");
    let served = Served::start(
        data.path(),
        &[
            samples.to_str().unwrap(),
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
            "--header-timeout",
            "2",
        ],
    );
    let first = CertificateDer::from_pem_file(fixture("first.pem")).unwrap();
    let second = CertificateDer::from_pem_file(fixture("second.pem")).unwrap();
    let (served_cert, answer) = ask(served.addr).await;
    assert_eq!(served_cert, first);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // A client that connects and never says hello is dropped after the header timeout.
    let mut silent = std::net::TcpStream::connect(served.addr).unwrap();
    silent.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 16];
    let n = silent.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "closed without an answer");
    assert!(started.elapsed() < Duration::from_secs(30));

    // Plain HTTP on the HTTPS port gets no page.
    let plain = crate::common::process::get(served.addr, "/api/status");
    assert!(plain.map(|r| r.status != 200).unwrap_or(true));

    // The container's health check speaks HTTPS when the certificate variable is set.
    let health = std::process::Command::new(env!("CARGO_BIN_EXE_mailshelf"))
        .arg("healthcheck")
        .env("MAILSHELF_LISTEN", served.addr.to_string())
        .env("MAILSHELF_TLS_CERT", &cert)
        .status()
        .unwrap();
    assert!(health.success());

    // Renewed on disk (the key first, as a renewal tool may): served from a later handshake on.
    std::fs::copy(fixture("second-key.pem"), &key).unwrap();
    std::fs::copy(fixture("second.pem"), &cert).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (now, answer) = ask(served.addr).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        if now == second {
            break;
        }
        assert!(Instant::now() < deadline, "the renewed certificate is not served");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    served.kill();
}
