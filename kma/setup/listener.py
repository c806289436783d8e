"""Set-up mode: what `kma serve` does on a data directory that holds no KMA yet.

It listens on the set-up address with a temporary certificate made for this run (kept in a
private temporary folder, gone when set-up mode ends), and prints that certificate's fingerprint
and the one-time set-up code on its console and in its log, so a service manager's journal shows
them too. It answers only the set-up API (kma/setup/api.py). Once an installer has finished the
set-up, it stops listening and the caller goes on to serve the new KMA normally.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from kma.api.listener import STOP_REQUESTED, Listener, listen, note_stop_requests
from kma.crypto import WrappingKey, create_cluster_ca, issue_server_certificate
from kma.datadir import DataDir, write_private
from kma.limits import ListenerLimits
from kma.setup.api import create_setup_app
from kma.setup.service import SetupSession, split_address
from kma.tls import server_context

log = logging.getLogger(__name__)

DEFAULT_SETUP_ADDRESS = "127.0.0.1:8443"


@dataclass(frozen=True)
class Finished:
    management_port: int | None  # the port normal mode listens on; None: the answered one
    master: WrappingKey | None  # the new KMA's master key: it serves unlocked without waiting for a quorum


class _SetupListener(Listener):
    def __init__(self, session: SetupSession, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.session = session

    async def on_tick(self, counter: int) -> bool:
        if self.session.finished.is_set():
            self.should_exit = True  # the finish response is sent first: uvicorn lets it complete
        return await super().on_tick(counter)


def _to_log_files(line: str) -> None:
    """Into the KMA's log too (a service manager may keep only that), but not twice on the console."""
    record = log.makeRecord(log.name, logging.WARNING, __file__, 0, "%s", (line,), None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)


def serve_setup(
    data_dir: DataDir,
    setup_address: str,
    management_port: int | None,
    ready_file: Path | None,
    announce: Callable[[str], None],
    service_port: int | None = None,
) -> Finished | None:
    """Serve the set-up API until set-up has finished (then say where the KMA continues) or the
    process is stopped (None: still not set up, and nothing written)."""
    host, port = split_address(setup_address)
    sock = listen(host, port if management_port is None else management_port)
    bound_port = sock.getsockname()[1]
    address = f"{host}:{bound_port}"
    temporary_ca = create_cluster_ca("KMA set-up (temporary)")
    certificate = issue_server_certificate(
        temporary_ca, "kma-set-up", [] if host in ("0.0.0.0", "::") else [host]
    )

    def say(line: str) -> None:
        announce(line)
        _to_log_files(line)

    # With --management-port 0 (tests, local mode) the KMA continues on the port it has now.
    continue_port = None if management_port is None else (management_port or bound_port)
    session = SetupSession(
        data_dir, temporary_ca.cert_pem.decode(), bound_port, continue_port, say, service_port
    )
    with tempfile.TemporaryDirectory(prefix="kma-setup-") as folder:
        cert_file, key_file = Path(folder, "setup.pem"), Path(folder, "setup.key")
        write_private(cert_file, certificate.cert_pem + temporary_ca.cert_pem)
        write_private(key_file, certificate.key_pem)
        tls = server_context(cert_file, key_file)

    def ready() -> None:
        say("KMA not set up yet: waiting in set-up mode")
        say(f"set-up      https://{address}")
        say(f"temporary certificate fingerprint {session.fingerprint}")
        say(f"set-up code {session.code}")
        if ready_file is not None:
            tmp = ready_file.with_suffix(".tmp")
            tmp.write_text(
                json.dumps(
                    {
                        "mode": "setup",
                        "management_address": address,
                        "ca_fingerprint": session.fingerprint,
                        "setup_code": session.code,
                        "pid": os.getpid(),
                    }
                )
            )
            tmp.replace(ready_file)

    config = uvicorn.Config(
        create_setup_app(session), log_level="warning", access_log=False, timeout_graceful_shutdown=5
    )
    server = _SetupListener(session, config, tls, ListenerLimits.from_table({}), ready)
    note_stop_requests()
    try:
        asyncio.run(server.serve(sockets=[sock]))
    finally:
        session.discard_uploads()
        if ready_file is not None:
            ready_file.unlink(missing_ok=True)
    if not session.finished.is_set() or STOP_REQUESTED.is_set():
        return None
    say(
        f"set-up finished: the KMA continues on https://{session.continue_address}; agents reach it at "
        f"{session.continue_service_address}"
    )
    assert session.made is not None
    return Finished(continue_port, session.made.master)
