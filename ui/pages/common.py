"""Helpers area modules share: state tones, running a simple action."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ui.list_page import ListPage


def state_tone(obj: Any) -> str | None:
    state = getattr(obj, "state", "")
    if getattr(obj, "compromised", False) or state in ("destroyed", "shredded"):
        return "bad"
    if state in ("deactivated", "readable_needs_rekey", "process_only"):
        return "warn"
    return None


def enabled_tone(obj: Any) -> str | None:
    return None if getattr(obj, "enabled", True) else "warn"


def run_change(page: ListPage, label: str, call: Callable[[Any], Any],
               then: Callable[[Any], None] | None = None) -> None:
    """Send one change on the write lane; show the result in the list."""

    def done(result: Any) -> None:
        if result is not None and hasattr(result, "id"):
            page.object_changed(result)
        else:
            page.refresh()
        if then:
            then(result)

    page.ctx.ops.write(call, parent=page, label=label, success=done)
