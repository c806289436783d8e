"""Saving a signed report (users, media, the compliance reports): the CSV where the user chooses and
its signature beside it, with how anyone checks both offline; or a PDF to read and hand on, with
the signed CSV beside it (the CSV and its signature are the record: a PDF is not signed)."""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtGui import QPageLayout, QPageSize, QPdfWriter, QTextDocument
from PySide6.QtWidgets import QMessageBox, QWidget

from ui.files import ask_save_path, tell_saved


def save_signed_report(page: Any, make: Callable[[Any], Any], pdf: bool = False) -> None:
    """Ask the KMA for the report (`make(client)`, worker thread), then where to save it; `pdf`:
    as a PDF, the signed CSV beside it."""

    def save(report: Any) -> None:
        name = report.filename.removesuffix(".csv") + ".pdf" if pdf else report.filename
        kinds = "PDF files (*.pdf)" if pdf else "CSV files (*.csv)"
        path = ask_save_path(page, "reports", "Save the signed report", name, kinds)
        if path is None:
            return
        record = path.with_suffix(".csv") if pdf else path
        signature = record.with_name(record.name + ".sig")
        try:
            record.write_text(report.csv, encoding="utf-8", newline="")
            signature.write_text(report.signature, encoding="utf-8")
            if pdf:
                write_pdf(path, report, record.name)
        except OSError as exc:
            why = exc.strerror or exc
            _not_saved(page, f"The report could not be saved to {path}: {why}. Choose another folder.")
            return
        said = (
            f"The signed CSV {record.name} and its signature {signature.name} are beside it; "
            "the PDF is for reading."
            if pdf
            else f"Its signature is {signature.name}, beside it."
        )
        tell_saved(
            page,
            "Signed report saved",
            path,
            f"{said} Anyone checks both offline with kma audit verify --export {record.name} "
            "--ca <the cluster's CA certificate>.",
        )

    page.ctx.ops.read(lambda w: make(w.client), parent=page, label="Making the report…", success=save)


def report_html(report: Any, record_name: str) -> str:
    """The report as a page to read: what it is, whose cluster, when and by whom, then its rows."""
    details = json.loads(report.signature)
    table = list(csv.reader(io.StringIO(report.csv)))
    head, body = (table[0], table[1:]) if table else ([], [])
    cells = "".join(f"<th align='left'>{html.escape(c)}</th>" for c in head)
    rows = (
        "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in body)
        or f"<tr><td colspan='{max(len(head), 1)}'><i>Nothing to report.</i></td></tr>"
    )
    what = html.escape(str(details.get("report", "")))
    return (
        f"<h2>{what[:1].upper() + what[1:]}</h2>"
        f"<p>Cluster <b>{html.escape(str(details.get('cluster', '')))}</b>, made by KMA "
        f"{html.escape(str(details.get('kma_id', '')))} at {html.escape(str(details.get('created_at', '')))} "
        f"for {html.escape(str(details.get('created_by', '')))}; {len(body)} rows.</p>"
        f"<table border='1' cellspacing='0' cellpadding='3' width='100%'><tr>{cells}</tr>{rows}</table>"
        f"<p><small>The record is {html.escape(record_name)} and its signature "
        f"{html.escape(record_name)}.sig (SHA-256 {html.escape(str(details.get('sha256', '')))}, signed "
        "by the cluster's audit key); anyone checks them with <tt>kma audit verify --export</tt>. This "
        "PDF is for reading.</small></p>"
    )


def write_pdf(path: Path, report: Any, record_name: str) -> None:
    doc = QTextDocument()
    doc.setDefaultStyleSheet("body { font-size: 8pt; } th { background: #e8e8e8; }")
    doc.setHtml(report_html(report, record_name))
    writer = QPdfWriter(str(path))
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
    writer.setPageOrientation(QPageLayout.Orientation.Landscape)  # reports are wide
    writer.setTitle(str(json.loads(report.signature).get("report", "Signed report")))
    writer.setCreator("KMS Manager")
    doc.print_(writer)
    del writer  # closes the file
    if not path.exists():
        raise OSError(0, "the PDF was not written", str(path))


def _not_saved(parent: QWidget, text: str) -> None:
    ok = QMessageBox.StandardButton.Ok
    QMessageBox(QMessageBox.Icon.Warning, "Report not saved", text, ok, parent).open()
