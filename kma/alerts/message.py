"""One alert as every channel carries it: a dashboard warning that started or ended, an audit event
of a class the Security Officer chose, or a test.

`id` is unique per KMA and alert (`<kma_id>:<n>`): delivery is at least once, so a receiver that
sees the same id twice has seen a repeat."""

from __future__ import annotations

import json
import ssl
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

WARNING_STARTED = "warning.started"
WARNING_ENDED = "warning.ended"
AUDIT_EVENT = "audit.event"
TEST = "test"
KINDS = (WARNING_STARTED, WARNING_ENDED, AUDIT_EVENT, TEST)

# The audit event's fields an alert carries (those of the syslog copy, kma/audit/syslog.py).
EVENT_FIELDS = (
    "chain_seq",
    "operation",
    "event_class",
    "condition",
    "severity",
    "entity_id",
    "subject_type",
    "subject_id",
    "message",
    "created_at",
)


class DeliveryFailed(Exception):
    """The receiver did not take the alert; it stays queued. The words say why, for the officer."""


def tls_context(ca_pem: str | None) -> ssl.SSLContext:
    """The channel's pinned CA when one is given, else the system's trust store."""
    context = ssl.create_default_context(cadata=ca_pem) if ca_pem else ssl.create_default_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


_TITLES = {
    WARNING_STARTED: "Warning",
    WARNING_ENDED: "Warning over",
    AUDIT_EVENT: "Audit event",
    TEST: "Test alert",
}


@dataclass(frozen=True)
class Alert:
    id: str
    kind: str  # one of KINDS
    cluster: str
    kma_id: str
    time: int  # seconds since the epoch, when it happened
    text: str  # the warning's or the event's words
    warning: str | None = None  # a warning's identity (kma/services/alerts.py:identity)
    event: dict[str, Any] = field(default_factory=dict)  # an audit event's EVENT_FIELDS

    @classmethod
    def from_json(cls, text: str) -> Alert:
        return cls(**json.loads(text))

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @property
    def when(self) -> str:
        return datetime.fromtimestamp(self.time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    @property
    def title(self) -> str:
        return f"{_TITLES[self.kind]} from KMA {self.kma_id} ({self.cluster})"

    def lines(self) -> list[str]:
        """The alert as plain text lines (the e-mail's body)."""
        out = [self.title, "", self.text, "", f"When: {self.when}", f"Alert id: {self.id}"]
        if self.warning:
            out.append(f"Warning: {self.warning}")
        out += [f"{name}: {value}" for name, value in self.event.items() if value is not None]
        return out
