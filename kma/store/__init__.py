"""The KMA's store: reads, and writes as atomic batches of statements.

A write is a `Batch`: statements whose state checks live inside the SQL (`UPDATE ... WHERE
state ...`) with the row count each must touch (`expect`). If any count differs, the whole batch
is undone and reported as `Refused`; nothing is read first and written later across round trips.
That is what lets the same services run on embedded SQLite (kma/store/sqlite.py) and, in a
cluster, on rqlite (kma/store/rqlite.py); kma/cluster/store.py picks one per data dir.
Every batch also carries the audit event that records it (success or refusal), so an operation
and its audit event are committed together or not at all.
"""

from __future__ import annotations

from kma.store.base import Store
from kma.store.batch import Batch, Refused, Stmt, WriteResult
from kma.store.sqlite import SQLiteStore

__all__ = ["Batch", "Refused", "SQLiteStore", "Stmt", "Store", "WriteResult"]
