#!/usr/bin/env python3
"""Generate a realistic, deterministic email archive for benchmarks.

    python3 bench/gen_archive.py --count 100000 --seed 1 \
        --maildir OUT/Maildir --mbox OUT/archive.mbox

Writes the SAME messages (byte for byte, once mboxrd escaping is undone) as a Maildir
(cur/, new/, tmp/) and as one mboxrd file. Python 3.11 standard library only.

Message mix (shares of all messages; see README.md for the full description):

    structure                       share   notes
    text/plain                      45 %    often a reply with a quoted parent
    multipart/alternative           26 %    text + HTML; list mail gets newsletter-sized HTML
    multipart/related               7 %     HTML + 1-4 inline PNGs referenced by cid:
    multipart/mixed + attachments   13 %    PDF-like, CSV, PNG, ICS; RFC 2231 / 2047 names
    forwarded (message/rfc822)      6 %     40 % of them forward an earlier archive message verbatim
    multipart/signed (PGP)          3 %     text/plain + application/pgp-signature
    + ~0.05 % of all messages carry a ~0.6-1.2 MB attachment (the long tail)

    charsets (text parts): utf-8 66 %, us-ascii 8 %, iso-8859-1 9 %, windows-1252 7 %,
                           iso-2022-jp 5 %, koi8-r 5 %
    ~40 % of messages reply to an earlier one (In-Reply-To / References, depth varies)
    ~1 % have no Message-ID; ~0.5 % reuse an earlier Message-ID with different content
    ~25 % are mailing-list messages (List-Id, List-Unsubscribe, Precedence)
    Maildir: the newest ~1 % are in new/ (no info suffix); cur/ names carry ",S=size:2,FLAGS"
    (about 2 % of cur/ names carry no ":2," suffix, as some delivery tools leave them).

Deterministic for a given --seed and --count.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import os
import random
import re
import struct
import sys
import time
import urllib.parse
import zlib

# --------------------------------------------------------------------------------------------
# Vocabularies
# --------------------------------------------------------------------------------------------

EN_WORDS = (
    "the of and to in is that for it as with was on be by this are or from at which have an not "
    "they but all we can were there one been if more when will would who so no out up into has "
    "them some could time these two may then do first any now such like our over only new also "
    "after most made many before must through back years where much your way well down should "
    "because each just those people how too good very make world still see own work long get "
    "here between both life being under never same another know while last might great old year "
    "off come since against go came right used take three states himself few house use during "
    "without again place around however home small found thought went say part once general high "
    "upon school every does got united left number course war until always away something fact "
    "though water less public put think almost hand enough far took head yet government system "
    "better set told nothing night end why called didn't eyes find going look asked later knew "
    "meeting report budget quarter release deadline draft review update schedule invoice customer "
    "server database deploy config build test branch merge patch issue ticket roadmap proposal "
    "contract agenda minutes follow-up attached please thanks regards team project launch metrics "
    "feedback design spec migration backup storage network latency throughput cluster incident"
).split()

FR_WORDS = (
    "le la les de des du un une et à en que qui dans pour pas sur au avec ce il elle nous vous "
    "être avoir fait été très plus où même après déjà réunion prévue année équipe problème "
    "société développement réponse numéro début côté général été hôtel français élève fenêtre "
    "garçon leçon reçu façon déçu noël naïve cœur sœur œuvre tâche forêt château mère père "
    "frère première dernière deuxième intéressant réservé"
).split()

DE_WORDS = (
    "der die das und ist nicht ein eine zu den mit von auf für sich dem im es an auch als wie "
    "bei aus nach wird oder über schön Grüße Straße Größe Mädchen Bücher Tür für möchte "
    "Änderung Überweisung Rechnung Bestätigung Frühstück Gebäude Lösung Prüfung Vorschläge "
    "Besprechung Unterlagen Rückmeldung größer können müssen würde hätte wäre natürlich"
).split()

ES_WORDS = (
    "el la los las de del y en que un una por con para es su al lo como más pero sus le ya "
    "año mañana señor niño español reunión información según también después días además "
    "país través próximo última sólo aquí allí está están había título educación canción"
).split()

RU_WORDS = (
    "и в не на я что тот быть с он а весь это как она по но они к у мы этот из за свой так "
    "же от сказать вы который мочь человек о один еще бы такой только себя какой когда уже "
    "для вот кто да год знать мой до или если время рука нет самый ни стать большой даже "
    "другой наш собрание отчёт проект сервер договор счёт встреча неделя вопрос ответ письмо "
    "спасибо пожалуйста сегодня завтра вчера работа команда документ таблица"
).split()

JA_PHRASES = [
    "お世話になっております。", "会議の資料を確認しました。", "よろしくお願いいたします。",
    "来週の打ち合わせについてご連絡します。", "添付のファイルをご確認ください。",
    "本日はありがとうございました。", "予定を調整させていただきます。", "見積書を送付いたします。",
    "担当者に確認して折り返しご連絡いたします。", "先日の件について報告します。",
    "システムの更新作業を予定しています。", "ご不明な点がございましたらお知らせください。",
    "東京", "大阪", "会議室", "議事録", "締め切り", "進捗", "開発", "営業部", "品質", "試験",
    "今月末までに提出をお願いします。", "引き続きよろしくお願いします。", "承知しました。",
]

EMOJI = ["🙂", "👍", "🎉", "🚀", "✅", "📎", "😅", "🙏", "☕", "📅"]

FIRST_EN = "James Mary John Patricia Robert Jennifer Michael Linda David Elizabeth William Susan Richard Jessica Joseph Sarah Thomas Karen Chris Nancy Daniel Lisa Paul Betty Mark Sandra Anna Kevin Laura Brian".split()
LAST_EN = "Smith Johnson Williams Brown Jones Garcia Miller Davis Wilson Anderson Taylor Thomas Moore Jackson Martin Lee Thompson White Harris Clark Lewis Walker Hall Young Allen King Wright Scott Green Baker".split()
NAMES_FR = ["Élodie Lefèvre", "François Dupré", "Hélène Bézier", "Jérôme Crépin", "Zoë Mercier", "Benoît Lemaître", "Anaïs Côté", "Gaël Ménard"]
NAMES_DE = ["Jürgen Müller", "Björn Schäfer", "Käthe Weiß", "Günther Groß", "Sören Köhler", "Dörte Bär", "Uwe Hößl", "Anja Krüger"]
NAMES_ES = ["José Núñez", "María Peña", "Iñigo Pérez", "Sofía Martínez", "Ángel Gómez", "Lucía Fernández"]
NAMES_RU = ["Алексей Иванов", "Мария Смирнова", "Дмитрий Кузнецов", "Ольга Попова", "Сергей Соколов", "Наталья Лебедева"]
NAMES_JA = ["山田 太郎", "佐藤 花子", "鈴木 一郎", "高橋 美咲", "田中 健", "渡辺 直子"]

DOMAINS = [
    "example.com", "example.org", "example.net", "acme-corp.example", "globex.example",
    "initech.example", "mail.example.de", "firma.example.de", "societe.example.fr",
    "empresa.example.es", "kompaniya.example.ru", "kaisha.example.jp", "uni-lab.example.edu",
    "bigmail.example", "freemail.example.net",
]
LISTS = [
    ("dev", "dev.lists.example.org", "Developer discussion"),
    ("announce", "announce.lists.example.org", "Release announcements"),
    ("users", "users.lists.example.org", "User help and questions"),
    ("infra-alerts", "alerts.ops.example.net", "Infrastructure alerts"),
    ("newsletter", "news.globex.example", "Globex Weekly"),
    ("kernel-patches", "patches.lists.example.org", "Patch review"),
    ("rust-de", "rust-de.lists.example.de", "Deutschsprachige Rust-Liste"),
]
MAILERS = [
    "Mozilla Thunderbird 115.6.0", "Microsoft Outlook 16.0", "Apple Mail (2.3774.300.61.1.2)",
    "Mutt/2.2.12 (2023-09-09)", "Evolution 3.50.2", "Roundcube Webmail/1.6.5",
    "K-9 Mail for Android", "Claws Mail 4.2.0", "aerc 0.16.0", "Sylpheed 3.7.0",
]
RELAYS = [
    "mx1.example.net", "mx2.example.net", "smtp.bigmail.example", "relay.acme-corp.example",
    "mail-out.globex.example", "lists.example.org", "smtp-gw.initech.example", "filter.example.com",
    "mta03.freemail.example.net", "in.mail.example.de",
]
TZ = ["+0000", "+0100", "+0200", "-0500", "-0800", "+0900", "+0300", "-0400", "+0530", "-0700"]
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
SUBJECT_EN = [
    "Quarterly report draft", "Meeting notes", "Re-scheduling tomorrow's call", "Invoice",
    "Build failure on main", "Release candidate", "Question about the API", "Lunch?",
    "Conference travel", "Contract renewal", "Server maintenance window", "Patch review",
    "Design proposal", "Weekly update", "Budget for next year", "Customer escalation",
    "Onboarding checklist", "Holiday schedule", "Security advisory", "Database migration plan",
]
SUBJECT_FR = ["Réunion de l'équipe", "Compte-rendu de la réunion", "Facture n°", "Congés d'été", "Problème réseau"]
SUBJECT_DE = ["Besprechung nächste Woche", "Rechnung März", "Änderungen am Entwurf", "Grüße aus München", "Rückmeldung zum Angebot"]
SUBJECT_ES = ["Reunión del próximo lunes", "Información del proyecto", "Factura de año", "Canción para la fiesta"]
SUBJECT_RU = ["Отчёт за неделю", "Встреча завтра", "Договор и счёт", "Вопрос по проекту"]
SUBJECT_JA = ["会議の資料について", "見積書の送付", "来週の打ち合わせ", "議事録の共有", "システム更新のお知らせ"]

# language -> (onsets, vowels, codas, vocabulary size) for synthetic words
SYLLABLES = {
    "en": ("b c d f g h k l m n p r s t v w br cr dr fl gr pl pr sh st th tr ch sp".split(),
           "a e i o u ea ou io ai ee".split(), ["", "", "n", "r", "s", "t", "l", "nd", "st", "ng", "ck", "ment", "tion"], 40000),
    "fr": ("b c d f g l m n p r s t v ch tr pr gr".split(), "a e i o u é è ê à ou oi eu".split(),
           ["", "", "s", "t", "r", "x", "ment", "tion", "ière", "é"], 15000),
    "de": ("b d f g h k l m n p r s t w z sch st pf kr br".split(), "a e i o u ä ö ü ei au ie".split(),
           ["", "", "n", "r", "s", "t", "ß", "ung", "keit", "lich", "en", "er"], 15000),
    "es": ("b c d f g l m n p r s t v ch ll br tr pr".split(), "a e i o u á é í ó ú ue ia".split(),
           ["", "", "s", "n", "r", "l", "ción", "dad", "mente", "ñ"], 15000),
    "ru": ("б в г д ж з к л м н п р с т ф х ц ч ш щ ст пр кр".split(), "а е и о у ы э ю я ё".split(),
           ["", "", "н", "т", "й", "ь", "ость", "ние", "ский", "ть"], 15000),
}

# language -> (words or phrases, names, subjects, "no spaces" flag)
LANG = {
    "en": (EN_WORDS, None, SUBJECT_EN, False),
    "fr": (FR_WORDS, NAMES_FR, SUBJECT_FR, False),
    "de": (DE_WORDS, NAMES_DE, SUBJECT_DE, False),
    "es": (ES_WORDS, NAMES_ES, SUBJECT_ES, False),
    "ru": (RU_WORDS, NAMES_RU, SUBJECT_RU, False),
    "ja": (JA_PHRASES, NAMES_JA, SUBJECT_JA, True),
}

# charset -> (python codec, languages it can carry)
CHARSETS = {
    "utf-8": ("utf-8", ["en", "en", "en", "fr", "de", "es", "ru", "ja"]),
    "us-ascii": ("ascii", ["en"]),
    "iso-8859-1": ("latin-1", ["fr", "de", "es"]),
    "windows-1252": ("cp1252", ["fr", "de", "es", "en"]),
    "iso-2022-jp": ("iso2022_jp", ["ja"]),
    "koi8-r": ("koi8_r", ["ru"]),
}
CHARSET_WEIGHTS = [("utf-8", 66), ("us-ascii", 8), ("iso-8859-1", 9), ("windows-1252", 7),
                   ("iso-2022-jp", 5), ("koi8-r", 5)]

# structure -> share (percent)
STRUCTURES = [("plain", 45), ("alternative", 26), ("related", 7), ("mixed", 13),
              ("forward", 6), ("signed", 3)]

BIG_SHARE = 0.0005        # messages with a ~1 MB attachment
NO_ID_SHARE = 0.01
DUP_ID_SHARE = 0.005
REPLY_SHARE = 0.40
LIST_SHARE = 0.25
NEW_SHARE = 0.01          # newest messages left in new/
FROM_LINE_SHARE = 0.03    # bodies with a line starting "From " (mbox escaping)
GT_FROM_SHARE = 0.005     # bodies with a line starting ">From " (mboxrd double escaping)

# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def weighted(rng: random.Random, pairs):
    """Precomputes a picker over (value, weight) pairs."""
    values = [v for v, _ in pairs]
    cum = []
    acc = 0
    for _, w in pairs:
        acc += w
        cum.append(acc)
    return values, cum


def pick(rng: random.Random, table):
    values, cum = table
    return rng.choices(values, cum_weights=cum)[0]


def wrap_words(words, width=72, sep=" "):
    lines, cur, n = [], [], 0
    for w in words:
        add = len(w) + (len(sep) if cur else 0)
        if cur and n + add > width:
            lines.append(sep.join(cur))
            cur, n = [w], len(w)
        else:
            cur.append(w)
            n += add
    if cur:
        lines.append(sep.join(cur))
    return "\n".join(lines)


def make_png(w: int, h: int, seed: int, noisy: bool) -> bytes:
    """A real, valid RGB PNG: a gradient (compresses well) or noise (does not)."""
    r = random.Random(seed)
    rows = []
    c1 = (r.randrange(256), r.randrange(256), r.randrange(256))
    for y in range(h):
        if noisy:
            row = r.randbytes(w * 3)
        else:
            row = bytes(((c1[0] + x * 3) & 255, (c1[1] + y * 5) & 255, (c1[2] + x + y) & 255)[k]
                        for x in range(w) for k in range(3))
        rows.append(b"\x00" + row)
    raw = b"".join(rows)

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def b64_lines(data: bytes) -> bytes:
    return base64.encodebytes(data)


def qp(data: bytes) -> bytes:
    out = binascii.b2a_qp(data, quotetabs=False, istext=True, header=False)
    # A lone "." or a line starting "From " is fine for QP; make sure the part ends with a newline.
    return out if out.endswith(b"\n") else out + b"\n"


def rfc2047(text: str, charset: str, codec: str, q: bool = False) -> str:
    """Encoded-words for a header value, split on characters so each word decodes alone."""
    if all(ord(c) < 128 for c in text):
        return text
    words = []
    step = 12 if codec != "iso2022_jp" else 8
    for i in range(0, len(text), step):
        chunk = text[i:i + step].encode(codec, "replace")
        if q:
            enc = binascii.b2a_qp(chunk, header=True).decode("ascii").replace("?", "=3F").replace("=\n", "")
            words.append(f"=?{charset}?Q?{enc}?=")
        else:
            words.append(f"=?{charset}?B?{base64.b64encode(chunk).decode('ascii')}?=")
    return "\n ".join(words)


def rfc2231_param(name: str, value: str, rng: random.Random) -> str:
    """filename*=utf-8''… (continued as filename*0*=…; filename*1*=… when long)."""
    enc = urllib.parse.quote(value.encode("utf-8"), safe="")
    if len(enc) <= 60 or rng.random() < 0.5:
        return f"{name}*=utf-8''{enc}"
    pieces = []
    i = 0
    n = 0
    while i < len(enc):
        j = min(i + 40, len(enc))
        if j < len(enc):  # never split a %XX escape
            if enc[j - 1] == "%":
                j -= 1
            elif enc[j - 2] == "%":
                j -= 2
        part = enc[i:j]
        pieces.append(f"{name}*{n}*=" + ("utf-8''" if n == 0 else "") + part)
        i = j
        n += 1
    return ";\n\t".join(pieces)


# --------------------------------------------------------------------------------------------
# The generator
# --------------------------------------------------------------------------------------------


class Generator:
    def __init__(self, seed: int, count: int, documents: str | None = None):
        self.rng = random.Random(seed)
        self.count = count
        # With --documents: every message carries one document of about 200 KB.
        self.documents = documents
        self.stats = {
            "structure": {}, "charset": {}, "cte": {}, "replies": 0, "max_thread_depth": 0,
            "no_message_id": 0, "duplicate_message_id": 0, "list_messages": 0, "big": 0,
            "forward_verbatim": 0, "attachments": 0, "rfc2231_names": 0, "inline_images": 0,
            "from_lines": 0,
        }
        r = self.rng
        self.struct_table = weighted(r, STRUCTURES)
        self.charset_table = weighted(r, CHARSET_WEIGHTS)
        # Vocabularies: the common words above, then synthetic words, drawn with Zipf frequencies,
        # so the text has a realistic long tail of rare words (it matters to a full-text index).
        self.vocab = {}
        for lang, (words, _, _, nospace) in LANG.items():
            if nospace:
                continue
            on, vo, co, size = SYLLABLES[lang]
            vocab = list(dict.fromkeys(words))
            seen = set(vocab)
            r.shuffle(vocab)
            while len(vocab) < size:
                w = "".join(r.choice(on) + r.choice(vo) for _ in range(r.choice((1, 1, 2, 2, 2, 3)))) + r.choice(co)
                if w not in seen:
                    seen.add(w)
                    vocab.append(w)
            cum, acc = [], 0.0
            for rank in range(len(vocab)):
                acc += (rank + 2.7) ** -1.1
                cum.append(acc)
            self.vocab[lang] = (vocab, cum)
        # Binary pools.
        self.noise = r.randbytes(3 * 1024 * 1024)
        self.pngs_small = [make_png(r.randint(8, 48), r.randint(8, 48), r.randrange(1 << 30), False)
                           for _ in range(16)]
        self.pngs_small_b64 = [b64_lines(p) for p in self.pngs_small]
        self.pngs_photo = [make_png(r.randint(40, 110), r.randint(30, 80), r.randrange(1 << 30), True)
                           for _ in range(8)]
        self.pngs_photo_b64 = [b64_lines(p) for p in self.pngs_photo]
        self.pgp_sig_b64 = [base64.encodebytes(r.randbytes(566)).decode("ascii") for _ in range(16)]
        # Threads and ids.
        self.recent = []          # (message_id, references list, subject, depth, from, lang, first para)
        self.all_ids = []         # sample of message ids, for duplicates
        self.forwardable = []     # bytes of recent simple messages
        self.t = 1451606400       # 2016-01-01
        self.mean_gap = 8 * 365 * 86400 / max(count, 1)
        self.seq = 0

    # ---- small pieces --------------------------------------------------------------------

    def person(self, lang: str):
        r = self.rng
        names = LANG[lang][1]
        if names and r.random() < 0.7:
            name = r.choice(names)
            local = "user" + str(r.randrange(1000))
        else:
            f, l = r.choice(FIRST_EN), r.choice(LAST_EN)
            name = f"{f} {l}"
            local = f"{f.lower()}.{l.lower()}" if r.random() < 0.7 else f"{f[0].lower()}{l.lower()}{r.randrange(100)}"
        return name, f"{local}@{r.choice(DOMAINS)}"

    def addr_header(self, name: str, addr: str, charset: str, codec: str) -> str:
        r = self.rng
        if r.random() < 0.08:
            return addr
        if all(ord(c) < 128 for c in name):
            if r.random() < 0.1:
                last, first = name.split(" ", 1)[::-1] if " " in name else (name, "")
                return f'"{last}, {first}" <{addr}>'
            return f"{name} <{addr}>"
        cs, cd = (charset, codec) if self.can_encode(name, codec) else ("utf-8", "utf-8")
        return f"{rfc2047(name, cs, cd, q=r.random() < 0.4)} <{addr}>"

    @staticmethod
    def can_encode(text: str, codec: str) -> bool:
        try:
            text.encode(codec)
            return True
        except UnicodeEncodeError:
            return False

    def date_str(self, t: int, tz: str) -> str:
        sign = 1 if tz[0] == "+" else -1
        off = sign * (int(tz[1:3]) * 3600 + int(tz[3:5]) * 60)
        tm = time.gmtime(t + off)
        s = f"{DAYS[tm.tm_wday]}, {tm.tm_mday:02d} {MONTHS[tm.tm_mon - 1]} {tm.tm_year} {tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d} {tz}"
        if self.rng.random() < 0.1:
            s += " (UTC)" if tz == "+0000" else ""
        return s

    def received_chain(self, t: int, to_addr: str) -> list[str]:
        r = self.rng
        hops = r.randint(2, 5)
        out = []
        tt = t + hops * r.randint(1, 20)
        for i in range(hops):
            frm = r.choice(RELAYS)
            by = r.choice(RELAYS)
            ip = f"{r.choice(['192.0.2', '198.51.100', '203.0.113'])}.{r.randint(1, 254)}"
            qid = "".join(r.choice("0123456789ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(12))
            proto = r.choice(["ESMTPS", "ESMTP", "ESMTPSA", "LMTP"])
            tls = " (version=TLS1_3 cipher=TLS_AES_256_GCM_SHA384 bits=256/256)" if proto.startswith("ESMTPS") else ""
            line = (f"Received: from {frm} ({frm} [{ip}])\n\tby {by} (Postfix){tls} with {proto} id {qid}"
                    f"\n\tfor <{to_addr}>; {self.date_str(tt, '+0000')}")
            out.append(line)
            tt -= r.randint(1, 20)
        return out

    def dkim(self, domain: str, t: int) -> str:
        r = self.rng
        bh = base64.b64encode(r.randbytes(32)).decode()
        b = base64.b64encode(r.randbytes(256)).decode()
        bfold = "\n\t ".join(b[i:i + 70] for i in range(0, len(b), 70))
        return (f"DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d={domain};\n\ts=s{r.randint(1, 4)}{2016 + r.randrange(9)};"
                f" t={t}; h=from:to:subject:date:message-id:mime-version:content-type;\n\tbh={bh};\n\tb={bfold}")

    def new_id(self, domain: str, t: int) -> str:
        r = self.rng
        style = r.randrange(3)
        if style == 0:
            return f"<{t}.{r.randrange(1 << 32):08x}@{domain}>"
        if style == 1:
            return f"<{r.randrange(1 << 64):016X}.{r.randrange(1 << 20)}@mail.{domain}>"
        u = r.randrange(1 << 128)
        h = f"{u:032x}"
        return f"<{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}@{domain}>"

    def token(self) -> str:
        """A one-off token of the kind real mail is full of: ids, versions, hosts, URLs, amounts."""
        r = self.rng
        k = r.randrange(8)
        if k == 0:
            return f"#{r.randrange(100000)}"
        if k == 1:
            return f"{r.choice(['INC', 'JIRA', 'OPS', 'BUG', 'PR'])}-{r.randrange(1, 60000)}"
        if k == 2:
            return f"v{r.randrange(10)}.{r.randrange(30)}.{r.randrange(100)}"
        if k == 3:
            return f"{r.choice(['db', 'web', 'app', 'cache', 'build'])}{r.randrange(1, 40):02d}.{r.choice(DOMAINS)}"
        if k == 4:
            return f"https://{r.choice(DOMAINS)}/{r.choice(EN_WORDS)}/{r.randrange(1 << 24):x}"
        if k == 5:
            return f"{r.randrange(1, 100000) / 100:.2f}"
        if k == 6:
            return f"{r.randrange(1 << 40):010x}"
        return f"{r.randint(2016, 2024)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"

    def para(self, lang: str) -> str:
        r = self.rng
        if lang == "ja":
            text = "".join(r.choices(JA_PHRASES, k=r.randint(3, 12)))
            return "\n".join(text[i:i + 36] for i in range(0, len(text), 36))
        vocab, cum = self.vocab[lang]
        n = r.randint(10, 75)
        ws = r.choices(vocab, cum_weights=cum, k=n)
        for _ in range(r.choice((0, 0, 1, 1, 2))):
            ws[r.randrange(n)] = self.token()
        ws[0] = ws[0].capitalize()
        k = r.randint(7, 15)
        while k < n:
            ws[k - 1] += "."
            ws[k] = ws[k].capitalize()
            k += r.randint(7, 15)
        ws[-1] += "."
        return wrap_words(ws)

    def text(self, lang: str, charset: str, npara: int) -> str:
        r = self.rng
        paras = [self.para(lang) for _ in range(npara)]
        if charset == "windows-1252" and lang == "en":
            paras[0] = paras[0].replace(". ", "… ", 1) + " “Thanks” – €" + str(r.randint(10, 999))
        elif charset == "utf-8" and lang == "en" and r.random() < 0.3:
            paras[-1] += " " + r.choice(EMOJI)
        return "\n\n".join(paras)

    def text_part(self, text: str, charset: str, codec: str, subtype: str = "plain", cte: str | None = None,
                  extra: str = "") -> bytes:
        """A leaf text part: headers + encoded body (bytes ending in a newline)."""
        r = self.rng
        data = text.encode(codec, "replace")
        if cte is None:
            if codec == "ascii":
                cte = "7bit" if subtype == "plain" or r.random() < 0.5 else "quoted-printable"
            elif codec == "iso2022_jp":
                cte = "7bit" if r.random() < 0.85 else "base64"
            elif codec == "utf-8":
                x = r.random()
                cte = "8bit" if x < 0.35 else ("quoted-printable" if x < 0.75 else "base64")
            elif codec in ("latin-1", "cp1252"):
                x = r.random()
                cte = "quoted-printable" if x < 0.6 else ("8bit" if x < 0.9 else "base64")
            else:  # koi8-r
                x = r.random()
                cte = "8bit" if x < 0.5 else ("base64" if x < 0.8 else "quoted-printable")
            if subtype == "html" and cte in ("8bit", "7bit") and r.random() < 0.6:
                cte = "quoted-printable"
        st = self.stats["cte"]
        st[cte] = st.get(cte, 0) + 1
        if cte == "base64":
            body = b64_lines(data)
        elif cte == "quoted-printable":
            body = qp(data)
        else:
            body = data if data.endswith(b"\n") else data + b"\n"
        flowed = "; format=flowed" if subtype == "plain" and r.random() < 0.15 else ""
        head = (f"Content-Type: text/{subtype}; charset={charset if r.random() < 0.7 else chr(34) + charset + chr(34)}{flowed}\n"
                f"Content-Transfer-Encoding: {cte}\n{extra}\n")
        return head.encode("ascii") + body

    def html_of(self, text: str, lang: str, newsletter: bool, cids=(), charset: str = "utf-8") -> str:
        r = self.rng
        paras = text.split("\n\n")
        body = []
        if newsletter:
            body.append('<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" '
                        'style="background:#f4f4f7;font-family:Helvetica,Arial,sans-serif">')
            for i, p in enumerate(paras):
                inner = p.replace("\n", " ")
                body.append(f'<tr><td class="content-block" style="padding:12px 24px;font-size:15px;line-height:22px;color:#333333">'
                            f'<h2 style="margin:0 0 8px;font-size:18px;color:#1a1a1a">Section {i + 1}</h2>'
                            f'<p style="margin:0">{inner}</p>'
                            f'<a href="https://news.globex.example/r/{r.randrange(1 << 40):x}?utm_source=newsletter&amp;utm_medium=email" '
                            f'style="color:#0b63ce;text-decoration:underline">Read more</a></td></tr>')
            body.append('<tr><td style="padding:24px;font-size:12px;color:#888">You are receiving this because you subscribed. '
                        '<a href="https://news.globex.example/unsubscribe">Unsubscribe</a></td></tr></table>')
            body.append(f'<img src="https://news.globex.example/open/{r.randrange(1 << 40):x}.gif" width="1" height="1" alt="">')
        else:
            for p in paras:
                body.append("<p>" + p.replace("\n", " ").replace("&", "&amp;").replace("<", "&lt;") + "</p>")
        for cid in cids:
            body.append(f'<p><img src="cid:{cid}" alt="image" style="max-width:100%"></p>')
        lang_attr = {"en": "en", "fr": "fr", "de": "de", "es": "es", "ru": "ru", "ja": "ja"}[lang]
        return ('<!DOCTYPE html>\n<html lang="' + lang_attr + '"><head><meta http-equiv="Content-Type" content="text/html; charset=' + charset + '">'
                '<style>body{margin:0;padding:0} p{margin:0 0 1em}</style></head>\n<body>\n<div dir="ltr">\n'
                + "\n".join(body) + "\n</div>\n</body></html>\n")

    def boundary(self) -> str:
        r = self.rng
        style = r.randrange(4)
        if style == 0:
            return f"----=_Part_{r.randrange(1 << 20)}_{r.randrange(1 << 31)}.{r.randrange(1 << 40)}"
        if style == 1:
            return f"=_{r.randrange(1 << 128):032x}"
        if style == 2:
            return f"000000000000{r.randrange(1 << 48):012x}"
        return f"Apple-Mail=_{r.randrange(1 << 128):032X}"

    def multipart(self, subtype: str, parts: list[bytes], params: str = "", preamble: bool = False) -> bytes:
        b = self.boundary()
        out = [f'Content-Type: multipart/{subtype};{params}\n\tboundary="{b}"\n\n'.encode("ascii")]
        if preamble:
            out.append(b"This is a multi-part message in MIME format.\n\n")
        sep = f"--{b}\n".encode("ascii")
        for p in parts:
            out.append(sep)
            out.append(p)
        out.append(f"--{b}--\n".encode("ascii"))
        return b"".join(out)

    # ---- attachments -----------------------------------------------------------------------

    def filename(self, base: str, ext: str) -> tuple[str, str]:
        """(Content-Type name param, Content-Disposition filename param)."""
        r = self.rng
        x = r.random()
        if x < 0.72:
            name = f"{base}.{ext}"
            return f'name="{name}"', f'filename="{name}"'
        non_ascii = r.choice(["Rechnung März", "Übersicht Größe", "résumé équipe", "presupuesto año",
                              "отчёт за неделю", "見積書", "議事録 第3回", "naïve café – menu",
                              "Änderungsvorschläge zum Vertrag Entwurf Version zwei endgültig"])
        name = f"{non_ascii} {base[-4:]}.{ext}"
        if x < 0.9:
            self.stats["rfc2231_names"] += 1
            return f'name="{base}.{ext}"', rfc2231_param("filename", name, r)
        # Non-standard but common: RFC 2047 inside a quoted parameter.
        enc = rfc2047(name, "utf-8", "utf-8").replace("\n ", "")
        return f'name="{enc}"', f'filename="{enc}"'

    def attachment(self, big: bool = False) -> bytes:
        r = self.rng
        self.stats["attachments"] += 1
        kind = r.choices(["pdf", "csv", "png", "photo", "ics", "zip"], [35, 20, 15, 15, 5, 10])[0]
        if big:
            kind = r.choice(["pdf", "zip", "photo"])
        if kind == "csv":
            rows = ["date,account,description,amount,currency"]
            for i in range(r.randint(10, 400)):
                rows.append(f"2023-{r.randint(1, 12):02d}-{r.randint(1, 28):02d},{r.randrange(10000, 99999)},"
                            f"\"{r.choice(EN_WORDS)} {r.choice(EN_WORDS)}\",{r.randrange(1, 1000000) / 100:.2f},EUR")
            data = ("\n".join(rows) + "\n").encode()
            tn, fn = self.filename(f"export-{r.randrange(1000):03d}", "csv")
            cte = r.choice(["base64", "quoted-printable", "7bit"])
            body = b64_lines(data) if cte == "base64" else (qp(data) if cte == "quoted-printable" else data)
            return (f"Content-Type: text/csv; charset=utf-8; {tn}\nContent-Disposition: attachment; {fn}\n"
                    f"Content-Transfer-Encoding: {cte}\n\n").encode() + body
        if kind == "ics":
            data = (f"BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//Example//Calendar//EN\nMETHOD:REQUEST\nBEGIN:VEVENT\n"
                    f"UID:{r.randrange(1 << 64):x}@example.com\nDTSTART:2024{r.randint(1, 12):02d}{r.randint(1, 28):02d}T100000Z\n"
                    f"DTEND:2024{r.randint(1, 12):02d}{r.randint(1, 28):02d}T110000Z\nSUMMARY:{r.choice(SUBJECT_EN)}\n"
                    f"END:VEVENT\nEND:VCALENDAR\n").encode()
            return (b"Content-Type: text/calendar; charset=utf-8; method=REQUEST; name=\"invite.ics\"\n"
                    b"Content-Disposition: attachment; filename=\"invite.ics\"\nContent-Transfer-Encoding: base64\n\n"
                    + b64_lines(data))
        if kind == "png":
            i = r.randrange(len(self.pngs_small))
            tn, fn = self.filename(f"screenshot-{r.randrange(100)}", "png")
            return (f"Content-Type: image/png; {tn}\nContent-Disposition: attachment; {fn}\n"
                    f"Content-Transfer-Encoding: base64\n\n").encode() + self.pngs_small_b64[i]
        if kind == "photo" and not big:
            i = r.randrange(len(self.pngs_photo))
            tn, fn = self.filename(f"IMG_{r.randrange(10000):04d}", "png")
            return (f"Content-Type: image/png; {tn}\nContent-Disposition: attachment; {fn}\n"
                    f"Content-Transfer-Encoding: base64\n\n").encode() + self.pngs_photo_b64[i]
        # pdf / zip / big: header + a slice of noise, heavy-tailed size.
        if big:
            size = r.randint(600_000, 1_200_000)
        else:
            size = min(int(r.lognormvariate(8.6, 1.1)), 900_000)   # median ~5.4 KB, mean ~10 KB
        off = r.randrange(0, len(self.noise) - size)
        if kind == "pdf":
            head = (f"%PDF-1.{r.randint(3, 7)}\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
                    f"2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n4 0 obj\n<< /Length {size} /Filter /FlateDecode >>\nstream\n").encode("latin-1")
            data = head + self.noise[off:off + size] + b"\nendstream\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"
            mime = r.choice(["application/pdf", "application/pdf", "application/octet-stream"])
            tn, fn = self.filename(f"report-{2016 + r.randrange(9)}-Q{r.randint(1, 4)}", "pdf")
        elif kind == "photo":
            data = self.pngs_photo[0][:33] + self.noise[off:off + size]
            mime = "image/png"
            tn, fn = self.filename(f"IMG_{r.randrange(10000):04d}", "png")
        else:
            data = b"PK\x03\x04" + self.noise[off:off + size]
            mime = "application/zip"
            tn, fn = self.filename(f"archive-{r.randrange(1000)}", "zip")
        disp = "attachment" if r.random() < 0.95 else "inline"
        return (f"Content-Type: {mime}; {tn}\nContent-Disposition: {disp}; {fn}\n"
                f"Content-Transfer-Encoding: base64\n\n").encode() + b64_lines(data)

    # ---- documents (--documents) -----------------------------------------------------------

    def doc_lines(self, n: int) -> list[str]:
        """`n` lines of about 90 characters of English words and figures."""
        vocab, cum = self.vocab["en"]
        r = self.rng
        lines = []
        for _ in range(n):
            words = r.choices(vocab, cum_weights=cum, k=14)
            if r.random() < 0.3:
                words.append(f"{r.randrange(100, 99999)}.{r.randrange(100):02d}")
            lines.append(" ".join(words)[:95])
        return lines

    def pdf_document(self, pages: int, picture: bool, text: bool = True) -> bytes:
        """A PDF of `pages` pages of text (55 lines of about 90 characters each, Helvetica,
        compressed content streams; none without `text`), and with `picture` a picture on its first
        page that brings it to about 200 KB."""
        r = self.rng
        objects = ["<< /Type /Catalog /Pages 2 0 R >>", None,
                   "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"]
        streams = {}
        kids = []
        for page in range(pages):
            lines = "".join("(" + l.replace("\\", "").replace("(", "").replace(")", "") + ") Tj T*\n"
                            for l in self.doc_lines(55)) if text else ""
            content = ("BT /F1 10 Tf 12 TL 56 780 Td\n" + lines + "ET\n") if text else ""
            if picture and page == 0:
                content += "q 300 0 0 200 56 40 cm /Im1 Do Q\n"
            objects.append(None)
            streams[len(objects)] = (b"<< /Filter /FlateDecode", zlib.compress(content.encode("latin-1"), 6))
            content_id = len(objects)
            resources = "<< /Font << /F1 3 0 R >> /XObject << /Im1 IMG 0 R >> >>" if picture and page == 0 \
                else "<< /Font << /F1 3 0 R >> >>"
            objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents {content_id} 0 R /Resources {resources} >>")
            kids.append(f"{len(objects)} 0 R")
        objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {pages} >>"
        if picture:
            used = sum(len(v[1]) for v in streams.values()) + 2000
            size = max(200_000 - used, 10_000)
            off = r.randrange(0, len(self.noise) - size)
            objects.append(None)
            streams[len(objects)] = (b"<< /Type /XObject /Subtype /Image /Width 400 /Height %d /ColorSpace /DeviceGray "
                                     b"/BitsPerComponent 8 /Filter /FlateDecode" % (size // 400),
                                     zlib.compress(self.noise[off:off + size], 1))
            image_id = len(objects)
            objects = [o.replace("IMG", str(image_id)) if o else o for o in objects]
        out = bytearray(b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
        offsets = []
        for n, o in enumerate(objects, start=1):
            offsets.append(len(out))
            if n in streams:
                head, data = streams[n]
                out += b"%d 0 obj\n%s /Length %d >>\nstream\n" % (n, head, len(data)) + data + b"\nendstream\nendobj\n"
            else:
                out += f"{n} 0 obj\n{o}\nendobj\n".encode("latin-1")
        xref = len(out)
        out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
        for o in offsets:
            out += f"{o:010d} 00000 n \n".encode()
        out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
        return bytes(out)

    def docx_document(self, paragraphs: int) -> bytes:
        """A Word document of `paragraphs` paragraphs of text (and a table), with a picture that
        brings it to about 200 KB."""
        import io
        import zipfile
        from xml.sax.saxutils import escape
        r = self.rng
        paras = []
        lines = self.doc_lines(paragraphs * 4)
        for i in range(paragraphs):
            text = escape(" ".join(lines[i * 4:i * 4 + 4]))
            paras.append(f"<w:p><w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>")
        rows = "".join(f"<w:tr><w:tc><w:p><w:r><w:t>{escape(a)}</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>{r.randrange(1, 9999)}.{r.randrange(100):02d}</w:t></w:r></w:p></w:tc></w:tr>"
                       for a in self.doc_lines(12))
        document = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
                    '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
                    + "".join(paras) + f"<w:tbl>{rows}</w:tbl></w:body></w:document>")
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                       '<Default Extension="xml" ContentType="application/xml"/><Default Extension="png" ContentType="image/png"/>'
                       '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>')
            z.writestr("_rels/.rels", '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                       '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>')
            z.writestr("word/document.xml", document)
            used = buf.tell() + 2000
            size = max(200_000 - used, 10_000)
            off = r.randrange(0, len(self.noise) - size)
            z.writestr(zipfile.ZipInfo("word/media/image1.png"), self.noise[off:off + size], compress_type=zipfile.ZIP_STORED)
        return buf.getvalue()

    def hostile_documents(self) -> list[tuple[str, str, bytes]]:
        """Documents made to cost: a Word file inflating to 80 MiB of markup, a PDF of 3,000 pages,
        a PDF whose one content stream inflates to 100 MiB, a picture-only PDF, a damaged PDF;
        made once, reused."""
        if getattr(self, "_hostile", None) is None:
            import io
            import zipfile
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("[Content_Types].xml", "<Types/>")
                with z.open("word/document.xml", "w", force_zip64=True) as w:
                    w.write(b"<w:document><w:body><w:p><w:r><w:t>bomb</w:t></w:r></w:p>")
                    filler = b"<w:bookmarkStart/>" * 65536
                    for _ in range((80 << 20) // len(filler)):
                        w.write(filler)
            bomb = buf.getvalue()
            many = self.pdf_document(3000, False)
            inflating = self.pdf_document(1, False)
            huge = zlib.compress(b" " * (100 << 20), 9)
            at = inflating.index(b"trailer")
            inflating = inflating.replace(b"/Contents 4 0 R", b"/Contents [4 0 R 6 0 R]")
            inflating = inflating[:at] + b"6 0 obj\n<< /Filter /FlateDecode /Length %d >>\nstream\n" % len(huge) + huge + b"\nendstream\nendobj\n" + inflating[at:]
            picture = self.pdf_document(1, True, text=False)
            damaged = many[: len(many) // 3]
            self._hostile = [
                ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "bomb.docx", bomb),
                ("application/pdf", "manual-3000-pages.pdf", many),
                ("application/pdf", "inflating.pdf", inflating),
                ("application/pdf", "scan.pdf", picture),
                ("application/pdf", "damaged.pdf", damaged),
            ]
        return self._hostile

    def document(self) -> bytes:
        """A ~200 KB attachment of the kind --documents asks for: a PDF of 3-8 pages of text with a
        picture, a Word document of as much text with a picture, either (`mixed`), or a PDF of 75
        pages of dense text (`pdf-dense`, about 200 KB of compressed text alone)."""
        r = self.rng
        kind = self.documents
        if kind == "hostile":
            self.stats["documents"] = self.stats.get("documents", 0) + 1
            mime, name, data = self.hostile_documents()[self.stats["documents"] % 5]
            return (f"Content-Type: {mime}; name=\"{name}\"\nContent-Disposition: attachment; filename=\"{name}\"\n"
                    f"Content-Transfer-Encoding: base64\n\n").encode() + b64_lines(data)
        if kind == "mixed":
            kind = r.choice(["pdf", "docx"])
        self.stats["documents"] = self.stats.get("documents", 0) + 1
        n = self.rng.randrange(1_000_000)
        if kind == "pdf":
            data, mime, name = self.pdf_document(r.randint(3, 8), True), "application/pdf", f"order-{n}.pdf"
        elif kind == "pdf-dense":
            data, mime, name = self.pdf_document(75, False), "application/pdf", f"manual-{n}.pdf"
        else:
            data = self.docx_document(r.randint(40, 100))
            mime, name = "application/vnd.openxmlformats-officedocument.wordprocessingml.document", f"contract-{n}.docx"
        self.stats["document_bytes"] = self.stats.get("document_bytes", 0) + len(data)
        return (f"Content-Type: {mime}; name=\"{name}\"\nContent-Disposition: attachment; filename=\"{name}\"\n"
                f"Content-Transfer-Encoding: base64\n\n").encode() + b64_lines(data)

    # ---- whole messages --------------------------------------------------------------------

    def body_text(self, lang, charset, parent, from_name):
        r = self.rng
        text = self.text(lang, charset, r.choices([1, 2, 3, 4, 6, 10], [25, 32, 23, 11, 6, 3])[0])
        if r.random() < FROM_LINE_SHARE:
            text += "\n\nFrom what I can tell, this is settled.\n"
            self.stats["from_lines"] += 1
        if r.random() < GT_FROM_SHARE:
            text += "\n\n>From the previous archive:\n>>From an even older one\n"
            self.stats["from_lines"] += 1
        if parent is not None and r.random() < 0.8:
            pid, prefs, psubj, pdepth, pfrom, plang, ppara = parent
            quoted = "\n".join("> " + ln if ln else ">" for ln in ppara.split("\n"))
            text += f"\n\nOn {r.choice(DAYS)}, {pfrom} wrote:\n{quoted}\n"
        if r.random() < 0.6:
            text += f"\n\n-- \n{from_name}\n{r.choice(['Senior Engineer', 'Account Manager', 'CTO', 'Support', 'Team Lead'])}\n"
        return text

    def leaf_body(self, structure, lang, charset, codec, text, newsletter):
        """The body entity (headers from Content-Type on) for a structure."""
        r = self.rng
        if structure == "plain":
            return self.text_part(text, charset, codec)
        if structure == "signed":
            # Signed parts must survive 7-bit transport unchanged.
            if codec == "iso2022_jp":
                cte = "7bit"
            elif codec == "ascii":
                cte = r.choice(["7bit", "quoted-printable"])
            else:
                cte = r.choice(["quoted-printable", "base64"])
            inner = self.text_part(text, charset, codec, cte=cte)
            sig = (b"Content-Type: application/pgp-signature; name=\"signature.asc\"\nContent-Description: OpenPGP digital signature\n"
                   b"Content-Disposition: attachment; filename=\"signature.asc\"\n\n-----BEGIN PGP SIGNATURE-----\n\n"
                   + r.choice(self.pgp_sig_b64).encode() + b"=" + base64.b64encode(r.randbytes(3)) + b"\n-----END PGP SIGNATURE-----\n")
            return self.multipart("signed", [inner, sig], params=' micalg=pgp-sha256; protocol="application/pgp-signature";')
        if structure == "alternative":
            hcs, hcd = (charset, codec) if codec != "iso2022_jp" else ("utf-8", "utf-8")
            html = self.html_of(text, lang, newsletter, charset=hcs)
            return self.multipart("alternative", [self.text_part(text, charset, codec),
                                                  self.text_part(html, hcs, hcd, "html")])
        if structure == "related":
            n = r.randint(1, 4)
            cids = [f"part{i}.{r.randrange(1 << 32):08X}.{r.randrange(1 << 32):08X}@example.com" for i in range(n)]
            hcs, hcd = (charset, codec) if codec != "iso2022_jp" else ("utf-8", "utf-8")
            html = self.html_of(text, lang, newsletter, cids, charset=hcs)
            imgs = []
            for i, cid in enumerate(cids):
                k = r.randrange(len(self.pngs_small))
                self.stats["inline_images"] += 1
                imgs.append((f"Content-Type: image/png; name=\"image{i + 1:03d}.png\"\nContent-Transfer-Encoding: base64\n"
                             f"Content-ID: <{cid}>\nContent-Disposition: inline; filename=\"image{i + 1:03d}.png\"\n\n").encode()
                            + self.pngs_small_b64[k])
            related = self.multipart("related", [self.text_part(html, hcs, hcd, "html")] + imgs, params=' type="text/html";')
            if r.random() < 0.6:
                return self.multipart("alternative", [self.text_part(text, charset, codec), related])
            return related
        raise ValueError(structure)

    def message(self, i: int) -> tuple[bytes, int, str]:
        """One message: (bytes, unix time, envelope sender)."""
        r = self.rng
        st = self.stats
        self.t += int(r.expovariate(1 / self.mean_gap)) + 1
        t = self.t
        structure = pick(r, self.struct_table)
        big = r.random() < BIG_SHARE
        if self.documents:
            structure, big = "document", False
        if big:
            structure = "mixed"
            st["big"] += 1
        st["structure"][structure] = st["structure"].get(structure, 0) + 1
        charset = pick(r, self.charset_table)
        codec, langs = CHARSETS[charset]
        lang = r.choice(langs)
        st["charset"][charset] = st["charset"].get(charset, 0) + 1

        # Thread.
        parent = None
        if self.recent and r.random() < REPLY_SHARE:
            # Prefer recent messages, which makes some threads deep.
            k = len(self.recent) - 1 - min(int(r.expovariate(1 / 40)), len(self.recent) - 1)
            parent = self.recent[k]
            if parent[0] is None:
                parent = None
        from_name, from_addr = self.person(lang)
        to_name, to_addr = self.person(lang)
        domain = from_addr.split("@")[1]
        if parent is not None:
            pid, prefs, psubj, pdepth, pfrom, plang, ppara = parent
            subject = psubj if psubj.startswith(("Re: ", "RE: ", "AW: ")) else r.choice(["Re: ", "Re: ", "RE: ", "AW: "]) + psubj
            refs = (prefs + [pid])[-12:]
            depth = pdepth + 1
            st["replies"] += 1
            st["max_thread_depth"] = max(st["max_thread_depth"], depth)
            lang_subject = subject
        else:
            subject = r.choice(LANG[lang][2])
            if r.random() < 0.5:
                subject += f" #{r.randrange(10000)}"
            refs, depth = [], 0
            lang_subject = subject
        if not self.can_encode(lang_subject, codec):
            lang_subject = lang_subject.encode(codec, "replace").decode(codec)

        # Message-ID.
        x = r.random()
        if x < NO_ID_SHARE:
            mid = None
            st["no_message_id"] += 1
        elif x < NO_ID_SHARE + DUP_ID_SHARE and self.all_ids:
            mid = r.choice(self.all_ids)
            st["duplicate_message_id"] += 1
        else:
            mid = self.new_id(domain, t)
            if len(self.all_ids) < 50000 or r.random() < 0.05:
                self.all_ids.append(mid)

        is_list = r.random() < LIST_SHARE
        lst = r.choice(LISTS) if is_list else None
        if is_list:
            st["list_messages"] += 1

        # Body.
        text = self.body_text(lang, charset, parent, from_name)
        newsletter = is_list and lst[0] == "newsletter"
        if newsletter and structure == "plain":
            structure_used = "alternative"
        else:
            structure_used = structure
        if structure_used in ("plain", "signed", "alternative", "related"):
            body = self.leaf_body(structure_used, lang, charset, codec, text, newsletter)
        elif structure_used == "document":
            parts = [self.leaf_body("plain", lang, charset, codec, text, False), self.document()]
            body = self.multipart("mixed", parts)
        elif structure_used == "mixed":
            sub = r.choice(["plain", "plain", "alternative"])
            parts = [self.leaf_body(sub, lang, charset, codec, text, False)]
            for _ in range(r.choices([1, 2, 3, 5], [70, 20, 7, 3])[0]):
                parts.append(self.attachment())
            if big:
                parts.append(self.attachment(big=True))
            body = self.multipart("mixed", parts, preamble=r.random() < 0.5)
        else:  # forward
            if self.forwardable and r.random() < 0.4:
                inner = r.choice(self.forwardable)
                st["forward_verbatim"] += 1
            else:
                inner = self.external_message(t - r.randint(3600, 86400 * 30))
            note = self.text_part(self.text(lang, charset, 1) + "\n\nSee the forwarded message below.\n", charset, codec)
            fwd_name = re.sub(rb"[^A-Za-z0-9 ]", b"", inner[inner.find(b"Subject: ") + 9:][:40].split(b"\n")[0]).decode() or "message"
            enc_part = (f"Content-Type: message/rfc822; name=\"{fwd_name}.eml\"\nContent-Disposition: attachment; filename=\"{fwd_name}.eml\"\n"
                        f"Content-Transfer-Encoding: {'8bit' if any(c > 127 for c in inner[:2000]) else '7bit'}\n\n").encode() + inner
            body = self.multipart("mixed", [note, enc_part], preamble=r.random() < 0.5)
            if not subject.startswith(("Fwd: ", "Re: ")):
                subject = "Fwd: " + subject
                lang_subject = "Fwd: " + lang_subject

        # Headers.
        h = []
        h.append(f"Return-Path: <{from_addr}>")
        h.append(f"Delivered-To: {to_addr}")
        h.extend(self.received_chain(t, to_addr))
        if r.random() < 0.7:
            h.append(f"Authentication-Results: {r.choice(RELAYS)};\n\tdkim=pass header.d={domain} header.s=s1 header.b={base64.b64encode(r.randbytes(6)).decode()};\n\tspf=pass (domain of {from_addr} designates 192.0.2.{r.randint(1, 254)} as permitted sender) smtp.mailfrom={from_addr};\n\tdmarc=pass (p=NONE sp=NONE dis=NONE) header.from={domain}")
        if r.random() < 0.75:
            h.append(self.dkim(domain, t))
        if r.random() < 0.3:
            h.append(f"X-Spam-Status: No, score={r.uniform(-5, 4):.1f} required=5.0 tests=BAYES_00,DKIM_SIGNED,DKIM_VALID,\n\tSPF_PASS autolearn=ham autolearn_force=no version=3.4.6")
        tz = r.choice(TZ)
        h.append(f"Date: {self.date_str(t, tz)}")
        h.append("From: " + self.addr_header(from_name, from_addr, charset, codec))
        if is_list:
            h.append(f"To: {lst[0]}@{lst[1]}")
        else:
            tos = [self.addr_header(to_name, to_addr, charset, codec)]
            for _ in range(r.choices([0, 1, 3, 8], [60, 25, 10, 5])[0]):
                n2, a2 = self.person(lang)
                tos.append(self.addr_header(n2, a2, charset, codec))
            h.append("To: " + ",\n\t".join(tos))
        if r.random() < 0.15:
            n3, a3 = self.person(lang)
            h.append("Cc: " + self.addr_header(n3, a3, charset, codec))
        # Subject: raw 8-bit UTF-8 in ~2 % of non-ASCII subjects (RFC 6532 style), else RFC 2047.
        if any(ord(c) > 127 for c in lang_subject) and charset == "utf-8" and r.random() < 0.05:
            h.append(f"Subject: {lang_subject}")
        else:
            h.append("Subject: " + rfc2047(lang_subject, charset, codec, q=codec in ("latin-1", "cp1252") and r.random() < 0.6))
        if mid is not None:
            h.append(f"Message-ID: {mid}")
        if parent is not None:
            h.append(f"In-Reply-To: {parent[0]}")
            h.append("References: " + "\n ".join(refs))
        if is_list:
            h.append(f"List-Id: {lst[2]} <{lst[1]}>")
            h.append(f"List-Unsubscribe: <mailto:{lst[0]}-unsubscribe@{lst[1]}>,\n <https://{lst[1]}/unsubscribe?u={r.randrange(1 << 32):x}>")
            h.append(f"List-Post: <mailto:{lst[0]}@{lst[1]}>")
            h.append(f"List-Archive: <https://{lst[1]}/archive/>")
            h.append("Precedence: list")
        if r.random() < 0.8:
            h.append(("User-Agent: " if r.random() < 0.5 else "X-Mailer: ") + r.choice(MAILERS))
        h.append("MIME-Version: 1.0")
        head = ("\n".join(h) + "\n").encode("utf-8")
        msg = head + body

        # Remember for threading / forwarding.
        first_para = text.split("\n\n", 1)[0][:400]
        self.recent.append((mid, refs, subject, depth, from_name, lang, first_para))
        if len(self.recent) > 4000:
            del self.recent[:1000]
        if structure_used in ("plain", "alternative") and len(msg) < 16000 and r.random() < 0.2:
            self.forwardable.append(msg)
            if len(self.forwardable) > 300:
                del self.forwardable[:100]
        return msg, t, from_addr

    def external_message(self, t: int) -> bytes:
        """A short message from outside the archive, for forwarding."""
        r = self.rng
        charset = pick(r, self.charset_table)
        codec, langs = CHARSETS[charset]
        lang = r.choice(langs)
        n, a = self.person(lang)
        n2, a2 = self.person(lang)
        subj = r.choice(LANG[lang][2])
        head = (f"Date: {self.date_str(t, r.choice(TZ))}\nFrom: {self.addr_header(n, a, charset, codec)}\n"
                f"To: {self.addr_header(n2, a2, charset, codec)}\nSubject: {rfc2047(subj, charset, codec)}\n"
                f"Message-ID: {self.new_id(a.split('@')[1], t)}\nMIME-Version: 1.0\n").encode()
        body = self.leaf_body(r.choice(["plain", "alternative"]), lang, charset, codec,
                              self.text(lang, charset, r.randint(1, 3)), False)
        return head + body


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------

FROM_RE = re.compile(rb"^(>*From )", re.M)


def asctime(t: int) -> str:
    tm = time.gmtime(t)
    return f"{DAYS[tm.tm_wday]} {MONTHS[tm.tm_mon - 1]} {tm.tm_mday:2d} {tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d} {tm.tm_year}"


def main() -> int:
    ap = argparse.ArgumentParser(description="Generate a realistic, deterministic email archive.")
    ap.add_argument("--count", type=int, default=10000, help="messages to write (default 10000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--maildir", help="Maildir to create (cur/, new/, tmp/)")
    ap.add_argument("--mbox", help="mboxrd file to write")
    ap.add_argument("--json", action="store_true", help="print only the JSON summary line")
    ap.add_argument("--documents", choices=["pdf", "docx", "mixed", "pdf-dense", "hostile"],
                    help="every message carries one document of about 200 KB of this kind (attachment text); "
                         "hostile: made to cost (a zip bomb, 3,000 pages, an inflating stream, a picture, damage)")
    args = ap.parse_args()
    if not args.maildir and not args.mbox:
        ap.error("give --maildir and/or --mbox")

    started = time.monotonic()
    gen = Generator(args.seed, args.count, args.documents)
    r = gen.rng
    host = "archive-host"
    pid = 4242 + args.seed
    new_from = int(args.count * (1 - NEW_SHARE))
    if args.maildir:
        for sub in ("cur", "new", "tmp"):
            os.makedirs(os.path.join(args.maildir, sub), exist_ok=True)
    mbox = open(args.mbox, "wb", buffering=4 << 20) if args.mbox else None
    total = 0
    mbox_bytes = 0
    largest = 0
    in_new = 0
    sizes_over_100k = 0
    flags_pool = ["S", "S", "S", "S", "RS", "FS", "", "S", "ST", "FRS", "PS"]
    for i in range(args.count):
        msg, t, sender = gen.message(i)
        n = len(msg)
        total += n
        largest = max(largest, n)
        if n > 100_000:
            sizes_over_100k += 1
        if args.maildir:
            usec = r.randrange(1_000_000)
            base = f"{t}.M{usec}P{pid}Q{i + 1}.{host},S={n}"
            if i >= new_from:
                path = os.path.join(args.maildir, "new", base)
                in_new += 1
            elif r.random() < 0.02:
                path = os.path.join(args.maildir, "cur", base)
            else:
                path = os.path.join(args.maildir, "cur", base + ":2," + r.choice(flags_pool))
            with open(path, "wb") as f:
                f.write(msg)
        if mbox is not None:
            esc = FROM_RE.sub(rb">\1", msg) if b"From " in msg else msg
            line = f"From {sender} {asctime(t)}\n".encode()
            mbox.write(line)
            mbox.write(esc)
            mbox.write(b"\n")
            mbox_bytes += len(line) + len(esc) + 1
    if mbox is not None:
        mbox.close()
    secs = time.monotonic() - started
    st = gen.stats
    summary = {
        "messages": args.count, "bytes": total, "mbox_bytes": mbox_bytes,
        "avg_bytes": round(total / max(args.count, 1)), "largest_bytes": largest,
        "over_100k": sizes_over_100k, "in_new": in_new, "seconds": round(secs, 1), **st,
    }
    if not args.json:
        print(f"messages:            {args.count}", file=sys.stderr)
        print(f"total message bytes: {total} ({total / 1e6:.1f} MB, avg {total / max(args.count, 1):.0f} B, largest {largest} B)", file=sys.stderr)
        if args.mbox:
            print(f"mbox file bytes:     {mbox_bytes}", file=sys.stderr)
        print(f"structures:          {st['structure']}", file=sys.stderr)
        print(f"charsets:            {st['charset']}", file=sys.stderr)
        print(f"transfer encodings:  {st['cte']}", file=sys.stderr)
        print(f"replies: {st['replies']} (max depth {st['max_thread_depth']}), no Message-ID: {st['no_message_id']}, "
              f"duplicate Message-ID: {st['duplicate_message_id']}, list mail: {st['list_messages']}, "
              f"~1 MB messages: {st['big']}, verbatim forwards: {st['forward_verbatim']}, new/: {in_new}", file=sys.stderr)
        print(f"took {secs:.1f} s", file=sys.stderr)
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
