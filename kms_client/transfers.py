"""Transfer files (docs/transfer.md): what `KmsClient` adds to the generated calls is uploading a
file for an import as it is read (`upload_transfer_file`), following a transfer job
(`start_transfer_export`, `start_transfer_import`) to its end with its progress, and saving a
finished export job's file as it downloads.
Same threading rule: network I/O, never on the GUI thread.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from ._http import segment
from .calls import Calls
from .errors import api_error
from .reader import read
from .wire import TransferJob, TransferUpload

POLL_S = 1.0  # between two looks at a running job
UPLOAD_TIMEOUT_S = 600  # a 256 MiB file over a slow link


class TransferCalls(Calls):
    def upload_transfer_file(self, source: Path) -> TransferUpload:
        """Sends the transfer file at `source` to the KMA as it reads it (`POST /transfer-uploads`,
        the file as the body, never held whole here); the upload, whose `id` the preview, the
        import and the import job name. Yours only; kept an hour unless an import uses it."""
        with source.open("rb") as file:
            response = self._connection.upload("/transfer-uploads", file, timeout=UPLOAD_TIMEOUT_S)
        return read(TransferUpload, response.json())

    def follow_transfer_job(
        self,
        job: TransferJob,
        progress: Callable[[TransferJob], None] | None = None,
        poll_s: float | None = None,
    ) -> TransferJob:
        """Asks for the job every `poll_s` seconds until it ends, telling `progress` each time; the
        finished job (its answer in `exported`, `imported` or `pending_op`), or the job's failure
        raised as the error the synchronous call would have raised."""
        while True:
            if progress is not None:
                progress(job)
            if job.state != "running":
                break
            time.sleep(POLL_S if poll_s is None else poll_s)
            job = self.get_transfer_job(job.id)
        if job.error is not None:
            raise api_error(job.error.status, job.error.code, job.error.message)
        return job

    def get_transfer_job_file(self, job_id: str, dest: Path) -> int:
        """Saves a finished export job's transfer file to `dest` (a new file: an existing one is
        never overwritten) as it downloads, a piece at a time; the bytes written. A download cut
        short leaves no file behind."""
        written = 0
        with self._connection.stream(f"/transfer-jobs/{segment(job_id)}/file", timeout=600) as response:
            try:
                with dest.open("xb") as out:
                    for chunk in response.iter_bytes():
                        out.write(chunk)
                        written += len(chunk)
                    out.flush()
                    os.fsync(out.fileno())
            except FileExistsError:
                raise
            except BaseException:
                dest.unlink(missing_ok=True)
                raise
        return written
