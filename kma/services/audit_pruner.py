"""Automatic pruning: when a Security Officer turns it on, the KMA prunes its audit trail daily.

It is the same prune as by hand (kma/services/audit_retention.py): the whole trail is verified
first, events go only up to a signed checkpoint and only once older than their class's period,
and the prune is itself audited, here with the KMA as the actor. A locked KMA cannot sign a
checkpoint and waits until it is unlocked; a trail that does not verify is never pruned (each
refusal is audited, at most once an hour).
"""

from __future__ import annotations

import logging
import threading
import time

from kma.appliance import Appliance
from kma.errors import KmaError, KmaLocked
from kma.services.audit_retention import prune, prune_due, schedule_changed

log = logging.getLogger(__name__)
CHECK_S = 600.0  # how often the KMA asks whether a prune is due
RETRY_S = 3600.0  # after a refused or failed prune


class AutoPrune:
    def __init__(self, kma: Appliance) -> None:
        self.kma = kma
        self._wake = schedule_changed(kma)  # set by a Security Officer's change of the schedule
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._retry_at = 0.0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="kma-audit-pruner", daemon=True)
        self._wake.set()  # look once at start-up
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._wake.wait(CHECK_S):  # the schedule changed: look now, whatever failed before
                self._retry_at = 0.0
            self._wake.clear()
            if self._stop.is_set() or time.monotonic() < self._retry_at or self.kma.vault.locked:
                continue
            try:
                if prune_due(self.kma):
                    result = prune(self.kma, self.kma.itself)
                    log.info("pruned %d audit events on schedule", result["removed"])
            except KmaLocked:
                pass  # locked meanwhile: unlocking does not need us, the next check will do
            except KmaError as exc:  # e.g. the trail does not verify: refused, and audited
                log.warning("scheduled audit pruning refused: %s", exc.message)
                self._retry_at = time.monotonic() + RETRY_S
            except Exception:
                log.exception("scheduled audit pruning failed")
                self._retry_at = time.monotonic() + RETRY_S
