#!/usr/bin/env python3
"""Do the two backends find the same messages? Runs every query of bench/queries.txt against two
servers over the same archive — one with the embedded index (`--data-dir`), one on PostgreSQL
(`--database-url`) — and compares, per query, the total `/api/messages?limit=0&q=…` reports and the
set of messages `/api/export?format=csv&q=…` streams (every match, keyed by Message-ID, date and
subject). Python 3 standard library only.

    python3 bench/agree.py --bin target/release/mailshelf --archive ARCHIVE.mbox \\
        --database-url postgres://user@host:port/db [--out agree.json]
    python3 bench/agree.py --embedded http://127.0.0.1:A --postgres http://127.0.0.1:B

With --bin, both servers are started here (the embedded one in a temporary data folder), each is
waited for until it has indexed the archive, and both are stopped at the end; the database must
be empty or hold this archive already. With --embedded/--postgres, two running servers are asked.
Prints one row a query (totals, whether the sets agree, what only one side found) and a summary.
"""

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def get(url: str, timeout: float = 600) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def queries(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [q.strip() for q in f if q.strip() and not q.startswith("#")]


def matches(base: str, q: str) -> tuple[int, set]:
    enc = urllib.parse.quote(q)
    total = json.loads(get(f"{base}/api/messages?limit=0&q={enc}"))["total"]
    rows = csv.DictReader(io.StringIO(get(f"{base}/api/export?format=csv&q={enc}").decode("utf-8")))
    return total, {(r["message_id"], r["date"], r["subject"]) for r in rows}


def start(binary: str, archive: str, extra: list[str], log: str) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen([binary, "serve", archive, "--listen", "127.0.0.1:0", *extra],
                         stdout=subprocess.PIPE, stderr=open(log, "w"))
    line = p.stdout.readline().decode()
    return p, line.strip().split("serving on ", 1)[1].rstrip("/")


def wait_indexed(base: str, timeout: float) -> dict:
    """Until the server has read the archive: ready, and not reading any more."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            s = json.loads(get(f"{base}/api/status", 10))
            if s["ready"] and not s.get("indexing") and s["messages"] > 0 and s["indexed"] >= s["total"] > 0:
                return s
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"{base} did not finish indexing in {timeout} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin")
    ap.add_argument("--archive")
    ap.add_argument("--database-url")
    ap.add_argument("--embedded", help="a running server with the embedded index")
    ap.add_argument("--postgres", help="a running server on PostgreSQL")
    ap.add_argument("--queries", default=os.path.join(HERE, "queries.txt"))
    ap.add_argument("--timeout", type=float, default=7200)
    ap.add_argument("--out")
    args = ap.parse_args()
    procs = []
    work = tempfile.mkdtemp(prefix="agree-")
    try:
        if args.bin:
            if not (args.archive and args.database_url):
                ap.error("--bin needs --archive and --database-url")
            pe, emb = start(args.bin, args.archive, ["--data-dir", os.path.join(work, "data")], os.path.join(work, "embedded.log"))
            procs.append(pe)
            pp, pg = start(args.bin, args.archive, ["--database-url", args.database_url, "--data-dir", os.path.join(work, "unused")],
                           os.path.join(work, "postgres.log"))
            procs.append(pp)
            for base in (emb, pg):
                wait_indexed(base, args.timeout)
        else:
            emb, pg = args.embedded, args.postgres
            if not (emb and pg):
                ap.error("give --bin … or both --embedded and --postgres")
        rows = []
        print("| query | embedded | PostgreSQL | same set | only embedded | only PostgreSQL |")
        print("|---|---:|---:|---|---:|---:|")
        for q in queries(args.queries):
            te, se = matches(emb, q)
            tp, sp = matches(pg, q)
            same = se == sp and te == tp
            row = {"query": q, "embedded": te, "postgres": tp, "same": same,
                   "only_embedded": len(se - sp), "only_postgres": len(sp - se),
                   "examples_only_embedded": sorted(se - sp)[:3], "examples_only_postgres": sorted(sp - se)[:3]}
            rows.append(row)
            print(f"| `{q}` | {te} | {tp} | {'yes' if same else 'NO'} | {row['only_embedded']} | {row['only_postgres']} |")
        agree = sum(r["same"] for r in rows)
        print(f"\n{agree} of {len(rows)} queries find the same messages on both backends.")
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"queries": rows, "agree": agree, "of": len(rows)}, f, indent=1)
        return 0 if agree == len(rows) else 1
    finally:
        for p in procs:
            p.terminate()
            p.wait()


if __name__ == "__main__":
    sys.exit(main())
