"""Request and response bodies of the auditor's routes: histories, exports, retention, series."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from kma.api.quorum_schemas import WithCredentials
from kma.api.schemas import AuditEvent, Response, Time

Period = Annotated[int, Field(ge=86400, le=100 * 365 * 86400)]


class CheckpointRef(Response):
    id: int
    kma_id: str
    chain_seq: int
    created_at: Time


class ChainReport(Response):
    intact: bool
    events_checked: int
    first_bad_event_id: int | None
    reason: str | None
    checkpoints: list[CheckpointRef] = []


class ChainVerification(Response):
    """A verification of the audit chain running in the background, or the last one."""

    state: Literal["none", "running", "finished", "failed"]  # none: none ran since the KMA started
    started_at: Time | None
    started_by: str | None
    finished_at: Time | None
    events_checked: int
    events_total: int  # the events it covers: each chain up to its head when it started
    report: ChainReport | None  # once finished: intact, or the first break
    error: str | None  # why a failed one could not run to its end


class Checkpoint(Response):
    id: int
    kma_id: str
    chain_seq: int
    hash: str
    created_at: Time
    retained_count: int
    signing_key_id: int = 0
    signing_key: str


class Retention(Response):
    long: int
    medium: int
    short: int
    auto_prune: bool = False  # the KMA prunes by itself once a day
    updated_at: Time
    last_pruned_at: Time | None
    last_prune: str | None
    checkpoints: int


class RetentionPatch(WithCredentials):
    """Key split credentials matter only when a period gets shorter (quorum-protected)."""

    long: Period | None = None
    medium: Period | None = None
    short: Period | None = None
    auto_prune: bool | None = None


class PruneResult(Response):
    removed: int
    checkpoints: int
    retention: Retention


class Facets(Response):
    operation: list[str]
    event_class: list[str]
    entity_id: list[str]
    kma_id: list[str]
    site_id: list[str]
    subject_type: list[str]


class Report(Response):
    filename: str
    html: str
    signature: str  # the detached signature file's exact text (JSON)
    chain: ChainReport


class Span(Response):
    state: str
    start: Time
    end: Time | None
    by: str | None
    note: str | None


class Boundary(Response):
    kind: str
    at: Time
    label: str
    planned: bool
    by: str | None
    lane: int


class Lane(Response):
    label: str
    subject_type: str
    subject_id: str
    spans: list[Span]


class History(Response):
    subject_type: str
    subject_id: str
    title: str
    now: Time
    state: str
    lanes: list[Lane]
    boundaries: list[Boundary]
    events: list[AuditEvent]
    events_total: int
    events_truncated: bool
    facts: dict[str, Any]


class DayCount(Response):
    day: str
    count: int


class DaySeverity(Response):
    day: str
    info: int
    warning: int
    error: int


class Series(Response):
    days: int
    start: Time
    keys_by_state: dict[str, int]  # each up to 10,000
    keys_by_state_exact: dict[str, bool]  # false: more than 10,000 keys are in that state
    keys_issued: list[DayCount]
    events_by_severity: list[DaySeverity]
