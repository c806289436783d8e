"""The background half of a master key rotation (kma/services/quorum/master_rotation.py).

Every unlocked KMA runs it; each round: take up the generations the store says are needed (a
rotation started or ended on another KMA; on a KMA whose HSM token holds the cluster's master key,
that puts the new generation into the token, kma/services/master_key/token_generations.py), put this KMA's
autonomous unlock blob under the newest generation and record that it holds it, and while a rotation
runs, re-wrap a chunk of the blobs still under the old generation and seal again the row MACs made
with the old row MAC key. Each chunk is one batch whose UPDATEs name the blob they replace, so a key
destroyed or re-wrapped meanwhile (by a drive's request, or by another KMA's worker) is left as it
is: nothing depends on which KMA does the work, or on this process surviving it. After a crash or a
leader change the next round goes on where the store is.

The rotation ends (one audited batch, by whichever KMA sees it first) when no blob and no row MAC
of the old generation is left and every KMA of the cluster holds the new one: the old generation's
row goes, and with it the last copy of its key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from kma.appliance import Appliance
from kma.audit.signing import WRAP_CONTEXT
from kma.backup.fileformat import backup_key_context
from kma.crypto import CryptoError, WrappingKey
from kma.crypto.generations import header
from kma.crypto.transfer import PRIVATE_CONTEXT as TRANSFER_PRIVATE
from kma.errors import Conflict, KmaLocked
from kma.services.alert_channels import secrets_context
from kma.services.integrity import key_macs, row_macs
from kma.services.master_key import master_keys, token_generations
from kma.store import Batch, Refused, Stmt
from kma.worker import Worker

CHUNK = 200  # blobs per batch: small enough that a drive's request never waits long behind one
BETWEEN_CHUNKS_S = 0.05  # leaves the agents their share of the store while a rotation runs
IDLE_S = 5.0  # how soon a KMA notices a rotation started or ended on another KMA
LEASE_S = 15  # a KMA that re-wraps renews its lease at each chunk; silent this long, another takes over


@dataclasses.dataclass(frozen=True)
class Blobs:
    """A column of blobs under the master key: its table, primary key columns and context."""

    table: str
    key: tuple[str, ...]
    column: str
    context: Callable[[Any], str]


BLOBS = (
    Blobs("cluster", ("id",), "ca_key_wrapped", lambda r: "cluster-ca-key"),
    Blobs(
        "audit_signing_keys",
        ("public_key",),
        "private_wrapped",
        lambda r: f"{WRAP_CONTEXT}:{bytes(r['public_key']).hex()}",
    ),
    Blobs("backup_keys", ("generation",), "key_wrapped", lambda r: backup_key_context(int(r["generation"]))),
    Blobs("pending_quorum_ops", ("id",), "escrow_wrapped", lambda r: f"quorum-escrow:{r['id']}"),
    Blobs(
        "key_split_enrolments",
        ("op_id", "member_name"),
        "share_wrapped",
        lambda r: f"quorum-new-share:{r['op_id']}:{r['member_name']}",
    ),
    Blobs("alert_channels", ("id",), "secrets_wrapped", lambda r: secrets_context(r["id"])),
    Blobs("transfer_identity", ("id",), "private_wrapped", lambda r: TRANSFER_PRIVATE),
    Blobs("second_factors", ("user_id",), "secret_wrapped", lambda r: f"totp:{r['user_id']}"),
    Blobs("keys", ("id",), "material_wrapped", lambda r: f"key:{r['id']}"),  # the many: last
)


class Rewrap(Worker):
    name = "kma-master-rewrap"

    def __init__(self, kma: Appliance) -> None:
        super().__init__()
        self.kma = kma
        self._after: dict[str, tuple[Any, ...]] = {}  # per table, the last key a chunk reached
        self._key_macs = key_macs.RotationReseal()

    def work(self) -> float:
        kma = self.kma
        if kma.vault.locked:
            return IDLE_S
        try:
            master_keys.take_up(kma)
            token_generations.settle(kma)  # kma.toml names the token's new key object before it is recorded
            self._own_unlock_blob()
            rotation = kma.store.query_one(
                "SELECT to_generation FROM master_key_rotations WHERE finished_at IS NULL "
                "ORDER BY to_generation DESC LIMIT 1"
            )
            if rotation is None or kma.vault.generation != rotation[0] or not self._lease(int(rotation[0])):
                return IDLE_S
            if self._chunk() or self._macs() or self._key_macs.chunk(kma, CHUNK):
                return BETWEEN_CHUNKS_S
            self._finish(int(rotation[0]))
        except KmaLocked:
            pass
        return IDLE_S

    def _lease(self, generation: int) -> bool:
        """Whether this KMA re-wraps now: it holds the rotation's lease, or takes it from a KMA that
        has not renewed it for LEASE_S (stopped, killed, cut off)."""
        kma, now = self.kma, self.kma.clock.now()
        try:
            kma.store.write(
                Batch(
                    [
                        Stmt(
                            "UPDATE master_key_rotations SET worker_kma = ?, lease_until = ? WHERE "
                            "to_generation = ? "
                            "AND finished_at IS NULL AND (worker_kma IS NULL OR worker_kma = ? OR "
                            "lease_until < ?)",
                            (kma.kma_id, now + LEASE_S, generation, kma.kma_id, now),
                            expect=1,
                        )
                    ]
                )
            )
        except Refused:
            return False
        return True

    def _own_unlock_blob(self) -> None:
        """This KMA's autonomous unlock blob under the newest generation, and its row saying so."""
        kma = self.kma
        generation = kma.vault.generation
        row = kma.store.query_one(
            "SELECT autounlock_master, master_generation FROM kmas WHERE id = ?", (kma.kma_id,)
        )
        if row is None or row[1] >= generation:
            return
        blob, path = row[0], kma.data_dir.unlock_key
        new_blob = None
        if blob is not None and path.exists():
            local = WrappingKey(path.read_bytes())
            new_blob = local.wrap(f"autounlock:{kma.kma_id}", kma.vault.master().raw())
        kma.commit(
            kma.itself,
            "kma.master_key_generation",
            [
                Stmt(
                    "UPDATE kmas SET autounlock_master = CASE WHEN ? IS NULL THEN autounlock_master "
                    "ELSE ? END, "
                    "master_generation = ? WHERE id = ? AND master_generation = ? AND autounlock_master IS ?",
                    (new_blob, new_blob, generation, kma.kma_id, row[1], blob),
                )
            ],
            f"KMA '{kma.kma_id}' holds master key generation {generation}"
            + (" (its autonomous unlock blob is under it)" if new_blob else ""),
            ("kma", kma.kma_id),
        )

    def _chunk(self) -> int:
        """Re-wrap up to CHUNK blobs of an older generation; how many were found."""
        for blobs in BLOBS:
            rows = self._older(blobs)
            if not rows and blobs.table in self._after:
                del self._after[blobs.table]  # once more from the start: the pass began mid-table
                rows = self._older(blobs)
            if rows:
                self._after[blobs.table] = tuple(rows[-1][k] for k in blobs.key)
                self._rewrap(blobs, rows)
                return len(rows)
        return 0

    def _older(self, blobs: Blobs) -> list[Any]:
        """The next blobs of `blobs` (in key order, after the last chunk's) not of the newest generation."""
        current = header(self.kma.vault.generation)
        keys = ", ".join(blobs.key)
        after = self._after.get(blobs.table)
        where = f" AND ({keys}) > ({', '.join('?' * len(blobs.key))})" if after else ""
        return self.kma.store.query(
            f"SELECT {keys}, {blobs.column} FROM {blobs.table} WHERE {blobs.column} IS NOT NULL "  # noqa: S608
            f"AND substr({blobs.column}, 1, ?) IS NOT ?{where} ORDER BY {keys} LIMIT {CHUNK}",
            (len(current), current, *(after or ())),
        )

    def _rewrap(self, blobs: Blobs, rows: list[Any]) -> None:
        """One batch: each blob under the newest generation, if it is still the blob that was read."""
        master = self.kma.vault.master()
        where = " AND ".join(f"{k} = ?" for k in blobs.key)
        statements = []
        for r in rows:
            old, ctx = bytes(r[blobs.column]), blobs.context(r)
            try:
                new = master.wrap(ctx, master.unwrap(ctx, old))
            except CryptoError:
                continue  # damaged: left as it is, and reported by whoever reads it
            statements.append(
                Stmt(
                    f"UPDATE {blobs.table} SET {blobs.column} = ? WHERE {where} AND {blobs.column} = ?",  # noqa: S608
                    (new, *(r[k] for k in blobs.key), old),
                )
            )
        if statements:
            statements.append(
                Stmt(
                    "UPDATE master_key_rotations SET blobs_done = blobs_done + ? WHERE to_generation = ?",
                    (len(statements), master.generation),
                )
            )
            self.kma.store.write(Batch(statements))

    def _macs(self) -> int:
        """Seal again up to CHUNK rows whose MAC verifies only under an older generation's row MAC key."""
        keys = self.kma.vault.row_mac_keys()
        current, older = keys[0], keys[1:]
        statements = [
            dataclasses.replace(row_macs.seal(current, sealed, r), expect=None)
            for sealed, r in self._sealed_rows()
            if not row_macs.matches(r["mac"], row_macs.mac(current, sealed, r))
            and any(row_macs.matches(r["mac"], row_macs.mac(k, sealed, r)) for k in older)
        ][:CHUNK]
        if statements:
            self.kma.store.write(Batch(statements))
        return len(statements)

    def _sealed_rows(self) -> Iterator[tuple[row_macs.Sealed, Any]]:
        for sealed in (*row_macs.TABLES, row_macs.SESSIONS):
            columns = ", ".join((*sealed.key, *sealed.fields, "mac"))
            for r in self.kma.store.query(f"SELECT {columns} FROM {sealed.table} WHERE mac IS NOT NULL"):  # noqa: S608
                yield sealed, r

    def _finish(self, generation: int) -> None:
        kma = self.kma
        if master_keys.kmas_waiting(kma, generation):
            return  # a KMA down or locked: it may still hold only the old generation
        done = kma.store.scalar(
            "SELECT blobs_done FROM master_key_rotations WHERE to_generation = ?", (generation,)
        )
        current = header(generation)
        try:
            self._end(generation, done, current)
        except Conflict as exc:  # a key of the old generation arrived meanwhile (a KMA's outbox)
            self.log.info("the rotation goes on: %s", exc.message)
            return
        master_keys.take_up(kma)

    def _end(self, generation: int, done: int, current: bytes) -> None:
        kma = self.kma
        kma.commit(
            kma.itself,
            "cluster.master_key_rotated",
            [
                # Checked in the batch itself: a KMA cut off during the rotation ships the keys it
                # made under the old generation before it takes the new one up.
                Stmt(
                    "UPDATE master_key_rotations SET finished_at = ? WHERE to_generation = ? AND "
                    "finished_at IS NULL AND NOT EXISTS (SELECT 1 FROM keys WHERE material_wrapped "
                    "IS NOT NULL AND substr(material_wrapped, 1, ?) IS NOT ?)",
                    (kma.clock.now(), generation, len(current), current),
                    expect=1,
                    refusal="the rotation has already ended, or keys of the old generation are still stored",
                ),
                Stmt("DELETE FROM master_key_generations WHERE generation < ?", (generation,)),
            ],
            f"ended the master key rotation to generation {generation}: {done} blobs re-wrapped, "
            f"every KMA holds generation {generation}, and generation {generation - 1} is destroyed; "
            "take a new core security backup (those taken before no longer open a database backup "
            "taken from now on)",
            ("cluster", "master_key"),
        )


def rewrap(kma: Appliance) -> Rewrap:
    return kma.part(Rewrap)
