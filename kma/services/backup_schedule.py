"""Scheduled database backups: off, hourly or daily, into a folder on this KMA's machine, keeping
the newest N (older scheduled backups expire: deleted like by hand, which may complete the
destruction of keys they held).

The schedule is this KMA's (`backup_schedules`, one row per KMA). A worker (kma/worker.py) looks every
CHECK_S seconds whether a period has passed since the last attempt; a failed attempt (locked KMA,
no core security backup, folder gone or full) is an audit event of severity error, and the next
attempt waits a period, so a broken schedule is reported once per period, not once a minute.

The folder may be writable by others (a share, a backup medium): each copy goes to a new `.part`
file of this account's only (O_EXCL, O_NOFOLLOW) renamed into place, and an expired copy is
removed without following a link that took its name (kma/pacing.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kma.appliance import Appliance
from kma.audit.record import Condition, Retention
from kma.backup.fileformat import DATABASE_SUFFIX
from kma.domain.actor import Actor
from kma.errors import KmaError, ValidationFailed
from kma.pacing import copy_gradually, remove_gradually
from kma.store import Batch, Stmt
from kma.worker import Worker

CHECK_S = 10.0  # a check is one small query
PERIODS = {"hourly": 3600, "daily": 86400}
FREQUENCIES = ("off", *PERIODS)
DEFAULT: dict[str, Any] = {
    "frequency": "off",
    "folder": "",
    "keep": 7,
    "updated_at": None,
    "updated_by": None,
    "last_attempt_at": None,
    "last_error": None,
}


def get_schedule(kma: Appliance) -> dict[str, Any]:
    row = kma.store.query_one("SELECT * FROM backup_schedules WHERE kma_id = ?", (kma.kma_id,))
    out: dict[str, Any] = dict(DEFAULT) if row is None else {k: row[k] for k in DEFAULT}
    last = kma.store.scalar(
        "SELECT max(created_at) FROM backups WHERE kma_id = ? AND scheduled = 1", (kma.kma_id,)
    )
    period = PERIODS.get(out["frequency"])
    due = None if period is None else (out["last_attempt_at"] or 0) + period
    return {**out, "kma_id": kma.kma_id, "last_scheduled_backup_at": last, "next_at": due}


def set_schedule(kma: Appliance, actor: Actor, frequency: str, folder: str, keep: int) -> dict[str, Any]:
    if frequency not in FREQUENCIES:
        raise ValidationFailed(f"The frequency must be one of {', '.join(FREQUENCIES)}.")
    if not 1 <= keep <= 1000:
        raise ValidationFailed("Keep between 1 and 1,000 scheduled backups.")
    if frequency != "off":
        check_folder(folder)
    now = kma.clock.now()
    kma.commit(
        actor,
        "backup.schedule",
        [
            Stmt(
                "INSERT INTO backup_schedules (kma_id, frequency, folder, keep, updated_at, updated_by) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (kma_id) DO UPDATE SET "
                "frequency = excluded.frequency, folder = excluded.folder, keep = excluded.keep, "
                "updated_at = excluded.updated_at, updated_by = excluded.updated_by, last_error = NULL",
                (kma.kma_id, frequency, folder, keep, now, actor.entity_id),
            )
        ],
        f"set KMA {kma.kma_id}'s backup schedule: {frequency}"
        + (f" into {folder}, keeping {keep}" if frequency != "off" else ""),
        ("kma", kma.kma_id),
    )
    backup_scheduler(kma).wake()
    return get_schedule(kma)


def check_folder(folder: str) -> None:
    path = Path(folder)
    if not folder or "\x00" in folder or not path.is_absolute():
        raise ValidationFailed("The target folder must be an absolute path on the KMA's machine.")
    try:
        is_dir = path.is_dir()
    except (OSError, ValueError):
        is_dir = False
    if not is_dir:
        raise ValidationFailed(f"The target folder {folder} does not exist on the KMA's machine.")
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValidationFailed(f"The KMA cannot write into {folder}.")


def run_if_due(kma: Appliance) -> str | None:
    """Take a scheduled backup when a period has passed since the last attempt; its ID, or None."""
    from kma.services.backups import backup_file, create_backup, delete_backup, list_backups

    schedule = get_schedule(kma)
    now = kma.clock.now()
    if schedule["next_at"] is None or now < schedule["next_at"]:
        return None
    kma.store.write(attempted(kma, "backup_schedules", now, None))
    try:
        check_folder(schedule["folder"])
        made = create_backup(kma, kma.itself, scheduled=True)
        target = Path(schedule["folder"]) / backup_file(kma, made["id"]).name
        part = target.with_name(target.name + ".part")
        part.unlink(missing_ok=True)  # a copy cut short, or a link planted there: the name only
        copy_gradually(backup_file(kma, made["id"]), part)
        os.replace(part, target)
    except (KmaError, OSError) as exc:
        run_failed(kma, "backup_schedules", "backup.scheduled", "scheduled database backup", now, exc)
        return None
    mine = [b for b in list_backups(kma) if b["scheduled"] and b["kma_id"] == kma.kma_id]
    for old in mine[schedule["keep"] :]:
        delete_backup(kma, kma.itself, old["id"], reason=f"expired (schedule keeps {schedule['keep']})")
        remove_gradually(Path(schedule["folder"]) / f"{old['id']}{DATABASE_SUFFIX}")
    return str(made["id"])


def attempted(kma: Appliance, table: str, now: int, error: str | None) -> Batch:
    """This KMA's attempt on its schedule in `table` (backup_schedules, report_schedules)."""
    return Batch(
        [
            Stmt(
                f"UPDATE {table} SET last_attempt_at = ?, last_error = ? WHERE kma_id = ?",
                (now, error, kma.kma_id),
            )
        ]
    )


def run_failed(kma: Appliance, table: str, operation: str, what: str, now: int, exc: Exception) -> None:
    """A scheduled run that failed: the schedule's `last_error`, and an audit event of severity
    error (an alert channel carrying it sends it on)."""
    if isinstance(exc, KmaError):
        reason = exc.message
    elif isinstance(exc, OSError) and exc.strerror:
        reason = f"{exc.strerror}: {exc.filename}"
    else:
        reason = str(exc)
    kma.store.write(attempted(kma, table, now, reason))
    kma.audit(
        kma.itself,
        operation,
        f"{what} failed: {reason}",
        condition=Condition.ERROR,
        subject=("kma", kma.kma_id),
        retention=Retention.LONG,
    )


class BackupScheduler(Worker):
    name = "kma-backup-schedule"
    pause_s = CHECK_S

    def __init__(self, kma: Appliance) -> None:
        super().__init__()
        self.kma = kma

    def work(self) -> float:
        made = run_if_due(self.kma)
        if made:
            self.log.info("scheduled database backup %s made", made)
        return CHECK_S


def backup_scheduler(kma: Appliance) -> BackupScheduler:
    """This KMA's one backup scheduler (`kma serve` starts it: kma/running.py)."""
    return kma.part(BackupScheduler)
