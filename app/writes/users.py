"""Users: create, change, enable or disable, set a passphrase (quorum-protected)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.operations import OpContext
from kms_client import PendingQuorumOp, User


def create_user(
    worker: OpContext, id: str, name: str, roles: Iterable[str], passphrase: str, **options: Any
) -> User | PendingQuorumOp:
    return worker.client.create_user(id, name, roles, passphrase, **options)


def set_user_passphrase(
    worker: OpContext, id: str, passphrase: str, **options: Any
) -> PendingQuorumOp | None:
    return worker.client.set_user_passphrase(id, passphrase, **options)


def update_user(worker: OpContext, id: str, **options: Any) -> User | PendingQuorumOp:
    return worker.client.update_user(id, **options)
