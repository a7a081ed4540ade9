"""A small synchronous client for the Chrome DevTools protocol, for the pixel bench.

It starts one headless Chromium with `--remote-debugging-port=0`, reads the port from the
`DevToolsActivePort` file Chromium writes into its (fresh) user-data-dir, and talks to the browser
endpoint over one WebSocket (the `websocket-client` package) with flattened target sessions, so
several pages can be driven through the same connection.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections import deque

import websocket  # websocket-client

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    "--font-render-hinting=none",
    "--force-color-profile=srgb",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
]


class CdpError(RuntimeError):
    pass


class Browser:
    """One headless Chromium and one DevTools connection to it."""

    def __init__(self, chromium: str = "/usr/bin/chromium", extra_flags: list[str] | None = None,
                 timeout: float = 30.0):
        self.profile = tempfile.mkdtemp(prefix="mailshelf-cdp-")
        args = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", *(extra_flags or []),
                "about:blank"]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + timeout
        lines: list[str] = []
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise CdpError(f"chromium exited with {self.proc.returncode}")
            try:
                with open(port_file) as f:
                    lines = f.read().split("\n")
                if len(lines) >= 2 and lines[0].strip() and lines[1].strip():
                    break
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        else:
            self.close()
            raise CdpError("chromium did not write DevToolsActivePort")
        url = f"ws://127.0.0.1:{lines[0].strip()}{lines[1].strip()}"
        self.ws = websocket.create_connection(url, timeout=timeout, suppress_origin=True)
        self.next_id = 0
        self.events: deque[dict] = deque()

    # -- the wire ---------------------------------------------------------------------------

    def _recv(self, timeout: float) -> dict | None:
        self.ws.settimeout(max(timeout, 0.01))
        try:
            raw = self.ws.recv()
        except websocket.WebSocketTimeoutException:
            return None
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 60.0) -> dict:
        self.next_id += 1
        msg: dict = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError(f"{method}: no answer in {timeout} s")
            m = self._recv(left)
            if m is None:
                continue
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise CdpError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def wait_event(self, method: str, session: str | None, timeout: float) -> dict | None:
        """The first queued or arriving event `method` of `session`; None after `timeout`."""
        for i, e in enumerate(self.events):
            if e["method"] == method and e.get("sessionId") == session:
                del self.events[i]
                return e
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            m = self._recv(left)
            if m is None:
                continue
            if m.get("method") == method and m.get("sessionId") == session:
                return m
            if "method" in m:
                self.events.append(m)

    def drain(self, session: str | None) -> list[dict]:
        """Read whatever is waiting, and hand back (and forget) the queued events of `session`."""
        while True:
            m = self._recv(0.01)
            if m is None:
                break
            if "method" in m:
                self.events.append(m)
        mine = [e for e in self.events if e.get("sessionId") == session]
        self.events = deque(e for e in self.events if e.get("sessionId") != session)
        return mine

    # -- pages ------------------------------------------------------------------------------

    def new_page(self, width: int, height: int) -> "Page":
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        page.cmd("Page.enable")
        page.cmd("Runtime.enable")
        page.cmd("Log.enable")
        page.cmd("Emulation.setDeviceMetricsOverride",
                 {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        return page

    def close(self) -> None:
        try:
            self.ws.close()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Page:
    def __init__(self, browser: Browser, target: str, session: str):
        self.browser = browser
        self.target = target
        self.session = session

    def cmd(self, method: str, params: dict | None = None, timeout: float = 60.0) -> dict:
        return self.browser.send(method, params, self.session, timeout)

    def load(self, url: str, timeout: float = 30.0, settle: float = 1.0) -> dict:
        """Navigate, wait for the load event (at most `timeout`), for web fonts, then `settle` s.

        Returns {"loaded": bool, "error": navigation error text or None, "console": [messages]}.
        """
        self.browser.drain(self.session)
        nav = self.cmd("Page.navigate", {"url": url})
        error = nav.get("errorText")
        loaded = False
        if not error:
            loaded = self.browser.wait_event("Page.loadEventFired", self.session, timeout) is not None
            try:
                self.cmd("Runtime.evaluate", {"expression": "document.fonts ? document.fonts.ready.then(() => 1) : 1",
                                              "awaitPromise": True, "returnByValue": True}, timeout=10)
            except CdpError:
                pass
            time.sleep(settle)
        console = []
        for e in self.browser.drain(self.session):
            if e["method"] == "Log.entryAdded":
                console.append(e["params"]["entry"].get("text", ""))
            elif e["method"] == "Runtime.consoleAPICalled":
                console.append(" ".join(str(a.get("value", "")) for a in e["params"].get("args", [])))
            elif e["method"] == "Runtime.exceptionThrown":
                console.append(e["params"]["exceptionDetails"].get("text", ""))
        return {"loaded": loaded, "error": error, "console": console}

    def eval(self, expression: str, timeout: float = 30.0):
        r = self.cmd("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                          "awaitPromise": True}, timeout)
        if "exceptionDetails" in r:
            raise CdpError(f"evaluate: {r['exceptionDetails'].get('text')}")
        return r.get("result", {}).get("value")

    def screenshot(self) -> bytes:
        """PNG of the viewport (the emulated window size)."""
        data = self.cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False})["data"]
        return base64.b64decode(data)

    def snapshot_mhtml(self) -> str:
        return self.cmd("Page.captureSnapshot", {"format": "mhtml"})["data"]

    def close(self) -> None:
        try:
            self.browser.send("Target.closeTarget", {"targetId": self.target}, timeout=10)
        except CdpError:
            pass
        self.browser.drain(self.session)

