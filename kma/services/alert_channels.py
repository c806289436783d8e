"""Alert channels: where this cluster's KMAs send their alerts (docs/alerts.md).

A Security Officer adds, changes and removes channels and sends a test alert on one (`alerts.write`);
an Auditor reads them too (`alerts.read`). A channel's secrets (the webhook's shared secret, the
SNMPv3 user's authentication and privacy keys, the SMTP password) are stored wrapped under the
master key and never answered: the API says only which are set. A change that leaves a secret out
keeps the one stored.
"""

from __future__ import annotations

import json
import re
import secrets as random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cryptography import x509

from kma.alerts import mail, snmp, webhook
from kma.alerts.message import TEST, Alert, DeliveryFailed
from kma.appliance import Appliance
from kma.domain.actor import Actor
from kma.domain.validation import check_address, check_text
from kma.errors import NotFound, ValidationFailed
from kma.services.integrity import row_macs
from kma.store import Stmt

KINDS = ("snmp", "webhook", "email")
SECRETS = {"snmp": ("auth_key", "priv_key"), "webhook": ("secret",), "email": ("password",)}
CLASS = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
COLUMNS = "id, name, kind, enabled, settings, warnings, audit_classes, created_at, updated_at, mac"


@dataclass(frozen=True)
class Channel:
    id: str
    name: str
    kind: str
    enabled: bool
    settings: dict[str, Any]
    warnings: bool
    audit_classes: tuple[str, ...]
    updated_at: int

    @classmethod
    def from_row(cls, row: Any) -> Channel:
        return cls(
            row["id"],
            row["name"],
            row["kind"],
            bool(row["enabled"]),
            json.loads(row["settings"]),
            bool(row["warnings"]),
            tuple(json.loads(row["audit_classes"])),
            int(row["updated_at"]),
        )


def secrets_context(channel_id: str) -> str:
    return f"alert-channel:{channel_id}"


def _pem(value: Any) -> str | None:
    if not value:
        return None
    try:
        x509.load_pem_x509_certificates(str(value).encode())
    except ValueError:
        raise ValidationFailed("The pinned CA must be one or more PEM certificates.") from None
    return str(value)


def _snmp(s: dict[str, Any]) -> dict[str, Any]:
    if s.get("mode") not in snmp.MODES:
        raise ValidationFailed("An SNMP channel sends either informs or traps.")
    if s.get("auth_protocol") not in snmp.AUTH_PROTOCOLS or s.get("priv_protocol") not in snmp.PRIV_PROTOCOLS:
        raise ValidationFailed(
            f"SNMPv3 authPriv needs an authentication protocol ({', '.join(snmp.AUTH_PROTOCOLS)}) "
            f"and a privacy protocol ({', '.join(snmp.PRIV_PROTOCOLS)})."
        )
    return {
        "address": check_address(str(s.get("address") or ""), "The SNMP manager's address"),
        "mode": s["mode"],
        "user": check_text(str(s.get("user") or ""), "The SNMPv3 user", max_len=32, required=True),
        "auth_protocol": s["auth_protocol"],
        "priv_protocol": s["priv_protocol"],
    }


def _webhook(s: dict[str, Any]) -> dict[str, Any]:
    url = str(s.get("url") or "")
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname or len(url) > 2000:
        raise ValidationFailed(f"A webhook's URL must be https://HOST/PATH, not '{url[:100]}'.")
    return {"url": url, "ca_pem": _pem(s.get("ca_pem"))}


def _email(s: dict[str, Any]) -> dict[str, Any]:
    recipients = [str(r).strip() for r in s.get("recipients") or [] if str(r).strip()]
    sender = str(s.get("sender") or "")
    if not recipients or not all(_mailbox(r) for r in [sender, *recipients]):
        raise ValidationFailed("E-mail needs a sender and at least one recipient, each name@domain.")
    return {
        "address": check_address(str(s.get("address") or ""), "The SMTP server's address"),
        "sender": sender,
        "recipients": recipients,
        "username": str(s.get("username") or "") or None,
        "ca_pem": _pem(s.get("ca_pem")),
    }


def _mailbox(text: str) -> bool:
    return bool(re.fullmatch(r"[^@\s<>]+@[^@\s<>]+", text)) and len(text) <= 254


SETTINGS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "snmp": _snmp,
    "webhook": _webhook,
    "email": _email,
}


def _secrets(kind: str, given: dict[str, str | None], stored: dict[str, str]) -> dict[str, str]:
    """The channel's secrets after a change: each given one replaces the stored one."""
    out = dict(stored) | {k: v for k, v in given.items() if k in SECRETS[kind] and v}
    if kind == "snmp" and not all(len(out.get(k, "")) >= 8 for k in SECRETS["snmp"]):
        raise ValidationFailed(
            "SNMPv3 authPriv needs an authentication key and a privacy key of 8 characters or more."
        )
    if kind == "webhook" and len(out.get("secret", "")) < 16:
        raise ValidationFailed("A webhook needs a shared secret of 16 characters or more to sign with.")
    return {k: v for k, v in out.items() if k in SECRETS[kind]}


def _classes(classes: list[str]) -> list[str]:
    bad = [c for c in classes if not CLASS.match(c)]
    if bad:
        raise ValidationFailed(f"'{bad[0][:40]}' is not an audit event class (e.g. security, quorum, key).")
    return sorted(set(classes))


def _row(kma: Appliance, channel_id: str) -> Any:
    row = kma.store.query_one(
        f"SELECT {COLUMNS}, secrets_wrapped FROM alert_channels WHERE id = ?", (channel_id,)
    )
    if row is None:
        raise NotFound(f"There is no alert channel '{channel_id}'.")
    return row


def cluster_name(kma: Appliance) -> str:
    return str(kma.store.scalar("SELECT name FROM cluster") or "")


def channel(kma: Appliance, channel_id: str) -> Channel:
    return Channel.from_row(_row(kma, channel_id))


def channels(kma: Appliance) -> list[Channel]:
    return [
        Channel.from_row(r) for r in kma.store.query(f"SELECT {COLUMNS} FROM alert_channels ORDER BY name")
    ]


def genuine_channels(kma: Appliance) -> list[Channel]:
    """The channels alerts may go to: one written or altered in the store without the KMA (its MAC
    does not verify) is reported as tampered with and gets nothing."""
    rows = kma.store.query(f"SELECT {COLUMNS} FROM alert_channels ORDER BY name")
    return [Channel.from_row(r) for r in rows if row_macs.genuine(kma, row_macs.ALERT_CHANNELS, r)]


def unwrap_secrets(kma: Appliance, channel_id: str, blob: bytes) -> dict[str, str]:
    """The channel's secrets; needs the master key (KmaLocked while the KMA is locked)."""
    return dict(json.loads(kma.vault.master().unwrap(secrets_context(channel_id), bytes(blob))))


def email_channel(kma: Appliance, channel_id: str) -> tuple[Channel, dict[str, str]]:
    """An e-mail channel to send something else than alerts on (the scheduled reports), and its
    secrets; refused when it is not one, or was altered in the store behind the KMA's back."""
    row = _row(kma, channel_id)
    if row["kind"] != "email":
        raise ValidationFailed(f"The alert channel '{row['name']}' is not an e-mail channel.")
    if not row_macs.genuine(kma, row_macs.ALERT_CHANNELS, row):
        raise ValidationFailed(f"The alert channel '{row['name']}' was altered in the store without the KMA.")
    return Channel.from_row(row), unwrap_secrets(kma, channel_id, row["secrets_wrapped"])


def smtp_of(ch: Channel) -> tuple[str, int]:
    host, _, port = ch.settings["address"].rpartition(":")
    return host.strip("[]"), int(port)


def stored_secrets(kma: Appliance, channel_id: str) -> dict[str, str]:
    return unwrap_secrets(kma, channel_id, _row(kma, channel_id)["secrets_wrapped"])


class ChannelSecrets:
    """The channels' secrets this KMA holds in memory, by channel and version (`updated_at`): taken
    as a channel is saved here, or unwrapped while unlocked, so that a KMA a quorum then locks still
    sends its alerts (the "locked" warning first)."""

    def __init__(self, kma: Appliance) -> None:
        self.kma = kma
        self._known: dict[str, tuple[int, dict[str, str]]] = {}
        self._lock = threading.Lock()

    def remember(self, ch: Channel, secrets: dict[str, str]) -> None:
        with self._lock:
            self._known[ch.id] = (ch.updated_at, secrets)

    def of(self, ch: Channel) -> dict[str, str] | None:
        """The channel's secrets; a locked KMA keeps using the last it had (None if it never had any)."""
        with self._lock:
            known = self._known.get(ch.id)
        if (known is None or known[0] != ch.updated_at) and not self.kma.vault.locked:
            self.remember(ch, stored_secrets(self.kma, ch.id))
            return self.of(ch)
        return known[1] if known else None


def add_channel(
    kma: Appliance,
    actor: Actor,
    name: str,
    kind: str,
    settings: dict[str, Any],
    given: dict[str, str | None],
    *,
    enabled: bool = True,
    warnings: bool = True,
    audit_classes: list[str] | None = None,
) -> Channel:
    if kind not in KINDS:
        raise ValidationFailed(f"An alert channel is one of {', '.join(KINDS)}.")
    check_text(name, "The channel's name", max_len=80, required=True)
    clean, classes = SETTINGS[kind](settings), _classes(audit_classes or [])
    wrapped_secrets = _secrets(kind, given, {})
    channel_id = random.token_hex(8).upper()
    blob = kma.vault.master().wrap(secrets_context(channel_id), json.dumps(wrapped_secrets).encode())
    now = kma.clock.now()
    insert = Stmt(
        "INSERT INTO alert_channels (id, name, kind, enabled, settings, secrets_wrapped, warnings, "
        "audit_classes, created_at, updated_at) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? "
        "WHERE NOT EXISTS (SELECT 1 FROM alert_channels WHERE name = ?)",
        (
            channel_id,
            name,
            kind,
            int(enabled),
            json.dumps(clean),
            blob,
            int(warnings),
            json.dumps(classes),
            now,
            now,
            name,
        ),
        expect=1,
        refusal=f"an alert channel named '{name}' exists already",
    )
    kma.commit(
        actor,
        "alerts.channel_add",
        [insert, _seal(kma, channel_id, name, kind, enabled, clean, warnings, classes)],
        f"added {kind} alert channel '{name}'",
        ("alert_channel", channel_id),
    )
    return _saved(kma, channel_id, wrapped_secrets)


def _seal(
    kma: Appliance,
    channel_id: str,
    name: str,
    kind: str,
    enabled: bool,
    settings: dict[str, Any],
    warnings: bool,
    classes: list[str],
) -> Stmt:
    """The MAC of the channel as written (row_macs.ALERT_CHANNELS), in the batch that writes it."""
    row = {"id": channel_id, "name": name, "kind": kind, "enabled": int(enabled)}
    row |= {"settings": json.dumps(settings), "warnings": int(warnings), "audit_classes": json.dumps(classes)}
    return row_macs.seal(kma.vault.row_mac_key(), row_macs.ALERT_CHANNELS, row)


def _saved(kma: Appliance, channel_id: str, secrets: dict[str, str]) -> Channel:
    saved = channel(kma, channel_id)
    kma.part(ChannelSecrets).remember(saved, secrets)
    return saved


def change_channel(
    kma: Appliance,
    actor: Actor,
    channel_id: str,
    name: str,
    settings: dict[str, Any],
    given: dict[str, str | None],
    *,
    enabled: bool,
    warnings: bool,
    audit_classes: list[str],
) -> Channel:
    row = _row(kma, channel_id)
    kind = row["kind"]
    check_text(name, "The channel's name", max_len=80, required=True)
    clean, classes = SETTINGS[kind](settings), _classes(audit_classes)
    kept = unwrap_secrets(kma, channel_id, row["secrets_wrapped"])
    now_secrets = _secrets(kind, given, kept)
    blob = kma.vault.master().wrap(secrets_context(channel_id), json.dumps(now_secrets).encode())
    update = Stmt(
        "UPDATE alert_channels SET name = ?, enabled = ?, settings = ?, secrets_wrapped = ?, warnings = ?, "
        "audit_classes = ?, updated_at = ? WHERE id = ? AND updated_at = ? "
        "AND NOT EXISTS (SELECT 1 FROM alert_channels WHERE name = ? AND id <> ?)",
        (
            name,
            int(enabled),
            json.dumps(clean),
            blob,
            int(warnings),
            json.dumps(classes),
            kma.clock.now(),
            channel_id,
            row["updated_at"],
            name,
            channel_id,
        ),
        expect=1,
        refusal=f"another alert channel is named '{name}', or the channel changed meanwhile: read it again",
    )
    secrets_changed = sorted(k for k, v in given.items() if v)
    said = f"changed alert channel '{name}'" + (
        f" (new {', '.join(secrets_changed)})" if secrets_changed else ""
    )
    seal = _seal(kma, channel_id, name, kind, enabled, clean, warnings, classes)
    kma.commit(actor, "alerts.channel_change", [update, seal], said, ("alert_channel", channel_id))
    return _saved(kma, channel_id, now_secrets)


def remove_channel(kma: Appliance, actor: Actor, channel_id: str) -> None:
    row = _row(kma, channel_id)
    statements = [
        Stmt(
            "DELETE FROM alert_channels WHERE id = ?",
            (channel_id,),
            expect=1,
            missing=True,
            refusal=f"there is no alert channel '{channel_id}'",
        ),
        Stmt("DELETE FROM alert_queue WHERE channel_id = ?", (channel_id,)),
    ]
    kma.commit(
        actor,
        "alerts.channel_remove",
        statements,
        f"removed alert channel '{row['name']}'",
        ("alert_channel", channel_id),
    )


def deliver(kma: Appliance, ch: Channel, secret: dict[str, str], alert: Alert) -> None:
    """Send one alert on one channel; raises DeliveryFailed with the receiver's answer."""
    s = ch.settings
    if ch.kind == "webhook":
        webhook.send(s["url"], s.get("ca_pem"), secret["secret"].encode(), alert)
    elif ch.kind == "email":
        host, port = smtp_of(ch)
        mail.send(
            host,
            port,
            s.get("ca_pem"),
            s.get("username"),
            secret.get("password"),
            s["sender"],
            s["recipients"],
            alert,
        )
    else:
        host, _, port = s["address"].rpartition(":")
        snmp.send(
            kma.kma_id,
            host.strip("[]"),
            int(port),
            s["mode"],
            s["user"],
            s["auth_protocol"],
            secret["auth_key"],
            s["priv_protocol"],
            secret["priv_key"],
            alert,
        )


@dataclass(frozen=True)
class Delivery:
    """A test alert's delivery; the API's `AlertTestResult` reads it."""

    delivered: bool
    error: str | None
    alert_id: str


def send_test_alert(kma: Appliance, actor: Actor, channel_id: str) -> Delivery:
    """A test alert on one channel, now, from this KMA: the answer says whether the receiver took it
    (a trap is taken once sent). Audited either way."""
    row = _row(kma, channel_id)
    if not row_macs.genuine(kma, row_macs.ALERT_CHANNELS, row):
        raise ValidationFailed(
            f"The alert channel '{row['name']}' was written or altered in the store without the KMA (see the "
            "audit trail's security.tamper events): it gets no alert. Remove it and add it again."
        )
    ch = Channel.from_row(row)
    alert = Alert(
        id=f"{kma.kma_id}:test-{random.token_hex(4)}",
        kind=TEST,
        cluster=cluster_name(kma),
        kma_id=kma.kma_id,
        time=kma.clock.now(),
        text=f"A test alert on channel '{ch.name}', asked for by {actor.entity_id}.",
    )
    error = None
    try:
        deliver(kma, ch, stored_secrets(kma, channel_id), alert)
    except DeliveryFailed as exc:
        error = str(exc)
    said = f"test alert on '{ch.name}': " + ("delivered" if error is None else f"not delivered: {error}")
    kma.commit(actor, "alerts.test", [], said, ("alert_channel", channel_id))
    return Delivery(error is None, error, alert.id)
