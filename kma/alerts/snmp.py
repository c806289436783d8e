"""SNMPv3 notifications (authPriv only), as traps or informs, described by KMA-ALERTS-MIB (the file
beside this one, shipped in the package; `kma.alerts.snmp.MIB_FILE`).

pysnmp (the maintained lextudio line) speaks asyncio; its engine lives on one event loop of its own
in a thread (`_Loop`), so the sender's worker and an API request's test alert share it safely.

An inform is acknowledged by the manager, so it is delivered at least once: no answer after the
retries leaves it queued. A trap has no answer: it is sent once and counted delivered (a manager
that is down loses it); choose informs where that matters. For traps the KMA's engine is the
authoritative one, so the manager needs the KMA's engine ID (`engine_id`), which is derived from
the KMA's id and so never changes; informs need no such set-up."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from importlib.resources import files
from typing import Any

from pysnmp.hlapi.v3arch import asyncio as hlapi
from pysnmp.proto.rfc1902 import OctetString, Unsigned32

from kma.alerts.message import AUDIT_EVENT, TEST, WARNING_ENDED, WARNING_STARTED, Alert, DeliveryFailed

MIB_NAME = "KMA-ALERTS-MIB"
MIB_FILE = files("kma.alerts") / f"{MIB_NAME}.txt"
ENTERPRISE = "1.3.6.1.4.1.32473"  # the example enterprise number of RFC 5612, as the syslog copy's
ROOT = f"{ENTERPRISE}.1"  # kmaAlertsMIB
NOTIFICATIONS = {
    WARNING_STARTED: f"{ROOT}.0.1",
    WARNING_ENDED: f"{ROOT}.0.2",
    AUDIT_EVENT: f"{ROOT}.0.3",
    TEST: f"{ROOT}.0.4",
}
OBJECT = {
    "id": f"{ROOT}.1.1",
    "kma_id": f"{ROOT}.1.2",
    "cluster": f"{ROOT}.1.3",
    "time": f"{ROOT}.1.4",
    "text": f"{ROOT}.1.5",
    "warning": f"{ROOT}.1.6",
    "event_class": f"{ROOT}.1.7",
    "operation": f"{ROOT}.1.8",
    "severity": f"{ROOT}.1.9",
    "chain_seq": f"{ROOT}.1.10",
}
TEXT_LIMIT = 1024  # kmaAlertText's size in the MIB

AUTH_PROTOCOLS = {
    "SHA": hlapi.usmHMACSHAAuthProtocol,
    "SHA-224": hlapi.usmHMAC128SHA224AuthProtocol,
    "SHA-256": hlapi.usmHMAC192SHA256AuthProtocol,
    "SHA-384": hlapi.usmHMAC256SHA384AuthProtocol,
    "SHA-512": hlapi.usmHMAC384SHA512AuthProtocol,
}
PRIV_PROTOCOLS = {
    "AES": hlapi.usmAesCfb128Protocol,
    "AES-192": hlapi.usmAesCfb192Protocol,
    "AES-256": hlapi.usmAesCfb256Protocol,
}
MODES = ("inform", "trap")
TIMEOUT = 3.0  # seconds per try of an inform
RETRIES = 2


def engine_id(kma_id: str) -> str:
    """This KMA's SNMP engine ID in hex (RFC 3411: the enterprise number with its high bit, format 4
    "administratively assigned text", then the KMA's id), as a manager's createUser -e wants it."""
    text = kma_id.encode()[:27]
    return f"{0x80000000 | 32473:08x}04{text.hex()}"


def varbinds(alert: Alert) -> list[hlapi.ObjectType]:
    values: dict[str, Any] = {
        "id": alert.id,
        "kma_id": alert.kma_id,
        "cluster": alert.cluster,
        "time": alert.when,
        "text": alert.text.encode()[:TEXT_LIMIT],
    }
    if alert.kind in (WARNING_STARTED, WARNING_ENDED):
        values["warning"] = alert.warning or ""
    if alert.kind == AUDIT_EVENT:
        event = alert.event
        values |= {name: str(event.get(name) or "") for name in ("event_class", "operation", "severity")}
        values["chain_seq"] = Unsigned32(int(event.get("chain_seq") or 0))
    return [
        hlapi.ObjectType(
            hlapi.ObjectIdentity(f"{OBJECT[name]}.0"), v if isinstance(v, Unsigned32) else OctetString(v)
        )
        for name, v in values.items()
    ]


class _Loop:
    """One asyncio loop in a daemon thread for every SNMP send of this process."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.engines: dict[str, hlapi.SnmpEngine] = {}
        threading.Thread(target=self.loop.run_forever, name="kma-snmp", daemon=True).start()

    def run(self, coro: Any, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)


_loops: list[_Loop] = []  # the one loop, made at the first send
_loops_lock = threading.Lock()


def _the_loop() -> _Loop:
    with _loops_lock:
        if not _loops:
            _loops.append(_Loop())
        return _loops[0]


async def _send(
    kma_id: str, keys: str, host: str, port: int, mode: str, user: hlapi.UsmUserData, alert: Alert
) -> None:
    # One engine per KMA and set of keys: an engine keeps the keys it first met for a user at a
    # manager, so new keys for the same user there (a rotation) need an engine of their own.
    loop = _the_loop()
    engine = loop.engines.get(keys)
    if engine is None:
        engine = loop.engines[keys] = hlapi.SnmpEngine(OctetString(hexValue=engine_id(kma_id)))
    target = await hlapi.UdpTransportTarget.create((host, port), timeout=TIMEOUT, retries=RETRIES)
    notification = hlapi.NotificationType(hlapi.ObjectIdentity(NOTIFICATIONS[alert.kind])).add_varbinds(
        *varbinds(alert)
    )
    error, status, _index, _binds = await hlapi.send_notification(
        engine, user, target, hlapi.ContextData(), mode, notification
    )
    if error:
        raise DeliveryFailed(f"SNMP {mode} to {host}:{port}: {error}")
    if status:
        raise DeliveryFailed(f"SNMP {mode} to {host}:{port}: {status.prettyPrint()}")


def send(
    kma_id: str,
    host: str,
    port: int,
    mode: str,
    user: str,
    auth_protocol: str,
    auth_key: str,
    priv_protocol: str,
    priv_key: str,
    alert: Alert,
) -> None:
    usm = hlapi.UsmUserData(
        user,
        authKey=auth_key,
        privKey=priv_key,
        authProtocol=AUTH_PROTOCOLS[auth_protocol],
        privProtocol=PRIV_PROTOCOLS[priv_protocol],
    )
    wait = TIMEOUT * (RETRIES + 1) + 5
    said = "\0".join([kma_id, user, auth_protocol, auth_key, priv_protocol, priv_key])
    keys = hashlib.sha256(said.encode()).hexdigest()  # the cache's key; the secrets stay out of it
    try:
        _the_loop().run(_send(kma_id, keys, host, port, mode, usm, alert), wait)
    except DeliveryFailed:
        raise
    except Exception as exc:  # pysnmp's own errors (a name it cannot resolve, a socket's)
        raise DeliveryFailed(f"SNMP {mode} to {host}:{port}: {exc or type(exc).__name__}") from None
