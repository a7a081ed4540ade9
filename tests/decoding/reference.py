"""Decodes messages with Python's `email` package, an independent reader, for tests/decoding.rs to
compare with what mailshelf decodes.

Reads messages from standard input, each as its length in bytes on a line of its own followed by
that many bytes, and prints one JSON object per message (one per line): the leaves of the message
as `Message.walk()` visits them, each with the section mailshelf numbers it by (IMAP-style numbers,
with `/` where an enclosed message begins), its type, charset and Content-Transfer-Encoding as
declared, and the bytes `get_payload(decode=True)` gives (base64); for a text part whose charset
Python knows, also those bytes decoded by that charset. Parts Python reads as header blocks rather
than as bytes (`message/delivery-status`, and the `message/*` types other than enclosed messages,
which Python reads as a header and a body) come with their fields instead. `encoded` lists the
enclosed messages sent in base64 or quoted-printable, which Python reads without decoding."""

import base64
import email
import email.policy
import email.utils
import json
import sys

# Python reads every message/* type as a message; these are the ones that are messages.
ENCLOSED = {"message/rfc822", "message/global", "message/news"}


def fields(msg):
    return [[name, str(value)] for name, value in msg.items()]


def leaf(part, section):
    payload = part.get_payload(decode=True)
    if payload is None:
        payload = b""
    charset = part.get_param("charset")
    if isinstance(charset, tuple):  # RFC 2231: (charset, language, value)
        charset = email.utils.collapse_rfc2231_value(charset)
    out = {
        "section": section,
        "type": part.get_content_type(),
        "charset": charset,
        "cte": part.get("Content-Transfer-Encoding"),
        "bytes": base64.b64encode(payload).decode("ascii"),
    }
    if part.get_content_maintype() == "text" and charset:
        try:
            out["text"] = payload.decode(charset.strip(), errors="replace")
        except (LookupError, ValueError):
            pass
    return out


def walk(part, section, prefix, out, encoded):
    ctype = part.get_content_type()
    if part.is_multipart() and part.get_content_maintype() == "message":
        inner = part.get_payload()
        if ctype == "message/delivery-status":
            out.append({"section": prefix + section, "type": ctype, "blocks": [fields(b) for b in inner]})
        elif ctype in ENCLOSED:
            cte = str(part.get("Content-Transfer-Encoding", "")).strip().lower()
            if cte in ("base64", "quoted-printable"):
                encoded.append(prefix + section)
            for m in inner[:1]:
                message(m, prefix + section + "/", out, encoded)
        else:
            m = inner[0] if inner else email.message.Message()
            body = m.get_payload(decode=True) if not m.is_multipart() else None
            out.append({
                "section": prefix + section,
                "type": ctype,
                "blocks": [fields(m)],
                "body": base64.b64encode(body or b"").decode("ascii") if body is not None else None,
            })
    elif part.is_multipart():
        for n, child in enumerate(part.get_payload(), 1):
            walk(child, str(n) if section == "0" else f"{section}.{n}", prefix, out, encoded)
    else:
        out.append(leaf(part, prefix + section))


def message(msg, prefix, out, encoded):
    root = "0" if msg.is_multipart() and msg.get_content_maintype() == "multipart" else "1"
    walk(msg, root, prefix, out, encoded)


def main():
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            break
        raw = stdin.read(int(line))
        leaves, encoded = [], []
        try:
            message(email.message_from_bytes(raw, policy=email.policy.compat32), "", leaves, encoded)
            print(json.dumps({"leaves": leaves, "encoded": encoded}))
        except Exception as e:  # a message Python cannot read is reported, not compared
            print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
