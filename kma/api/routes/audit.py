"""The audit trail: browse (with free text and a live tail), verify, export, retention and pruning.

Reading is for the audit readers (auditor, security officer, compliance officer); changing the
retention, signing checkpoints and pruning are Security Officer work. Exports are signed, so
they need an unlocked KMA.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from fastapi.responses import StreamingResponse

from kma.api import audit_schemas, schemas
from kma.api.deps import AuditManage, AuditRead, Kma, Paging, with_filters
from kma.api.quorum_schemas import PENDING, PendingQuorumOp, ran_or_pending
from kma.audit.chain import ChainReport
from kma.quorum import engine
from kma.services.audit import audit_export, audit_log, audit_retention, audit_verify_job
from kma.services.paging import Page, PageRequest

router = APIRouter(prefix="/audit-events", tags=["audit"])
VERIFICATION_RUNNING: dict[int | str, dict[str, Any]] = {
    503: {"description": "`verification_running`: still verifying; ask again, or follow GET /verification"}
}


def audit_filter(
    paging: Paging,
    operation: str | None = None,
    severity: str | None = None,
    condition: str | None = None,
    event_class: str | None = None,
    entity_id: str | None = None,
    kma_id: str | None = None,
    site_id: str | None = None,
    subject_type: str | None = None,
    subject_id: str | None = None,
    retention: str | None = None,
    since: str | None = None,
    until: str | None = None,
    after_id: int | None = None,
) -> PageRequest:
    """The browser's filter; `search` is free text (FTS5), `after_id` the live tail's cursor."""
    return with_filters(
        paging,
        operation=operation,
        severity=severity,
        condition=condition,
        event_class=event_class,
        entity_id=entity_id,
        kma_id=kma_id,
        site_id=site_id,
        subject_type=subject_type,
        subject_id=subject_id,
        retention=retention,
        since=since,
        until=until,
        after_id=after_id,
    )


AuditFilter = Annotated[PageRequest, Depends(audit_filter)]


@router.get("", response_model=schemas.Page[schemas.AuditEvent])
def list_audit_events(kma: Kma, actor: AuditRead, filters: AuditFilter) -> Page:
    return audit_log.list_audit_events(kma, filters)


@router.get("/verify", response_model=audit_schemas.ChainReport, responses=VERIFICATION_RUNNING)
def verify_audit_chain(kma: Kma, actor: AuditRead) -> ChainReport:
    """The report of a verification that ends within 10 s (a small trail: at once); else 503
    `verification_running`. For clients older than POST/GET /audit-events/verification."""
    return audit_verify_job.verify_audit_chain(kma, actor)


@router.post("/verification", response_model=audit_schemas.ChainVerification, status_code=202)
def start_audit_verification(kma: Kma, actor: AuditRead) -> audit_verify_job.ChainVerification:
    """Start verifying the chain in the background, or join the verification running."""
    return audit_verify_job.start_audit_verification(kma, actor)


@router.get("/verification", response_model=audit_schemas.ChainVerification)
def get_audit_verification(kma: Kma, actor: AuditRead) -> audit_verify_job.ChainVerification:
    """The running verification's progress, or the last one's result."""
    return audit_verify_job.get_audit_verification(kma)


@router.get("/facets", response_model=audit_schemas.Facets)
def get_audit_facets(kma: Kma, actor: AuditRead) -> dict[str, list[str]]:
    return audit_log.get_audit_facets(kma.store)


@router.get(
    "/export.csv",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/csv": {}}, "description": "Signed CSV (trailer line)"}},
)
def export_audit_csv(kma: Kma, actor: AuditRead, filters: AuditFilter) -> StreamingResponse:
    stream = audit_export.csv_export(kma, actor, filters)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    disposition = f'attachment; filename="audit-events-{stamp}.csv"'
    return StreamingResponse(
        stream, media_type="text/csv; charset=utf-8", headers={"Content-Disposition": disposition}
    )


@router.get("/report", response_model=audit_schemas.Report)
def get_audit_report(kma: Kma, actor: AuditRead, filters: AuditFilter) -> audit_export.AuditReportRow:
    return audit_export.get_audit_report(kma, actor, filters)


@router.get("/checkpoints", response_model=list[audit_schemas.Checkpoint])
def list_audit_checkpoints(kma: Kma, actor: AuditRead) -> list[audit_retention.CheckpointRow]:
    return audit_retention.list_audit_checkpoints(kma)


@router.post("/checkpoints", response_model=list[audit_schemas.Checkpoint], status_code=201)
def create_audit_checkpoint(kma: Kma, actor: AuditManage) -> list[audit_retention.CheckpointRow]:
    return audit_retention.create_audit_checkpoint(kma, actor)


@router.get("/retention", response_model=audit_schemas.Retention)
def get_audit_retention(kma: Kma, actor: AuditRead) -> audit_retention.RetentionRow:
    return audit_retention.get_audit_retention(kma)


@router.patch("/retention", response_model=audit_schemas.Retention | PendingQuorumOp, responses=PENDING)
def set_audit_retention(
    body: audit_schemas.RetentionPatch, kma: Kma, actor: AuditManage, response: Response
) -> audit_retention.RetentionRow | PendingQuorumOp:
    """Lengthening runs at once; shortening any period is quorum-protected (it lets pruning remove
    history): with M key split credentials it runs, with fewer it answers 202 pending."""
    periods = {"long": body.long, "medium": body.medium, "short": body.short}
    if not audit_retention.shortens(kma, **periods):
        return audit_retention.set_audit_retention(kma, actor, auto_prune=body.auto_prune, **periods)
    request = {**{k: v for k, v in periods.items() if v is not None}, "auto_prune": body.auto_prune}
    done = engine.submit(kma, actor, "shorten_audit_retention", request, body.key_split_credentials())
    return ran_or_pending(done, response, lambda: audit_retention.get_audit_retention(kma))


@router.post("/prune", response_model=audit_schemas.PruneResult)
def prune_audit_events(kma: Kma, actor: AuditManage) -> audit_retention.PruneRow:
    return audit_retention.prune_audit_events(kma, actor)
