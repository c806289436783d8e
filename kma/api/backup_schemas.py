"""Response bodies of the backup routes (kma/api/routes/backups.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from kma.api.schemas import Request, Response, Time


class CoreSecurityBackupStatus(Response):
    exists: bool
    up_to_date: bool  # false also after a key split change: take a new one
    created_at: Time | None
    created_by: str | None
    message: str


class Backup(Response):
    id: str
    kma_id: str
    created_at: Time
    created_by: str
    scheduled: bool
    size: int
    sha256: str
    keys: int
    audit_events: int
    schema_version: int
    deleted_at: Time | None = None
    deleted_by: str | None = None


class BackupMade(Backup):
    core_security_backup: CoreSecurityBackupStatus


class Backups(Response):
    items: list[Backup]
    core_security_backup: CoreSecurityBackupStatus


class BackupSchedule(Response):
    kma_id: str  # the schedule is this KMA's: its folder is on this KMA's machine
    frequency: str  # off | hourly | daily
    folder: str
    keep: int
    updated_at: Time | None
    updated_by: str | None
    last_attempt_at: Time | None
    last_error: str | None  # the last attempt's failure (also an audit event of severity error)
    last_scheduled_backup_at: Time | None
    next_at: Time | None


class BackupScheduleSet(Request):
    frequency: Literal["off", "hourly", "daily"]
    folder: Annotated[str, Field(max_length=4096)] = ""
    keep: Annotated[int, Field(ge=1, le=1000)] = 7
