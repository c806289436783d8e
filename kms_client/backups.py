"""Database backups and the core security backup (docs/api.md "Backups").

A mixin of `KmsClient`, like `AuditMethods`; same threading rule: every method does network I/O,
never call one on the GUI thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from ._http import error_from_response, segment, translated_transport_errors
from .reader import JsonObject, read, reader
from .wire import Backup, Backups, BackupSchedule, CoreSecurityBackupStatus

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")
BACKUP_TIMEOUT = 600.0
# A new file, then renamed over `dest`: any file already there (or planted as the .part) is replaced
# whole, never written through.
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
Progress = Callable[[int, int], None]  # bytes so far, bytes in all (0 when unknown)


class BackupMethods:
    if TYPE_CHECKING:
        _http: httpx.Client
        _address: str
        _timeout: float
        _token: str | None

        def _call(self, method: str, path: str, parse: Callable[[JsonObject], T], *,
                  params: dict[str, str] | None = None, body: dict[str, Any] | None = None,
                  auth: bool = True) -> T: ...  # fmt: skip

        def _request(self, method: str, path: str, *, params: dict[str, str] | None = None,
                     body: dict[str, Any] | None = None,
                     auth: bool = True) -> httpx.Response: ...  # fmt: skip

    def list_backups(self) -> Backups:
        return self._call("GET", "/backups", reader(Backups))

    def get_backup(self, id: str) -> Backup:
        return self._call("GET", f"/backups/{segment(id)}", reader(Backup))

    def create_backup(self) -> Backup:
        """Make a database backup on the KMA (Backup Operator); it stays there until deleted. A large
        store takes a while: this waits up to BACKUP_TIMEOUT seconds."""
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        with translated_transport_errors(self._address, BACKUP_TIMEOUT):
            response = self._http.post("/backups", json={}, headers=headers, timeout=BACKUP_TIMEOUT)
        if response.is_error:
            raise error_from_response(response)
        return read(Backup, response.json())

    def delete_backup(self, id: str) -> None:
        self._request("DELETE", f"/backups/{segment(id)}")

    def download_backup(self, id: str, dest: Path, progress: Progress | None = None) -> int:
        """Save a backup's file to `dest` (written beside it, then renamed, so a failed download
        leaves no half file); returns its size."""
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        part = dest.with_name(dest.name + ".part")
        written = 0
        try:
            with (
                translated_transport_errors(self._address, self._timeout),
                self._http.stream("GET", f"/backups/{segment(id)}/file", headers=headers) as response,
            ):
                if response.is_error:
                    response.read()
                    raise error_from_response(response)
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
        return self._call("GET", "/backups/schedule", reader(BackupSchedule))

    def set_backup_schedule(self, frequency: str, folder: str = "", keep: int = 7) -> BackupSchedule:
        """`frequency` off, hourly or daily; `folder` an absolute path on the KMA's machine."""
        body = {"frequency": frequency, "folder": folder, "keep": keep}
        return self._call("PUT", "/backups/schedule", reader(BackupSchedule), body=body)

    def core_security_backup_status(self) -> CoreSecurityBackupStatus:
        return self._call("GET", "/core-security-backup", reader(CoreSecurityBackupStatus))

    def take_core_security_backup(self, dest: Path) -> int:
        """Take the core security backup (Security Officer) and save it to `dest`; returns its size.
        Keep it offline: with M key split passphrases it opens every database backup."""
        data = self._request("POST", "/core-security-backup").content
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
