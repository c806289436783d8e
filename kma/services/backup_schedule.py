"""Scheduled database backups: off, hourly or daily, into a folder on this KMA's machine, keeping
the newest N (older scheduled backups expire: deleted like by hand, which may complete the
destruction of keys they held).

The schedule is this KMA's (`backup_schedules`, one row per KMA). A worker (kma/services/schedules.py)
looks every CHECK_S seconds whether a period has passed since the last attempt; a failed attempt (locked KMA,
no core security backup, folder gone or full) is an audit event of severity error, and the next
attempt waits a period, so a broken schedule is reported once per period, not once a minute.

The folder may be writable by others (a share, a backup medium): each copy goes to a new `.part`
file of this account's only (O_EXCL, O_NOFOLLOW) renamed into place, and an expired copy is
removed without following a link that took its name (kma/pacing.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kma.appliance import Appliance
from kma.backup.fileformat import DATABASE_SUFFIX
from kma.domain.actor import Actor
from kma.errors import KmaError, ValidationFailed
from kma.pacing import copy_gradually, remove_gradually
from kma.services.common import typed_row
from kma.services.schedules import Scheduler, attempted, check_folder, run_failed
from kma.store import Stmt

PERIODS = {"hourly": 3600, "daily": 86400}
FREQUENCIES = ("off", *PERIODS)


@dataclass(frozen=True)
class Schedule:
    """This KMA's backup schedule (times in seconds since the epoch); the API's `BackupSchedule`
    reads it."""

    kma_id: str  # the schedule is this KMA's: its folder is on this KMA's machine
    frequency: str = "off"
    folder: str = ""
    keep: int = 7
    updated_at: int | None = None
    updated_by: str | None = None
    last_attempt_at: int | None = None
    last_error: str | None = None  # the last attempt's failure (also an audit event)
    last_scheduled_backup_at: int | None = None

    @property
    def next_at(self) -> int | None:
        period = PERIODS.get(self.frequency)
        return None if period is None else (self.last_attempt_at or 0) + period


def get_backup_schedule(kma: Appliance) -> Schedule:
    row = kma.store.query_one("SELECT * FROM backup_schedules WHERE kma_id = ?", (kma.kma_id,))
    last = kma.store.scalar(
        "SELECT max(created_at) FROM backups WHERE kma_id = ? AND scheduled = 1", (kma.kma_id,)
    )
    if row is None:
        return Schedule(kma.kma_id, last_scheduled_backup_at=last)
    return typed_row(Schedule, {**dict(row), "kma_id": kma.kma_id, "last_scheduled_backup_at": last})


def set_backup_schedule(kma: Appliance, actor: Actor, frequency: str, folder: str, keep: int) -> Schedule:
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
    return get_backup_schedule(kma)


def run_if_due(kma: Appliance) -> str | None:
    """Take a scheduled backup when a period has passed since the last attempt; its ID, or None."""
    from kma.services.backups import backup_file, create_backup, delete_backup, list_backups

    schedule = get_backup_schedule(kma)
    now = kma.clock.now()
    if schedule.next_at is None or now < schedule.next_at:
        return None
    kma.store.write(attempted(kma, "backup_schedules", now, None))
    try:
        check_folder(schedule.folder)
        made = create_backup(kma, kma.itself, scheduled=True)
        target = Path(schedule.folder) / backup_file(kma, made.id).name
        part = target.with_name(target.name + ".part")
        part.unlink(missing_ok=True)  # a copy cut short, or a link planted there: the name only
        copy_gradually(backup_file(kma, made.id), part)
        os.replace(part, target)
    except (KmaError, OSError) as exc:
        run_failed(kma, "backup_schedules", "backup.scheduled", "scheduled database backup", now, exc)
        return None
    mine = [b for b in list_backups(kma) if b.scheduled and b.kma_id == kma.kma_id]
    for old in mine[schedule.keep :]:
        delete_backup(kma, kma.itself, old.id, reason=f"expired (schedule keeps {schedule.keep})")
        remove_gradually(Path(schedule.folder) / f"{old.id}{DATABASE_SUFFIX}")
    return made.id


class BackupScheduler(Scheduler):
    name = "kma-backup-schedule"

    def run(self) -> str | None:
        made = run_if_due(self.kma)
        return f"scheduled database backup {made} made" if made else None


def backup_scheduler(kma: Appliance) -> BackupScheduler:
    """This KMA's one backup scheduler (`kma serve` starts it: kma/runtime/running.py)."""
    return kma.part(BackupScheduler)
