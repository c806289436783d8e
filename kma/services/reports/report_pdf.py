"""A signed report as a PDF to read, made by the KMA for its scheduled runs (docs/reports.md); the
manager makes its own with Qt when a user saves one (ui/reports/signed_report.py).

Text only, in Courier, one of the fonts every PDF reader has (PDF's standard 14: nothing is
embedded), on landscape A4 pages, with the table's cells wrapped within their columns. No PDF
library: those (reportlab, fpdf2) bring Pillow and fonttools into the headless KMA, its largest
dependencies by far, for what a page of fixed-width text needs. The CSV beside it stays the record:
the PDF says so, with the CSV's SHA-256, and is not signed itself.
"""

from __future__ import annotations

import csv
import io
import json
import textwrap

from kma.services.reports.signed_report import SignedReportRow

WIDTH, HEIGHT, MARGIN = 842, 595, 36  # A4 landscape, in points
SIZE, LEADING = 7, 8.5  # Courier 7 pt: 0.6 of the size per character
CHARS = int((WIDTH - 2 * MARGIN) / (0.6 * SIZE))
LINES = int((HEIGHT - 2 * MARGIN) / LEADING)
MAX_COLUMN = 48  # characters: a wider cell wraps onto more lines of its row


def report_pdf(report: SignedReportRow) -> bytes:
    """The report (`signed_report`'s answer) as a PDF document."""
    lines = _text(report)
    pages = [lines[i : i + LINES] for i in range(0, len(lines), LINES)] or [[]]
    return _document(pages, _title(report))


def _title(report: SignedReportRow) -> str:
    what = str(json.loads(report.signature).get("report", "a signed report"))
    return what[:1].upper() + what[1:]


def _text(report: SignedReportRow) -> list[str]:
    details = json.loads(report.signature)
    table = list(csv.reader(io.StringIO(report.csv)))
    head, body = (table[0], table[1:]) if table else ([], [])
    said = [
        _title(report),
        f"Cluster {details.get('cluster', '')}, made by KMA {details.get('kma_id', '')} at "
        f"{details.get('created_at', '')} for {details.get('created_by', '')}; {len(body)} rows.",
        f"The record is {report.filename} and its signature {report.filename}.sig (SHA-256 "
        f"{details.get('sha256', '')}): check them with kma audit verify --export. This PDF is for reading.",
    ]
    out = [line for s in said for line in textwrap.wrap(s, CHARS)] + [""]
    if not head:
        return out
    widths = _widths([head, *body])
    out += _row(head, widths)
    out.append("  ".join("-" * w for w in widths))
    for row in body:
        out += _row(row, widths)
    return out + ([] if body else ["Nothing to report."])


def _widths(rows: list[list[str]]) -> list[int]:
    """Each column as wide as its widest cell, at most MAX_COLUMN; together within the page, the
    widest giving way first."""
    widths = [min(MAX_COLUMN, max(len(r[i]) if i < len(r) else 0 for r in rows)) for i in range(len(rows[0]))]
    widths = [max(w, 3) for w in widths]
    while sum(widths) + 2 * (len(widths) - 1) > CHARS and max(widths) > 8:
        widths[widths.index(max(widths))] -= 1
    return widths


def _row(cells: list[str], widths: list[int]) -> list[str]:
    wrapped = [
        textwrap.wrap(c, w, break_long_words=True) or [""] for c, w in zip(cells, widths, strict=False)
    ]
    height = max(len(w) for w in wrapped)
    return [
        "  ".join(
            (w[n] if n < len(w) else "").ljust(width) for w, width in zip(wrapped, widths, strict=False)
        ).rstrip()
        for n in range(height)
    ]


def _pdf_string(text: str) -> bytes:
    """A PDF literal string in the standard fonts' encoding: what it cannot hold becomes '?'."""
    raw = text.encode("cp1252", errors="replace")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _document(pages: list[list[str]], title: str) -> bytes:
    objects: list[bytes] = []  # object n is objects[n - 1]

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in once the pages are known
    page_tree = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier /Encoding /WinAnsiEncoding >>")
    kids = []
    for number, lines in enumerate(pages, 1):
        text = [b"BT", f"/F1 {SIZE} Tf {LEADING} TL {MARGIN} {HEIGHT - MARGIN} Td".encode()]
        text += [_pdf_string(line) + b" '" for line in lines]
        text += [b"ET", b"BT", f"/F1 {SIZE} Tf {WIDTH - MARGIN - 60} {MARGIN / 2} Td".encode()]
        text += [_pdf_string(f"page {number} of {len(pages)}") + b" Tj", b"ET"]
        stream = b"\n".join(text)
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Contents %d 0 R "
                b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (page_tree, WIDTH, HEIGHT, content, font)
            )
        )
    objects[page_tree - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    info = add(b"<< /Title " + _pdf_string(title) + b" /Producer (KMA) >>")
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % page_tree
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        catalog,
        info,
        xref,
    )
    return bytes(out)
