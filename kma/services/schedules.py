"""What the backup and report schedules share (kma/services/backup_schedule.py,
kma/services/reports/report_schedule.py): each is this KMA's, into a folder on its machine, and run by a
worker that looks every CHECK_S seconds (every second under a test clock, whose days pass in a
moment) whether a period has passed since the last attempt. A failed attempt is recorded (the
schedule's `last_error`) and audited with severity error, and the next waits a period, so a broken
schedule is reported once per period, not once a minute."""

from __future__ import annotations

import os
from pathlib import Path

from kma.appliance import Appliance
from kma.audit.record import Condition, Retention
from kma.errors import KmaError, ValidationFailed
from kma.store import Batch, Stmt
from kma.worker import Worker

CHECK_S = 10.0  # a check is one small query
TEST_CLOCK_CHECK_S = 1.0  # under a test clock a day passes in a moment: look every second


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


class Scheduler(Worker):
    """A schedule's worker: `run` makes what is due, and says what it made (None: nothing)."""

    pause_s = CHECK_S

    def __init__(self, kma: Appliance) -> None:
        super().__init__()
        self.kma = kma
        self.check_s = TEST_CLOCK_CHECK_S if kma.test_clock else CHECK_S

    def run(self) -> str | None:
        raise NotImplementedError

    def work(self) -> float:
        made = self.run()
        if made:
            self.log.info("%s", made)
        return self.check_s
