"""Quorum: lock and unlock, autonomous unlock, the operation lifetime, the key split, approving
and deleting pending operations."""

from __future__ import annotations

from typing import Any

from app.writes import Write
from kms_client import KmsClient

# An approval may complete the operation, which then changes what it was about.
approve_quorum_operation = Write(KmsClient.approve_quorum_operation, {"quorum", "users", "kmas", "audit"})
change_key_split = Write(KmsClient.change_key_split, {"quorum"})
delete_quorum_operation = Write(KmsClient.delete_quorum_operation, {"quorum"}, "Pending operation deleted.")
enrol_key_split_member = Write(KmsClient.enrol_key_split_member, {"quorum"})


def _resume_enrolment(worker: Any, op_id: str) -> tuple[Any, dict[str, str]]:
    """New codes for the members still to enrol, then the operation as it is now (who is left)."""
    codes = worker.client.new_enrolment_codes(op_id).enrolment_codes
    return worker.client.get_quorum_operation(op_id), dict(codes)


resume_enrolment = Write(_resume_enrolment, {"quorum"})
lock_kma = Write(KmsClient.lock_kma, {"kmas"}, "KMA {0} locked.")
set_autonomous_unlock = Write(KmsClient.set_autonomous_unlock, {"kmas", "quorum"})
set_quorum_lifetime = Write(KmsClient.set_quorum_lifetime, {"quorum"}, "Quorum operation lifetime saved.")
unlock_kma = Write(KmsClient.unlock_kma, {"kmas", "quorum"})
