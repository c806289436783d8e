"""Directory sign-in: its settings and group mapping (quorum-protected)."""

from __future__ import annotations

from app.writes import Write

set_directory = Write("set_directory", {"users", "quorum"}, "Directory sign-in saved.")
