#!/usr/bin/env python3
"""Make real Chrome saves (MHTML) of local test pages, as fixtures for the pixel comparison.

Real Chrome saves of popular sites hold things a hand-written MHTML file rarely does: stylesheets
fetched in CORS mode (`crossorigin="anonymous"`, often from a second origin), every `<style>`
element and every CSSOM-edited sheet written out as a stylesheet Chrome generated itself, in a part
with `Content-Location: cid:css-…@mhtml.blink` and no Content-ID that the page links as
`href="cid:css-…@mhtml.blink"`, shadow roots as `<template shadowmode="open">`, frames as
`cid:frame-…@mhtml.blink` parts, `srcset`/`<picture>` picks, CSS background images, and HTML in a
legacy charset declared only inside the page. Rather than copy third-party pages, this script
serves small pages that use each pattern from a local server and has headless Chromium save them
with the DevTools protocol's `Page.captureSnapshot` (format `mhtml`), the same serializer as
"Save page as… › Webpage, Single File".

What Chromium 156 writes, seen in these saves: `integrity` attributes are dropped and
`crossorigin` kept; `<img srcset>` becomes a plain `src` (the `src` attribute's image), while
`<picture><source srcset>` is kept with its URL as written (relative); `<style>` elements inside
shadow roots and constructed sheets in `adoptedStyleSheets` are lost (a `<link>` inside a shadow root
is kept); web fonts are not saved (the font bytes are gone from memory by the time the page is
serialized), so the pages that use them fall back to the next font in both renderings. A UTF-8 page
with no declaration at all is decoded as windows-1252 and saved with a windows-1252 `<meta>`: the
save keeps the mojibake the user saw, and a faithful rendering shows that same mojibake. The older
Chrome saves in ../shared/corpus/mhtml2html still carry `font/woff2` parts.

    python3 bench/chrome_saves.py                      # writes tests/fixtures/chrome-saves/*.mhtml
    python3 bench/chrome_saves.py --out DIR --only shadow

The pages are served under two made-up host names, `www.shelf-test.example` (the page) and
`cdn.shelf-test.example` (a second origin for CORS stylesheets and images, as GitHub's
githubassets.com), both mapped to the local server with Chromium's `--host-resolver-rules`, so the
saved URLs do not depend on the random port. HTML is sent as `text/html` with no charset parameter,
so the only declaration of a legacy charset is the one inside the page, and Chrome's save records
what it saw. Needs: Chromium, `pip install websocket-client pillow fonttools brotli` (fonttools and
brotli cut a small web font out of a DejaVu font in /usr/share/fonts).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import http.server
import io
import os
import re
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

WWW = "www.shelf-test.example"
CDN = "cdn.shelf-test.example"
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "tests", "fixtures", "chrome-saves")
FONT_DIR = "/usr/share/fonts/truetype/dejavu"


# -- resources ---------------------------------------------------------------------------------

def png(width: int, height: int, colors: list[tuple[int, int, int]], label: str = "") -> bytes:
    """A small PNG with coloured bands and a label: distinctive enough that a wrong or missing
    image shows in a pixel comparison."""
    from PIL import Image, ImageDraw
    img = Image.new("RGB", (width, height), colors[0])
    d = ImageDraw.Draw(img)
    band = max(1, width // len(colors))
    for i, c in enumerate(colors):
        d.rectangle([i * band, 0, (i + 1) * band - 1, height - 1], fill=c)
    d.ellipse([width // 4, height // 4, width * 3 // 4, height * 3 // 4], outline=(255, 255, 255), width=3)
    if label:
        d.text((6, 4), label, fill=(255, 255, 255))
    out = io.BytesIO()
    img.save(out, "PNG", optimize=True)
    return out.getvalue()


def jpeg(width: int, height: int, colors: list[tuple[int, int, int]]) -> bytes:
    """A small JPEG in coloured bands."""
    from PIL import Image, ImageDraw
    img = Image.new("RGB", (width, height), colors[0])
    d = ImageDraw.Draw(img)
    band = max(1, width // len(colors))
    for i, c in enumerate(colors):
        d.rectangle([i * band, 0, (i + 1) * band - 1, height - 1], fill=c)
    out = io.BytesIO()
    img.save(out, "JPEG", quality=90)
    return out.getvalue()


def gif(width: int, height: int, color: tuple[int, int, int]) -> bytes:
    """A small GIF of one colour with a white ring."""
    from PIL import Image, ImageDraw
    img = Image.new("RGB", (width, height), color)
    ImageDraw.Draw(img).ellipse([4, 4, width - 5, height - 5], outline=(255, 255, 255), width=3)
    out = io.BytesIO()
    img.save(out, "GIF")
    return out.getvalue()


def font(source: str, flavor: str | None) -> bytes:
    """ASCII subset of a DejaVu font, as TTF (flavor None) or WOFF2, a few KB."""
    from fontTools import subset
    opts = subset.Options()
    opts.flavor = flavor
    opts.layout_features = []
    opts.name_IDs = [1, 2]
    opts.notdef_outline = True
    opts.hinting = False
    f = subset.load_font(os.path.join(FONT_DIR, source), opts)
    s = subset.Subsetter(opts)
    s.populate(unicodes=range(0x20, 0x7F))
    s.subset(f)
    out = io.BytesIO()
    subset.save_font(f, out, opts)
    return out.getvalue()


def sri(data: bytes, alg: str = "sha384") -> str:
    return f"{alg}-" + base64.b64encode(hashlib.new(alg, data).digest()).decode()


SVG_ICON = b"""<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 32 32">
<circle cx="16" cy="16" r="14" fill="#e36209"/><path d="M9 16h14M16 9v14" stroke="#fff" stroke-width="4"/></svg>"""

LOREM = ("Saved pages should look exactly as the browser that saved them showed them. "
         "Every stylesheet, frame, font and image comes from the archive, never from the network. ")


def build_site() -> tuple[dict, list[str]]:
    """(routes, pages): routes maps (host, path) to (content type, bytes, extra headers);
    pages lists the page paths on WWW to save, in order."""
    r: dict[tuple[str, str], tuple[str, bytes, dict]] = {}

    def add(host, path, ctype, body, headers=None):
        r[(host, path)] = (ctype, body if isinstance(body, bytes) else body.encode(), headers or {})

    cors = {"Access-Control-Allow-Origin": "*"}
    pages: list[str] = []

    # 1. GitHub-like: CORS stylesheets with integrity from a second origin, an image and a
    #    script with crossorigin, a same-origin sheet with crossorigin too.
    avatar = png(80, 80, [(36, 41, 47), (88, 166, 255), (63, 185, 80)], "av")
    add(CDN, "/assets/avatar.png", "image/png", avatar, cors)
    primer = (
        "body{margin:0;font:14px/1.5 sans-serif;color:#1f2328;background:#f6f8fa}\n"
        ".header{background:#24292f;color:#fff;padding:16px 32px;display:flex;gap:24px;align-items:center}\n"
        ".header a{color:#fff;font-weight:bold;text-decoration:none}\n"
        ".layout{display:grid;grid-template-columns:280px 1fr;gap:24px;padding:24px 32px}\n"
        ".box{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:16px}\n"
        ".btn{display:inline-block;background:#1f883d;color:#fff;border-radius:6px;padding:5px 16px;font-weight:600}\n"
        ".btn-blue{background:#0969da}.label{background:#ddf4ff;color:#0969da;border-radius:2em;padding:0 8px}\n"
        "h1{font-size:26px;margin:0 0 8px}.avatar{border-radius:50%;vertical-align:middle}\n"
    ).encode()
    add(CDN, "/assets/primer-8f3a.css", "text/css", primer, cors)
    site = (
        ".readme{background:#fff url(icons/dots.png) repeat-x 0 0;padding-top:40px}\n"
        ".readme pre{background:#1f2328;color:#7ee787;padding:12px;border-radius:6px}\n"
        "table.files{width:100%;border-collapse:collapse}table.files td{border-top:1px solid #d0d7de;padding:6px 8px}\n"
        "table.files tr:nth-child(odd) td{background:#f6f8fa}\n"
    ).encode()
    add(CDN, "/assets/site-21c0.css", "text/css", site, cors)
    add(CDN, "/assets/icons/dots.png", "image/png", png(40, 24, [(9, 105, 218), (207, 34, 46)]), cors)
    app_js = b"document.documentElement.classList.add('js-ready');document.getElementById('stars').textContent='1,234 stars';"
    add(CDN, "/assets/app-77aa.js", "text/javascript", app_js, cors)
    local = b".sidebar li{padding:6px 0;border-bottom:1px solid #eaeef2}.sidebar ul{list-style:none;padding:0}\n"
    add(WWW, "/css/local.css", "text/css", local)
    rows = "".join(f"<tr><td>src/file_{i}.rs</td><td>Commit message number {i}</td><td>{i} days ago</td></tr>"
                   for i in range(1, 13))
    add(WWW, "/crossorigin-integrity.html", "text/html", f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>shelf/repo: a repository</title>
<link crossorigin="anonymous" media="all" integrity="{sri(primer, 'sha512')}" rel="stylesheet" href="http://{CDN}/assets/primer-8f3a.css">
<link crossorigin="anonymous" media="all" integrity="{sri(site)}" rel="stylesheet" href="http://{CDN}/assets/site-21c0.css">
<link crossorigin="anonymous" rel="stylesheet" href="/css/local.css">
<script crossorigin="anonymous" defer integrity="{sri(app_js, 'sha256')}" src="http://{CDN}/assets/app-77aa.js"></script>
</head><body>
<div class="header"><img class="avatar" crossorigin="anonymous" src="http://{CDN}/assets/avatar.png" width="32" height="32" alt="">
<a href="#">shelf</a> / <a href="#">repo</a> <span class="label">Public</span> <span id="stars">stars</span></div>
<div class="layout"><div class="box sidebar"><h3>About</h3><p>{LOREM}</p>
<ul><li>Readme</li><li>MIT license</li><li>Activity</li><li>42 watching</li></ul>
<span class="btn">Code</span> <span class="btn btn-blue">Star</span></div>
<div><div class="box"><table class="files">{rows}</table></div>
<div class="box readme"><h1>repo</h1><p>{LOREM * 2}</p><pre>cargo install repo\nrepo serve --listen 127.0.0.1:0</pre></div></div></div>
</body></html>""")
    pages.append("/crossorigin-integrity.html")

    # 2. CSSOM: rules inserted into an empty <style> (CSS-in-JS libraries do this) and into a
    #    linked same-origin sheet.
    add(WWW, "/css/base.css", "text/css", "body{font:16px sans-serif;margin:0}\n")
    add(WWW, "/cssom-insertrule.html", "text/html", f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>CSSOM insertRule</title>
<style data-styled="active"></style>
<link rel="stylesheet" href="/css/base.css">
<script>
const s = document.styleSheets[0];
s.insertRule('.sc-a{{background:#6f42c1;color:#fff;padding:24px 40px;font-size:28px}}', 0);
s.insertRule('.sc-b{{display:grid;grid-template-columns:repeat(3,1fr);gap:16px;padding:24px 40px}}', 1);
s.insertRule('.sc-c{{background:#fff8c5;border:3px solid #d4a72c;border-radius:12px;padding:20px;min-height:160px}}', 2);
s.insertRule('.sc-c:nth-child(2){{background:#dafbe1;border-color:#1a7f37}}', 3);
s.insertRule('@media (min-width: 800px){{.sc-c:nth-child(3){{background:#ffebe9;border-color:#cf222e}}}}', 4);
document.addEventListener('DOMContentLoaded', () => {{
  document.styleSheets[1].insertRule('body{{background:#0d1117;color:#e6edf3}}', 0);
}});
</script></head><body>
<div class="sc-a">Styled by rules inserted through the CSSOM</div>
<div class="sc-b"><div class="sc-c" style="color:#1f2328">{LOREM}</div><div class="sc-c" style="color:#1f2328">{LOREM}</div><div class="sc-c" style="color:#1f2328">{LOREM}</div></div>
<p style="padding:0 40px">{LOREM * 3}</p>
</body></html>""")
    pages.append("/cssom-insertrule.html")

    # 3. Constructed stylesheets adopted by the document.
    add(WWW, "/adopted-stylesheets.html", "text/html", f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>adoptedStyleSheets</title>
<script>
const a = new CSSStyleSheet();
a.replaceSync('body{{margin:0;font:18px/1.6 serif;background:#fdf6e3;color:#073642}} header{{background:#268bd2;color:#fff;padding:30px 48px;font:bold 32px sans-serif}}');
const b = new CSSStyleSheet();
b.replaceSync('.cards{{display:flex;gap:20px;padding:30px 48px}} .card{{flex:1;background:#eee8d5;border-left:10px solid #cb4b16;padding:16px;min-height:200px}} .card:nth-child(2){{border-color:#859900}}');
document.adoptedStyleSheets = [a, b];
</script></head><body>
<header>Constructed stylesheets in document.adoptedStyleSheets</header>
<div class="cards"><div class="card">{LOREM}</div><div class="card">{LOREM}</div><div class="card">{LOREM}</div></div>
<p style="padding:0 48px">{LOREM * 3}</p>
</body></html>""")
    pages.append("/adopted-stylesheets.html")

    # 4. Shadow DOM: a <style> inside an attached shadow root, an adopted sheet in a shadow root,
    #    a <link> stylesheet in a shadow root, slots, and a declarative shadow root in the markup.
    #    Chrome writes each shadow root as <template shadowmode="open"> (not the standard
    #    shadowrootmode), keeps the <link> and drops the <style> and adopted sheets.
    add(WWW, "/css/widget.css", "text/css",
        ".w{background:#fff1e5;border:4px dashed #bc4c00;padding:18px;font:bold 19px sans-serif;color:#762c00}\n")
    add(WWW, "/shadow-dom.html", "text/html", f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Shadow DOM</title>
<style>body{{margin:0;padding:24px;font:16px sans-serif;background:#eef}}</style>
<script>
customElements.define('x-card', class extends HTMLElement {{
  constructor() {{
    super();
    const root = this.attachShadow({{mode: 'open'}});
    root.innerHTML = '<style>:host{{display:block;margin:0 0 20px}} .c{{background:#0a3069;color:#fff;border-radius:14px;padding:24px;font-size:20px}} ::slotted(b){{color:#ffd33d}}</style><div class="c"><slot></slot></div>';
  }}
}});
customElements.define('x-badge', class extends HTMLElement {{
  constructor() {{
    super();
    const root = this.attachShadow({{mode: 'open'}});
    const s = new CSSStyleSheet();
    s.replaceSync('span{{display:inline-block;background:#bf3989;color:#fff;padding:10px 24px;border-radius:30px;font:bold 22px sans-serif;margin:0 10px 20px 0}}');
    root.adoptedStyleSheets = [s];
    root.innerHTML = '<span><slot></slot></span>';
  }}
}});
customElements.define('x-linked', class extends HTMLElement {{
  constructor() {{
    super();
    this.attachShadow({{mode: 'open'}}).innerHTML = '<link rel="stylesheet" href="/css/widget.css"><div class="w"><slot></slot></div>';
  }}
}});
</script></head><body>
<x-linked>Shadow root with a linked stylesheet</x-linked>
<x-card><b>Shadow root</b> with a style element inside. {LOREM}</x-card>
<x-badge>adopted in shadow</x-badge><x-badge>second badge</x-badge>
<div><template shadowrootmode="open"><style>p{{background:#1a7f37;color:#fff;padding:20px;border-radius:6px}}</style><p><slot></slot></p></template>Declarative shadow root. {LOREM}</div>
<p>{LOREM * 4}</p>
</body></html>""")
    pages.append("/shadow-dom.html")

    # 5. Same-origin frames: a framed page with its own stylesheet and image, a nested frame,
    #    and a srcdoc frame.
    add(WWW, "/frames/frame.css", "text/css", "body{margin:0;background:#ddf4ff;font:15px sans-serif;padding:12px}h2{color:#0969da}\n")
    add(WWW, "/frames/pic.png", "image/png", png(160, 90, [(250, 120, 40), (40, 120, 250), (40, 200, 90)], "frame"))
    add(WWW, "/frames/inner.html", "text/html", f"""<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="stylesheet" href="frame.css">
<style>body{{background:#fff8c5}}</style></head><body><h2>Nested frame</h2><p>{LOREM}</p></body></html>""")
    add(WWW, "/frames/a.html", "text/html", f"""<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="stylesheet" href="frame.css"></head>
<body><h2>Framed page</h2><img src="pic.png" width="160" height="90" alt=""><p>{LOREM}</p>
<iframe src="inner.html" width="420" height="160" style="border:2px solid #bf8700"></iframe></body></html>""")
    add(WWW, "/iframes.html", "text/html", f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Frames</title>
<style>body{{margin:0;padding:24px;font:16px sans-serif;background:#f6f8fa}} iframe{{border:3px solid #0969da;display:block;margin:0 0 20px}}</style>
</head><body><h1>A page with frames</h1>
<iframe src="/frames/a.html" width="700" height="460"></iframe>
<iframe srcdoc="&lt;style&gt;body{{background:#ffebe9;color:#82071e;font:bold 20px sans-serif}}&lt;/style&gt;&lt;p&gt;A srcdoc frame&lt;/p&gt;" width="700" height="120"></iframe>
<p>{LOREM * 2}</p></body></html>""")
    pages.append("/iframes.html")

    # 6. Web fonts: WOFF2 and TTF from @font-face in an external sheet (relative URLs) and in a
    #    <style> element.
    add(WWW, "/fonts/shelfmono.woff2", "font/woff2", font("DejaVuSansMono-BoldOblique.ttf", "woff2"))
    add(WWW, "/fonts/shelfserif.ttf", "font/ttf", font("DejaVuSerifCondensed-BoldItalic.ttf", None))
    add(WWW, "/css/fonts.css", "text/css",
        "@font-face{font-family:'Shelf Mono';src:url(../fonts/shelfmono.woff2) format('woff2');font-display:block}\n"
        ".mono{font-family:'Shelf Mono',cursive;font-size:30px;color:#8250df}\n")
    add(WWW, "/web-fonts.html", "text/html", f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Web fonts</title>
<link rel="stylesheet" href="/css/fonts.css">
<style>@font-face{{font-family:ShelfSerif;src:url("/fonts/shelfserif.ttf") format("truetype");font-display:block}}
body{{margin:0;padding:32px;background:#fff}} .serif{{font-family:ShelfSerif,fantasy;font-size:34px;color:#9a6700}}</style>
</head><body>
<p class="mono">The quick brown fox jumps over the lazy dog 0123456789</p>
<p class="serif">Pack my box with five dozen liquor jugs. {LOREM}</p>
<p class="mono" style="font-size:22px">{LOREM}</p>
<p class="serif" style="font-size:24px">{LOREM * 2}</p>
</body></html>""")
    pages.append("/web-fonts.html")

    # 7. Responsive images: srcset with x and w descriptors, <picture> with <source> per media
    #    and type.
    for name, cols in {"x1": [(207, 34, 46)], "x2": [(9, 105, 218)], "w400": [(26, 127, 55)],
                       "w800": [(130, 80, 223)], "wide": [(191, 135, 0), (9, 105, 218)],
                       "narrow": [(36, 41, 47)], "fallback": [(110, 119, 129)]}.items():
        add(WWW, f"/img/{name}.png", "image/png", png(400, 200, cols + [(255, 255, 255)], name))
    add(WWW, "/srcset-picture.html", "text/html", """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>srcset and picture</title>
<style>body{margin:0;padding:24px;font:16px sans-serif;background:#fff} img{display:block;margin:0 0 16px}</style>
</head><body><h1>Responsive images</h1>
<img src="/img/fallback.png" srcset="/img/x1.png 1x, /img/x2.png 2x" width="400" height="200" alt="x descriptors">
<img src="/img/fallback.png" srcset="/img/w400.png 400w, /img/w800.png 800w" sizes="(min-width: 1000px) 400px, 100vw" width="400" height="200" alt="w descriptors">
<picture><source media="(max-width: 600px)" srcset="/img/narrow.png"><source type="image/png" media="(min-width: 601px)" srcset="/img/wide.png">
<img src="/img/fallback.png" width="400" height="200" alt="picture"></picture>
</body></html>""")
    pages.append("/srcset-picture.html")

    # 8. Background images from CSS: an external sheet in another folder (relative url()), an
    #    @import-ed sheet, a <style> element, a style attribute, image-set(), SVG, several layers.
    add(WWW, "/static/bg/stripes.png", "image/png", png(60, 60, [(255, 140, 0), (255, 215, 0), (0, 160, 0)]))
    add(WWW, "/static/bg/tile.png", "image/png", png(48, 48, [(80, 0, 160), (200, 0, 120)]))
    add(WWW, "/static/bg/icon.svg", "image/svg+xml", SVG_ICON)
    add(WWW, "/static/bg/hero.png", "image/png", png(600, 150, [(0, 90, 160), (0, 140, 200), (0, 190, 240)], "hero"))
    add(WWW, "/static/css/imported.css", "text/css", ".imported{background:url('../bg/tile.png');color:#fff;padding:30px;font-size:22px}\n")
    add(WWW, "/static/css/backgrounds.css", "text/css",
        "@import url(imported.css);\n"
        ".hero{height:150px;background:url(../bg/hero.png) no-repeat center/cover;color:#fff;font:bold 30px sans-serif;padding:20px}\n"
        ".icons{height:64px;background:url(\"../bg/icon.svg\") repeat-x 0 0/32px 32px, linear-gradient(90deg,#ffd8b5,#b6e3ff)}\n")
    add(WWW, "/css-backgrounds.html", "text/html", """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>CSS backgrounds</title>
<link rel="stylesheet" href="/static/css/backgrounds.css">
<style>body{margin:0;font:16px sans-serif} .stripes{height:120px;background-image:url(/static/bg/stripes.png)}
.set{height:100px;background-image:image-set(url(/static/bg/tile.png) 1x, url(/static/bg/hero.png) 2x)}</style>
</head><body>
<div class="hero">A hero image from an external stylesheet</div>
<div class="imported">From an @import-ed stylesheet</div>
<div class="stripes"></div><div class="icons"></div><div class="set"></div>
<div style="height:140px;background:#222 url('/static/bg/hero.png') no-repeat 40px 20px / 300px 75px"></div>
</body></html>""")
    pages.append("/css-backgrounds.html")

    # 9-12. Legacy charsets, declared only in the page (the header carries no charset).
    ru = ("Сохранённые страницы должны выглядеть так же, как их показал браузер. "
          "Съешь же ещё этих мягких французских булок, да выпей чаю. ")
    add(WWW, "/koi8r-http-equiv.html", "text/html", f"""<html><head>
<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">
<title>Библиотека: кодировка KOI8-R</title></head>
<body bgcolor="#ffffff" text="#000000"><h1>Библиотека Максима Мошкова</h1>
<table width="100%" cellpadding="8"><tr><td bgcolor="#ffe0c0"><b>Раздел:</b> {ru}</td>
<td bgcolor="#c0e0ff">{ru}</td></tr></table>
<pre>{ru}</pre><p><font size="+2">{ru * 2}</font></p><p>{ru * 3}</p>
</body></html>""".encode("koi8-r"))
    pages.append("/koi8r-http-equiv.html")

    uk = ("Збережені сторінки мають виглядати саме так, як їх показав браузер. "
          "Чуєш їх, доцю, га? Кумедна ж ти, прощайся без ґольфів! ")
    add(WWW, "/css/news-1251.css", "text/css",
        ".lead::before{content:'Головне: ';color:#cf222e;font-weight:bold}\n"
        ".top{background:#004b87;color:#ffd500;padding:18px 32px;font:bold 28px sans-serif}\n".encode("windows-1251"))
    add(WWW, "/css/news-charset.css", "text/css",
        "@charset \"windows-1251\";\n.tag::after{content:' — новини';color:#1a7f37}\n".encode("windows-1251"))
    add(WWW, "/windows-1251-meta-charset.html", "text/html", f"""<!DOCTYPE html>
<html lang="uk"><head><meta charset=windows-1251><title>Новини: кодування windows-1251</title>
<link rel="stylesheet" href="/css/news-1251.css"><link rel="stylesheet" href="/css/news-charset.css">
<style>body{{margin:0;font:17px/1.5 serif}} main{{padding:20px 32px}} h2{{border-bottom:3px solid #004b87}}</style>
</head><body><div class="top">Українські новини</div><main>
<h2 class="tag">Сьогодні</h2><p class="lead">{uk}</p><p>{uk * 2}</p>
<h2 class="tag">Вчора</h2><p class="lead">{uk}</p><p>{uk * 3}</p></main>
</body></html>""".encode("windows-1251"))
    pages.append("/windows-1251-meta-charset.html")

    ja = "保存したページは、保存したブラウザが表示したとおりに見えるべきです。ｶﾀｶﾅ半角。"
    add(WWW, "/shift-jis.html", "text/html", f"""<!DOCTYPE html>
<html lang="ja"><head><meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">
<title>シフトJISのページ</title>
<style>body{{margin:0;padding:24px;font:18px sans-serif;background:#fffbe6}} h1{{color:#bc002d}}</style>
</head><body><h1>ニュース Shift_JIS page</h1><p>{ja * 3}</p><p>Latin text after the Japanese: {LOREM}</p>
<p>{ja * 5}</p></body></html>""".encode("shift_jis"))
    pages.append("/shift-jis.html")

    # No declaration at all: UTF-8 bytes, no <meta>, no charset in the header.
    add(WWW, "/utf8-undeclared.html", "text/html", f"""<html><head><title>Undeclared UTF-8</title></head>
<body style="font:18px sans-serif;padding:24px"><h1>Crème brûlée — naïve café</h1>
<p>{ru}</p><p>Ελληνικά: Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. Żółć gęślą jaźń.</p><p>{LOREM * 3}</p>
</body></html>""".encode("utf-8"))
    pages.append("/utf8-undeclared.html")

    # 13. Several patterns at once, as on a large site: a CORS sheet with integrity whose url()s
    #     point back at the CDN, a web font from the CDN (CORS), CSS-in-JS rules, a shadow-DOM
    #     widget and an SVG logo.
    add(CDN, "/fonts/brand.woff2", "font/woff2", font("DejaVuSerif-Bold.ttf", "woff2"), cors)
    add(CDN, "/img/logo.svg", "image/svg+xml", SVG_ICON, cors)
    add(CDN, "/img/banner.png", "image/png", png(900, 120, [(220, 0, 70), (240, 120, 0), (250, 200, 0)], "banner"), cors)
    brand = (
        f"@font-face{{font-family:Brand;src:url(http://{CDN}/fonts/brand.woff2) format('woff2');font-display:block}}\n"
        "body{margin:0;background:#111;color:#eee;font:16px/1.5 sans-serif}\n"
        f".nav{{background:#e50914 url(http://{CDN}/img/logo.svg) no-repeat 16px center;padding:16px 16px 16px 64px;font:bold 24px Brand,serif}}\n"
        f".banner{{height:120px;background:url(/img/banner.png?cdn) center/cover}}\n"
        ".grid{display:grid;grid-template-columns:repeat(4,1fr);gap:12px;padding:20px}\n"
        ".tile{background:#2a2a2a;border-radius:8px;height:150px;padding:12px}\n"
    ).encode()
    add(CDN, "/css/brand-5b1d.css", "text/css", brand, cors)
    add(CDN, "/img/banner.png?cdn", "image/png", r[(CDN, "/img/banner.png")][1], cors)
    tiles = "".join(f'<div class="tile">Title {i}<br>{LOREM[:60]}</div>' for i in range(1, 9))
    add(WWW, "/large-site.html", "text/html", f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>A large site</title>
<link rel="stylesheet" crossorigin="anonymous" integrity="{sri(brand)}" href="http://{CDN}/css/brand-5b1d.css">
<link rel="preconnect" href="http://{CDN}" crossorigin>
<style id="jss"></style>
<script>
document.getElementById('jss').sheet.insertRule('.tile:nth-child(3n){{background:#1f6feb;color:#fff}}', 0);
document.getElementById('jss').sheet.insertRule('.tile:nth-child(4n){{background:#8250df;color:#fff}}', 1);
customElements.define('x-promo', class extends HTMLElement {{
  constructor() {{ super(); this.attachShadow({{mode:'open'}}).innerHTML =
    '<style>div{{margin:0 20px;padding:16px;background:linear-gradient(90deg,#e50914,#f0a500);color:#111;font:bold 20px sans-serif;border-radius:8px}}</style><div><slot></slot></div>'; }}
}});
</script></head><body>
<div class="nav">Brand streaming</div>
<div class="banner"></div>
<div class="grid">{tiles}</div>
<x-promo>Shadow-DOM promotion box</x-promo>
</body></html>""")
    pages.append("/large-site.html")

    # 14. Pictures placed with <object data> and <embed src> rather than <img>: raster images and
    #     SVG, with and without a type= attribute, sized by the element or by the picture; the
    #     fallback content of an <object> is what a browser shows only when the data does not load.
    add(WWW, "/media/chart.png", "image/png", png(240, 160, [(26, 127, 55), (9, 105, 218), (191, 135, 0)], "chart"))
    add(WWW, "/media/photo.jpg", "image/jpeg", jpeg(200, 120, [(200, 60, 30), (250, 190, 60)]))
    add(WWW, "/media/small.gif", "image/gif", gif(48, 48, (130, 80, 223)))
    add(WWW, "/media/logo.svg", "image/svg+xml", SVG_ICON)
    add(WWW, "/object-embed-images.html", "text/html", """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Pictures in object and embed</title>
<style>body{margin:0;padding:24px;font:16px sans-serif;background:#fff} p{margin:0 0 16px}</style>
</head><body><h1>Pictures in object and embed</h1>
<p><object data="/media/chart.png" width="240" height="160" title="Sales chart">The chart did not load.</object></p>
<p><object data="/media/logo.svg" type="image/svg+xml" width="96" height="96">The logo did not load.</object>
<embed src="/media/logo.svg" width="48" height="48"></p>
<p><embed src="/media/photo.jpg" type="image/jpeg" width="200" height="120"></p>
<p><object data="/media/small.gif" type="image/gif">The picture did not load.</object></p>
</body></html>""")
    pages.append("/object-embed-images.html")
    return r, pages


# -- the server --------------------------------------------------------------------------------

def serve(routes: dict) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            host = (self.headers.get("Host") or "").split(":")[0]
            entry = routes.get((host, self.path))
            if self.path == "/favicon.ico":
                self.send_response(204)
                self.end_headers()
                return
            if entry is None:
                self.send_error(404)
                return
            ctype, body, headers = entry
            self.send_response(200)
            self.send_header("Content-Type", ctype)  # deliberately without a charset
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT, help="where the .mhtml files go (default tests/fixtures/chrome-saves)")
    ap.add_argument("--only", help="save only pages whose path contains this")
    ap.add_argument("--chromium", default=os.environ.get("MAILSHELF_CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--height", type=int, default=1600)
    args = ap.parse_args()

    routes, pages = build_site()
    srv = serve(routes)
    port = srv.server_address[1]
    rules = f"--host-resolver-rules=MAP {WWW} 127.0.0.1:{port}, MAP {CDN} 127.0.0.1:{port}"
    os.makedirs(args.out, exist_ok=True)
    failures = 0
    with cdp.Browser(args.chromium, [rules]) as b:
        for path in pages:
            if args.only and args.only not in path:
                continue
            page = b.new_page(args.width, args.height)
            res = page.load(f"http://{WWW}{path}", settle=1.0)
            if res["error"] or not res["loaded"]:
                print(f"{path}: did not load: {res}", file=sys.stderr)
                failures += 1
                page.close()
                continue
            mhtml = page.snapshot_mhtml()
            page.close()
            # Blink writes the text as a JS string of bytes in the latin-1 range already; the
            # archive itself is ASCII with 8-bit parts quoted-printable or base64 encoded.
            data = mhtml.encode("latin-1") if all(ord(c) < 256 for c in mhtml) else mhtml.encode("utf-8")
            name = re.sub(r"\.html$", ".mhtml", path.lstrip("/"))
            dest = os.path.join(args.out, name)
            with open(dest, "wb") as f:
                f.write(data)
            parts = data.count(b"\r\nContent-Location: ")
            print(f"{name}: {len(data):,} bytes, {parts} parts" + (f"; console: {res['console']}" if res["console"] else ""))
    srv.shutdown()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
