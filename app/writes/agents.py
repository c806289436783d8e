"""Agents: change, enable or disable, a new enrollment passphrase."""

from __future__ import annotations

from app.operations import OpContext
from app.writes import Write
from kms_client import Agent, EnrollmentPassphrase, KmsClient

new_enrollment_passphrase = Write(
    KmsClient.new_enrollment_passphrase, {"agents"}, "New enrollment passphrase for agent {0}."
)
# For drives that cannot renew their own certificate (ui/pages/agent_passphrases.py)
new_enrollment_passphrases = Write(
    KmsClient.new_enrollment_passphrases, {"agents"}, "New enrollment passphrases made."
)
update_agent = Write(KmsClient.update_agent, {"agents"}, "Agent {0} saved.")


def _create_with_passphrase(
    worker: OpContext, id: str, site_id: str, default_key_group_id: str, description: str | None
) -> tuple[Agent, EnrollmentPassphrase]:
    """Create the agent, then its first one-time enrollment passphrase (to hand to the drive)."""
    agent = worker.client.create_agent(id, site_id, default_key_group_id, description)
    return agent, worker.client.new_enrollment_passphrase(agent.id)


create_agent_with_passphrase = Write(_create_with_passphrase, {"agents"}, "Agent {0} created.")
