"""Users: create, change, enable or disable, set a passphrase (quorum-protected)."""

from __future__ import annotations

from app.writes import Write
from kms_client import KmsClient

create_user = Write(KmsClient.create_user, {"users", "quorum"})
set_user_passphrase = Write(KmsClient.set_user_passphrase, {"users", "quorum"})
update_user = Write(KmsClient.update_user, {"users", "quorum"})
