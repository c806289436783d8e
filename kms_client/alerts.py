"""Alert channels (SNMPv3, webhooks, e-mail): a part of `KmsClient`, given its connection (same
threading rule: network I/O, never on the GUI thread). Secrets go to the KMA, never come back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._http import segment
from .connection import Connection
from .reader import reader
from .wire import AlertChannel, AlertChannels, AlertTestResult


def channel_body(
    name: str,
    kind: str,
    settings: Mapping[str, Any],
    secrets: Mapping[str, str] | None,
    enabled: bool,
    warnings: bool,
    audit_classes: Sequence[str],
) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "enabled": enabled,
        "warnings": warnings,
        "audit_classes": list(audit_classes),
        "settings": {k: v for k, v in settings.items() if v is not None},
        "secrets": {k: v for k, v in (secrets or {}).items() if v},
    }


class AlertCalls:
    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def alert_channels(self) -> AlertChannels:
        """The channels, how each fares on this KMA, each KMA's SNMP engine ID and the MIB;
        Security Officers and Auditors."""
        return self._connection.call("GET", "/alert-channels", reader(AlertChannels))

    def add_alert_channel(
        self,
        name: str,
        kind: str,
        settings: Mapping[str, Any],
        secrets: Mapping[str, str],
        *,
        enabled: bool = True,
        warnings: bool = True,
        audit_classes: Sequence[str] = (),
    ) -> AlertChannel:
        """Security Officer: `kind` is snmp, webhook or email; `settings` and `secrets` as
        docs/alerts.md says for each kind."""
        body = channel_body(name, kind, settings, secrets, enabled, warnings, audit_classes)
        return self._connection.call("POST", "/alert-channels", reader(AlertChannel), body=body)

    def change_alert_channel(
        self,
        id: str,
        name: str,
        kind: str,
        settings: Mapping[str, Any],
        secrets: Mapping[str, str] | None = None,
        *,
        enabled: bool = True,
        warnings: bool = True,
        audit_classes: Sequence[str] = (),
    ) -> AlertChannel:
        """Security Officer: the whole channel again; a secret left out keeps the stored one."""
        body = channel_body(name, kind, settings, secrets, enabled, warnings, audit_classes)
        return self._connection.call("PUT", f"/alert-channels/{segment(id)}", reader(AlertChannel), body=body)

    def remove_alert_channel(self, id: str) -> None:
        """Security Officer: the channel and what it still had to send."""
        self._connection.request("DELETE", f"/alert-channels/{segment(id)}")

    def send_test_alert(self, id: str) -> AlertTestResult:
        """Security Officer: a test alert on the channel, now; says whether the receiver took it."""
        return self._connection.call("POST", f"/alert-channels/{segment(id)}/test", reader(AlertTestResult))
