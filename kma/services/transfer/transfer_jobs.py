"""Transfer exports and imports as background jobs whose progress a client polls (docs/transfer.md).

A 100,000-unit export or import takes a minute or more. Started as a job, its request answers at
once with the job's ID; the client asks `GET /transfer-jobs/{id}` every second or so and shows
"12,000 of 100,000 data units", then takes the answer (the export's file, the import's counts, or
the pending quorum operation) from the finished job. Plain requests, as every other call of the
API: nothing new for the client's connection, its proxies or its time-outs. The synchronous
`POST /transfer-exports` and `/transfer-imports` remain, for scripts and earlier clients.

A job is a row of the store (`transfer_jobs`, replicated on a cluster), so any KMA of the cluster
answers for it, and a restart does not lose it: the KMA that runs a job writes its progress (an
import's in the very transaction of each batch, so `done` is what the store holds) and touches it
every `HEARTBEAT_S`. A job left 'running' by a KMA that restarted, or that no KMA touched for
`STALE_S`, is shown **interrupted**, with what it did; an import job holds its file
(`transfer_job_files`) and is resumed by `resume` on any KMA (the batches are idempotent: what is
here is skipped). At most `MOST_RUNNING` run at once on a KMA; a finished job is kept `KEEP_S`, an
interrupted one `KEEP_INTERRUPTED_S`. Whoever may see the transfer partners may follow any job: it
holds counts, and a file that only its partner opens (the audit trail names what left and came in).
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from kma.appliance import Appliance
from kma.crypto.transfer_stream import Source
from kma.domain.actor import Actor
from kma.errors import Conflict, KmaError, NotFound
from kma.pacing import Pace
from kma.services.paging import ListQuery, Page, PageRequest, list_page
from kma.services.transfer import heap_look, held_parts, transfer_uploads
from kma.services.transfer.transfer_uploads import TransferUploadRow
from kma.store import Batch, Refused, Stmt

log = logging.getLogger(__name__)

KEEP_S = 3600  # a finished job's answer is kept this long (an export's file with it)
KEEP_INTERRUPTED_S = 7 * 86400  # an interrupted job (an import's file with it), to be resumed
MOST_RUNNING = 2  # jobs at once on one KMA
HEARTBEAT_S = 5.0  # the running KMA touches its job at least this often
STALE_S = 30  # a 'running' job untouched this long: its KMA stopped (it is interrupted)
PROGRESS_S = 1.0  # between two writes of a job's progress (a row replicated on a cluster)
# Bytes per row of a job's file, each its own transaction: a drive's commit waits behind one
# 256 KiB write at most.
PART = 256 * 1024
DOWNLOAD_SHARE = 0.5  # of a core, while a job's file is handed out

_COLUMNS = (
    "id, kind, started_by, kma_id, state, phase, done, total, key_group_id, started_at, "
    "updated_at, finished_at, error_status, error_code, error_message, result"
)

LIST = ListQuery(
    select=f"SELECT {_COLUMNS} FROM transfer_jobs",
    sort_fields={"started_at": "started_at"},
    default_sort="started_at",
    default_order="desc",
    search=("id", "kind", "started_by", "key_group_id"),
)

_INSERT = (
    f"INSERT INTO transfer_jobs ({_COLUMNS}) VALUES "
    "(?, ?, ?, ?, 'running', 'starting', 0, 0, ?, ?, ?, NULL, NULL, NULL, NULL, NULL)"
)


@dataclass(frozen=True)
class TransferJob:
    id: str
    kind: str  # "export" or "import"
    started_by: str  # the entity that started it (or resumed it last)
    kma_id: str  # the KMA that runs it (or ran it)
    state: str  # "running", "done", "failed", "interrupted"
    phase: str  # what it does now, in words: "reading keys", "checking the file", "writing"
    done: int  # data units so far
    total: int  # data units in all (0 while not known yet)
    started_at: int
    updated_at: int
    finished_at: int | None = None
    error_status: int | None = None
    error_code: str | None = None
    error_message: str | None = None
    result: dict[str, Any] | None = None  # the export's or the import's answer, or a pending op
    key_group_id: str | None = None  # an import's


class _Running:
    """The job this thread runs: where its progress goes."""

    def __init__(self, jobs: TransferJobs, job_id: str, offset: int) -> None:
        self.jobs, self.job_id, self.offset = jobs, job_id, offset
        self.phase, self.written = "", 0.0
        self.file: HeldFile | None = None  # an export's, written as it is made

    def statement(self, phase: str, done: int, total: int) -> Stmt:
        if phase == "writing":  # a resumed import counts what the interrupted run wrote too
            done, total = done + self.offset, total + self.offset
        self.phase, self.written = phase, time.monotonic()
        return Stmt(
            "UPDATE transfer_jobs SET phase = ?, done = ?, total = ?, updated_at = ? WHERE id = ?",
            (phase, done, total, self.jobs.kma.clock.now(), self.job_id),
        )


_CURRENT: contextvars.ContextVar[_Running | None] = contextvars.ContextVar("transfer_job", default=None)


def report(phase: str, done: int, total: int) -> None:
    """Progress of the job this thread runs (a no-op outside a job: a synchronous request, or an
    import a quorum approval ran). Written at most every `PROGRESS_S`, and at each new phase."""
    running = _CURRENT.get()
    if running is not None and phase != running.phase:
        heap_look.look(running.job_id, running.phase or "starting")  # the phase that ends (bench only)
    if running is not None and (phase != running.phase or time.monotonic() - running.written >= PROGRESS_S):
        running.jobs.kma.store.write(Batch([running.statement(phase, done, total)]))


def noted(phase: str, done: int, total: int) -> list[Stmt]:
    """The job's progress as a statement of the caller's own batch (an import's batch: the job's
    `done` is then exactly what the store holds, also after a crash); none outside a job."""
    running = _CURRENT.get()
    return [] if running is None else [running.statement(phase, done, total)]


def file_sink() -> Callable[[bytes], None] | None:
    """Where the job this thread runs writes its file as it is made (held with the job, a part of
    `PART` at a time); None outside a job (a synchronous export answers with its file)."""
    running = _CURRENT.get()
    if running is None:
        return None
    if running.file is None:
        running.file = HeldFile(running.jobs.kma, running.job_id)
    return running.file.write


class HeldFile:
    """A job's file, written to the store as it comes, a part of `PART` bytes at a time."""

    def __init__(self, kma: Appliance, job_id: str) -> None:
        self.kma, self.job_id = kma, job_id
        self.parts, self.hashed = 0, hashlib.sha256()
        self._buffer = bytearray()

    def write(self, data: bytes) -> None:
        self._buffer += data
        self.hashed.update(data)
        while len(self._buffer) >= PART:
            self._flush(bytes(self._buffer[:PART]))
            del self._buffer[:PART]

    def _flush(self, part: bytes) -> None:
        sql = "INSERT INTO transfer_job_files (job_id, part, content) VALUES (?, ?, ?)"
        self.kma.store.write(Batch([Stmt(sql, (self.job_id, self.parts, part))]))
        self.parts += 1

    def close(self) -> str:
        """Writes what is left; the file's SHA-256."""
        if self._buffer:
            self._flush(bytes(self._buffer))
            self._buffer.clear()
        return self.hashed.hexdigest()


class TransferJobs:
    """This KMA's side of the jobs (`kma.part(TransferJobs)`): which it runs, and their threads."""

    def __init__(self, kma: Appliance) -> None:
        self.kma = kma
        self._running: set[str] = set()  # the jobs this process runs
        self._lock = threading.Lock()

    def start(
        self,
        actor: Actor,
        kind: str,
        work: Callable[[str], dict[str, Any]],
        upload: TransferUploadRow | None = None,
        key_group_id: str | None = None,
    ) -> TransferJob:
        """A new job running `work(job_id)`; an import's `upload` becomes the file held with it
        (`held_file`), which it reads and is resumed from (the upload itself is removed)."""
        now = self.kma.clock.now()
        self._purge(now)
        job_id = self._claim(secrets.token_hex(8))
        try:
            row = (job_id, kind, actor.entity_id, self.kma.kma_id, key_group_id, now, now)
            self.kma.store.write(Batch([Stmt(_INSERT, row)]))
            if upload is not None:
                self._take(job_id, upload)
        except BaseException:
            self._release(job_id)
            raise
        self._launch(job_id, work, 0)
        return self.get(job_id)

    def _take(self, job_id: str, upload: TransferUploadRow) -> None:
        """The upload's parts copied to the job's file inside the store, one part a transaction (a
        drive's commit waits behind one at most), paced; the last with the file's SHA-256 and the
        upload's removal."""
        parts, pace = transfer_uploads.parts_of(self.kma, upload.id), Pace()
        table = ("transfer_job_files", "job_id", job_id)
        for n in range(parts):
            last = [
                Stmt("UPDATE transfer_jobs SET file_sha256 = ? WHERE id = ?", (upload.sha256, job_id)),
                transfer_uploads.removed(upload.id),
            ]
            copy = transfer_uploads.copied(upload.id, n, *table)
            self.kma.store.write(Batch([copy, *(last if n == parts - 1 else [])]))
            pace.rest()

    def resume(self, actor: Actor, job_id: str, work: Callable[[str], dict[str, Any]]) -> TransferJob:
        """An interrupted import job, run again from its held file on this KMA: the batches written
        before are skipped, the rest written; its count goes on from what was done."""
        job = self.get(job_id)
        if job.state != "interrupted":
            raise Conflict(f"Transfer job {job_id} is {job.state}: only an interrupted job is resumed.")
        if job.kind != "import":
            raise Conflict(
                "An interrupted export is not resumed (it wrote nothing and handed out no file): "
                "start the export again."
            )
        self._check_held(job_id)
        self._claim(job_id)
        try:
            self.kma.store.write(Batch([self._resumed(actor, job)]))
        except Refused as refused:
            self._release(job_id)
            raise Conflict(refused.message.capitalize() + ".") from None
        except BaseException:
            self._release(job_id)
            raise
        offset = job.done if job.phase == "writing" else 0
        self._launch(job_id, work, offset)
        return self.get(job_id)

    def _resumed(self, actor: Actor, job: TransferJob) -> Stmt:
        """The job, this KMA's now: unless another KMA resumed it since it was read."""
        return Stmt(
            "UPDATE transfer_jobs SET kma_id = :me, started_by = :by, phase = 'resuming', updated_at = :now "
            "WHERE id = :id AND state = 'running' AND kma_id = :kma AND updated_at = :seen",
            {
                "me": self.kma.kma_id,
                "by": actor.entity_id,
                "now": self.kma.clock.now(),
                "id": job.id,
                "kma": job.kma_id,
                "seen": job.updated_at,
            },
            expect=1,
            refusal=f"transfer job {job.id} was resumed meanwhile",
        )

    def get(self, job_id: str) -> TransferJob:
        row = self.kma.store.query_one(f"SELECT {_COLUMNS} FROM transfer_jobs WHERE id = ?", (job_id,))
        if row is None:
            raise NotFound(
                f"There is no transfer job '{job_id[:64]}' (a job is kept an hour after it ends, and "
                "an interrupted one a week)."
            )
        return self._job(row)

    def list(self, req: PageRequest) -> tuple[list[TransferJob], Page]:
        """The jobs the cluster keeps (newest first), where the manager shows them and resumes an
        interrupted import: those of one page, and the page (its cursor and counts)."""
        page = list_page(self.kma.store, LIST, req)
        return [self._job(r) for r in page.items], page

    def _job(self, row: Any) -> TransferJob:
        job = TransferJob(
            **{k: row[k] for k in row.keys() if k != "result"},
            result=None if row["result"] is None else json.loads(row["result"]),
        )
        if job.state == "running" and self._stopped(job):
            return _interrupted(job)
        return job

    def exported_file(self, job_id: str) -> Iterator[bytes]:
        """A finished export's file, held with its job, a part at a time."""
        job = self.get(job_id)
        if (job.kind, job.state) != ("export", "done"):
            raise Conflict(f"Transfer job {job_id} holds no file: it is an {job.kind} job, {job.state}.")
        return _paced(held_file(self.kma, job_id)())

    def _stopped(self, job: TransferJob) -> bool:
        """The KMA that runs the job restarted (it is this one and runs it no more), or is silent."""
        with self._lock:
            mine_gone = job.kma_id == self.kma.kma_id and job.id not in self._running
        return mine_gone or job.updated_at < self.kma.clock.now() - STALE_S

    def _claim(self, job_id: str) -> str:
        with self._lock:
            if len(self._running) >= MOST_RUNNING:
                raise Conflict(
                    f"{MOST_RUNNING} transfer jobs are running on this KMA; start this one when one "
                    "has ended."
                )
            if job_id in self._running:
                raise Conflict(f"Transfer job {job_id} runs on this KMA already.")
            self._running.add(job_id)
        return job_id

    def _release(self, job_id: str) -> None:
        with self._lock:
            self._running.discard(job_id)

    def _check_held(self, job_id: str) -> None:
        """A resume reads back only a file held whole (the KMA may have stopped while it was held)."""
        hashed = hashlib.sha256()
        for part in held_file(self.kma, job_id)():
            hashed.update(part)
        expected = self.kma.store.scalar("SELECT file_sha256 FROM transfer_jobs WHERE id = ?", (job_id,))
        if expected is None or hashed.hexdigest() != expected:
            raise Conflict(
                f"The file of transfer job {job_id} was not held whole when its KMA stopped: start the "
                "import again with the file."
            )

    def _launch(self, job_id: str, work: Callable[[str], dict[str, Any]], offset: int) -> None:
        threading.Thread(
            target=self._run, args=(job_id, work, offset), name=f"transfer-job-{job_id}", daemon=True
        ).start()

    def _run(self, job_id: str, work: Callable[[str], dict[str, Any]], offset: int) -> None:
        running = _Running(self, job_id, offset)
        _CURRENT.set(running)
        heap_look.start()
        beating = threading.Event()
        threading.Thread(target=self._heartbeat, args=(job_id, beating), daemon=True).start()
        try:
            try:
                result = work(job_id)
            except KmaError as exc:
                self._end(running, error=(exc.status, exc.code, exc.message))
            except Exception:
                log.exception("transfer job %s failed", job_id)
                self._end(
                    running, error=(500, "internal", "The transfer job failed on the KMA; its log says why.")
                )
            else:
                self._end(running, result=result)
        finally:
            heap_look.look(job_id, "ended")
            beating.set()
            self._release(job_id)

    def _heartbeat(self, job_id: str, ended: threading.Event) -> None:
        sql = "UPDATE transfer_jobs SET updated_at = ? WHERE id = ? AND kma_id = ? AND state = 'running'"
        while not ended.wait(HEARTBEAT_S):
            try:
                self.kma.store.write(Batch([Stmt(sql, (self.kma.clock.now(), job_id, self.kma.kma_id))]))
            except Exception:  # the store is busy or gone: the next beat tries again
                log.warning("transfer job %s: heartbeat not written", job_id, exc_info=True)

    def _end(
        self,
        running: _Running,
        result: dict[str, Any] | None = None,
        error: tuple[int, str, str] | None = None,
    ) -> None:
        """The job's end and answer; an import's held file goes (it is done with it), and so does a
        failed export's; a finished export's file stays, to be handed out, its SHA-256 with it."""
        sha = running.file.close() if running.file is not None and error is None else None
        now = self.kma.clock.now()
        status, code, message = error or (None, None, None)
        ended = Stmt(
            "UPDATE transfer_jobs SET state = :state, phase = :state, finished_at = :now, updated_at = :now, "
            "error_status = :status, error_code = :code, error_message = :message, result = :result, "
            "file_sha256 = :sha WHERE id = :id",
            {
                "state": "failed" if error else "done",
                "now": now,
                "status": status,
                "code": code,
                "message": message,
                "result": None if result is None else json.dumps(result),
                "sha": sha,
                "id": running.job_id,
            },
        )
        held = [] if sha else [Stmt("DELETE FROM transfer_job_files WHERE job_id = ?", (running.job_id,))]
        self.kma.store.write(Batch([*held, ended]))

    def _purge(self, now: int) -> None:
        """Jobs no longer kept (their files go with them, by a trigger)."""
        self.kma.store.write(
            Batch(
                [
                    Stmt(
                        "DELETE FROM transfer_jobs WHERE (state <> 'running' AND finished_at < ?) "
                        "OR (state = 'running' AND updated_at < ?)",
                        (now - KEEP_S, now - KEEP_INTERRUPTED_S),
                    )
                ]
            )
        )


def held_file(kma: Appliance, job_id: str) -> Source:
    """A job's file, read from the store a part at a time, from the start at each call."""
    return held_parts.held(kma, "transfer_job_files", "job_id", job_id)


def _paced(parts: Iterable[bytes]) -> Iterator[bytes]:
    """A download that rests between parts as long as it worked (reading a part, encrypting it for
    TLS), as a backup's copy does: the drives' requests keep the KMA meanwhile."""
    pace = Pace(DOWNLOAD_SHARE)
    for part in parts:
        yield part
        pace.rest()


def _interrupted(job: TransferJob) -> TransferJob:
    what = (
        f"after {job.done:,} of {job.total:,} data units were written (they are in the store)"
        if job.phase == "writing"
        else f"while {job.phase}"
    )
    then = (
        f"resume it to finish the import (POST /transfer-jobs/{job.id}/resume, or "
        f"kma transfer resume {job.id})"
        if job.kind == "import"
        else "nothing was handed out: start the export again"
    )
    return replace(
        job,
        state="interrupted",
        error_status=409,
        error_code="conflict",
        error_message=f"The KMA that ran this transfer job ({job.kma_id}) stopped {what}: {then}.",
    )
