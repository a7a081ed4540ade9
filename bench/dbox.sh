#!/usr/bin/env bash
# Dovecot's own stores: a generated Maildir converted by Dovecot itself (`doveadm backup`) to
# mdbox and to sdbox, and the three indexed cold by mailshelf in turn, in one run: the same
# messages, listed and found alike, and what each layout costs against the Maildir.
#
#   bench/dbox.sh                 # 20,000 messages
#   COUNT=5000 bench/dbox.sh
#
#   COUNT=20000        messages generated (bench/gen_archive.py, seed 1)
#   WORKDIR=DIR        where the stores, a private Dovecot's files and data folders go
#   MAILSHELF=PATH     the binary (built when it is the default and missing)
#   REPEAT=3           rounds (each layout once a round); the median is reported
#   DOVECOT_USER=dv    the account that owns the stores (Dovecot refuses root); created when missing
#
# Needs Dovecot (Debian's dovecot-core; installed with apt-get when missing and run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT="${COUNT:-20000}"
WORKDIR="${WORKDIR:-/tmp/mailshelf-dbox}"
MAILSHELF="${MAILSHELF:-target/release/mailshelf}"
REPEAT="${REPEAT:-3}"
DOVECOT_USER="${DOVECOT_USER:-dv}"
[[ -x "$MAILSHELF" ]] || cargo build --release
source scripts/private-dovecot.sh
home="$WORKDIR/home"
if [[ ! -d "$home/Maildir/cur" ]]; then
  mkdir -p "$home"
  python3 bench/gen_archive.py --count "$COUNT" --seed 1 --maildir "$home/Maildir" >&2
fi
chown -R "$DOVECOT_USER:" "$home"
private_dovecot "$WORKDIR" "$home" "maildir:$home/Maildir"
for layout in mdbox sdbox; do
  [[ -d "$home/$layout" ]] || doveadm -c "$conf" backup -u "$DOVECOT_USER" "$layout:$home/$layout"
done
chmod -R a+rX "$home"
python3 - "$(realpath "$MAILSHELF")" "$home" "$WORKDIR" "$REPEAT" "$COUNT" <<'PY'
import os, shutil, statistics, sys
sys.path.insert(0, "bench")
from measure import ColdIndex
binary, home, work, repeat, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
runs = {}
for _ in range(repeat):
    for layout in ["Maildir", "mdbox", "sdbox"]:
        data = os.path.join(work, "data-" + layout)
        shutil.rmtree(data, ignore_errors=True)
        with ColdIndex(binary, [os.path.join(home, layout)], data) as s:
            listed = s.get_json("api/messages")["total"]
            found = s.get_json("api/messages?q=invoice")["total"]
        runs.setdefault(layout, []).append((s.seconds, s.cpu_seconds, listed, found))
print(f"{count} generated messages, in Maildir and as Dovecot converted them; medians of {repeat}\n")
print("| layout | cold index s | CPU s | × Maildir | messages listed | found by `invoice` |")
print("|---|---:|---:|---:|---:|---:|")
base = statistics.median(r[0] for r in runs["Maildir"])
for layout, rs in runs.items():
    wall, cpu = statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)
    print(f"| {layout} | {wall:.2f} | {cpu:.1f} | {wall / base:.2f} | {rs[-1][2]:,} | {rs[-1][3]:,} |")
PY
