"""Cluster membership (Security Officer, quorum-protected): a new KMA's entry, a new one-time KMA
passphrase for an entry, removing a KMA."""

from __future__ import annotations

from app.writes import Write
from kms_client import KmsClient

add_kma = Write(KmsClient.add_kma, {"kmas", "quorum"})
set_kma_passphrase = Write(KmsClient.set_kma_passphrase, {"kmas", "quorum"})
remove_kma = Write(KmsClient.remove_kma, {"kmas", "quorum"})
