"""Embedded SQLite store: WAL, fsync on commit, one writer thread doing group commit.

Writers hand batches to the writer thread and wait; nothing is acknowledged before its commit
returns (kma/store/group_commit.py). Readers use one connection per thread and see only
committed data (WAL snapshot isolation).
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kma.errors import KmaError
from kma.pacing import Pace
from kma.store import fts, schema
from kma.store.batch import Batch, Done, Params, WriteResult, count, counted
from kma.store.checkpointer import Checkpointer
from kma.store.cluster_view import NodeStatus, ReplicationLag
from kma.store.group_commit import GroupCommitter, Item, Outcome

if TYPE_CHECKING:
    from kma.audit.chain import AuditChain

log = logging.getLogger(__name__)
BACKUP_PAGES = 256  # per step of an online backup: 1 MiB at the default 4 KiB page size (see backup)
# The WAL is written back into the database by kma/store/checkpointer.py, beside the writer; the
# writer itself checkpoints only when the WAL reaches this many pages (~40 MB), should that thread
# fall behind. Rare checkpoints are also cheaper: each writes back every page changed since the
# last one once, however often it changed (bench/README.md, issue 47).
WAL_CHECKPOINT_PAGES = 10_000


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=30, cached_statements=512
    )
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")  # fsync the WAL at every commit
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA temp_store = MEMORY")  # IN-lists and sorts: no temp file per query
    fts.register(conn)  # audit_text_match(): free text over the not yet indexed events
    return conn


class UpgradeFailed(KmaError):
    """A migration failed while upgrading an embedded store; the store is back as it was."""

    code, status = "upgrade_failed", 503


def migrate(conn: sqlite3.Connection, path: Path | None = None) -> int:
    """Apply the numbered migrations not yet applied; returns the schema version. An embedded store
    runs under one KMA, so contract migrations apply at once. Before upgrading an existing store
    at `path`, a copy of it is kept beside it; if a migration fails, the store is restored from
    that copy and UpgradeFailed says why."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)")
    applied = {int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations")}
    todo = schema.pending(applied, contract=True)  # a store from a newer release: refused here
    copy = _keep_copy(conn, path, max(applied)) if todo and applied and path else None
    for migration in todo:
        try:
            record = f"INSERT INTO schema_migrations VALUES ({migration.version});"
            conn.executescript(f"BEGIN IMMEDIATE;\n{migration.sql}\n{record}\nCOMMIT;")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if copy is None:
                raise
            with closing(sqlite3.connect(copy)) as source:
                source.backup(conn)  # the earlier migrations of this upgrade are undone too
            log.error("migration %s failed (%s); the store was restored from %s", migration.name, exc, copy)
            raise UpgradeFailed(
                f"The upgrade failed at migration {migration.name}: {exc}. The store was restored as it "
                f"was before the upgrade (schema {max(applied)}), from {copy}."
            ) from exc
        log.info("applied migration %s", migration.name)
    row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def _keep_copy(conn: sqlite3.Connection, path: Path, schema_version: int) -> Path:
    """A copy of the store before it is upgraded, named for the release and schema it came from
    (the last one kept: it is also the way back to that release, docs/upgrades.md)."""
    try:
        row = conn.execute("SELECT version FROM kmas ORDER BY updated_at DESC LIMIT 1").fetchone()
    except sqlite3.Error:
        row = None
    came_from = f"{row[0]}-schema-{schema_version}" if row else f"schema-{schema_version}"
    copy = path.with_name(f"{path.stem}-before-upgrade-from-{came_from}.db")
    partial = copy.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    with closing(sqlite3.connect(partial)) as target:
        conn.backup(target)
    partial.replace(copy)  # a copy under its name is whole
    log.warning("upgrading the store from schema %d; a copy of it is kept at %s", schema_version, copy)
    return copy


class SQLiteStore:
    deferring = False  # every write is committed here, before its caller hears of it
    cluster = None  # one KMA, no Raft

    def __init__(self, path: Path, chain: AuditChain | None = None) -> None:
        self.path = path
        self.chain = chain
        self.kma_id = chain.kma_id if chain else ""
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        conn = connect(path)
        try:
            self.schema_version = migrate(conn, path)
        except BaseException:
            conn.close()
            raise
        conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")  # only a bound, see above
        self.checkpointer = Checkpointer(path)
        self.committer = GroupCommitter(conn, chain)
        self._queue: queue.Queue[Item | None] = queue.Queue()
        self._thread = threading.Thread(
            target=self.committer.run, args=(self._queue, _resolve), name="kma-store-writer", daemon=True
        )
        self._thread.start()

    # --- reads -------------------------------------------------------------------------
    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def query(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        return self._reader().execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self._reader().execute(sql, params).fetchone()
        return row

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self.query_one(sql, params)
        return None if row is None else row[0]

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """Several reads that must agree with each other (one read transaction)."""
        conn = self._reader()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def backup(self, path: Path) -> None:
        """Write a consistent SQLite copy of the whole store to `path` while the KMA keeps serving.

        SQLite's online backup API copies BACKUP_PAGES pages per step from its own connection
        holding one read transaction: under WAL that is a fixed snapshot which writers do not
        disturb (so the copy never starts over) and which blocks nobody. It is paced
        (kma/pacing.py) as the encryption that follows is: a step copies a MiB, then rests as long
        as it worked. Unpaced, the copy (without the GIL, into the page cache) took a whole core for
        its length, 16 MiB at a time, and a drive's Get, which needs a core several times (its TLS,
        its read, its audit commit), waited for one: Get's p99 doubled while a backup of a million
        keys ran (bench/backup.py, issue 47). The rqlite store implements the same method from
        rqlite's own consistent backup (GET /db/backup).
        """
        pace = Pace()
        source = connect(self.path)
        target = sqlite3.connect(path)
        try:
            # The copy is a scratch file the caller encrypts and deletes: never fsync it (a 1 GB fsync
            # holds back every WAL commit behind it), nor journal it.
            target.execute("PRAGMA synchronous = OFF")
            target.execute("PRAGMA journal_mode = OFF")
            source.execute("BEGIN")
            source.execute("SELECT count(*) FROM schema_migrations").fetchone()  # the snapshot starts here
            source.backup(target, pages=BACKUP_PAGES, progress=lambda *_: pace.rest())
            source.execute("COMMIT")
            target.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
        finally:
            target.close()
            source.close()

    # --- writes ------------------------------------------------------------------------
    def write(self, batch: Batch) -> WriteResult:
        """Commit `batch` durably, or raise `Refused` (its refusal event is then committed)."""
        return self.submit(batch).result()

    def submit(self, batch: Batch) -> Future[WriteResult]:
        """Queue `batch` for the next group commit without waiting: the future resolves once it
        is durable (or with `Refused`). For the asyncio service listener."""
        future: Future[WriteResult] = Future()
        self._queue.put((batch, future))
        return counted(batch, future)

    def submit_with(self, batch: Batch, done: Done) -> None:
        """`submit` without a Future: the writer thread calls `done` with the outcome (the
        WriteResult, or why not) once the batch is durable. The service listener hands over
        every request's write this way: a Future's lock, condition and callbacks cost its writer
        and its loop more than the hand-over itself (issue 47)."""
        self._queue.put((batch, done))

    # --- the cluster: this KMA alone ----------------------------------------------------
    def cluster_nodes(self) -> list[NodeStatus]:
        return [
            NodeStatus(
                self.kma_id,
                leader=True,
                voter=True,
                reachable=True,
                rqlite_version=None,
                last_contact_seconds=0.0,
            )
        ]

    def replication_lag(self) -> ReplicationLag:
        return ReplicationLag(0, 0.0)

    def unshipped(self, name: str) -> Mapping[str, Any] | None:
        return None  # every change is committed here before its caller hears of it

    def unshipped_all(self) -> list[Mapping[str, Any]]:
        return []

    def caught_up(self, wait: float = 0.0) -> bool:
        return True

    def replica_rebuilds(self) -> int:
        return 0

    def query_leader(self, sql: str, params: Params = ()) -> list[list[Any]]:
        return [list(row) for row in self.query(sql, params)]

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)
        self.checkpointer.close()
        self.committer.conn.close()
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()


def _resolve(group: Sequence[Item], outcomes: Sequence[Outcome]) -> None:
    """The writer thread's delivery: each batch's future gets its outcome."""
    for (batch, waiter), outcome in zip(group, outcomes, strict=True):
        if not isinstance(waiter, Future):  # from submit_with
            count(batch, outcome if isinstance(outcome, BaseException) else None)
            waiter(outcome)
        elif isinstance(outcome, BaseException):
            waiter.set_exception(outcome)
        else:
            waiter.set_result(outcome)
