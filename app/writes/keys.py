"""Keys: mark compromised, destroy."""

from __future__ import annotations

from app.writes import Write
from kms_client import KmsClient

compromise_key = Write(KmsClient.compromise_key, {"keys", "data_units"}, "Key {0} marked compromised.")
destroy_key = Write(KmsClient.destroy_key, {"keys", "data_units"}, "Key {0} destroyed.")
