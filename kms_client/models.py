"""The client's own vocabulary beside the generated wire models (kms_client/wire.py): the values of
the KMA's enumerations this client knows (they stay plain strings on the wire: a newer KMA may add
one), a key split member's credential as sent, and the answers the client composes from the wire's
(a pending operation plus what is shown once)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .reader import read
from .wire import PendingQuorumOp

ROLES = (
    "security_officer",
    "compliance_officer",
    "operator",
    "backup_operator",
    "auditor",
    "quorum_member",
)
DATA_UNIT_STATES = ("no_key", "readable_normal", "readable_needs_rekey", "shredded")
KEY_STATES = (
    "generated",
    "ready",
    "pre_active",
    "withheld",
    "protect_and_process",
    "process_only",
    "deactivated",
    "destroyed",
)
SEVERITIES = ("info", "warning", "error")
CONDITIONS = ("success", "warning", "error")
RETENTIONS = ("long", "medium", "short")
KMA_HEALTH = ("ok", "warning", "down")
HISTORY_SUBJECTS = ("key", "data_unit", "agent")
QUORUM_OP_STATES = ("pending", "executed", "expired", "deleted", "failed")
QUORUM_OP_TYPES = (
    "create_user",
    "update_user",
    "set_user_passphrase",
    "unlock_kma",
    "set_autonomous_unlock",
    "change_key_split",
    "shorten_audit_retention",
    "add_kma",
    "set_kma_passphrase",
    "remove_kma",
    "raise_cluster_version",
    "rotate_master_key",
    "register_transfer_partner",
    "set_directory",
    "turn_off_second_factor",
    "renew_cluster_ca",
)


@dataclass(frozen=True)
class Credential:
    """One key split member's credential sent with a quorum-protected request; never logged."""

    member: str
    passphrase: str = field(repr=False)

    def to_json(self) -> dict[str, str]:
        return {"member": self.member, "passphrase": self.passphrase}


@dataclass(frozen=True)
class KeySplitChange:
    """A key split change just submitted: the pending operation, and each new member's one-time
    enrolment code (shown this once; pass each to its member, who sets their own passphrase)."""

    op: PendingQuorumOp
    enrolment_codes: Mapping[str, str]


def key_split_change(d: Mapping[str, Any]) -> KeySplitChange:
    return KeySplitChange(read(PendingQuorumOp, d), read(Mapping[str, str], d["enrolment_codes"]))  # type: ignore[type-abstract]
