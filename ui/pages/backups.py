"""Backups: database backups (Backup Operators make, download, delete and schedule them) and the
core security backup (Security Officers take it; everyone here sees whether it is up to date)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.changes import ChangeFollower
from app.context import AppContext
from app.pages import PageSpec, register
from app.quorum_watch import QuorumWatch
from app.writes.backups import (
    create_backup,
    delete_backup,
    download_backup,
    set_backup_schedule,
    take_core_security_backup,
)
from kms_client import Backup, Page
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.form_field import Field
from ui.files import ask_save_path, dated_name, tell_saved
from ui.format import counted
from ui.lists.list_page import ListPage
from ui.lists.list_spec import ActionSpec, ListSpec
from ui.lists.paged_model import Column
from ui.widgets import page_header

DAY = 86400
# The dashboard's and this page's colours for a backup's age: amber after a day, red after a week.
AGE_COLOURS = {"ok": "#2e7d32", "warn": "#b26a00", "bad": "#c62828"}


def age_tone(age: int | None) -> str:
    if age is None or age > 7 * DAY:
        return "bad"
    return "warn" if age > DAY else "ok"


def describe_age(age: int | None) -> str:
    if age is None:
        return "No database backup yet"
    days, rest = divmod(age, DAY)
    if days:
        return f"Last database backup {days} day{'s' if days != 1 else ''} ago"
    hours = rest // 3600
    return f"Last database backup {f'{hours} h' if hours else f'{max(1, rest // 60)} min'} ago"


def backup_line(readiness: Any) -> tuple[str, str]:
    """The dashboard's backup line (text, tone): the last backup's age and, in a one-KMA cluster,
    keys waiting for a backup and when the Ready keys run out at the recent issue rate."""
    text = describe_age(readiness.last_backup_age)
    if readiness.one_kma:
        text += f" · {readiness.ready_keys:,} Ready keys"
        if readiness.keys_waiting_for_backup:
            text += f", {readiness.keys_waiting_for_backup:,} waiting for a backup"
        if readiness.ready_keys_run_out_in is not None:
            text += f" · at the recent issue rate they run out in {_days(readiness.ready_keys_run_out_in)}"
    return text, age_tone(readiness.last_backup_age)


def _days(seconds: int) -> str:
    days = seconds // DAY
    return f"{days:,} days" if days >= 2 else f"{max(1, seconds // 3600)} h"


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _tell(parent: QWidget, title: str, text: str) -> None:
    """An information box that does not block (window-modal, opened, deleted on close)."""
    box = QMessageBox(QMessageBox.Icon.Information, title, text, QMessageBox.StandardButton.Ok, parent)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.setWindowModality(Qt.WindowModality.WindowModal)
    box.open()


def _list(client: Any) -> Callable[..., Page[Any]]:
    """The KMA answers all live backups at once (a handful): one page for the list."""

    def fetch(**_kw: Any) -> Page[Any]:
        items = list(client.list_backups().items)
        return Page(items, None, len(items))

    return fetch


def _ask_save(parent: QWidget, title: str, name: str, kinds: str) -> Path | None:
    return ask_save_path(parent, "backups", title, name, kinds)


def _make(page: ListPage[Backup], _obj: Any) -> None:
    def done(backup: Any) -> None:
        _tell(
            page,
            "Database backup made",
            f"Backup {backup.id}: {counted(backup.keys, 'key')}, "
            f"{counted(backup.audit_events, 'audit event')}, {_size(backup.size)}.\n\n"
            "It is kept on the KMA; download it to keep a copy offline.",
        )

    page.ctx.ops.write(create_backup(), parent=page, label="Making a database backup…", success=done)


def download(
    page: QWidget, ctx: AppContext, backup: Any, path: Path, done: Callable[[int], None] | None = None
) -> None:
    """Save `backup`'s file to `path` on a worker, with progress and a cancel that leaves no file."""

    def finished(size: int) -> None:
        if done is not None:
            done(size)
            return
        tell_saved(page, "Backup downloaded", path, f"{_size(size)}, SHA-256 {backup.sha256}")

    ctx.ops.read(
        download_backup(backup, path), parent=page, label=f"Downloading backup {backup.id}…", success=finished
    )


def _download(page: ListPage[Backup], backup: Backup) -> None:
    path = _ask_save(page, "Save the database backup", f"{backup.id}.kmabackup", "KMA backups (*.kmabackup)")
    if path:
        download(page, page.ctx, backup, path)


def _delete(page: ListPage[Backup], backup: Backup) -> None:
    FormDialog(
        page.ctx,
        f"Delete backup {backup.id}",
        [],
        lambda _v: delete_backup(backup.id),
        intro=f"Delete the database backup made {backup.created_at:%Y-%m-%d %H:%M} UTC by "
        f"{backup.created_by}? "
        "Its file is removed from the KMA. Keys destroyed since it was made are destroyed completely "
        "once no backup holds them.",
        ok_text="Delete backup",
        busy_text="Deleting backup…",
        danger=True,
        parent=page,
    ).open()


BACKUPS = ListSpec(
    key="backups",
    title="Database backups",
    noun="backup",
    live=True,
    columns=[
        Column("id", "Backup", 150),
        Column("created_at", "Made", 140),
        Column("created_by", "By", 100),
        Column("kma_id", "KMA", 100),
        Column("size", "Size", 90, align_right=True, format=_size),
        Column("keys", "Keys", 80, align_right=True, format=lambda v: f"{v:,}"),
        Column("audit_events", "Audit events", 100, align_right=True, format=lambda v: f"{v:,}"),
        Column("scheduled", "Scheduled", 80, format=lambda v: "yes" if v else ""),
        Column("sha256", "SHA-256", 200),
    ],
    fetch=_list,
    sort_fields=frozenset(),
    searchable=False,
    actions=[
        ActionSpec("Make backup", _make, "backups.write", needs="none", toolbar=True),
        ActionSpec("Download…", _download, "backups.write", toolbar=True),
        ActionSpec("Delete…", _delete, "backups.write", danger=True),
    ],
)


class BackupsPage(QWidget):
    """The core security backup's state on top, the schedule, then the database backups."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.setObjectName("page:backups")
        layout = QVBoxLayout(self)
        layout.addWidget(
            page_header(
                "Backups",
                "A restore needs a database backup, the core security backup and a quorum of the key split "
                "in force when the core security backup was taken. Keep copies of both offline, apart.",
            )
        )
        self.core = self._panel(
            layout, "Core security backup", "Take core security backup…", "backups.core", self._take_core
        )
        self.schedule = self._panel(layout, "Schedule", "Schedule…", "backups.write", self._edit_schedule)
        self.list = ListPage(ctx, BACKUPS, embedded=True)
        layout.addWidget(self.list, 1)
        self._schedule: Any = None
        # The list follows changes itself; the panels above it read again with it.
        ChangeFollower(self, ctx.ops, {"backups"}, self._read_panels, every_show=True)

    def _panel(
        self, layout: QVBoxLayout, title: str, button: str, permission: str, run: Callable[[], None]
    ) -> QLabel:
        box = QFrame()
        box.setFrameShape(QFrame.Shape.StyledPanel)
        row = QHBoxLayout(box)
        label = QLabel(f"<b>{title}</b>: loading…")
        label.setWordWrap(True)
        label.setAccessibleName(title)
        row.addWidget(label, 1)
        if self.ctx.may(permission):
            action = QPushButton(button)
            action.clicked.connect(run)
            row.addWidget(action, 0, Qt.AlignmentFlag.AlignTop)
        layout.addWidget(box)
        return label

    def refresh(self) -> None:
        self.list.refresh()
        self._read_panels()

    def _read_panels(self) -> None:
        self.ctx.ops.read(
            lambda c: (c.client.core_security_backup_status(), c.client.get_backup_schedule()),
            parent=self,
            success=self._show,
        )

    def _show(self, result: tuple[Any, Any]) -> None:
        core, schedule = result
        self._schedule = schedule
        when = f" Taken {core.created_at:%Y-%m-%d %H:%M} UTC by {core.created_by}." if core.created_at else ""
        tone = "ok" if core.up_to_date else "bad" if not core.exists else "warn"
        self.core.setText(
            f"<b>Core security backup</b>: <span style='color:{AGE_COLOURS[tone]}'>"
            f"{core.message}</span>{when}"
        )
        if schedule.frequency == "off":
            text = "off: database backups are made only by hand."
        else:
            text = f"{schedule.frequency} into {schedule.folder}, keeping the newest {schedule.keep}."
            if schedule.next_at:
                text += f" Next {schedule.next_at:%Y-%m-%d %H:%M} UTC."
        if schedule.last_error:
            failed = f"Last attempt failed: {schedule.last_error}"
            text += f" <span style='color:{AGE_COLOURS['bad']}'>{failed}</span>"
        self.schedule.setText(f"<b>Schedule</b> (of KMA {schedule.kma_id}): {text}")

    def _cluster_name(self) -> str:
        status = QuorumWatch.of(self.ctx).status  # the KMA's last polled status, if any yet
        return str(status.cluster_name) if status is not None else ""

    def _take_core(self) -> None:
        path = _ask_save(
            self,
            "Save the core security backup",
            dated_name("core-security-backup", ".kmacore", self._cluster_name()),
            "Core security backups (*.kmacore)",
        )
        if path is None:
            return

        def done(size: int) -> None:
            _tell(
                self,
                "Core security backup taken",
                f"Saved {_size(size)} to {path}.\n\nKeep it offline: with a quorum "
                "of the key split's passphrases it opens every database backup of "
                "this cluster.",
            )

        self.ctx.ops.write(
            take_core_security_backup(path),
            parent=self,
            label="Taking the core security backup…",
            success=done,
        )

    def _edit_schedule(self) -> None:
        current = self._schedule
        FormDialog(
            self.ctx,
            "Backup schedule",
            [
                Field(
                    "frequency",
                    "Frequency",
                    "choice",
                    required=True,
                    default=current.frequency if current else "off",
                    choices=[("Off", "off"), ("Hourly", "hourly"), ("Daily", "daily")],
                ),
                Field(
                    "folder",
                    "Target folder on the KMA's machine",
                    default=current.folder if current else "",
                    max_length=4096,
                    help="A folder on the KMA's machine (absolute path); scheduled backups are copied there.",
                ),
                Field(
                    "keep",
                    "Keep",
                    "int",
                    default=current.keep if current else 7,
                    minimum=1,
                    maximum=1000,
                    help="The newest scheduled backups kept; older ones are deleted.",
                ),
            ],
            lambda v: set_backup_schedule(v["frequency"], v["folder"] or "", v["keep"]),
            ok_text="Save schedule",
            busy_text="Saving schedule…",
            parent=self,
        ).open()


register(PageSpec("backups", "Backups", BackupsPage, "backups.read", order=85, icon="SP_DialogSaveButton"))
