"""MACs on the rows of keys (issue 39): a key moved to another key group or data unit, or given
another owner or state, by a write straight into the store (a stolen node credential, a replica
file) is served to nobody.

A key row's MAC (kma/services/integrity/row_macs.py, the same HMAC under the same row MAC key) covers what
decides who is served the key and for what: its key group, its data unit, the agent it was issued
to, the agent that registered its material, whether it is compromised or destroyed. The times of
its periods (activation, protect stop, deactivation) are not covered: each write computes them in
SQL from the group's policy, and a forged one changes only how a key of the same group and tape is
used, never who reads it. Nor is `withheld_at` (a restore's mark): it opens a key to a first read
only while it has no key group, and the read that binds it seals the group.

Each write states the MAC in its own statement: where it sets every covered field with values it
knows (a pool key made, issued, registered) the MAC goes in the same statement, whose WHERE pins
the fields it does not set; elsewhere `reseal` follows the write and refuses the batch unless the
row holds exactly what the MAC is computed from. Every read that serves a key (`verified`) checks
it; a row that fails is refused and reported (`security.tamper`). Rows from before this version
are sealed at the first unlock in chunks of `CHUNK` (one audited batch each, resumable: a chunk
seals only rows still without a MAC, and any KMA of a cluster may do it), and are trusted until
then, like other rows (`DataDir.keys_sealed`). A master key rotation seals them again under the
new generation (kma/services/master_key/master_rewrap.py).

What a MAC cannot stop: putting back a row's earlier values with their earlier MAC (a replay from an
older copy of the store); the audit trail and backups tell what a key was.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from kma.appliance import Appliance
from kma.audit.record import Retention
from kma.errors import Conflict, KmaError, KmaLocked, NotFound
from kma.services.integrity import entry_signatures, row_macs
from kma.store import Batch, Stmt

FIELDS = ("key_group_id", "data_unit_id", "agent_id", "registered_by", "compromised_at", "destroyed_at")
KEYS = row_macs.Sealed("keys", ("id",), FIELDS, "key")
COLUMNS = "k.id, k.key_group_id, k.data_unit_id, k.agent_id, k.registered_by, k.compromised_at, "
COLUMNS += "k.destroyed_at, k.mac"
CHUNK = 500  # rows sealed per batch at the first unlock
WRITES_MACS = 90  # the migration (0090_key_macs.sql) from which a KMA's release seals the keys it writes
# KMAs of the cluster whose release writes keys without a MAC (a rolling upgrade under way): until
# none is left, a key without a MAC may be theirs, not forged. Only entries the cluster CA signed
# count: a fake entry of an "older KMA" would otherwise hold the sealing off for ever.
OLDER_KMAS = (
    "SELECT id FROM kmas WHERE removed_at IS NULL AND awaiting_join = 0 AND coalesce(schema_version, 0) < ?"
)
KeyRow = Mapping[str, Any] | sqlite3.Row


def mac(key: bytes, key_id: str, **fields: Any) -> str:
    """The MAC of a key row holding `fields` (those not named are NULL)."""
    return row_macs.mac(key, KEYS, {"id": key_id, **dict.fromkeys(FIELDS), **fields})


def pool_key_mac(kma: Appliance, key_id: str) -> str:
    """The MAC of a pool key as it is made: in no group, of no agent, live."""
    return mac(kma.vault.row_mac_key(), key_id)


def reseal(kma: Appliance, row: KeyRow, **changes: Any) -> Stmt:
    """After a write that changed `changes` of the key `row` (as read before it): its new MAC, in the
    same batch; refused unless the row then holds exactly `row` with `changes`."""
    after = {**{c: row[c] for c in ("id", *FIELDS)}, **changes}
    return row_macs.seal(kma.vault.row_mac_key(), KEYS, after)


class _Verified:
    """Key rows whose MAC verified (a row is its covered fields and MAC, so a changed row is a new
    entry: nothing to invalidate), so that a drive's repeated Gets compute each MAC once."""

    MOST = 200_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: set[tuple[Any, ...]] = set()

    def __contains__(self, row: tuple[Any, ...]) -> bool:
        return row in self._rows

    def add(self, row: tuple[Any, ...]) -> None:
        with self._lock:
            if len(self._rows) >= self.MOST:
                self._rows.clear()
            self._rows.add(row)


_VERIFIED = _Verified()


def verified(kma: Appliance, row: KeyRow, remember: bool = True) -> bool:
    """Whether the key row may be served: its MAC verifies (or it is from before this version and
    not sealed yet). A row that fails is reported as tampered with. `remember`: keep the verified
    row for the next look (a drive's repeated Gets); a read of every key once (an export) does not,
    or the cache would hold each of its rows until it is full (100,000 of them: 40 MiB)."""
    stored = row["mac"]
    seen = (row["id"], *(row[f] for f in FIELDS), stored)
    if stored is not None and seen in _VERIFIED:
        return True
    if stored is None and not kma.data_dir.keys_sealed.exists() and not kma.vault.locked:
        return True  # from before this version: `seal_existing` seals it in a moment
    ok = row_macs.genuine(kma, KEYS, row)
    if ok and remember and stored is not None and not kma.vault.locked:
        _VERIFIED.add(seen)
    return ok


def sealed_key(kma: Appliance, key_id: str) -> KeyRow:
    """The key's row (`COLUMNS`) for a write that seals it again: NotFound when there is none,
    Conflict when its MAC fails (a forged row is never sealed; the tamper event says which)."""
    row = kma.store.query_one(f"SELECT {COLUMNS} FROM keys k WHERE k.id = ?", (key_id,))  # noqa: S608
    if row is None:
        raise NotFound(f"no key '{key_id}'")
    if not verified(kma, row):
        raise Conflict(
            f"key {key_id} was altered in the store without the KMA (its MAC does not verify): it is "
            "left as it is; see the audit trail's 'security.tamper' events"
        )
    return row


def genuine_ids(kma: Appliance, rows: Sequence[KeyRow]) -> list[str]:
    """The IDs of `rows` (read with `COLUMNS`) whose MAC verifies, in order."""
    return [str(r["id"]) for r in rows if verified(kma, r)]


def tampered_keys(conn: sqlite3.Connection, key: bytes, sealed_already: bool) -> list[str]:
    """Offline (`kma audit verify`): the keys whose MAC does not verify, described. `sealed_already`:
    this KMA sealed the keys from before key MACs, so a key without a MAC is tampered with too."""
    out = []
    for row in conn.execute(f"SELECT {COLUMNS} FROM keys k"):  # noqa: S608
        stored = row["mac"]
        if stored is None and not sealed_already:
            continue
        if not row_macs.matches(stored, row_macs.mac(key, KEYS, row)):
            out.append(
                f"keys '{row['id']}' {'has no MAC' if stored is None else 'has a MAC that does not verify'}"
            )
    return out


def seal_existing(kma: Appliance) -> None:
    """At an unlock, and each cluster watch round until done: once no KMA of the cluster runs a
    release that writes keys without a MAC (`OLDER_KMAS`; until then such a key may be theirs), seal
    the keys written before key MACs, a chunk per audited batch, trusting them on first use, and
    mark this KMA as done (`DataDir.keys_sealed`): from then on a key without a MAC is forged.
    Resumable: stopped half way, the next call goes on."""
    if kma.data_dir.keys_sealed.exists():
        return
    try:
        older = {str(r["id"]) for r in kma.store.query(OLDER_KMAS, (WRITES_MACS,))}
        if older & entry_signatures.genuine_ids(kma):  # an entry written in without the CA holds nothing
            return
        key = kma.vault.row_mac_key()
        while rows := kma.store.query(
            f"SELECT {', '.join(('id', *FIELDS))} FROM keys WHERE mac IS NULL ORDER BY id LIMIT {CHUNK}"  # noqa: S608
        ):
            kma.commit(
                kma.itself,
                "security.keys_sealed",
                # expect=None: a key another KMA sealed or changed meanwhile is left as that KMA wrote it
                [dataclasses.replace(row_macs.seal(key, KEYS, r), expect=None) for r in rows],
                f"sealed {len(rows)} keys written before key MACs (their group, data unit, agent and "
                "state), trusting them on first use",
                retention=Retention.MEDIUM,
            )
            if len(rows) < CHUNK:
                break
    except (KmaError, KmaLocked) as exc:
        row_macs.log.error("the keys could not be sealed (tried again in a moment): %s", exc)
        return
    kma.data_dir.keys_sealed.write_text("key rows carry a MAC\n", encoding="utf-8")


class RotationReseal:
    """During a master key rotation: seals again, a chunk at a time in key order, the key rows
    whose MAC verifies only under an older generation's row MAC key (master_rewrap's worker)."""

    def __init__(self) -> None:
        self._after: str | None = None  # the last key this pass reached
        self._clean = True  # this pass found nothing to seal again so far

    def chunk(self, kma: Appliance, size: int) -> int:
        """Rows looked at in this chunk; 0 once a whole pass found none of an older generation."""
        keys = kma.vault.row_mac_keys()
        current, older = keys[0], keys[1:]
        rows = (
            kma.store.query(
                f"SELECT {', '.join(('id', *FIELDS, 'mac'))} FROM keys WHERE mac IS NOT NULL "  # noqa: S608
                "AND id > ? ORDER BY id LIMIT ?",
                (self._after or "", size),
            )
            if older
            else []
        )
        if not rows:
            clean = self._clean or not older
            self._after, self._clean = None, True
            return 0 if clean else 1
        self._after = str(rows[-1]["id"])
        stale = [
            dataclasses.replace(row_macs.seal(current, KEYS, r), expect=None)
            for r in rows
            if not row_macs.matches(r["mac"], row_macs.mac(current, KEYS, r))
            and any(row_macs.matches(r["mac"], row_macs.mac(k, KEYS, r)) for k in older)
        ]
        if stale:
            self._clean = False
            kma.store.write(Batch(stale))
        return len(rows)
