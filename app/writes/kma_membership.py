"""Cluster membership (Security Officer, quorum-protected): a new KMA's entry, a new one-time KMA
passphrase for an entry, removing a KMA."""

from __future__ import annotations

from app.writes import Write

create_kma_entry = Write("create_kma_entry", {"kmas", "quorum"})
set_kma_passphrase = Write("set_kma_passphrase", {"kmas", "quorum"})
remove_kma = Write("remove_kma", {"kmas", "quorum"})
