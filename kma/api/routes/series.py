"""Day-by-day series for the dashboard's charts (any signed-in user, like the dashboard)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from kma.api import audit_schemas
from kma.api.deps import Kma, SignedIn
from kma.services.overview import series as day_series

router = APIRouter(tags=["status"])


@router.get("/dashboard/series", response_model=audit_schemas.Series)
def get_dashboard_series(
    kma: Kma, actor: SignedIn, days: Annotated[int, Query(ge=1, le=3660)] = 30
) -> day_series.Series:
    return day_series.get_dashboard_series(kma, days)
