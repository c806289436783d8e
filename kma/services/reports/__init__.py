"""Signed reports: made on request or on a schedule, as CSV and PDF (docs/reports.md)."""
