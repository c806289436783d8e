"""Directory sign-in: its settings and group mapping (quorum-protected)."""

from __future__ import annotations

from app.writes import Write
from kms_client import KmsClient

set_directory = Write(KmsClient.set_directory, {"users", "quorum"}, "Directory sign-in saved.")
