"""The manager's failover sends its token only to the KMA it chose (issue 39, item 1): a listener at a
failover address that holds a certificate of the cluster CA (a stolen node credential's KMA
certificate) but not that KMA's gets nothing, and the client says it reached no KMA."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kma.crypto.ca import create_cluster_ca, issue_server_certificate
from kms_client import KnownKma, TrustError
from kms_client.connection import Connection
from kms_client.trust import fingerprint_of

CA = create_cluster_ca("test cluster")


@pytest.fixture()
def listener(tmp_path: Path) -> Iterator[tuple[str, list[bytes]]]:
    """A TLS listener with KMA 'kma-1's certificate, recording what any client sends it."""
    cert = issue_server_certificate(CA, "kma-1", ["127.0.0.1"])
    (tmp_path / "c.pem").write_bytes(cert.cert_pem + CA.cert_pem)
    (tmp_path / "c.key").write_bytes(cert.key_pem)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(tmp_path / "c.pem", tmp_path / "c.key")
    sock = socket.create_server(("127.0.0.1", 0))
    heard: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            try:
                with ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.settimeout(2)
                    heard.append(tls.recv(65536))
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
            except (OSError, ssl.SSLError):
                continue

    threading.Thread(target=serve, daemon=True).start()
    yield f"127.0.0.1:{sock.getsockname()[1]}", heard
    sock.close()


def _client(cluster: list[KnownKma]) -> Connection:
    gone = socket.create_server(("127.0.0.1", 0))  # a KMA that stopped answering: its port refuses
    address = f"127.0.0.1:{gone.getsockname()[1]}"
    gone.close()
    ca = CA.cert_pem.decode("ascii")
    client = Connection(
        address,
        ca_pem=ca,
        ca_fingerprint=fingerprint_of(ca),
        timeout=3.0,
        transport=None,
        cluster=cluster,
        on_failover=None,
    )
    client.token = "the security officer's session token"
    return client


def test_failover_sends_no_token_to_another_kmas_certificate(listener: tuple[str, list[bytes]]) -> None:
    address, heard = listener
    client = _client([KnownKma("kma-2", "Dallas 2", "dallas", address)])  # kma-2's address, rewritten
    with pytest.raises(TrustError, match="names 'kma-1', not KMA 'kma-2'"):
        client.request("GET", "/keys")
    assert not any(b"session token" in h for h in heard)
    client.close()


def test_failover_goes_on_with_the_kma_whose_certificate_names_it(listener: tuple[str, list[bytes]]) -> None:
    address, heard = listener
    client = _client([KnownKma("kma-1", "Dallas 1", "dallas", address)])
    assert client.request("GET", "/keys").json() == {}
    assert client.address == address
    assert any(b"session token" in h for h in heard)
    client.close()


def test_a_sign_in_whose_kma_is_down_sends_no_passphrase_to_another_kmas_certificate(
    listener: tuple[str, list[bytes]],
) -> None:
    address, heard = listener
    client = _client([KnownKma("kma-2", "Dallas 2", "dallas", address)])
    client.token = None
    with pytest.raises(TrustError):  # the sign-in never reached its KMA: it would go on elsewhere
        client.request(
            "POST", "/auth/login", body={"username": "so", "passphrase": "so's passphrase"}, auth=False
        )
    assert not any(b"passphrase" in h for h in heard)
    client.close()
