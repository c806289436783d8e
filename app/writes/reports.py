"""Signed reports: their schedule (docs/reports.md)."""

from __future__ import annotations

from app.writes import Write
from kms_client import KmsClient

set_report_schedule = Write(KmsClient.set_report_schedule, {"audit"}, "Report schedule saved.")
