"""Reads Outlook .msg files with extract-msg, an independent reader, and prints one JSON object per
file (one per line): subject, sender, attachments (name, size, CRC-32 of the bytes) and the start of
the plain-text body, for tests/outlook.rs to compare with what mailshelf shows."""

import json
import logging
import sys
import zlib

import extract_msg

logging.disable(logging.CRITICAL)


def describe(path):
    out = {"path": path}
    try:
        msg = extract_msg.openMsg(path, strict=False)
    except Exception as e:  # a file extract-msg cannot read is reported, not compared
        out["error"] = type(e).__name__
        return out
    try:
        out["class"] = getattr(msg, "classType", None) or ""
        out["subject"] = getattr(msg, "subject", None)
        out["sender"] = getattr(msg, "sender", None)
        try:
            body = msg.body
        except Exception:
            body = None
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        out["body"] = (body or "")[:400]
        atts = []
        for a in getattr(msg, "attachments", []) or []:
            data = getattr(a, "data", None)
            if isinstance(data, (bytes, bytearray)):
                name = getattr(a, "longFilename", None) or getattr(a, "shortFilename", None)
                atts.append({"name": name, "size": len(data), "crc": zlib.crc32(data)})
            else:
                atts.append({"name": None, "embedded": True})
        out["attachments"] = atts
    finally:
        try:
            msg.close()
        except Exception:
            pass
    return out


for p in sys.argv[1:]:
    print(json.dumps(describe(p)))
