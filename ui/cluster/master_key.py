"""The master key on the Cluster page: its generation, a rotation's progress, and the Security
Officer's "Rotate master key…" (quorum-protected; docs/backups.md#master-key-rotation)."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtWidgets import QWidget

from app.context import AppContext
from app.writes.master_key import rotate_master_key
from ui.quorum.widgets import QuorumFormDialog

GOOD, WARN = "#2e7d32", "#b26a00"


def master_key_line(state: Any) -> str:
    """One line of rich text: the generation, or a rotation's progress and what it waits for."""
    rotation = state.rotation
    if not state.rotating:
        done = f" (rotated from generation {rotation.to_generation - 1})" if rotation else ""
        return f"<span style='color:{GOOD}'>Master key: generation {state.generation}{done}</span>"
    line = (
        f"<b style='color:{WARN}'>Master key rotation to generation {rotation.to_generation}: "
        f"{rotation.percent}%</b> ({rotation.blobs_done:,} of {rotation.blobs_total:,} "
        f"stored keys and secrets "
        "re-wrapped; drives are served throughout)"
    )
    if rotation.kmas_waiting:
        line += (
            f"; waiting for KMA {html.escape(', '.join(rotation.kmas_waiting))} to take the new generation"
        )
    return line


def open_rotation(ctx: AppContext, parent: QWidget, state: Any) -> QuorumFormDialog:
    """The quorum dialog that rotates the master key."""
    dialog = QuorumFormDialog(
        ctx,
        "Rotate the master key",
        [],
        lambda v: rotate_master_key(credentials=v["credentials"]),
        what="the rotation starts",
        intro=f"Make master key generation <b>{state.generation + 1}</b> and re-wrap every stored key and "
        "secret under it, in the background, while drives keep reading and writing keys. Generation "
        f"{state.generation} is destroyed once nothing needs it.<br><br>Afterwards a core security backup "
        "taken before opens nothing issued or re-wrapped since: <b>take a new core security backup</b>, and "
        "keep the old one as long as you keep the database backups taken before the rotation.",
        ok_text="Rotate master key",
        busy_text="Starting the rotation…",
        parent=parent,
    )
    dialog.setObjectName("masterKeyRotationDialog")
    dialog.open()
    return dialog
