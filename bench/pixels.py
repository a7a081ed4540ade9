#!/usr/bin/env python3
"""Does mailshelf show a saved page as Chromium itself shows it? A pixel comparison.

For every MHTML file (`.mht`/`.mhtml`) in the set (default: every one under ../shared/corpus plus
tests/fixtures/chrome-saves), in one headless Chromium at one window size:

  reference  the file opened from file:// (Chromium's own MHTML loader), screenshot;
  mailshelf  the same file served by one `mailshelf serve`, its message found by `source`, and the
             message's rendered body (`html_url`: the root HTML part with its references rewritten,
             what the sandboxed frame on /message/<id> shows, without mailshelf's page around it;
             `text_url` when the message has no HTML body; `image_url`, the image a saved page
             whose root part is an image consists of, when it has neither) opened directly,
             screenshot.

Both sides load the same way: Page.navigate, the load event (frames included), web fonts ready,
then a fixed settle time. Chromium refuses some files ("Malformed multipart archive": an empty
document and that console message): they have no reference and are counted separately, with
whether mailshelf shows something for them. Most of the corpus's refusals are files whose lines end
in a bare LF; with --crlf-retry such a file's reference is taken from a copy with CRLF line ends
(marked "CRLF copy"; mailshelf still reads the original), which brings real Chrome saves such as
mhtml2html/npm.mhtml into the comparison, and a few pages where Chromium itself shows less than
mailshelf (broken images, mojibake), which then count against mailshelf.

The measure, per page: the background colour is the most frequent colour of the reference
screenshot. A pixel is *content* in a screenshot when some channel differs from that colour by more
than --bg-tolerance; the page's content pixels are those that are content in either screenshot.
*% equal* is the share of content pixels whose colour is the same in both screenshots (every
channel within --tolerance). A page blank on both sides counts as 100 %.

    python3 bench/pixels.py                                   # the default set
    python3 bench/pixels.py --only chrome-saves --out /tmp/px
    python3 bench/pixels.py path/to/file.mhtml some/folder --min-mean 97 --min-page 85

Writes OUT/results.md (the table), OUT/results.json, and OUT/png/<name>.{ref,shelf,diff}.png; the
diff image is the reference faded, with content pixels that differ in red (content in the
reference) or blue (content only in mailshelf's rendering). Needs Chromium and
`pip install -r bench/requirements.txt` (websocket-client, Pillow, numpy).
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DEFAULT_SETS = [os.path.join(REPO, "..", "shared", "corpus"),
                os.path.join(REPO, "tests", "fixtures", "chrome-saves")]
MHTML_EXT = (".mht", ".mhtml")
EMPTY_DOC = "<html><head></head><body></body></html>"


# -- the set of files --------------------------------------------------------------------------

def collect(paths: list[str], only: str | None) -> list[str]:
    files: list[str] = []
    for p in paths:
        p = os.path.normpath(p)
        if os.path.isfile(p):
            files.append(p)
        elif os.path.isdir(p):
            for root, dirs, names in os.walk(p):
                dirs.sort()
                files.extend(os.path.join(root, n) for n in sorted(names) if n.lower().endswith(MHTML_EXT))
        else:
            print(f"warning: {p} does not exist", file=sys.stderr)
    if only:
        glob = any(c in only for c in "*?[")
        if glob:
            files = [f for f in files if fnmatch.fnmatch(f, only) or fnmatch.fnmatch(f, f"*{only}*")]
        else:
            files = [f for f in files if only in f]
    seen, out = set(), []
    for f in files:
        if f not in seen:
            seen.add(f)
            out.append(f)
    return out


def display_name(path: str) -> str:
    """The file relative to the repository or to the shared corpus, for the table."""
    full = os.path.abspath(path)
    corpus = os.path.abspath(os.path.join(REPO, "..", "shared", "corpus"))
    if full.startswith(corpus + os.sep):
        return "corpus/" + os.path.relpath(full, corpus)
    if full.startswith(REPO + os.sep):
        return os.path.relpath(full, REPO)
    return path


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[-120:]


# -- mailshelf ---------------------------------------------------------------------------------

def find_binary(given: str | None) -> str:
    candidates = [given, os.environ.get("MAILSHELF_BIN"), os.path.join(REPO, "target", "release", "mailshelf")]
    if os.environ.get("CARGO_TARGET_DIR"):
        candidates.append(os.path.join(os.environ["CARGO_TARGET_DIR"], "release", "mailshelf"))
    candidates.append(os.path.join(REPO, "..", "target-rel", "release", "mailshelf"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    sys.exit("no mailshelf binary: build it (cargo build --release) or give --mailshelf / MAILSHELF_BIN")


class Mailshelf:
    """One `mailshelf serve` over a folder holding a copy of every file of the set."""

    def __init__(self, binary: str, files: list[str], timeout: float = 300):
        self.tmp = tempfile.mkdtemp(prefix="mailshelf-pixels-")
        self.folder = os.path.join(self.tmp, "files")
        os.makedirs(self.folder)
        self.by_copy: dict[str, str] = {}
        for i, f in enumerate(files):
            name = f"{i:03d}-{slug(os.path.basename(f))}"
            shutil.copyfile(f, os.path.join(self.folder, name))
            self.by_copy[name] = f
        self.log = open(os.path.join(self.tmp, "mailshelf.log"), "wb")
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", os.path.join(self.tmp, "data"), self.folder],
            stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL)
        self.base = self._read_url(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.get_json("/api/status").get("ready"):
                    break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            raise RuntimeError("mailshelf did not get ready")

    def _read_url(self, timeout: float) -> str:
        found: list[str] = []

        def reader():
            for raw in self.proc.stdout:
                m = re.search(rb"mailshelf serving on (http://\S+?)/?\s*$", raw)
                if m and not found:
                    found.append(m.group(1).decode())
        threading.Thread(target=reader, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not found:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mailshelf did not start; see {self.log.name}")
            time.sleep(0.05)
        return found[0]

    def get_json(self, path: str):
        with urllib.request.urlopen(self.base + path, timeout=60) as r:
            return json.load(r)

    def messages_by_file(self) -> dict[str, dict]:
        """Original file path -> the detail of the top-level message read from it."""
        listing = self.get_json("/api/messages?limit=1000")
        out: dict[str, dict] = {}
        for m in listing.get("messages", []):
            d = self.get_json(f"/api/messages/{urllib.parse.quote(m['id'], safe='')}")
            src = d.get("source")
            if not src:
                continue
            name = os.path.basename(src.replace("\\", "/"))
            orig = self.by_copy.get(name)
            if orig and orig not in out:
                out[orig] = d
        return out

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


# -- the comparison ----------------------------------------------------------------------------

def rgb(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def background(a: np.ndarray) -> np.ndarray:
    packed = (a[..., 0].astype(np.int32) << 16) | (a[..., 1].astype(np.int32) << 8) | a[..., 2].astype(np.int32)
    values, counts = np.unique(packed.ravel(), return_counts=True)
    v = int(values[counts.argmax()])
    return np.array([(v >> 16) & 255, (v >> 8) & 255, v & 255], dtype=np.int16)


def compare(ref: np.ndarray, shelf: np.ndarray, tol: int, bg_tol: int):
    """(share equal in %, content pixels, equal pixels, background colour, diff image)."""
    h = min(ref.shape[0], shelf.shape[0])
    w = min(ref.shape[1], shelf.shape[1])
    ref, shelf = ref[:h, :w], shelf[:h, :w]
    bg = background(ref)
    content_ref = np.abs(ref - bg).max(axis=2) > bg_tol
    content_shelf = np.abs(shelf - bg).max(axis=2) > bg_tol
    content = content_ref | content_shelf
    same = np.abs(ref - shelf).max(axis=2) <= tol
    n_content = int(content.sum())
    n_equal = int((content & same).sum())
    share = 100.0 if n_content == 0 else 100.0 * n_equal / n_content
    faded = (ref.astype(np.float32) * 0.25 + 255 * 0.75).astype(np.uint8)
    diff = faded.copy()
    diff[content & ~same & content_ref] = (220, 0, 0)
    diff[content & ~same & ~content_ref] = (0, 60, 230)
    return share, n_content, n_equal, bg, Image.fromarray(diff)


def content_count(img: np.ndarray, bg_tol: int) -> int:
    """Pixels that are not the screenshot's own most frequent colour: is anything shown?"""
    return int((np.abs(img - background(img)).max(axis=2) > bg_tol).sum())


def shoot(browser: cdp.Browser, url: str, width: int, height: int, settle: float, timeout: float):
    page = browser.new_page(width, height)
    try:
        res = page.load(url, timeout=timeout, settle=settle)
        try:
            res["html"] = page.eval("document.documentElement ? document.documentElement.outerHTML : ''") or ""
        except cdp.CdpError:
            res["html"] = ""
        res["png"] = page.screenshot()
    finally:
        page.close()
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", help="MHTML files or folders (default: ../shared/corpus and tests/fixtures/chrome-saves)")
    ap.add_argument("--only", help="keep files whose path contains this (or matches it, with * ? [ ])")
    ap.add_argument("--mailshelf", help="the binary (default $MAILSHELF_BIN, target/release/mailshelf, $CARGO_TARGET_DIR/release/mailshelf)")
    ap.add_argument("--chromium", default=os.environ.get("MAILSHELF_CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--out", default=os.path.join(REPO, "target", "pixels"), help="output folder (default target/pixels)")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--height", type=int, default=1600)
    ap.add_argument("--settle", type=float, default=1.0, help="seconds to wait after load and fonts (default 1)")
    ap.add_argument("--timeout", type=float, default=30.0, help="longest wait for a load event (default 30 s)")
    ap.add_argument("--tolerance", type=int, default=24, help="largest channel difference of an equal pixel (default 24)")
    ap.add_argument("--bg-tolerance", type=int, default=16, help="largest channel difference from the background of a background pixel (default 16)")
    ap.add_argument("--crlf-retry", action="store_true",
                    help="when Chromium refuses a file whose lines all end in a bare LF, take the reference "
                         "from a copy with CRLF line ends (mailshelf still reads the file as it is)")
    ap.add_argument("--min-mean", type=float, help="exit 1 when the mean %% equal is below this")
    ap.add_argument("--min-page", type=float, help="exit 1 when any page's %% equal is below this")
    args = ap.parse_args()

    files = collect(args.paths or DEFAULT_SETS, args.only)
    if not files:
        sys.exit("no MHTML files")
    binary = find_binary(args.mailshelf)
    os.makedirs(os.path.join(args.out, "png"), exist_ok=True)
    print(f"{len(files)} files; mailshelf {binary}", file=sys.stderr)

    shelf = Mailshelf(binary, files)
    crlf_dir = os.path.join(shelf.tmp, "crlf")
    os.makedirs(crlf_dir)
    rows = []
    try:
        details = shelf.messages_by_file()
        with cdp.Browser(args.chromium) as browser:
            for f in files:
                name = display_name(f)
                row = {"file": name, "path": os.path.abspath(f)}
                ref = shoot(browser, "file://" + urllib.parse.quote(os.path.abspath(f)),
                            args.width, args.height, args.settle, args.timeout)
                refused = any("Malformed multipart archive" in c for c in ref["console"]) or \
                    ref["html"].strip() == EMPTY_DOC or bool(ref["error"])
                if refused and args.crlf_retry:
                    with open(f, "rb") as fh:
                        data = fh.read()
                    if b"\r\n" not in data:
                        copy = os.path.join(crlf_dir, f"{len(rows):03d}-{slug(os.path.basename(f))}")
                        with open(copy, "wb") as o:
                            o.write(data.replace(b"\n", b"\r\n"))
                        again = shoot(browser, "file://" + urllib.parse.quote(copy), args.width, args.height,
                                      args.settle, args.timeout)
                        if not (any("Malformed multipart archive" in c for c in again["console"])
                                or again["html"].strip() == EMPTY_DOC or again["error"]):
                            ref, refused, row["reference_from"] = again, False, "CRLF copy"
                row["reference"] = "refused" if refused else "ok"
                row["reference_console"] = ref["console"][:10]
                d = details.get(f)
                url = kind = None
                if d:
                    row["message"] = d.get("id")
                    if d.get("html_url"):
                        url, kind = d["html_url"], "html"
                    elif d.get("text_url"):
                        url, kind = d["text_url"], "text"
                    elif d.get("image_url"):
                        url, kind = d["image_url"], "image"
                row["mailshelf"] = kind or ("no body" if d else "no message")
                base = os.path.join(args.out, "png", slug(name))
                if not refused:
                    with open(base + ".ref.png", "wb") as o:
                        o.write(ref["png"])
                if url:
                    sh = shoot(browser, urllib.parse.urljoin(shelf.base + "/", url), args.width, args.height,
                               args.settle, args.timeout)
                    with open(base + ".shelf.png", "wb") as o:
                        o.write(sh["png"])
                    shelf_img = rgb(sh["png"])
                    row["mailshelf_content_px"] = content_count(shelf_img, args.bg_tolerance)
                    row["mailshelf_console"] = sh["console"][:10]
                else:
                    shelf_img = np.full((args.height, args.width, 3), 255, dtype=np.int16)
                    row["mailshelf_content_px"] = 0
                if not refused:
                    share, n_content, n_equal, bg, diff = compare(rgb(ref["png"]), shelf_img,
                                                                 args.tolerance, args.bg_tolerance)
                    diff.save(base + ".diff.png")
                    row.update(equal_pct=round(share, 2), content_px=n_content, equal_px=n_equal,
                               background="#%02x%02x%02x" % tuple(int(x) for x in bg))
                rows.append(row)
                shown = f"{row['equal_pct']:.1f} %" if "equal_pct" in row else "–"
                print(f"{name}: reference {row['reference']}, mailshelf {row['mailshelf']}, {shown}", file=sys.stderr)
    finally:
        shelf.close()

    compared = [r for r in rows if "equal_pct" in r]
    refused = [r for r in rows if r["reference"] == "refused"]
    shares = [r["equal_pct"] for r in compared]
    summary = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mailshelf": binary,
        "chromium": subprocess.run([args.chromium, "--version"], capture_output=True, text=True).stdout.strip(),
        "window": [args.width, args.height], "settle_s": args.settle,
        "tolerance": args.tolerance, "bg_tolerance": args.bg_tolerance,
        "crlf_retry": args.crlf_retry,
        "files": len(rows), "compared": len(compared), "refused_by_chromium": len(refused),
        "compared_from_crlf_copy": sum(1 for r in rows if r.get("reference_from")),
        "refused_shown_by_mailshelf": sum(1 for r in refused if r["mailshelf_content_px"] > 0),
        "mean_equal_pct": round(sum(shares) / len(shares), 2) if shares else None,
        "min_equal_pct": min(shares) if shares else None,
    }
    with open(os.path.join(args.out, "results.json"), "w") as o:
        json.dump({"summary": summary, "pages": rows}, o, indent=1)
    md = render_md(summary, rows)
    with open(os.path.join(args.out, "results.md"), "w") as o:
        o.write(md)
    print(md)
    print(f"PNG pairs and diffs in {os.path.join(args.out, 'png')}", file=sys.stderr)

    failed = False
    if args.min_mean is not None and shares and summary["mean_equal_pct"] < args.min_mean:
        print(f"mean {summary['mean_equal_pct']} % is below {args.min_mean} %", file=sys.stderr)
        failed = True
    if args.min_page is not None:
        for r in compared:
            if r["equal_pct"] < args.min_page:
                print(f"{r['file']}: {r['equal_pct']} % is below {args.min_page} %", file=sys.stderr)
                failed = True
    return 1 if failed else 0


def render_md(summary: dict, rows: list[dict]) -> str:
    lines = ["| file | reference | mailshelf | content px | % equal |", "|---|---|---|---:|---:|"]
    for r in rows:
        pct = f"{r['equal_pct']:.1f}" if "equal_pct" in r else "–"
        ref = r["reference"] + (f" ({r['reference_from']})" if r.get("reference_from") else "")
        px = f"{r['content_px']:,}" if "content_px" in r else f"({r['mailshelf_content_px']:,} shown)"
        lines.append(f"| {r['file']} | {ref} | {r['mailshelf']} | {px} | {pct} |")
    s = summary
    lines += [
        "",
        f"Compared: {s['compared']} pages; mean {s['mean_equal_pct']} % equal content pixels, min {s['min_equal_pct']} %."
        + (f" References from a CRLF copy: {s['compared_from_crlf_copy']}." if s["crlf_retry"] else ""),
        f"Refused by Chromium (no reference): {s['refused_by_chromium']}, of which mailshelf shows something: "
        f"{s['refused_shown_by_mailshelf']}.",
        f"{s['chromium']}; window {s['window'][0]}x{s['window'][1]}; settle {s['settle_s']} s; "
        f"tolerance {s['tolerance']}, background tolerance {s['bg_tolerance']}.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
