"""Reads documents with independent tools and prints one JSON object per file (one per line):
the text each tool finds, or why it could not read the file, for tests/extract.rs to compare with
the text mailshelf extracts.

Tools: Debian's pdftotext (poppler) for PDF, docx2txt for Word, openpyxl for Excel, python-pptx
for PowerPoint, odfpy for OpenDocument, striprtf for RTF (in the code page the document names;
Debian's unrtf reads only Western code pages). scripts/test installs them."""

import datetime
import json
import logging
import subprocess
import sys

logging.disable(logging.CRITICAL)


def pdf(path):
    run = subprocess.run(["pdftotext", "-q", "-enc", "UTF-8", path, "-"], capture_output=True)
    if run.returncode != 0:
        return None, "pdftotext exit %d" % run.returncode
    return run.stdout.decode("utf-8", "replace"), None


def word(path):
    import docx2txt

    return docx2txt.process(path), None


def cell_text(value):
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        # Stored as a serial number, shown through a number format: not compared.
        return ""
    return str(value)


def excel(path):
    import openpyxl

    book = openpyxl.load_workbook(path, data_only=True)
    out = []
    for sheet in book.worksheets:
        out.append(sheet.title)
        for row in sheet.iter_rows(values_only=True):
            out.append(" ".join(cell_text(v) for v in row))
    return "\n".join(out), None


def shape_texts(shapes):
    for shape in shapes:
        if getattr(shape, "shape_type", None) == 6:  # a group
            yield from shape_texts(shape.shapes)
        if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            yield shape.text_frame.text
        if getattr(shape, "has_table", False) and shape.has_table:
            for row in shape.table.rows:
                for cell in row.cells:
                    yield cell.text


def powerpoint(path):
    import pptx

    prs = pptx.Presentation(path)
    out = []
    for slide in prs.slides:
        out.extend(shape_texts(slide.shapes))
        if slide.has_notes_slide:
            out.append(slide.notes_slide.notes_text_frame.text)
    return "\n".join(out), None


def opendocument(path):
    from odf import teletype, text
    from odf.opendocument import load

    try:
        doc = load(path)
    except Exception:
        # odfpy refuses flat files and some embedded objects: the paragraphs, read with
        # Python's own XML parser, are as independent a reading.
        return opendocument_paragraphs(path)
    out = []
    for kind in (text.H, text.P):
        for element in doc.getElementsByType(kind):
            out.append(teletype.extractText(element))
    return "\n".join(out), None


def opendocument_paragraphs(path):
    import xml.etree.ElementTree as ET
    import zipfile

    ns = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            parts = [z.read(n) for n in ("content.xml", "styles.xml") if n in z.namelist()]
    else:
        parts = [open(path, "rb").read()]
    out = []
    for part in parts:
        root = ET.fromstring(part)
        for element in root.iter():
            if element.tag in (ns + "p", ns + "h"):
                out.append("".join(element.itertext()))
    return "\n".join(out), None


def rtf(path):
    import re

    from striprtf.striprtf import rtf_to_text

    raw = open(path, "rb").read().decode("latin-1")
    codepage = re.search(r"\\ansicpg(\d+)", raw)
    text = rtf_to_text(raw, encoding="cp%s" % codepage.group(1) if codepage else "cp1252", errors="replace")
    # \u escapes of characters beyond the BMP come out as surrogate halves: join them.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"), None


TOOLS = {
    "pdf": ("pdftotext", pdf),
    "docx": ("docx2txt", word),
    "docm": ("docx2txt", word),
    "dotx": ("docx2txt", word),
    "xlsx": ("openpyxl", excel),
    "xlsm": ("openpyxl", excel),
    "pptx": ("python-pptx", powerpoint),
    "pptm": ("python-pptx", powerpoint),
    "odt": ("odfpy", opendocument),
    "ods": ("odfpy", opendocument),
    "odp": ("odfpy", opendocument),
    "fodt": ("odfpy", opendocument),
    "rtf": ("striprtf", rtf),
}


def describe(path):
    ext = path.rsplit(".", 1)[-1].lower()
    out = {"path": path}
    if ext not in TOOLS:
        out["error"] = "no tool"
        return out
    out["tool"], reader = TOOLS[ext]
    try:
        text, error = reader(path)
    except Exception as e:  # a file the tool cannot read is reported, not compared
        text, error = None, type(e).__name__
    if error is not None:
        out["error"] = error
    else:
        out["text"] = text
    return out


for p in sys.argv[1:]:
    print(json.dumps(describe(p)))
