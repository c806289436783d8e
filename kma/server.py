"""`kma serve`: the management listener (HTTPS, run by uvicorn) and the service listener (KMIP
for agents, kma/kmip/server.py, in its own thread) of one KMA.

TLS 1.2 and 1.3 only, with the KMA's certificate from the cluster CA. The ready file is written
once both sockets listen, so a caller (tests, the manager's local mode) never races start-up.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import ssl
import sys
from pathlib import Path
from typing import Any

import uvicorn

from kma.api.app import create_app
from kma.appliance import Appliance
from kma.crypto import fingerprint
from kma.datadir import DataDir
from kma.kmip.server import ServiceListener

log = logging.getLogger(__name__)


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must be IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say so, and without
    # it every response (headers, then body) waits ~40 ms for a delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    # Restart on the same port at once (no TIME_WAIT wait). On Windows SO_REUSEADDR would instead
    # let another program bind the port the KMA listens on; there the exclusive option is the safe one.
    reuse = socket.SO_EXCLUSIVEADDRUSE if sys.platform == "win32" else socket.SO_REUSEADDR  # type: ignore[attr-defined]
    sock.setsockopt(socket.SOL_SOCKET, reuse, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_ready: Any) -> None:
        super().__init__(config)
        self._on_ready = on_ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self._on_ready()


def serve(data_dir: DataDir, management_port: int | None, service_port: int | None,
          ready_file: Path | None, announce: Any = print) -> None:  # fmt: skip
    identity = data_dir.identity()
    host, configured_port = split_address(identity.management_address)
    sock = listen(host, configured_port if management_port is None else management_port)
    bound = sock.getsockname()
    management = f"{host}:{bound[1]}"
    service_host, configured_service_port = split_address(identity.service_address)
    service_sock = listen(service_host, configured_service_port if service_port is None else service_port)
    service = f"{service_host}:{service_sock.getsockname()[1]}"
    ca = fingerprint(data_dir.ca_cert.read_bytes())

    kma = Appliance(data_dir)
    kma.start(management, service)
    agents = ServiceListener(kma, service_sock, service)
    agents.start()
    config = uvicorn.Config(
        create_app(kma),
        ssl_certfile=str(data_dir.server_cert),
        ssl_keyfile=str(data_dir.server_key),
        ssl_version=ssl.PROTOCOL_TLS_SERVER,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=5,
    )

    def ready() -> None:
        announce(f"KMA {identity.kma_id} ({'locked' if kma.vault.locked else 'unlocked'})")
        announce(f"management  https://{management}")
        announce(f"service     {service}")
        announce(f"CA fingerprint {ca}")
        if ready_file is not None:
            tmp = ready_file.with_suffix(".tmp")
            tmp.write_text(json.dumps({"management_address": management, "service_address": service,
                                       "ca_fingerprint": ca, "pid": os.getpid()}))  # fmt: skip
            tmp.replace(ready_file)

    server = _Server(config, ready)
    # uvicorn shuts down on SIGTERM/SIGINT and then raises the signal again for the previous
    # handler; with the default one that would end the process before the clean-up below (agents,
    # store, ready file). A do-nothing handler lets `serve` return normally: exit 0 = stopped cleanly.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    try:
        asyncio.run(server.serve(sockets=[sock]))
    finally:
        agents.stop()
        kma.close()
        if ready_file is not None:
            ready_file.unlink(missing_ok=True)
