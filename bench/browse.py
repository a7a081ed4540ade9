#!/usr/bin/env python3
"""Browsing benchmark: how long the overview, the conversations list, a folder, a label and the
plain list take on a large archive, through the same URLs a browser or a script uses.

    python3 bench/browse.py ARCHIVE [--rounds 20]

ARCHIVE is an mbox or Maildir made by bench/gen_archive.py (or any archive). Builds nothing: run
`cargo build --release` first. It starts mailshelf on a temporary data folder, waits until the
archive is indexed, times each URL once (the first request: groupings and counts are computed)
and then `--rounds` times more (kept until the index changes), and prints a Markdown table. `/api/status` (answered from memory, no work) is timed in the
same run as the floor every other figure is measured against, since this machine is shared and its
speed varies.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from search import BIN, percentile, start, stop  # noqa: E402


def fetch(url):
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:
        body = r.read()
    return time.perf_counter() - t, body


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("archive")
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    if not os.path.exists(BIN):
        raise SystemExit(f"{BIN} is missing: run cargo build --release")
    work = tempfile.mkdtemp(prefix="mailshelf-browse-")
    p = None
    try:
        p, url, secs, n = start(args.archive, os.path.join(work, "data"), True)
        print(f"indexed {n} messages in {secs:.1f} s", file=sys.stderr)
        folders = json.loads(fetch(url + "api/folders")[1])
        labels = json.loads(fetch(url + "api/labels")[1])["labels"]
        # The first overview of the whole archive: every entry counted (later ones are kept).
        cold, body = fetch(url + "api/stats")
        stats = json.loads(body)
        print(f"first overview of the whole archive (/api/stats, counted): {cold * 1000:.1f} ms", file=sys.stderr)
        biggest = max((f for f in folders["folders"]), key=lambda f: f["messages"], default=None)
        targets = [
            ("status (floor)", "api/status"),
            ("list page", ""),
            ("list page 1000", "?page=1000"),
            ("overview page", "overview"),
            ("stats JSON", "api/stats"),
            ("conversations page", "?threads=1"),
            ("conversations JSON", "api/messages?threads=1&limit=50"),
        ]
        if stats["lists"]:
            targets.append(("overview of a search", "overview?q=" + urllib.parse.quote(stats["lists"][0]["query"])))
        if biggest:
            targets.append((f"folder page ({biggest['messages']} msgs)", "folder/" + urllib.parse.quote(biggest["path"])))
        if labels:
            top = max(labels, key=lambda l: l["messages"])
            targets.append((f"label page ({top['messages']} msgs)", "label/" + urllib.parse.quote(top["name"], safe="")))
        rows = []
        floor = None
        for name, path in targets:
            first = fetch(url + path)[0]
            times = [fetch(url + path)[0] for _ in range(args.rounds)]
            med = statistics.median(times)
            if floor is None:
                floor = med
            rows.append((name, path, first * 1000, med * 1000, percentile(times, 0.99) * 1000, med / floor))
        print(f"First `/api/stats` over all {n} messages (counted, not kept): {cold * 1000:.1f} ms\n")
        print(f"| {n} messages | first ms | median ms | p99 ms | median × status |")
        print("|---|---:|---:|---:|---:|")
        for name, path, first, med, p99, ratio in rows:
            print(f"| {name} (`/{path}`) | {first:.1f} | {med:.1f} | {p99:.1f} | {ratio:.0f} |")
    finally:
        if p:
            stop(p)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
