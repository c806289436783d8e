"""Real receivers for the alert tests, each on loopback, each able to stop and start again on the
same port (a receiver down, then up): an HTTPS webhook receiver that checks the HMAC signature, an
SMTP server with STARTTLS (aiosmtpd), and net-snmp's snmptrapd with an SNMPv3 authPriv user.

The HTTPS and SMTP receivers have a CA of their own (not the cluster's), as a real one would, which
the channel pins."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

from kma.crypto.ca import create_cluster_ca, issue_server_certificate
from tests.support.ports import free_port
from tests.support.waiting import wait_until


class _Tls:
    def __init__(self, name: str) -> None:
        ca = create_cluster_ca(f"Test {name} CA")
        cert = issue_server_certificate(ca, name, ["127.0.0.1"])
        self.ca_pem = ca.cert_pem.decode()
        self.files = tempfile.TemporaryDirectory()
        self.cert, self.key = Path(self.files.name, "cert.pem"), Path(self.files.name, "key.pem")
        self.cert.write_bytes(cert.cert_pem)
        self.key.write_bytes(cert.key_pem)

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, self.key)
        return context


class WebhookReceiver:
    """POST /alerts over HTTPS: keeps each alert whose X-KMA-Signature-256 is right (answers 204),
    refuses (401) and counts the others."""

    def __init__(self, secret: str) -> None:
        self.tls = _Tls("webhook")
        self.secret = secret.encode()
        self.alerts: list[dict[str, Any]] = []
        self.bad_signatures = 0
        self.port = free_port()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/alerts"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                want = "sha256=" + hmac.new(receiver.secret, body, hashlib.sha256).hexdigest()
                if hmac.compare_digest(want, self.headers.get("X-KMA-Signature-256", "")):
                    receiver.alerts.append(json.loads(body))
                    self.send_response(204)
                else:
                    receiver.bad_signatures += 1
                    self.send_response(401)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.socket = self.tls.server_context().wrap_socket(server.socket, server_side=True)
        self._server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class SmtpReceiver:
    """An SMTP server that requires STARTTLS before it takes mail; keeps each message."""

    def __init__(self) -> None:
        self.tls = _Tls("smtp")
        self.messages: list[Any] = []
        self.port = free_port()
        self._controller: Controller | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.messages.append(message_from_bytes(envelope.content))
        return "250 OK"

    def start(self) -> None:
        self._controller = Controller(
            self,
            hostname="127.0.0.1",
            port=self.port,
            tls_context=self.tls.server_context(),
            require_starttls=True,
        )
        self._controller.start()

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None


class Snmptrapd:
    """net-snmp's snmptrapd with one SNMPv3 user (authPriv, SHA-256 and AES), known both for informs
    and for the traps of the given engine IDs; what it logs is read back from its log file."""

    USER, AUTH, PRIV = "kma-alerts", "auth passphrase 1", "priv passphrase 1"

    def __init__(self, engine_ids: list[str]) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="snmptrapd-"))
        self.port = free_port(socket.SOCK_DGRAM)
        users = [
            f'createUser -e 0x{e} {self.USER} SHA-256 "{self.AUTH}" AES "{self.PRIV}"' for e in engine_ids
        ]
        users.append(f'createUser {self.USER} SHA-256 "{self.AUTH}" AES "{self.PRIV}"')
        (self.dir / "snmptrapd.conf").write_text("\n".join([*users, f"authUser log {self.USER} priv", ""]))
        self.log = self.dir / "traps.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        binary = shutil.which("snmptrapd") or "/usr/sbin/snmptrapd"
        self._proc = subprocess.Popen(
            [
                binary,
                "-f",
                "-C",
                "-c",
                str(self.dir / "snmptrapd.conf"),
                "-Lf",
                str(self.log),
                "-On",
                "-M",
                "/dev/null",
                f"--persistentDir={self.dir / 'persist'}",
                f"udp:127.0.0.1:{self.port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(lambda: "NET-SNMP version" in self.received(), 10, "snmptrapd listens")

    def received(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)
            self._proc = None
