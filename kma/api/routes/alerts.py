"""Alert channels: a Security Officer configures them and sends test alerts; an Auditor reads them."""

from __future__ import annotations

from fastapi import APIRouter, Response

from kma.api.alert_schemas import AlertChannel, AlertChannelPut, AlertChannels, AlertTestResult
from kma.api.deps import AlertsRead, AlertsWrite, Kma
from kma.services import alert_channels as service
from kma.services import alerts

router = APIRouter(prefix="/alert-channels", tags=["alerts"])


@router.get("", response_model=AlertChannels)
def list_alert_channels(kma: Kma, actor: AlertsRead) -> alerts.AlertChannelList:
    return alerts.list_alert_channels(kma)


@router.post("", response_model=AlertChannel, status_code=201)
def add_alert_channel(body: AlertChannelPut, kma: Kma, actor: AlertsWrite) -> alerts.ChannelView:
    return alerts.add_alert_channel(
        kma,
        actor,
        body.name,
        body.kind,
        body.settings.model_dump(exclude_none=True),
        body.secrets.model_dump(),
        enabled=body.enabled,
        warnings=body.warnings,
        audit_classes=body.audit_classes,
    )


@router.put("/{channel_id}", response_model=AlertChannel)
def change_alert_channel(
    channel_id: str, body: AlertChannelPut, kma: Kma, actor: AlertsWrite
) -> alerts.ChannelView:
    return alerts.change_alert_channel(
        kma,
        actor,
        channel_id,
        body.kind,
        body.name,
        body.settings.model_dump(exclude_none=True),
        body.secrets.model_dump(),
        enabled=body.enabled,
        warnings=body.warnings,
        audit_classes=body.audit_classes,
    )


@router.delete("/{channel_id}", status_code=204)
def remove_alert_channel(channel_id: str, kma: Kma, actor: AlertsWrite) -> Response:
    service.remove_channel(kma, actor, channel_id)
    return Response(status_code=204)


@router.post("/{channel_id}/test", response_model=AlertTestResult)
def send_test_alert(channel_id: str, kma: Kma, actor: AlertsWrite) -> service.Delivery:
    return service.send_test_alert(kma, actor, channel_id)
