//! The accept loop: every connection served by hyper with a deadline for request headers, at most
//! `max_connections` of them open at once, and a graceful stop.
//!
//! `axum::serve` is not enough for a server that must survive slow or idle clients. It accepts
//! every connection the kernel hands it, with no limit, so a few thousand clients that connect and
//! say nothing use up the process's file descriptors, after which the indexes cannot open a file
//! and no one else can connect. And it gives hyper no timer, which silently turns hyper's header
//! read timeout off: a client that trickles a header line every few seconds, or a keep-alive
//! connection that never sends its next request, is kept open for ever. This loop gives hyper a
//! timer and a header timeout (which hyper restarts whenever a kept-alive connection waits for its
//! next request, so it is the idle timeout too) and holds a semaphore permit per open connection.
//!
//! When every permit is taken the loop stops accepting until a connection closes, rather than
//! accepting and closing at once. New connections then wait in the kernel's listen queue, which
//! costs the process no descriptor at all, and are served in order as soon as a slot frees (the
//! header timeout bounds how long a silent client can keep one). Accept-and-close would need a
//! descriptor per rejected connection, spend the server's time on accept/close churn exactly when
//! it is being flooded, and turn away a legitimate client that arrived a moment before a slot
//! freed; its one merit, a fast refusal, does not help a client that wants an answer. (Past the
//! listen queue's length, 1024, the kernel drops new handshakes and clients retry them later.)
//!
//! On HTTPS ([`super::tls`]) the handshake runs in the connection's task, under its slot, and must
//! end within the header timeout too; a client that never finishes it is dropped like one that
//! never sends its headers. Every request carries the connection's peer address (axum's
//! `ConnectInfo`), for the client address the sign-in limits and the audit log use.
//!
//! What the header timeout does not cover is a client that sends its headers and then trickles the
//! body, or stops reading the response: such a connection holds its slot until the client goes
//! away. The cap still bounds how many there can be.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// What is served: every request to a response (the app's service, see [`super::app::service`]).
pub trait App:
    tower::Service<
        Request,
        Response = axum::response::Response,
        Error = std::convert::Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> App for S where
    S: tower::Service<
            Request,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
            Future: Send + 'static,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// How long a stop waits for requests in flight before it drops them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How often, at most, a saturated server says so in the log.
const FULL_WARNING_EVERY: Duration = Duration::from_secs(60);

/// What a connection may use.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once; more wait in the listen queue.
    pub max_connections: usize,
    /// Time to send a request's headers, and to start the next request on a kept-alive connection.
    pub header_timeout: Duration,
}

impl From<&crate::Config> for Limits {
    fn from(c: &crate::Config) -> Limits {
        Limits { max_connections: c.max_connections, header_timeout: c.header_timeout }
    }
}

/// Serves `app` on `listener` until `shutdown` completes; then stops accepting, lets requests in
/// flight finish (for up to [`SHUTDOWN_GRACE`]) and returns.
pub async fn serve<S: App>(listener: TcpListener, app: S, limits: Limits, shutdown: impl Future<Output = ()>) {
    serve_with(listener, app, limits, None, shutdown).await;
}

/// [`serve`], over HTTPS with `tls`.
pub async fn serve_with<S: App>(
    listener: TcpListener,
    app: S,
    limits: Limits,
    tls: Option<Arc<super::tls::Certificates>>,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.clamp(1, Semaphore::MAX_PERMITS)));
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout).keep_alive(true);
    let graceful = GracefulShutdown::new();
    let mut warned: Option<Instant> = None;
    tokio::pin!(shutdown);

    loop {
        let permit = match slots.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                if warned.is_none_or(|t| t.elapsed() >= FULL_WARNING_EVERY) {
                    warned = Some(Instant::now());
                    tracing::warn!(
                        max_connections = limits.max_connections,
                        "every connection slot is in use; new connections wait until one closes"
                    );
                }
                tokio::select! {
                    p = slots.clone().acquire_owned() => match p {
                        Ok(p) => p,
                        Err(_) => break, // never closed
                    },
                    () = &mut shutdown => break,
                }
            }
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    if !is_connection_error(&e) {
                        // Most likely out of file descriptors: wait for some to close.
                        tracing::error!(error = %e, "cannot accept a connection");
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_secs(1)) => {},
                            () = &mut shutdown => break,
                        }
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = tower::ServiceExt::map_request(app.clone(), move |mut req: Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            req.map(axum::body::Body::new)
        });
        let service = TowerToHyperService::new(service);
        match &tls {
            None => {
                let conn = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(error = %e, "connection ended");
                    }
                    drop(permit);
                });
            }
            Some(certs) => {
                let (acceptor, watcher, http) = (certs.acceptor(), graceful.watcher(), http.clone());
                let deadline = limits.header_timeout;
                tokio::spawn(async move {
                    match tokio::time::timeout(deadline, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let conn = watcher.watch(http.serve_connection(TokioIo::new(tls), service));
                            if let Err(e) = conn.await {
                                tracing::debug!(error = %e, "connection ended");
                            }
                        }
                        Ok(Err(e)) => tracing::debug!(error = %e, %peer, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake not finished in time"),
                    }
                    drop(permit);
                });
            }
        }
    }

    // New connections are refused from here on; open ones finish what they are doing.
    drop(listener);
    let open_at_stop = graceful.count();
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await.is_err() {
        tracing::warn!(open_at_stop, "connections still busy after the grace period were dropped");
    }
}

/// Errors that concern one connection only, which was gone before it could be accepted.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}
