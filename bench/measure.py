#!/usr/bin/env python3
"""Measurement helpers for bench/index.sh (Python 3 standard library only).

    measure.py run [--cwd DIR] [--env K=V ...] -- CMD ARGS...
        Runs CMD, prints {"seconds", "max_rss_kb", "rc", "stdout"} as one JSON line.

    measure.py serve --bin MAILSHELF --data-dir DIR [--pidfile F] [--log F] [--timeout S] PATH...
        Starts `MAILSHELF serve PATH... --listen 127.0.0.1:0 --data-dir DIR`, reads the URL it prints,
        polls GET /api/status until "ready" is true, reads VmHWM from /proc/PID/status, sends
        SIGTERM and waits. Prints {"seconds", "vmhwm_kb", "status", "self_reported_seconds",
        "skipped", "exit"} as one JSON line. "seconds" runs from spawn to the first ready answer.

    measure.py table RESULTS.json
        Prints the Markdown table for a results file written by index.sh.

Other benchmarks' scripts import `ColdIndex` from here (bench/ on `sys.path`) to start a server
cold, time it to ready and query it before it stops.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import select
import signal
import subprocess
import sys
import time
import urllib.request

POLL = 0.05


def cmd_run(args) -> int:
    env = dict(os.environ)
    for kv in args.env or []:
        k, _, v = kv.partition("=")
        env[k] = v
    cmd = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=args.cwd, env=env, stdout=subprocess.PIPE, stderr=None, timeout=args.timeout)
    secs = time.monotonic() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss = ru.ru_maxrss
    out = p.stdout.decode("utf-8", "replace")
    print(json.dumps({"seconds": round(secs, 3), "max_rss_kb": rss, "cpu_seconds": round(ru.ru_utime + ru.ru_stime, 2), "rc": p.returncode,
                      "stdout": out[-4000:]}))
    return 0 if p.returncode == 0 else 1


def vmhwm(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a running process, all its threads included."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 2)
    except (OSError, IndexError, ValueError):
        return None


def get_status(url: str):
    with urllib.request.urlopen(url + "api/status", timeout=5) as r:
        return json.loads(r.read())


class ColdIndex:
    """A mailshelf server started on PATHs with an empty data folder, timed to its first "ready"
    answer: `url`, `pid`, `seconds` (from spawn), `status`, `vmhwm_kb` and `cpu_seconds` (at
    ready). Used as a context manager it is stopped (SIGTERM, then waited for) on leaving, so a
    caller can query it while it runs. `log`: a file for its stderr; `pidfile`: a file its process
    id is written to as it starts (for a script's clean-up if it is interrupted)."""

    def __init__(self, binary, paths, data_dir, log=None, timeout=3600.0, pidfile=None):
        self.cmd = [binary, "serve", *paths, "--listen", "127.0.0.1:0", "--data-dir", data_dir]
        self.log = open(log, "ab") if log else subprocess.DEVNULL
        self.pidfile = pidfile
        self.timeout = timeout
        self.proc = None
        self.url = self.status = self.seconds = self.vmhwm_kb = self.cpu_seconds = None

    @property
    def pid(self):
        return self.proc.pid

    def start(self):
        env = dict(os.environ)
        env.setdefault("NO_COLOR", "1")
        t0 = time.monotonic()
        p = self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=self.log, env=env)
        if self.pidfile:
            with open(self.pidfile, "w") as f:
                f.write(str(p.pid))
        deadline = t0 + self.timeout
        # The first stdout line: "mailshelf serving on http://ADDR/".
        buf = b""
        while self.url is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no URL printed")
            ready, _, _ = select.select([p.stdout], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(p.stdout.fileno(), 4096)
                if not chunk:
                    raise RuntimeError(f"mailshelf exited with {p.wait()} before printing its URL")
                buf += chunk
                m = re.search(rb"serving on (http://\S+?/)\s", buf)
                if m:
                    self.url = m.group(1).decode()
            elif p.poll() is not None:
                raise RuntimeError(f"mailshelf exited with {p.returncode} before printing its URL")
        while True:
            if p.poll() is not None:
                raise RuntimeError(f"mailshelf exited with {p.returncode} while indexing")
            try:
                self.status = get_status(self.url)
            except OSError:
                self.status = None
            if self.status and self.status.get("ready"):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"not ready after {self.timeout} s (last status {self.status})")
            time.sleep(POLL)
        self.seconds = round(time.monotonic() - t0, 3)
        self.vmhwm_kb = vmhwm(p.pid)
        self.cpu_seconds = cpu_seconds(p.pid)
        return self

    def get_json(self, path: str):
        """GET `path` (relative to the server's root, no leading slash) as JSON."""
        with urllib.request.urlopen(self.url + path, timeout=60) as r:
            return json.loads(r.read())

    def stop(self):
        p = self.proc
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.log is not subprocess.DEVNULL:
            self.log.close()
        return None if p is None else p.returncode

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()
        return False


def cmd_serve(args) -> int:
    server = ColdIndex(args.bin, args.paths, args.data_dir, log=args.log, timeout=args.timeout, pidfile=args.pidfile)
    result = {"cmd": " ".join(server.cmd)}
    try:
        server.start()
        result.update(url=server.url, seconds=server.seconds, status=server.status, vmhwm_kb=server.vmhwm_kb,
                      cpu_seconds=server.cpu_seconds)
    except Exception as e:  # reported, and the process is still stopped below
        result["error"] = f"{type(e).__name__}: {e}"
    finally:
        result["exit"] = server.stop()
    if args.log:
        text = open(args.log, "rb").read().decode("utf-8", "replace")
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
        m = re.findall(r"indexed\s+messages=(\d+)\s+seconds=([0-9.]+)", text)
        if m:
            result["self_reported_seconds"] = round(float(m[-1][1]), 3)
            result["self_reported_messages"] = int(m[-1][0])
        result["skipped"] = len(re.findall(r"\bskipped\b", text))
    print(json.dumps(result))
    return 0 if "error" not in result else 1


# ------------------------------------------------------------------------------------------------


def fmt(x, nd=1, unit=""):
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    return f"{x:,.{nd}f}{unit}"


def cmd_table(args) -> int:
    res = json.load(open(args.results))
    mb = lambda b: None if b is None else b / 1e6
    rows = []
    for src in ("maildir", "mbox"):
        s = res.get(src)
        if not s:
            continue
        nbytes = s["bytes"]
        ceil = s.get("ceiling") or {}
        ms = s.get("mailshelf") or {}
        warm = s.get("warm") or {}
        nm = s.get("notmuch") or {}
        c_secs = ceil.get("seconds")
        m_secs = ms.get("seconds")
        n_secs = nm.get("seconds")

        def rate(n, secs):
            return None if not secs or n is None else n / secs

        label = "Maildir" if src == "maildir" else "mbox"
        if c_secs:
            rows.append([f"{label}: parse ceiling (mail-parser)", ceil.get("messages"), c_secs, ceil.get("cpu_seconds"),
                         rate(ceil.get("messages"), c_secs), rate(mb(nbytes), c_secs),
                         mb(ceil.get("max_rss_kb", 0) * 1e3), None, None, "100 %", None])
        if m_secs:
            pct = f"{100 * c_secs / m_secs:.0f} %" if c_secs else None
            vs_nm = f"{n_secs / m_secs:.1f}×" if n_secs else None
            rows.append([f"{label}: mailshelf cold index", (ms.get("status") or {}).get("messages"), m_secs, ms.get("cpu_seconds"),
                         rate(res["count"], m_secs), rate(mb(nbytes), m_secs),
                         mb((ms.get("vmhwm_kb") or 0) * 1e3), mb(s.get("index_bytes")),
                         warm.get("seconds"), pct, vs_nm])
        off = s.get("mailshelf_text_off") or {}
        if off.get("seconds"):
            o_secs = off["seconds"]
            rows.append([f"{label}: mailshelf cold index, attachment text off", (off.get("status") or {}).get("messages"),
                         o_secs, off.get("cpu_seconds"), rate(res["count"], o_secs), rate(mb(nbytes), o_secs),
                         mb((off.get("vmhwm_kb") or 0) * 1e3), None, None,
                         f"{100 * c_secs / o_secs:.0f} %" if c_secs else None, None])
        if ms.get("error"):
            rows.append([f"{label}: mailshelf cold index", "error", ms["error"][:60], None, None, None, None, None, None, None, None])
        if n_secs:
            rows.append([f"{label}: notmuch new", nm.get("messages"), n_secs, nm.get("cpu_seconds"), rate(res["count"], n_secs),
                         rate(mb(nbytes), n_secs), mb(nm.get("max_rss_kb", 0) * 1e3), mb(nm.get("index_bytes")),
                         None, f"{100 * c_secs / n_secs:.0f} %" if c_secs else None, "1.0×"])
    head = ["source", "messages", "seconds", "CPU s", "msgs/s", "MB/s", "peak RSS MB", "index MB",
            "warm restart s", "% of parse ceiling", "× notmuch speed"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
    for r in rows:
        cells = [r[0], fmt(r[1], 0) if isinstance(r[1], int) else fmt(r[1]), fmt(r[2], 2), fmt(r[3], 1),
                 fmt(r[4], 0), fmt(r[5], 1), fmt(r[6], 0), fmt(r[7], 1), fmt(r[8], 2), fmt(r[9]), fmt(r[10])]
        print("| " + " | ".join(cells) + " |")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("--cwd")
    r.add_argument("--env", action="append")
    r.add_argument("--timeout", type=float, default=None)
    r.add_argument("cmd", nargs=argparse.REMAINDER)
    s = sub.add_parser("serve")
    s.add_argument("--bin", required=True)
    s.add_argument("--data-dir", required=True)
    s.add_argument("--pidfile")
    s.add_argument("--log")
    s.add_argument("--timeout", type=float, default=3600)
    s.add_argument("paths", nargs="+")
    t = sub.add_parser("table")
    t.add_argument("results")
    args = ap.parse_args()
    return {"run": cmd_run, "serve": cmd_serve, "table": cmd_table}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
