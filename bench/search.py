#!/usr/bin/env python3
"""Search benchmark: indexing with full-text search on and off in the same run (and `notmuch new`
on the same Maildir as the reference), then query latency over the fixed queries in
bench/queries.txt, through the JSON API a script or the search box uses.

    python3 bench/search.py MAILDIR [--rounds 20] [--no-notmuch]

MAILDIR is an archive made by bench/gen_archive.py (or any Maildir). Builds nothing: run
`cargo build --release` first. Everything it starts is stopped on exit; it writes only in a
temporary folder.
"""

import argparse
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "mailshelf")


def start(path, data, search):
    env = dict(os.environ, MAILSHELF_SEARCH="true" if search else "false", RUST_LOG="warn", NO_COLOR="1")
    t0 = time.monotonic()
    p = subprocess.Popen([BIN, "serve", path, "--listen", "127.0.0.1:0", "--data-dir", data],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    buf = b""
    while True:
        ready, _, _ = select.select([p.stdout], [], [], 60)
        if not ready:
            p.kill()
            raise SystemExit("mailshelf printed no URL")
        chunk = os.read(p.stdout.fileno(), 4096)
        if not chunk:
            raise SystemExit(f"mailshelf exited with {p.wait()}")
        buf += chunk
        m = re.search(rb"serving on (http://\S+?/)\s", buf)
        if m:
            url = m.group(1).decode()
            break
    while True:
        try:
            with urllib.request.urlopen(url + "api/status", timeout=5) as r:
                st = json.loads(r.read())
            if st.get("ready"):
                break
        except OSError:
            pass
        if time.monotonic() - t0 > 3600:
            p.kill()
            raise SystemExit("not ready within an hour")
        time.sleep(0.02)
    return p, url, time.monotonic() - t0, st["messages"]


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("maildir")
    ap.add_argument("--rounds", type=int, default=20, help="timed runs of each query (after one warm-up)")
    ap.add_argument("--no-notmuch", action="store_true", help="skip the notmuch reference")
    args = ap.parse_args()
    if not os.path.exists(BIN):
        raise SystemExit(f"{BIN} is missing: run cargo build --release")
    queries = [q.strip() for q in open(os.path.join(ROOT, "bench", "queries.txt"), encoding="utf-8")
               if q.strip() and not q.startswith("#")]
    work = tempfile.mkdtemp(prefix="mailshelf-search-")
    procs = []
    try:
        rows = {}
        for search in (False, True):
            data = os.path.join(work, f"data-{'on' if search else 'off'}")
            p, url, secs, n = start(args.maildir, data, search)
            procs.append(p)
            rows[search] = (secs, n)
            if not search:
                stop(p)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(os.path.join(work, "data-on", "search")) for f in fs)

        lat = []
        per_query = {}
        for q in queries:
            u = url + "api/messages?limit=20&q=" + urllib.parse.quote(q)
            with urllib.request.urlopen(u, timeout=30) as r:
                total = json.loads(r.read())["total"]
            times = []
            for _ in range(args.rounds):
                t = time.perf_counter()
                with urllib.request.urlopen(u, timeout=30) as r:
                    r.read()
                times.append((time.perf_counter() - t) * 1000)
            per_query[q] = (total, statistics.median(times), max(times))
            lat.extend(times)
        stop(p)

        nm = None
        if not args.no_notmuch and shutil.which("notmuch"):
            mail = os.path.join(work, "notmuch-mail")
            shutil.copytree(args.maildir, mail, symlinks=True)
            cfg = os.path.join(work, "notmuch-config")
            with open(cfg, "w") as f:
                f.write(f"[database]\npath={mail}\n[user]\nname=Bench\nprimary_email=bench@example.org\n"
                        "[new]\ntags=unread;inbox;\n[search]\nexclude_tags=\n[maildir]\nsynchronize_flags=false\n")
            env = dict(os.environ, NOTMUCH_CONFIG=cfg)
            t = time.monotonic()
            subprocess.run(["notmuch", "new", "--quiet"], env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            nm = time.monotonic() - t

        off, on = rows[False], rows[True]
        print(f"\nSearch benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {on[1]} messages, "
              f"load average {os.getloadavg()[0]:.1f}\n")
        print("| indexing | seconds | msgs/s | × notmuch new |")
        print("|---|---:|---:|---:|")
        for name, (secs, n) in (("search off", off), ("search on", on)):
            x = f"{nm / secs:.1f}×" if nm else "–"
            print(f"| mailshelf, {name} | {secs:.2f} | {n / secs:,.0f} | {x} |")
        if nm:
            print(f"| notmuch new | {nm:.2f} | {on[1] / nm:,.0f} | 1.0× |")
        print(f"\nsearch on costs {on[0] / off[0]:.2f}× the time of search off; search index {size / 2**20:.1f} MB\n")
        print(f"queries: {len(queries)} × {args.rounds} rounds, limit 20 with snippets: "
              f"p50 {percentile(lat, 0.5):.1f} ms, p99 {percentile(lat, 0.99):.1f} ms, max {max(lat):.1f} ms\n")
        print("| query | matches | median ms | max ms |")
        print("|---|---:|---:|---:|")
        for q, (total, med, mx) in per_query.items():
            print(f"| `{q}` | {total:,} | {med:.1f} | {mx:.1f} |")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
