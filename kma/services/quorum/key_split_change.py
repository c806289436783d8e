"""Changing the key split, with each new member setting their own passphrase.

Whoever submits the change names the new members and the threshold, nothing more: if they also
chose the passphrases they would hold every new share, a full quorum of one. So:

1. Submission (a Security Officer, with 0..M current members' credentials): the KMA makes a new
   root secret, splits it M-of-N, wraps the master key under it and forgets it. Each new share is
   held under the master key, bound to this operation and member, with a one-time enrolment code
   (120 random bits, kept only as its SHA-256) handed to the submitter once, to pass on.
2. Enrolment (`kma.quorum.member_enrolment`): each new member, with their code, types their own
   passphrase (their own API call, or at the ceremony in the manager, at the keyboard); their
   share is sealed under it and the code is spent. The operation shows who has enrolled.
3. Execution: once every new member has enrolled *and* M current members have approved. The
   binding (a digest of the threshold, names and the new wrapped master key, wrapped under the
   master key at submission) proves, with the old quorum's master key, that this KMA made the
   new split for this operation. The same batch makes a new *backup key* (`backup_keys`, under the
   master key, so every unlocked KMA of the cluster uses it at once): database backups taken from
   then on are opened only by a core security backup taken since, never by one of the old split.

Holding new shares under the master key until enrolment gives nothing away: the new root secret
only protects the master key, which whoever can unwrap these shares already has.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Mapping
from typing import Any

from kma.appliance import Appliance
from kma.backup.fileformat import backup_key_context
from kma.crypto import CryptoError, WrappingKey, split_secret
from kma.crypto.generations import MasterKeys
from kma.errors import Conflict
from kma.services.change import Change
from kma.services.integrity.row_macs import SPLIT_MEMBERS, seal
from kma.services.quorum import master_rotation
from kma.services.quorum.escrow import seal_share, unseal_share
from kma.services.quorum.key_split import Quorum, Share, check_split_members, current_split
from kma.services.quorum.op_type import OpType, Outcome, Prepared
from kma.services.sign_in import lockout
from kma.store import Stmt
from kma.vault import row_mac_key, wrap_master_for_root

CODE_BYTES = 15  # 120 bits, shown as 24 base32 letters and digits in groups of six


def _binding_context(op_id: str) -> str:
    return f"quorum-new-split:{op_id}"


def share_context(op_id: str, member: str) -> str:
    return f"quorum-new-share:{op_id}:{member}"


def code_hash(code: str) -> str:
    return hashlib.sha256(code.strip().upper().replace("-", "").encode()).hexdigest()


def new_code() -> str:
    text = base64.b32encode(secrets.token_bytes(CODE_BYTES)).decode("ascii")
    return "-".join(text[i : i + 6] for i in range(0, len(text), 6))


def _digest(threshold: int, names: list[str], master_wrapped_by_root: str) -> bytes:
    canonical = {"threshold": threshold, "members": names, "master_wrapped_by_root": master_wrapped_by_root}
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).digest()


def wrap_share(master: WrappingKey, op_id: str, member: str, share: Share) -> bytes:
    return seal_share(master, share_context(op_id, member), share)


def unwrap_share(master: WrappingKey, op_id: str, member: str, blob: bytes) -> Share:
    return unseal_share(master, share_context(op_id, member), blob)


def _prepare(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    threshold: Any = request.get("threshold")
    names = [str(m["name"]) for m in request.get("members", [])]
    check_split_members(threshold, names)
    master = kma.vault.master()
    rotate = request.get("rotate_master_key") is True
    if rotate and (why := master_rotation.refusal(kma, op_id)):
        raise Conflict(why)
    # Rotating too: the new split protects a new master key, made now and held until then under this one.
    protected = WrappingKey(master.random(32)) if rotate else master
    root = secrets.token_bytes(32)
    shares = split_secret(root, threshold, len(names))
    wrapped_master = wrap_master_for_root(root, protected).hex()
    del root
    codes = {name: new_code() for name in names}
    enrolments = tuple(
        Stmt(
            "INSERT INTO key_split_enrolments (op_id, member_name, position, code_hash, share_wrapped) "
            "VALUES (?, ?, ?, ?, ?)",
            (op_id, name, position, code_hash(codes[name]), wrap_share(master, op_id, name, share)),
        )
        for position, (name, share) in enumerate(zip(names, shares, strict=True))
    )
    binding = master.wrap(_binding_context(op_id), _digest(threshold, names, wrapped_master))
    old = current_split(kma)
    summary = (
        f"Change the key split from {old.threshold} of {len(old.sealed)} ({', '.join(old.members)}) "
        f"to {threshold} of {len(names)} ({', '.join(names)}); each new member sets their own passphrase"
        + ("; and rotate the master key (every stored key re-wrapped under a new one)" if rotate else "")
    )
    payload = {
        "threshold": threshold,
        "members": names,
        "master_wrapped_by_root": wrapped_master,
        "binding": binding.hex(),
    }
    if rotate:
        payload["next_master"] = master.wrap(_next_master_context(op_id), protected.raw()).hex()
    shown = {"threshold": threshold, "members": names} | ({"rotate_master_key": True} if rotate else {})
    return Prepared(summary, shown, payload, statements=enrolments, handed_out=codes, waits=True)


def _ready(kma: Appliance, op_id: str) -> bool:
    """Every new member has set their passphrase."""
    waiting = kma.store.scalar(
        "SELECT count(*) FROM key_split_enrolments WHERE op_id = ? AND share_sealed IS NULL", (op_id,)
    )
    return int(waiting or 0) == 0


def _execute(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    threshold, names = int(p["threshold"]), list(p["members"])
    sealed = _new_shares(kma, quorum, op_id, p)
    generation = quorum.generation + 1
    rotation = _rotation(kma, quorum, op_id, p)
    master = quorum.master if rotation is None else rotation[1]  # what the new split protects
    statements = _new_split_statements(kma, quorum, op_id, p, sealed, master)
    message = (
        f"changed the key split to {threshold} of {len(names)} ({', '.join(names)}); "
        f"generation {generation}; each new member set their own passphrase; the old shares no longer work; "
        "database backups from now on use a new backup key: take a new core security backup"
    )
    change = Change("cluster.key_split", statements, message, ("cluster", "key_split"))
    if rotation is None:
        return Outcome(change)
    old_master, new_master = rotation
    statements += master_rotation.start_statements(kma, op_id, old_master, new_master)
    change = Change(
        "cluster.key_split",
        statements,
        message
        + f"; and started the master key rotation to generation {new_master.generation}: every stored "
        f"key and secret is re-wrapped in the background, then generation "
        f"{new_master.generation - 1} is destroyed",
        ("cluster", "key_split"),
    )
    return Outcome(change, lambda: master_rotation.take_up(kma, old_master, new_master))


def _new_shares(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> dict[str, bytes]:
    """The new members' sealed shares, once the split is proven made here for this operation and
    every new member has set their passphrase."""
    threshold, names = int(p["threshold"]), list(p["members"])
    wrapped_master = str(p["master_wrapped_by_root"])
    try:
        made_here = quorum.master.unwrap(_binding_context(op_id), bytes.fromhex(p["binding"])) == _digest(
            threshold, names, wrapped_master
        )
    except (CryptoError, ValueError):
        made_here = False
    if not made_here:
        raise Conflict("The new key split of this operation was not made by this cluster for it.")
    sealed = {
        row["member_name"]: row["share_sealed"]
        for row in kma.store.query(
            "SELECT member_name, share_sealed FROM key_split_enrolments WHERE op_id = ? "
            "AND share_sealed IS NOT NULL",
            (op_id,),
        )
    }
    if sorted(sealed) != sorted(names):
        waiting = ", ".join(n for n in names if n not in sealed)
        raise Conflict(f"Not every new key split member has set their passphrase yet: {waiting}.")
    return sealed


def _new_split_statements(
    kma: Appliance,
    quorum: Quorum,
    op_id: str,
    p: Mapping[str, Any],
    sealed: Mapping[str, bytes],
    master: WrappingKey,
) -> list[Stmt]:
    """The new split in force (its members, a new backup key), and every other pending operation
    failed: approvals collected under the old split can never rebuild the new root secret."""
    threshold, names = int(p["threshold"]), list(p["members"])
    now, generation = kma.clock.now(), quorum.generation + 1
    mac_key = row_mac_key(master)
    backup_key = master.wrap(backup_key_context(generation), WrappingKey.generate().raw())
    return [
        Stmt(
            "UPDATE cluster SET master_wrapped_by_root = ?, split_threshold = ?, split_generation = ? "
            "WHERE id = 1 AND split_generation = ?",
            (bytes.fromhex(str(p["master_wrapped_by_root"])), threshold, generation, quorum.generation),
            expect=1,
            refusal="the key split changed meanwhile",
        ),
        Stmt(
            "INSERT INTO backup_keys (generation, key_wrapped, created_at) VALUES (?, ?, ?)",
            (generation, backup_key, now),
        ),
        Stmt("DELETE FROM key_split_members"),
        lockout.clear("key_split_member"),  # new passphrases: old failures count no more
        *(
            stmt
            for name in names
            for stmt in (
                Stmt(
                    "INSERT INTO key_split_members (name, share_sealed, generation) VALUES (?, ?, ?)",
                    (name, sealed[name], generation),
                ),
                seal(
                    mac_key,
                    SPLIT_MEMBERS,
                    {"name": name, "share_sealed": sealed[name], "generation": generation},
                ),
            )
        ),
        # Approvals collected under the old split can never rebuild the new root secret.
        Stmt(
            "UPDATE pending_quorum_ops SET state = 'failed', updated_at = ?, result = ? "
            "WHERE state = 'pending' AND id <> ?",
            (now, f"the key split changed (quorum operation {op_id}); submit it again", op_id),
        ),
    ]


def _next_master_context(op_id: str) -> str:
    return f"quorum-next-master:{op_id}"


def _rotation(
    kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]
) -> tuple[WrappingKey, MasterKeys] | None:
    """With a rotation asked for: (the master key now, the next generation's), else None."""
    if "next_master" not in p:
        return None
    if why := master_rotation.refusal(kma, op_id):
        raise Conflict(why)
    try:
        new = WrappingKey(quorum.master.unwrap(_next_master_context(op_id), bytes.fromhex(p["next_master"])))
    except (CryptoError, ValueError):
        raise Conflict("The new master key of this operation cannot be opened.") from None
    return quorum.master.current, MasterKeys(new, quorum.master.generation + 1)


CHANGE_KEY_SPLIT = OpType("change_key_split", _prepare, _execute, _ready)
