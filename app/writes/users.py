"""Users: create, change, enable or disable, set a passphrase (quorum-protected)."""

from __future__ import annotations

from app.writes import Write

create_user = Write("create_user", {"users", "quorum"})
set_user_passphrase = Write("set_user_passphrase", {"users", "quorum"})
update_user = Write("update_user", {"users", "quorum"})
