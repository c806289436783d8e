"""Day-by-day series for the dashboard's charts: keys issued, audit events by severity.

Days are UTC calendar days, oldest first, with empty days present as zeros so a chart's axis
needs no gap logic. Keys issued are a range scan of the activation index; audit events come
from their counts per day and severity (migration 0108), a few rows per day however busy.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kma.appliance import Appliance
from kma.errors import ValidationFailed
from kma.services.dashboard import key_counts

DAY = 86400
MAX_DAYS = 3660


def _day(index: int) -> str:
    return datetime.fromtimestamp(index * DAY, UTC).strftime("%Y-%m-%d")


def series(kma: Appliance, days: int = 30) -> dict[str, Any]:
    if not 1 <= days <= MAX_DAYS:
        raise ValidationFailed(f"days must be 1 to {MAX_DAYS}.")
    today = kma.clock.now() // DAY
    first = today - days + 1
    start = first * DAY
    issued = {
        int(r[0]): int(r[1])
        for r in kma.store.query(
            "SELECT activated_at / 86400 AS d, count(*) FROM keys WHERE activated_at >= ? GROUP BY d",
            (start,),
        )
    }
    by_severity: dict[int, dict[str, int]] = {}
    for d, severity, count in kma.store.query(
        "SELECT day, severity, events FROM audit_events_per_day WHERE day >= ?", (first,)
    ):
        by_severity.setdefault(int(d), {})[str(severity)] = int(count)
    span = range(first, today + 1)
    return {
        "days": days,
        "start": start,
        **key_counts(kma),
        "keys_issued": [{"day": _day(d), "count": issued.get(d, 0)} for d in span],
        "events_by_severity": [
            {"day": _day(d), **{s: by_severity.get(d, {}).get(s, 0) for s in ("info", "warning", "error")}}
            for d in span
        ],
    }
