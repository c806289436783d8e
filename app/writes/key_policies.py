"""Key policies: create, change."""

from __future__ import annotations

from app.writes import Write

create_key_policy = Write("create_key_policy", {"key_policies"}, "Key policy {0} created.")
update_key_policy = Write("update_key_policy", {"key_policies"}, "Key policy {0} saved.")
