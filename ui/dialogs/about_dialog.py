"""Help > About: what this manager is, its release, and the release and schema of the KMA it is
connected to (what a support call or an upgrade plan asks first)."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from app.context import AppContext
from app.errors import describe
from kms_client.release import release


class AboutDialog(QDialog):
    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setWindowTitle("About KMS Manager")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setMinimumWidth(440)
        layout = QVBoxLayout(self)
        intro = QLabel(
            "<h3>KMS Manager</h3><p>Manages the keys of encrypting tape drives through a "
            "cluster of Key Management Appliances.</p><p>Keys never leave the KMAs in the "
            "clear; this manager only ever sees their state.</p>"
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.versions = QLabel()
        self.versions.setObjectName("aboutVersions")
        self.versions.setTextFormat(Qt.TextFormat.RichText)
        self.versions.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.versions)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self._show_versions("reading…")
        self._read_kma()

    def _show_versions(self, kma: str) -> None:
        rows = [("This manager", f"release {release()}"), ("Connected KMA", kma)]
        self.versions.setText(
            "<table cellspacing=4>"
            + "".join(f"<tr><td><b>{html.escape(k)}</b></td><td>{html.escape(v)}</td></tr>" for k, v in rows)
            + "</table>"
        )

    def _read_kma(self) -> None:
        client = self.ctx.session.client
        if client is None:
            self._show_versions("none (not signed in)")
            return

        def read(worker: Any) -> str:
            status = worker.client.get_status()
            kma = worker.client.get_kma(status.kma_id)
            schema = f", database schema {kma.schema_version}" if kma.schema_version is not None else ""
            where = f"{status.kma_name} ({status.kma_id}) at {worker.client.address}"
            return f"{where}: release {status.version}{schema}"

        self.ctx.ops.read(
            read,
            parent=self,
            quiet=True,
            success=self._show_versions,
            failure=self._unread,
        )

    def _unread(self, exc: BaseException) -> bool:
        self._show_versions(describe(exc).what)
        return True
