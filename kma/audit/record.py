"""One audit event as a service describes it, before the chain gives it a place."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum


class Condition(StrEnum):
    SUCCESS = "success"
    WARNING = "warning"
    ERROR = "error"


class Retention(StrEnum):
    LONG = "long"
    MEDIUM = "medium"
    SHORT = "short"


SEVERITY = {Condition.SUCCESS: "info", Condition.WARNING: "warning", Condition.ERROR: "error"}


@dataclass(frozen=True)
class AuditRecord:
    operation: str  # e.g. "key.destroy"
    entity_id: str  # who: a user, an agent or a KMA
    entity_address: str
    message: str
    condition: Condition = Condition.SUCCESS
    event_class: str = "management"
    retention: Retention = Retention.LONG
    subject_type: str | None = None  # what it is about: key, data_unit, agent, user, ...
    subject_id: str | None = None

    @property
    def severity(self) -> str:
        return SEVERITY[self.condition]

    def refused(self, reason: str) -> AuditRecord:
        return replace(self, condition=Condition.ERROR, message=f"refused: {reason}")
