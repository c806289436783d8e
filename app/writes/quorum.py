"""Quorum: lock and unlock, autonomous unlock, the operation lifetime, the key split, approving
and deleting pending operations."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.operations import OpContext
from kms_client import AutonomousUnlock, KeySplit, KeySplitChange, Kma, PendingQuorumOp


def approve_quorum_operation(worker: OpContext, id: str, member: str, passphrase: str) -> PendingQuorumOp:
    return worker.client.approve_quorum_operation(id, member, passphrase)


def change_key_split(
    worker: OpContext, threshold: int, members: Iterable[str], **options: Any
) -> KeySplitChange:
    return worker.client.change_key_split(threshold, members, **options)


def delete_quorum_operation(worker: OpContext, id: str) -> None:
    return worker.client.delete_quorum_operation(id)


def enrol_key_split_member(
    worker: OpContext, op_id: str, member: str, code: str, passphrase: str
) -> PendingQuorumOp:
    return worker.client.enrol_key_split_member(op_id, member, code, passphrase)


def lock_kma(worker: OpContext, id: str) -> Kma:
    return worker.client.lock_kma(id)


def set_autonomous_unlock(
    worker: OpContext, enabled: bool, **options: Any
) -> AutonomousUnlock | PendingQuorumOp:
    return worker.client.set_autonomous_unlock(enabled, **options)


def set_quorum_lifetime(worker: OpContext, seconds: int) -> KeySplit:
    return worker.client.set_quorum_lifetime(seconds)


def unlock_kma(worker: OpContext, id: str, **options: Any) -> Kma | PendingQuorumOp:
    return worker.client.unlock_kma(id, **options)
