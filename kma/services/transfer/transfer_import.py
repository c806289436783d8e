"""Importing a transfer file from a partner (docs/transfer.md).

Before anything is written the file must be intact and signed by a registered, enabled partner
allowed to send, addressed to this cluster, not expired; every refusal is audited with its reason
and writes nothing else. The preview says what an import would do; the import writes every data
unit and key of the file, in batches (kma/services/transfer/transfer_import_writer.py), into a key group whose
policy allows import; when that policy asks for it (`import_needs_quorum`) the import is a quorum
operation (kma/services/transfer/transfer_import_quorum.py), checked all over again when it runs.

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
from kma.crypto import transfer_stream
from kma.crypto.transfer import Identity, TransferFileRefused, check_recipient, fingerprint
from kma.domain.actor import Actor
from kma.domain.lifecycle import HELD_OR_REPLICATED
from kma.domain.validation import check_id, check_text
from kma.errors import Conflict, KmaError, ValidationFailed
from kma.pacing import Pace
from kma.services.transfer import transfer_import_writer, transfer_jobs, transfer_partners
from kma.services.transfer.transfer_import_writer import IMPORT_SHARE, MAY_IMPORT

CHUNK = 5000  # data units of the file read, checked and planned at once (two look-up queries)
REST_EVERY = 500  # data units read by the plan between two rests


@dataclass(frozen=True)
class Started:
    """An import of the file that began here and did not finish (the KMA stopped halfway)."""

    key_group_id: str
    approved_by_op: str | None  # the quorum operation that approved it, if one did


@dataclass(frozen=True)
class Opened:
    header: dict[str, Any]
    partner: transfer_partners.TransferPartnerRow
    file: transfer_stream.WholeFile | transfer_stream.StreamedFile  # its signature checked
    identity: Identity  # this cluster's, which opens it
    imported_at: int | None  # when this very file was imported here before
    started: Started | None = None  # an import of it that began here and is still to finish

    def units(self) -> Iterator[Any]:
        """The file's data units, read again from the file (a version 2 file a chunk at a time)."""
        return self.file.units(self.identity)


@dataclass(frozen=True)
class Plan:
    """What importing the file would do; counted a piece of the file at a time."""

    data_units: int
    keys: int
    new: int  # units with at least one key not here yet
    here: int  # units whose keys are all here already
    conflicts: list[dict[str, str]]


@dataclass(frozen=True)
class NewUnit:
    """A data unit of the file not here yet (as the file gives it), and which of its keys are here
    (lower case; none unless an import of the file stopped between two of its keys' writes)."""

    unit: dict[str, Any]
    present: set[str]


@dataclass(frozen=True)
class _Piece:
    new: list[NewUnit]
    here: int
    conflicts: list[dict[str, str]]


def _refuse(kma: Appliance, actor: Actor, reason: str, error: type[KmaError] = ValidationFailed) -> NoReturn:
    kma.audit(actor, "transfer.import", f"refused a transfer file: {reason}", subject=("transfer", "import"))
    raise error(reason, audited=True)


def open_file(kma: Appliance, actor: Actor, source: transfer_stream.Source) -> Opened:
    """The file once its sender, signature and recipient passed; else an audited refusal saying why."""
    try:
        return checked_file(kma, source)
    except (ValidationFailed, Conflict) as refused:
        _refuse(kma, actor, refused.message, type(refused))


def checked_file(kma: Appliance, source: transfer_stream.Source) -> Opened:
    """The file once its sender, signature, recipient and expiry passed (its content is checked as
    `plan` reads it); else a refusal (not audited: the caller says under which operation)."""
    try:
        sealed = transfer_stream.read(source)
        partner = transfer_partners.partner_by_identity(kma, sealed.sender)
        if partner is None:
            raise TransferFileRefused(
                "The file's sender is not a registered transfer partner of this cluster "
                f"(its fingerprint: {fingerprint(sealed.sender)})."
            )
        sealed.verify(sealed.sender)
        transfer_partners.usable_partner(kma, partner, "may_send")
        identity = transfer_partners.identity(kma)
        check_recipient(identity, sealed.header)
    except TransferFileRefused as refused:
        raise ValidationFailed(str(refused)) from None
    header = sealed.header
    if int(header.get("expires_at", 0)) <= kma.clock.now():
        raise ValidationFailed(
            f"The file expired (it was valid until {header.get('expires_at')}); ask for a new one."
        )
    row = kma.store.query_one(
        "SELECT done_at, state, key_group_id, approved_by_op FROM transfer_files "
        "WHERE id = ? AND direction = 'import'",
        (str(header["file_id"]),),
    )
    if row is None:
        return Opened(header, partner, sealed, identity, None)
    if row["state"] == "done":
        return Opened(header, partner, sealed, identity, row["done_at"])
    return Opened(
        header, partner, sealed, identity, None, Started(row["key_group_id"], row["approved_by_op"])
    )


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


def _problem(unit: Any) -> str | None:
    """What is wrong with a data unit of the payload (a partner's software may have bugs), or None."""
    try:
        check_id(unit["id"], "A volser")
        if not unit["keys"]:
            return f"data unit {unit['id']} has no key"
        return next(filter(None, (_key_problem(k) for k in unit["keys"])), None)
    except ValidationFailed as bad:
        return bad.message
    except (KeyError, TypeError, ValueError, AttributeError):
        return "a data unit or key lacks a field"


def _pieces(opened: Opened, resting: bool = False) -> Iterator[list[dict[str, Any]]]:
    """The file's data units, `CHUNK` at a time, each checked; a refusal at the first bad one
    (nothing is written before the whole file was read so). `resting`: the plan's reading rests
    every `REST_EVERY` data units as long as it worked, as the writes do (the writes' own reading
    rests with them)."""
    piece: list[dict[str, Any]] = []
    pace = Pace(IMPORT_SHARE)
    try:
        for n, unit in enumerate(opened.units(), 1):
            pace.tick()
            if resting and n % REST_EVERY == 0:
                pace.rest()
            problem = _problem(unit)
            if problem:
                raise ValidationFailed(f"The file's content is not valid: {problem}.")
            piece.append(unit)
            if len(piece) == CHUNK:
                yield piece
                piece = []
    except TransferFileRefused as refused:
        raise ValidationFailed(str(refused)) from None
    if piece:
        yield piece


def whole(text: str | bytes) -> transfer_stream.Source:
    """A file that came whole (in a request's JSON, or held with a quorum operation)."""
    raw = text.encode() if isinstance(text, str) else text
    return lambda: (raw,)


def _in_json(values: list[str]) -> str:
    return json.dumps(values)


def plan(kma: Appliance, opened: Opened) -> Plan:
    """Which units are new, which are here already, which conflict with what is here: the whole
    file read through, a piece at a time (none of it kept but the counts and the conflicts)."""
    units = keys = new = here = 0
    conflicts: list[dict[str, str]] = []
    transfer_jobs.report("checking the data units", 0, 0)
    for piece in _pieces(opened, resting=True):
        found = _plan_piece(kma, piece)
        units, keys = units + len(piece), keys + sum(len(u["keys"]) for u in piece)
        new, here = new + len(found.new), here + found.here
        conflicts += found.conflicts
    if not units:
        raise ValidationFailed("The file's content is not valid: it holds no list of data units.")
    return Plan(units, keys, new, here, conflicts)


def new_units(kma: Appliance, opened: Opened) -> Iterator[NewUnit]:
    """The file's units not here yet, each with which of its keys are here: what the writer writes,
    read and planned again a piece at a time (what came meanwhile is skipped)."""
    for piece in _pieces(opened):
        yield from _plan_piece(kma, piece).new


def _plan_piece(kma: Appliance, units: list[dict[str, Any]]) -> _Piece:
    by_key: dict[str, Any] = {}
    for r in kma.store.query(
        "SELECT id, data_unit_id, material_wrapped FROM keys WHERE id COLLATE NOCASE IN "
        "(SELECT value FROM json_each(?))",
        (_in_json([k["id"] for u in units for k in u["keys"]]),),
    ):
        by_key[r["id"].lower()] = r
    on_unit: dict[str, set[str]] = {}
    for r in kma.store.query(
        "SELECT data_unit_id, id FROM keys WHERE data_unit_id IN (SELECT value FROM json_each(?))",
        (_in_json([u["id"] for u in units]),),
    ):
        on_unit.setdefault(r["data_unit_id"], set()).add(r["id"])
    master, found = kma.vault.master(), _Piece([], 0, [])
    pace = Pace()
    for unit in units:
        pace.tick()
        theirs = {k["id"] for k in unit["keys"]}
        reason = None
        if on_unit.get(unit["id"], set()) - theirs:
            reason = f"volser {unit['id']} exists here with another key"
        for key in unit["keys"]:
            here = by_key.get(key["id"].lower())
            if (
                reason is None
                and here is not None
                and (
                    here["data_unit_id"] != unit["id"]
                    or here["material_wrapped"] is None
                    or not hmac.compare_digest(
                        master.unwrap(f"key:{here['id']}", bytes(here["material_wrapped"])),
                        bytes.fromhex(key["material"]),
                    )
                )
            ):
                reason = f"key {key['id']} exists here for another data unit or with other bytes"
        if reason:
            found.conflicts.append({"data_unit_id": unit["id"], "reason": reason})
        elif theirs - on_unit.get(unit["id"], set()):
            found.new.append(NewUnit(unit, {k.lower() for k in theirs} & set(by_key)))
        else:
            found = _Piece(found.new, found.here + 1, found.conflicts)
    return found


def preview_transfer_import(kma: Appliance, actor: Actor, source: transfer_stream.Source) -> ImportAnswer:
    transfer_jobs.report("checking the file", 0, 0)
    opened = open_file(kma, actor, source)
    try:
        return answer(opened, plan(kma, opened))
    except ValidationFailed as refused:
        _refuse(kma, actor, refused.message)


@dataclass(frozen=True)
class ImportAnswer:
    """What an import did, or a preview says it would do (`imported` 0)."""

    file_id: str
    partner_id: str
    partner_name: str
    sender_name: str
    created_at: int | None
    expires_at: int
    data_units: int
    keys: int
    new: int  # data units with a key not here yet
    already_here: int
    conflicts: list[dict[str, str]]
    imported_before_at: int | None  # when this very file was imported here before
    imported: int
    key_group_id: str | None
    keys_awaiting_backup: int


def answer(
    opened: Opened, p: Plan, imported: int = 0, group: str | None = None, waiting: int = 0
) -> ImportAnswer:
    h = opened.header
    return ImportAnswer(
        file_id=h["file_id"],
        partner_id=opened.partner.id,
        partner_name=opened.partner.name,
        sender_name=str(h.get("sender_name", "")),
        created_at=h.get("created_at"),
        expires_at=h["expires_at"],
        data_units=p.data_units,
        keys=p.keys,
        new=p.new,
        already_here=p.here,
        conflicts=p.conflicts,
        imported_before_at=opened.imported_at,
        imported=imported,
        key_group_id=group,
        keys_awaiting_backup=waiting,
    )


class NeedsQuorum(KmaError):
    """The key group's policy asks for a quorum: the caller submits the import as a quorum
    operation (`import_transfer_file`) instead."""

    code, status = "conflict", 409


def needs_quorum(kma: Appliance, key_group_id: str) -> bool:
    sql = (
        "SELECT p.import_needs_quorum FROM key_groups g JOIN key_policies p ON p.id = g.policy_id "
        "WHERE g.id = ?"
    )
    return bool(kma.store.scalar(sql, (key_group_id,)))


def check_group(kma: Appliance, key_group_id: str) -> None:
    if kma.store.scalar("SELECT " + MAY_IMPORT.replace(":g", "?"), (key_group_id,)) != 1:
        raise ValidationFailed(
            f"Key group '{key_group_id}' does not exist or its policy does not allow import."
        )


def check_plan(opened: Opened, p: Plan, key_group_id: str) -> None:
    """Refuses an import whose units conflict with this cluster's, or that would finish an import
    of the file begun into another key group."""
    if p.conflicts:
        named = "; ".join(c["reason"] for c in p.conflicts[:10])
        raise Conflict(f"{len(p.conflicts)} data units conflict with this cluster's: {named}.")
    if opened.started is not None and opened.started.key_group_id != key_group_id:
        raise Conflict(
            f"An import of transfer file {opened.header['file_id']} into key group "
            f"'{opened.started.key_group_id}' began here and did not finish: import it into that key "
            "group to finish it."
        )


def import_transfer_file(
    kma: Appliance, actor: Actor, source: transfer_stream.Source, key_group_id: str
) -> ImportAnswer:
    """Imports the file at once, or raises NeedsQuorum when the key group's policy asks for a
    quorum (unless a quorum approved this very file's import, begun here and still to finish)."""
    transfer_jobs.report("checking the file", 0, 0)
    opened = open_file(kma, actor, source)
    try:
        check_group(kma, key_group_id)
        approved = opened.started is not None and opened.started.approved_by_op is not None
        if needs_quorum(kma, key_group_id) and not approved:
            raise NeedsQuorum(f"An import into key group '{key_group_id}' needs the key split quorum.")
        p = plan(kma, opened)
        check_plan(opened, p, key_group_id)
    except (ValidationFailed, Conflict) as refused:
        _refuse(kma, actor, refused.message, type(refused))
    if changes_nothing(opened, p):
        kma.audit(
            actor,
            "transfer.import",
            nothing_message(opened),
            condition=Condition.WARNING,
            subject=("transfer_partner", opened.partner.id),
        )
        return answer(opened, p, 0, key_group_id)
    written = transfer_import_writer.write(
        kma, actor, opened.header, opened.partner, new_units(kma, opened), p.new, key_group_id
    )
    return answer(opened, p, written, key_group_id, awaiting_backup(kma))


def changes_nothing(opened: Opened, p: Plan) -> bool:
    """This very file was imported, or every key in it is here already (and no import of it is
    still to finish)."""
    return opened.imported_at is not None or (p.new == 0 and opened.started is None)


def nothing_message(opened: Opened) -> str:
    return (
        f"transfer file {opened.header['file_id']} from partner '{opened.partner.id}' changed nothing: "
        "every key in it is here already"
    )


def awaiting_backup(kma: Appliance) -> int:
    """Imported keys whose material waits for a backup (`key_access.held`; none in a cluster)."""
    sql = f"SELECT count(*) FROM keys WHERE imported_at IS NOT NULL AND NOT {HELD_OR_REPLICATED.format(t='')}"
    return int(kma.store.scalar(sql) or 0)
