"""Backups: make, download and delete database backups, set their schedule, take the core
security backup."""

from __future__ import annotations

from pathlib import Path

from app.operations import OpContext
from kms_client import Backup, BackupSchedule


def create_backup(worker: OpContext) -> Backup:
    return worker.client.create_backup()


def delete_backup(worker: OpContext, id: str) -> None:
    return worker.client.delete_backup(id)


def set_backup_schedule(worker: OpContext, frequency: str, folder: str, keep: int) -> BackupSchedule:
    return worker.client.set_backup_schedule(frequency, folder, keep)


def take_core_security_backup(worker: OpContext, dest: Path) -> int:
    return int(worker.client.take_core_security_backup(dest))


def download_backup(worker: OpContext, backup: Backup, dest: Path) -> int:
    """Save the file, reporting progress and stopping (leaving no file) when cancelled."""

    def progress(written: int, total: int) -> None:
        worker.check()
        worker.progress(f"Downloading backup {backup.id}… {written // 2**20:,} of {total // 2**20:,} MiB",
                        written // 1024, total // 1024)  # fmt: skip

    return int(worker.client.download_backup(backup.id, dest, progress))
