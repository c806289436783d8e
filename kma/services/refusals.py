"""Refusals of peers the KMA does not know, audited at a bounded rate.

A refused TLS handshake, a malformed request from nobody in particular or an enrollment for an
agent ID that does not exist is audited like any refusal, but anyone can send those as fast as
the network allows. So at most `per_second` of them are recorded one by one each second; the rest
are counted and reported in one `service.throttled` event, and the audit trail cannot be flooded.
Refusals by known agents and users are not throttled.
"""

from __future__ import annotations

import threading
import time

from kma.appliance import Appliance
from kma.audit.record import Condition, Retention
from kma.domain.actor import Actor

PER_SECOND = 20


class RefusalThrottle:
    def __init__(self, per_second: int = PER_SECOND) -> None:
        self.per_second = per_second
        self._lock = threading.Lock()
        self._window = 0
        self._used = 0
        self._dropped = 0

    def admit(self) -> tuple[bool, int]:
        """(record this refusal?, refusals dropped in the previous second, to report now)."""
        now = int(time.monotonic())
        with self._lock:
            report = 0
            if now != self._window:
                self._window, self._used, report, self._dropped = now, 0, self._dropped, 0
            self._used += 1
            if self._used > self.per_second:
                self._dropped += 1
                return False, report
            return True, report


UNKNOWN_PEERS = RefusalThrottle()  # one per KMA process: TLS, KMIP and enrollment share it


def throttled_summary(actor: Actor, dropped: int) -> tuple[Actor, str, str]:
    return (
        actor,
        "service.throttled",
        (f"{dropped} more refusals of unknown peers in one second were not recorded one by one"),
    )


def audit_unknown(kma: Appliance, address: str, operation: str, message: str) -> None:
    """Audit one refusal of an unknown peer, within the rate (blocking: a worker thread's call)."""
    record, dropped = UNKNOWN_PEERS.admit()
    actor = Actor("unknown", address, kind="agent")
    if dropped:
        kma.audit(*throttled_summary(actor, dropped), Condition.WARNING, retention=Retention.MEDIUM)
    if record:
        kma.audit(actor, operation, message, Condition.ERROR, retention=Retention.MEDIUM)
