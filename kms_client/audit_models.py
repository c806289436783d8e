"""Response objects of the auditor's routes (docs/api.md "Audit"): histories, retention, series.

Same rules as `models`: frozen, only known keys read, times as aware `datetime`s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .models import AuditEvent, ChainReport, JsonObject, maybe_time, parse_time

HISTORY_SUBJECTS = ("key", "data_unit", "agent")


@dataclass(frozen=True)
class Span:
    """One state over [start, end); `end` None means "still so"."""

    state: str
    start: datetime
    end: datetime | None
    by: str | None
    note: str | None

    @classmethod
    def from_json(cls, d: JsonObject) -> Span:
        return cls(d["state"], parse_time(d["start"]), maybe_time(d.get("end")), d.get("by"), d.get("note"))


@dataclass(frozen=True)
class Lane:
    label: str
    subject_type: str
    subject_id: str
    spans: tuple[Span, ...]

    @classmethod
    def from_json(cls, d: JsonObject) -> Lane:
        spans = tuple(Span.from_json(s) for s in d["spans"])
        return cls(d["label"], d["subject_type"], d["subject_id"], spans)


@dataclass(frozen=True)
class Boundary:
    """A moment on the timeline: a period's end (`planned` when still ahead), a flag, enrollment."""

    kind: str
    at: datetime
    label: str
    planned: bool
    by: str | None
    lane: int

    @classmethod
    def from_json(cls, d: JsonObject) -> Boundary:
        return cls(d["kind"], parse_time(d["at"]), d["label"], bool(d.get("planned")), d.get("by"),
                   int(d.get("lane", 0)))  # fmt: skip


@dataclass(frozen=True)
class History:
    """One key's, data unit's or agent's life: lanes of state spans, boundaries, its events."""

    subject_type: str
    subject_id: str
    title: str
    now: datetime
    state: str
    lanes: tuple[Lane, ...]
    boundaries: tuple[Boundary, ...]
    events: tuple[AuditEvent, ...]
    events_total: int
    events_truncated: bool
    facts: dict[str, Any]

    @classmethod
    def from_json(cls, d: JsonObject) -> History:
        return cls(
            subject_type=d["subject_type"],
            subject_id=d["subject_id"],
            title=d["title"],
            now=parse_time(d["now"]),
            state=d["state"],
            lanes=tuple(Lane.from_json(x) for x in d["lanes"]),
            boundaries=tuple(Boundary.from_json(x) for x in d["boundaries"]),
            events=tuple(AuditEvent.from_json(x) for x in d["events"]),
            events_total=int(d["events_total"]),
            events_truncated=bool(d.get("events_truncated")),
            facts=dict(d.get("facts") or {}),
        )


@dataclass(frozen=True)
class DaySeverity:
    day: str
    info: int
    warning: int
    error: int


@dataclass(frozen=True)
class Series:
    """Day-by-day counts for the dashboard charts, oldest day first, empty days as zeros."""

    days: int
    start: datetime
    keys_by_state: dict[str, int]
    keys_issued: tuple[tuple[str, int], ...]
    events_by_severity: tuple[DaySeverity, ...]
    keys_by_state_exact: dict[str, bool] = field(default_factory=dict)  # false: more than the count

    @classmethod
    def from_json(cls, d: JsonObject) -> Series:
        return cls(
            days=int(d["days"]),
            start=parse_time(d["start"]),
            keys_by_state={str(k): int(v) for k, v in (d.get("keys_by_state") or {}).items()},
            keys_by_state_exact={str(k): bool(v) for k, v in (d.get("keys_by_state_exact") or {}).items()},
            keys_issued=tuple((x["day"], int(x["count"])) for x in d["keys_issued"]),
            events_by_severity=tuple(DaySeverity(x["day"], int(x["info"]), int(x["warning"]), int(x["error"]))
                                     for x in d["events_by_severity"]),  # fmt: skip
        )


@dataclass(frozen=True)
class Retention:
    """Retention periods in seconds per class, whether the KMA prunes daily by itself, and when
    the trail was last pruned."""

    long: int
    medium: int
    short: int
    updated_at: datetime
    last_pruned_at: datetime | None
    last_prune: str | None
    checkpoints: int
    auto_prune: bool = False

    @classmethod
    def from_json(cls, d: JsonObject) -> Retention:
        return cls(int(d["long"]), int(d["medium"]), int(d["short"]), parse_time(d["updated_at"]),
                   maybe_time(d.get("last_pruned_at")), d.get("last_prune"),
                   int(d.get("checkpoints", 0)), bool(d.get("auto_prune", False)))  # fmt: skip


@dataclass(frozen=True)
class PruneResult:
    removed: int
    checkpoints: int
    retention: Retention

    @classmethod
    def from_json(cls, d: JsonObject) -> PruneResult:
        return cls(int(d["removed"]), int(d["checkpoints"]), Retention.from_json(d["retention"]))


@dataclass(frozen=True)
class AuditCheckpoint:
    """A signed statement about one KMA's chain up to `chain_seq`."""

    id: int
    kma_id: str
    chain_seq: int
    hash: str
    created_at: datetime
    retained_count: int
    signing_key: str
    signing_key_id: int = 0  # which of the cluster's audit signing keys signed it

    @classmethod
    def from_json(cls, d: JsonObject) -> AuditCheckpoint:
        return cls(int(d["id"]), d["kma_id"], int(d["chain_seq"]), d["hash"], parse_time(d["created_at"]),
                   int(d["retained_count"]), d["signing_key"], int(d["signing_key_id"]))  # fmt: skip


@dataclass(frozen=True)
class AuditFacets:
    """Distinct values of the browser's filter columns, for pick lists."""

    operation: tuple[str, ...]
    event_class: tuple[str, ...]
    entity_id: tuple[str, ...]
    kma_id: tuple[str, ...]
    site_id: tuple[str, ...]
    subject_type: tuple[str, ...]

    @classmethod
    def from_json(cls, d: JsonObject) -> AuditFacets:
        return cls(*(tuple(str(v) for v in d.get(f) or ()) for f in cls.__dataclass_fields__))


@dataclass(frozen=True)
class AuditReport:
    """A signed HTML report and its detached signature; `save` writes both, byte for byte."""

    filename: str
    html: str
    signature: str
    chain: ChainReport

    @classmethod
    def from_json(cls, d: JsonObject) -> AuditReport:
        return cls(d["filename"], d["html"], d["signature"], ChainReport.from_json(d["chain"]))

    def save(self, path: Path) -> tuple[Path, Path]:
        """Write PATH (the HTML) and PATH.sig; returns both paths."""
        sig = path.with_name(path.name + ".sig")
        path.write_bytes(self.html.encode("utf-8"))
        sig.write_bytes(self.signature.encode("utf-8"))
        return path, sig
