"""Database backups (Backup Operator) and the core security backup (Security Officer)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import FileResponse

from kma.api import backup_schemas as schemas
from kma.api.deps import BackupsRead, BackupsWrite, CoreBackup, Kma
from kma.backup.fileformat import CORE_SUFFIX
from kma.services import backup_schedule, backups

router = APIRouter(tags=["backups"])


@router.get("/backups", response_model=schemas.Backups)
def list_backups(kma: Kma, actor: BackupsRead) -> dict[str, Any]:
    return {
        "items": backups.list_backups(kma),
        "core_security_backup": backups.core_security_backup_status(kma),
    }


@router.post("/backups", response_model=schemas.BackupMade, status_code=201)
def create_backup(kma: Kma, actor: BackupsWrite) -> dict[str, Any]:
    made = backups.create_backup(kma, actor)
    return {**asdict(made), "core_security_backup": backups.core_security_backup_status(kma)}


@router.get("/backups/schedule", response_model=schemas.BackupSchedule)
def get_backup_schedule(kma: Kma, actor: BackupsRead) -> backup_schedule.Schedule:
    return backup_schedule.get_backup_schedule(kma)


@router.put("/backups/schedule", response_model=schemas.BackupSchedule)
def set_backup_schedule(
    body: schemas.BackupScheduleSet, kma: Kma, actor: BackupsWrite
) -> backup_schedule.Schedule:
    return backup_schedule.set_backup_schedule(kma, actor, body.frequency, body.folder, body.keep)


@router.get("/backups/{backup_id}", response_model=schemas.Backup)
def get_backup(backup_id: str, kma: Kma, actor: BackupsRead) -> backups.BackupRow:
    return backups.get_backup(kma, backup_id)


@router.get("/backups/{backup_id}/file", response_class=FileResponse)
def download_backup(backup_id: str, kma: Kma, actor: BackupsWrite) -> FileResponse:
    path = backups.backup_file(kma, backup_id)
    return FileResponse(path, media_type="application/octet-stream", filename=path.name)


@router.delete("/backups/{backup_id}", status_code=204)
def delete_backup(backup_id: str, kma: Kma, actor: BackupsWrite) -> Response:
    backups.delete_backup(kma, actor, backup_id)
    return Response(status_code=204)


@router.get("/core-security-backup", response_model=schemas.CoreSecurityBackupStatus)
def core_security_backup_status(kma: Kma, actor: BackupsRead) -> backups.CoreStatus:
    return backups.core_security_backup_status(kma)


@router.post("/core-security-backup", response_class=Response)
def take_core_security_backup(kma: Kma, actor: CoreBackup) -> Response:
    data = backups.take_core_security_backup(kma, actor)
    name = f"core-security-backup-{kma.clock.now()}{CORE_SUFFIX}"
    return Response(
        data, media_type="application/json", headers={"Content-Disposition": f'attachment; filename="{name}"'}
    )
