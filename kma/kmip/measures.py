"""The KMIP service's figures on /metrics: each operation's results, each message's time."""

from __future__ import annotations

from typing import Any

from kma import metrics
from kma.kmip.enums import Operation, ResultStatus
from kma.kmip.messages import Result

# Label values for /metrics: operations this KMA knows by name, anything else as "other", so an
# agent cannot grow the label set. Children are looked up once per (operation, result).
_OPERATION = {int(op): op.name.lower() for op in Operation}
_RESULT = {int(st): st.name.lower() for st in ResultStatus}
_COUNTERS: dict[tuple[int | None, int], Any] = {}
_TIMERS: dict[int | None, Any] = {}


def measured(results: list[Result], seconds: float) -> None:
    """Count each operation's result; time the message under its first operation."""
    for r in results:
        counter = _COUNTERS.get((r.operation, r.status))
        if counter is None:
            operation = _OPERATION.get(r.operation or 0, "other")
            counter = metrics.KEY_REQUESTS.labels(operation, _RESULT.get(r.status, "other"))
            _COUNTERS[(r.operation, r.status)] = counter
        counter.inc()
    if results:
        timer = _TIMERS.get(results[0].operation)
        if timer is None:
            timer = metrics.KEY_REQUEST_SECONDS.labels(_OPERATION.get(results[0].operation or 0, "other"))
            _TIMERS[results[0].operation] = timer
        timer.observe(seconds)
