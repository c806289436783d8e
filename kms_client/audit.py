"""What `KmsClient` adds to the generated calls (calls.py) for the auditor: a history by subject
type, every event across pages, the live tail, and the CSV export streamed to a file. Same
threading rule: network I/O, never on the GUI thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from ._http import query
from .calls import Calls
from .paging import iter_all
from .reader import Page
from .wire import AuditEvent, History


class Sink(Protocol):
    """Where a download is written: a binary file, or anything with its `write`."""

    def write(self, data: bytes, /) -> object: ...


class AuditCalls(Calls):
    def history(self, subject_type: str, subject_id: str) -> History:
        """`subject_type` is "key", "data_unit" or "agent"."""
        histories = {
            "key": self.key_history,
            "data_unit": self.data_unit_history,
            "agent": self.agent_history,
        }
        if subject_type not in histories:
            raise ValueError(f"no history for {subject_type!r}; use one of {', '.join(histories)}")
        return histories[subject_type](subject_id)

    def iter_audit_events(self, /, **kw: Any) -> Iterator[AuditEvent]:
        return iter_all(self.list_audit_events, **kw)

    def tail_audit_events(self, /, after_id: int, *, limit: int = 1000, **filters: Any) -> Page[AuditEvent]:
        """Events newer than `after_id`, oldest first (the live tail: poll with the last ID seen)."""
        return self.list_audit_events(limit=limit, order="asc", sort="id", after_id=after_id, **filters)

    def export_audit_csv(self, /, dest: Sink, *, search: str | None = None, **filters: Any) -> int:
        """Stream the signed CSV of the filter into `dest`; returns the bytes written."""
        written = 0
        params = query({"search": search, **filters})
        with self._connection.stream("/audit-events/export.csv", params=params) as response:
            for chunk in response.iter_bytes():
                dest.write(chunk)
                written += len(chunk)
        return written
