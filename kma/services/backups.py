"""Database backups and the core security backup, made by a running KMA (docs/backups.md).

A database backup first marks every key not yet held by a backup (`keys.backup_mark`), then copies
the whole store through `store.backup` (a consistent snapshot taken while the KMA serves) and
encrypts the copy into DIR/backups. Its row in `backups` is what later says which keys a backup
holds: every key marked at or before the backup's `created_at`.

The core security backup must exist before the first database backup (nothing could open it
otherwise). A key split change supersedes it: the change makes a new backup key (`backup_keys`)
that only core security backups taken since carry, so a database backup taken after the change
needs a core security backup taken after it too (and is refused until one exists). The old one
still opens the backups taken before the change, with the old split's passphrases.
"""

from __future__ import annotations

import secrets
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from kma.appliance import Appliance
from kma.backup.fileformat import (
    DATABASE_SUFFIX,
    FIRST_GENERATION,
    backup_key_context,
    core_security_backup,
    open_backup_key,
    write_database_backup,
)
from kma.crypto import WrappingKey, fingerprint
from kma.crypto.hsm_settings import HsmSettings
from kma.domain.actor import Actor
from kma.domain.lifecycle import BACKUP_HOLDS_DESTROYED_KEY, HELD_OR_REPLICATED
from kma.errors import Conflict, NotFound
from kma.pacing import remove_gradually
from kma.services import keys
from kma.services.common import typed_row
from kma.services.keypool import POOL_KEYS, key_pool
from kma.store import Batch, Stmt

# What a manifest counts: enough for a person to see what a backup holds before restoring it.
COUNTED_TABLES = (
    "keys",
    "audit_events",
    "users",
    "agents",
    "data_units",
    "key_groups",
    "key_policies",
    "sites",
    "kmas",
    "pending_quorum_ops",
)


def backups_dir(kma: Appliance) -> Path:
    folder = kma.data_dir.root / "backups"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def cluster_identity(kma: Appliance) -> dict[str, str]:
    # by its first CA certificate: a renewal of the CA's (issue 38) is the same cluster
    row = kma.store.query_one(
        "SELECT name, coalesce((SELECT cert_pem FROM ca_certificates ORDER BY replaced_at LIMIT 1), "
        "ca_cert_pem) AS first_ca FROM cluster"
    )
    assert row is not None
    return {"name": row["name"], "ca_fingerprint": fingerprint(row["first_ca"].encode("ascii"))}


# --- the core security backup -------------------------------------------------------------
@dataclass(frozen=True)
class CoreStatus:
    """Whether a core security backup exists and opens the backups taken now; the API's
    `CoreSecurityBackupStatus` reads it."""

    exists: bool
    up_to_date: bool  # false also after a key split change: take a new one
    created_at: int | None
    created_by: str | None
    message: str


@dataclass(frozen=True)
class BackupRow:
    """A database backup's record (times in seconds since the epoch); the API's `Backup` reads it."""

    id: str
    kma_id: str
    created_at: int
    created_by: str
    scheduled: bool
    size: int
    sha256: str
    keys: int
    audit_events: int
    schema_version: int
    deleted_at: int | None
    deleted_by: str | None


def core_security_backup_status(kma: Appliance) -> CoreStatus:
    """Whether a core security backup exists and is of the key split now in force."""
    row = kma.store.query_one(
        "SELECT c.created_at, c.created_by, c.split_generation, k.split_generation AS current "
        "FROM core_security_backups c, cluster k ORDER BY c.created_at DESC, c.rowid DESC LIMIT 1"
    )
    if row is None:
        return CoreStatus(
            exists=False,
            up_to_date=False,
            created_at=None,
            created_by=None,
            message="No core security backup exists: a Security Officer must take one before "
            "the first database backup.",
        )
    current = row["split_generation"] == row["current"]
    return CoreStatus(
        exists=True,
        up_to_date=current,
        created_at=row["created_at"],
        created_by=row["created_by"],
        message="The core security backup is of the key split in force."
        if current
        else f"The last core security backup is superseded: the key split changed after it was taken "
        f"or the master key was rotated (generation {row['split_generation']}, now "
        f"{row['current']}). It still opens the "
        "database backups taken before the change, with the old key split's passphrases, but none "
        "taken after it. A Security Officer must take a new one; database backups wait for it.",
    )


def backup_keys(kma: Appliance) -> dict[int, bytes]:
    """Every key split change's backup key, wrapped under the master key, by generation."""
    return {
        int(r["generation"]): bytes(r["key_wrapped"])
        for r in kma.store.query("SELECT generation, key_wrapped FROM backup_keys")
    }


def current_backup_key(kma: Appliance) -> tuple[WrappingKey, int]:
    """The backup key new database backups are encrypted under, and its generation: the newest
    key split change's (any unlocked KMA of the cluster opens it: it is under the master key)."""
    keys = backup_keys(kma)
    generation = max(keys, default=FIRST_GENERATION)
    return open_backup_key(kma.vault.master(), generation, keys.get(generation)), generation


def hsm_key(hsm: HsmSettings | None) -> dict[str, str] | None:
    """What a core security backup records of the token that holds the master key (docs/backups.md):
    its name and key label, and with `holds` a token that holds the cluster's master key itself (which
    the key split escrows) rather than one of its two keys (which nothing outside the token holds)."""
    if hsm is None:
        return None
    return {"token": hsm.token_name, "key_label": hsm.key_label} | ({"holds": hsm.holds} if hsm.holds else {})


def take_core_security_backup(kma: Appliance, actor: Actor) -> bytes:
    """The core security backup file: the key split's sealed shares and the wrapped master key."""
    master = kma.vault.master()
    with kma.store.snapshot() as conn:
        cluster = conn.execute(
            "SELECT split_threshold, split_generation, master_wrapped_by_root, master_generation FROM cluster"
        ).fetchone()
        shares = conn.execute(
            "SELECT name, share_sealed FROM key_split_members WHERE generation = ?", (cluster[1],)
        ).fetchall()
        keys = conn.execute(
            "SELECT generation, key_wrapped FROM backup_keys WHERE generation <= ?", (cluster[1],)
        ).fetchall()
    now = kma.clock.now()
    data = core_security_backup(
        cluster=cluster_identity(kma),
        kma_id=kma.kma_id,
        created_at=now,
        threshold=cluster[0],
        generation=cluster[1],
        sealed_shares={r[0]: r[1] for r in shares},
        master_wrapped_by_root=cluster[2],
        # under the newest generation, even while a rotation has not re-wrapped them yet
        backup_keys={
            int(r[0]): master.wrap(
                backup_key_context(int(r[0])), master.unwrap(backup_key_context(int(r[0])), bytes(r[1]))
            )
            for r in keys
        },
        master=master,
        hsm_key=hsm_key(kma.vault.hsm),
        master_generation=int(cluster[3]),
    )
    kma.commit(
        actor,
        "backup.core",
        [
            Stmt(
                "INSERT INTO core_security_backups (id, created_at, created_by, split_generation) "
                "VALUES (?, ?, ?, ?)",
                (secrets.token_hex(8).upper(), now, actor.entity_id, cluster[1]),
            )
        ],
        f"took the core security backup (key split {cluster[0]} of {len(shares)}, generation {cluster[1]})",
        ("kma", kma.kma_id),
    )
    return data


# --- database backups ---------------------------------------------------------------------
def _row(r: sqlite3.Row) -> BackupRow:
    return typed_row(BackupRow, {**dict(r), "scheduled": bool(r["scheduled"])})


def list_backups(kma: Appliance, include_deleted: bool = False) -> list[BackupRow]:
    where = "" if include_deleted else "WHERE deleted_at IS NULL"
    return [_row(r) for r in kma.store.query(f"SELECT * FROM backups {where} ORDER BY created_at DESC, id")]


def get_backup(kma: Appliance, backup_id: str) -> BackupRow:
    row = kma.store.query_one("SELECT * FROM backups WHERE id = ?", (backup_id,))
    if row is None:
        raise NotFound(f"There is no backup '{backup_id[:64]}'.")
    return _row(row)


def create_backup(kma: Appliance, actor: Actor, scheduled: bool = False) -> BackupRow:
    """Take a database backup into DIR/backups; returns its row."""
    key, key_generation = current_backup_key(kma)
    core = core_security_backup_status(kma)
    if not core.exists:
        raise Conflict(
            "Take the core security backup first (a Security Officer): without it no database "
            "backup could ever be opened."
        )
    if not core.up_to_date:
        raise Conflict(
            "The key split changed since the last core security backup, which cannot open a "
            "database backup taken now: a Security Officer must take a new core security backup "
            "first."
        )
    backup_id = secrets.token_hex(8).upper()
    started = kma.clock.now()
    mark_keys(kma, started)
    folder = backups_dir(kma)
    plain = folder / f".{backup_id}.db"
    out = folder / f"{backup_id}{DATABASE_SUFFIX}"
    try:
        kma.store.backup(plain)
        schema_version, counts = _describe_copy(plain)
        manifest = {
            "backup_id": backup_id,
            "cluster": cluster_identity(kma),
            "kma_id": kma.kma_id,
            "created_at": started,
            "created_by": actor.entity_id,
            "schema_version": schema_version,
            "counts": counts,
        }
        _, sha256 = write_database_backup(plain, out, manifest, key, key_generation)
    except BaseException:
        out.unlink(missing_ok=True)
        raise
    finally:
        plain.unlink(missing_ok=True)
    kma.commit(
        actor,
        "backup.create",
        [
            Stmt(
                "INSERT INTO backups (id, kma_id, created_at, created_by, scheduled, file_name, size, "
                "sha256, schema_version, keys, audit_events) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    backup_id,
                    kma.kma_id,
                    started,
                    actor.entity_id,
                    int(scheduled),
                    out.name,
                    out.stat().st_size,
                    sha256,
                    schema_version,
                    counts["keys"],
                    counts["audit_events"],
                ),
            )
        ],
        f"made database backup {backup_id}{' (scheduled)' if scheduled else ''}: {counts['keys']} keys, "
        f"{counts['audit_events']} audit events, {out.stat().st_size} bytes, SHA-256 {sha256}",
        ("backup", backup_id),
    )
    key_pool(kma).take_held()  # in a one-KMA cluster the keys it holds are Ready now: issue them
    return get_backup(kma, backup_id)


def _describe_copy(plain: Path) -> tuple[int, dict[str, int]]:
    conn = sqlite3.connect(plain)
    try:
        version = int(conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0])
        counts = {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in COUNTED_TABLES}
    finally:
        conn.close()
    return version, counts


MARK_CHUNK = 20_000  # keys marked per write: the writer is never held for long (a first backup
# of a million keys marks them all)


def mark_keys(kma: Appliance, started: int) -> None:
    """Mark every key not yet held by a backup: the copy that follows holds them, and so does
    any backup beginning later."""
    mark = Stmt(
        "UPDATE keys SET backup_mark = ? WHERE rowid IN (SELECT rowid FROM keys WHERE backup_mark IS NULL "
        "AND material_wrapped IS NOT NULL LIMIT ?)",
        (started, MARK_CHUNK),
    )
    while kma.store.write(Batch([mark])).rowcounts[0] == MARK_CHUNK:
        pass


def backup_file(kma: Appliance, backup_id: str) -> Path:
    """The file of a live backup kept by this KMA."""
    backup = get_backup(kma, backup_id)
    if backup.deleted_at is not None:
        raise NotFound(f"Backup '{backup_id}' was deleted; its file is gone.")
    if backup.kma_id != kma.kma_id:
        raise NotFound(f"Backup '{backup_id}' is kept by KMA '{backup.kma_id}'; download it from there.")
    path = backups_dir(kma) / f"{backup_id}{DATABASE_SUFFIX}"
    if not path.exists():
        raise NotFound(f"The file of backup '{backup_id}' is missing from this KMA's backups folder.")
    return path


# Destroyed keys this backup holds and no other live backup does: deleting it completes them.
_COMPLETES_DESTRUCTION = (
    "SELECT count(*) FROM keys k, backups b WHERE b.id = ? AND k.destroyed_at IS NOT NULL AND "
    f"{BACKUP_HOLDS_DESTROYED_KEY.format(t='k.', b='b.')} AND NOT EXISTS (SELECT 1 FROM backups o "
    f"WHERE o.id != b.id AND {BACKUP_HOLDS_DESTROYED_KEY.format(t='k.', b='o.')})"
)


def delete_backup(kma: Appliance, actor: Actor, backup_id: str, reason: str = "deleted") -> None:
    """Delete a backup's file and mark its row; destruction of keys it held may then complete."""
    get_backup(kma, backup_id)
    completed = int(kma.store.scalar(_COMPLETES_DESTRUCTION, (backup_id,)) or 0)
    note = f"; destruction of {completed} destroyed keys it held is now complete" if completed else ""
    kma.commit(
        actor,
        "backup.delete",
        [
            Stmt(
                "UPDATE backups SET deleted_at = ?, deleted_by = ? WHERE id = ? AND deleted_at IS NULL",
                (kma.clock.now(), actor.entity_id, backup_id),
                expect=1,
                refusal=f"backup '{backup_id}' is already deleted",
            )
        ],
        f"{reason} database backup {backup_id}{note}",
        ("backup", backup_id),
    )
    remove_gradually(backups_dir(kma) / f"{backup_id}{DATABASE_SUFFIX}")


# --- what the dashboard and `kma status` say ----------------------------------------------
# The windows of the "recent issue rate": the week's, or a shorter one's when that is faster. A KMA
# issuing faster than its backups keep up (a store filling up, a new site's first tapes) runs out
# within minutes or hours, while a week's average of a day of issuing says weeks, and a day's of an
# hour's says a day (issue 33: a bench issuing 1,500 keys a second was told its pool lasted 9 h a
# minute before it ran dry).
ISSUE_RATE_WINDOWS = {"recently": 7 * 86400, "last_day": 86400, "last_hour": 3600}
WITHHELD = "SELECT count(*) FROM keys WHERE withheld_at IS NOT NULL AND key_group_id IS NULL"
# Withheld keys a drive's first read bound to its key group (kma/services/withheld_keys.py).
BOUND = "SELECT count(*) FROM keys WHERE withheld_at IS NOT NULL AND key_group_id IS NOT NULL"


@dataclass(frozen=True)
class Readiness:
    """The last backup's age; in a one-KMA cluster, keys waiting for a backup and when the Ready keys
    run out at the recent issue rate (seconds); the API's `BackupReadiness` reads it."""

    last_backup_at: int | None
    last_backup_age: int | None
    one_kma: bool
    keys_waiting_for_backup: int
    ready_keys: int
    keys_issued_recently: int  # by this KMA, in each of ISSUE_RATE_WINDOWS
    keys_issued_last_day: int
    keys_issued_last_hour: int
    ready_keys_run_out_in: int | None  # None when none were issued
    keys_withheld_by_restore: int
    keys_bound_after_restore: int
    core_security_backup: CoreStatus
    core_security_backup_up_to_date: bool


def readiness(kma: Appliance) -> Readiness:
    """The last backup's age, and in a one-KMA cluster how many keys wait for a backup and when the
    Ready keys run out at the recent issue rate, the last hour's, day's or week's, whichever is
    fastest (a refilled pool is Ready only after a backup)."""
    now = kma.clock.now()
    last = kma.store.scalar("SELECT max(created_at) FROM backups WHERE deleted_at IS NULL")
    alone = key_pool(kma).alone()
    ready = int(
        kma.store.scalar(
            f"SELECT count(*) FROM keys WHERE {POOL_KEYS} AND {HELD_OR_REPLICATED.format(t='')}",
            (kma.kma_id,),
        )
        or 0
    )
    issued_since = {
        name: keys.issued_since(kma, now - window, kma.kma_id) for name, window in ISSUE_RATE_WINDOWS.items()
    }
    # At the fastest window's rate, in whole seconds (3 keys in the last hour last 3 Ready keys an
    # hour, not the 59 min a float's rounding made of it).
    runs_out_in = min(
        (
            ready * window // issued_since[name]
            for name, window in ISSUE_RATE_WINDOWS.items()
            if issued_since[name]
        ),
        default=None,
    )
    core = core_security_backup_status(kma)
    return Readiness(
        last_backup_at=last,
        last_backup_age=None if last is None else max(0, now - int(last)),
        one_kma=alone,
        keys_waiting_for_backup=key_pool(kma).waiting() if alone else 0,
        ready_keys=ready,
        keys_issued_recently=issued_since["recently"],
        keys_issued_last_day=issued_since["last_day"],
        keys_issued_last_hour=issued_since["last_hour"],
        ready_keys_run_out_in=runs_out_in,
        keys_withheld_by_restore=int(kma.store.scalar(WITHHELD)),
        keys_bound_after_restore=int(kma.store.scalar(BOUND)),
        core_security_backup=core,
        core_security_backup_up_to_date=core.up_to_date,
    )


def withheld_warning(count: int) -> str:
    return (
        f"{count} keys may have been issued after the backup this KMA was restored from; their tapes "
        "will be known when a drive reads them. They are never issued again."
    )


def describe_duration(seconds: int) -> str:
    days, hours = divmod(seconds // 3600, 24)
    if days:
        return f"{days} day{'s' if days != 1 else ''}" + (f" {hours} h" if days < 3 and hours else "")
    return f"{hours} h" if hours else f"{max(1, seconds // 60)} min"


def warnings(info: Readiness) -> list[str]:
    out = []
    if info.one_kma and info.last_backup_at is None:
        out.append(
            "There is no database backup: this one-KMA cluster issues no key until a backup holds its "
            "pool, and everything it knows would be lost with this machine. Take the core security "
            "backup, then a database backup."
        )
    elif info.last_backup_age is not None and info.last_backup_age > 7 * 86400:
        out.append(f"The last database backup is {describe_duration(info.last_backup_age)} old.")
    if info.keys_waiting_for_backup:
        out.append(
            f"{info.keys_waiting_for_backup} generated keys wait for a database backup before they "
            "can be issued (a one-KMA cluster issues only keys a backup holds)."
        )
    runs_out = info.ready_keys_run_out_in
    if info.one_kma and runs_out is not None and runs_out < 7 * 86400:
        out.append(
            f"At the recent issue rate ({info.keys_issued_last_hour} keys in the last hour, "
            f"{info.keys_issued_last_day} in the last day, {info.keys_issued_recently} in 7 days) the "
            f"{info.ready_keys} Ready keys run out in {describe_duration(runs_out)}: take a "
            "database backup before then."
        )
    if info.keys_withheld_by_restore:
        out.append(withheld_warning(info.keys_withheld_by_restore))
    if info.keys_bound_after_restore:
        out.append(
            f"{info.keys_bound_after_restore} keys withheld by the restore were bound to the key group of "
            "the first drive that read them by ID (the audit trail's key.withheld_bound events name each "
            "drive and group): check that each drive's group is its tape's."
        )
    core = info.core_security_backup
    if core.exists and not core.up_to_date:
        out.append(core.message)
    return out
