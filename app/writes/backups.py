"""Backups: make, download and delete database backups, set their schedule, take the core
security backup."""

from __future__ import annotations

from pathlib import Path

from app.operations import OpContext
from app.writes import Write
from kms_client import Backup, KmsClient

create_backup = Write(KmsClient.create_backup, {"backups"}, "Backup made.")
delete_backup = Write(KmsClient.delete_backup, {"backups"}, "Backup {0} deleted.")
set_backup_schedule = Write(KmsClient.set_backup_schedule, {"backups"}, "Backup schedule saved.")
take_core_security_backup = Write(KmsClient.take_core_security_backup, {"backups"})


def _download(worker: OpContext, backup: Backup, dest: Path) -> int:
    """Save the file, reporting progress and stopping (leaving no file) when cancelled."""

    def progress(written: int, total: int) -> None:
        worker.check()
        worker.progress(
            f"Downloading backup {backup.id}… {written // 2**20:,} of {total // 2**20:,} MiB",
            written // 1024,
            total // 1024,
        )

    return int(worker.client.download_backup(backup.id, dest, progress))


download_backup = Write(_download, set())  # changes nothing: a copy of a backup
