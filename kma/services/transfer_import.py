"""Importing a transfer file from a partner (docs/transfer.md).

Before anything is written the file must be intact and signed by a registered, enabled partner
allowed to send, addressed to this cluster, not expired; every refusal is audited with its reason
and writes nothing else. The preview says what an import would do; the import writes every data
unit and key of the file in one batch, into a key group whose policy allows import, or nothing.

One key, one tape: a volser that exists here with a key the file does not hold, or a key ID that
exists here for another data unit or with other bytes, is a conflict and the import is refused.
A data unit whose keys are all here already (the same file, or an earlier one) is left as it is:
importing the same file twice changes nothing the second time.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

from kma.appliance import Appliance
from kma.audit.record import Condition
from kma.crypto.transfer import SealedFile, TransferFileRefused, fingerprint
from kma.domain.actor import Actor
from kma.domain.lifecycle import HELD_OR_REPLICATED
from kma.domain.validation import check_id, check_text
from kma.errors import Conflict, KmaError, ValidationFailed
from kma.services import key_macs, transfer_partners
from kma.services.agent_keys.key_lifecycle import register_data_unit
from kma.store import Stmt

CHUNK = 5000  # IDs per look-up query
_MAY_IMPORT = (
    "(SELECT p.allow_import FROM key_groups g JOIN key_policies p ON p.id = g.policy_id WHERE g.id = :g) = 1"
)


@dataclass(frozen=True)
class Opened:
    header: dict[str, Any]
    partner: dict[str, Any]
    units: list[dict[str, Any]]
    imported_at: int | None  # when this very file was imported here before


@dataclass(frozen=True)
class Plan:
    new: list[dict[str, Any]]  # units with at least one key not here yet
    present: set[str]  # the file's keys that are here already (lower case)
    here: list[str]  # units whose keys are all here already
    conflicts: list[dict[str, str]]


def _refuse(kma: Appliance, actor: Actor, reason: str, error: type[KmaError] = ValidationFailed) -> NoReturn:
    kma.audit(actor, "transfer.import", f"refused a transfer file: {reason}", subject=("transfer", "import"))
    raise error(reason, audited=True)


def open_file(kma: Appliance, actor: Actor, text: str) -> Opened:
    """The file's content once every check passed; else an audited refusal saying why."""
    try:
        sealed = SealedFile.read(text.encode())
        partner = transfer_partners.partner_by_identity(kma, sealed.sender)
        if partner is None:
            raise TransferFileRefused(
                "The file's sender is not a registered transfer partner of this cluster "
                f"(its fingerprint: {fingerprint(sealed.sender)})."
            )
        sealed.verify(sealed.sender)
        transfer_partners.usable_partner(kma, partner, "may_send")
        payload = transfer_partners.identity(kma).open(sealed)
    except TransferFileRefused as refused:
        _refuse(kma, actor, str(refused))
    except Conflict as refused:
        _refuse(kma, actor, refused.message, Conflict)
    header = sealed.header
    if int(header.get("expires_at", 0)) <= kma.clock.now():
        _refuse(
            kma,
            actor,
            f"The file expired (it was valid until {header.get('expires_at')}); ask for a new one.",
        )
    units = payload.get("data_units")
    problem = _problem(units)
    if problem:
        _refuse(kma, actor, f"The file's content is not valid: {problem}.")
    imported_at = kma.store.scalar(
        "SELECT done_at FROM transfer_files WHERE id = ? AND direction = 'import'", (str(header["file_id"]),)
    )
    return Opened(header, partner, list(units or ()), imported_at)


_TIMES = ("created_at", "activated_at", "protect_until", "deactivate_at", "compromised_at")


def _key_problem(key: Any) -> str | None:
    check_text(key["id"], "A key ID", max_len=128, required=True)
    if len(bytes.fromhex(key["material"])) != 32:
        return f"key {key['id']} is not an AES-256 key"
    if not isinstance(key["created_at"], int) or any(
        key.get(t) is not None and not isinstance(key[t], int) for t in _TIMES
    ):
        return f"key {key['id']} has a time that is not a number"
    return None


def _problem(units: Any) -> str | None:
    """What is wrong with a payload's data units (a partner's software may have bugs), or None."""
    if not isinstance(units, list) or not units:
        return "it holds no list of data units"
    try:
        for unit in units:
            check_id(unit["id"], "A volser")
            if not unit["keys"]:
                return f"data unit {unit['id']} has no key"
            problem = next(filter(None, (_key_problem(k) for k in unit["keys"])), None)
            if problem:
                return problem
    except ValidationFailed as bad:
        return bad.message
    except (KeyError, TypeError, ValueError, AttributeError):
        return "a data unit or key lacks a field"
    return None


def _chunks(values: list[str]) -> Iterator[str]:
    for i in range(0, len(values), CHUNK):
        yield json.dumps(values[i : i + CHUNK])


def plan(kma: Appliance, units: list[dict[str, Any]]) -> Plan:
    """Which units are new, which are here already, which conflict with what is here."""
    key_ids = [k["id"] for u in units for k in u["keys"]]
    by_key: dict[str, Any] = {}
    for chunk in _chunks(key_ids):
        for r in kma.store.query(
            "SELECT id, data_unit_id, material_wrapped FROM keys WHERE id COLLATE NOCASE IN "
            "(SELECT value FROM json_each(?))",
            (chunk,),
        ):
            by_key[r["id"].lower()] = r
    on_unit: dict[str, set[str]] = {}
    for chunk in _chunks([u["id"] for u in units]):
        for r in kma.store.query(
            "SELECT data_unit_id, id FROM keys WHERE data_unit_id IN (SELECT value FROM json_each(?))",
            (chunk,),
        ):
            on_unit.setdefault(r["data_unit_id"], set()).add(r["id"])
    master, new, here, conflicts = kma.vault.master(), [], [], []
    for unit in units:
        theirs = {k["id"] for k in unit["keys"]}
        reason = None
        if on_unit.get(unit["id"], set()) - theirs:
            reason = f"volser {unit['id']} exists here with another key"
        for key in unit["keys"]:
            found = by_key.get(key["id"].lower())
            if (
                reason is None
                and found is not None
                and (
                    found["data_unit_id"] != unit["id"]
                    or found["material_wrapped"] is None
                    or not hmac.compare_digest(
                        master.unwrap(f"key:{found['id']}", bytes(found["material_wrapped"])),
                        bytes.fromhex(key["material"]),
                    )
                )
            ):
                reason = f"key {key['id']} exists here for another data unit or with other bytes"
        if reason:
            conflicts.append({"data_unit_id": unit["id"], "reason": reason})
        elif theirs - on_unit.get(unit["id"], set()):
            new.append(unit)
        else:
            here.append(unit["id"])
    return Plan(new, set(by_key), here, conflicts)


def preview_transfer_import(kma: Appliance, actor: Actor, text: str) -> dict[str, Any]:
    opened = open_file(kma, actor, text)
    return _answer(opened, plan(kma, opened.units))


def _answer(
    opened: Opened, p: Plan, imported: int = 0, group: str | None = None, waiting: int = 0
) -> dict[str, Any]:
    h = opened.header
    return {
        "file_id": h["file_id"],
        "partner_id": opened.partner["id"],
        "partner_name": opened.partner["name"],
        "sender_name": str(h.get("sender_name", "")),
        "created_at": h.get("created_at"),
        "expires_at": h["expires_at"],
        "data_units": len(opened.units),
        "keys": sum(len(u["keys"]) for u in opened.units),
        "new": len(p.new),
        "already_here": len(p.here),
        "conflicts": p.conflicts,
        "imported_before_at": opened.imported_at,
        "imported": imported,
        "key_group_id": group,
        "keys_awaiting_backup": waiting,
    }


def import_transfer_file(kma: Appliance, actor: Actor, text: str, key_group_id: str) -> dict[str, Any]:
    opened = open_file(kma, actor, text)
    if kma.store.scalar("SELECT " + _MAY_IMPORT.replace(":g", "?"), (key_group_id,)) != 1:
        _refuse(kma, actor, f"Key group '{key_group_id}' does not exist or its policy does not allow import.")
    p = plan(kma, opened.units)
    if p.conflicts:
        named = "; ".join(c["reason"] for c in p.conflicts[:10])
        _refuse(kma, actor, f"{len(p.conflicts)} data units conflict with this cluster's: {named}.", Conflict)
    partner, file_id = opened.partner, str(opened.header["file_id"])
    if opened.imported_at is not None or not p.new:
        kma.audit(
            actor,
            "transfer.import",
            f"transfer file {file_id} from partner '{partner['id']}' changed nothing: every key in it is "
            "here already",
            condition=Condition.WARNING,
            subject=("transfer_partner", partner["id"]),
        )
        return _answer(opened, p, 0, key_group_id)
    now, keys = kma.clock.now(), sum(len(u["keys"]) for u in p.new)
    kma.commit(
        actor,
        "transfer.import",
        _statements(kma, actor, file_id, partner["id"], key_group_id, p, now),
        f"imported {len(p.new)} data units ({keys} keys) from transfer partner '{partner['id']}' "
        f"({partner['fingerprint']}), transfer file {file_id}, into key group '{key_group_id}'",
        ("transfer_partner", partner["id"]),
    )
    return _answer(opened, p, len(p.new), key_group_id, _awaiting_backup(kma))


def _awaiting_backup(kma: Appliance) -> int:
    """Imported keys whose material waits for a backup (`key_access.held`; none in a cluster)."""
    sql = f"SELECT count(*) FROM keys WHERE imported_at IS NOT NULL AND NOT {HELD_OR_REPLICATED.format(t='')}"
    return int(kma.store.scalar(sql) or 0)


def _statements(
    kma: Appliance,
    actor: Actor,
    file_id: str,
    partner_id: str,
    group: str,
    p: Plan,
    now: int,
) -> list[Stmt]:
    master, units = kma.vault.master(), p.new
    statements = [
        Stmt(
            "INSERT INTO transfer_files (id, partner_id, direction, data_units, keys, done_by, done_at) "
            "SELECT ?, ?, 'import', ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM transfer_files WHERE id = ?)",
            (
                file_id,
                partner_id,
                len(units),
                sum(len(u["keys"]) for u in units),
                actor.entity_id,
                now,
                file_id,
            ),
            expect=1,
            refusal=f"transfer file {file_id} was imported meanwhile",
        )
    ]
    for unit in units:
        statements.append(register_data_unit(unit["id"], now))
        statements.append(
            Stmt(
                "UPDATE data_units SET description = ? WHERE id = ? AND description = ''",
                (str(unit.get("description") or ""), unit["id"]),
            )
        )
        statements.append(
            Stmt(
                "INSERT INTO data_unit_transfers (data_unit_id, file_id) VALUES (?, ?)", (unit["id"], file_id)
            )
        )
        for key in unit["keys"]:
            if key["id"].lower() not in p.present:
                wrapped = master.wrap(f"key:{key['id']}", bytes.fromhex(key["material"]))
                sealed = key_macs.mac(
                    kma.vault.row_mac_key(),
                    key["id"],
                    key_group_id=group,
                    data_unit_id=unit["id"],
                    compromised_at=key.get("compromised_at"),
                )
                statements.append(_insert_key(wrapped, key, unit["id"], group, kma.kma_id, now, sealed))
    return statements


def _insert_key(
    wrapped: bytes, key: dict[str, Any], unit: str, group: str, kma_id: str, now: int, sealed: str
) -> Stmt:
    """A key of the file, with its own times; `backup_mark` and `imported_at` now: its material is sent
    to agents once the next backup (or another KMA) holds it (`key_access.held`); `sealed`:
    its row's MAC (kma/services/key_macs.py), or every agent would be refused it as forged."""
    return Stmt(
        "INSERT INTO keys (id, kma_id, material_wrapped, key_group_id, data_unit_id, created_at, issued_at, "
        "activated_at, protect_until, deactivate_at, compromised_at, backup_mark, imported_at, mac) "
        "SELECT :id, :kma, :material, :g, :du, :created, :now, :activated, :protect, :deactivate, "
        f":compromised, :now, :now, :mac WHERE {_MAY_IMPORT} "
        "AND NOT EXISTS (SELECT 1 FROM keys WHERE id = :id COLLATE NOCASE)",
        {
            "id": key["id"],
            "kma": kma_id,
            "material": wrapped,
            "g": group,
            "du": unit,
            "created": int(key["created_at"]),
            "now": now,
            "activated": key.get("activated_at"),
            "protect": key.get("protect_until"),
            "deactivate": key.get("deactivate_at"),
            "compromised": key.get("compromised_at"),
            "mac": sealed,
        },
        expect=1,
        refusal=f"key {key['id']} was made here meanwhile, or key group '{group}' no longer allows import",
    )
