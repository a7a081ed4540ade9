#!/usr/bin/env bash
# Instructions the server runs per request, in user space, counted by callgrind: a figure other work
# on the machine does not move, for comparing two builds of the serving path (bench/serve.sh gives
# requests/s and CPU time, which do move).
#
#   WORKDIR=/tmp/s KEEP=1 bench/serve.sh             # once: leaves the benchmark's messages in /tmp/s/mail
#   MAIL=/tmp/s/mail bench/serve_instructions.sh     # target/release/mailshelf
#   MAIL=/tmp/s/mail MAILSHELF=/tmp/before/mailshelf bench/serve_instructions.sh
#
# Environment:
#   MAIL=DIR          the messages to serve (required): bench/serve.sh's, or any folder
#   MAILSHELF=PATH    the binary (default target/release/mailshelf)
#   PATHS="P1 P2"     the URLs asked, each REQUESTS times over one kept-alive connection (default:
#                     bench/serve.sh's image part and rewritten HTML body)
#   REQUESTS=2000     requests counted per URL, after 200 uncounted ones (caches filled)
#
# The client sends what wrk sends (no Accept-Encoding). Prints one line per URL: instructions per
# request. Needs valgrind and python3.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MAILSHELF="${MAILSHELF:-$ROOT/target/release/mailshelf}"
PATHS="${PATHS:-/part/bench-image@example.com/photo@bench.example /part/bench-html@example.com/~1}"
REQUESTS="${REQUESTS:-2000}"
[[ -n "${MAIL:-}" && -d "$MAIL" ]] || { echo "MAIL=DIR: the messages to serve" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is needed" >&2; exit 2; }

ask() { # PORT PATH N: N requests over one connection, each answered 200
    python3 - "$@" <<'PY'
import http.client, sys
port, path, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port)
for _ in range(n):
    c.putrequest("GET", path, skip_accept_encoding=True)
    c.endheaders()
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit(f"{path}: {r.status}")
PY
}

for path in $PATHS; do
    work="$(mktemp -d "${TMPDIR:-/tmp}/mailshelf-instr.XXXXXX")"
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/cg.out" \
        "$MAILSHELF" serve "$MAIL" --listen "127.0.0.1:$port" --data-dir "$work/data" \
        >"$work/out" 2>"$work/log" &
    pid=$!
    for _ in $(seq 1 600); do
        curl -sf "http://127.0.0.1:$port/api/status" 2>/dev/null | grep -q '"ready":true' && break
        sleep 0.2
    done
    ask "$port" "$path" 200
    callgrind_control -i on "$pid" >/dev/null 2>&1
    ask "$port" "$path" "$REQUESTS"
    callgrind_control -i off "$pid" >/dev/null 2>&1
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    total="$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$work/log" | head -n 1)"
    echo "$path: $((total / REQUESTS)) instructions a request"
    rm -rf "$work"
done
