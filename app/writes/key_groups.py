"""Key groups: create, change, the agents that may use one."""

from __future__ import annotations

from app.writes import Write

create_key_group = Write("create_key_group", {"key_groups"}, "Key group {0} created.")
set_key_group_agents = Write(
    "set_key_group_agents", {"key_groups", "agents"}, "Agents of key group {0} saved."
)
update_key_group = Write("update_key_group", {"key_groups"}, "Key group {0} saved.")
