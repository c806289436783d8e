"""The audit trail: retention, checkpoints, pruning."""

from __future__ import annotations

from app.writes import Write
from kms_client import KmsClient

create_audit_checkpoint = Write(KmsClient.create_audit_checkpoint, {"audit"}, "Audit checkpoint made.")
prune_audit_events = Write(KmsClient.prune_audit_events, {"audit"})
set_audit_retention = Write(KmsClient.set_audit_retention, {"audit", "quorum"})
