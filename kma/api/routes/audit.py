from __future__ import annotations

from fastapi import APIRouter

from kma.api import schemas
from kma.api.deps import AuditRead, Kma, Paging, with_filters
from kma.audit.chain import ChainReport
from kma.services import audit_log
from kma.services.paging import Page

router = APIRouter(prefix="/audit-events", tags=["audit"])


@router.get("", response_model=schemas.Page[schemas.AuditEvent])
def list_events(kma: Kma, actor: AuditRead, paging: Paging, operation: str | None = None,
                severity: str | None = None, condition: str | None = None,
                event_class: str | None = None, entity_id: str | None = None,
                kma_id: str | None = None, site_id: str | None = None,
                subject_type: str | None = None, subject_id: str | None = None,
                retention: str | None = None, since: str | None = None,
                until: str | None = None) -> Page:  # fmt: skip
    filters = with_filters(paging, operation=operation, severity=severity, condition=condition,
                           event_class=event_class, entity_id=entity_id, kma_id=kma_id,
                           site_id=site_id, subject_type=subject_type, subject_id=subject_id,
                           retention=retention, since=since, until=until)  # fmt: skip
    return audit_log.list_events(kma, filters)


@router.get("/verify", response_model=schemas.ChainReport)
def verify(kma: Kma, actor: AuditRead) -> ChainReport:
    return audit_log.verify_chain(kma.store)
