"""Refusals of peers the KMA does not know, audited at a bounded rate.

A refused TLS handshake or connection, a malformed request from nobody in particular, an
enrollment for an agent ID that does not exist, a management request without a valid session:
each is audited like any refusal, but anyone can send those as fast as the network allows. So at
most `per_second` of them are recorded one by one each second, per listener; the rest are
counted by source address and reported in one summary event (how many, from which addresses, in
which second) once that second is over, and the audit trail cannot be flooded. Refusals of
known agents and signed-in users are never throttled.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from kma.appliance import Appliance
from kma.audit.record import Condition
from kma.domain.actor import Actor

PER_SECOND = 20
MOST_SOURCES = 256  # addresses counted one by one in a second; beyond, "other addresses"
SHOWN_SOURCES = 5


@dataclass(frozen=True)
class Summary:
    """What a throttle did not record one by one in a second that is over."""

    operation: str
    message: str


def host_of(address: str) -> str:
    """The host of "host:port" (IPv6 hosts have colons of their own)."""
    host, sep, port = address.rpartition(":")
    return host.strip("[]") if sep and port.isdigit() else address


class RefusalThrottle:
    def __init__(
        self, operation: str, what: str, per_second: int = PER_SECOND, now: Callable[[], float] = time.time
    ) -> None:
        self.operation = operation  # of the summary event
        self._now = now  # seconds; a test passes its own clock
        self.what = what  # e.g. "refusals of unknown peers"
        self.per_second = per_second
        self._lock = threading.Lock()
        self._window = 0
        self._used = 0
        self._dropped: Counter[str] = Counter()

    def admit(self, address: str) -> tuple[bool, Summary | None]:
        """(record this refusal one by one?, the summary of a second that just ended, to record now)."""
        with self._lock:
            summary = self._roll(int(self._now()))
            self._used += 1
            if self._used <= self.per_second:
                return True, summary
            host = host_of(address)
            self._dropped[
                "" if host not in self._dropped and len(self._dropped) >= MOST_SOURCES else host
            ] += 1
            return False, summary

    def flush(self) -> Summary | None:
        """The summary of the last second, once it is over (listeners call this every second or so)."""
        with self._lock:
            return self._roll(int(self._now()))

    def _roll(self, now: int) -> Summary | None:
        if now == self._window:
            return None
        summary = self._summary() if self._dropped else None
        self._window, self._used, self._dropped = now, 0, Counter()
        return summary

    def _summary(self) -> Summary:
        others = self._dropped.pop("", 0)
        ranked = self._dropped.most_common()
        sources = [f"{n} from {host}" for host, n in ranked[:SHOWN_SOURCES]]
        rest = sum(n for _, n in ranked[SHOWN_SOURCES:]) + others
        if rest:
            sources.append(f"{rest} from other addresses")
        total = sum(n for _, n in ranked) + others
        start = datetime.fromtimestamp(self._window, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return Summary(
            self.operation,
            f"{total} more {self.what} in the second from {start} were not recorded one by one "
            f"(at most {self.per_second} a second are): {', '.join(sources)}",
        )


# One of each per KMA process. Agents' side: TLS, KMIP and enrollment share one; managers' side:
# requests to the management API without a valid session.
UNKNOWN_PEERS = RefusalThrottle("service.throttled", "refusals of unknown peers")
ANONYMOUS_REQUESTS = RefusalThrottle("api.throttled", "refused requests without a valid session")


def set_rate(per_second: int) -> None:
    """How many refusals of each listener are recorded one by one a second (`kma serve` sets it)."""
    UNKNOWN_PEERS.per_second = ANONYMOUS_REQUESTS.per_second = per_second


def audit_summary(kma: Appliance, summary: Summary | None) -> None:
    if summary is not None:
        kma.audit(kma.itself, summary.operation, summary.message, condition=Condition.WARNING)


def audit_unknown(kma: Appliance, address: str, operation: str, message: str) -> None:
    """Audit one refusal of an unknown agent-side peer, within the rate (blocking: a worker's call)."""
    _audit_throttled(kma, UNKNOWN_PEERS, Actor("unknown", address, kind="agent"), operation, message)


def audit_anonymous(
    kma: Appliance,
    address: str,
    operation: str,
    message: str,
    event_class: str | None = None,
    subject: tuple[str, str] | None = None,
) -> None:
    """Audit one refusal of a management request or connection with no valid session, within the
    rate (blocking)."""
    actor = Actor("anonymous", address)
    _audit_throttled(kma, ANONYMOUS_REQUESTS, actor, operation, message, event_class, subject)


def _audit_throttled(
    kma: Appliance,
    throttle: RefusalThrottle,
    actor: Actor,
    operation: str,
    message: str,
    event_class: str | None = None,
    subject: tuple[str, str] | None = None,
) -> None:
    record, summary = throttle.admit(actor.address)
    audit_summary(kma, summary)
    if record:
        kma.audit(
            actor, operation, message, condition=Condition.ERROR, subject=subject, event_class=event_class
        )
