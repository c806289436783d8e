"""An import under quorum: when the key group's policy has `import_needs_quorum`, importing a
transfer file is the quorum operation `import_transfer_file` (docs/transfer.md).

At submission the file is checked as for an import (sender, signature, expiry, key group,
conflicts) and held with the pending operation in `transfer_held_files` (it is ciphertext only
this cluster opens, signed by the partner; at most `MAX_HELD`); the approvers see the partner,
the file's SHA-256, its data units and keys and the key group. When the quorum is reached the
held file is checked all over again (a partner disabled, a key made, the file expired meanwhile:
the operation fails and writes nothing), the file's row is marked approved by the operation in
the operation's own batch, and the data units are written in batches right after
(kma/services/transfer/transfer_import_writer.py). A file imported already changes nothing.
"""

from __future__ import annotations

import contextvars
import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from kma.appliance import Appliance
from kma.crypto import transfer_stream
from kma.errors import ValidationFailed
from kma.services.change import Change
from kma.services.quorum.key_split import Quorum
from kma.services.quorum.op_type import OpType, Outcome, Prepared
from kma.services.transfer import held_parts, transfer_import, transfer_import_writer
from kma.store import Stmt

MAX_HELD = 64 * 2**20  # a file held for approval (about 150,000 data units of one key each)


# The file just submitted, by its operation: an operation that runs at once (M credentials came
# with it) runs before anything of it is written, its held file included, and reads it where it was.
_SUBMITTED: contextvars.ContextVar[tuple[str, transfer_stream.Source] | None] = contextvars.ContextVar(
    "transfer_file_submitted", default=None
)


@dataclass(frozen=True)
class _Submitted:
    """Where the submitted file is in the store: an upload's parts, or an import job's file."""

    table: str
    owner: str
    key: str
    sha256: str
    size: int


def _submitted(kma: Appliance, request: Mapping[str, Any]) -> _Submitted:
    if "upload_id" in request:
        key, table, owner = str(request["upload_id"]), "transfer_upload_parts", "upload_id"
        sql = "SELECT sha256, size FROM transfer_uploads WHERE id = ?"
    else:
        key, table, owner = str(request["job_id"]), "transfer_job_files", "job_id"
        sql = (
            "SELECT file_sha256 AS sha256, (SELECT sum(length(content)) FROM transfer_job_files "
            "WHERE job_id = transfer_jobs.id) AS size FROM transfer_jobs WHERE id = ?"
        )
    row = kma.store.query_one(sql, (key,))
    if row is None or row["sha256"] is None:
        raise ValidationFailed("The transfer file to submit is no longer held here: upload it again.")
    return _Submitted(table, owner, key, str(row["sha256"]), int(row["size"] or 0))


def _prepare(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    """`request`: {"upload_id" (a transfer upload) or "job_id" (an import job's file), "key_group_id"}.
    The file is copied inside the store to the operation's held parts, never read whole here."""
    group, where = str(request["key_group_id"]), _submitted(kma, request)
    if where.size > MAX_HELD:
        raise ValidationFailed(
            f"A transfer file held for the quorum's approval is at most {MAX_HELD // 2**20} MiB (this one "
            f"is {where.size / 2**20:.0f} MiB): ask the partner for smaller files (by volser range)."
        )
    source = held_parts.held(kma, where.table, where.owner, where.key)
    _SUBMITTED.set((op_id, source))
    opened, p = _checked(kma, source, group)
    h, partner, keys = opened.header, opened.partner, p.keys
    shown = {
        "file_id": h["file_id"],
        "sha256": where.sha256,
        "partner_id": partner.id,
        "partner_name": partner.name,
        "partner_fingerprint": partner.fingerprint,
        "data_units": p.data_units,
        "keys": keys,
        "new": p.new,
        "already_here": p.here,
        "key_group_id": group,
        "expires_at": h["expires_at"],
    }
    summary = (
        f"Import transfer file {h['file_id']} (SHA-256 {shown['sha256']}) from transfer partner "
        f"'{partner.id}' ({partner.name}, fingerprint {partner.fingerprint}): "
        f"{p.data_units:,} data units ({keys:,} keys; {p.new:,} new) into key group '{group}'"
    )
    held = Stmt(
        f"INSERT INTO transfer_held_files (op_id, part, content) SELECT ?, part, content FROM {where.table} "
        f"WHERE {where.owner} = ?",
        (op_id, where.key),
    )
    preview = transfer_import.answer(
        opened, p, 0 if transfer_import.changes_nothing(opened, p) else p.new, group
    )
    return Prepared(summary, shown, shown, statements=(held,), handed_out=asdict(preview))


def _checked(
    kma: Appliance, source: transfer_stream.Source, group: str
) -> tuple[transfer_import.Opened, transfer_import.Plan]:
    opened = transfer_import.checked_file(kma, source)
    transfer_import.check_group(kma, group)
    p = transfer_import.plan(kma, opened)
    transfer_import.check_plan(opened, p, group)
    return opened, p


def _execute(kma: Appliance, quorum: Quorum, op_id: str, payload: Mapping[str, Any]) -> Outcome:
    # Run at once, the file is read where it was submitted (an upload, an import job's file, there
    # until the batches end), a part at a time. Approved later, it is read whole (at most MAX_HELD):
    # its held parts go with the operation's end, which commits before the batches are written.
    submitted = _SUBMITTED.get()
    if submitted is not None and submitted[0] == op_id:
        source = submitted[1]
    else:
        source = transfer_import.whole(
            b"".join(held_parts.held(kma, "transfer_held_files", "op_id", op_id)())
        )
    hashed = hashlib.sha256()
    for part in source():
        hashed.update(part)
    if hashed.hexdigest() != payload["sha256"]:
        raise ValidationFailed(
            f"The transfer file held with quorum operation {op_id} is not the one submitted (its SHA-256 "
            "differs): nothing is imported. Submit the file again."
        )
    group = str(payload["key_group_id"])
    opened, p = _checked(kma, source, group)
    subject = ("transfer_partner", opened.partner.id)
    if transfer_import.changes_nothing(opened, p):
        return Outcome(Change("transfer.import", [], transfer_import.nothing_message(opened), subject))
    file_id = str(opened.header["file_id"])
    # The file's row, approved by this operation, commits with the operation's own end: an import
    # that stops halfway is finished by importing the same file again, with no new quorum.
    approved = transfer_import_writer.begin(
        file_id, opened.partner.id, group, kma.itself, kma.clock.now(), op_id
    )

    def write() -> None:
        transfer_import_writer.write(
            kma,
            kma.itself,
            opened.header,
            opened.partner,
            transfer_import.new_units(kma, opened),
            p.new,
            group,
            op_id,
        )

    message = (
        f"approved the import of transfer file {file_id} from transfer partner '{opened.partner.id}' "
        f"into key group '{group}': {p.new:,} data units are written now, in batches"
    )
    return Outcome(Change("transfer.import", [approved], message, subject), after=write)


IMPORT_TRANSFER_FILE = OpType("import_transfer_file", _prepare, _execute)
