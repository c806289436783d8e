"""Signed reports in the manager: the dialog, saving a report, the schedule."""
