#!/usr/bin/env python3
"""Scale benchmark: memory, start-up, page latency, throughput and index size for one mbox archive,
so that an archive of 100,000 and one of 1,000,000 messages can be compared (does memory grow with
the archive, do pages slow down with it?). Python 3 standard library only, plus `wrk` for the page
latencies.

    python3 bench/scale.py --bin target/release/mailshelf --archive ARCHIVE.mbox \
        [--label 1m] [--data DIR] [--out results.json] [--ceiling PATH_TO_parse_ceiling]
    python3 bench/scale.py --notmuch MAILDIR [--work DIR] [--out results.json]
    python3 bench/scale.py --table A.json B.json ...

The archive is made by bench/gen_archive.py, e.g.
`python3 bench/gen_archive.py --count 1000000 --seed 1 --mbox m1000000.mbox --json` (search stays on,
the default). One archive run does, in order:

1. **Parse ceiling** (when `--ceiling` is given or bench/parse_ceiling is built): `parse_ceiling
   ARCHIVE`, one thread, the fastest possible parse of the same bytes (see bench/README.md). It
   also leaves the archive in the page cache, so every run below starts from a warm cache.
2. **Cold index**: `BIN serve ARCHIVE --listen 127.0.0.1:0 --data-dir DATA` on an empty DATA
   (default: a new folder under --work); the URL is read from the `serving on http://…/` line and
   `GET /api/status` is polled every 50 ms until `"ready": true`. *seconds* run from spawn to that
   answer; *peak RSS* is VmHWM at that moment (VmRSS is also sampled every 50 ms while indexing);
   *steady RSS* is VmRSS once the server has been idle for a second (at least `--settle` seconds
   after ready: work left after ready, such as search index merges, is over), and again after the
   page and search runs below, which talk to this same process.
3. **Pages**: each URL is fetched once (its first answer is timed on its own: some pages compute and
   keep a grouping), then `wrk -t4 -c4 -dDURATION --latency --timeout 60s -s bench/latency.lua URL`;
   p50 and p99 are of every request's own time, as bench/latency.lua measures it (wrk's own
   distribution, which fills in requests a thread fell behind on with its maximum, is kept in the
   JSON as wrk_p50_ms/wrk_p99_ms). The URLs: `/`, `/api/messages?offset=0&limit=50`, the middle
   of the list (`offset = total/2`: 500,000 at 1M, 50,000 at 100k), the last page
   (`offset = total-50`), the mbox's folder page (`/folder/<path>`, the path from `/api/folders`
   whose name is the mbox file's name without its extension), the page of a conversation with more
   than one message (the first such in `/api/messages?threads=1`), the page of the message in the
   middle of the list, and `/api/status`.
4. **Search**: each query of bench/queries.txt through `GET /api/messages?limit=20&q=…` (what
   bench/search.py times: ranking, total count, a snippet per hit), one untimed request, then
   `--rounds` sequential timed requests; p50 and p99 over all of them, and per query. RSS is read
   right after, and again after `--idle-after` (35) idle seconds: what a serving process keeps
   (with how much of it is the search index's files mapped into it).
5. **Index size**: `du -sb DATA` once the cold-run process has stopped, against the archive's size.
6. **Warm restart**: the same command on the same DATA, nothing changed: seconds to ready, RSS.
7. **Append**: `--append` (1,000) messages from `gen_archive.py --seed 999` are appended to the
   archive, the same command is started on the same DATA, and timed to ready; the report has how
   many messages the listing grew by, what the log says (`indexed messages=… seconds=…`, and the
   debug lines of mailshelf::archive: sources found, sources compared, to read), and the CPU seconds
   the start took (a start that re-reads the whole mbox shows there). The archive is truncated back
   to its original size afterwards (also on an error or Ctrl-C), so it stays byte for byte what it
   was; `--no-append` skips this step.

DATA is removed at the end unless `--keep-data`. Load averages are recorded before every step
(this machine is shared). Prints a Markdown table (metric | value) and writes everything to
`--out` as JSON.

`--notmuch MAILDIR` runs only `notmuch new` on a copy of MAILDIR (under --work; notmuch writes
`.notmuch/` into the mail root), with the throw-away config bench/index.sh uses, and reports its
seconds, messages per second, and, since nobody wants to wait hours for it at 1,000,000 messages, a
linear extrapolation of its time to 1,000,000 (stated as such in the output).

`--table A.json B.json …` prints the figures of several result files side by side, with the ratio
of the last column to the first for the memory rows (e.g. RSS after 1M / RSS after 100k).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import cpu_seconds  # noqa: E402  (user + system CPU time of a running process)

BENCH = os.path.dirname(os.path.abspath(__file__))
POLL = 0.05
# mailshelf's info lines, and the debug lines of the indexing steps (a handful per start).
RUST_LOG = "info,mailshelf::archive=debug"

PROCS: list[subprocess.Popen] = []


def kill_all(procs) -> None:
    """Kills and reaps every process of `procs` still running (on the way out, also on errors)."""
    for p in list(procs):
        if p.poll() is None:
            p.kill()
            p.wait()


def say(msg: str) -> None:
    print(f"scale: {time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def proc_mem(pid: int) -> dict:
    """VmRSS, VmHWM, RssAnon and RssFile of a process, in kB."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "Threads"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def du(path: str) -> int:
    return int(subprocess.run(["du", "-sb", path], capture_output=True, text=True, check=True).stdout.split()[0])


def get(url: str, timeout: float = 300):
    """(seconds, status code, body) of one GET."""
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            body = r.read()
            code = r.status
    except urllib.error.HTTPError as e:
        body, code = e.read(), e.code
    return time.perf_counter() - t, code, body


def get_json(url: str):
    secs, code, body = get(url)
    if code != 200:
        raise RuntimeError(f"GET {url}: {code} {body[:200]!r}")
    return json.loads(body)


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


# ---- mailshelf ---------------------------------------------------------------------------------


class Server:
    """One `mailshelf serve` process, started and timed until ready."""

    def __init__(self, binary: str, archive: str, data: str, log: str, timeout: float):
        self.cmd = [binary, "serve", archive, "--listen", "127.0.0.1:0", "--data-dir", data]
        env = {k: v for k, v in os.environ.items() if not k.startswith("MAILSHELF_")}
        env.update(NO_COLOR="1", RUST_LOG=RUST_LOG)
        self.log_path = log
        self.log = open(log, "wb")
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=self.log, env=env)
        PROCS.append(self.p)
        self.timeout = timeout
        self.url = None
        self.rss_max_sampled = 0

    def wait_ready(self) -> dict:
        deadline = self.t0 + self.timeout
        buf = b""
        while self.url is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no URL printed")
            ready, _, _ = select.select([self.p.stdout], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(self.p.stdout.fileno(), 4096)
                if not chunk:
                    raise RuntimeError(f"mailshelf exited with {self.p.wait()} before printing its URL")
                buf += chunk
                m = re.search(rb"serving on (http://\S+?/)\s", buf)
                if m:
                    self.url = m.group(1).decode()
            elif self.p.poll() is not None:
                raise RuntimeError(f"mailshelf exited with {self.p.returncode} before printing its URL")
        url_seconds = time.monotonic() - self.t0
        status = None
        last_note = time.monotonic()
        while True:
            if self.p.poll() is not None:
                raise RuntimeError(f"mailshelf exited with {self.p.returncode} while indexing")
            self.rss_max_sampled = max(self.rss_max_sampled, proc_mem(self.p.pid).get("VmRSS", 0))
            try:
                status = get_json(self.url + "api/status")
            except (OSError, RuntimeError, ValueError):
                status = None
            if status and status.get("ready"):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"not ready after {self.timeout} s (last status {status})")
            if time.monotonic() - last_note > 60:
                say(f"  still indexing: {status}, RSS {self.rss_max_sampled // 1024} MB")
                last_note = time.monotonic()
            time.sleep(POLL)
        seconds = time.monotonic() - self.t0
        mem = proc_mem(self.p.pid)
        return {"seconds": round(seconds, 3), "url_seconds": round(url_seconds, 3), "status": status,
                "cpu_seconds": cpu_seconds(self.p.pid), "mem_at_ready_kb": mem,
                "vmhwm_kb": mem.get("VmHWM"), "vmrss_max_sampled_kb": self.rss_max_sampled}

    def settle(self, least: float, most: float) -> dict:
        """Waits `least` seconds, then until the process is idle (under 5 % of a core over one
        second: background work after ready, such as search index merges, is done), at most `most`
        seconds in all. Returns how long that took and the CPU seconds spent meanwhile."""
        start, cpu0 = time.monotonic(), cpu_seconds(self.p.pid) or 0
        time.sleep(least)
        while time.monotonic() - start < most:
            a = cpu_seconds(self.p.pid) or 0
            time.sleep(1)
            if (cpu_seconds(self.p.pid) or 0) - a < 0.05:
                break
        return {"settled_seconds": round(time.monotonic() - start, 1),
                "settle_cpu_seconds": round((cpu_seconds(self.p.pid) or 0) - cpu0, 2)}

    def mem(self) -> dict:
        return proc_mem(self.p.pid)

    def stop(self) -> dict:
        out = {"cpu_seconds_total": cpu_seconds(self.p.pid)}
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        out["exit"] = self.p.returncode
        self.log.close()
        if self.p in PROCS:
            PROCS.remove(self.p)
        out["log"] = read_log(self.log_path)
        return out


def read_log(path: str) -> dict:
    text = re.sub(r"\x1b\[[0-9;]*m", "", open(path, "rb").read().decode("utf-8", "replace"))
    out = {}
    m = re.findall(r"indexed\s+messages=(\d+)\s+seconds=([0-9.]+)", text)
    if m:
        out["indexed_messages"] = int(m[-1][0])
        out["indexed_seconds"] = round(float(m[-1][1]), 3)
    m = re.findall(r"sources compared\S*\s+seconds=([0-9.]+)\s+to_read=(\d+)", text)
    if m:
        out["to_read"] = int(m[-1][1])
    # The debug/info lines of the indexing steps, as the log has them (short).
    keep = [ln.strip() for ln in text.splitlines()
            if re.search(r"entries read|search index opened|search index checked|sources found|sources compared|"
                         r"index loaded|indexed messages|adding messages|archive changed|ERROR|WARN", ln)]
    out["lines"] = keep[:40]
    out["warnings"] = len(re.findall(r"\bWARN\b", text))
    return out


# ---- wrk ---------------------------------------------------------------------------------------

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60000.0, "h": 3600000.0}


def wrk_ms(s: str) -> float:
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m|h)", s.strip())
    if not m:
        raise ValueError(f"unreadable wrk time {s!r}")
    return float(m.group(1)) * UNITS[m.group(2)]


LATENCY_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "latency.lua")


def run_wrk(url: str, duration: int, conns: int) -> dict:
    """`wrk` with one connection per thread and bench/latency.lua, which times every request.

    p50/p90/p99/p999/max_ms are those per-request times. wrk's own distribution is kept as
    wrk_p50_ms/wrk_p99_ms/wrk_max_ms: wrk 4 adds, for every request a thread did not make at the
    rate it calibrated in its first half second, a sample at the run's maximum, so one stall of
    the machine (the load generator's own included) turns its p99 into its maximum."""
    cmd = ["wrk", f"-t{conns}", f"-c{conns}", f"-d{duration}s", "--latency", "--timeout", "60s",
           "-s", LATENCY_SCRIPT, url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 120)
    out = p.stdout
    res = {"cmd": " ".join(cmd).replace(LATENCY_SCRIPT, "bench/latency.lua")}
    m = re.search(r"^LATENCY (\{.*\})$", out, re.M)
    if m:
        timed = json.loads(m.group(1))
        if timed.get("requests"):
            res.update({k: v for k, v in timed.items() if k.endswith("_ms")})
    dist = dict(re.findall(r"^\s+(50|75|90|99)%\s+(\S+)\s*$", out, re.M))
    for q in ("50", "99"):
        if q in dist:
            res[f"wrk_p{q}_ms"] = round(wrk_ms(dist[q]), 3)
    m = re.search(r"Latency\s+(\S+)\s+(\S+)\s+(\S+)", out)
    if m:
        res["wrk_mean_ms"] = round(wrk_ms(m.group(1)), 3)
        res["wrk_max_ms"] = round(wrk_ms(m.group(3)), 3)
    m = re.search(r"(\d+) requests in ([0-9.]+\w+)", out)
    if m:
        res["requests"] = int(m.group(1))
    m = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    if m:
        res["rps"] = float(m.group(1))
    m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    res["non_2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: (.*)", out)
    if m:
        res["socket_errors"] = m.group(1).strip()
    if "p99_ms" not in res:
        res["error"] = (out + p.stderr)[-500:]
    return res


# ---- the archive run ---------------------------------------------------------------------------


def run_ceiling(ceiling: str, archive: str, timeout: float) -> dict:
    t = time.monotonic()
    p = subprocess.Popen([ceiling, archive], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    PROCS.append(p)
    out, err = p.communicate(timeout=timeout)
    secs = time.monotonic() - t
    PROCS.remove(p)
    lines = out.decode().strip().splitlines()
    res = json.loads(lines[-1]) if lines else {}
    res["wall_seconds"] = round(secs, 3)
    res["rc"] = p.returncode
    if err:
        res["stderr"] = err.decode("utf-8", "replace")[-1000:]
    return res


def pick_pages(url: str, archive: str) -> list[tuple[str, str]]:
    total = get_json(url + "api/messages?offset=0&limit=1")["total"]
    mid = total // 2
    last = max(total - 50, 0)
    pages = [
        ("list page `/`", ""),
        ("messages offset 0", "api/messages?offset=0&limit=50"),
        (f"messages offset {mid}", f"api/messages?offset={mid}&limit=50"),
        (f"messages last page (offset {last})", f"api/messages?offset={last}&limit=50"),
    ]
    stem = os.path.splitext(os.path.basename(archive))[0]
    folders = get_json(url + "api/folders")["folders"]

    def walk(nodes):
        for n in nodes:
            yield n
            yield from walk(n.get("folders") or [])

    found = [f for f in walk(folders) if f.get("name") == stem or f.get("path", "").rsplit("/", 1)[-1] == stem]
    if not found:
        found = sorted((f for f in walk(folders) if f.get("messages")), key=lambda f: -f["messages"])
    if found:
        pages.append((f"folder page ({found[0]['messages']} msgs)", "folder/" + urllib.parse.quote(found[0]["path"])))
    thread = None
    for off in range(0, 2000, 200):
        threads = get_json(url + f"api/messages?threads=1&offset={off}&limit=200").get("threads") or []
        thread = next((t for t in threads if t["messages"] > 1), None)
        if thread or not threads:
            break
    if thread:
        pages.append((f"thread page ({thread['messages']} msgs)", thread["url"].lstrip("/")))
    msg = get_json(url + f"api/messages?offset={mid}&limit=1")["messages"]
    if msg:
        pages.append((f"message page (offset {mid})", msg[0]["url"].lstrip("/")))
    pages.append(("`/api/status`", "api/status"))
    return pages


def measure_pages(url: str, archive: str, duration: int, conns: int) -> list[dict]:
    rows = []
    for name, path in pick_pages(url, archive):
        first, code, body = get(url + path)
        say(f"  {name}: /{path} first {first * 1000:.1f} ms, HTTP {code}, {len(body)} B; wrk {duration} s")
        w = run_wrk(url + path, duration, conns)
        say(f"    p50 {w.get('p50_ms')} ms, p99 {w.get('p99_ms')} ms, {w.get('requests')} requests, "
            f"non-2xx {w.get('non_2xx')}")
        rows.append({"name": name, "path": "/" + path, "http": code, "bytes": len(body),
                     "first_ms": round(first * 1000, 3), **w})
    return rows


def measure_search(url: str, rounds: int) -> dict:
    queries = [q.strip() for q in open(os.path.join(BENCH, "queries.txt"), encoding="utf-8")
               if q.strip() and not q.startswith("#")]
    lat, per = [], []
    for q in queries:
        u = url + "api/messages?limit=20&q=" + urllib.parse.quote(q)
        first, code, body = get(u)
        total = json.loads(body).get("total") if code == 200 else None
        times = []
        for _ in range(rounds):
            secs, c, _ = get(u)
            times.append(secs * 1000)
        lat.extend(times)
        per.append({"query": q, "http": code, "matches": total, "first_ms": round(first * 1000, 3),
                    "p50_ms": round(statistics.median(times), 3), "p99_ms": round(percentile(times, 0.99), 3),
                    "max_ms": round(max(times), 3)})
    return {"queries": len(queries), "rounds": rounds, "p50_ms": round(percentile(lat, 0.5), 3),
            "p99_ms": round(percentile(lat, 0.99), 3), "max_ms": round(max(lat), 3), "per_query": per,
            "url": "/api/messages?limit=20&q=QUERY"}


def append_messages(archive: str, work: str, count: int) -> tuple[int, int]:
    """Appends `count` generated messages to the archive; returns (original size, bytes added)."""
    extra = os.path.join(work, "append.mbox")
    subprocess.run([sys.executable, os.path.join(BENCH, "gen_archive.py"), "--count", str(count), "--seed", "999",
                    "--mbox", extra, "--json"], check=True, stdout=subprocess.DEVNULL)
    size = os.path.getsize(archive)
    with open(archive, "rb") as f:
        f.seek(max(size - 2, 0))
        tail = f.read()
    with open(archive, "ab") as out, open(extra, "rb") as src:
        # An mbox message starts at a `From ` line after an empty line.
        if size and not tail.endswith(b"\n\n"):
            out.write(b"\n" if tail.endswith(b"\n") else b"\n\n")
        shutil.copyfileobj(src, out, 4 << 20)
    os.remove(extra)
    return size, os.path.getsize(archive) - size


def run_archive(args) -> dict:
    archive = os.path.abspath(args.archive)
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="mailshelf-scale-"))
    os.makedirs(work, exist_ok=True)
    label = args.label or os.path.splitext(os.path.basename(archive))[0]
    data = os.path.abspath(args.data or os.path.join(work, f"data-{label}"))
    if os.path.exists(data):
        shutil.rmtree(data)
    os.makedirs(data)
    ver = subprocess.run([args.bin, "--version"], capture_output=True, text=True).stdout.strip()
    res = {
        "label": label, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "bin": os.path.abspath(args.bin), "mailshelf_version": ver, "archive": archive,
        "archive_bytes": os.path.getsize(archive), "cpus": os.cpu_count(), "kernel": platform.release(),
        "mem_total_kb": int(open("/proc/meminfo").readline().split()[1]), "search": True,
        "rust_log": RUST_LOG, "load": {"start": load()},
    }
    out = args.out

    def save():
        if out:
            with open(out, "w") as f:
                json.dump(res, f, indent=1, ensure_ascii=False)

    # 1. parse ceiling
    ceiling = args.ceiling
    if ceiling is None:
        built = os.path.join(BENCH, "parse_ceiling", "target", "release", "parse_ceiling")
        ceiling = built if os.access(built, os.X_OK) else None
    if ceiling:
        say(f"parse ceiling: {ceiling} {archive}")
        res["load"]["ceiling"] = load()
        res["ceiling"] = run_ceiling(ceiling, archive, args.timeout)
        say(f"  {res['ceiling']}")
        save()

    # 2-4. cold index, pages, search
    say(f"cold index of {archive} into {data}")
    res["load"]["cold"] = load()
    s = Server(args.bin, archive, data, os.path.join(work, f"{label}-cold.log"), args.timeout)
    try:
        cold = s.wait_ready()
        say(f"  ready in {cold['seconds']} s, {cold['status']}, VmHWM {cold['vmhwm_kb'] // 1024} MB")
        cold.update(s.settle(args.settle, args.idle_timeout))
        cold["mem_settled_kb"] = s.mem()
        say(f"  quiet {cold['settled_seconds']} s after ready: {cold['mem_settled_kb']}")
        res["cold"] = cold
        save()
        res["load"]["pages"] = load()
        say("pages")
        res["pages"] = measure_pages(s.url, archive, args.duration, args.connections)
        res["mem_after_pages_kb"] = s.mem()
        save()
        res["load"]["search"] = load()
        say(f"search: bench/queries.txt, {args.rounds} rounds")
        res["search_latency"] = measure_search(s.url, args.rounds)
        say(f"  p50 {res['search_latency']['p50_ms']} ms, p99 {res['search_latency']['p99_ms']} ms")
        res["mem_after_search_kb"] = s.mem()
        say(f"  memory after pages and search: {res['mem_after_search_kb']}")
        # A server that keeps serving: what is left once it has been idle for as long as the
        # server takes to hand freed memory back (mailshelf does every 30 s).
        time.sleep(args.idle_after)
        res["mem_idle_after_search_kb"] = s.mem()
        say(f"  memory {args.idle_after:g} s later: {res['mem_idle_after_search_kb']}")
    finally:
        res.setdefault("cold", {}).update(s.stop())
        save()

    # 5. size
    res["data_bytes"] = du(data)
    res["data_pct_of_archive"] = round(100 * res["data_bytes"] / res["archive_bytes"], 2)
    say(f"data dir {res['data_bytes'] / 1e6:.1f} MB ({res['data_pct_of_archive']} % of the archive)")

    # 6. warm restart
    say("warm restart (same data dir)")
    res["load"]["warm"] = load()
    s = Server(args.bin, archive, data, os.path.join(work, f"{label}-warm.log"), args.timeout)
    try:
        warm = s.wait_ready()
        warm.update(s.settle(args.settle, args.idle_timeout))
        warm["mem_settled_kb"] = s.mem()
        res["warm"] = warm
        say(f"  ready in {warm['seconds']} s, {warm['mem_settled_kb']}")
    finally:
        res.setdefault("warm", {}).update(s.stop())
        save()

    # 7. append
    if args.append:
        say(f"append {args.append} generated messages and restart")
        res["load"]["append"] = load()
        before = (res["warm"].get("status") or {}).get("messages")
        orig = None
        try:
            orig, added = append_messages(archive, work, args.append)
            s = Server(args.bin, archive, data, os.path.join(work, f"{label}-append.log"), args.timeout)
            app = {}
            try:
                app.update(s.wait_ready())
                app["mem_settled_kb"] = s.mem()
            finally:
                app.update(s.stop())
            after = (app.get("status") or {}).get("messages")
            app.update(appended=args.append, appended_bytes=added, messages_before=before, messages_after=after,
                       new_messages_listed=None if after is None or before is None else after - before)
            res["append"] = app
            say(f"  ready in {app.get('seconds')} s, listed {before} -> {after}, CPU {app.get('cpu_seconds')} s, "
                f"log {app['log'].get('indexed_messages')} msgs / {app['log'].get('indexed_seconds')} s, "
                f"to_read {app['log'].get('to_read')}")
        finally:
            if orig is not None:
                os.truncate(archive, orig)
                say(f"  archive truncated back to {orig} bytes")
            save()

    res["load"]["end"] = load()
    say(f"logs in {work}")
    if not args.keep_data:
        shutil.rmtree(data, ignore_errors=True)
    save()
    return res


# ---- notmuch -----------------------------------------------------------------------------------


def run_notmuch(args) -> dict:
    maildir = os.path.abspath(args.notmuch)
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="mailshelf-scale-"))
    os.makedirs(work, exist_ok=True)
    root = os.path.join(work, "notmuch-mail")
    cfg = os.path.join(work, "notmuch-config")
    shutil.rmtree(root, ignore_errors=True)
    say(f"copying {maildir} to {root} (notmuch writes .notmuch/ into the mail root)")
    shutil.copytree(maildir, root, symlinks=True)
    files = sum(len(fs) for _, _, fs in os.walk(root))
    subprocess.run(["sync"])
    # The configuration bench/index.sh uses.
    with open(cfg, "w") as f:
        f.write(f"[database]\npath={root}\n\n[user]\nname=Bench\nprimary_email=bench@example.com\n\n"
                "[new]\ntags=unread;inbox;\nignore=\n\n[search]\nexclude_tags=deleted;spam;\n\n"
                "[maildir]\nsynchronize_flags=true\n")
    env = dict(os.environ, NOTMUCH_CONFIG=cfg)
    res = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "maildir": maildir, "files": files, "version": subprocess.run(["notmuch", "--version"], capture_output=True,
                                                                         text=True).stdout.strip(),
           "cpus": os.cpu_count(), "load": {"start": load()}}
    try:
        say("notmuch new")
        t = time.monotonic()
        p = subprocess.Popen(["notmuch", "new", "--quiet"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        PROCS.append(p)
        _, status, ru = os.wait4(p.pid, 0)
        secs = time.monotonic() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        PROCS.remove(p)
        res.update(seconds=round(secs, 3), rc=p.returncode, cpu_seconds=round(ru.ru_utime + ru.ru_stime, 2),
                   max_rss_kb=ru.ru_maxrss, stderr=p.stderr.read().decode("utf-8", "replace")[-1000:])
        count = lambda *a: int(subprocess.run(["notmuch", "count", *a, "*"], env=env, capture_output=True,
                                              text=True).stdout.strip() or 0)
        res["messages"] = count()
        res["files_indexed"] = count("--output=files")
        res["index_bytes"] = du(os.path.join(root, ".notmuch"))
        res["msgs_per_s"] = round(files / secs, 1)
        res["extrapolated_1m_seconds"] = round(secs * 1_000_000 / files, 1)
        res["extrapolation"] = "linear from this run: seconds × 1,000,000 / files (not measured)"
        res["load"]["end"] = load()
    finally:
        shutil.rmtree(root, ignore_errors=True)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(res, f, indent=1)
    return res


# ---- tables ------------------------------------------------------------------------------------


def mb(kb):
    return None if kb is None else kb / 1024


def rows_of(r: dict) -> list[tuple[str, object, str]]:
    """(metric, value, format) of one archive run."""
    cold = r.get("cold") or {}
    warm = r.get("warm") or {}
    app = r.get("append") or {}
    ceil = r.get("ceiling") or {}
    n = (cold.get("status") or {}).get("messages")
    rate = n / cold["seconds"] if n and cold.get("seconds") else None
    crate = ceil.get("messages") / ceil["seconds"] if ceil.get("seconds") else None
    rows = [
        ("messages listed", n, "{:,}"),
        ("archive MB", r.get("archive_bytes", 0) / 1e6, "{:,.1f}"),
        ("load average at start (1 min)", (r.get("load") or {}).get("start", [None])[0], "{}"),
        ("**memory**", None, ""),
        ("peak RSS while cold-indexing (VmHWM), MB", mb(cold.get("vmhwm_kb")), "{:,.0f}"),
        ("server busy after ready (CPU s until idle)", cold.get("settle_cpu_seconds"), "{:,.1f}"),
        ("steady RSS after indexing (VmRSS), MB", mb((cold.get("mem_settled_kb") or {}).get("VmRSS")), "{:,.0f}"),
        ("  of which file-backed (RssFile), MB", mb((cold.get("mem_settled_kb") or {}).get("RssFile")), "{:,.0f}"),
        ("RSS after page and search runs, MB", mb((r.get("mem_after_search_kb") or {}).get("VmRSS")), "{:,.0f}"),
        ("  of which file-backed (mapped search index), MB", mb((r.get("mem_after_search_kb") or {}).get("RssFile")), "{:,.0f}"),
        ("RSS after page and search runs, idle for --idle-after s, MB", mb((r.get("mem_idle_after_search_kb") or {}).get("VmRSS")), "{:,.0f}"),
        ("  of which file-backed, MB", mb((r.get("mem_idle_after_search_kb") or {}).get("RssFile")), "{:,.0f}"),
        ("RSS after warm restart, MB", mb((warm.get("mem_settled_kb") or {}).get("VmRSS")), "{:,.0f}"),
        ("peak RSS of the warm restart (VmHWM), MB", mb(warm.get("vmhwm_kb")), "{:,.0f}"),
        ("**start**", None, ""),
        ("cold index, s", cold.get("seconds"), "{:,.2f}"),
        ("cold index CPU, s", cold.get("cpu_seconds"), "{:,.1f}"),
        ("warm restart, s", warm.get("seconds"), "{:,.2f}"),
        (f"start after appending {app.get('appended', '–')} messages, s", app.get("seconds"), "{:,.2f}"),
        ("  its CPU, s", app.get("cpu_seconds"), "{:,.2f}"),
        ("  messages added to the listing", app.get("new_messages_listed"), "{:,}"),
        ("  sources read (log: to_read)", (app.get("log") or {}).get("to_read"), "{}"),
        ("**throughput**", None, ""),
        ("cold index, msgs/s", rate, "{:,.0f}"),
        ("parse ceiling (one thread), msgs/s", crate, "{:,.0f}"),
        ("cold index, % of parse ceiling", 100 * rate / crate if rate and crate else None, "{:.0f} %"),
        ("**size**", None, ""),
        ("data dir MB", r.get("data_bytes", 0) / 1e6 if r.get("data_bytes") else None, "{:,.1f}"),
        ("data dir, % of archive", r.get("data_pct_of_archive"), "{:.1f} %"),
        ("**pages** (wrk -t4 -c4, every request timed, p50 / p99 ms)", None, ""),
    ]
    for p in r.get("pages") or []:
        # Side by side, a page is named by its kind (the offsets and counts differ between runs).
        name = re.sub(r" \(.*\)$", "", re.sub(r"offset [1-9]\d*", "offset total/2", p["name"])) if r.get("_generic") else p["name"]
        rows.append((name, (p.get("p50_ms"), p.get("p99_ms")), "pair"))
    s = r.get("search_latency") or {}
    if s:
        rows.append((f"search, {s['queries']} queries × {s['rounds']} (p50 / p99 ms)", (s["p50_ms"], s["p99_ms"]), "pair"))
    return rows


def cell(v, f):
    if v is None:
        return "" if f == "" else "–"
    if f == "pair":
        a, b = v
        return f"{'–' if a is None else f'{a:.2f}'} / {'–' if b is None else f'{b:.2f}'}"
    return f.format(v)


def print_one(r: dict) -> None:
    print(f"\n{r['label']}: {r['archive']} ({r['archive_bytes'] / 1e6:,.1f} MB), {r['mailshelf_version']}, "
          f"search on, {r['date']}, {r['cpus']} CPUs, load averages {r['load']}\n")
    print("| metric | value |")
    print("|---|---:|")
    for name, v, f in rows_of(r):
        print(f"| {name} | {cell(v, f)} |")


def print_table(paths: list[str]) -> None:
    runs = [json.load(open(p)) for p in paths]
    for r in runs:
        r["_generic"] = True
    cols = [r["label"] for r in runs]
    ratio = len(runs) > 1
    print("| metric | " + " | ".join(cols) + (f" | {cols[-1]} / {cols[0]} |" if ratio else " |"))
    print("|---|" + "---:|" * (len(cols) + (1 if ratio else 0)))
    table = [{name: v for name, v, _ in rows_of(r)} for r in runs]
    names = list(dict.fromkeys(name_f for r in runs for name_f in ((n, f) for n, _, f in rows_of(r))))
    for name, f in names:
        vals = [t.get(name) for t in table]
        line = f"| {name} | " + " | ".join(cell(v, f) for v in vals)
        if ratio:
            a, b = vals[0], vals[-1]
            if f == "pair" and a and b and a[1] and b[1]:
                line += f" | {b[1] / a[1]:.2f}× (p99)"
            elif f not in ("", "pair") and isinstance(a, (int, float)) and isinstance(b, (int, float)) and a:
                line += f" | {b / a:.2f}×"
            else:
                line += " | "
        print(line + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", help="the mailshelf binary")
    ap.add_argument("--archive", help="the mbox to index")
    ap.add_argument("--label", help="a name for this run (default: the archive's file name)")
    ap.add_argument("--data", help="the data dir (default: WORK/data-LABEL); emptied first")
    ap.add_argument("--work", help="where logs and temporary files go (default: a new temporary folder)")
    ap.add_argument("--out", help="write the results here as JSON")
    ap.add_argument("--ceiling", help="the parse_ceiling binary (default: bench/parse_ceiling's release build, if any)")
    ap.add_argument("--duration", type=int, default=10, help="seconds of wrk per page (default 10)")
    ap.add_argument("--connections", type=int, default=4, help="wrk connections (default 4)")
    ap.add_argument("--rounds", type=int, default=20, help="timed requests per search query (default 20)")
    ap.add_argument("--settle", type=float, default=5,
                    help="seconds after ready, at least, before steady RSS is read and pages are timed (default 5)")
    ap.add_argument("--idle-timeout", type=float, default=120,
                    help="after --settle, wait until the server is idle, at most this many seconds (default 120)")
    ap.add_argument("--idle-after", type=float, default=35,
                    help="seconds idle after the search run before RSS is read again (default 35)")
    ap.add_argument("--append", type=int, default=1000, help="messages appended for the append start (default 1000)")
    ap.add_argument("--no-append", dest="append", action="store_const", const=0, help="skip the append start")
    ap.add_argument("--keep-data", action="store_true", help="keep the data dir afterwards")
    ap.add_argument("--timeout", type=float, default=7200, help="longest wait for any one step, seconds")
    ap.add_argument("--notmuch", metavar="MAILDIR", help="only run notmuch new on a copy of MAILDIR")
    ap.add_argument("--table", nargs="+", metavar="JSON", help="only print result files side by side")
    args = ap.parse_args()

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    try:
        if args.table:
            print_table(args.table)
        elif args.notmuch:
            r = run_notmuch(args)
            print(f"\nnotmuch new ({r['version']}) on {r['maildir']}: {r['files']:,} files, {r.get('messages'):,} "
                  f"messages, {r['seconds']:.1f} s, {r['msgs_per_s']:,.0f} msgs/s, CPU {r['cpu_seconds']} s, "
                  f"peak RSS {r['max_rss_kb'] / 1024:.0f} MB, index {r['index_bytes'] / 1e6:.1f} MB, load {r['load']}.")
            print(f"1,000,000 messages, extrapolated linearly from this run (not measured): "
                  f"{r['extrapolated_1m_seconds']:,.0f} s.")
        else:
            if not args.bin or not args.archive:
                ap.error("give --bin and --archive (or --notmuch MAILDIR, or --table JSON...)")
            if not shutil.which("wrk"):
                ap.error("wrk is not installed")
            print_one(run_archive(args))
    finally:
        kill_all(PROCS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
