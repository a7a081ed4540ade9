#!/usr/bin/env bash
# The indexing benchmark, end to end: build, generate an archive, measure, print a Markdown table.
#
#   bench/index.sh                      # 100000 messages
#   COUNT=5000 bench/index.sh           # a quick run
#
# Environment:
#   COUNT=100000     messages to generate
#   SEED=1           generator seed
#   WORKDIR=DIR      where the archive, data dirs and logs go (default: a fresh mktemp -d under $TMPDIR)
#   KEEP=1           keep WORKDIR afterwards (default: removed unless WORKDIR was given)
#   SKIP_BUILD=1     use the existing target/release/mailshelf (and parse_ceiling) as they are
#   MAILSHELF=PATH   measure this binary instead of target/release/mailshelf (with SKIP_BUILD=1: a
#                    before and an after binary measured in one session)
#   NOTMUCH=0        skip the notmuch comparison
#   REPEAT=1         runs of the parse ceiling and of mailshelf's cold index; the fastest is reported
#                    (the warm restart follows the last cold run; notmuch runs once)
#   TIMEOUT=3600     longest wait, in seconds, for any one step to finish (mailshelf ready, notmuch)
#   DOCUMENTS=KIND   every message carries one ~200 KB document (pdf, docx, mixed, pdf-dense), or one
#                    made to cost (hostile: a zip bomb, 3,000 pages, an inflating stream...): the
#                    attachment-text benchmark (gen_archive.py --documents)
#   SOURCES="maildir mbox"  which forms of the archive to measure
#   TEXT_OFF=1       also index cold with the text of attachments left out (MAILSHELF_ATTACHMENT_TEXT=false),
#                    each run right after a run with it on, to give the cost of reading documents
#                    (TEXT_OFF=0: skip)
#
# Prints the table on stdout (progress goes to stderr) and leaves results.json and results.md in WORKDIR.
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH/.." && pwd)"
COUNT="${COUNT:-100000}"
SEED="${SEED:-1}"
TIMEOUT="${TIMEOUT:-3600}"
NOTMUCH="${NOTMUCH:-1}"
TEXT_OFF="${TEXT_OFF:-1}"
REPEAT="${REPEAT:-1}"
export REPEAT
DOCUMENTS="${DOCUMENTS:-}"
SOURCES="${SOURCES:-maildir mbox}"
MEASURE=(python3 "$BENCH/measure.py")

if [[ -n "${WORKDIR:-}" ]]; then
    mkdir -p "$WORKDIR"
    KEEP="${KEEP:-1}"
else
    WORKDIR="$(mktemp -d "${TMPDIR:-/tmp}/mailshelf-bench.XXXXXX")"
    KEEP="${KEEP:-0}"
fi
WORKDIR="$(cd "$WORKDIR" && pwd)"
PIDFILE="$WORKDIR/mailshelf.pid"

cleanup() {
    local rc=$?
    # Stop a mailshelf this script started, if one is still running.
    if [[ -f "$PIDFILE" ]]; then
        local pid
        pid="$(cat "$PIDFILE" 2>/dev/null || true)"
        if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -KILL "$pid" 2>/dev/null || true
        fi
        rm -f "$PIDFILE"
    fi
    if [[ "$KEEP" != 1 ]]; then
        rm -rf "$WORKDIR"
    else
        echo "bench: kept $WORKDIR" >&2
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say() { echo "bench: $*" >&2; }

# ---- build ----------------------------------------------------------------------------------
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    say "building mailshelf (release)"
    (cd "$ROOT" && cargo build --release --quiet) >&2
    say "building parse_ceiling (release)"
    (cd "$BENCH/parse_ceiling" && cargo build --release --quiet) >&2
fi
MAILSHELF="${MAILSHELF:-$ROOT/target/release/mailshelf}"
CEILING="$BENCH/parse_ceiling/target/release/parse_ceiling"
[[ -x "$MAILSHELF" ]] || { say "missing $MAILSHELF"; exit 1; }
[[ -x "$CEILING" ]] || { say "missing $CEILING"; exit 1; }

# ---- archive --------------------------------------------------------------------------------
MAILDIR="$WORKDIR/Maildir"
MBOX="$WORKDIR/archive.mbox"
have_sources() {
    local s
    for s in $SOURCES; do
        if [[ $s == maildir && ! -d $MAILDIR ]] || [[ $s == mbox && ! -f $MBOX ]]; then return 1; fi
    done
}
if [[ -f "$WORKDIR/gen.json" ]] && have_sources \
    && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["messages"]==int(sys.argv[2]) and d.get("seed")==int(sys.argv[3]) and d.get("documents_kind","")==sys.argv[4] else 1)' \
        "$WORKDIR/gen.json" "$COUNT" "$SEED" "$DOCUMENTS" 2>/dev/null; then
    say "reusing the archive in $WORKDIR"
else
    rm -rf "$MAILDIR" "$MBOX"
    say "generating $COUNT messages (seed $SEED) into $WORKDIR"
    targets=()
    [[ " $SOURCES " == *" maildir "* ]] && targets+=(--maildir "$MAILDIR")
    [[ " $SOURCES " == *" mbox "* ]] && targets+=(--mbox "$MBOX")
    python3 "$BENCH/gen_archive.py" --count "$COUNT" --seed "$SEED" "${targets[@]}" --json ${DOCUMENTS:+--documents "$DOCUMENTS"} \
        | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); d["seed"]=int(sys.argv[1]); d["documents_kind"]=sys.argv[2]; print(json.dumps(d))' "$SEED" "$DOCUMENTS" \
        > "$WORKDIR/gen.json"
fi
say "archive: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%d messages, %.1f MB, avg %d B, largest %d B" % (d["messages"], d["bytes"]/1e6, d["avg_bytes"], d["largest_bytes"]))' "$WORKDIR/gen.json")"
sync

RESULTS="$WORKDIR/results.json"
python3 - "$WORKDIR/gen.json" "$RESULTS" "$MAILSHELF" <<'PY'
import json, subprocess, sys, datetime, platform, os
gen = json.load(open(sys.argv[1]))
try:
    ver = subprocess.run([sys.argv[3], "--version"], capture_output=True, text=True).stdout.strip()
except OSError:
    ver = None
res = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "count": gen["messages"],
       "seed": gen["seed"], "generated": gen, "mailshelf_version": ver, "cpus": os.cpu_count(), "kernel": platform.release(),
       "repeat": int(os.environ.get("REPEAT", "1")), "loadavg_at_start": [round(x, 2) for x in os.getloadavg()]}
json.dump(res, open(sys.argv[2], "w"), indent=1)
PY

# put SOURCE KEY JSON: stores one measurement into results.json
put() {
    python3 - "$RESULTS" "$1" "$2" "$3" <<'PY'
import json, sys
path, src, key, value = sys.argv[1:5]
res = json.load(open(path))
res.setdefault(src, {})[key] = json.loads(value)
json.dump(res, open(path, "w"), indent=1)
PY
}

bytes_total="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bytes"])' "$WORKDIR/gen.json")"

# best A B: the measurement (JSON) with fewer seconds; one without "seconds" (an error) loses.
best() {
    python3 - "$1" "$2" <<'PY'
import json, sys
c = [json.loads(a) for a in sys.argv[1:] if a.strip()]
ok = [x for x in c if isinstance(x.get("seconds"), (int, float))]
print(json.dumps(min(ok, key=lambda x: x["seconds"]) if ok else c[-1]))
PY
}

serve_measure() { # LABEL PATH DATA_DIR
    local out rc=0
    # In the background and waited for, so a TERM or INT reaches the traps (and the cleanup that
    # stops mailshelf) at once.
    "${MEASURE[@]}" serve --bin "$MAILSHELF" --data-dir "$3" --pidfile "$PIDFILE" \
        --log "$WORKDIR/mailshelf-$1.log" --timeout "$TIMEOUT" "$2" > "$WORKDIR/serve.json" &
    wait $! || rc=$?
    out="$(cat "$WORKDIR/serve.json")"
    [[ $rc == 0 ]] || say "mailshelf ($1) failed: $out"
    rm -f "$PIDFILE" "$WORKDIR/serve.json"
    echo "$out"
}

for src in $SOURCES; do
    if [[ $src == maildir ]]; then path="$MAILDIR"; else path="$MBOX"; fi
    put "$src" bytes "$bytes_total"

    ceil=""
    for run in $(seq 1 "$REPEAT"); do
        sync
        say "[$src] parse ceiling (run $run/$REPEAT)"
        one="$("${MEASURE[@]}" run --timeout "$TIMEOUT" -- "$CEILING" "$path")"
        one="$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); d=json.loads(r["stdout"].strip().splitlines()[-1]); d["max_rss_kb"]=r["max_rss_kb"]; d["cpu_seconds"]=r["cpu_seconds"]; print(json.dumps(d))' "$one")"
        say "[$src] parse ceiling: $one"
        ceil="$(best "$ceil" "$one")"
    done
    put "$src" ceiling "$ceil"

    data="$WORKDIR/data-$src"
    cold=""
    off=""
    for run in $(seq 1 "$REPEAT"); do
        if [[ "$TEXT_OFF" == 1 ]]; then
            rm -rf "$data"; mkdir -p "$data"; sync
            say "[$src] mailshelf cold index, attachment text off (fresh data dir, run $run/$REPEAT)"
            one="$(MAILSHELF_ATTACHMENT_TEXT=false serve_measure "$src-cold-off" "$path" "$data")"
            say "[$src] mailshelf cold, attachment text off: $one"
            off="$(best "$off" "$one")"
        fi
        rm -rf "$data"; mkdir -p "$data"; sync
        say "[$src] mailshelf cold index (fresh data dir, run $run/$REPEAT)"
        one="$(serve_measure "$src-cold" "$path" "$data")"
        say "[$src] mailshelf cold: $one"
        cold="$(best "$cold" "$one")"
    done
    put "$src" mailshelf "$cold"
    [[ -n "$off" ]] && put "$src" mailshelf_text_off "$off"

    sync
    say "[$src] mailshelf warm restart (same data dir)"
    warm="$(serve_measure "$src-warm" "$path" "$data")"
    put "$src" warm "$warm"
    say "[$src] mailshelf warm: $warm"
    put "$src" index_bytes "$(du -sb "$data" | cut -f1)"
done

# ---- notmuch --------------------------------------------------------------------------------
if [[ "$NOTMUCH" == 1 ]]; then
    if ! command -v notmuch >/dev/null 2>&1; then
        say "installing notmuch (Debian package)"
        if [[ $(id -u) == 0 ]]; then
            (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq notmuch) >&2 || true
        else
            (sudo -n apt-get update -qq && sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq notmuch) >&2 || true
        fi
    fi
    if command -v notmuch >/dev/null 2>&1; then
        NMROOT="$WORKDIR/notmuch-mail"
        rm -rf "$NMROOT"
        say "copying the Maildir for notmuch (it writes .notmuch/ into the mail root)"
        cp -a "$MAILDIR" "$NMROOT"
        sync
        cat > "$WORKDIR/notmuch-config" <<EOF
[database]
path=$NMROOT

[user]
name=Bench
primary_email=bench@example.com

[new]
tags=unread;inbox;
ignore=

[search]
exclude_tags=deleted;spam;

[maildir]
synchronize_flags=true
EOF
        sync
        say "notmuch new"
        nm="$("${MEASURE[@]}" run --timeout "$TIMEOUT" --env "NOTMUCH_CONFIG=$WORKDIR/notmuch-config" -- notmuch new --quiet)" \
            || say "notmuch new failed: $nm"
        nmcount="$(NOTMUCH_CONFIG="$WORKDIR/notmuch-config" notmuch count '*' 2>/dev/null || echo null)"
        nmfiles="$(NOTMUCH_CONFIG="$WORKDIR/notmuch-config" notmuch count --output=files '*' 2>/dev/null || echo null)"
        nmsize="$(du -sb "$NMROOT/.notmuch" | cut -f1)"
        nm="$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r["messages"]=json.loads(sys.argv[2]); r["files"]=json.loads(sys.argv[3]); r["index_bytes"]=int(sys.argv[4]); r["version"]=sys.argv[5]; r.pop("stdout",None); print(json.dumps(r))' \
            "$nm" "$nmcount" "$nmfiles" "$nmsize" "$(notmuch --version)")"
        put maildir notmuch "$nm"
        say "notmuch: $nm"
        rm -rf "$NMROOT"
    else
        say "notmuch is not available: skipped"
    fi
fi

# ---- report ---------------------------------------------------------------------------------
{
    python3 - "$RESULTS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
g = r["generated"]
print(f"Indexing benchmark, {r['date']}: {r['count']} generated messages (seed {r['seed']}), "
      f"{g['bytes'] / 1e6:.1f} MB of messages, average {g['avg_bytes']} B, largest {g['largest_bytes']} B; "
      f"{r.get('mailshelf_version')}; {r['cpus']} CPUs, load average {r['loadavg_at_start'][0]} at start; "
      f"best of {r['repeat']} run(s) for the parse ceiling and the cold index.")
print()
PY
    "${MEASURE[@]}" table "$RESULTS"
    python3 - "$RESULTS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
n = r["count"]
g = r["generated"]
notes = []
for src in ("maildir", "mbox"):
    s = r.get(src, {})
    ms = s.get("mailshelf") or {}
    st = ms.get("status") or {}
    if st:
        diff = st.get("messages", 0) - n
        notes.append(f"{src}: mailshelf lists {st.get('messages')} messages ({diff:+d} vs generated), "
                     f"looked at {st.get('indexed')} of {st.get('total')} files/messages, "
                     f"{ms.get('skipped', 0)} 'skipped' warnings; its own log says indexing took "
                     f"{ms.get('self_reported_seconds')} s.")
    for k in ("mailshelf", "warm"):
        if (s.get(k) or {}).get("error"):
            notes.append(f"{src} {k}: {s[k]['error']}")
    off = s.get("mailshelf_text_off") or {}
    if off.get("seconds") and ms.get("seconds"):
        docs = g.get("documents", 0)
        per_core = f", {docs / ms['cpu_seconds']:.0f} documents per CPU second" if docs and ms.get("cpu_seconds") else ""
        notes.append(f"{src}: attachment text costs {ms['seconds'] / off['seconds']:.2f}x the time of indexing without it "
                     f"({ms['seconds']} s against {off['seconds']} s; CPU {ms.get('cpu_seconds')} s against "
                     f"{off.get('cpu_seconds')} s); the parse ceiling is {c_secs / ms['seconds'] * 100:.0f} % of it on, "
                     f"{c_secs / off['seconds'] * 100:.0f} % off{per_core}."
                     if (c_secs := (s.get("ceiling") or {}).get("seconds")) else
                     f"{src}: attachment text costs {ms['seconds'] / off['seconds']:.2f}x the time of indexing without it.")
    c = s.get("ceiling") or {}
    if c.get("failed"):
        notes.append(f"{src}: mail-parser returned nothing for {c['failed']} messages.")
nm = (r.get("maildir") or {}).get("notmuch")
if nm:
    notes.append(f"notmuch ({nm.get('version')}): {nm.get('messages')} messages from {nm.get('files')} files "
                 f"(it merges files sharing a Message-ID; {g['duplicate_message_id']} generated messages reuse one).")
if notes:
    print()
    for x in notes:
        print(f"- {x}")
PY
} | tee "$WORKDIR/results.md"
