"""Signed reports for the Auditor, the Compliance Officer and Security Officers (docs/reports.md:
users and their roles, the key inventory, cryptoperiods ending, agents to look at, quorum
operations carried out), and for those who run the library (docs/media.md: tapes to relabel, tapes
moved between pools)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated

from fastapi import APIRouter, Query

from kma.api import schemas
from kma.api.deps import AuditManage, AuditRead, Kma, MediaRead
from kma.api.report_schemas import ReportSchedule, ReportScheduleSet
from kma.services.media import media_report
from kma.services.reports import compliance_reports as reports
from kma.services.reports import report_schedule, user_report
from kma.services.reports.signed_report import SignedReportRow

Days = Annotated[int, Query(ge=1, le=reports.MAX_DAYS)]

router = APIRouter(prefix="/reports", tags=["audit"])


@router.get("/users", response_model=schemas.SignedReport)
def get_users_report(kma: Kma, actor: AuditRead) -> SignedReportRow:
    return user_report.get_users_report(kma, actor)


@router.get("/media", response_model=schemas.SignedReport)
def get_media_report(kma: Kma, actor: MediaRead) -> SignedReportRow:
    return media_report.get_media_report(kma, actor)


@router.get("/key-inventory", response_model=schemas.SignedReport)
def get_key_inventory_report(kma: Kma, actor: AuditRead) -> SignedReportRow:
    return reports.get_key_inventory_report(kma, actor)


@router.get("/cryptoperiods", response_model=schemas.SignedReport)
def get_cryptoperiods_report(kma: Kma, actor: AuditRead, days: Days = 90) -> SignedReportRow:
    """The keys whose cryptoperiod ends within `days`."""
    return reports.get_cryptoperiods_report(kma, actor, days)


@router.get("/agents", response_model=schemas.SignedReport)
def get_agents_report(
    kma: Kma, actor: AuditRead, silent_days: Days = 30, expiring_days: Days = 90
) -> SignedReportRow:
    """Agents silent for `silent_days` or more, or whose certificate expires within `expiring_days`."""
    return reports.get_agents_report(kma, actor, silent_days, expiring_days)


@router.get("/quorum-operations", response_model=schemas.SignedReport)
def get_quorum_operations_report(
    kma: Kma, actor: AuditRead, since: date | None = None, until: date | None = None
) -> SignedReportRow:
    """Quorum operations carried out from the day `since` to the day `until`, both included (UTC);
    by default the last 90 days, today included."""
    last = _day(until) if until is not None else kma.clock.now() // reports.DAY * reports.DAY
    first = _day(since) if since is not None else last - 89 * reports.DAY
    return reports.get_quorum_operations_report(kma, actor, reports.Period(first, last + reports.DAY))


@router.get("/schedule", response_model=ReportSchedule)
def get_report_schedule(kma: Kma, actor: AuditRead) -> report_schedule.Schedule:
    """This KMA's schedule of signed reports (its folder is on this KMA's machine)."""
    return report_schedule.get_report_schedule(kma)


@router.put("/schedule", response_model=ReportSchedule)
def set_report_schedule(body: ReportScheduleSet, kma: Kma, actor: AuditManage) -> report_schedule.Schedule:
    return report_schedule.set_report_schedule(
        kma, actor, body.frequency, body.folder, list(body.reports), body.email_channel_id
    )


def _day(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())
