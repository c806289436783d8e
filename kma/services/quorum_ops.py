"""The dispatch table of quorum-protected operations, and the user and key split ones.

Not here yet, because the features they protect do not exist yet: adding or joining a KMA,
changing a KMA passphrase, transfer partners, restoring a backup and software upgrades. Each will
be one more `OpType` in `OP_TYPES`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from kma.appliance import Appliance
from kma.crypto import CryptoError, hash_passphrase
from kma.domain.roles import role_words
from kma.domain.validation import check_passphrase
from kma.errors import Conflict, ValidationFailed
from kma.services import users
from kma.services.change import Change
from kma.services.key_split import (
    Credential,
    NewSplit,
    Quorum,
    check_new_split,
    current_split,
    make_new_split,
)
from kma.services.locking import SET_AUTONOMOUS_UNLOCK, UNLOCK_KMA
from kma.services.quorum_types import OpType, Outcome, Prepared
from kma.store import Stmt

KEPT_AS_HASH = "(given; kept only as its hash)"


def _user_must_exist(kma: Appliance, user_id: str) -> None:
    users.get_user(kma, user_id)  # NotFound with a plain message


# --- users -------------------------------------------------------------------------------
def _prepare_create_user(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    user_id, name, roles = str(request["id"]), str(request["name"]), list(request["roles"])
    role_text = users.check_new_user(user_id, name, roles, str(request["passphrase"]))
    if kma.store.query_one("SELECT 1 FROM users WHERE id = ?", (user_id,)) is not None:
        raise Conflict(f"There is already a user '{user_id}'.")
    shown = {"id": user_id, "name": name, "roles": role_text.split(","), "passphrase": KEPT_AS_HASH}
    payload = {
        "id": user_id,
        "name": name,
        "roles": role_text,
        "passphrase_hash": hash_passphrase(str(request["passphrase"])),
    }
    return Prepared(f"Create user '{user_id}' ({name}) with roles {role_words(role_text)}", shown, payload)


def _execute_create_user(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    return Outcome(users.create_user_change(kma, p["id"], p["name"], p["roles"], p["passphrase_hash"]))


def _prepare_update_user(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    user_id = str(request["id"])
    changes = users.check_user_changes(request.get("name"), request.get("roles"), request.get("enabled"))
    if not changes:
        raise ValidationFailed("The request changes nothing.")
    _user_must_exist(kma, user_id)
    shown: dict[str, Any] = {"id": user_id}
    shown.update(
        {k: (v.split(",") if k == "roles" else bool(v) if k == "enabled" else v) for k, v in changes.items()}
    )
    described = "; ".join(f"roles {role_words(changes['roles'])}" if k == "roles" else f"{k} {v!r}"
                          for k, v in shown.items() if k != "id")
    return Prepared(f"Change user '{user_id}': {described}", shown, {"id": user_id, "changes": changes})


def _execute_update_user(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    return Outcome(users.update_user_change(kma, p["id"], dict(p["changes"])))


def _prepare_set_passphrase(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    user_id, passphrase = str(request["id"]), str(request["passphrase"])
    check_passphrase(passphrase)
    _user_must_exist(kma, user_id)
    return Prepared(
        f"Set the passphrase of user '{user_id}'",
        {"id": user_id, "passphrase": KEPT_AS_HASH},
        {"id": user_id, "passphrase_hash": hash_passphrase(passphrase)},
    )


def _execute_set_passphrase(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    return Outcome(users.set_passphrase_change(kma, p["id"], p["passphrase_hash"]))


# --- key split ---------------------------------------------------------------------------
def _seal_context(op_id: str) -> str:
    return f"quorum-new-split:{op_id}"


def _digest(new_split: NewSplit) -> bytes:
    return hashlib.sha256(json.dumps(new_split.to_json(), sort_keys=True).encode()).digest()


def _prepare_change_split(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    """Make the new split now, while the new members' passphrases are at hand, and drop them.

    The new root secret is made, split, sealed under each new member's passphrase and used to wrap
    the master key, then forgotten; the result is bound to this operation under the master key,
    so at execution the old quorum's master key proves this KMA made it for this operation.
    """
    threshold: Any = request.get("threshold")
    members = [Credential(str(m["name"]), str(m["passphrase"])) for m in request.get("members", [])]
    split_members = check_new_split(threshold, members)
    new_split = make_new_split(kma.vault.master(), int(threshold), split_members)  # an int: just checked
    binding = kma.vault.master().wrap(_seal_context(op_id), _digest(new_split))
    old = current_split(kma)
    names = [m.name for m in split_members]
    shown = {"threshold": threshold, "members": names}
    summary = (
        f"Change the key split from {old.threshold} of {len(old.sealed)} ({', '.join(old.members)}) "
        f"to {threshold} of {len(names)} ({', '.join(names)})"
    )
    return Prepared(summary, shown, {"new_split": new_split.to_json(), "binding": binding.hex()})


def _execute_change_split(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    new_split = NewSplit.from_json(dict(p["new_split"]))
    try:
        made_here = quorum.master.unwrap(_seal_context(op_id), bytes.fromhex(p["binding"])) == _digest(
            new_split
        )
    except (CryptoError, ValueError):
        made_here = False
    if not made_here:
        raise Conflict("The new key split of this operation was not made by this cluster for it.")
    now, generation = kma.clock.now(), quorum.generation + 1
    statements = [
        Stmt(
            "UPDATE cluster SET master_wrapped_by_root = ?, split_threshold = ?, split_generation = ? "
            "WHERE id = 1 AND split_generation = ?",
            (new_split.master_wrapped_by_root, new_split.threshold, generation, quorum.generation),
            expect=1,
            refusal="the key split changed meanwhile",
        ),
        Stmt("DELETE FROM key_split_members"),
        *(
            Stmt(
                "INSERT INTO key_split_members (name, share_sealed, generation) VALUES (?, ?, ?)",
                (name, sealed, generation),
            )
            for name, sealed in new_split.sealed
        ),
        # Approvals collected under the old split can never rebuild the new root secret.
        Stmt(
            "UPDATE pending_quorum_ops SET state = 'failed', updated_at = ?, result = ? "
            "WHERE state = 'pending' AND id <> ?",
            (now, f"the key split changed (quorum operation {op_id}); submit it again", op_id),
        ),
    ]
    names = ", ".join(name for name, _ in new_split.sealed)
    message = (
        f"changed the key split to {new_split.threshold} of {len(new_split.sealed)} ({names}); "
        f"generation {generation}; the old shares no longer work"
    )
    return Outcome(Change("cluster.key_split", statements, message, ("cluster", "key_split")))


OP_TYPES: dict[str, OpType] = {
    op.name: op
    for op in (
        OpType("create_user", _prepare_create_user, _execute_create_user),
        OpType("update_user", _prepare_update_user, _execute_update_user),
        OpType("set_user_passphrase", _prepare_set_passphrase, _execute_set_passphrase),
        UNLOCK_KMA,
        SET_AUTONOMOUS_UNLOCK,
        OpType("change_key_split", _prepare_change_split, _execute_change_split),
    )
}
