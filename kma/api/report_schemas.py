"""Signed reports on a schedule, on the wire (docs/reports.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from kma.api.schemas import Request, Response, Time

ReportName = Literal["key-inventory", "cryptoperiods", "agents", "quorum-operations", "users", "media"]


class ReportSchedule(Response):
    kma_id: str  # the schedule is this KMA's: its folder is on this KMA's machine
    frequency: str  # off | daily | weekly | monthly
    folder: str
    reports: list[str]
    email_channel_id: str | None  # an e-mail alert channel the reports are also sent on
    updated_at: Time | None
    updated_by: str | None
    last_attempt_at: Time | None
    last_error: str | None  # the last attempt's failure (also an audit event of severity error)
    next_at: Time | None


class ReportScheduleSet(Request):
    frequency: Literal["off", "daily", "weekly", "monthly"]
    folder: Annotated[str, Field(max_length=4096)] = ""
    reports: Annotated[list[ReportName], Field(max_length=6)] = []
    email_channel_id: Annotated[str | None, Field(max_length=64)] = None
