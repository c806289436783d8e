"""The embedded store's WAL written back into its database beside the writer, not in a commit.

SQLite's automatic checkpoint runs inside the commit that crosses its threshold: that commit writes
back every page changed since the last checkpoint (at a million keys, thousands of pages scattered
over a 2 GB file) and fsyncs the database, and every drive whose request waits behind that commit
waits for it too. That was a large store's Write Key p99 (issue 41). Here a thread of its own
checkpoints every CHECKPOINT_EVERY_S in PASSIVE mode, which neither waits for nor holds back the
writer or any reader; the writer's own automatic checkpoint stays only as a bound on the WAL
should this thread fall behind (kma/store/sqlite.py WAL_CHECKPOINT_PAGES).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger(__name__)
CHECKPOINT_EVERY_S = 1.0  # the WAL then holds about a second's pages (a few MB under full load)


class Checkpointer:
    def __init__(self, path: Path, every: float = CHECKPOINT_EVERY_S) -> None:
        self._path, self._every = path, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kma-store-checkpointer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False, timeout=30)
        try:
            conn.execute(
                "PRAGMA synchronous = FULL"
            )  # the written-back pages are fsynced before the WAL is reused
            while not self._stop.wait(self._every):
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error as exc:  # the next turn tries again; the writer's bound holds meanwhile
                    log.warning("checkpoint of %s failed: %s", self._path, exc)
        finally:
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
