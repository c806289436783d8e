"""The auditor's routes: histories, live tail, exports, retention, checkpoints, chart series.

A mixin of `KmsClient` (kept apart so the client module stays small); same threading rule:
every method does network I/O, never call one on the GUI thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any, TypeVar

from ._http import credentials_body, error_from_response, query, segment, translated_transport_errors
from .reader import JsonObject, Page, reader
from .wire import (
    AuditCheckpoint,
    AuditEvent,
    AuditFacets,
    AuditReport,
    History,
    PendingQuorumOp,
    PruneResult,
    Retention,
    Series,
)

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")
_HISTORY_PATHS = {"key": "keys", "data_unit": "data-units", "agent": "agents"}


class AuditMethods:
    if TYPE_CHECKING:
        _http: httpx.Client
        _address: str
        _timeout: float
        _token: str | None

        def _call(self, method: str, path: str, parse: Callable[[JsonObject], T], *,
                  params: dict[str, str] | None = None, body: dict[str, Any] | None = None,
                  auth: bool = True) -> T: ...  # fmt: skip

        def list_audit_events(self, **kw: Any) -> Page[AuditEvent]: ...

        def _call_or_pending(self, method: str, path: str, parse: Callable[[JsonObject], T],
                             body: dict[str, Any]) -> T | PendingQuorumOp: ...  # fmt: skip

    # -- histories ------------------------------------------------------------------------------
    def history(self, subject_type: str, subject_id: str) -> History:
        """`subject_type` is "key", "data_unit" or "agent"."""
        area = _HISTORY_PATHS.get(subject_type)
        if area is None:
            raise ValueError(f"no history for {subject_type!r}; use one of {', '.join(_HISTORY_PATHS)}")
        return self._call("GET", f"/{area}/{segment(subject_id)}/history", reader(History))

    def key_history(self, key_id: str) -> History:
        return self.history("key", key_id)

    def data_unit_history(self, data_unit_id: str) -> History:
        return self.history("data_unit", data_unit_id)

    def agent_history(self, agent_id: str) -> History:
        return self.history("agent", agent_id)

    # -- browsing -------------------------------------------------------------------------------
    def tail_audit_events(self, after_id: int, *, limit: int = 1000, **filters: Any) -> Page[AuditEvent]:
        """Events newer than `after_id`, oldest first (the live tail: poll with the last ID seen)."""
        return self.list_audit_events(limit=limit, order="asc", sort="id", after_id=after_id, **filters)

    def audit_facets(self) -> AuditFacets:
        return self._call("GET", "/audit-events/facets", reader(AuditFacets))

    # -- exports --------------------------------------------------------------------------------
    def export_audit_csv(self, dest: IO[bytes], *, q: str | None = None, **filters: Any) -> int:
        """Stream the signed CSV of the filter into `dest`; returns the bytes written."""
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        written = 0
        with (
            translated_transport_errors(self._address, self._timeout),
            self._http.stream(
                "GET", "/audit-events/export.csv", params=query({"q": q, **filters}), headers=headers
            ) as response,
        ):
            if response.is_error:
                response.read()
                raise error_from_response(response)
            for chunk in response.iter_bytes():
                dest.write(chunk)
                written += len(chunk)
        return written

    def audit_report(self, *, q: str | None = None, **filters: Any) -> AuditReport:
        """The signed HTML report of the filter (first 5,000 events) stating the chain check."""
        params = query({"q": q, **filters})
        return self._call("GET", "/audit-events/report", reader(AuditReport), params=params)

    # -- retention and checkpoints --------------------------------------------------------------
    def audit_retention(self) -> Retention:
        return self._call("GET", "/audit-events/retention", reader(Retention))

    def set_audit_retention(self, *, long: int | None = None, medium: int | None = None,
                            short: int | None = None, auto_prune: bool | None = None,
                            credentials: Any = None) -> Retention | PendingQuorumOp:  # fmt: skip
        """Periods in seconds, long >= medium >= short, no shorter than the floors (long 365 days,
        medium 90, short 30); `auto_prune`: the KMA prunes by itself once a day. Security Officer.
        Lengthening runs at once; shortening is quorum-protected: with M key split `credentials`
        it runs, with fewer it returns the `PendingQuorumOp`."""
        given = {"long": long, "medium": medium, "short": short, "auto_prune": auto_prune,
                 "credentials": credentials_body(credentials)}  # fmt: skip
        body = {k: v for k, v in given.items() if v is not None}
        return self._call_or_pending("PATCH", "/audit-events/retention", reader(Retention), body)

    def list_audit_checkpoints(self) -> list[AuditCheckpoint]:
        return self._call("GET", "/audit-events/checkpoints", reader(list[AuditCheckpoint]))

    def create_audit_checkpoint(self) -> list[AuditCheckpoint]:
        """Sign every chain's head now (verifies the trail first). Security Officer."""
        return self._call("POST", "/audit-events/checkpoints", reader(list[AuditCheckpoint]))

    def prune_audit_events(self) -> PruneResult:
        """Remove events past their retention class's period, under signed checkpoints."""
        return self._call("POST", "/audit-events/prune", reader(PruneResult))

    # -- dashboard ------------------------------------------------------------------------------
    def dashboard_series(self, days: int = 30) -> Series:
        return self._call("GET", "/dashboard/series", reader(Series), params={"days": str(days)})
