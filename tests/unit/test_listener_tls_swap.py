"""A renewal swaps the listeners' certificate with no handshake in between failing (issue 38): real
TLS handshakes, one after another, against a context from kma's ListenerTls while the certificate
and key files are replaced and reloaded again and again. Loading a certificate into a live
context fails some of them (an instant with the new certificate and no key to sign for it)."""

from __future__ import annotations

import os
import socket
import ssl
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from cryptography import x509

from kma.appliance import Appliance
from kma.crypto import create_cluster_ca, issue_server_certificate
from kma.services.certificates.certificate_renewal import ListenerTls


def _write(path: Path, data: bytes) -> None:
    fresh = path.with_name(path.name + ".new")
    fresh.write_bytes(data)
    os.replace(fresh, path)


def test_every_handshake_during_repeated_renewals_gets_a_whole_certificate(tmp_path: Path) -> None:
    ca = create_cluster_ca("swap")
    issued = [issue_server_certificate(ca, "kma-1", ["127.0.0.1"]) for _ in range(2)]
    files = SimpleNamespace(
        server_cert=tmp_path / "server.pem", server_key=tmp_path / "server.key", ca_cert=tmp_path / "ca.pem"
    )
    (tmp_path / "ca.pem").write_bytes(ca.cert_pem)
    _write(files.server_key, issued[0].key_pem)
    _write(files.server_cert, issued[0].cert_pem + ca.cert_pem)
    tls = ListenerTls(cast(Appliance, SimpleNamespace(data_dir=files)))
    listener = tls.context()

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:  # until the socket is closed, after the clients stopped
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            try:
                with listener.wrap_socket(conn, server_side=True) as tls_conn:
                    tls_conn.sendall(b"k")
            except (ssl.SSLError, OSError):
                pass  # the client sees and reports it

    served = threading.Thread(target=serve, daemon=True)
    served.start()
    seen: set[int] = set()
    failures: list[BaseException] = []

    def handshakes() -> None:
        client = ssl.create_default_context(cadata=ca.cert_pem.decode("ascii"))
        client.check_hostname = False
        while not stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
                    with client.wrap_socket(raw) as conn:
                        der = conn.getpeercert(binary_form=True)
                        assert der is not None and conn.recv(1) == b"k"
                        seen.add(x509.load_der_x509_certificate(der).serial_number)
            except (ssl.SSLError, OSError) as exc:
                failures.append(exc)

    clients = [threading.Thread(target=handshakes, daemon=True) for _ in range(2)]
    for c in clients:
        c.start()
    try:
        for round_ in range(300):
            now = issued[round_ % 2]
            _write(files.server_key, now.key_pem)
            _write(files.server_cert, now.cert_pem + ca.cert_pem)
            tls.reload()
    finally:
        stop.set()
        for c in clients:
            c.join(timeout=20)
        server.close()  # after the clients: closing it resets a connection still in its backlog
    assert not failures, failures[:3]
    assert seen == {x509.load_pem_x509_certificate(i.cert_pem).serial_number for i in issued}
