"""Cluster membership (Security Officer, quorum-protected): a new KMA's entry, a new one-time KMA
passphrase for an entry, removing a KMA."""

from __future__ import annotations

from typing import Any

from app.operations import OpContext
from kms_client import Kma, PendingQuorumOp
from kms_client.cluster_members import KmaEntryOperation


def create_kma_entry(worker: OpContext, id: str, site_id: str, **options: Any) -> KmaEntryOperation:
    return worker.client.create_kma_entry(id, site_id, **options)


def set_kma_passphrase(worker: OpContext, id: str, **options: Any) -> KmaEntryOperation:
    return worker.client.set_kma_passphrase(id, **options)


def remove_kma(worker: OpContext, id: str, **options: Any) -> Kma | PendingQuorumOp:
    return worker.client.remove_kma(id, **options)
