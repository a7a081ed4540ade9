#!/usr/bin/env bash
# The serving benchmark: mailshelf against nginx serving the very same bytes as static files.
#
#   bench/serve.sh                      # 10 s per target, 2 wrk threads, 32 connections
#   DURATION=5s bench/serve.sh          # a quicker run
#
# Two generated messages are served by mailshelf: one with a ~200 KB image part, and one whose
# ~20 KB HTML body references a few cid: images (so every request runs the rewrite). The exact
# bytes mailshelf answers for the image part and for the body's html_url are saved to a docroot
# that nginx (one worker process) serves with the same Content-Type. wrk then loads, one after the
# other: mailshelf image, nginx image, mailshelf HTML, nginx HTML, all on 127.0.0.1.
#
# Environment:
#   DURATION=10s       wrk -d for each target
#   THREADS=2          wrk -t
#   CONNECTIONS=32     wrk -c
#   WARMUP=2s          a short wrk run (1 thread, 4 connections) before each measured one; 0 to skip
#   ROUNDS=1           repeat the four measurements; the median of each is reported
#   IMAGE_KB=200       decoded size of the image part
#   HTML_KB=20         size of the HTML body
#   WORKDIR=DIR        where messages, data dir, docroot and logs go (default: a fresh mktemp -d)
#   KEEP=1             keep WORKDIR afterwards (default: removed unless WORKDIR was given)
#   SKIP_BUILD=1       use target/release/mailshelf as it is
#   MAILSHELF=PATH     serve with this binary instead (implies SKIP_BUILD=1): a before/after pair
#   TIMEOUT=120        longest wait, in seconds, for mailshelf to listen and finish indexing
#
# Prints Markdown tables on stdout (progress goes to stderr) and leaves results.json and results.md
# in WORKDIR: requests/s, p50 and p99 latency, and the server's CPU time per request (user + system
# of all its threads during the measured run; steadier than requests/s when other work shares the
# machine). Targets (for information; the script does not fail on them): the image part at
# >= 50% of nginx's requests/s with p99 < 10 ms, the HTML body at >= 30% of nginx's requests/s.
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH/.." && pwd)"
DURATION="${DURATION:-10s}"
THREADS="${THREADS:-2}"
CONNECTIONS="${CONNECTIONS:-32}"
WARMUP="${WARMUP:-2s}"
ROUNDS="${ROUNDS:-1}"
IMAGE_KB="${IMAGE_KB:-200}"
HTML_KB="${HTML_KB:-20}"
TIMEOUT="${TIMEOUT:-120}"

say() { echo "bench: $*" >&2; }

if [[ -n "${WORKDIR:-}" ]]; then
    mkdir -p "$WORKDIR"
    KEEP="${KEEP:-1}"
else
    WORKDIR="$(mktemp -d "${TMPDIR:-/tmp}/mailshelf-serve.XXXXXX")"
    KEEP="${KEEP:-0}"
fi
WORKDIR="$(cd "$WORKDIR" && pwd)"
MS_PID=""
NGINX_PID=""

stop() { # PID: TERM, wait up to 5 s, then KILL
    local pid="$1"
    [[ -n "$pid" ]] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    local rc=$?
    trap - EXIT
    stop "$NGINX_PID"
    stop "$MS_PID"
    if [[ "$KEEP" != 1 ]]; then
        rm -rf "$WORKDIR"
    else
        say "kept $WORKDIR"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- tools ----------------------------------------------------------------------------------
missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if ((${#missing[@]})); then
    say "installing ${missing[*]} (Debian packages)"
    SUDO=()
    [[ $(id -u) == 0 ]] || SUDO=(sudo -n)
    "${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# ---- build ----------------------------------------------------------------------------------
if [[ -z "${MAILSHELF:-}" && "${SKIP_BUILD:-0}" != 1 ]]; then
    say "building mailshelf (release)"
    (cd "$ROOT" && cargo build --release --quiet) >&2
fi
MAILSHELF="${MAILSHELF:-$ROOT/target/release/mailshelf}"
[[ -x "$MAILSHELF" ]] || { say "missing $MAILSHELF"; exit 1; }

# ---- messages -------------------------------------------------------------------------------
MAIL="$WORKDIR/mail"
rm -rf "$MAIL" "$WORKDIR/data"
mkdir -p "$MAIL" "$WORKDIR/data"
say "generating two messages (image part ${IMAGE_KB} KB, HTML body ${HTML_KB} KB) in $MAIL"
python3 - "$MAIL" "$IMAGE_KB" "$HTML_KB" <<'PY'
import base64, random, sys, textwrap
out, image_kb, html_kb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(1)

def b64(data: bytes) -> str:
    return "\r\n".join(textwrap.wrap(base64.b64encode(data).decode(), 76))

def png_like(n: int) -> bytes:
    # A PNG signature and IHDR-looking start, then random bytes: only the bytes' count and
    # incompressibility matter here.
    head = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    return head + rnd.randbytes(n - len(head))

def write(name: str, headers: list, body: str) -> None:
    with open(f"{out}/{name}", "w", newline="") as f:
        f.write("\r\n".join(headers) + "\r\n\r\n" + body)

common = ["From: Bench Sender <sender@example.com>", "To: Reader <reader@example.net>",
          "Date: Mon, 02 Mar 2026 10:00:00 +0000", "MIME-Version: 1.0"]

# (a) A photo sent as an attachment, next to a short text.
img = png_like(image_kb * 1024)
write("image.eml", common + [
    "Subject: Serving benchmark: image part",
    "Message-ID: <bench-image@example.com>",
    'Content-Type: multipart/mixed; boundary="=_mixed"',
], "\r\n".join([
    "--=_mixed", "Content-Type: text/plain; charset=utf-8", "", "The photo is attached.", "",
    "--=_mixed", "Content-Type: image/png; name=photo.png", "Content-Transfer-Encoding: base64",
    "Content-ID: <photo@bench.example>", 'Content-Disposition: attachment; filename="photo.png"', "",
    b64(img), "--=_mixed--", ""]))

# (b) A newsletter-like HTML body: tables, inline styles, a <style> block, links, and a few cid:
# images (plus one remote image that the rewrite blocks).
cids = [f"img{i}@bench.example" for i in range(4)]
style = ("<style>body{margin:0;background:#f4f4f4 url(cid:%s) repeat-x}"
         ".card{border:1px solid #ddd;padding:12px;font:14px/1.4 Helvetica,Arial,sans-serif}"
         ".btn{background:#0a7;color:#fff;padding:6px 12px;text-decoration:none}</style>" % cids[3])
rows, i = [], 0
words = ("autumn harvest market fresh local organic season recipe garden orchard apple pear "
         "pumpkin squash bread cheese honey cider walk valley river").split()
body_len = lambda: sum(len(r) for r in rows)
while body_len() < html_kb * 1024 - 1200:
    text = " ".join(rnd.choice(words) for _ in range(40))
    img_tag = (f'<img src="cid:{cids[(i // 3) % 3]}" width="120" height="80" alt="item {i}" '
               f'style="display:block;border:0">' if i % 3 == 0 else "")
    rows.append(
        f'<tr><td class="card" style="background-color:#fff;padding:8px 16px">{img_tag}'
        f'<h3 style="color:#333;margin:4px 0">Item {i}: {words[i % len(words)]}</h3>'
        f'<p style="color:#555">{text}</p>'
        f'<a class="btn" href="https://shop.example.com/item/{i}?utm_source=news&amp;utm_medium=mail">Read more</a>'
        f'</td></tr>\n')
    i += 1
html = ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Autumn news</title>" + style +
        "</head><body><table width=\"100%\" cellpadding=\"0\" cellspacing=\"0\">"
        f'<tr><td><img src="cid:{cids[0]}" alt="logo" width="200"></td></tr>'
        '<tr><td><img src="https://tracker.example.com/open.gif" width="1" height="1"></td></tr>\n'
        + "".join(rows) +
        '<tr><td style="font-size:11px;color:#999"><a href="https://example.com/unsubscribe">Unsubscribe</a>'
        ' &middot; <a href="mailto:news@example.com">Write to us</a></td></tr>'
        "</table></body></html>\n")
parts = ["--=_rel", "Content-Type: text/html; charset=utf-8", "Content-Transfer-Encoding: base64", "",
         b64(html.encode())]
for c in cids:
    parts += ["--=_rel", "Content-Type: image/png", "Content-Transfer-Encoding: base64",
              f"Content-ID: <{c}>", "Content-Disposition: inline", "", b64(png_like(2048))]
parts += ["--=_rel--", ""]
write("html.eml", common + [
    "Subject: Serving benchmark: HTML body",
    "Message-ID: <bench-html@example.com>",
    'Content-Type: multipart/related; type="text/html"; boundary="=_rel"',
], "\r\n".join(parts))
PY

# ---- mailshelf ------------------------------------------------------------------------------
say "starting mailshelf"
: >"$WORKDIR/mailshelf.out"
"$MAILSHELF" serve "$MAIL" --listen 127.0.0.1:0 --data-dir "$WORKDIR/data" \
    >"$WORKDIR/mailshelf.out" 2>"$WORKDIR/mailshelf.log" &
MS_PID=$!
MS_URL=""
deadline=$((SECONDS + TIMEOUT))
while [[ -z "$MS_URL" ]]; do
    MS_URL="$(sed -n 's|^mailshelf serving on \(http://[^ ]*\)/$|\1|p' "$WORKDIR/mailshelf.out" | head -n 1)"
    if [[ -z "$MS_URL" ]]; then
        kill -0 "$MS_PID" 2>/dev/null || { say "mailshelf exited:"; cat "$WORKDIR/mailshelf.log" >&2; exit 1; }
        ((SECONDS < deadline)) || { say "mailshelf did not listen within ${TIMEOUT}s"; exit 1; }
        sleep 0.05
    fi
done
say "mailshelf at $MS_URL (pid $MS_PID)"

# Waits for indexing, then finds the image part's URL, the body's html_url, and the message count.
read -r IMAGE_PATH HTML_PATH < <(python3 - "$MS_URL" "$TIMEOUT" "$((IMAGE_KB * 1024))" <<'PY'
import json, sys, time, urllib.request
base, timeout, image_size = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
get = lambda p: json.load(urllib.request.urlopen(base + p, timeout=10))
deadline = time.monotonic() + timeout
while True:
    st = get("/api/status")
    if st.get("ready") and st.get("messages", 0) >= 2:
        break
    if time.monotonic() > deadline:
        sys.exit(f"mailshelf not ready after {timeout}s: {st}")
    time.sleep(0.05)
image = html = None
for m in get("/api/messages?limit=1000")["messages"]:
    d = get(f"/api/messages/{m['id']}")
    stack = list(d["parts"])
    while stack:
        p = stack.pop()
        stack.extend(p.get("parts") or [])
        if p["content_type"] == "image/png" and p["size"] == image_size:
            image = p["url"]
    if (m.get("message_id") or "").startswith("bench-html@") and d.get("html_url"):
        html = d["html_url"]
if not image or not html:
    sys.exit(f"could not find the benchmark parts (image={image}, html={html})")
print(image, html)
PY
)
say "image part: $IMAGE_PATH; HTML body: $HTML_PATH"

# ---- the same bytes for nginx ---------------------------------------------------------------
DOCROOT="$WORKDIR/docroot"
mkdir -p "$DOCROOT"
fetch() { # URL FILE: saves the body to FILE, prints the Content-Type
    curl -sS --fail -o "$2" -D "$2.headers" "$1"
    sed -n 's/^[Cc]ontent-[Tt]ype: *\(.*\)\r$/\1/p' "$2.headers" | tail -n 1
}
IMAGE_TYPE="$(fetch "$MS_URL$IMAGE_PATH" "$DOCROOT/image")"
HTML_TYPE="$(fetch "$MS_URL$HTML_PATH" "$DOCROOT/body")"
IMAGE_BYTES="$(stat -c %s "$DOCROOT/image")"
HTML_BYTES="$(stat -c %s "$DOCROOT/body")"
say "image: $IMAGE_BYTES bytes, $IMAGE_TYPE; HTML: $HTML_BYTES bytes, $HTML_TYPE"
# The rewritten HTML must be stable from one request to the next, or the comparison is unfair.
curl -sS --fail -o "$WORKDIR/body.again" "$MS_URL$HTML_PATH"
cmp -s "$DOCROOT/body" "$WORKDIR/body.again" || say "warning: the HTML body differs between two requests"

# nginx's worker drops root's rights: let it read the docroot.
chmod a+rx "$WORKDIR" "$DOCROOT"
chmod a+r "$DOCROOT/image" "$DOCROOT/body"

NGINX_PORT="$(free_port)"
NGX="$WORKDIR/nginx"
mkdir -p "$NGX/logs" "$NGX/tmp"
nginx_type() { printf '%s' "$1" | sed 's/["\\]/\\&/g'; }
cat >"$NGX/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $NGX/nginx.pid;
error_log $NGX/logs/error.log warn;
events {
    worker_connections 1024;
}
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 10000000;
    client_body_temp_path $NGX/tmp/client;
    proxy_temp_path $NGX/tmp/proxy;
    fastcgi_temp_path $NGX/tmp/fastcgi;
    uwsgi_temp_path $NGX/tmp/uwsgi;
    scgi_temp_path $NGX/tmp/scgi;
    types { }
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $DOCROOT;
        location = /image { default_type "$(nginx_type "$IMAGE_TYPE")"; }
        location = /body { default_type "$(nginx_type "$HTML_TYPE")"; }
    }
}
EOF
"$NGINX" -t -q -p "$NGX" -c "$NGX/nginx.conf" -e "$NGX/logs/error.log" >&2
say "starting nginx on 127.0.0.1:$NGINX_PORT (1 worker process)"
"$NGINX" -p "$NGX" -c "$NGX/nginx.conf" -e "$NGX/logs/error.log" >"$NGX/logs/stdout.log" 2>&1 &
NGINX_PID=$!
NGINX_URL="http://127.0.0.1:$NGINX_PORT"
for _ in $(seq 1 100); do
    curl -sS -o /dev/null "$NGINX_URL/image" 2>/dev/null && break
    kill -0 "$NGINX_PID" 2>/dev/null || { say "nginx exited:"; cat "$NGX/logs/"*.log >&2; exit 1; }
    sleep 0.05
done
for f in image body; do
    curl -sS --fail -o "$WORKDIR/nginx-$f" -D "$WORKDIR/nginx-$f.headers" "$NGINX_URL/$f"
    cmp -s "$DOCROOT/$f" "$WORKDIR/nginx-$f" || { say "nginx answers other bytes for /$f"; exit 1; }
done
[[ "$(sed -n 's/^[Cc]ontent-[Tt]ype: *\(.*\)\r$/\1/p' "$WORKDIR/nginx-body.headers")" == "$HTML_TYPE" ]] \
    || say "warning: nginx's Content-Type for the HTML differs from mailshelf's"

# ---- load -----------------------------------------------------------------------------------
# wrk -t2 -c32 on the same 2 cores as the server: these are ratios between two servers under the
# same load generator, not absolute capacities.
RUNS="$WORKDIR/runs"
mkdir -p "$RUNS"
LOAD_START="$(cut -d' ' -f1 /proc/loadavg)"
# CPU seconds (user + system, all threads) used so far by a server: the process and its children
# (nginx's worker is the master's child). Other work on the machine slows a run down but barely
# changes the CPU time each request costs, so this is the steadier figure on a busy machine.
cpu_seconds() { # PID
    python3 - "$1" <<'PY'
import os, sys
root = sys.argv[1]
def stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()
total = 0
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        st = stat(pid)
    except OSError:
        continue
    if pid == root or st[1] == root:  # st[1] is the parent's pid
        total += int(st[11]) + int(st[12])  # utime, stime
print(total / os.sysconf("SC_CLK_TCK"))
PY
}
load() { # NAME URL ROUND PID
    if [[ "$WARMUP" != 0 ]]; then
        wrk -t1 -c4 -d"$WARMUP" "$2" >/dev/null
    fi
    say "wrk -t$THREADS -c$CONNECTIONS -d$DURATION --latency $2 (round $3)"
    local before after
    before="$(cpu_seconds "$4")"
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "$2" >"$RUNS/$1.$3.txt"
    after="$(cpu_seconds "$4")"
    echo "$before $after" >"$RUNS/$1.$3.cpu"
}
for round in $(seq 1 "$ROUNDS"); do
    load mailshelf-image "$MS_URL$IMAGE_PATH" "$round" "$MS_PID"
    load nginx-image "$NGINX_URL/image" "$round" "$NGINX_PID"
    load mailshelf-html "$MS_URL$HTML_PATH" "$round" "$MS_PID"
    load nginx-html "$NGINX_URL/body" "$round" "$NGINX_PID"
done

# ---- report ---------------------------------------------------------------------------------
python3 - "$RUNS" "$WORKDIR" "$ROUNDS" "$IMAGE_BYTES" "$HTML_BYTES" "$IMAGE_TYPE" "$HTML_TYPE" \
    "$THREADS" "$CONNECTIONS" "$DURATION" "$("$MAILSHELF" --version)" "$("$NGINX" -v 2>&1)" "$LOAD_START" <<'PY' | tee "$WORKDIR/results.md"
import datetime, json, os, re, statistics, sys
runs, workdir, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
image_bytes, html_bytes, image_type, html_type = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7]
threads, conns, duration, ms_ver, ngx_ver, load_start = sys.argv[8:14]
UNIT = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}

def ms(v: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", v)
    return float(m.group(1)) * UNIT[m.group(2)]

def parse(path: str) -> dict:
    t = open(path).read()
    before, after = map(float, open(path[:-4] + ".cpu").read().split())
    r = {"rps": float(re.search(r"Requests/sec:\s*([\d.]+)", t).group(1))}
    for q in ("50", "99"):
        r[f"p{q}_ms"] = ms(re.search(rf"^\s*{q}%\s+(\S+)", t, re.M).group(1))
    r["requests"] = int(re.search(r"(\d+) requests in", t).group(1))
    bad = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", t)
    r["non_2xx"] = int(bad.group(1)) if bad else 0
    se = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", t)
    r["socket_errors"] = sum(map(int, se.groups())) if se else 0
    r["cpu_s"] = after - before
    r["cpu_us_per_req"] = (after - before) * 1e6 / max(r["requests"], 1)
    return r

res = {}
for name in ("mailshelf-image", "nginx-image", "mailshelf-html", "nginx-html"):
    rs = [parse(f"{runs}/{name}.{i}.txt") for i in range(1, rounds + 1)]
    med = {k: statistics.median(r[k] for r in rs) for k in ("rps", "p50_ms", "p99_ms", "cpu_us_per_req")}
    med.update(requests=sum(r["requests"] for r in rs), non_2xx=sum(r["non_2xx"] for r in rs),
               socket_errors=sum(r["socket_errors"] for r in rs), rounds=[r for r in rs])
    res[name] = med

def fmt_ms(v: float) -> str:
    return f"{v:.2f}" if v < 10 else f"{v:.1f}"

load = os.getloadavg()
print(f"Serving benchmark, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}: "
      f"`wrk -t{threads} -c{conns} -d{duration} --latency` on 127.0.0.1, "
      f"{'median of ' + str(rounds) + ' rounds' if rounds > 1 else 'one round'}; {ms_ver}; {ngx_ver} "
      f"(1 worker process, sendfile, access_log off); {os.cpu_count()} CPUs shared by wrk and the server; "
      f"load average {float(load_start):.2f} at the start, {load[0]:.2f} at the end.")
print()
print("| Target | Bytes | Content-Type | Requests/s | p50 (ms) | p99 (ms) | Server CPU/request (µs) | Errors |")
print("|---|---:|---|---:|---:|---:|---:|---:|")
rows = [("mailshelf-image", "mailshelf image part", image_bytes, image_type),
        ("nginx-image", "nginx, same bytes", image_bytes, image_type),
        ("mailshelf-html", "mailshelf HTML body (rewritten)", html_bytes, html_type),
        ("nginx-html", "nginx, same bytes", html_bytes, html_type)]
for key, label, size, ctype in rows:
    r = res[key]
    errs = r["non_2xx"] + r["socket_errors"]
    print(f"| {label} | {size:,} | `{ctype}` | {r['rps']:,.0f} | {fmt_ms(r['p50_ms'])} | {fmt_ms(r['p99_ms'])} "
          f"| {r['cpu_us_per_req']:.0f} | {errs} |")
print()
print("| Compared | mailshelf / nginx req/s | Target | mailshelf p99 | Target p99 | Met | nginx / mailshelf CPU per request |")
print("|---|---:|---:|---:|---:|---|---:|")
summary = {}
for kind, target, p99_target in (("image", 0.50, 10.0), ("html", 0.30, None)):
    ratio = res[f"mailshelf-{kind}"]["rps"] / res[f"nginx-{kind}"]["rps"]
    p99 = res[f"mailshelf-{kind}"]["p99_ms"]
    met = ratio >= target and (p99_target is None or p99 < p99_target)
    cpu_ratio = res[f"nginx-{kind}"]["cpu_us_per_req"] / max(res[f"mailshelf-{kind}"]["cpu_us_per_req"], 1e-9)
    summary[kind] = {"ratio": round(ratio, 4), "target": target, "p99_ms": p99, "p99_target_ms": p99_target,
                     "met": met, "cpu_ratio": round(cpu_ratio, 4)}
    label = "image part" if kind == "image" else "HTML body"
    print(f"| {label} | {ratio:.0%} | ≥ {target:.0%} | {fmt_ms(p99)} ms | "
          f"{'< %g ms' % p99_target if p99_target else '–'} | {'yes' if met else 'no'} | {cpu_ratio:.0%} |")
json.dump({"results": res, "ratios": summary, "image_bytes": image_bytes, "html_bytes": html_bytes,
           "wrk": {"threads": int(threads), "connections": int(conns), "duration": duration, "rounds": rounds},
           "mailshelf": ms_ver, "nginx": ngx_ver, "cpus": os.cpu_count(),
           "loadavg_start": float(load_start), "loadavg_end": load},
          open(f"{workdir}/results.json", "w"), indent=1)
PY
