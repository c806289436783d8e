"""Exporting the keys of chosen data units to a transfer partner (docs/transfer.md).

The KMA writes one transfer file holding the data units with every key a reader needs (each key's
bytes and times), wrapped to the partner and signed by this cluster. Only keys whose key group's
policy allows export leave; the others, and keys already destroyed, are named in the answer and in
the audit event. The file's row and each data unit's link to it are committed with the audit event
before the file is handed out, so nothing leaves without a trace.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.crypto.transfer import fingerprint
from kma.crypto.transfer_stream import FileWriter
from kma.domain.actor import Actor
from kma.errors import ValidationFailed
from kma.pacing import Pace
from kma.services.integrity import key_macs
from kma.services.transfer import transfer_jobs, transfer_partners
from kma.store import Stmt

DAY = 86400
CHUNK = 2000  # keys read between two rests
EXPORT_SHARE = 0.5  # of a core, while an export runs
NAMED_IN_EVENT = 20  # keys left behind named in the audit event; the answer names them all
# Tape keys only (AES-256; no KMIP object of another type): what a drive reads.
_TAPE_KEY = (
    "NOT EXISTS (SELECT 1 FROM key_kmip m WHERE m.key_id = k.id "
    "AND (m.object_type <> 2 OR coalesce(m.bits, 256) <> 256))"
)


@dataclass(frozen=True)
class Selection:
    """Which data units: every given criterion must hold (at least one is required)."""

    volsers: tuple[str, ...] = ()
    volser_from: str | None = None
    volser_to: str | None = None
    key_group_id: str | None = None
    written_from: int | None = None  # a key of the unit was first used in [from, to]
    written_to: int | None = None

    def where(self) -> tuple[str, dict[str, Any]]:
        parts: list[str] = []
        params: dict[str, Any] = {}
        if self.volsers:
            parts.append("k.data_unit_id IN (SELECT value FROM json_each(:volsers))")
            params["volsers"] = json.dumps(list(self.volsers))
        for column, op, value in (
            ("k.data_unit_id", ">=", self.volser_from),
            ("k.data_unit_id", "<=", self.volser_to),
            ("k.key_group_id", "=", self.key_group_id),
            ("k.activated_at", ">=", self.written_from),
            ("k.activated_at", "<=", self.written_to),
        ):
            if value is not None:
                name = f"p{len(params)}"
                parts.append(f"{column} {op} :{name}")
                params[name] = value
        if not parts:
            raise ValidationFailed(
                "Choose the data units: volsers, a volser range, a key group or a date range."
            )
        return " AND ".join(parts), params


_KEYS = (
    "SELECT k.rowid AS seq, k.id, k.data_unit_id, k.key_group_id, k.material_wrapped, k.created_at, "
    "k.activated_at, k.protect_until, k.deactivate_at, k.compromised_at, k.destroyed_at, k.agent_id, "
    "k.registered_by, k.mac, d.description, "
    "d.created_at AS unit_created_at, coalesce(p.allow_export, 0) AS allow_export "
    "FROM keys k JOIN data_units d ON d.id = k.data_unit_id "
    "LEFT JOIN key_groups g ON g.id = k.key_group_id LEFT JOIN key_policies p ON p.id = g.policy_id "
    f"WHERE {_TAPE_KEY} AND "
)


def _rows(kma: Appliance, where: str, params: dict[str, Any]) -> Iterator[Any]:
    """The selected keys, a data unit's together, read a chunk at a time and paced: an export of
    100,000 tapes takes no more than its share of the KMA from the drives' key requests."""
    pace, after = Pace(EXPORT_SHARE), ("", -1)
    while True:
        chunk = kma.store.query(
            _KEYS + where + " AND (k.data_unit_id, k.rowid) > (:after_du, :after_seq) "
            "ORDER BY k.data_unit_id, k.rowid LIMIT :chunk",
            {**params, "after_du": after[0], "after_seq": after[1], "chunk": CHUNK},
        )
        for row in chunk:
            yield row
            pace.tick()  # each row's unwrapping and checking by the caller is Python work
        if len(chunk) < CHUNK:
            return
        after = (chunk[-1]["data_unit_id"], chunk[-1]["seq"])
        pace.rest()


def _count(kma: Appliance, where: str, params: dict[str, Any]) -> int:
    """The selected data units: the total the export's progress counts to."""
    sql = f"SELECT count(DISTINCT k.data_unit_id) FROM keys k WHERE {_TAPE_KEY} AND {where}"
    return int(kma.store.scalar(sql, params) or 0)


def _collect(
    kma: Appliance, rows: Iterable[Any], total: int, writer: FileWriter
) -> tuple[list[str], list[dict[str, str]]]:
    """Writes the data units to the file as their keys are read (they come together); the volsers
    written, and the keys left behind with why. A data unit is encoded and sealed into the file at
    once: the export holds a chunk of the file at most, not 100,000 data units (whose dicts also
    set off the interpreter's full garbage collections, which stop every thread)."""
    master = kma.vault.master()
    written: list[str] = []
    left: list[dict[str, str]] = []
    unit: dict[str, Any] | None = None
    seen, last = 0, None
    for n, r in enumerate(rows, 1):
        if r["data_unit_id"] != last:
            seen, last = seen + 1, r["data_unit_id"]
        if n % CHUNK == 0:
            transfer_jobs.report("reading keys", seen, total)
        why = (
            "destroyed"
            if r["material_wrapped"] is None
            else "altered in the store without the KMA (its MAC does not verify)"
            if not key_macs.verified(kma, r, remember=False)
            else None
            if r["allow_export"]
            else f"the policy of key group '{r['key_group_id']}' does not allow export"
        )
        if why:
            left.append({"data_unit_id": r["data_unit_id"], "key_id": r["id"], "reason": why})
            continue
        if unit is None or unit["id"] != r["data_unit_id"]:
            if unit is not None:
                writer.add(json.dumps(unit), len(unit["keys"]))
                written.append(unit["id"])
            unit = {
                "id": r["data_unit_id"],
                "description": r["description"],
                "created_at": r["unit_created_at"],
            }
            unit["keys"] = []
        material = master.unwrap(f"key:{r['id']}", bytes(r["material_wrapped"]))
        unit["keys"].append(
            {
                "id": r["id"],
                "material": material.hex(),
                **{c: r[c] for c in ("created_at", "activated_at", "protect_until", "deactivate_at")},
                "compromised_at": r["compromised_at"],
            }
        )
    if unit is not None:
        writer.add(json.dumps(unit), len(unit["keys"]))
        written.append(unit["id"])
    return written, left


@dataclass(frozen=True)
class TransferExportRow:
    """An export's answer, the sealed file with it; the API's `TransferExport` reads it."""

    file_id: str
    partner_id: str
    recipient_fingerprint: str
    sender_fingerprint: str
    data_units: int
    keys: int
    expires_at: int
    not_exported: list[dict[str, str]]  # each key left behind: data_unit_id, key_id, reason
    not_found: list[str]  # volsers asked for that have no key here
    file: str | None  # the transfer file to hand to the partner; None in a job (it holds the file)


def export_transfer_file(
    kma: Appliance, actor: Actor, partner_id: str, selection: Selection, valid_days: int = 30
) -> TransferExportRow:
    """The file for `partner_id` with the selected data units, and what was left behind. In a
    transfer job the file is written to the job as it is made (`transfer_jobs.file_sink`) and the
    answer's `file` is None; a synchronous export answers with it."""
    if not 1 <= valid_days <= 365:
        raise ValidationFailed("A transfer file is valid for 1 to 365 days.")
    partner = transfer_partners.get_transfer_partner(kma, partner_id)
    transfer_partners.usable_partner(kma, partner, "may_receive")
    where, params = selection.where()
    total = _count(kma, where, params)
    identity = transfer_partners.identity(kma)
    now, file_id = kma.clock.now(), uuid.uuid4().hex
    cluster = kma.store.scalar("SELECT name FROM cluster WHERE id = 1")
    header = {
        "file_id": file_id,
        "sender_name": cluster,
        "created_at": now,
        "expires_at": now + valid_days * DAY,
    }
    pieces: list[bytes] = []
    sink = transfer_jobs.file_sink() or pieces.append
    writer = FileWriter(identity, transfer_partners.partner_public(kma, partner_id), header, sink)
    transfer_jobs.report("reading keys", 0, total)
    units, left = _collect(kma, _rows(kma, where, params), total, writer)
    transfer_jobs.report("sealing the file", total, total)
    missing = sorted(set(selection.volsers) - set(units) - {x["data_unit_id"] for x in left})
    if not units:
        raise ValidationFailed(
            "No key of the chosen data units may leave: "
            + (
                "; ".join(f"{x['key_id']} ({x['data_unit_id']}): {x['reason']}" for x in left[:5])
                or "none found"
            )
            + "."
        )
    writer.close()
    kma.commit(
        actor,
        "transfer.export",
        _recorded(file_id, partner_id, units, writer.keys, actor, now),
        _message(partner, file_id, units, writer.keys, left, missing),
        ("transfer_partner", partner_id),
    )
    return TransferExportRow(
        file_id=file_id,
        partner_id=partner_id,
        recipient_fingerprint=partner.fingerprint,
        sender_fingerprint=fingerprint(identity.public),
        data_units=len(units),
        keys=writer.keys,
        expires_at=header["expires_at"],
        not_exported=left,
        not_found=missing,
        file=b"".join(pieces).decode() if pieces else None,
    )


def _recorded(
    file_id: str, partner_id: str, units: list[str], keys: int, actor: Actor, now: int
) -> list[Stmt]:
    return [
        Stmt(
            "INSERT INTO transfer_files (id, partner_id, direction, data_units, keys, done_by, done_at) "
            "VALUES (?, ?, 'export', ?, ?, ?, ?)",
            (file_id, partner_id, len(units), keys, actor.entity_id, now),
        ),
        Stmt(
            "INSERT INTO data_unit_transfers (data_unit_id, file_id) SELECT value, ? FROM json_each(?)",
            (file_id, json.dumps(units)),
        ),
    ]


def _message(
    partner: transfer_partners.TransferPartnerRow,
    file_id: str,
    units: list[str],
    keys: int,
    left: list[dict[str, str]],
    missing: list[str],
) -> str:
    text = (
        f"exported {len(units)} data units ({keys} keys) to transfer partner '{partner.id}' "
        f"({partner.fingerprint}) in transfer file {file_id}"
    )
    if left:
        named = ", ".join(
            f"{x['key_id']} ({x['data_unit_id']}: {x['reason']})" for x in left[:NAMED_IN_EVENT]
        )
        more = f" and {len(left) - NAMED_IN_EVENT} more" if len(left) > NAMED_IN_EVENT else ""
        text += f"; {len(left)} keys did not leave: {named}{more}"
    if missing:
        text += f"; {len(missing)} volsers have no key here: {', '.join(missing[:NAMED_IN_EVENT])}"
    return text
