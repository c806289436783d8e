"""Alert channels: a Security Officer configures them and sends test alerts; an Auditor reads them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from kma.alerts import snmp
from kma.api.alert_schemas import AlertChannel, AlertChannelPut, AlertChannels, AlertTestResult
from kma.api.deps import AlertsRead, AlertsWrite, Kma
from kma.services import alert_channels as service
from kma.services.alerts import ChannelView, describe_channel

router = APIRouter(prefix="/alert-channels", tags=["alerts"])


def _fields(body: AlertChannelPut) -> dict[str, Any]:
    return {
        "settings": body.settings.model_dump(exclude_none=True),
        "given": body.secrets.model_dump(),
    }


@router.get("", response_model=AlertChannels)
def list_alert_channels(kma: Kma, actor: AlertsRead) -> dict[str, Any]:
    ids = [str(r["id"]) for r in kma.store.query("SELECT id FROM kmas ORDER BY id")]
    return {
        "items": [describe_channel(kma, c) for c in service.channels(kma)],
        "snmp_engine_ids": {i: snmp.engine_id(i) for i in ids},
        "mib": snmp.MIB_FILE.read_text(encoding="ascii"),
    }


@router.post("", response_model=AlertChannel, status_code=201)
def add_alert_channel(body: AlertChannelPut, kma: Kma, actor: AlertsWrite) -> ChannelView:
    ch = service.add_channel(
        kma,
        actor,
        body.name,
        body.kind,
        **_fields(body),
        enabled=body.enabled,
        warnings=body.warnings,
        audit_classes=body.audit_classes,
    )
    return describe_channel(kma, ch)


@router.put("/{channel_id}", response_model=AlertChannel)
def change_alert_channel(channel_id: str, body: AlertChannelPut, kma: Kma, actor: AlertsWrite) -> ChannelView:
    if body.kind != service.channel(kma, channel_id).kind:
        from kma.errors import ValidationFailed

        raise ValidationFailed("A channel's kind cannot change: add a new channel instead.")
    ch = service.change_channel(
        kma,
        actor,
        channel_id,
        body.name,
        **_fields(body),
        enabled=body.enabled,
        warnings=body.warnings,
        audit_classes=body.audit_classes,
    )
    return describe_channel(kma, ch)


@router.delete("/{channel_id}", status_code=204)
def remove_alert_channel(channel_id: str, kma: Kma, actor: AlertsWrite) -> Response:
    service.remove_channel(kma, actor, channel_id)
    return Response(status_code=204)


@router.post("/{channel_id}/test", response_model=AlertTestResult)
def send_test_alert(channel_id: str, kma: Kma, actor: AlertsWrite) -> service.Delivery:
    return service.send_test_alert(kma, actor, channel_id)
