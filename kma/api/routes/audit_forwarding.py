"""Audit forwarding: who may see where the audit trail is copied to, and who may change it."""

from __future__ import annotations

from fastapi import APIRouter

from kma.api.deps import AuditManage, AuditRead, Kma
from kma.api.forwarding_schemas import AuditForwarding, AuditForwardingPut
from kma.services.audit import audit_forwarding

router = APIRouter(prefix="/audit-forwarding", tags=["audit"])


@router.get("", response_model=AuditForwarding)
def get_audit_forwarding(kma: Kma, actor: AuditRead) -> audit_forwarding.ForwardingSetting:
    return audit_forwarding.get_audit_forwarding(kma)


@router.put("", response_model=AuditForwarding)
def set_audit_forwarding(
    body: AuditForwardingPut, kma: Kma, actor: AuditManage
) -> audit_forwarding.ForwardingSetting:
    return audit_forwarding.set_audit_forwarding(kma, actor, body.address, body.ca_pem, body.enabled)
