"""`kma serve`: the management listener (HTTPS, run by uvicorn) and the service listener (KMIP
for agents, kma/kmip/server.py, in its own thread) of one KMA.

Both under one TLS policy (kma/tls.py) with the KMA's certificate from the cluster CA, both
bounded by the limits in kma.toml's [listeners] (kma/limits.py, docs/security.md). The ready file
is written once both sockets listen, so a caller (tests, the manager's local mode) never races
start-up.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from kma.api.app import create_app
from kma.api.listener import STOP_REQUESTED, Listener, listen, note_stop_requests, split_address
from kma.appliance import Appliance
from kma.cluster.serve import start_cluster_node
from kma.cluster.store import open_store
from kma.crypto import WrappingKey, fingerprint
from kma.datadir import DataDir
from kma.kmip.server import ServiceListener
from kma.limits import ListenerLimits
from kma.runtime.running import Running
from kma.secrecy import keep_memory_private
from kma.services import refusals
from kma.services.certificates import kma_certificates
from kma.services.certificates.certificate_renewal import listener_tls
from kma.steps import step
from kma.systemd import notify

log = logging.getLogger(__name__)


class _Server(Listener):
    """The management listener of a KMA that is set up: refusals go to its audit trail."""

    def __init__(self, config: uvicorn.Config, kma: Appliance, limits: ListenerLimits, on_ready: Any) -> None:
        # Client certificates are optional (managers sign in with a passphrase); one a KMA presents
        # is checked against removed KMAs (kma/services/certificates/kma_certificates.py).
        tls = listener_tls(kma).context()  # a renewed certificate is loaded into it in place
        super().__init__(config, tls, limits, on_ready)
        self.kma = kma

    def _peer_refused(self, address: str, der: bytes) -> bool:
        why = kma_certificates.refusal(self.kma, der)
        if why is not None:
            self._refused(address, f"refused a client certificate: {why}")
        return why is not None

    def _refused(self, address: str, message: str) -> None:
        asyncio.get_running_loop().run_in_executor(
            None, refusals.audit_anonymous, self.kma, address, "api.connection_refused", message
        )

    async def on_tick(self, counter: int) -> bool:
        # Every second: record what the refusal throttle did not record one by one.
        if counter % 10 == 0:
            summary = refusals.ANONYMOUS_REQUESTS.flush()
            if summary is not None:
                asyncio.get_running_loop().run_in_executor(None, refusals.audit_summary, self.kma, summary)
        return await super().on_tick(counter)


def _when_caught_up(kma: Appliance, write: Any) -> None:
    while not kma.store.caught_up():
        if STOP_REQUESTED.wait(0.05):
            return
    write(True)
    log.info("caught up with the cluster: serving agents")


def serve(
    data_dir: DataDir,
    management_port: int | None,
    service_port: int | None,
    ready_file: Path | None,
    announce: Any = print,
    master: WrappingKey | None = None,
    record_addresses: bool = False,
) -> None:
    keep_memory_private()  # before any key or PIN is read
    limits = data_dir.listener_limits()
    refusals.set_rate(limits.refusals_per_second)
    listeners = _open_the_listeners(data_dir, management_port, service_port, record_addresses)
    node = start_cluster_node(data_dir)  # None when the store is embedded
    kma = Appliance(data_dir, open_store)
    running = _start_the_workers(kma, node, listeners, master)
    agents = _start_the_agent_listener(kma, listeners, limits)
    server = _Server(
        _management_config(kma, limits), kma, limits, _ready(kma, listeners, ready_file, announce)
    )
    note_stop_requests()
    server.should_exit = STOP_REQUESTED.is_set()  # stopped while set-up mode handed over: stop now
    try:
        asyncio.run(server.serve(sockets=[listeners.management_socket]))
    finally:
        notify("STOPPING=1")
        agents.stop()
        running.stop()
        kma.close()
        if node is not None:
            node.stop()
        if ready_file is not None:
            ready_file.unlink(missing_ok=True)


@dataclass(frozen=True)
class _Listeners:
    management_socket: socket.socket
    service_socket: socket.socket
    management: str  # host:port as bound (a port of 0 is given one)
    service: str
    ca: str  # the cluster CA's fingerprint, announced


@step("serve")
def _open_the_listeners(
    data_dir: DataDir, management_port: int | None, service_port: int | None, record_addresses: bool
) -> _Listeners:
    identity = data_dir.identity()
    host, configured_port = split_address(identity.management_address)
    sock = listen(host, configured_port if management_port is None else management_port)
    management = f"{host}:{sock.getsockname()[1]}"
    service_host, configured_service_port = split_address(identity.service_address)
    service_sock = listen(service_host, configured_service_port if service_port is None else service_port)
    service = f"{service_host}:{service_sock.getsockname()[1]}"
    if record_addresses and (management, service) != (identity.management_address, identity.service_address):
        data_dir.record_addresses(management, service)
    return _Listeners(sock, service_sock, management, service, fingerprint(data_dir.ca_cert.read_bytes()))


@step("serve")
def _start_the_workers(
    kma: Appliance, node: Any, listeners: _Listeners, master: WrappingKey | None
) -> Running:
    running = Running(kma, node)  # autonomous unlock, key pool, audit pruner, cluster watch
    running.start(listeners.management, listeners.service, master)
    return running


@step("serve")
def _start_the_agent_listener(
    kma: Appliance, listeners: _Listeners, limits: ListenerLimits
) -> ServiceListener:
    agents = ServiceListener(kma, listeners.service_socket, listeners.service, limits)
    agents.start()
    return agents


def _management_config(kma: Appliance, limits: ListenerLimits) -> uvicorn.Config:
    return uvicorn.Config(
        create_app(kma),
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=5,
        # X-Forwarded-For is believed only from the reverse proxies kma.toml names (none by
        # default): anyone else could put any address in the audit trail and the sign-in gate.
        proxy_headers=bool(limits.trusted_proxies),
        forwarded_allow_ips=list(limits.trusted_proxies),
    )


def _ready(
    kma: Appliance, listeners: _Listeners, ready_file: Path | None, announce: Any
) -> Callable[[], None]:
    """What to do once the management API serves: announce it, write the ready file, tell systemd."""
    management, service, ca = listeners.management, listeners.service, listeners.ca

    def write(caught_up: bool) -> None:
        assert ready_file is not None
        tmp = ready_file.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {
                    "management_address": management,
                    "service_address": service,
                    "ca_fingerprint": ca,
                    "pid": os.getpid(),
                    "caught_up": caught_up,
                }
            )
        )
        tmp.replace(ready_file)

    def ready() -> None:
        # What the KMA made to start (its modules, the app, its caches) lives as long as it does:
        # set aside, the interpreter's full garbage collections no longer walk it. They stop every
        # thread; walking it made one last up to a third of a second, and every drive's request
        # waited (seen during a transfer export, docs/transfer.md).
        gc.collect()
        gc.freeze()
        announce(f"KMA {kma.kma_id} ({'locked' if kma.vault.locked else 'unlocked'})")
        announce(f"management  https://{management}")
        announce(f"service     {service}")
        announce(f"CA fingerprint {ca}")
        if ready_file is not None:
            write(kma.store.caught_up())
            if not kma.store.caught_up():  # serving agents from then on: say so there too
                threading.Thread(
                    target=_when_caught_up, args=(kma, write), name="kma-ready-file", daemon=True
                ).start()
        # systemd (Type=notify) starts what is ordered after the KMA now: both listeners serve
        notify(f"READY=1\nSTATUS=Serving management on {management}, agents on {service}")

    return ready
