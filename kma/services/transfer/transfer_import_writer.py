"""Writing an import's data units and keys in batches (docs/transfer.md, "Import").

Every check (the file, its sender, the key group, one key one tape for the whole file) passes
before the first batch. Then the data units are written `BATCH` at a time, each batch one
transaction with its own audit event, paced as an export is (kma/pacing.py): between two batches
the drives' requests, each of which commits its audit event, get the store and the KMA, instead
of waiting tens of seconds behind one batch of 100,000 data units.

The import is all or nothing where it matters:
- nothing is written before the whole file is checked (a refusal writes nothing);
- each batch writes whole data units, each with all its keys, and links them to the file;
- the file's row is 'importing' from the first batch and 'done' with the last: the preview and the
  history tell a finished import from one that stopped halfway (the KMA stopped, a batch refused);
- the batches are idempotent: importing the same file again skips what is here and writes the
  rest, so a re-run finishes an import that stopped, with nothing doubled.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kma.appliance import Appliance
from kma.domain.actor import Actor
from kma.errors import Conflict
from kma.pacing import Pace
from kma.services.integrity import key_macs
from kma.services.transfer import transfer_jobs
from kma.services.transfer.transfer_partners import TransferPartnerRow
from kma.store import Stmt

BATCH = 500  # data units per transaction: a drive's commit waits behind one at most (tens of ms)
IMPORT_SHARE = 0.5  # of a core, while an import writes
MAY_IMPORT = (
    "(SELECT p.allow_import FROM key_groups g JOIN key_policies p ON p.id = g.policy_id WHERE g.id = :g) = 1"
)


def _batches(new: Iterable[Any]) -> Iterator[tuple[list[Any], bool]]:
    """`new` in batches of `BATCH`, each with whether it is the last."""
    batch: list[Any] = []
    for item in new:
        if len(batch) == BATCH:
            yield batch, False
            batch = []
        batch.append(item)
    if batch:
        yield batch, True


def write(
    kma: Appliance,
    actor: Actor,
    header: Mapping[str, Any],
    partner: TransferPartnerRow,
    new: Iterable[Any],
    total: int,
    group: str,
    approved_by_op: str | None = None,
) -> int:
    """Writes the `new` data units (transfer_import.NewUnit: each with which of its keys are here)
    in batches, `total` of
    them as planned (fewer when some came meanwhile); the number written."""
    file_id, partner_id = str(header["file_id"]), partner.id
    pace, written = Pace(IMPORT_SHARE), 0
    subject = ("transfer_partner", partner_id)
    transfer_jobs.report("writing", 0, total)
    for batch, last in _batches(new):
        units = [new_unit.unit for new_unit in batch]
        now = kma.clock.now()
        statements = [begin(file_id, partner_id, group, actor, now, approved_by_op), _allows(group)]
        statements += _units(file_id, units, now)
        rows: list[tuple[Any, ...]] = []
        for new_unit in batch:
            rows += _keys(kma, new_unit.unit, new_unit.present, group, now)
            pace.tick()
        statements += _insert_keys(rows)
        if last:
            statements.append(_finish(file_id, now))
        # the job's count commits with the batch: after a crash it says exactly what is here
        statements += transfer_jobs.noted("writing", written + len(units), total)
        keys = sum(len(u["keys"]) for u in units)
        kma.commit(
            actor,
            "transfer.import",
            statements,
            (
                f"imported {len(units)} data units ({keys} keys)"
                if last and not written
                else f"imported data units {written + 1} to {written + len(units)} of {total} ({keys} keys)"
            )
            + f" from transfer partner '{partner_id}' ({partner.fingerprint}), transfer file {file_id}, "
            f"into key group '{group}'" + ("; the import is complete" if last and written else ""),
            subject,
        )
        written += len(units)
        if not last:
            pace.rest()
    if not written:  # an import that stopped after its last data unit and before its end
        kma.commit(
            actor,
            "transfer.import",
            [begin(file_id, partner_id, group, actor, kma.clock.now(), approved_by_op), _finish(file_id, 0)],
            f"finished importing transfer file {file_id} from transfer partner '{partner_id}': every "
            "data unit in it was written before",
            subject,
        )
    return written


def begin(
    file_id: str, partner_id: str, group: str, actor: Actor, now: int, approved_by_op: str | None
) -> Stmt:
    """The file's row, 'importing' (made by the first batch; each later one finds it so)."""
    return Stmt(
        "INSERT INTO transfer_files (id, partner_id, direction, data_units, keys, done_by, done_at, state, "
        "key_group_id, approved_by_op) "
        "VALUES (:id, :partner, 'import', 0, 0, :by, :now, 'importing', :g, :op) "
        "ON CONFLICT (id) DO UPDATE SET approved_by_op = coalesce(excluded.approved_by_op, approved_by_op) "
        "WHERE state = 'importing' AND direction = 'import' AND key_group_id = excluded.key_group_id",
        {
            "id": file_id,
            "partner": partner_id,
            "by": actor.entity_id,
            "now": now,
            "g": group,
            "op": approved_by_op,
        },
        expect=1,
        refusal=f"transfer file {file_id} was imported meanwhile, or into another key group",
    )


def _finish(file_id: str, now: int) -> Stmt:
    """The file's row 'done', with the counts of every data unit it brought (this run's and any
    earlier run's) and when it was done (`now`; 0 keeps the time of the last batch)."""
    return Stmt(
        "UPDATE transfer_files SET state = 'done', done_at = CASE WHEN :now > 0 THEN :now ELSE done_at END, "
        "data_units = (SELECT count(*) FROM data_unit_transfers WHERE file_id = :id), "
        "keys = (SELECT count(*) FROM keys WHERE data_unit_id IN "
        "(SELECT data_unit_id FROM data_unit_transfers WHERE file_id = :id)) "
        "WHERE id = :id AND state = 'importing'",
        {"id": file_id, "now": now},
        expect=1,
        refusal=f"transfer file {file_id} was imported meanwhile",
    )


def _allows(group: str) -> Stmt:
    """The key group still allows import (its policy may have changed since the checks)."""
    return Stmt(
        f"UPDATE key_groups SET id = id WHERE id = :g AND {MAY_IMPORT}",
        {"g": group},
        expect=1,
        refusal=f"key group '{group}' no longer exists or no longer allows import",
    )


def _units(file_id: str, units: list[dict[str, Any]], now: int) -> list[Stmt]:
    """The batch's data units, made if new (with the file's description when theirs is empty),
    and linked to the file: two statements for the whole batch, which the store runs in one go,
    where one statement per data unit kept the drives' commits waiting three times as long."""
    rows = json.dumps([[u["id"], str(u.get("description") or "")] for u in units])
    return [
        # every batch that binds keys to units makes them first, as register_data_unit does
        Stmt(
            "INSERT INTO data_units (id, description, created_at, updated_at, has_keys) "
            "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), :now, :now, 1 "
            "FROM json_each(:units) WHERE true ON CONFLICT (id) DO UPDATE SET "
            "updated_at = max(updated_at, excluded.updated_at), has_keys = 1, "
            "description = CASE WHEN description = '' THEN excluded.description ELSE description END",
            {"units": rows, "now": now},
        ),
        Stmt(
            "INSERT INTO data_unit_transfers (data_unit_id, file_id) "
            "SELECT json_extract(value, '$[0]'), :file FROM json_each(:units) WHERE true "
            "ON CONFLICT DO NOTHING",
            {"units": rows, "file": file_id},
        ),
    ]


def _keys(
    kma: Appliance, unit: dict[str, Any], present: set[str], group: str, now: int
) -> list[tuple[Any, ...]]:
    """The unit's keys not here yet, as rows of `_insert_keys`: wrapped under this cluster's master
    key, with the sender's times; `backup_mark` and `imported_at` now (the material is sent to
    agents once the next backup, or another KMA, holds it: `key_access.held`), and the row's MAC
    (kma/services/integrity/key_macs.py), or every agent would be refused it as forged."""
    master, rows = kma.vault.master(), []
    for key in unit["keys"]:
        if key["id"].lower() not in present:
            wrapped = master.wrap(f"key:{key['id']}", bytes.fromhex(key["material"]))
            sealed = key_macs.mac(
                kma.vault.row_mac_key(),
                key["id"],
                key_group_id=group,
                data_unit_id=unit["id"],
                compromised_at=key.get("compromised_at"),
            )
            rows.append(
                (
                    key["id"],
                    kma.kma_id,
                    wrapped,
                    group,
                    unit["id"],
                    int(key["created_at"]),
                    now,
                    key.get("activated_at"),
                    key.get("protect_until"),
                    key.get("deactivate_at"),
                    key.get("compromised_at"),
                    now,
                    now,
                    sealed,
                )
            )
    return rows


_KEY_COLUMNS = (
    "id, kma_id, material_wrapped, key_group_id, data_unit_id, created_at, issued_at, activated_at, "
    "protect_until, deactivate_at, compromised_at, backup_mark, imported_at, mac"
)
KEYS_PER_STATEMENT = 1000  # 14 parameters each: under SQLite's 32,766


def _insert_keys(rows: list[tuple[Any, ...]]) -> list[Stmt]:
    """The batch's keys in one statement (a thousand a statement): the store runs it in one go,
    where one statement per key kept the writer, and every drive's commit waiting behind it, several
    times as long. A key made here meanwhile (or twice in the file) is not inserted, and the batch
    is refused (`expect`)."""
    ids = [str(row[0]).lower() for row in rows]
    if len(set(ids)) != len(ids):  # one key, one tape: the store compares key IDs without case
        twice = sorted({i for i in ids if ids.count(i) > 1})
        raise Conflict(f"Key {twice[0]} is in the transfer file twice: nothing more of it is imported.")
    statements = []
    for i in range(0, len(rows), KEYS_PER_STATEMENT):
        some = rows[i : i + KEYS_PER_STATEMENT]
        values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(some))
        statements.append(
            Stmt(
                f"INSERT OR IGNORE INTO keys ({_KEY_COLUMNS}) SELECT * FROM (VALUES {values}) AS v "
                "WHERE NOT EXISTS (SELECT 1 FROM keys k WHERE k.id = v.column1 COLLATE NOCASE)",
                tuple(value for row in some for value in row),
                expect=len(some),
                refusal="a key of the file was made here meanwhile (or is in the file twice)",
            )
        )
    return statements
