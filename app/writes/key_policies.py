"""Key policies: create, change."""

from __future__ import annotations

from typing import Any

from app.operations import OpContext
from kms_client import KeyPolicy


def create_key_policy(worker: OpContext, id: str, **options: Any) -> KeyPolicy:
    return worker.client.create_key_policy(id, **options)


def update_key_policy(worker: OpContext, id: str, **options: Any) -> KeyPolicy:
    return worker.client.update_key_policy(id, **options)
