"""Key policies: create, change."""

from __future__ import annotations

from app.writes import Write
from kms_client import KmsClient

create_key_policy = Write(KmsClient.create_key_policy, {"key_policies"}, "Key policy {0} created.")
update_key_policy = Write(KmsClient.update_key_policy, {"key_policies"}, "Key policy {0} saved.")
