"""Verifying the audit chain in the background, with progress: no request waits on it.

At ten million events a whole verification takes minutes of hashing, far beyond a client's 15 s.
So an audit reader starts it (`start`, POST /audit-events/verification), or joins the one already
running: one per KMA at a time, in this KMA's worker thread. Anyone allowed to read the trail then
follows it (`current`, GET): events checked of the total, and once it has ended the result
(intact, or the first break: which event, and how far in), when it ended and who started it. Its
end is audited (`audit.verify`, by whoever started it).

It covers each chain up to the head recorded at its start (the KMA keeps appending meanwhile),
reading a few thousand events per query (kma/services/audit/audit_verification.py) with a short pause
between chunks, so the KMA's requests keep their share of the store and of the interpreter. A prune
(by this KMA or another) removing events below a new checkpoint while it runs would look like a
gap: a break found after the checkpoints changed starts the verification again from the new ones.

Old clients ask GET /audit-events/verify and wait for the report: that route joins the running
verification, or starts one, and waits up to `WAIT_S` for it. A small trail (the demo's, a few
thousand events: well under a second) is answered as before, every ask a new verification; a large
one answers 503 `verification_running` with the progress, and the next ask after it has ended
(within `RECENT_S`) gets its report rather than starting another that would not end in time.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from kma.appliance import Appliance
from kma.audit.chain import ChainReport
from kma.audit.record import Condition, Retention
from kma.domain.actor import Actor
from kma.errors import KmaError, VerificationRunning
from kma.services.audit.audit_verification import Stopped, check_chains, plan_verification
from kma.worker import Worker

log = logging.getLogger(__name__)

WAIT_S = 10.0  # the old route's wait: under the clients' 15 s timeout
RECENT_S = 300  # the old route answers with a verification that ended this recently
BETWEEN_CHUNKS_S = 0.005  # after each chunk (~70 ms of hashing): requests get the interpreter
RESTARTS = 2  # at most this many fresh starts after a prune changed the checkpoints meanwhile
# The worker's pause when no verification was asked for. It is woken when one is; a wake that
# lands just as a pause runs out is cleared unseen (kma/worker.py), so the pause is short enough
# that such a verification still starts within the old route's wait.
IDLE_S = 5.0


@dataclass(frozen=True)
class ChainVerification:
    """One verification as its followers see it."""

    state: str  # none (none ran since the KMA started) | running | finished | failed (`error`: why)
    started_at: int | None
    started_by: str | None
    finished_at: int | None
    events_checked: int
    events_total: int
    report: ChainReport | None  # once finished: intact, or the first break
    error: str | None


class _Job:
    """A verification's progress, written by the worker thread and read by requests."""

    def __init__(self, actor: Actor, now: int) -> None:
        self.actor = actor
        self.started_at = now
        self.checked = 0
        self.total = 0
        self.finished_at: int | None = None
        self.report: ChainReport | None = None
        self.error: str | None = None
        self.done = threading.Event()
        # An old client was told to ask again (GET /verify): its next ask gets this result.
        self.owed = False

    def progressed(self, checked: int, total: int) -> None:
        self.checked, self.total = checked, total

    def view(self) -> ChainVerification:
        state = "running" if not self.done.is_set() else "finished" if self.report is not None else "failed"
        return ChainVerification(
            state,
            self.started_at,
            self.actor.entity_id,
            self.finished_at,
            self.checked,
            self.total,
            self.report,
            self.error,
        )


class ChainVerifications(Worker):
    """This KMA's verification worker (`kma.part(ChainVerifications)`): the latest verification,
    and the thread that runs it, started at the first one asked for."""

    name = "kma-audit-verify"

    def __init__(self, kma: Appliance) -> None:
        super().__init__()
        self.kma = kma
        self._lock = threading.Lock()
        self.latest: _Job | None = None

    def begin(self, actor: Actor, recent_s: int | None = None) -> _Job:
        """The running verification, else (with `recent_s`) one that ended that recently whose
        result an old client was told to ask again for, else a new one."""
        with self._lock:
            job = self.latest
            if job is not None and not job.done.is_set():
                return job
            now = self.kma.clock.now()
            if job is not None and job.owed and job.finished_at is not None and recent_s is not None:
                if job.report is not None and now - job.finished_at <= recent_s:
                    return job
            job = self.latest = _Job(actor, now)
            if self._thread is None:
                self.start()
            self.wake()
            return job

    def work(self) -> float:
        job = self.latest
        while job is not None and not job.done.is_set() and not self.stopping:
            self._carry_out(job)
            job = self.latest  # one asked for as this one ended
        return IDLE_S

    def _carry_out(self, job: _Job) -> None:
        try:
            job.report = self._verify(job)
        except Stopped:
            job.error = "this KMA stopped before the verification ended"
        except Exception as exc:  # a store gone away: said to whoever follows it, and logged
            log.error("verifying the audit chain failed", exc_info=exc)
            job.error = f"the verification could not read the audit trail: {exc}"
        job.finished_at = self.kma.clock.now()
        if job.report is not None:  # recorded before anyone hears of the result
            self._audit(job, job.report)
        job.done.set()

    def _verify(self, job: _Job) -> ChainReport:
        store = self.kma.store
        ca_pem = self.kma.data_dir.ca_cert.read_bytes()
        for _ in range(RESTARTS + 1):
            with store.snapshot() as conn:
                plan = plan_verification(conn, ca_pem, to_heads=True)
            job.progressed(0, plan.total)
            report = check_chains(store.query, plan, job.progressed, self._between_chunks)
            job.progressed(report.events_checked, plan.total)  # a break's place, not its chunk's end
            mark = store.scalar("SELECT coalesce(max(id), 0) FROM audit_checkpoints")
            if report.intact or int(mark) == plan.checkpoint_mark:
                return report
            log.info("audit checkpoints changed during the verification (a prune?): verifying again")
        return report

    def _between_chunks(self) -> bool:
        time.sleep(BETWEEN_CHUNKS_S)
        return self.stopping

    def _audit(self, job: _Job, report: ChainReport) -> None:
        if report.intact:
            message = f"verified the audit trail: intact, {report.events_checked:,} events"
        else:
            at = f" at event #{report.first_bad_event_id}" if report.first_bad_event_id else ""
            message = (
                f"verified the audit trail: BROKEN{at} ({report.events_checked:,} events "
                f"checked): {report.reason}"
            )
        try:
            self.kma.audit(
                job.actor,
                "audit.verify",
                message,
                condition=Condition.SUCCESS if report.intact else Condition.ERROR,
                subject=("audit", "chain"),
                retention=Retention.LONG,
                event_class="audit",
            )
        except Exception as exc:  # the result stands; the event is lost with the store's write
            log.error("recording the audit verification's end failed: %s", message, exc_info=exc)


def start_audit_verification(kma: Appliance, actor: Actor) -> ChainVerification:
    """Start a verification, or join the one running."""
    return kma.part(ChainVerifications).begin(actor).view()


NONE = ChainVerification("none", None, None, None, 0, 0, None, None)


def get_audit_verification(kma: Appliance) -> ChainVerification:
    """The running verification, or the last one; `NONE` when none ran since this KMA started."""
    job = kma.part(ChainVerifications).latest
    return NONE if job is None else job.view()


def verify_audit_chain(kma: Appliance, actor: Actor, wait_s: float = WAIT_S) -> ChainReport:
    """For the old GET /audit-events/verify: the report, if a verification gives one within `wait_s`."""
    job = kma.part(ChainVerifications).begin(actor, recent_s=RECENT_S)
    if not job.done.wait(wait_s):
        job.owed = True
        raise VerificationRunning(
            f"The audit chain is being verified in the background ({job.checked:,} of "
            f"{job.total:,} events checked). Ask again once it has ended, or follow it: "
            "GET /api/v1/audit-events/verification."
        )
    if job.report is None:
        raise KmaError(f"The audit chain could not be verified: {job.error}.")
    job.owed = False
    return job.report
