"""Helpers area modules share: state tones."""

from __future__ import annotations

from typing import Any


def state_tone(obj: Any) -> str | None:
    state = getattr(obj, "state", "")
    if getattr(obj, "compromised", False) or state in ("destroyed", "shredded"):
        return "bad"
    if state in ("deactivated", "readable_needs_rekey", "process_only"):
        return "warn"
    return None


def enabled_tone(obj: Any) -> str | None:
    return None if getattr(obj, "enabled", True) else "warn"
