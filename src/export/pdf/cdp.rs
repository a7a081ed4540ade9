//! A small Chrome DevTools Protocol client: just enough to have a headless Chromium load one page
//! whose every request we answer ourselves, and print it.
//!
//! The browser is started with `--remote-debugging-port=0` and says on its standard error where
//! it listens (`DevTools listening on ws://…`); one WebSocket to that address carries every
//! session (flattened sessions, each message tagged with its `sessionId`). Every request any
//! frame makes is paused (`Fetch.enable` on the page and on every frame target attached to it,
//! before they may run), and then:
//!
//! - a URL under [`ORIGIN`] is answered with the bytes the caller's [`Fetcher`] gives: the page
//!   and its parts come from mailshelf itself, in-process, without a socket;
//! - any other `http`/`https` URL is fetched by mailshelf and handed to the page, only when remote
//!   content was allowed for the message, and never from this machine or a private network
//!   ([`super::remote`]): the render runs on the server, and a message must not make the server
//!   fetch from where the server stands;
//! - anything else fails as blocked.
//!
//! Chromium itself reaches nothing: host names resolve to nothing and everything else is sent to a
//! proxy that does not exist, so a request that somehow escaped interception reaches no one.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use futures_util::future::BoxFuture;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message as WsMessage;

use super::remote::Remote;
use crate::error::Error;

/// The origin the page is loaded from. Nothing ever resolves or connects to it: every request to
/// it is answered from inside the process. A `.localhost` name, so mailshelf's host check accepts
/// the requests as addressed to it.
pub(crate) const ORIGIN: &str = "http://mailshelf.localhost";

/// A response to a request for a URL under [`ORIGIN`].
pub(crate) struct Fetched {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Fetched {
    /// An answer's header fields as text (a value that is not text is left out).
    pub(crate) fn fields_of(headers: &axum::http::HeaderMap) -> Vec<(String, String)> {
        headers.iter().filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string()))).collect()
    }
}

/// Answers a path (with its query) under [`ORIGIN`].
pub(crate) type Fetcher = Arc<dyn Fn(String) -> BoxFuture<'static, Fetched> + Send + Sync>;

/// The largest PDF accepted back from the browser.
pub(crate) const MAX_PDF: usize = 64 * 1024 * 1024;

fn fail(context: &'static str, e: impl std::fmt::Display) -> Error {
    Error::internal(context, e.to_string())
}

/// The browser would not start: the server's environment, not the message, so worth a retry.
fn not_started(e: impl std::fmt::Display) -> Error {
    Error::RendererFailed { source: format!("starting chromium: {e}").into() }
}

/// A running browser and the WebSocket to it. Dropping it kills the browser.
pub(crate) struct Browser {
    // Held for their destructors: the process is killed on drop, the profile folder removed.
    _child: tokio::process::Child,
    _profile: tempfile::TempDir,
    ws: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    next_id: u64,
}

/// Whether this process runs as root, where Chromium refuses to start with its sandbox on.
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

impl Browser {
    /// Starts headless Chromium and connects to it. Without its sandbox when `no_sandbox`, or when
    /// mailshelf runs as root; `Err(None)` when it would not start for want of a sandbox.
    async fn start(chromium: &Path, no_sandbox: bool) -> Result<Browser, Option<Error>> {
        let profile = tempfile::tempdir().map_err(|e| Some(fail("browser profile", e)))?;
        let mut cmd = Command::new(chromium);
        cmd.args([
            "--headless",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--mute-audio",
            "--hide-scrollbars",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args([
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--proxy-server=http://127.0.0.1:9",
            "--proxy-bypass-list=<-loopback>",
        ]);
        if no_sandbox || running_as_root() {
            // Chromium will not start as root with its sandbox; no script runs in what it renders.
            cmd.arg("--no-sandbox");
        }
        cmd.arg("about:blank").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| Some(not_started(e)))?;
        let stderr = child.stderr.take().ok_or_else(|| Some(not_started("no standard error")))?;
        let mut lines = BufReader::new(stderr).lines();
        let mut said = String::new();
        let url = loop {
            match lines.next_line().await {
                Ok(Some(line)) => {
                    if let Some(url) = line.strip_prefix("DevTools listening on ") {
                        break url.trim().to_string();
                    }
                    if said.len() < 4096 {
                        said.push_str(&line);
                        said.push('\n');
                    }
                }
                Ok(None) if !no_sandbox && said.to_ascii_lowercase().contains("sandbox") => return Err(None),
                Ok(None) => return Err(Some(not_started(format!("it exited before listening: {said}")))),
                Err(e) => return Err(Some(not_started(e))),
            }
        };
        // Keep draining its standard error, so a chatty browser never blocks on a full pipe.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::trace!(line, "chromium");
            }
        });
        // The PDF comes back as one message of base64: room for the largest accepted (the
        // library's default frame is 16 MiB, a PDF of 12).
        let room = MAX_PDF / 3 * 4 + (1 << 20);
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(room))
            .max_frame_size(Some(room));
        let (ws, _) = tokio_tungstenite::connect_async_with_config(url.as_str(), Some(config), false)
            .await
            .map_err(|e| Some(fail("connecting to chromium", e)))?;
        Ok(Browser { _child: child, _profile: profile, ws, next_id: 0 })
    }

    /// Starts headless Chromium with its sandbox, or, where it cannot have one (a container without
    /// user namespaces), without it.
    pub(crate) async fn launch(chromium: &Path) -> Result<Browser, Error> {
        static WARNED: std::sync::Once = std::sync::Once::new();
        match Self::start(chromium, false).await {
            Ok(b) => Ok(b),
            Err(Some(e)) => Err(e),
            Err(None) => {
                WARNED.call_once(|| {
                    tracing::warn!("chromium cannot make its sandbox here; PDFs are rendered without it")
                });
                Self::start(chromium, true).await.map_err(|e| e.unwrap_or_else(|| not_started("no sandbox")))
            }
        }
    }

    async fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Result<u64, Error> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = Value::String(s.to_string());
        }
        self.ws.send(WsMessage::text(msg.to_string())).await.map_err(|e| fail("talking to chromium", e))?;
        Ok(id)
    }

    async fn receive(&mut self) -> Result<Value, Error> {
        loop {
            match self.ws.next().await {
                Some(Ok(WsMessage::Text(t))) => {
                    return serde_json::from_str(t.as_str()).map_err(|e| fail("talking to chromium", e))
                }
                Some(Ok(WsMessage::Close(_))) | None => return Err(fail("talking to chromium", "connection closed")),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(fail("talking to chromium", e)),
            }
        }
    }
}

/// A request paused while its remote resource is fetched.
struct Paused {
    session: Option<String>,
    request_id: String,
    url: String,
}

/// One page being printed: the browser, the rules for its requests, what it is waiting for.
pub(crate) struct Printer {
    browser: Browser,
    fetch: Fetcher,
    /// Fetches remote content, when the message's remote content was allowed.
    remote: Option<Arc<Remote>>,
    /// Remote resources being fetched, side by side as a browser would (bounded by [`Remote`]),
    /// while the page goes on loading. Dropping the printer aborts them.
    fetching: JoinSet<Option<Fetched>>,
    /// The request each of those fetches answers.
    paused: HashMap<tokio::task::Id, Paused>,
    /// Requests that were refused, for the log (and for tests).
    pub blocked: Vec<String>,
    /// Replies to commands that arrived while waiting for another.
    replies: HashMap<u64, Value>,
    page_session: Option<String>,
    loaded: bool,
}

impl Printer {
    /// A printer whose remote requests `remote` fetches (all refused without it).
    pub(crate) fn new(browser: Browser, fetch: Fetcher, remote: Option<Remote>) -> Printer {
        Printer {
            browser,
            fetch,
            remote: remote.map(Arc::new),
            fetching: JoinSet::new(),
            paused: HashMap::new(),
            blocked: Vec::new(),
            replies: HashMap::new(),
            page_session: None,
            loaded: false,
        }
    }

    /// Sends a command and waits for its result, serving paused requests meanwhile.
    async fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Result<Value, Error> {
        let id = self.browser.send(session, method, params).await?;
        loop {
            if let Some(reply) = self.replies.remove(&id) {
                if let Some(err) = reply.get("error") {
                    return Err(Error::internal("chromium refused a command", format!("{method}: {err}")));
                }
                return Ok(reply.get("result").cloned().unwrap_or(Value::Null));
            }
            self.pump().await?;
        }
    }

    /// Reads one message and acts on it, or answers a request whose remote resource has landed.
    async fn pump(&mut self) -> Result<(), Error> {
        let msg = tokio::select! {
            msg = self.browser.receive() => msg?,
            Some(landed) = self.fetching.join_next_with_id(), if !self.fetching.is_empty() => {
                // A fetch that failed by panicking is a resource not had.
                let (id, fetched) = landed.map_or_else(|e| (e.id(), None), |(id, fetched)| (id, fetched));
                return self.answer_remote(id, fetched).await;
            }
        };
        if let Some(id) = msg.get("id").and_then(Value::as_u64) {
            self.replies.insert(id, msg);
            return Ok(());
        }
        let session = msg.get("sessionId").and_then(Value::as_str).map(str::to_string);
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        match msg.get("method").and_then(Value::as_str).unwrap_or("") {
            "Fetch.requestPaused" => self.on_request(session.as_deref(), &params).await?,
            "Target.attachedToTarget" => {
                // A frame in a process of its own: hold its requests to the same rules before it runs.
                if let Some(child) = params.get("sessionId").and_then(Value::as_str) {
                    self.guard_session(child).await?;
                    self.browser.send(Some(child), "Runtime.runIfWaitingForDebugger", json!({})).await?;
                }
            }
            "Page.loadEventFired" if session.is_some() && session == self.page_session => self.loaded = true,
            _ => {}
        }
        Ok(())
    }

    /// Pauses every request of a session, and attaches (paused) to any frame it starts.
    async fn guard_session(&mut self, session: &str) -> Result<(), Error> {
        self.browser.send(Some(session), "Fetch.enable", json!({ "patterns": [{ "urlPattern": "*" }] })).await?;
        self.browser
            .send(
                Some(session),
                "Target.setAutoAttach",
                json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true }),
            )
            .await?;
        Ok(())
    }

    async fn on_request(&mut self, session: Option<&str>, params: &Value) -> Result<(), Error> {
        let request_id = params.get("requestId").and_then(Value::as_str).unwrap_or("").to_string();
        let url = params.pointer("/request/url").and_then(Value::as_str).unwrap_or("").to_string();
        if let Some(path) = url.strip_prefix(ORIGIN).filter(|p| p.starts_with('/')) {
            let fetched = (self.fetch)(path.to_string()).await;
            self.fulfill(session, &request_id, &fetched).await
        } else if let Some(remote) = &self.remote {
            let (remote, to) = (Arc::clone(remote), url.clone());
            let fields: Vec<(String, String)> = params
                .pointer("/request/headers")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(name, value)| Some((name.clone(), value.as_str()?.to_string())))
                .collect();
            let task = self.fetching.spawn(async move { remote.fetch(&to, &fields).await });
            self.paused.insert(task.id(), Paused { session: session.map(str::to_string), request_id, url });
            Ok(())
        } else {
            self.refuse(session, &request_id, url).await
        }
    }

    /// Hands the page a remote resource that has landed, or fails its request.
    async fn answer_remote(&mut self, task: tokio::task::Id, fetched: Option<Fetched>) -> Result<(), Error> {
        let Some(Paused { session, request_id, url }) = self.paused.remove(&task) else { return Ok(()) };
        match fetched {
            Some(fetched) => self.fulfill(session.as_deref(), &request_id, &fetched).await,
            None => self.refuse(session.as_deref(), &request_id, url).await,
        }
    }

    /// Fails a request that may not be had, and notes it.
    async fn refuse(&mut self, session: Option<&str>, request_id: &str, url: String) -> Result<(), Error> {
        tracing::debug!(url, "blocked while printing");
        self.blocked.push(url);
        self.browser
            .send(session, "Fetch.failRequest", json!({ "requestId": request_id, "errorReason": "BlockedByClient" }))
            .await?;
        Ok(())
    }

    /// Answers a paused request with `fetched` (its body as it is: the length and coding headers
    /// of a compressed answer would not fit it).
    async fn fulfill(&mut self, session: Option<&str>, request_id: &str, fetched: &Fetched) -> Result<(), Error> {
        let headers: Vec<Value> = fetched
            .headers
            .iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case("content-length") && !k.eq_ignore_ascii_case("content-encoding"))
            .map(|(k, v)| json!({ "name": k, "value": v }))
            .collect();
        let body = base64::engine::general_purpose::STANDARD.encode(&fetched.body);
        self.browser
            .send(
                session,
                "Fetch.fulfillRequest",
                json!({ "requestId": request_id, "responseCode": fetched.status, "responseHeaders": headers, "body": body }),
            )
            .await?;
        Ok(())
    }

    /// Loads `path` (under [`ORIGIN`]) in a new page and prints it to PDF.
    pub(crate) async fn print(&mut self, path: &str) -> Result<Vec<u8>, Error> {
        let target = self.call(None, "Target.createTarget", json!({ "url": "about:blank" })).await?;
        let target_id = target.get("targetId").and_then(Value::as_str).unwrap_or("").to_string();
        let attached =
            self.call(None, "Target.attachToTarget", json!({ "targetId": target_id, "flatten": true })).await?;
        let session = attached
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| fail("chromium", "no session for the page"))?
            .to_string();
        self.page_session = Some(session.clone());
        let s = Some(session.as_str());
        self.call(s, "Fetch.enable", json!({ "patterns": [{ "urlPattern": "*" }] })).await?;
        self.call(
            s,
            "Target.setAutoAttach",
            json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true }),
        )
        .await?;
        // Messages carry no script that survives the rewrite and their policy forbids script;
        // this turns it off in the renderer as well.
        self.call(s, "Emulation.setScriptExecutionDisabled", json!({ "value": true })).await?;
        self.call(s, "Page.enable", json!({})).await?;
        self.loaded = false;
        let nav = self.call(s, "Page.navigate", json!({ "url": format!("{ORIGIN}{path}") })).await?;
        if let Some(err) = nav.get("errorText").and_then(Value::as_str) {
            return Err(Error::internal("chromium could not load the print view", err.to_string()));
        }
        while !self.loaded {
            self.pump().await?;
        }
        let printed = self
            .call(
                s,
                "Page.printToPDF",
                json!({
                    "printBackground": true,
                    "preferCSSPageSize": true,
                    "generateTaggedPDF": true,
                    "transferMode": "ReturnAsBase64",
                }),
            )
            .await?;
        let data = printed.get("data").and_then(Value::as_str).ok_or_else(|| fail("chromium", "no PDF data"))?;
        if data.len() / 4 * 3 > MAX_PDF {
            return Err(Error::PdfOverLimit);
        }
        base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| fail("chromium", e))
    }
}

/// Prints `path` with a fresh browser, within `timeout`. The browser is killed when this returns,
/// however it returns.
pub(crate) async fn print(
    chromium: &Path,
    path: &str,
    fetch: Fetcher,
    allow_remote: bool,
    timeout: Duration,
) -> Result<(Vec<u8>, Vec<String>), Error> {
    let work = async {
        let browser = Browser::launch(chromium).await?;
        let mut printer = Printer::new(browser, fetch, if allow_remote { Remote::new() } else { None });
        let pdf = printer.print(path).await?;
        Ok::<_, Error>((pdf, printer.blocked))
    };
    tokio::time::timeout(timeout, work).await.map_err(|_| Error::PdfOverLimit)?
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::super::remote::stand_in;
    use super::*;

    /// A page's remote pictures are fetched side by side while it loads, as a browser fetches
    /// them, not each after the one before.
    #[tokio::test]
    async fn remote_pictures_of_a_printed_page_are_fetched_side_by_side() -> Result<(), Error> {
        let Some(chromium) = crate::testing::chromium("remote_pictures_of_a_printed_page_are_fetched_side_by_side")
        else {
            return Ok(());
        };
        const PICTURES: usize = 4;
        let (at, seen) = stand_in::held_back(PICTURES, 4).await.map_err(|e| fail("stand-in", e))?;
        let page: String = (0..PICTURES).map(|i| format!("<img src=\"http://{at}/{i}.png\" width=20>")).collect();
        let fetch: Fetcher = Arc::new(move |_| {
            let body = format!("<!doctype html><p>pictures</p>{page}").into_bytes();
            Box::pin(async move {
                Fetched { status: 200, headers: vec![("content-type".into(), "text/html".into())], body }
            })
        });
        let remote = Remote::anywhere().ok_or_else(|| fail("client", "none"))?;
        let mut printer = Printer::new(Browser::launch(&chromium).await?, fetch, Some(remote));
        let pdf = tokio::time::timeout(Duration::from_secs(60), printer.print("/page"))
            .await
            .map_err(|_| fail("print", "timed out"))??;
        assert!(pdf.starts_with(b"%PDF"));
        assert_eq!(printer.blocked, Vec::<String>::new());
        assert_eq!(seen.most.load(Ordering::SeqCst), PICTURES, "every picture asked for at once");
        // Asked for as the browser asks (its name, the kinds of picture it takes), and no more.
        let heads = seen.heads.lock().map_err(|e| fail("heads", e))?.join("\n").to_ascii_lowercase();
        for field in ["user-agent: mozilla/5.0", "accept: image/"] {
            assert!(heads.contains(field), "{field} in {heads}");
        }
        assert!(!heads.contains("referer") && !heads.contains("cookie"), "{heads}");
        Ok(())
    }
}
