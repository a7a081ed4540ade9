#!/usr/bin/env python3
"""MMDF and Babyl files against the mbox they were written from: the bench mbox copied into each
format by Python's `mailbox` (once, kept in WORKDIR), each indexed cold by mailshelf in turn, in
one run, medians of REPEAT rounds.

    python3 bench/spans.py MBOX [--bin target/release/mailshelf] [--workdir /tmp/mailshelf-spans] [--repeat 3]
"""

import argparse
import mailbox
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import ColdIndex  # noqa: E402


def written(source: str, folder: str, name: str, kind) -> str:
    """The mbox `source` copied into a mailbox of `kind` at folder/name, unless it is there."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        target = kind(path + ".part")
        for message in mailbox.mbox(source):
            target.add(message)
        target.flush()
        target.close()
        os.rename(path + ".part", path)
    return path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mbox")
    ap.add_argument("--bin", default="target/release/mailshelf")
    ap.add_argument("--workdir", default="/tmp/mailshelf-spans")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    binary = os.path.realpath(args.bin)
    layouts = {"mbox": os.path.join(args.workdir, "mbox")}
    os.makedirs(layouts["mbox"], exist_ok=True)
    plain = os.path.join(layouts["mbox"], "archive.mbox")
    if not os.path.exists(plain):
        shutil.copy(args.mbox, plain)
    for name, kind in [("mmdf", mailbox.MMDF), ("babyl", mailbox.Babyl)]:
        layouts[name] = os.path.join(args.workdir, name)
        written(plain, layouts[name], "archive." + name, kind)
    runs = {}
    for _ in range(args.repeat):
        for name, folder in layouts.items():
            data = os.path.join(args.workdir, "data-" + name)
            shutil.rmtree(data, ignore_errors=True)
            with ColdIndex(binary, [folder], data) as s:
                listed = s.get_json("api/messages")["total"]
                found = s.get_json("api/messages?q=invoice")["total"]
            runs.setdefault(name, []).append((s.seconds, s.cpu_seconds, s.vmhwm_kb / 1024, listed, found))
    med = statistics.median
    base = med(r[0] for r in runs["mbox"])
    print(f"medians of {args.repeat}\n")
    print("| file | bytes | cold index s | CPU s | peak RSS MB | × mbox | messages listed | found by `invoice` |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, rs in runs.items():
        size = sum(os.path.getsize(os.path.join(layouts[name], f)) for f in os.listdir(layouts[name]))
        wall = med(r[0] for r in rs)
        print(f"| {name} | {size / 1e6:.1f} MB | {wall:.2f} | {med(r[1] for r in rs):.1f} | {med(r[2] for r in rs):.0f} "
              f"| {wall / base:.2f} | {rs[-1][3]:,} | {rs[-1][4]:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
