"""Saving a signed report (the users report, the media report): the CSV where the user chooses and
its signature beside it, with how anyone checks both offline."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QMessageBox, QWidget

from ui.files import ask_save_path, tell_saved


def save_signed_report(page: Any, make: Callable[[Any], Any]) -> None:
    """Ask the KMA for the report (`make(client)`, worker thread), then where to save it."""

    def save(report: Any) -> None:
        path = ask_save_path(page, "reports", "Save the signed report", report.filename, "CSV files (*.csv)")
        if path is None:
            return
        signature = path.with_name(path.name + ".sig")
        try:
            path.write_text(report.csv, encoding="utf-8", newline="")
            signature.write_text(report.signature, encoding="utf-8")
        except OSError as exc:
            why = exc.strerror or exc
            _not_saved(page, f"The report could not be saved to {path}: {why}. Choose another folder.")
            return
        tell_saved(
            page,
            "Signed report saved",
            path,
            f"Its signature is {signature.name}, beside it. Anyone checks both offline with "
            f"kma audit verify --export {path.name} --ca <the cluster's CA certificate>.",
        )

    page.ctx.ops.read(lambda w: make(w.client), parent=page, label="Making the report…", success=save)


def _not_saved(parent: QWidget, text: str) -> None:
    ok = QMessageBox.StandardButton.Ok
    QMessageBox(QMessageBox.Icon.Warning, "Report not saved", text, ok, parent).open()
