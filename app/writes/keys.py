"""Keys: mark compromised, destroy."""

from __future__ import annotations

from app.writes import Write

compromise_key = Write("compromise_key", {"keys", "data_units"}, "Key {0} marked compromised.")
destroy_key = Write("destroy_key", {"keys", "data_units"}, "Key {0} destroyed.")
