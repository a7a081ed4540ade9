#!/usr/bin/env python3
"""Replica benchmark: mailshelf with its index in PostgreSQL, one mbox archive, up to three
`mailshelf serve` processes (replicas) over the same database and the same archive. It measures
the cold index into an empty database, the database's size per message, how fast a second and a
third replica start serving, page and search latency under `wrk` with one, two and three replicas,
and how long the indexer role takes to move when its holder is killed. Python 3 standard library
only, plus `wrk` and PostgreSQL's programs (default /usr/lib/postgresql/15/bin).

    python3 bench/replicas.py --bin BIN --archive ARCHIVE.mbox [--label L] [--out R.json] \
        [--duration 10] [--search-duration 5] [--connections 4] [--work DIR] [--keep]
    python3 bench/replicas.py --bin BIN --archive ARCHIVE.mbox --database-url postgres://… [--skip-index]
    python3 bench/replicas.py --table R.json

The archive is made by bench/gen_archive.py, e.g.
`python3 bench/gen_archive.py --count 1000000 --seed 1 --mbox m1000000.mbox --json`. Every replica
runs `BIN serve ARCHIVE --database-url URL --listen 127.0.0.1:0 --data-dir WORK/replicaN-data`
(a data folder of its own, as on separate machines); its URL is read from the
`mailshelf serving on http://…/` line it prints. A run does, in order:

1. **Cluster**: a throwaway PostgreSQL cluster in WORK/pg (owned by `nobody` when run as root:
   PostgreSQL refuses root), `initdb -U mailshelf --auth=trust -E UTF8 --no-locale`, started with
   `pg_ctl -o "-p PORT -k DIR -c listen_addresses=127.0.0.1 -c shared_buffers=256MB
   -c max_connections=200"` on a free port, then `createdb mailshelf`. Everything else is
   PostgreSQL's default: fsync, synchronous_commit and full_page_writes stay on (this is the real
   thing, unlike the tests' cluster), autovacuum runs. The settings as the server reports them
   (`pg_settings`) and its version are recorded. The cluster is stopped (`pg_ctl -m fast stop`)
   and removed at the end, also on an error or Ctrl-C, unless `--keep`. With `--database-url` an
   existing database is used instead and nothing of this step happens (and the server's CPU time
   is not measured).
2. **Cold index**: replica 1 over the archive, into the empty database. It takes the indexer lock
   at once and indexes; `GET /api/status` is polled every 200 ms and the index is done when the
   status has `indexing == false` and `messages > 0` after having had `indexing == true` (or
   `indexed == total > 0` and not indexing). *seconds* run from spawn to that answer; *msgs/s* is
   messages listed ÷ seconds; *mailshelf CPU* is the process's user + system time
   (/proc/PID/stat, all threads) at that moment; *peak RSS* its VmHWM. *PostgreSQL CPU* is the
   server's CPU time over the same span: the postmaster's own and reaped children's time
   (utime + stime + cutime + cstime) plus that of its live children, read before the spawn and at
   done. It is approximate: it includes whatever else the server did meanwhile (checkpoints,
   autovacuum). Then the replica is left until it is idle (under 5 % of a core over a second).
3. **Database size**: `pg_database_size(current_database())` and, for every table of
   `pg_tables WHERE schemaname = 'public'`, `pg_total_relation_size` (table, TOAST and indexes) with
   its live rows (pg_stat_user_tables), through `psql`. First as the index left it, then after
   `VACUUM (ANALYZE)` (timed); both are reported, per message and against the archive's size. The
   cluster's folder (`du -sb`, WAL included) is recorded too.
4. **Replica 2**: started over the same database and archive; *seconds* from spawn to its first
   200 answer on `/api/status` whose `messages` equals replica 1's (polled every 50 ms; the goal is
   ≤ 2 s), its status then, and its RSS.
5. **Latency with 1, 2 and 3 replicas** (replica 3 is started, and timed as replica 2, before the
   3-replica round; in the 1-replica round replica 2 is up but idle). The page URLs are those of
   bench/scale.py (`pick_pages`: `/`, `/api/messages` at offset 0, in the middle and at the last
   page, the mbox's folder page, a conversation with more than one message, the middle message,
   `/api/status`). For each URL, each replica is fetched once (untimed, HTTP code and size
   recorded), then one `wrk -tC -cC -dD --latency --timeout 60s -s bench/latency.lua` per replica
   runs AT THE SAME TIME, each against its own replica with C connections, one per thread
   (`--connections`, 4; D is `--duration`, 10 s). Per URL the table gives the worst p50 and the
   worst p99 over the replicas of every request's own time (bench/latency.lua; wrk's own
   distribution, which records a request a thread fell behind on at the run's maximum, is kept in
   the JSON as wrk_p99_ms) and the replicas' requests/second summed. Search: each query of
   bench/queries.txt as `GET /api/messages?limit=20&q=…` (what scale.py times), fetched once per
   replica (its match count recorded), then run the same way, one URL per query, for
   `--search-duration` seconds (5; at most `--duration`). Over all queries: the worst p99 (and
   which query), the median of the queries' worst p50, and the mean over the queries of the summed
   requests/second; per query in the JSON. wrk, the replicas and PostgreSQL all share this
   machine's cores (2 here): the summed req/s from 2 to 3 replicas shows what a third replica costs
   or adds on ONE machine and says little about replicas on separate machines. The latencies under
   load, against the goals (with two replicas, pages p99 ≤ 50 ms, search p99 ≤ 200 ms), are the
   meaningful figures.
6. **Failover**: the replica whose status says `indexer: true` is killed with SIGKILL; the others'
   statuses are polled every 100 ms and *seconds* run from the kill to the first that says
   `indexer: true`. Then that replica is polled (every 100 ms) until it has finished checking the
   archive (`indexing == false` with `indexed == total > 0`, or after having had `indexing == true`;
   a follower's counts stay at 0 / 0), for how long that takes and whether its message count stays
   the same.
7. All replicas are stopped (SIGTERM); their logs' warnings and errors, and the ERROR / FATAL /
   PANIC lines of the PostgreSQL log, are counted and kept.

`--skip-index` (with `--database-url` to a database that already holds this archive) starts at
step 3: replica 1 is started, and timed, until it holds the indexer lock, is not indexing and lists
messages. Load averages are recorded before every step (this machine is shared). Prints two
Markdown tables (metric | value, and the latencies per replica count) and writes everything to
`--out` as JSON, after every step. Logs go to WORK (default: a new temporary folder), which is
kept; the replicas' data folders and the cluster are removed unless `--keep`.
`--table R.json` prints the tables of a results file again.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402  (get, get_json, load, proc_mem, read_log, run_wrk, pick_pages, percentile)
from measure import cpu_seconds  # noqa: E402

BENCH = scale.BENCH
PG_BIN = "/usr/lib/postgresql/15/bin"
PG_SETTINGS = {"shared_buffers": "256MB", "max_connections": "200"}
# What the run records of the server's configuration (pg_settings).
PG_SHOW = ("fsync", "synchronous_commit", "full_page_writes", "wal_level", "shared_buffers", "max_connections",
           "work_mem", "maintenance_work_mem", "effective_cache_size", "max_wal_size", "checkpoint_timeout",
           "autovacuum", "random_page_cost", "jit")
RUST_LOG = scale.RUST_LOG
INDEX_POLL = 0.2
JOIN_POLL = 0.05
FAILOVER_POLL = 0.1
# The goals, with two replicas.
PAGE_GOAL_MS = 50
SEARCH_GOAL_MS = 200

PROCS: list[subprocess.Popen] = []


def say(msg: str) -> None:
    print(f"replicas: {time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


load = scale.load


def is_root() -> bool:
    return os.geteuid() == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_of(url: str, timeout: float = 5) -> dict | None:
    """The JSON of GET /api/status, or None when there is no 200 answer."""
    try:
        with urllib.request.urlopen(url + "api/status", timeout=timeout) as r:
            if r.status != 200:
                return None
            return json.loads(r.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None


def stat_times(pid: int) -> tuple[int, int, int] | None:
    """(ppid, utime + stime, cutime + cstime), the times in clock ticks, from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # After the command: state ppid ... utime(11) stime(12) cutime(13) cstime(14)
    return int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


# ---- PostgreSQL --------------------------------------------------------------------------------


class Cluster:
    """A throwaway cluster: initdb in WORK/pg, started with pg_ctl on a free loopback port."""

    def __init__(self, pg_bin: str, work: str, keep: bool):
        self.bin = pg_bin
        self.dir = os.path.join(work, "pg")
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "pg.log")
        self.keep = keep
        self.port = None
        self.started = False
        self.options = None

    def _as_owner(self, *cmd: str) -> list[str]:
        return (["runuser", "-u", "nobody", "--"] if is_root() else []) + list(cmd)

    def _run(self, cmd: list[str], what: str, timeout: float = 600) -> str:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"{what} failed ({p.returncode}): {p.stdout[-2000:]}")
        return p.stdout

    def start(self) -> dict:
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(self.dir)
        if is_root():
            subprocess.run(["chown", "-R", "nobody", self.dir], check=True)
            if subprocess.run(["runuser", "-u", "nobody", "--", "test", "-w", self.dir]).returncode != 0:
                raise RuntimeError(f"user nobody cannot write to {self.dir}: give a --work that it can reach")
        t = time.monotonic()
        self._run(self._as_owner(os.path.join(self.bin, "initdb"), "-D", self.data, "-U", "mailshelf",
                                 "--auth=trust", "-E", "UTF8", "--no-locale"), "initdb")
        initdb_seconds = time.monotonic() - t
        self.port = free_port()
        opts = ["-p", str(self.port), "-k", self.dir, "-c", "listen_addresses=127.0.0.1"]
        for k, v in PG_SETTINGS.items():
            opts += ["-c", f"{k}={v}"]
        self.options = " ".join(shlex.quote(o) for o in opts)
        # pg_ctl sends the server's output to the log, so no pipe of ours stays open in it.
        with open(os.path.join(self.dir, "pg_ctl.out"), "wb") as out:
            p = subprocess.run(self._as_owner(os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-l", self.log,
                                              "-o", self.options, "-w", "-t", "120", "start"),
                               stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        self.started = True
        if p.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed ({p.returncode}); see {self.log}")
        self._run([os.path.join(self.bin, "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "mailshelf",
                   "mailshelf"], "createdb")
        return {"dir": self.dir, "port": self.port, "initdb_seconds": round(initdb_seconds, 2),
                "initdb": "initdb -U mailshelf --auth=trust -E UTF8 --no-locale",
                "pg_ctl_options": self.options, "owner": "nobody" if is_root() else str(os.geteuid())}

    @property
    def url(self) -> str:
        return f"postgres://mailshelf@127.0.0.1:{self.port}/mailshelf"

    def postmaster_pid(self) -> int | None:
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def cpu_seconds(self) -> float | None:
        """CPU time of the server so far: the postmaster's own and that of the children it has
        reaped (cutime + cstime), plus the live children's own."""
        pm = self.postmaster_pid()
        if pm is None:
            return None
        st = stat_times(pm)
        if st is None:
            return None
        ticks = st[1] + st[2]
        for name in os.listdir("/proc"):
            if name.isdigit():
                s = stat_times(int(name))
                if s and s[0] == pm:
                    ticks += s[1] + s[2]
        return ticks / os.sysconf("SC_CLK_TCK")

    def du(self) -> int:
        return scale.du(self.dir)

    def log_summary(self) -> dict:
        return pg_log_summary(self.log)

    def stop(self) -> None:
        if self.started:
            say("stopping PostgreSQL (pg_ctl -m fast stop)")
            subprocess.run(self._as_owner(os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-m", "fast", "-w",
                                          "stop"), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=180)
            self.started = False
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def pg_log_summary(path: str) -> dict:
    try:
        text = open(path, "rb").read().decode("utf-8", "replace")
    except OSError:
        return {}
    bad = [ln for ln in text.splitlines() if re.search(r"\b(ERROR|FATAL|PANIC):", ln)]
    return {"error_lines": len(bad), "first_errors": bad[:30],
            "checkpoints": len(re.findall(r"checkpoint starting", text)),
            "checkpoints_too_frequent": len(re.findall(r"checkpoints are occurring too frequently", text))}


class Psql:
    def __init__(self, pg_bin: str, url: str):
        self.cmd = [os.path.join(pg_bin, "psql"), "-X", "-v", "ON_ERROR_STOP=1", "-At", "-F", "\t", "-d", url]

    def rows(self, sql: str, timeout: float = 7200) -> list[list[str]]:
        p = subprocess.run(self.cmd + ["-c", sql], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"psql {sql!r}: {p.stderr.strip()[-1000:]}")
        return [ln.split("\t") for ln in p.stdout.splitlines() if ln]

    def one(self, sql: str) -> str:
        rows = self.rows(sql)
        return rows[0][0] if rows else ""


def db_sizes(psql: Psql) -> dict:
    total = int(psql.one("SELECT pg_database_size(current_database())"))
    tables = []
    for name, tot, heap, idx, rows in psql.rows(
            "SELECT t.tablename, pg_total_relation_size(c.oid), pg_relation_size(c.oid), pg_indexes_size(c.oid), "
            "coalesce(s.n_live_tup, 0) FROM pg_tables t "
            "JOIN pg_class c ON c.oid = format('%I.%I', t.schemaname, t.tablename)::regclass "
            "LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid "
            "WHERE t.schemaname = 'public' ORDER BY 2 DESC, 1"):
        tables.append({"table": name, "total_bytes": int(tot), "heap_bytes": int(heap), "index_bytes": int(idx),
                       "live_rows": int(rows)})
    return {"database_bytes": total, "tables_bytes": sum(t["total_bytes"] for t in tables), "tables": tables}


def pg_settings(psql: Psql) -> dict:
    names = ", ".join(f"'{n}'" for n in PG_SHOW)
    out = {}
    for name, value in psql.rows(f"SELECT name, current_setting(name) FROM pg_settings "
                                 f"WHERE name IN ({names}) ORDER BY name"):
        out[name] = value
    return out


# ---- mailshelf replicas ------------------------------------------------------------------------


class Replica:
    """One `mailshelf serve … --database-url …` process."""

    def __init__(self, n: int, binary: str, archive: str, db_url: str, work: str):
        self.n = n
        self.data = os.path.join(work, f"replica{n}-data")
        if os.path.exists(self.data):
            shutil.rmtree(self.data)
        os.makedirs(self.data)
        self.log_path = os.path.join(work, f"replica{n}.log")
        self.out_path = os.path.join(work, f"replica{n}.out")
        self.cmd = [binary, "serve", archive, "--database-url", db_url, "--listen", "127.0.0.1:0",
                    "--data-dir", self.data]
        env = {k: v for k, v in os.environ.items() if not k.startswith("MAILSHELF_")}
        env.update(NO_COLOR="1", RUST_LOG=RUST_LOG)
        # stdout goes to a file (read for the URL), so that nothing can block on a full pipe.
        self._out = open(self.out_path, "wb")
        self._log = open(self.log_path, "wb")
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=self._out, stderr=self._log, env=env)
        PROCS.append(self.p)
        self.pid = self.p.pid
        self.url = None
        self.url_seconds = None
        self.killed = False

    def alive(self) -> bool:
        return self.p.poll() is None

    def check_alive(self, what: str) -> None:
        if not self.alive():
            raise RuntimeError(f"replica {self.n} exited with {self.p.returncode} {what}; see {self.log_path}")

    def wait_url(self, timeout: float) -> str:
        deadline = self.t0 + timeout
        while self.url is None:
            with open(self.out_path, "rb") as f:
                m = re.search(rb"serving on (http://\S+?/)\s", f.read())
            if m:
                self.url = m.group(1).decode()
                self.url_seconds = time.monotonic() - self.t0
                break
            self.check_alive("before printing its URL")
            if time.monotonic() > deadline:
                raise TimeoutError(f"replica {self.n} printed no URL in {timeout} s")
            time.sleep(0.02)
        return self.url

    def status(self) -> dict | None:
        return status_of(self.url)

    def cpu(self) -> float | None:
        return cpu_seconds(self.pid)

    def mem(self) -> dict:
        return scale.proc_mem(self.pid)

    def settle(self, least: float, most: float) -> dict:
        """Waits `least` seconds, then until the process is idle (under 5 % of a core over one
        second), at most `most` seconds in all."""
        start, cpu0 = time.monotonic(), self.cpu() or 0
        time.sleep(least)
        while time.monotonic() - start < most:
            a = self.cpu() or 0
            time.sleep(1)
            if (self.cpu() or 0) - a < 0.05:
                break
        return {"settled_seconds": round(time.monotonic() - start, 1),
                "settle_cpu_seconds": round((self.cpu() or 0) - cpu0, 2)}

    def kill9(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        self.p.wait()
        self.killed = True

    def stop(self) -> dict:
        out = {"cpu_seconds_total": self.cpu(), "mem_kb": self.mem() if self.alive() else None}
        if self.alive():
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
                out["killed_after_sigterm_timeout"] = True
        out["exit"] = self.p.returncode
        out["killed_by_bench"] = self.killed
        self._out.close()
        self._log.close()
        if self.p in PROCS:
            PROCS.remove(self.p)
        out["log"] = log_summary(self.log_path)
        return out


def log_summary(path: str) -> dict:
    out = scale.read_log(path)
    text = re.sub(r"\x1b\[[0-9;]*m", "", open(path, "rb").read().decode("utf-8", "replace"))
    bad = [ln.strip() for ln in text.splitlines() if re.search(r"\b(WARN|ERROR)\b", ln)]
    out["errors"] = len(re.findall(r"\bERROR\b", text))
    out["warn_error_lines"] = bad[:30]
    out["role_lines"] = [ln.strip() for ln in text.splitlines()
                         if re.search(r"indexes the given paths|lost the indexer lock", ln)][:10]
    return out


def wait_indexed(r: Replica, timeout: float, already: bool) -> dict:
    """Polls replica `r` until its index is done (see the module's docstring); with `already`
    (the database holds the archive), until it holds the indexer lock, is not indexing and lists
    messages."""
    deadline = r.t0 + timeout
    r.wait_url(timeout)
    seen_indexing = False
    rss_max = 0
    last_note = time.monotonic()
    first_indexing = None
    while True:
        r.check_alive("while indexing")
        rss_max = max(rss_max, r.mem().get("VmRSS", 0))
        st = r.status()
        if st:
            if st.get("indexing"):
                if not seen_indexing:
                    first_indexing = time.monotonic() - r.t0
                seen_indexing = True
            idle = not st.get("indexing")
            if already:
                done = idle and st.get("indexer") and st.get("messages", 0) > 0
            else:
                done = idle and ((seen_indexing and st.get("messages", 0) > 0)
                                 or (st.get("total", 0) > 0 and st.get("indexed") == st.get("total")))
            if done:
                break
        if time.monotonic() > deadline:
            raise TimeoutError(f"replica {r.n} not done after {timeout} s (last status {st})")
        if time.monotonic() - last_note > 60:
            say(f"  still indexing: {st}, RSS {rss_max // 1024} MB")
            last_note = time.monotonic()
        time.sleep(INDEX_POLL)
    seconds = time.monotonic() - r.t0
    mem = r.mem()
    return {"seconds": round(seconds, 3), "url_seconds": round(r.url_seconds, 3),
            "first_indexing_seconds": None if first_indexing is None else round(first_indexing, 3),
            "status": st, "cpu_seconds": r.cpu(), "mem_at_done_kb": mem, "vmhwm_kb": mem.get("VmHWM"),
            "vmrss_max_sampled_kb": rss_max}


def wait_joined(r: Replica, want: int, timeout: float) -> dict:
    """Seconds from spawn to the first 200 answer on /api/status listing `want` messages."""
    deadline = r.t0 + timeout
    r.wait_url(timeout)
    first_200 = None
    st = None
    while True:
        r.check_alive("while starting")
        st = r.status()
        now = time.monotonic()
        if st is not None:
            if first_200 is None:
                first_200 = now - r.t0
            if st.get("messages") == want:
                break
        if now > deadline:
            raise TimeoutError(f"replica {r.n} did not list {want} messages in {timeout} s (last status {st})")
        time.sleep(JOIN_POLL)
    seconds = time.monotonic() - r.t0
    return {"seconds": round(seconds, 3), "url_seconds": round(r.url_seconds, 3),
            "first_status_seconds": round(first_200, 3), "status": st, "cpu_seconds": r.cpu(),
            "mem_at_join_kb": r.mem()}


# ---- load --------------------------------------------------------------------------------------


def wrk_together(replicas: list[Replica], path: str, duration: int, conns: int) -> dict:
    """One wrk per replica, all at the same time; the worst p50/p99 and the summed req/s."""
    with concurrent.futures.ThreadPoolExecutor(len(replicas)) as ex:
        runs = list(ex.map(lambda r: scale.run_wrk(r.url + path, duration, conns), replicas))
    p99 = [w.get("p99_ms") for w in runs]
    p50 = [w.get("p50_ms") for w in runs]
    ok = all(x is not None for x in p99)
    worst = lambda k: max((w.get(k) or 0) for w in runs)  # noqa: E731
    return {"p50_ms": max(p50) if ok else None, "p99_ms": max(p99) if ok else None,
            "p999_ms": worst("p999_ms"), "max_ms": worst("max_ms"), "wrk_p99_ms": worst("wrk_p99_ms"),
            "rps": round(sum(w.get("rps") or 0 for w in runs), 1),
            "requests": sum(w.get("requests") or 0 for w in runs),
            "non_2xx": sum(w.get("non_2xx") or 0 for w in runs),
            "socket_errors": [w.get("socket_errors") for w in runs if w.get("socket_errors")],
            "errors": [w.get("error") for w in runs if w.get("error")],
            "per_replica": [{"replica": r.n, **{k: v for k, v in w.items() if k != "cmd"}}
                            for r, w in zip(replicas, runs)],
            "cmd": runs[0].get("cmd", "").replace(replicas[0].url, "REPLICA_URL/")}


def first_fetch(replicas: list[Replica], path: str) -> list[dict]:
    out = []
    for r in replicas:
        secs, code, body = scale.get(r.url + path, timeout=120)
        out.append({"replica": r.n, "ms": round(secs * 1000, 3), "http": code, "bytes": len(body), "body": body})
    return out


def measure_round(replicas: list[Replica], pages: list[tuple[str, str]], queries: list[str], duration: int,
                  search_duration: int, conns: int) -> dict:
    n = len(replicas)
    rows = []
    for name, path in pages:
        firsts = first_fetch(replicas, path)
        same = len({f["body"] for f in firsts}) == 1 if path.startswith("api/messages") else None
        say(f"  {name}: /{path} first " + ", ".join(f"{f['ms']:.1f} ms HTTP {f['http']}" for f in firsts)
            + f"; {n} × wrk {duration} s")
        w = wrk_together(replicas, path, duration, conns)
        say(f"    worst p50 {w['p50_ms']} ms, worst p99 {w['p99_ms']} ms, {w['rps']} req/s summed, "
            f"non-2xx {w['non_2xx']}")
        rows.append({"name": name, "path": "/" + path, "same_answer": same,
                     "first": [{k: v for k, v in f.items() if k != "body"} for f in firsts], **w})
    per = []
    say(f"  search: {len(queries)} queries, {n} × wrk {search_duration} s each")
    for q in queries:
        path = "api/messages?limit=20&q=" + urllib.parse.quote(q)
        firsts = first_fetch(replicas, path)
        matches = []
        for f in firsts:
            try:
                matches.append(json.loads(f["body"]).get("total") if f["http"] == 200 else None)
            except ValueError:
                matches.append(None)
        w = wrk_together(replicas, path, search_duration, conns)
        per.append({"query": q, "matches": matches[0], "matches_per_replica": matches,
                    "first": [{k: v for k, v in f.items() if k != "body"} for f in firsts], **w})
    timed = [p for p in per if p["p99_ms"] is not None]
    worst = max(timed, key=lambda p: p["p99_ms"]) if timed else None
    search = {"queries": len(queries), "duration_s": search_duration, "url": "/api/messages?limit=20&q=QUERY",
              "p99_ms": worst["p99_ms"] if worst else None, "p99_query": worst["query"] if worst else None,
              "p50_ms_median": round(statistics.median(p["p50_ms"] for p in timed), 3) if timed else None,
              "rps_mean": round(statistics.mean(p["rps"] for p in per), 1) if per else None,
              "non_2xx": sum(p["non_2xx"] for p in per),
              "queries_with_matches": sum(1 for p in per if p["matches"]),
              "queries_untimed": len(per) - len(timed), "per_query": per}
    say(f"    search: worst p99 {search['p99_ms']} ms ({search['p99_query']!r}), median p50 "
        f"{search['p50_ms_median']} ms, {search['rps_mean']} req/s summed (mean over queries), "
        f"{search['queries_with_matches']} of {len(queries)} queries match something")
    return {"replicas": n, "connections_per_replica": conns, "duration_s": duration, "pages": rows,
            "search": search, "mem_after_kb": {r.n: r.mem() for r in replicas}}


def failover(replicas: list[Replica], timeout: float) -> dict:
    statuses = {r.n: r.status() for r in replicas}
    holders = [r for r in replicas if (statuses[r.n] or {}).get("indexer")]
    res = {"statuses_before": statuses, "indexers_before": [r.n for r in holders]}
    if not holders:
        res["error"] = "no replica says indexer: true"
        return res
    victim = holders[0]
    before = (statuses[victim.n] or {}).get("messages")
    others = [r for r in replicas if r is not victim]
    say(f"  kill -9 replica {victim.n} (pid {victim.pid})")
    t0 = time.monotonic()
    victim.kill9()
    new = None
    while new is None:
        for r in others:
            st = status_of(r.url, timeout=2)
            if st and st.get("indexer"):
                new = (r, st)
                break
        else:
            if time.monotonic() - t0 > timeout:
                res["error"] = f"no replica took the indexer role in {timeout} s"
                return res
            time.sleep(FAILOVER_POLL)
    took = time.monotonic() - t0
    r, st = new
    res.update(killed=victim.n, new_indexer=r.n, seconds=round(took, 3), status_at_takeover=st,
               others_at_takeover={o.n: status_of(o.url, timeout=2) for o in others if o is not r})
    say(f"  replica {r.n} says indexer: true {took:.2f} s after the kill")
    # The new indexer checks the archive against the database (or reads what is new): done when it
    # is not indexing and has looked at every file it found (a follower's counts stay at 0 / 0),
    # or it is no longer indexing after having been.
    seen_indexing = bool(st.get("indexing"))
    while True:
        st = status_of(r.url, timeout=5)
        if st:
            seen_indexing = seen_indexing or bool(st.get("indexing"))
            counted = st.get("total", 0) > 0 and st.get("indexed") == st.get("total")
            if not st.get("indexing") and (seen_indexing or counted):
                break
        if time.monotonic() - t0 > timeout:
            res["error"] = f"replica {r.n} still indexing after {timeout} s"
            break
        time.sleep(FAILOVER_POLL)
    res.update(checked_seconds=round(time.monotonic() - t0, 3), new_indexer_was_indexing=seen_indexing,
               status_after=st, messages_before=before, messages_after=(st or {}).get("messages"))
    say(f"  replica {r.n} done checking {res['checked_seconds']} s after the kill "
        f"(indexing seen: {seen_indexing}), messages {before} -> {res['messages_after']}")
    return res


# ---- the run -----------------------------------------------------------------------------------


def read_queries() -> list[str]:
    return [q.strip() for q in open(os.path.join(BENCH, "queries.txt"), encoding="utf-8")
            if q.strip() and not q.startswith("#")]


def run(args) -> dict:
    archive = os.path.abspath(args.archive)
    made_work = not args.work
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="mailshelf-replicas-"))
    os.makedirs(work, exist_ok=True)
    if made_work and is_root():
        os.chmod(work, 0o755)  # the cluster below it belongs to nobody
    label = args.label or os.path.splitext(os.path.basename(archive))[0]
    ver = subprocess.run([args.bin, "--version"], capture_output=True, text=True).stdout.strip()
    search_duration = args.search_duration or min(5, args.duration)
    res = {
        "label": label, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "bin": os.path.abspath(args.bin), "mailshelf_version": ver, "archive": archive,
        "archive_bytes": os.path.getsize(archive), "cpus": os.cpu_count(), "kernel": platform.release(),
        "mem_total_kb": int(open("/proc/meminfo").readline().split()[1]), "rust_log": RUST_LOG, "work": work,
        "duration_s": args.duration, "search_duration_s": search_duration, "connections": args.connections,
        "throwaway_cluster": not args.database_url, "skip_index": args.skip_index, "load": {"start": load()},
    }
    out = args.out

    def save():
        if out:
            with open(out, "w") as f:
                json.dump(res, f, indent=1, ensure_ascii=False, default=str)

    cluster = None
    replicas: list[Replica] = []
    try:
        # 1. cluster
        if args.database_url:
            db_url = args.database_url
            res["database"] = "given (--database-url)"
        else:
            cluster = Cluster(args.pg_bin, work, args.keep)
            say(f"PostgreSQL cluster in {cluster.dir}")
            res["load"]["cluster"] = load()
            res["cluster"] = cluster.start()
            db_url = cluster.url
            res["database"] = db_url
            say(f"  {db_url}, options {cluster.options}")
        psql = Psql(args.pg_bin, db_url)
        res["postgresql_version"] = psql.one("SELECT version()")
        res["pg_settings"] = pg_settings(psql)
        say(f"  {res['postgresql_version']}")
        say(f"  {res['pg_settings']}")
        save()

        # 2. cold index
        res["load"]["cold"] = load()
        pg_cpu0 = cluster.cpu_seconds() if cluster else None
        say(("replica 1 over a database that holds the archive" if args.skip_index
             else "cold index: replica 1 into the empty database") + f" ({archive})")
        r1 = Replica(1, args.bin, archive, db_url, work)
        replicas.append(r1)
        cold = wait_indexed(r1, args.timeout, args.skip_index)
        pg_cpu1 = cluster.cpu_seconds() if cluster else None
        if pg_cpu0 is not None and pg_cpu1 is not None:
            cold["postgresql_cpu_seconds"] = round(pg_cpu1 - pg_cpu0, 2)
        n = cold["status"]["messages"]
        cold["msgs_per_s"] = round(n / cold["seconds"], 1)
        say(f"  done in {cold['seconds']} s: {n} messages, {cold['msgs_per_s']} msgs/s, mailshelf CPU "
            f"{cold['cpu_seconds']} s, PostgreSQL CPU {cold.get('postgresql_cpu_seconds')} s, VmHWM "
            f"{(cold['vmhwm_kb'] or 0) // 1024} MB")
        cold.update(r1.settle(2, args.idle_timeout))
        cold["mem_settled_kb"] = r1.mem()
        say(f"  idle {cold['settled_seconds']} s later, RSS {cold['mem_settled_kb'].get('VmRSS', 0) // 1024} MB")
        res["index" if args.skip_index else "cold"] = cold
        res["messages"] = n
        save()

        # 3. database size
        res["load"]["size"] = load()
        say("database size")
        size = {"as_left": db_sizes(psql)}
        t = time.monotonic()
        psql.rows("VACUUM (ANALYZE)")
        size["vacuum_analyze_seconds"] = round(time.monotonic() - t, 2)
        size["after_vacuum"] = db_sizes(psql)
        if cluster:
            size["cluster_dir_bytes"] = cluster.du()
        for k in ("as_left", "after_vacuum"):
            s = size[k]
            s["bytes_per_message"] = round(s["database_bytes"] / n, 1) if n else None
            s["pct_of_archive"] = round(100 * s["database_bytes"] / res["archive_bytes"], 2)
        res["size"] = size
        say(f"  {size['as_left']['database_bytes'] / 1e6:.1f} MB as left "
            f"({size['as_left']['bytes_per_message']} B/message), {size['after_vacuum']['database_bytes'] / 1e6:.1f}"
            f" MB after VACUUM (ANALYZE) ({size['vacuum_analyze_seconds']} s)")
        save()

        def join(k: int) -> None:
            """Starts replica k and times it until it lists every message (steps 4 and 5)."""
            res["load"][f"replica{k}"] = load()
            say(f"replica {k}")
            r = Replica(k, args.bin, archive, db_url, work)
            replicas.append(r)
            j = wait_joined(r, n, args.timeout)
            j.update(r.settle(1, 30))
            j["mem_settled_kb"] = r.mem()
            res[f"replica{k}"] = j
            say(f"  lists {n} messages {j['seconds']} s after spawn (first status {j['first_status_seconds']} s), "
                f"RSS {j['mem_settled_kb'].get('VmRSS', 0) // 1024} MB")
            save()

        # 4. replica 2
        join(2)

        # 5. latency with 1, 2, 3 replicas
        pages = scale.pick_pages(r1.url, archive)
        queries = read_queries()
        res["rounds"] = []
        for count in (1, 2, 3):
            if count == 3:
                join(3)
            res["load"][f"round{count}"] = load()
            say(f"latency with {count} replica{'s' if count > 1 else ''} under load")
            rnd = measure_round(replicas[:count], pages, queries, args.duration, search_duration, args.connections)
            rnd["load_before"] = res["load"][f"round{count}"]
            res["rounds"].append(rnd)
            save()

        # 6. failover
        if args.failover:
            res["load"]["failover"] = load()
            say("failover")
            res["failover"] = failover(replicas, args.timeout)
            save()
    finally:
        say("stopping the replicas")
        stopped = {}
        for r in replicas:
            try:
                stopped[r.n] = r.stop()
            except Exception as e:  # noqa: BLE001 (keep stopping the others)
                stopped[r.n] = {"error": repr(e)}
        res["stopped"] = stopped
        if cluster:
            res["pg_log"] = cluster.log_summary()
            try:
                cluster.stop()
            finally:
                if not args.keep:
                    for r in replicas:
                        shutil.rmtree(r.data, ignore_errors=True)
        elif not args.keep:
            for r in replicas:
                shutil.rmtree(r.data, ignore_errors=True)
        res["load"]["end"] = load()
        save()
        say(f"logs in {work}")
    return res


# ---- tables ------------------------------------------------------------------------------------


def mb(b):
    return None if b is None else b / 1e6


def kb_mb(kb):
    return None if kb is None else kb / 1024


def goal(v, limit):
    if v is None:
        return "–"
    return f"{v:,.1f} ({'met' if v <= limit else 'NOT met'}, goal ≤ {limit})"


def cell(v, f):
    if v is None:
        return "" if f == "" else "–"
    if f == "str":
        return str(v)
    return f.format(v)


def summary_rows(r: dict) -> list[tuple[str, object, str]]:
    cold = r.get("cold") or r.get("index") or {}
    size = r.get("size") or {}
    left, vac = size.get("as_left") or {}, size.get("after_vacuum") or {}
    rounds = {x["replicas"]: x for x in r.get("rounds") or []}
    fo = r.get("failover") or {}
    two = rounds.get(2) or {}
    worst_page = max((p["p99_ms"] for p in two.get("pages") or [] if p.get("p99_ms") is not None), default=None)
    worst_page_name = next((p["name"] for p in two.get("pages") or [] if p.get("p99_ms") == worst_page), None)
    s2 = two.get("search") or {}
    rows = [
        ("messages listed", r.get("messages"), "{:,}"),
        ("archive MB", mb(r.get("archive_bytes")), "{:,.1f}"),
        ("load average at start (1 min)", (r.get("load") or {}).get("start", [None])[0], "{}"),
        ("**cold index** (replica 1, empty database)" if r.get("cold") else "**replica 1** (database already full)",
         None, ""),
        ("seconds", cold.get("seconds"), "{:,.2f}"),
        ("msgs/s", cold.get("msgs_per_s") if r.get("cold") else None, "{:,.0f}"),
        ("mailshelf CPU s", cold.get("cpu_seconds"), "{:,.1f}"),
        ("PostgreSQL server CPU s (approximate)", cold.get("postgresql_cpu_seconds"), "{:,.1f}"),
        ("mailshelf peak RSS (VmHWM), MB", kb_mb(cold.get("vmhwm_kb")), "{:,.0f}"),
        ("mailshelf RSS once idle, MB", kb_mb((cold.get("mem_settled_kb") or {}).get("VmRSS")), "{:,.0f}"),
        ("**database size**", None, ""),
        ("as left, MB", mb(left.get("database_bytes")), "{:,.1f}"),
        ("as left, bytes per message", left.get("bytes_per_message"), "{:,.0f}"),
        ("as left, % of the archive", left.get("pct_of_archive"), "{:.1f} %"),
        ("after VACUUM (ANALYZE), MB", mb(vac.get("database_bytes")), "{:,.1f}"),
        ("after VACUUM (ANALYZE), bytes per message", vac.get("bytes_per_message"), "{:,.0f}"),
        ("VACUUM (ANALYZE) took, s", size.get("vacuum_analyze_seconds"), "{:,.1f}"),
    ]
    after = {t["table"]: t for t in vac.get("tables") or []}
    for t in (left.get("tables") or [])[:8]:
        a = after.get(t["table"], {})
        rows.append((f"  table `{t['table']}` ({a.get('live_rows', t['live_rows']):,} rows), MB as left / vacuumed",
                     f"{t['total_bytes'] / 1e6:,.1f} / {a.get('total_bytes', 0) / 1e6:,.1f}", "str"))
    rows.append(("cluster folder (WAL included), MB", mb(size.get("cluster_dir_bytes")), "{:,.1f}"))
    rows.append(("**more replicas**", None, ""))
    for k in ("replica2", "replica3"):
        j = r.get(k) or {}
        rows.append((f"{k[:-1]} {k[-1]}: spawn to listing every message, s (goal ≤ 2)", j.get("seconds"),
                     "{:,.2f}"))
        rows.append((f"{k[:-1]} {k[-1]}: RSS once idle, MB", kb_mb((j.get("mem_settled_kb") or {}).get("VmRSS")),
                     "{:,.0f}"))
    rows.append((f"**latency with two replicas** (wrk -t{r.get('connections')} -c{r.get('connections')} each, "
                 "every request timed)", None, ""))
    rows.append((f"worst page p99, ms ({worst_page_name})" if worst_page_name else "worst page p99, ms",
                 goal(worst_page, PAGE_GOAL_MS), "str"))
    rows.append((f"worst search p99, ms ({s2.get('p99_query')})" if s2.get("p99_query") else "worst search p99, ms",
                 goal(s2.get("p99_ms"), SEARCH_GOAL_MS), "str"))
    rows.append(("search queries matching anything", f"{s2.get('queries_with_matches')} of {s2.get('queries')}"
                 if s2 else None, "str"))
    rows.append(("**failover** (kill -9 of the indexer)", None, ""))
    rows.append(("another replica says `indexer: true`, s", fo.get("seconds"), "{:,.2f}"))
    rows.append(("it has checked the archive (`indexing: false`), s", fo.get("checked_seconds"), "{:,.2f}"))
    if fo.get("error"):
        rows.append(("failover error", fo["error"], "str"))
    rows.append(("**logs**", None, ""))
    st = r.get("stopped") or {}
    rows.append(("replica log warnings / errors",
                 " · ".join(f"{n}: {(v.get('log') or {}).get('warnings', '–')} / {(v.get('log') or {}).get('errors', '–')}"
                            for n, v in sorted(st.items())) or None, "str"))
    if r.get("pg_log"):
        rows.append(("PostgreSQL log ERROR/FATAL/PANIC lines", r["pg_log"].get("error_lines"), "{}"))
    return rows


def latency_cell(x: dict | None, rps_key: str = "rps", p50_key: str = "p50_ms") -> str:
    if not x:
        return "–"
    p50, p99, rps = x.get(p50_key), x.get("p99_ms"), x.get(rps_key)
    f = lambda v: "–" if v is None else f"{v:,.2f}"  # noqa: E731
    bad = f", {x['non_2xx']} non-2xx" if x.get("non_2xx") else ""
    return f"{f(p50)} / {f(p99)} · {'–' if rps is None else f'{rps:,.0f}'}{bad}"


def print_tables(r: dict) -> None:
    pg = (r.get("postgresql_version") or "").split(" on ")[0]
    sets = r.get("pg_settings") or {}
    print(f"\n{r['label']}: {r['archive']} ({r['archive_bytes'] / 1e6:,.1f} MB), {r['mailshelf_version']}, {pg} "
          f"(fsync {sets.get('fsync', '?')}, synchronous_commit {sets.get('synchronous_commit', '?')}, "
          f"shared_buffers {sets.get('shared_buffers', '?')}), {r['date']}, {r['cpus']} CPUs, "
          f"load averages {r['load']}\n")
    print("| metric | value |")
    print("|---|---:|")
    for name, v, f in summary_rows(r):
        print(f"| {name} | {cell(v, f)} |")
    rounds = r.get("rounds") or []
    if not rounds:
        return
    c = r.get('connections')
    print(f"\nLatency under wrk: one `wrk -t{c} -c{c} -d{r.get('duration_s')}s -s bench/latency.lua` per replica at "
          f"the same time (search: -d{r.get('search_duration_s')}s per query). Cells: worst p50 / worst p99 ms "
          f"of every request's own time "
          f"over the replicas · req/s summed over the replicas. wrk, the replicas and PostgreSQL share "
          f"{r['cpus']} cores: req/s across columns is what one machine does, not what more machines would.\n")
    head = [f"{x['replicas']} replica{'s' if x['replicas'] > 1 else ''}" for x in rounds]
    print("| page | " + " | ".join(head) + " |")
    print("|---|" + "---:|" * len(rounds))
    names = list(dict.fromkeys(p["name"] for x in rounds for p in x["pages"]))
    for name in names:
        cells = [latency_cell(next((p for p in x["pages"] if p["name"] == name), None)) for x in rounds]
        print(f"| {name} | " + " | ".join(cells) + " |")
    q = (rounds[0].get("search") or {}).get("queries")
    print(f"| search, {q} queries (median p50 / worst p99 · mean req/s) | "
          + " | ".join(latency_cell(x.get("search"), "rps_mean", "p50_ms_median") for x in rounds) + " |")
    print("| load average before the round (1 min) | "
          + " | ".join(str((x.get("load_before") or [None])[0]) for x in rounds) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", help="the mailshelf binary")
    ap.add_argument("--archive", help="the mbox every replica serves")
    ap.add_argument("--label", help="a name for this run (default: the archive's file name)")
    ap.add_argument("--out", help="write the results here as JSON (after every step)")
    ap.add_argument("--work", help="where logs, the replicas' data folders and the cluster go "
                                   "(default: a new temporary folder)")
    ap.add_argument("--duration", type=int, default=10, help="seconds of wrk per page (default 10)")
    ap.add_argument("--search-duration", type=int, default=None,
                    help="seconds of wrk per search query (default 5, at most --duration)")
    ap.add_argument("--connections", type=int, default=4, help="wrk connections per replica (default 4)")
    ap.add_argument("--database-url", help="use this existing database instead of a throwaway cluster")
    ap.add_argument("--skip-index", action="store_true",
                    help="the database already holds this archive: no cold index (needs --database-url)")
    ap.add_argument("--pg-bin", default=PG_BIN, help=f"PostgreSQL's programs (default {PG_BIN})")
    ap.add_argument("--no-failover", dest="failover", action="store_false", help="skip the failover step")
    ap.add_argument("--idle-timeout", type=float, default=120,
                    help="after the cold index, wait until replica 1 is idle, at most this many seconds (default 120)")
    ap.add_argument("--keep", action="store_true", help="keep the cluster and the replicas' data folders")
    ap.add_argument("--timeout", type=float, default=7200, help="longest wait for any one step, seconds")
    ap.add_argument("--table", metavar="JSON", help="only print the tables of a results file")
    args = ap.parse_args()

    if args.table:
        print_tables(json.load(open(args.table)))
        return 0
    if not args.bin or not args.archive:
        ap.error("give --bin and --archive (or --table JSON)")
    if args.skip_index and not args.database_url:
        ap.error("--skip-index needs --database-url (a throwaway cluster starts empty)")
    if not shutil.which("wrk"):
        ap.error("wrk is not installed")
    need = ["psql"] + ([] if args.database_url else ["initdb", "pg_ctl", "createdb"])
    missing = [p for p in need if not os.access(os.path.join(args.pg_bin, p), os.X_OK)]
    if missing:
        ap.error(f"not in {args.pg_bin}: {', '.join(missing)} (give --pg-bin)")

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    try:
        print_tables(run(args))
    except KeyboardInterrupt as e:
        say(f"interrupted ({e or 'Ctrl-C'}); what was measured is in {args.out or 'no --out file'}")
        return 130
    finally:
        scale.kill_all(PROCS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
