"""How values read on screen: dates in local time, states in words, periods in days."""

from __future__ import annotations

from datetime import datetime
from typing import Any

_STATE_WORDS = {
    "pre_active": "Pre-active",
    "protect_and_process": "Active (protect and process)",
    "process_only": "Active (process only)",
    "no_key": "No key",
    "readable_normal": "Readable",
    "readable_needs_rekey": "Readable, needs rekey",
    "security_officer": "Security Officer",
    "compliance_officer": "Compliance Officer",
    "backup_operator": "Backup Operator",
    "quorum_member": "Quorum Member",
}


def words(value: str | None) -> str:
    """``protect_and_process`` -> ``Active (protect and process)``; unknown -> capitalised."""
    if not value:
        return ""
    return _STATE_WORDS.get(value, value.replace("_", " ").capitalize())


def counted(n: int, noun: str, plural: str = "") -> str:
    """``1 key``, ``2 keys``, ``1,200 audit events``: the number with the noun it agrees with."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def when(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone().strftime("%Y-%m-%d %H:%M")


def yes_no(value: bool | None) -> str:
    return "" if value is None else ("Yes" if value else "No")


def period(seconds: int | None) -> str:
    """Whole seconds as the largest clean unit: ``7776000`` -> ``90 days``."""
    if seconds is None:
        return ""
    for unit, size in (("year", 31536000), ("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} s"


def display(value: Any) -> str:
    """Default rendering for a field of any type."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, datetime):
        return when(value)
    if isinstance(value, (tuple, list, frozenset, set)):
        return ", ".join(words(str(v)) if "_" in str(v) else str(v) for v in value)
    return str(value)
