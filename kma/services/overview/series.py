"""Day-by-day series for the dashboard's charts: keys issued, audit events by severity.

Days are UTC calendar days, oldest first, with empty days present as zeros so a chart's axis
needs no gap logic. Keys issued come from their counts per day and KMA (migration 0114), audit
events from their counts per day and severity (migration 0108): a few rows per day however busy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from kma.appliance import Appliance
from kma.errors import ValidationFailed
from kma.services import keys
from kma.services.overview.dashboard import key_counts

DAY = 86400
MAX_DAYS = 3660


@dataclass(frozen=True)
class DayCount:
    day: str  # YYYY-MM-DD, UTC
    count: int


@dataclass(frozen=True)
class DaySeverity:
    day: str
    info: int
    warning: int
    error: int


@dataclass(frozen=True)
class Series:
    """The dashboard's charts over `days` days from `start`; the API's `Series` reads it."""

    days: int
    start: int
    keys_by_state: dict[str, int]  # each up to COUNT_LIMIT
    keys_by_state_exact: dict[str, bool]  # false: more than COUNT_LIMIT keys are in that state
    keys_issued: list[DayCount]
    events_by_severity: list[DaySeverity]


def _day(index: int) -> str:
    return datetime.fromtimestamp(index * DAY, UTC).strftime("%Y-%m-%d")


def get_dashboard_series(kma: Appliance, days: int = 30) -> Series:
    if not 1 <= days <= MAX_DAYS:
        raise ValidationFailed(f"days must be 1 to {MAX_DAYS}.")
    today = kma.clock.now() // DAY
    first = today - days + 1
    start = first * DAY
    issued = keys.issued_per_day(kma, first)
    by_severity: dict[int, dict[str, int]] = {}
    for d, severity, count in kma.store.query(
        "SELECT day, severity, events FROM audit_events_per_day WHERE day >= ?", (first,)
    ):
        by_severity.setdefault(int(d), {})[str(severity)] = int(count)
    span = range(first, today + 1)
    counts = key_counts(kma)
    return Series(
        days=days,
        start=start,
        keys_by_state=counts.keys_by_state,
        keys_by_state_exact=counts.keys_by_state_exact,
        keys_issued=[DayCount(_day(d), issued.get(d, 0)) for d in span],
        events_by_severity=[
            DaySeverity(_day(d), *(by_severity.get(d, {}).get(s, 0) for s in ("info", "warning", "error")))
            for d in span
        ],
    )
