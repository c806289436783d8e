"""Alert channels (SNMPv3, webhooks, e-mail): what `KmsClient` adds to the generated calls
(calls.py) is the form's blanks left out (a setting without a value, a secret left empty keeps the
stored one). Same threading rule: network I/O, never on the GUI thread. Secrets go to the KMA,
never come back."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .calls import Calls
from .wire import AlertChannel


def _settings(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _secrets(values: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (values or {}).items() if v}


class AlertCalls(Calls):
    def add_alert_channel(
        self,
        name: str,
        kind: str,
        settings: Mapping[str, Any],
        secrets: Mapping[str, Any] | None = None,
        enabled: bool | None = None,
        warnings: bool | None = None,
        audit_classes: Iterable[str] | None = None,
    ) -> AlertChannel:
        """Security Officer: `kind` is snmp, webhook or email; `settings` and `secrets` as
        docs/alerts.md says for each kind (one left blank is left out)."""
        given = _secrets(secrets)
        return super().add_alert_channel(
            name, kind, _settings(settings), given, enabled, warnings, audit_classes
        )

    def change_alert_channel(
        self,
        channel_id: str,
        name: str,
        kind: str,
        settings: Mapping[str, Any],
        secrets: Mapping[str, Any] | None = None,
        enabled: bool | None = None,
        warnings: bool | None = None,
        audit_classes: Iterable[str] | None = None,
    ) -> AlertChannel:
        """Security Officer: the whole channel again; a secret left out keeps the stored one."""
        given = _secrets(secrets)
        return super().change_alert_channel(
            channel_id, name, kind, _settings(settings), given, enabled, warnings, audit_classes
        )
