"""Signed reports for the Auditor, the Compliance Officer and Security Officers (docs/directory.md:
users and their roles), and for those who run the library (docs/media.md: tapes to relabel, tapes
moved between pools)."""

from __future__ import annotations

from fastapi import APIRouter

from kma.api import schemas
from kma.api.deps import AuditRead, Kma, MediaRead
from kma.services.media_report import media_report
from kma.services.user_report import users_report

router = APIRouter(prefix="/reports", tags=["audit"])


@router.get("/users", response_model=schemas.SignedReport)
def get_users_report(kma: Kma, actor: AuditRead) -> dict[str, str]:
    return users_report(kma, actor)


@router.get("/media", response_model=schemas.SignedReport)
def get_media_report(kma: Kma, actor: MediaRead) -> dict[str, str]:
    return media_report(kma, actor)
