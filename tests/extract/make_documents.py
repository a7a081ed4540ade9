"""Writes one document of each kind mailshelf reads into the folder given, each holding a word
found only in it (the file's stem and the word are printed as JSON lines), with the libraries
their users write them with: python-docx, openpyxl, python-pptx, odfpy and fpdf2 (scripts/test
installs them). RTF, text, CSV, HTML and zip files are written by hand.

    python3 tests/extract/make_documents.py OUTDIR
"""

import json
import os
import sys
import zipfile

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
made = []


def done(name, words):
    made.append({"file": name, "words": words})


def word():
    import docx

    d = docx.Document()
    d.add_heading("Quarterly contract", level=1)
    d.add_paragraph("The supplier agrees to the terms below. zephyrdocx")
    table = d.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "Reference"
    table.rows[0].cells[1].text = "tablecelldocx"
    d.sections[0].header.paragraphs[0].text = "headerdocx confidential"
    d.sections[0].footer.paragraphs[0].text = "footerdocx page"
    d.save(os.path.join(out, "contract.docx"))
    done("contract.docx", ["zephyrdocx", "tablecelldocx", "headerdocx", "footerdocx"])


def excel():
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Ledger"
    sheet.append(["Item", "Amount"])
    sheet.append(["quokkaxlsx", 12345.5])
    other = book.create_sheet("Notes")
    other["B2"] = "wallabyxlsx"
    book.save(os.path.join(out, "budget.xlsx"))
    done("budget.xlsx", ["quokkaxlsx", "wallabyxlsx", "Ledger", "12345.5"])


def powerpoint():
    import pptx

    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[1])
    slide.shapes.title.text = "Roadmap narwhalpptx"
    slide.placeholders[1].text = "First milestone"
    slide.notes_slide.notes_text_frame.text = "notespptx for the speaker"
    prs.save(os.path.join(out, "slides.pptx"))
    done("slides.pptx", ["narwhalpptx", "notespptx"])


def opendocument():
    from odf.draw import Frame, Page, TextBox
    from odf.opendocument import OpenDocumentPresentation, OpenDocumentSpreadsheet, OpenDocumentText
    from odf.style import MasterPage, PageLayout
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    text = OpenDocumentText()
    text.text.addElement(P(text="Minutes of the meeting ocelotodt"))
    text.save(os.path.join(out, "minutes.odt"))
    done("minutes.odt", ["ocelotodt"])

    sheet = OpenDocumentSpreadsheet()
    table = Table(name="Stock")
    row = TableRow()
    cell = TableCell(valuetype="string")
    cell.addElement(P(text="ibexods"))
    row.addElement(cell)
    table.addElement(row)
    sheet.spreadsheet.addElement(table)
    sheet.save(os.path.join(out, "stock.ods"))
    done("stock.ods", ["ibexods"])

    deck = OpenDocumentPresentation()
    layout = PageLayout(name="layout")
    deck.automaticstyles.addElement(layout)
    master = MasterPage(name="master", pagelayoutname=layout)
    deck.masterstyles.addElement(master)
    page = Page(masterpagename=master)
    frame = Frame(width="10cm", height="2cm", x="1cm", y="1cm")
    box = TextBox()
    box.addElement(P(text="lemurodp on the first slide"))
    frame.addElement(box)
    page.addElement(frame)
    deck.presentation.addElement(page)
    deck.save(os.path.join(out, "deck.odp"))
    done("deck.odp", ["lemurodp"])


def pdf():
    from fpdf import FPDF

    doc = FPDF()
    doc.add_page()
    doc.set_font("Helvetica", size=12)
    doc.cell(0, 10, "Order confirmation", new_x="LMARGIN", new_y="NEXT")
    doc.cell(0, 10, "Tax number DE129273398, reference wombatpdf", new_x="LMARGIN", new_y="NEXT")
    doc.add_page()
    doc.cell(0, 10, "Second page: delivery by dingopdf", new_x="LMARGIN", new_y="NEXT")
    doc.output(os.path.join(out, "order.pdf"))
    done("order.pdf", ["wombatpdf", "DE129273398", "dingopdf"])


def by_hand():
    with open(os.path.join(out, "letter.rtf"), "wb") as f:
        f.write(b"{\\rtf1\\ansi\\ansicpg1252{\\fonttbl{\\f0 Arial;}}\\pard Dear reader, marmotrtf caf\\'e9\\par}")
    done("letter.rtf", ["marmotrtf", "cafe"])
    with open(os.path.join(out, "notes.txt"), "wb") as f:
        f.write("Crème brûlée for the yaktxt party\n".encode("latin-1"))
    done("notes.txt", ["yaktxt", "creme"])
    with open(os.path.join(out, "figures.csv"), "wb") as f:
        f.write(b"account;amount\naxolotlcsv;12,50\n")
    done("figures.csv", ["axolotlcsv"])
    with open(os.path.join(out, "page.html"), "wb") as f:
        f.write(b"<html><head><title>t</title><script>scriptnotext()</script></head><body><p>platypushtml</p></body></html>")
    done("page.html", ["platypushtml"])
    with zipfile.ZipFile(os.path.join(out, "bundle.zip"), "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("readme.txt", "kiwizip inside the archive")
        z.writestr("photos/cat.jpg", b"\xff\xd8\xff\xe0 not really a picture")
    done("bundle.zip", ["kiwizip", "readme.txt", "cat.jpg"])


for make in (word, excel, powerpoint, opendocument, pdf, by_hand):
    make()
for m in made:
    print(json.dumps(m))
