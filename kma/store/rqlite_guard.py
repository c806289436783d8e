"""The guard of a cluster KMA's writes: how a statement's `expect` is checked through rqlite, and a
failed request told as the embedded store tells a refusal (kma/store/rqlite.py).

A statement with an `expect` is followed, in the same request, by an INSERT into `cluster_guard`
whose CHECK fails unless `changes()` matched: the request then fails whole, nothing of it applied.
"""

from __future__ import annotations

import sqlite3

from kma.store.batch import Batch, Refused
from kma.store.group_commit import integrity_message
from kma.store.rqlite_http import StatementFailed

GUARD_SQL = "INSERT OR REPLACE INTO cluster_guard (id, ok) VALUES (1, changes() = ?)"


def refusal(batch: Batch, failed: StatementFailed) -> Refused:
    """Which of the batch's statements failed, told as the embedded store tells it."""
    index = 0
    for i, stmt in enumerate(batch.statements):
        index += 1 + (stmt.expect is not None)
        if failed.index < index:
            if "cluster_guard" in failed.error or "ok = 1" in failed.error:
                return Refused(stmt.refusal or "the object is not in a state that allows this", i)
            return Refused(integrity_message(sqlite3.IntegrityError(failed.error)), i)
    return Refused(integrity_message(sqlite3.IntegrityError(failed.error)))
