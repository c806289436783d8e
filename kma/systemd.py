"""Readiness for systemd's `Type=notify` (sd_notify(3)), in a few lines instead of libsystemd: when
systemd starts `kma serve` it sets $NOTIFY_SOCKET, and units ordered after kma.service start only
once the KMA says READY=1, which it says when both its listeners serve."""

from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger(__name__)


def notify(state: str) -> bool:
    """Send `state` (e.g. "READY=1") to the service manager; False when none is listening."""
    address = os.environ.get("NOTIFY_SOCKET", "")
    if not address or not hasattr(socket, "AF_UNIX"):
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(state.encode())
    except OSError as exc:
        log.warning("could not tell systemd %r through %s: %s", state, address, exc)
        return False
    return True
