#!/usr/bin/env bash
# Mail kept compressed: an mbox compressed by gzip, zstd, xz, bzip2 and lz4 (their own tools), indexed
# cold against the same mbox uncompressed, and its last message opened (the file inflated up to
# it) against the tool's own time to decompress the whole file, measured in the same run.
#
#   bench/packed.sh MBOX            # e.g. one written by bench/gen_archive.py --mbox
#
#   MAILSHELF=target/release/mailshelf   the binary (built when it is the default and missing)
#   WORKDIR=/tmp/mailshelf-packed        where the compressed copies and data folders go
#   REPEAT=3                             runs of each; the median is reported
set -euo pipefail
cd "$(dirname "$0")/.."
MBOX="$(realpath "${1:?usage: bench/packed.sh MBOX}")"
MAILSHELF="${MAILSHELF:-target/release/mailshelf}"
WORKDIR="${WORKDIR:-/tmp/mailshelf-packed}"
REPEAT="${REPEAT:-3}"
[[ -x "$MAILSHELF" ]] || cargo build --release
mkdir -p "$WORKDIR"
python3 - "$MBOX" "$MAILSHELF" "$WORKDIR" "$REPEAT" <<'PY'
import os, shutil, statistics, subprocess, sys, time, urllib.parse, urllib.request
sys.path.insert(0, "bench")
from measure import ColdIndex
mbox, binary, work, repeat = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3], int(sys.argv[4])
tools = [("plain", None, ""), ("gzip", ["gzip", "-c"], ".gz"), ("zstd", ["zstd", "-q", "-c"], ".zst"),
         ("xz", ["xz", "-T1", "-c"], ".xz"), ("bzip2", ["bzip2", "-c"], ".bz2"), ("lz4", ["lz4", "-q", "-c"], ".lz4")]
decompress = {"gzip": ["gzip", "-dc"], "zstd": ["zstd", "-q", "-dc"], "xz": ["xz", "-dc"], "bzip2": ["bzip2", "-dc"],
              "lz4": ["lz4", "-q", "-dc"]}
rows = []
for name, cmd, ext in tools:
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "archive.mbox" + ext)
    if not os.path.exists(path):
        if cmd is None:
            shutil.copy(mbox, path)
        else:
            with open(path, "wb") as out:
                subprocess.run(cmd + [mbox], stdout=out, check=True)
    walls, cpus, peaks, lasts, nexts, refs = [], [], [], [], [], []
    for _ in range(repeat):
        data = os.path.join(work, "data-" + name)
        shutil.rmtree(data, ignore_errors=True)
        with ColdIndex(binary, [folder], data) as s:
            walls.append(s.seconds)
            cpus.append(s.cpu_seconds)
            peaks.append(s.vmhwm_kb / 1024)
            # The newest message of the file is its last: opened with no place kept, then the one
            # before it (inflated from the start again), as a reader paging back would.
            listed = s.get_json("api/messages?limit=2")["messages"]
            for i, m in enumerate(listed):
                t = time.monotonic()
                urllib.request.urlopen(s.url + "raw/" + urllib.parse.quote(m["id"], safe="@")).read()
                (lasts if i == 0 else nexts).append(time.monotonic() - t)
        if cmd is not None:
            t = time.monotonic()
            subprocess.run(decompress[name] + [path], stdout=subprocess.DEVNULL, check=True)
            refs.append(time.monotonic() - t)
    med = statistics.median
    rows.append((name, os.path.getsize(path), med(walls), med(cpus), med(peaks), med(lasts), med(nexts), med(refs) if refs else None))
print("| mbox | bytes | cold index s | CPU s | peak RSS MB | last message opened s | the one before s | the tool's whole decompression s |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name, size, wall, cpu, peak, last, nxt, ref in rows:
    ref_s = f"{ref:.2f}" if ref is not None else "–"
    print(f"| {name} | {size/1e6:.1f} MB | {wall:.2f} | {cpu:.1f} | {peak:.0f} | {last:.3f} | {nxt:.3f} | {ref_s} |")
PY
