"""The audit trail: retention, checkpoints, pruning."""

from __future__ import annotations

from app.writes import Write

create_audit_checkpoint = Write("create_audit_checkpoint", {"audit"}, "Audit checkpoint made.")
prune_audit_events = Write("prune_audit_events", {"audit"})
set_audit_retention = Write("set_audit_retention", {"audit", "quorum"})
