#!/usr/bin/env python3
"""Sign every message of a Maildir, for the signed-mail benchmark (bench/crypto.sh).

    python3 bench/sign_archive.py IN_MAILDIR OUT_MAILDIR KEYS_DIR

Each message keeps its outer header fields (From, To, Subject, Date, Message-ID, ...); its
Content-* fields and body, the MIME entity, are signed in turn as an opaque S/MIME signature
(`openssl cms -sign -nodetach`), a detached S/MIME signature (`multipart/signed`), and a
PGP/MIME signature (`gpg --detach-sign`), with the test keys of tests/fixtures/crypto/keys
(Alice's S/MIME key and certificate, Alice's OpenPGP key). Same file names as IN_MAILDIR, so that
the signed archive holds the same messages. Python 3.11 standard library, `openssl` and `gpg`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

ENTITY_FIELDS = re.compile(rb"^(content-[a-z-]+|mime-version)\s*:", re.I)


def split(raw: bytes) -> tuple[list[bytes], bytes]:
    """Header fields (each with its folded lines, CRLF) and the body."""
    raw = raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    head, _, body = raw.partition(b"\r\n\r\n")
    fields: list[bytes] = []
    for line in head.split(b"\r\n"):
        if line[:1] in (b" ", b"\t") and fields:
            fields[-1] += b"\r\n" + line
        elif line:
            fields.append(line)
    return fields, body


def main() -> int:
    src, dst, keys = sys.argv[1:4]
    alice_key, alice_cert = os.path.join(keys, "alice.key"), os.path.join(keys, "alice.pem")
    home = tempfile.mkdtemp(prefix="mailshelf-sign-")
    env = dict(os.environ, GNUPGHOME=home)
    gpg = ["gpg", "--batch", "--quiet", "--yes", "--pinentry-mode", "loopback", "--passphrase", ""]
    subprocess.run(gpg + ["--import", os.path.join(keys, "alice-openpgp.sec.asc")], env=env, check=True,
                   stderr=subprocess.DEVNULL)
    n = 0
    try:
        for sub in ("cur", "new", "tmp"):
            os.makedirs(os.path.join(dst, sub), exist_ok=True)
        for sub in ("cur", "new"):
            for name in sorted(os.listdir(os.path.join(src, sub))):
                with open(os.path.join(src, sub, name), "rb") as f:
                    fields, body = split(f.read())
                outer = [f for f in fields if not ENTITY_FIELDS.match(f)]
                inner = [f for f in fields if ENTITY_FIELDS.match(f) and not f.lower().startswith(b"mime-version")]
                if not inner:
                    inner = [b"Content-Type: text/plain; charset=us-ascii"]
                entity = b"\r\n".join(inner) + b"\r\n\r\n" + body
                kind = n % 3
                if kind < 2:
                    args = ["openssl", "cms", "-sign", "-signer", alice_cert, "-inkey", alice_key, "-md", "sha256",
                            "-outform", "SMIME", "-binary"]
                    if kind == 0:
                        args.append("-nodetach")
                    signed = subprocess.run(args, input=entity, capture_output=True, check=True).stdout
                    signed = signed.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
                    message = b"\r\n".join(outer) + b"\r\n" + signed
                else:
                    # RFC 3156: the signature covers the entity without the line break before the
                    # closing delimiter.
                    entity = entity.rstrip(b"\r\n")
                    sig = subprocess.run(gpg + ["--armor", "--detach-sign", "--digest-algo", "SHA256"], input=entity,
                                         capture_output=True, check=True, env=env).stdout
                    boundary = b"=-=signed-%d=-=" % n
                    message = (b"\r\n".join(outer) + b"\r\nMIME-Version: 1.0\r\n"
                               + b'Content-Type: multipart/signed; micalg=pgp-sha256; protocol="application/pgp-signature"; boundary="'
                               + boundary + b'"\r\n\r\n--' + boundary + b"\r\n" + entity + b"\r\n--" + boundary
                               + b'\r\nContent-Type: application/pgp-signature; name="signature.asc"\r\n\r\n'
                               + sig.replace(b"\n", b"\r\n") + b"--" + boundary + b"--\r\n")
                with open(os.path.join(dst, sub, name), "wb") as f:
                    f.write(message)
                n += 1
    finally:
        subprocess.run(["gpgconf", "--homedir", home, "--kill", "all"], env=env, stderr=subprocess.DEVNULL)
        shutil.rmtree(home, ignore_errors=True)
    print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
