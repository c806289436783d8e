"""Planning: drive settings and capacity for an encrypted tape deployment (no KMA call at all)."""

from __future__ import annotations

from typing import Any

from app.pages import PageSpec, register
from ui.planning.area import PlanningArea


def build(_ctx: Any) -> PlanningArea:
    return PlanningArea()


register(
    PageSpec(
        "planning",
        "Planning",
        build,
        order=900,
        icon="SP_FileDialogDetailedView",
        description="Drive settings, drives, cartridges and KMAs per site from the white paper's "
        "measurements",
    )
)
