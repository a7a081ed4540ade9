#!/usr/bin/env python3
"""Export benchmark: /api/export of every message, as mbox, zip and CSV, against references that
serve or copy the same bytes in the same run (the machine is shared, so only ratios travel).

    python3 bench/export.py --bin target/release/mailshelf --mbox /tmp/x/archive.mbox --workdir /tmp/x

Starts `mailshelf serve MBOX` on 127.0.0.1 (a port of its own), waits until indexing is done, then
for each format downloads the whole export once (reading it as fast as it comes) and records the
time to the first byte, the total time, the bytes and the server's peak resident memory *during the
export*: its VmHWM is reset through /proc/PID/clear_refs (needs root or the same user) just before,
and read just after. References, in the same run: nginx (one worker) serving the mbox file as a
static file over the same loopback HTTP path, and `cat MBOX` through a pipe. Prints a Markdown table
and writes results.json into --workdir. Python 3 standard library only; nginx optional.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

CHUNK = 1 << 20


def status(pid: int, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def download(url: str) -> dict:
    t0 = time.monotonic()
    first = None
    total = 0
    with urllib.request.urlopen(url, timeout=3600) as r:
        messages = r.headers.get("x-mailshelf-messages")
        while True:
            chunk = r.read(CHUNK)
            if first is None:
                first = time.monotonic() - t0
            if not chunk:
                break
            total += len(chunk)
    seconds = time.monotonic() - t0
    return {"first_byte_s": round(first or 0.0, 3), "seconds": round(seconds, 3), "bytes": total,
            "messages": int(messages) if messages else None,
            "mb_s": round(total / seconds / 1e6, 1) if seconds else None}


def start_mailshelf(binary: str, mbox: str, data_dir: str, log: str, timeout: float):
    cmd = [binary, "serve", mbox, "--listen", "127.0.0.1:0", "--data-dir", data_dir]
    env = dict(os.environ, NO_COLOR="1")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(log, "ab"), env=env)
    deadline = time.monotonic() + timeout
    buf = b""
    url = None
    while url is None:
        if time.monotonic() > deadline or p.poll() is not None:
            raise RuntimeError("mailshelf did not start")
        ready, _, _ = select.select([p.stdout], [], [], 1.0)
        if ready:
            buf += os.read(p.stdout.fileno(), 4096)
            m = re.search(rb"serving on (http://\S+?/)\s", buf)
            if m:
                url = m.group(1).decode()
    while True:
        try:
            with urllib.request.urlopen(url + "api/status", timeout=10) as r:
                st = json.load(r)
            if st.get("ready"):
                break
        except OSError:
            pass
        if time.monotonic() > deadline or p.poll() is not None:
            raise RuntimeError("mailshelf did not finish indexing")
        time.sleep(0.2)
    return p, url, st


def nginx_reference(mbox: str, work: str) -> dict | None:
    nginx = shutil.which("nginx")
    if not nginx:
        return None
    root = os.path.join(work, "nginx")
    os.makedirs(root, exist_ok=True)
    link = os.path.join(root, "archive.mbox")
    if not os.path.exists(link):
        os.symlink(os.path.abspath(mbox), link)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    conf = os.path.join(work, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""daemon off; worker_processes 1; pid {work}/nginx.pid; error_log {work}/nginx.err;
events {{ worker_connections 64; }}
http {{ access_log off; sendfile on; types {{ application/mbox mbox; }}
  server {{ listen 127.0.0.1:{port}; root {root}; }} }}
""")
    p = subprocess.Popen([nginx, "-c", conf, "-p", work], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        return download(f"http://127.0.0.1:{port}/archive.mbox")
    finally:
        p.send_signal(signal.SIGQUIT)
        p.wait(timeout=30)


def cat_reference(mbox: str) -> dict:
    t0 = time.monotonic()
    cat = subprocess.Popen(["cat", mbox], stdout=subprocess.PIPE)
    total = 0
    while True:
        chunk = cat.stdout.read(CHUNK)
        if not chunk:
            break
        total += len(chunk)
    cat.wait()
    seconds = time.monotonic() - t0
    return {"seconds": round(seconds, 3), "bytes": total, "mb_s": round(total / seconds / 1e6, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="target/release/mailshelf")
    ap.add_argument("--mbox", required=True)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--query", default="", help="also export this search (mbox)")
    ap.add_argument("--timeout", type=float, default=3600)
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="mailshelf-export-")
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "data")
    shutil.rmtree(data, ignore_errors=True)
    results: dict = {"mbox": args.mbox, "mbox_bytes": os.path.getsize(args.mbox)}

    # References first, so the file is in the page cache for every measurement alike.
    results["cat"] = cat_reference(args.mbox)
    print(f"cat: {results['cat']}", file=sys.stderr)
    t0 = time.monotonic()
    p, url, st = start_mailshelf(args.bin, args.mbox, data, os.path.join(work, "mailshelf.log"), args.timeout)
    results["index_seconds"] = round(time.monotonic() - t0, 1)
    results["messages"] = st.get("messages")
    print(f"indexed {st.get('messages')} messages in {results['index_seconds']} s", file=sys.stderr)
    try:
        results["nginx"] = nginx_reference(args.mbox, work)
        print(f"nginx: {results['nginx']}", file=sys.stderr)
        runs = [("mbox", ""), ("zip", ""), ("csv", "")]
        if args.query:
            runs.append(("mbox", args.query))
        results["exports"] = []
        for fmt, q in runs:
            rss_before = status(p.pid, "VmRSS")
            can_reset = reset_peak(p.pid)
            r = download(url + "api/export?" + urllib.parse.urlencode({"format": fmt, "q": q}))
            r.update(format=fmt, query=q, rss_before_kb=rss_before,
                     peak_kb=status(p.pid, "VmHWM") if can_reset else None, rss_after_kb=status(p.pid, "VmRSS"))
            results["exports"].append(r)
            print(f"{fmt} {q!r}: {r}", file=sys.stderr)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump(results, f, indent=2)

    ref = results.get("nginx") or results["cat"]
    ref_name = "nginx (static file)" if results.get("nginx") else "cat"
    print(f"{results['messages']} messages, mbox {results['mbox_bytes'] / 1e6:.0f} MB; reference: {ref_name}")
    print()
    print("| export | bytes | first byte | seconds | MB/s | messages/s | × reference MB/s | RSS before | peak RSS during |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in [("nginx: the mbox file", results.get("nginx")), ("cat: the mbox file", results["cat"])]:
        if r:
            tag = " (reference)" if r is ref else ""
            print(f"| {name} | {r['bytes']:,} | {r.get('first_byte_s', '')} | {r['seconds']} | {r['mb_s']} | | "
                  f"{r['mb_s'] / ref['mb_s']:.2f}×{tag} | | |")
    for r in results["exports"]:
        label = f"`{r['format']}`" + (f" q=`{r['query']}` ({r['messages']:,} messages)" if r["query"] else " (all)")
        msgs = (r["messages"] or 0) / r["seconds"] if r["seconds"] else None
        ratio = r["mb_s"] / ref["mb_s"] if ref["mb_s"] else 0
        peak = f"{r['peak_kb'] / 1024:.0f} MB" if r.get("peak_kb") else "n/a"
        print(f"| {label} | {r['bytes']:,} | {r['first_byte_s']} s | {r['seconds']} | {r['mb_s']} | "
              f"{msgs:,.0f} | {ratio:.2f}× | {r['rss_before_kb'] / 1024:.0f} MB | {peak} |"
              if msgs else
              f"| {label} | {r['bytes']:,} | {r['first_byte_s']} s | {r['seconds']} | {r['mb_s']} | | {ratio:.2f}× | "
              f"{r['rss_before_kb'] / 1024:.0f} MB | {peak} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
