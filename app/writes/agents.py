"""Agents: change, enable or disable, a new enrollment passphrase."""

from __future__ import annotations

from typing import Any

from app.operations import OpContext
from kms_client import Agent, EnrollmentPassphrase


def new_enrollment_passphrase(worker: OpContext, id: str) -> EnrollmentPassphrase:
    return worker.client.new_enrollment_passphrase(id)


def update_agent(worker: OpContext, id: str, **options: Any) -> Agent:
    return worker.client.update_agent(id, **options)


def create_agent_with_passphrase(
    worker: OpContext, id: str, site_id: str, default_key_group_id: str, description: str | None
) -> tuple[Agent, EnrollmentPassphrase]:
    """Create the agent, then its first one-time enrollment passphrase (to hand to the drive)."""
    agent = worker.client.create_agent(id, site_id, default_key_group_id, description)
    return agent, worker.client.new_enrollment_passphrase(agent.id)
