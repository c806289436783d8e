"""Automatic pruning: when a Security Officer turns it on, the KMA prunes its audit trail daily.

It is the same prune as by hand (kma/services/audit/audit_retention.py): the whole trail is verified
first, events go only up to a signed checkpoint and only once older than their class's period,
and the prune is itself audited, here with the KMA as the actor. A locked KMA cannot sign a
checkpoint and waits until it is unlocked; a trail that does not verify is never pruned (each
refusal is audited, at most once an hour).
"""

from __future__ import annotations

import time

from kma.appliance import Appliance
from kma.errors import KmaError, KmaLocked
from kma.services.audit.audit_retention import prune_audit_events, prune_due, schedule_changed
from kma.worker import Worker

CHECK_S = 600.0  # how often the KMA asks whether a prune is due
RETRY_S = 3600.0  # after a refused or failed prune


class AutoPrune(Worker):
    name = "kma-audit-pruner"
    pause_s = CHECK_S

    def __init__(self, kma: Appliance) -> None:
        super().__init__(wake=schedule_changed(kma))  # set by a Security Officer's change of the schedule
        self.kma = kma
        self._retry_at = 0.0

    def work(self) -> float:
        if self.woken:  # the schedule changed: look now, whatever failed before
            self._retry_at = 0.0
        if time.monotonic() < self._retry_at or self.kma.vault.locked:
            return CHECK_S
        try:
            if prune_due(self.kma):
                result = prune_audit_events(self.kma, self.kma.itself)
                self.log.info("pruned %d audit events on schedule", result.removed)
        except KmaLocked:
            pass  # locked meanwhile: unlocking does not need us, the next check will do
        except KmaError as exc:  # e.g. the trail does not verify: refused, and audited
            self.log.warning("scheduled audit pruning refused: %s", exc.message)
            self._retry_at = time.monotonic() + RETRY_S
        return CHECK_S

    def failed(self, exc: Exception) -> float:
        self._retry_at = time.monotonic() + RETRY_S
        return super().failed(exc)


def auto_prune(kma: Appliance) -> AutoPrune:
    """This KMA's one automatic pruner (`kma serve` starts it: kma/runtime/running.py)."""
    return kma.part(AutoPrune)
