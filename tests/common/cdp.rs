//! A headless Chromium driven over the DevTools protocol (a WebSocket on a loopback port it picks
//! itself), for tests that must act like a person: press keys, emulate a phone or the dark theme,
//! pick a file for a form, take screenshots. Every wait is for an event or an answer, with a read
//! deadline so a stuck browser fails the test instead of hanging it.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

/// How every test runs Chromium: headless, and quiet on the network (no updates, sync or
/// background fetches), so a test's request log holds only what the page asked for.
pub const HEADLESS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
];

/// Where the browser tests look for Chromium (`MAILSHELF_CHROMIUM`, else Debian's).
pub fn chromium_path() -> PathBuf {
    std::env::var_os("MAILSHELF_CHROMIUM").map(PathBuf::from).unwrap_or_else(|| "/usr/bin/chromium".into())
}

/// The Chromium the browser tests run; a test asks [`super::needs::chromium`] first.
pub fn chromium() -> PathBuf {
    let path = chromium_path();
    assert!(
        path.exists(),
        "browser tests need Chromium at {} (apt-get install chromium, or set MAILSHELF_CHROMIUM)",
        path.display()
    );
    path
}

/// One browser with one page, attached; killed when dropped.
pub struct Browser {
    ws: WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    /// Events received while waiting for answers, oldest first.
    events: Vec<Value>,
    /// Whether frames in processes of their own are attached and their requests reported.
    watching_network: bool,
    child: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub fn launch() -> Browser {
        let profile = tempfile::tempdir().expect("profile dir");
        let mut child = Command::new(chromium())
            .args(HEADLESS)
            .args(["--hide-scrollbars", "--remote-debugging-port=0"])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chromium starts");
        // Chromium says where it listens on stderr; the rest of stderr is drained so it never blocks.
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        let ws_url = loop {
            line.clear();
            let n = stderr.read_line(&mut line).expect("chromium stderr");
            assert!(n > 0, "chromium exited before listening");
            if let Some(rest) = line.trim().strip_prefix("DevTools listening on ") {
                break rest.to_string();
            }
        };
        std::thread::spawn(move || {
            let mut sink = String::new();
            while stderr.read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
        });
        let hostport = ws_url.trim_start_matches("ws://").split('/').next().expect("host:port").to_string();
        // A signal arriving during the handshake's read (EINTR) fails it without a word from the
        // browser: tried again, on a fresh socket, a few times.
        let mut attempts = 0;
        let ws = loop {
            let stream = TcpStream::connect(&hostport).expect("devtools socket");
            stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
            match tungstenite::client(ws_url.as_str(), stream) {
                Ok((ws, _)) => break ws,
                Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Io(e)))
                    if e.kind() == std::io::ErrorKind::Interrupted && attempts < 3 =>
                {
                    attempts += 1;
                }
                Err(e) => panic!("devtools handshake: {e:?}"),
            }
        };
        let mut b = Browser {
            ws,
            session: String::new(),
            next_id: 0,
            events: Vec::new(),
            watching_network: false,
            child,
            _profile: profile,
        };
        let targets = b.call_browser("Target.getTargets", json!({}));
        let page = targets["targetInfos"]
            .as_array()
            .expect("targets")
            .iter()
            .find(|t| t["type"] == "page")
            .map(|t| t["targetId"].clone())
            .expect("a page");
        let attached = b.call_browser("Target.attachToTarget", json!({"targetId": page, "flatten": true}));
        b.session = attached["sessionId"].as_str().expect("session").to_string();
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            b.call(domain, json!({}));
        }
        // Every document records the policy violations it sees, for the tests to read back.
        b.call(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": "window.__csp = []; document.addEventListener('securitypolicyviolation', \
                e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"}),
        );
        b
    }

    fn send(&mut self, method: &str, params: Value, session: bool) -> Value {
        let session = session.then(|| json!(self.session));
        let id = self.post(method, params, session);
        loop {
            let v = self.read();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
            self.events.push(v);
        }
    }

    /// Sends a command (to a session, or to the browser), without waiting; its id.
    fn post(&mut self, method: &str, params: Value, session: Option<Value>) -> u64 {
        self.next_id += 1;
        let mut msg = json!({"id": self.next_id, "method": method, "params": params});
        if let Some(session) = session {
            msg["sessionId"] = session;
        }
        self.ws.send(Message::text(msg.to_string())).expect("send");
        self.next_id
    }

    fn read(&mut self) -> Value {
        loop {
            let read = match self.ws.read() {
                // A signal (a child process of the server, such as the PDF renderer's browser,
                // ending) interrupts the blocking read; nothing was lost, so read again.
                Err(tungstenite::Error::Io(e)) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => other.expect("devtools message"),
            };
            let v: Value = match read {
                Message::Text(t) => serde_json::from_str(t.as_str()).expect("json"),
                Message::Close(_) => panic!("devtools closed"),
                _ => continue,
            };
            if self.watching_network && v["method"] == "Target.attachedToTarget" {
                // A frame in a process of its own (a sandboxed message body is one) waits, paused,
                // until its requests are being reported too.
                let session = v["params"]["sessionId"].clone();
                for (method, params) in [
                    ("Network.enable", json!({})),
                    (
                        "Target.setAutoAttach",
                        json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true}),
                    ),
                    ("Runtime.runIfWaitingForDebugger", json!({})),
                ] {
                    self.post(method, params, Some(session.clone()));
                }
            }
            return v;
        }
    }

    /// Reports every request of the page and of all its frames from now on (see [`Browser::wait_response`]).
    pub fn watch_network(&mut self) {
        self.watching_network = true;
        self.call("Network.enable", json!({}));
        self.call("Target.setAutoAttach", json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true}));
    }

    fn call_browser(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, false)
    }

    /// A command to the page; its result.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, true)
    }

    /// Forgets the events received so far (before an action whose events are awaited).
    pub fn clear_events(&mut self) {
        self.events.clear();
    }

    /// Waits for an event of the page (one already received counts), and returns it.
    pub fn wait_event(&mut self, method: &str) -> Value {
        if let Some(i) = self.events.iter().position(|e| e["method"] == method) {
            return self.events.remove(i);
        }
        loop {
            let v = self.read();
            if v["method"] == method {
                return v;
            }
            self.events.push(v);
        }
    }

    /// Waits until the page (or a frame of it) has had an answer for a URL whose path starts
    /// with `path`, and returns that answer's `Network.Response`. Needs [`Browser::watch_network`] first.
    /// Resources a page finds late (a CSS background is asked for after layout, which may come
    /// after the load event) are awaited here rather than guessed at with a timer.
    pub fn wait_response(&mut self, path: &str) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let matches = |e: &Value| {
            e["method"] == "Network.responseReceived"
                && e["params"]["response"]["url"]
                    .as_str()
                    .and_then(|u| u.split_once("://").map(|(_, rest)| rest))
                    .and_then(|rest| rest.find('/').map(|i| &rest[i..]))
                    .is_some_and(|p| p.starts_with(path))
        };
        loop {
            if let Some(i) = self.events.iter().position(matches) {
                return self.events.remove(i)["params"]["response"].clone();
            }
            assert!(std::time::Instant::now() < deadline, "no answer for {path} within 60 s");
            let v = self.read();
            self.events.push(v);
        }
    }

    /// Events received so far with this method.
    pub fn events(&self, method: &str) -> Vec<Value> {
        self.events.iter().filter(|e| e["method"] == method).cloned().collect()
    }

    /// Loads `url` and waits for its load event (frames included).
    pub fn goto(&mut self, url: &str) {
        self.clear_events();
        self.call("Page.navigate", json!({"url": url}));
        self.wait_event("Page.loadEventFired");
    }

    /// Evaluates a JavaScript expression in the page (outside its policy) and returns its value.
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.call("Runtime.evaluate", json!({"expression": expression, "returnByValue": true}));
        assert!(r.get("exceptionDetails").is_none(), "{expression}: {}", r["exceptionDetails"]);
        r["result"]["value"].clone()
    }

    /// Evaluates an expression whose value is a promise, and returns what it resolves to.
    pub fn eval_async(&mut self, expression: &str) -> Value {
        let r = self
            .call("Runtime.evaluate", json!({"expression": expression, "returnByValue": true, "awaitPromise": true}));
        assert!(r.get("exceptionDetails").is_none(), "{expression}: {}", r["exceptionDetails"]);
        r["result"]["value"].clone()
    }

    /// Presses and releases a key, as a keyboard would (`"j"`, `"/"`, `"Enter"`).
    pub fn press(&mut self, key: &str) {
        let (code, vk, text) = match key {
            "Enter" => ("Enter".to_string(), 13, "\r".to_string()),
            "Escape" => ("Escape".to_string(), 27, String::new()),
            "/" => ("Slash".to_string(), 191, "/".to_string()),
            k => (
                format!("Key{}", k.to_ascii_uppercase()),
                i64::from(k.to_ascii_uppercase().as_bytes()[0]),
                k.to_string(),
            ),
        };
        let base = json!({"key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk});
        let mut down = base.clone();
        down["type"] = json!("keyDown");
        if !text.is_empty() {
            down["text"] = json!(text);
        }
        self.call("Input.dispatchKeyEvent", down);
        let mut up = base;
        up["type"] = json!("keyUp");
        self.call("Input.dispatchKeyEvent", up);
    }

    /// Presses a key that navigates, and waits for the new page to load.
    pub fn press_and_wait(&mut self, key: &str) {
        self.clear_events();
        self.press(key);
        self.wait_event("Page.loadEventFired");
    }

    /// The viewport's size, whether it is a phone's (touch, the viewport meta tag), and the colour
    /// scheme the page is told the user prefers.
    pub fn emulate(&mut self, width: u32, height: u32, mobile: bool, scheme: &str) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}),
        );
        self.call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
        );
    }

    /// A PNG of the viewport.
    pub fn screenshot(&mut self) -> Vec<u8> {
        use base64::Engine;
        let r = self.call("Page.captureScreenshot", json!({"format": "png"}));
        base64::engine::general_purpose::STANDARD.decode(r["data"].as_str().expect("data")).expect("base64")
    }

    /// Chooses `file` in the file input `selector` matches, as a person picking it would.
    pub fn choose_file(&mut self, selector: &str, file: &std::path::Path) {
        let doc = self.call("DOM.getDocument", json!({}));
        let node = self.call("DOM.querySelector", json!({"nodeId": doc["root"]["nodeId"], "selector": selector}));
        self.call("DOM.setFileInputFiles", json!({"files": [file.to_str().expect("path")], "nodeId": node["nodeId"]}));
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
