"""Key groups: create, change, the agents that may use one."""

from __future__ import annotations

from app.writes import Write
from kms_client import KmsClient

create_key_group = Write(KmsClient.create_key_group, {"key_groups"}, "Key group {0} created.")
set_key_group_agents = Write(
    KmsClient.set_key_group_agents, {"key_groups", "agents"}, "Agents of key group {0} saved."
)
update_key_group = Write(KmsClient.update_key_group, {"key_groups"}, "Key group {0} saved.")
