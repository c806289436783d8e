"""The KMA's PDF of a signed report (kma/services/reports/report_pdf.py), read back by a real PDF reader
(Qt's, PDFium): every row's words are in it, wrapped within their column and over as many pages as
it takes; characters PDF's text syntax gives a meaning to are text; the CSV stays the record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kma.services.reports.report_pdf import report_pdf
from kma.services.reports.signed_report import SignedReportRow

pytest.importorskip("PySide6.QtPdf")
from PySide6.QtPdf import QPdfDocument  # noqa: E402


def read_back(pdf: bytes, folder: Path) -> list[str]:
    path = folder / "report.pdf"
    path.write_bytes(pdf)
    doc = QPdfDocument()
    doc.load(str(path))
    assert doc.status() == QPdfDocument.Status.Ready, doc.error()
    return [doc.getAllText(n).text() for n in range(doc.pageCount())]


def a_report(rows: list[list[str]]) -> SignedReportRow:
    body = "\n".join(",".join(f'"{c}"' for c in r) for r in [["operation", "summary"], *rows]) + "\n"
    details = {"report": "quorum operations carried out", "cluster": "Acme (Dallas)", "sha256": "ab" * 32}
    return SignedReportRow("quorum-operations-report-x.csv", body, json.dumps(details))


def test_every_row_is_in_the_pdf_over_as_many_pages_as_it_takes(qapp: object, tmp_path: Path) -> None:
    long = "Create user ivy with roles auditor, then a summary long enough to wrap onto more lines"
    rows = [[f"Q{n:03d}", long] for n in range(150)]
    pages = read_back(report_pdf(a_report(rows)), tmp_path)
    assert len(pages) > 2 and "page 1 of" in pages[0]
    text = " ".join(" ".join(p.split()) for p in pages)
    assert all(f"Q{n:03d}" in text for n in range(150))
    assert "Quorum operations carried out" in pages[0] and "Cluster Acme (Dallas)" in pages[0]
    assert "kma audit verify --export" in pages[0] and "ab" * 32 in text.replace(" ", "")


def test_parentheses_and_backslashes_are_text_and_an_empty_report_says_so(
    qapp: object, tmp_path: Path
) -> None:
    pages = read_back(report_pdf(a_report([["Q1", r"a (note) with \ and ) alone"]])), tmp_path)
    assert r"a (note) with \ and ) alone" in pages[0]
    empty = read_back(report_pdf(a_report([])), tmp_path)
    assert "Nothing to report." in empty[0]
