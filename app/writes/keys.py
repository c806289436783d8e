"""Keys: mark compromised, destroy."""

from __future__ import annotations

from app.operations import OpContext
from kms_client import Key


def compromise_key(worker: OpContext, id: str, comment: str) -> Key:
    return worker.client.compromise_key(id, comment)


def destroy_key(worker: OpContext, id: str, comment: str) -> Key:
    return worker.client.destroy_key(id, comment)
