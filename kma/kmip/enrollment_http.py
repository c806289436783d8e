"""Enrollment over HTTPS on the service listener: the only thing served without a certificate.

The listener tells the two protocols apart by their first byte after the TLS handshake: a KMIP
message starts with 0x42, an HTTP request with a method name. Two routes, JSON in and out, one
request per connection (`Connection: close`), bounded sizes and times:

    GET  /v1/ca      -> {"ca_pem", "fingerprint", "previous_ca_pems"}  trust on first use, as /api/v1/ca
    GET  /v1/kmas    -> {"kmas": [...], "marker"}            the cluster's KMAs now (an enrolled
                        agent's certificate needed); `marker` changes whenever the list does
    POST /v1/enroll  {"agent_id", "passphrase", "csr_pem"}
                     -> {"agent_id", "certificate_pem", "ca_pem", "kmas": [...]}
    POST /v1/renew   {"csr_pem"}, presenting the agent's current certificate (no passphrase)
                     -> the same answer (kma/services/certificates/agent_renewal.py)

Errors use the management API's shape: {"error": {"code", "message"}} with its status codes.

The whole request is read (within `request_timeout`) before an enrollment slot is taken: only
a complete enrollment waits for one of the few slots (each costs an Argon2id verification and a
signature), so stalled connections hold up neither `GET /v1/ca` nor anyone else's enrollment.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

from kma.appliance import Appliance
from kma.crypto import fingerprint
from kma.errors import BadRequest, Busy, KmaError, PayloadTooLarge
from kma.kmip.messages import CATCHING_UP
from kma.kmip.tls_stream import TlsStream
from kma.services import enrollment
from kma.services.certificates import agent_renewal, ca_renewal
from kma.services.certificates.certificate_expiry import first_certificate

log = logging.getLogger(__name__)
MAX_HEAD = 8192
MAX_BODY = 32768
Refuse = Callable[[str, str, str], Awaitable[None]]  # (address, operation, message): audited, rate-limited
REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def _response(status: int, body: dict[str, Any]) -> bytes:
    data = json.dumps(body).encode()
    head = (
        f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n"
    )
    return head.encode() + data


@dataclass(frozen=True)
class Listener:
    """What enrollment needs from the service listener it runs on."""

    kma: Appliance
    service_address: str
    slots: asyncio.Semaphore  # enrollments at once
    request_timeout: float  # to receive the whole request
    refuse: Refuse


def _error(status: int, code: str, message: str) -> bytes:
    return _response(status, {"error": {"code": code, "message": message}})


async def _read_request(first: bytes, stream: TlsStream, timeout: float) -> tuple[str, str, bytes]:
    async with asyncio.timeout(timeout):
        head = first
        while b"\r\n\r\n" not in head:
            chunk = await stream.read(MAX_HEAD)
            if not chunk:
                raise BadRequest("The request ended before its headers did.")
            head += chunk
            if len(head) > MAX_HEAD + MAX_BODY:
                raise PayloadTooLarge("The request headers are too large.")
        head, _, body = head.partition(b"\r\n\r\n")
        if len(head) > MAX_HEAD:
            raise PayloadTooLarge("The request headers are too large.")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise BadRequest("This is not an HTTP/1.1 request.")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        declared = headers.get("content-length", "0")
        if not declared.isdigit():
            raise BadRequest("The Content-Length header is not a number.")
        length = int(declared)
        if length > MAX_BODY:
            raise PayloadTooLarge(f"The request body must be at most {MAX_BODY} bytes.")
        if len(body) < length:
            body += await stream.readexactly(length - len(body))
        return parts[0], parts[1], body[:length]


async def serve(listener: Listener, first: bytes, stream: TlsStream, address: str) -> None:
    try:
        method, path, body = await _read_request(first, stream, listener.request_timeout)
        ssl_object = stream.get_extra_info("ssl_object")
        presented = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        reply = await _route(listener, method, path, body, address, presented or None)
    except KmaError as error:
        if not error.audited:
            await listener.refuse(address, "agent.enroll", f"refused: {error.message}")
        reply = _error(error.status, error.code, error.message)
    except (TimeoutError, asyncio.IncompleteReadError, ValueError):
        await listener.refuse(address, "agent.enroll", "refused: incomplete or malformed HTTP request")
        reply = _error(400, "bad_request", "The request was incomplete or malformed.")
    stream.write(reply)
    await stream.drain()


async def _route(
    listener: Listener, method: str, path: str, body: bytes, address: str, presented: bytes | None
) -> bytes:
    """`presented`: the client certificate (DER) the TLS layer verified against the cluster CA."""
    kma = listener.kma
    if path == "/v1/ca" and method == "GET":
        ca_pem = first_certificate(kma.data_dir.ca_cert.read_text(encoding="ascii"))  # the current one
        previous = ca_renewal.previous(kma)  # an agent told the fingerprint of one accepts its renewal
        return _response(
            200,
            {
                "ca_pem": ca_pem,
                "fingerprint": fingerprint(ca_pem.encode("ascii")),
                "previous_ca_pems": previous,
            },
        )
    if path == "/v1/enroll" and method == "POST":
        try:
            request = json.loads(body)
            agent_id, passphrase, csr = request["agent_id"], request["passphrase"], request["csr_pem"]
            drive = request.get("drive") or {}  # what a tape drive says it is (docs/media.md)
            if not all(isinstance(v, str) for v in (agent_id, passphrase, csr, *drive.values())):
                raise TypeError
        except (ValueError, KeyError, TypeError, AttributeError):
            raise BadRequest(
                'Send JSON {"agent_id", "passphrase", "csr_pem"} (all strings), and optionally "drive": '
                '{"drive_model", "drive_generation", "library", "library_partition"}.'
            ) from None
        if not kma.store.caught_up():  # its replica may not know the passphrase yet
            raise Busy(CATCHING_UP)
        async with listener.slots:
            result = await asyncio.get_running_loop().run_in_executor(
                None,
                enrollment.enroll,
                kma,
                agent_id,
                passphrase,
                csr.encode(),
                address,
                listener.service_address,
                drive,
            )
        return _response(200, asdict(result))
    if path == "/v1/renew" and method == "POST":
        return await _renew(listener, body, address, presented)
    if path == "/v1/kmas" and method == "GET":
        return await _kmas(listener, presented)
    if path in ("/v1/ca", "/v1/enroll", "/v1/kmas", "/v1/renew"):
        return _error(405, "bad_request", f"{method} is not allowed on {path}.")
    return _error(
        404, "not_found", "The service listener serves KMIP, /v1/ca, /v1/enroll, /v1/renew and /v1/kmas only."
    )


async def _kmas(listener: Listener, presented: bytes | None) -> bytes:
    kma = listener.kma
    if presented is None:  # the TLS layer verified any certificate against the cluster CA
        return _error(401, "unauthenticated", "Present an agent certificate to see the KMAs.")
    kmas = await asyncio.get_running_loop().run_in_executor(
        None, enrollment.cluster_kmas, kma, listener.service_address
    )
    return _response(200, {"kmas": [asdict(k) for k in kmas], "marker": enrollment.kmas_marker(kmas)})


async def _renew(listener: Listener, body: bytes, address: str, presented: bytes | None) -> bytes:
    if presented is None:
        return _error(401, "unauthenticated", "Present the agent's current certificate to renew it.")
    try:
        csr = json.loads(body)["csr_pem"]
        if not isinstance(csr, str):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise BadRequest('Send JSON {"csr_pem"} (a string).') from None
    kma = listener.kma
    if not kma.store.caught_up():
        raise Busy(CATCHING_UP)
    async with listener.slots:  # a signature and a durable commit, as an enrollment
        result = await asyncio.get_running_loop().run_in_executor(
            None, agent_renewal.renew, kma, presented, csr.encode(), address, listener.service_address
        )
    return _response(200, asdict(result))
