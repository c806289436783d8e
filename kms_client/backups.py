"""Database backups and the core security backup (docs/api.md "Backups").

A part of `KmsClient`, given its connection; same threading rule: every method does network I/O,
never call one on the GUI thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ._http import segment
from .connection import Connection
from .reader import reader
from .wire import Backup, Backups, BackupSchedule, CoreSecurityBackupStatus

if TYPE_CHECKING:
    pass

BACKUP_TIMEOUT = 600.0
# A new file, then renamed over `dest`: any file already there (or planted as the .part) is replaced
# whole, never written through.
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
Progress = Callable[[int, int], None]  # bytes so far, bytes in all (0 when unknown)


class BackupCalls:
    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def list_backups(self) -> Backups:
        return self._connection.call("GET", "/backups", reader(Backups))

    def get_backup(self, id: str) -> Backup:
        return self._connection.call("GET", f"/backups/{segment(id)}", reader(Backup))

    def create_backup(self) -> Backup:
        """Make a database backup on the KMA (Backup Operator); it stays there until deleted. A large
        store takes a while: this waits up to BACKUP_TIMEOUT seconds."""
        return self._connection.call("POST", "/backups", reader(Backup), body={}, timeout=BACKUP_TIMEOUT)

    def delete_backup(self, id: str) -> None:
        self._connection.request("DELETE", f"/backups/{segment(id)}")

    def download_backup(self, id: str, dest: Path, progress: Progress | None = None) -> int:
        """Save a backup's file to `dest` (written beside it, then renamed, so a failed download
        leaves no half file); returns its size."""
        part = dest.with_name(dest.name + ".part")
        written = 0
        try:
            with self._connection.stream(f"/backups/{segment(id)}/file") as response:
                total = int(response.headers.get("content-length", 0))
                with _private_file(part) as sink:
                    for chunk in response.iter_bytes(1 << 20):
                        sink.write(chunk)
                        written += len(chunk)
                        if progress is not None:
                            progress(written, total)
            os.replace(part, dest)
        finally:
            part.unlink(missing_ok=True)
        return written

    def backup_schedule(self) -> BackupSchedule:
        """The schedule of the KMA this client talks to (each KMA has its own)."""
        return self._connection.call("GET", "/backups/schedule", reader(BackupSchedule))

    def set_backup_schedule(self, frequency: str, folder: str = "", keep: int = 7) -> BackupSchedule:
        """`frequency` off, hourly or daily; `folder` an absolute path on the KMA's machine."""
        body = {"frequency": frequency, "folder": folder, "keep": keep}
        return self._connection.call("PUT", "/backups/schedule", reader(BackupSchedule), body=body)

    def core_security_backup_status(self) -> CoreSecurityBackupStatus:
        return self._connection.call("GET", "/core-security-backup", reader(CoreSecurityBackupStatus))

    def take_core_security_backup(self, dest: Path) -> int:
        """Take the core security backup (Security Officer) and save it to `dest`; returns its size.
        Keep it offline: with M key split passphrases it opens every database backup."""
        data = self._connection.request("POST", "/core-security-backup").content
        part = dest.with_name(dest.name + ".part")
        try:
            with _private_file(part) as sink:
                sink.write(data)
            os.replace(part, dest)
        finally:
            part.unlink(missing_ok=True)
        return len(data)


def _private_file(path: Path) -> BinaryIO:
    """A new file for a backup, readable by this account only: 0600 on POSIX whatever the umask,
    like the KMA's own scheduled copies. Windows has no such mode: the file takes the ACL of the
    folder it is saved in (a user's own folders are private to them by default)."""
    path.unlink(missing_ok=True)  # a copy cut short before (a link: the link itself goes)
    return os.fdopen(os.open(path, _NEW_FILE, 0o600), "wb")
