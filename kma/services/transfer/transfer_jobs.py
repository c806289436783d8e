"""Transfer exports and imports as background jobs whose progress a client polls (docs/transfer.md).

A 100,000-unit export or import takes a minute or more. Started as a job, its request answers at
once with the job's ID; the client asks `GET /transfer-jobs/{id}` every second or so and shows
"12,000 of 100,000 data units", then takes the answer (the export's file, the import's counts, or
the pending quorum operation) from the finished job. Plain requests, as every other call of the
API: nothing new for the client's connection, its proxies or its time-outs. The synchronous
`POST /transfer-exports` and `/transfer-imports` remain, for scripts and earlier clients.

A job is this KMA process's: it is gone after a restart (an import re-run finishes what it began,
docs/transfer.md), its answer is kept for `KEEP_S` after it ends, and at most `MOST_RUNNING` run
at once on a KMA. Whoever may see the transfer partners may follow any job: it holds counts, and a
file that only its partner opens (the audit trail names what left and came in already).
"""

from __future__ import annotations

import contextvars
import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kma.appliance import Appliance
from kma.domain.actor import Actor
from kma.errors import Conflict, KmaError, NotFound

log = logging.getLogger(__name__)

KEEP_S = 3600  # a finished job's answer is kept this long (an export's file with it)
MOST_RUNNING = 2  # jobs at once on one KMA: each holds its file in memory


@dataclass(frozen=True)
class TransferJob:
    id: str
    kind: str  # "export" or "import"
    started_by: str  # the entity that started it
    state: str  # "running", "done", "failed"
    phase: str  # what it does now, in words: "reading keys", "checking the file", "writing"
    done: int  # data units so far
    total: int  # data units in all (0 while not known yet)
    started_at: int
    finished_at: int | None = None
    error_status: int | None = None
    error_code: str | None = None
    error_message: str | None = None
    result: dict[str, Any] | None = None  # the export's or the import's answer, or a pending op


_CURRENT: contextvars.ContextVar[Callable[[str, int, int], None] | None] = contextvars.ContextVar(
    "transfer_job_progress", default=None
)


def report(phase: str, done: int, total: int) -> None:
    """Progress of the job this thread runs (a no-op outside a job: a synchronous request, or an
    import a quorum approval ran)."""
    progress = _CURRENT.get()
    if progress is not None:
        progress(phase, done, total)


class TransferJobs:
    """This KMA's jobs (`kma.part(TransferJobs)`)."""

    def __init__(self, kma: Appliance) -> None:
        self._kma = kma
        self._jobs: dict[str, TransferJob] = {}
        self._lock = threading.Lock()

    def start(self, actor: Actor, kind: str, work: Callable[[], dict[str, Any]]) -> TransferJob:
        now = self._kma.clock.now()
        with self._lock:
            for old in [j for j in self._jobs.values() if j.finished_at and j.finished_at + KEEP_S < now]:
                del self._jobs[old.id]
            if sum(j.state == "running" for j in self._jobs.values()) >= MOST_RUNNING:
                raise Conflict(
                    f"{MOST_RUNNING} transfer jobs are running on this KMA; start this one when one has "
                    "ended."
                )
            job = TransferJob(secrets.token_hex(8), kind, actor.entity_id, "running", "starting", 0, 0, now)
            self._jobs[job.id] = job
        thread = threading.Thread(
            target=self._run, args=(job.id, work), name=f"transfer-{kind}-{job.id}", daemon=True
        )
        thread.start()
        return job

    def get(self, job_id: str) -> TransferJob:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise NotFound(
                f"There is no transfer job '{job_id[:64]}' on this KMA (a job is forgotten when the KMA "
                "restarts, and an hour after it ends)."
            )
        return job

    def _update(self, job_id: str, **changes: Any) -> None:
        with self._lock:
            self._jobs[job_id] = replace(self._jobs[job_id], **changes)

    def _run(self, job_id: str, work: Callable[[], dict[str, Any]]) -> None:
        def progress(phase: str, done: int, total: int) -> None:
            self._update(job_id, phase=phase, done=done, total=total)

        _CURRENT.set(progress)
        try:
            result = work()
        except KmaError as exc:
            self._end(job_id, error_status=exc.status, error_code=exc.code, error_message=exc.message)
        except Exception:
            log.exception("transfer job %s failed", job_id)
            self._end(
                job_id,
                error_status=500,
                error_code="internal",
                error_message="The transfer job failed on the KMA; its log says why.",
            )
        else:
            self._end(job_id, result=result)

    def _end(self, job_id: str, **changes: Any) -> None:
        state = "failed" if changes.get("error_code") else "done"
        self._update(job_id, state=state, phase=state, finished_at=self._kma.clock.now(), **changes)
