"""The dispatch table of quorum-protected operations, and the user ones (the key split change:
`kma.services.quorum.key_split_change`).

Not here yet, because the features they protect do not exist yet: transfer partners, restoring
a backup and software upgrades. Each will be one more `OpType` in `OP_TYPES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kma.appliance import Appliance
from kma.cluster.membership import ADD_KMA, REMOVE_KMA, SET_KMA_PASSPHRASE
from kma.cluster.version import RAISE_CLUSTER_VERSION
from kma.crypto import hash_passphrase
from kma.domain.roles import role_words
from kma.domain.strength import check_user_passphrase
from kma.errors import ValidationFailed
from kma.services import users
from kma.services.audit_retention import SHORTEN_RETENTION
from kma.services.common import refuse_taken
from kma.services.quorum.ca_rollover import RENEW_CLUSTER_CA
from kma.services.quorum.key_split import Quorum
from kma.services.quorum.key_split_change import CHANGE_KEY_SPLIT
from kma.services.quorum.locking import SET_AUTONOMOUS_UNLOCK, UNLOCK_KMA
from kma.services.quorum.master_rotation import ROTATE_MASTER_KEY
from kma.services.quorum.op_type import KEPT_AS_HASH, OpType, Outcome, Prepared


def _user_must_exist(kma: Appliance, user_id: str) -> None:
    users.get_user(kma, user_id)  # NotFound with a plain message


# --- users -------------------------------------------------------------------------------
def _prepare_create_user(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    user_id, name, roles = str(request["id"]), str(request["name"]), list(request["roles"])
    role_text = users.check_new_user(user_id, name, roles, str(request["passphrase"]))
    refuse_taken(kma, "user", user_id)
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
    described = "; ".join(
        f"roles {role_words(changes['roles'])}" if k == "roles" else f"{k} {v!r}"
        for k, v in shown.items()
        if k != "id"
    )
    return Prepared(f"Change user '{user_id}': {described}", shown, {"id": user_id, "changes": changes})


def _execute_update_user(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    return Outcome(users.update_user_change(kma, p["id"], dict(p["changes"])))


def _prepare_set_passphrase(kma: Appliance, op_id: str, request: Mapping[str, Any]) -> Prepared:
    user_id, passphrase = str(request["id"]), str(request["passphrase"])
    check_user_passphrase(passphrase, user_id)
    _user_must_exist(kma, user_id)
    return Prepared(
        f"Set the passphrase of user '{user_id}'",
        {"id": user_id, "passphrase": KEPT_AS_HASH},
        {"id": user_id, "passphrase_hash": hash_passphrase(passphrase)},
    )


def _execute_set_passphrase(kma: Appliance, quorum: Quorum, op_id: str, p: Mapping[str, Any]) -> Outcome:
    return Outcome(users.set_passphrase_change(kma, p["id"], p["passphrase_hash"]))


OP_TYPES: dict[str, OpType] = {
    op.name: op
    for op in (
        OpType("create_user", _prepare_create_user, _execute_create_user),
        OpType("update_user", _prepare_update_user, _execute_update_user),
        OpType("set_user_passphrase", _prepare_set_passphrase, _execute_set_passphrase),
        UNLOCK_KMA,
        SET_AUTONOMOUS_UNLOCK,
        CHANGE_KEY_SPLIT,
        SHORTEN_RETENTION,
        ADD_KMA,
        SET_KMA_PASSPHRASE,
        REMOVE_KMA,
        RAISE_CLUSTER_VERSION,
        ROTATE_MASTER_KEY,
        RENEW_CLUSTER_CA,
    )
}
