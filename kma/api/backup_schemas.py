"""Response bodies of the backup routes (kma/api/routes/backups.py)."""

from __future__ import annotations

from kma.api.schemas import Response, Time


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
    deleted_at: Time | None
    deleted_by: str | None


class BackupMade(Backup):
    core_security_backup: CoreSecurityBackupStatus


class Backups(Response):
    items: list[Backup]
    core_security_backup: CoreSecurityBackupStatus
