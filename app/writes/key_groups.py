"""Key groups: create, change, the agents that may use one."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.operations import OpContext
from kms_client import KeyGroup


def create_key_group(worker: OpContext, id: str, policy_id: str, description: str | None = None) -> KeyGroup:
    return worker.client.create_key_group(id, policy_id, description)


def set_key_group_agents(worker: OpContext, id: str, agent_ids: Iterable[str]) -> KeyGroup:
    return worker.client.set_key_group_agents(id, agent_ids)


def update_key_group(worker: OpContext, id: str, **options: Any) -> KeyGroup:
    return worker.client.update_key_group(id, **options)
