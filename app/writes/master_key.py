"""The master key's rotation (Security Officer, quorum-protected): a new generation, every stored
key re-wrapped under it in the background (docs/backups.md#master-key-rotation)."""

from __future__ import annotations

from app.writes import Write
from kms_client import KmsClient

rotate_master_key = Write(KmsClient.rotate_master_key, {"kmas", "quorum", "backups"})
