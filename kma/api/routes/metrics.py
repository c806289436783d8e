"""`GET /metrics`: Prometheus's text format on the management listener (kma/services/overview/metrics.py).

Outside /api/v1, where Prometheus looks by default. A Prometheus server presents the metrics
token from kma.toml's `[metrics]`; a person presents their session, and any role may read them,
as any role may read the dashboard. Nothing answers without either.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

from kma.api.deps import KmaEvenLocked, Token, current_actor
from kma.appliance import Appliance
from kma.services.overview import metrics

router = APIRouter(tags=["metrics"])


def install(app: FastAPI, kma: Appliance) -> None:
    """Read `[metrics]` once (a bad setting stops `kma serve` at start) and mount the route."""
    app.state.metrics = metrics.MetricsSettings.from_table(
        kma.data_dir.root, kma.data_dir.settings("metrics")
    )
    app.include_router(router)


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
def get_metrics(request: Request, kma: KmaEvenLocked, token: Token) -> Response:
    settings: metrics.MetricsSettings = request.app.state.metrics
    if not settings.admits(token):
        current_actor(request, kma, token)  # a session of any role, or 401 (audited)
    return Response(metrics.exposition(kma), media_type=CONTENT_TYPE_LATEST)
