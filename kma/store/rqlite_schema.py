"""The cluster's store's schema: its cluster version and its migrations, applied through rqlite
by whichever KMA starts first (kma/store/rqlite.py)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from typing import Any

from kma.store import cluster_version, schema
from kma.store.rqlite_http import ClusterUnavailable, RqliteClient, StatementFailed
from kma.store.rqlite_replica import Replica

log = logging.getLogger(__name__)


def split_script(sql: str) -> list[str]:
    """A migration script as single statements (triggers' bodies kept whole)."""
    statements, current = [], ""
    for line in sql.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            text = current.strip()
            if text.rstrip(";").strip() and not all(
                ln.strip().startswith("--") or not ln.strip() for ln in text.splitlines()
            ):
                statements.append(text)
            current = ""
    if current.strip() and not all(
        ln.strip().startswith("--") or not ln.strip() for ln in current.splitlines()
    ):
        statements.append(current.strip())
    return statements


def checked_cluster_version(client: RqliteClient, replica: Replica) -> int:
    """The cluster version, refused when this release does not support it. Asked through the
    leader: a restarted node's replica is its last snapshot until it has caught up, and may
    predate a raise. Without a leader now, as this node's replica has it (a node's first start
    has none yet, and the cluster's store no row either)."""
    rows: Sequence[Any]
    try:
        rows = client.query(cluster_version.CURRENT_SQL)
    except StatementFailed:  # no such table: a store not migrated to 0043 yet
        rows = []
    except ClusterUnavailable:
        try:
            rows = replica.query(cluster_version.CURRENT_SQL)
        except (sqlite3.Error, OSError):
            rows = []
    version, needs_release = cluster_version.current(rows)
    cluster_version.check(version, needs_release)
    return version


def migrate(client: RqliteClient, replica: Replica, version: int) -> int:
    """Apply the migrations the cluster's store lacks, each in one transaction (any node may run
    this; if two race, one transaction fails whole and the other's result is kept). KMAs of the
    previous release may still serve this store, so contract migrations wait until the cluster
    version is raised to the highest this release supports (kma/store/cluster_version.py,
    docs/upgrades.md). With nothing to apply it only reads the local replica (no majority
    needed). Migrations of a newer release are expected here while its KMAs are upgraded one at
    a time: a cluster too new for this release is refused by its cluster version instead.
    `version` is the cluster version; the schema version is returned."""
    contract = cluster_version.runs_contract_migrations(version)
    local = _local_schema(replica, contract)
    if local is not None:
        return local
    client.execute([["CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)"]])
    done = {int(r[0]) for r in client.query("SELECT version FROM schema_migrations")}
    for migration in schema.pending(done, contract=contract, beside_newer=True):
        statements: list[list[Any]] = [[s] for s in split_script(migration.sql)]
        statements.append(["INSERT INTO schema_migrations (version) VALUES (?)", migration.version])
        try:
            client.execute(statements)
            log.info("applied migration %s to the cluster's store", migration.name)
        except StatementFailed:
            now = {int(r[0]) for r in client.query("SELECT version FROM schema_migrations")}
            if migration.version not in now:
                raise
    rows = client.query("SELECT max(version) FROM schema_migrations")
    return int(rows[0][0] or 0)


def _local_schema(replica: Replica, contract: bool) -> int | None:
    """The replica's schema version when it needs no migration, else None."""
    try:
        done = {int(r[0]) for r in replica.query("SELECT version FROM schema_migrations")}
    except (sqlite3.Error, OSError):
        return None
    return max(done) if done and not schema.pending(done, contract=contract, beside_newer=True) else None
