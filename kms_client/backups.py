"""Database backups and the core security backup (docs/api.md "Backups").

What `KmsClient` adds to the generated calls (calls.py) here: the backup's longer wait, and the
files saved with progress. Same threading rule: network I/O, never on the GUI thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from ._http import segment
from .calls import Calls
from .reader import reader
from .wire import BackupMade

BACKUP_TIMEOUT = 600.0
# A new file, then renamed over `dest`: any file already there (or planted as the .part) is replaced
# whole, never written through.
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
Progress = Callable[[int, int], None]  # bytes so far, bytes in all (0 when unknown)


class BackupCalls(Calls):
    def create_backup(self) -> BackupMade:
        """Make a database backup on the KMA (Backup Operator); it stays there until deleted. A large
        store takes a while: this waits up to BACKUP_TIMEOUT seconds."""
        return self._connection.call("POST", "/backups", reader(BackupMade), body={}, timeout=BACKUP_TIMEOUT)

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
