"""A cluster KMA's reads: its local replica of the cluster's store (kma/store/rqlite.py).

rqlite keeps its SQLite file on disk in WAL mode and allows external read-only connections; the
KMA reads that file directly, so reads are local (they work while the cluster has no leader) and
the audit trail's free-text function is available as embedded.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from kma.store import fts
from kma.store.batch import Params
from kma.store.rqlite_http import RESTARTS, SETTLE_WAIT_S

# How long the writer waits for one of this KMA's writes to show in its replica before it gives up
# waiting (the caller then hears of it anyway, with a warning logged).
OWN_WRITE_TIMEOUT_S = 5.0
T = TypeVar("T")


class Replica:
    """Read-only connections to rqlite's SQLite file, one per thread; reopened when rqlite replaces
    the file (a snapshot installed from the leader). `address` is the local rqlited's, whose
    restarts (kma/store/rqlite_http.py RESTARTS) reads wait out."""

    def __init__(self, path: Path, address: str) -> None:
        self.path = path
        self._address = address
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            f"file:{self.path}?mode=ro",
            uri=True,
            isolation_level=None,
            check_same_thread=False,
            timeout=30,
            cached_statements=512,
        )
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("PRAGMA temp_store = MEMORY")
        fts.register(conn)
        with self._lock:
            self._all.append(conn)
        return conn

    def conn(self) -> sqlite3.Connection:
        inode = os.stat(self.path).st_ino
        held: tuple[int, sqlite3.Connection] | None = getattr(self._local, "held", None)
        if held is None or held[0] != inode:
            # Forgotten before the new file is opened: while rqlited rebuilds it, that open may fail,
            # and the next read must not find the connection just closed.
            self._local.held = None
            if held is not None and not held[1].in_transaction:
                held[1].close()
            held = (inode, self._open())
            self._local.held = held
        return held[1]

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()

    def query(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        return self._settled(lambda: self.conn().execute(sql, params).fetchall())

    def query_one(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self._settled(lambda: self.conn().execute(sql, params).fetchone())
        return row

    def _settled(self, read: Callable[[], T]) -> T:
        """`read` of the replica; while rqlited restarts (its file rebuilt from a snapshot: no
        tables, or no file, for a moment) it is tried again, for at most `SETTLE_WAIT_S`, rather
        than failing the user's request (issue 39, item 6)."""
        deadline = time.monotonic() + SETTLE_WAIT_S
        while True:
            try:
                return read()
            except (sqlite3.OperationalError, sqlite3.DatabaseError, FileNotFoundError):
                if time.monotonic() >= deadline or not RESTARTS.settling(self._address):
                    raise
            time.sleep(0.05)

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self.query_one(sql, params)
        return None if row is None else row[0]

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """Several reads that must agree with each other (one read transaction)."""
        conn = self.conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")
