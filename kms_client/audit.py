"""The auditor's routes: histories, live tail, exports, retention, checkpoints, chart series.

A part of `KmsClient`, given its connection; same threading rule:
every method does network I/O, never call one on the GUI thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from ._http import (
    FilterValue,
    Order,
    credentials_body,
    present,
    query,
    segment,
)
from .connection import Connection
from .paging import iter_all
from .reader import Page, reader
from .wire import (
    AuditCheckpoint,
    AuditEvent,
    AuditFacets,
    AuditReport,
    ChainReport,
    History,
    PendingQuorumOp,
    PruneResult,
    Retention,
    Series,
)

if TYPE_CHECKING:
    pass

_HISTORY_PATHS = {"key": "keys", "data_unit": "data-units", "agent": "agents"}


class AuditCalls:
    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    # -- histories ------------------------------------------------------------------------------
    def history(self, subject_type: str, subject_id: str) -> History:
        """`subject_type` is "key", "data_unit" or "agent"."""
        area = _HISTORY_PATHS.get(subject_type)
        if area is None:
            raise ValueError(f"no history for {subject_type!r}; use one of {', '.join(_HISTORY_PATHS)}")
        return self._connection.call("GET", f"/{area}/{segment(subject_id)}/history", reader(History))

    def key_history(self, key_id: str) -> History:
        return self.history("key", key_id)

    def data_unit_history(self, data_unit_id: str) -> History:
        return self.history("data_unit", data_unit_id)

    def agent_history(self, agent_id: str) -> History:
        return self.history("agent", agent_id)

    # -- browsing -------------------------------------------------------------------------------
    def list_audit_events(
        self,
        /,
        *,
        limit: int = 100,
        cursor: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
        **filters: FilterValue,
    ) -> Page[AuditEvent]:
        """Newest first by default. Filters: `operation`, `severity`, `condition`,
        `event_class`, `entity_id`, `kma_id`, `site_id`, `subject_type`, `subject_id`, `since`,
        `until` (a `datetime` is sent as ISO 8601 UTC)."""
        return self._connection.list(
            "/audit-events",
            AuditEvent,
            query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order),
        )

    def iter_audit_events(self, /, **kw: Any) -> Iterator[AuditEvent]:
        return iter_all(self.list_audit_events, **kw)

    def verify_audit_chain(self) -> ChainReport:
        return self._connection.call("GET", "/audit-events/verify", reader(ChainReport))

    def tail_audit_events(self, /, after_id: int, *, limit: int = 1000, **filters: Any) -> Page[AuditEvent]:
        """Events newer than `after_id`, oldest first (the live tail: poll with the last ID seen)."""
        return self.list_audit_events(limit=limit, order="asc", sort="id", after_id=after_id, **filters)

    def audit_facets(self) -> AuditFacets:
        return self._connection.call("GET", "/audit-events/facets", reader(AuditFacets))

    # -- exports --------------------------------------------------------------------------------
    def export_audit_csv(self, /, dest: IO[bytes], *, q: str | None = None, **filters: Any) -> int:
        """Stream the signed CSV of the filter into `dest`; returns the bytes written."""
        written = 0
        params = query({"q": q, **filters})
        with self._connection.stream("/audit-events/export.csv", params=params) as response:
            for chunk in response.iter_bytes():
                dest.write(chunk)
                written += len(chunk)
        return written

    def audit_report(self, /, *, q: str | None = None, **filters: Any) -> AuditReport:
        """The signed HTML report of the filter (first 5,000 events) stating the chain check."""
        params = query({"q": q, **filters})
        return self._connection.call("GET", "/audit-events/report", reader(AuditReport), params=params)

    # -- retention and checkpoints --------------------------------------------------------------
    def audit_retention(self) -> Retention:
        return self._connection.call("GET", "/audit-events/retention", reader(Retention))

    def set_audit_retention(
        self,
        *,
        long: int | None = None,
        medium: int | None = None,
        short: int | None = None,
        auto_prune: bool | None = None,
        credentials: Any = None,
    ) -> Retention | PendingQuorumOp:
        """Periods in seconds, long >= medium >= short, no shorter than the floors (long 365 days,
        medium 90, short 30); `auto_prune`: the KMA prunes by itself once a day. Security Officer.
        Lengthening runs at once; shortening is quorum-protected: with M key split `credentials`
        it runs, with fewer it returns the `PendingQuorumOp`."""
        credentials = credentials_body(credentials)
        body = present(long=long, medium=medium, short=short, auto_prune=auto_prune, credentials=credentials)
        return self._connection.call_or_pending("PATCH", "/audit-events/retention", reader(Retention), body)

    def list_audit_checkpoints(self) -> list[AuditCheckpoint]:
        return self._connection.call("GET", "/audit-events/checkpoints", reader(list[AuditCheckpoint]))

    def create_audit_checkpoint(self) -> list[AuditCheckpoint]:
        """Sign every chain's head now (verifies the trail first). Security Officer."""
        return self._connection.call("POST", "/audit-events/checkpoints", reader(list[AuditCheckpoint]))

    def prune_audit_events(self) -> PruneResult:
        """Remove events past their retention class's period, under signed checkpoints."""
        return self._connection.call("POST", "/audit-events/prune", reader(PruneResult))

    # -- dashboard ------------------------------------------------------------------------------
    def dashboard_series(self, days: int = 30) -> Series:
        return self._connection.call("GET", "/dashboard/series", reader(Series), params={"days": str(days)})
