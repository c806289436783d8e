"""The audit trail: retention, checkpoints, pruning."""

from __future__ import annotations

from typing import Any

from app.operations import OpContext
from kms_client import AuditCheckpoint, PendingQuorumOp, PruneResult, Retention


def create_audit_checkpoint(
    worker: OpContext,
) -> list[AuditCheckpoint]:
    return worker.client.create_audit_checkpoint()


def prune_audit_events(
    worker: OpContext,
) -> PruneResult:
    return worker.client.prune_audit_events()


def set_audit_retention(worker: OpContext, **options: Any) -> Retention | PendingQuorumOp:
    return worker.client.set_audit_retention(**options)
