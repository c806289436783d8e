"""The service listener: KMIP over mutual TLS (and enrollment over HTTPS) on one port.

It runs in its own thread with its own asyncio loop, beside the management API, so neither can
stall the other. Per connection: a TLS handshake (refusals are audited), then requests in turn:
an 8-byte TTLV header is read and checked (a Request Message, at most `MAX_MESSAGE` bytes)
before the body is, so an oversize or foreign message is answered with a KMIP error and the
connection closed, never buffered. A body that does not decode gets Invalid Message and the
connection stays usable (its framing was sound). Slow or silent peers time out. Whatever one
connection does, the others keep being served.

Connections are counted (kma/limits.py): at most `service_max_connections`; per address at most
`max_per_address` in their TLS handshake and as many again that finished it without a client
certificate; those get only the room not kept for enrolled agents and a short idle limit. An
agent's connection is counted out of its address as soon as its certificate is seen, and when its
address has as many handshakes under way as it may, the oldest of them is closed to make room:
silent connections from a tape library's own address cannot keep its drives out. A refused
connection is audited within the shared rate limit for unknown peers.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import socket
import ssl
import threading
import time
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

from kma import metrics
from kma.appliance import Appliance
from kma.audit.record import Condition, Retention
from kma.domain.actor import Actor
from kma.kmip import enrollment_http, operations, ttlv
from kma.kmip.budget import MessageBudget
from kma.kmip.context import AgentSession, Call, CommitBridge, audit_event
from kma.kmip.enums import ItemType, ResultReason, ResultStatus, Tag
from kma.kmip.measures import measured
from kma.kmip.messages import (
    CATCHING_UP,
    KmipError,
    Request,
    Result,
    encode_response,
    error_response,
    parse_request,
    request_version,
)
from kma.kmip.tls_stream import TlsStream
from kma.kmip.ttlv import TTLVError
from kma.limits import ENROLLMENT_DEADLINE, ConnectionGate, Crowded, ListenerLimits, Refused, Ticket
from kma.services import refusals
from kma.services.certificates import kma_certificates
from kma.services.certificates.certificate_renewal import listener_tls
from kma.services.media import media_rules

CATCHING_UP_ERROR = KmipError(ResultReason.GENERAL_FAILURE, CATCHING_UP)  # the drive asks another KMA
log = logging.getLogger(__name__)
MAX_MESSAGE = 65536  # bytes of one request (header excluded): far above any real KMIP request here
PROCESSING_TIMEOUT = 120.0  # a request waiting on the store (it never should this long)
SWEEP_INTERVAL = 0.5


class _Conn:
    """One connection's deadline: the sweeper cancels a connection that misses it."""

    __slots__ = ("deadline", "idle", "phase", "task", "ticket", "timed_out")

    def __init__(
        self, task: asyncio.Task[Any], ticket: Ticket, phase: str, seconds: float, idle: float
    ) -> None:
        self.task = task
        self.ticket = ticket
        self.idle = idle  # between messages
        self.timed_out = False
        self.phase = phase
        self.deadline = time.monotonic() + seconds

    def expect(self, phase: str, seconds: float) -> None:
        self.phase = phase
        self.deadline = time.monotonic() + seconds


class ServiceListener:
    def __init__(self, kma: Appliance, sock: socket.socket, address: str, limits: ListenerLimits) -> None:
        self.kma = kma
        self.limits = limits
        self.gate = ConnectionGate(
            limits.service_max_connections, limits.max_per_address, limits.kept_for_agents
        )
        self.sock = sock
        self.address = address
        self.context = listener_tls(kma).context()  # a renewed certificate is loaded into it in place
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._connections: dict[asyncio.Task[Any], _Conn] = {}
        self._enrollments: asyncio.Semaphore | None = None
        self._refusals: set[asyncio.Task[None]] = set()
        self._bridge: CommitBridge | None = None
        self._failure: BaseException | None = None

    # --- lifecycle (called from the main thread) ------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="kma-service-listener", daemon=True)
        self._thread.start()
        self._ready.wait(timeout=30)
        if self._failure is not None:
            raise RuntimeError(f"the service listener did not start: {self._failure}")

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # noqa: BLE001 - reported to start() and the log
            self._failure = exc
            log.exception("service listener failed")
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._bridge = CommitBridge(self._loop)
        self._enrollments = asyncio.Semaphore(self.limits.enrollments_at_once)
        self.sock.setblocking(False)
        acceptor = asyncio.create_task(self._accept())
        sweeper = asyncio.create_task(self._sweep())
        self._ready.set()
        log.info("service listener on %s", self.address)
        await self._stopping.wait()
        acceptor.cancel()
        sweeper.cancel()
        for task in [*self._connections, *self._refusals]:
            task.cancel()
        await asyncio.gather(acceptor, sweeper, *self._connections, *self._refusals, return_exceptions=True)
        self.sock.close()

    async def _accept(self) -> None:
        """Accept connections; each gets a task that starts with its TLS handshake."""
        assert self._loop is not None
        while True:
            try:
                sock, peer = await self._loop.sock_accept(self.sock)
            except OSError as exc:  # e.g. EMFILE: say so, and keep accepting
                log.warning("accepting a connection failed: %s", exc)
                await asyncio.sleep(0.1)
                continue
            address = f"{peer[0]}:{peer[1]}"
            try:
                ticket = self._admit(peer[0])
            except Refused as refused:
                sock.close()
                self._refuse_later(address, str(refused))
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = asyncio.create_task(self._accepted(sock, address))
            self._connections[task] = _Conn(
                task, ticket, "handshake", self.limits.handshake_timeout + 5, self.limits.agent_idle_timeout
            )

    def _admit(self, host: str) -> Ticket:
        try:
            return self.gate.admit(host)
        except Crowded:
            handshaking = [
                c for c in self._connections.values() if c.ticket.host == host and not c.ticket.handshaken
            ]
            if not handshaking:
                raise
            oldest = min(handshaking, key=lambda c: c.deadline)  # all got the same time to finish
            oldest.task.cancel()
            self.gate.release(oldest.ticket)  # now, not once the task has ended
            why = f"{self.gate.per_address} were, the limit per address"
            self._refuse_later(
                host, f"closed the oldest connection from {host} in its TLS handshake to make room: {why}"
            )
            return self.gate.admit(host)

    def _refuse_later(self, address: str, message: str) -> None:
        """Audit a refused connection without holding up the accept loop."""
        self._track(asyncio.create_task(self._unauthenticated(address, "service.refused", message)))

    def _track(self, task: asyncio.Task[None]) -> None:
        self._refusals.add(task)
        task.add_done_callback(self._refusals.discard)

    async def _sweep(self) -> None:
        """Cancel connections past their deadline (cheaper than a timer per read), and record what
        the refusal throttle did not record one by one in the second that ended."""
        while True:
            await asyncio.sleep(SWEEP_INTERVAL)
            now = time.monotonic()
            for conn in list(self._connections.values()):
                if conn.deadline < now and not conn.timed_out:
                    conn.timed_out = True
                    conn.task.cancel()
            self._summarise_later(refusals.UNKNOWN_PEERS.flush())
            self._summarise_later(media_rules.THROTTLE.flush())

    def _summarise_later(self, summary: refusals.Summary | None) -> None:
        if summary is not None:
            self._track(asyncio.create_task(self._summarise(summary)))

    # --- one connection ---------------------------------------------------------------------
    async def _accepted(self, sock: socket.socket, address: str) -> None:
        task = asyncio.current_task()
        assert task is not None and self._loop is not None
        conn = self._connections[task]
        stream: TlsStream | None = None
        try:
            try:  # TLS from the first byte, OpenSSL on the socket itself (kma/kmip/tls_stream.py)
                stream = await TlsStream.accept(
                    self._loop, sock, self.context, self.limits.handshake_timeout, MAX_MESSAGE
                )
            except (ssl.SSLError, OSError) as exc:
                # e.g. "certificate has expired", "unable to get local issuer certificate"
                reason = getattr(exc, "verify_message", None) or getattr(exc, "reason", None)
                reason = reason or str(exc) or type(exc).__name__
                sock.close()
                metrics.TLS_REFUSALS.labels("service").inc()
                await self._unauthenticated(address, "service.tls", f"TLS handshake refused: {reason}")
                return
            await self._connection(conn, stream, address)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass  # the peer left or broke TLS: nothing more to say to it
        except asyncio.CancelledError:
            if conn.timed_out and conn.phase == "handshake":
                metrics.TLS_REFUSALS.labels("service").inc()
                await self._unauthenticated(address, "service.tls", "TLS handshake refused: timed out")
            elif conn.timed_out and conn.phase == "message":
                log.info("a message from %s stalled; connection closed", address)
        except Exception:
            log.exception("service connection from %s failed", address)
        finally:
            self._connections.pop(task, None)
            self.gate.release(conn.ticket)
            if stream is not None:
                stream.close()

    async def _connection(self, conn: _Conn, stream: TlsStream, address: str) -> None:
        ssl_object = stream.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        why = kma_certificates.refusal(self.kma, der) if der else None
        if why is not None:  # e.g. a removed KMA's certificate: refused before anything is read
            await self._unauthenticated(address, "service.tls", f"refused a client certificate: {why}")
            return
        session = self._session(stream, address)
        try:
            self.gate.handshaken(conn.ticket, session.agent_id is not None)
        except Refused as refused:
            await self._unauthenticated(address, "service.refused", str(refused))
            return
        if session.agent_id is None:  # it may enroll or ask what the KMA speaks, not linger
            conn.idle = self.limits.anonymous_idle_timeout
        conn.expect("idle", conn.idle)
        first = await stream.readexactly(1)
        if first == b"\x42":
            await self._kmip(conn, session, first, stream)
        elif first.isalpha():
            conn.expect("http", ENROLLMENT_DEADLINE)
            assert self._enrollments is not None
            await enrollment_http.serve(
                enrollment_http.Listener(
                    self.kma,
                    self.address,
                    self._enrollments,
                    self.limits.request_timeout,
                    self._unauthenticated,
                ),
                first,
                stream,
                address,
            )
        else:
            await self._refuse(
                session, stream, None, "kmip.malformed", "the connection carried neither KMIP nor HTTP"
            )

    def _session(self, stream: TlsStream, address: str) -> AgentSession:
        ssl_object = stream.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if not der:
            return AgentSession(self.kma, None, None, address, self._bridge)
        names = x509.load_der_x509_certificate(der).subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        agent_id = str(names[0].value) if names else None
        return AgentSession(self.kma, agent_id, hashlib.sha256(der).hexdigest(), address, self._bridge)

    async def _kmip(
        self,
        conn: _Conn,
        session: AgentSession,
        first: bytes,
        stream: TlsStream,
    ) -> None:
        conn.expect("message", self.limits.message_timeout)
        header = first + await self._read(session, stream, ttlv.HEADER_SIZE - 1, 1)
        while True:
            tag, typ, length = ttlv.read_header(header)
            if tag != Tag.REQUEST_MESSAGE or typ != ItemType.STRUCTURE:
                await self._refuse(
                    session,
                    stream,
                    None,
                    "kmip.malformed",
                    f"not a KMIP request message (tag 0x{tag:06X}, type 0x{typ:02X})",
                )
                return
            if length > MAX_MESSAGE:
                await self._refuse(
                    session,
                    stream,
                    None,
                    "kmip.oversize",
                    f"a request of {length} bytes exceeds this KMA's limit of {MAX_MESSAGE}",
                )
                return
            body = await self._read(session, stream, length, ttlv.HEADER_SIZE)
            conn.expect("processing", PROCESSING_TIMEOUT)
            response, keep = await self.process(session, header + body)
            conn.expect("message", self.limits.message_timeout)
            stream.write(response)
            await stream.drain()
            if not keep:
                return
            conn.expect("idle", conn.idle)
            header = await stream.read(ttlv.HEADER_SIZE)
            if not header:
                return  # the agent closed the connection between messages
            conn.expect("message", self.limits.message_timeout)
            if len(header) < ttlv.HEADER_SIZE:
                header += await self._read(session, stream, ttlv.HEADER_SIZE - len(header), len(header))

    async def _read(
        self,
        session: AgentSession,
        stream: TlsStream,
        n: int,
        already: int,
    ) -> bytes:
        """Exactly n more bytes of a message; a message cut short is answered and audited."""
        try:
            return await stream.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            got = already + len(exc.partial)
            await self._refuse(
                session,
                stream,
                None,
                "kmip.truncated",
                f"the message ended after {got} bytes, {n - len(exc.partial)} short",
            )
            raise

    async def process(self, session: AgentSession, raw: bytes) -> tuple[bytes, bool]:
        """One request message -> (response bytes, keep the connection open?)."""
        now = self.kma.clock.now()
        try:
            message = ttlv.decode(raw)
        except TTLVError as exc:
            await self._audit(session, "kmip.malformed", f"refused a malformed message: {exc}")
            return error_response(None, ResultReason.INVALID_MESSAGE, f"malformed TTLV: {exc}", now), True
        try:
            request = parse_request(message)
        except KmipError as exc:
            await self._audit(session, "kmip.malformed", f"refused a request: {exc.message}")
            return error_response(request_version(message), exc.reason, exc.message, now), True
        return await self._serve(session, request, now)

    async def _serve(self, session: AgentSession, request: Request, now: int) -> tuple[bytes, bool]:
        rebuilds = self.kma.store.replica_rebuilds()
        refused = await self._refusal(session, request, now, rebuilds)
        if refused is not None:
            return refused, False
        call = Call(self.kma, session, request.version, now)
        call.budget = MessageBudget.asked(request.max_response_size, self.limits.kmip_max_answer)
        started = time.perf_counter()
        results = await operations.run(call, request)
        if self._rebuilt_since(rebuilds) and all(r.status == ResultStatus.OPERATION_FAILED for r in results):
            # Nothing was written, and "not found" may have come from a bare snapshot: the drive
            # asks another KMA (or this one again) rather than believing it.
            return self._all_failed(request, CATCHING_UP_ERROR, now), False
        await call.audit_summary()
        measured(results, time.perf_counter() - started)
        response = encode_response(request.version, results, now)
        limit = request.max_response_size
        if limit is not None and len(response) > limit:
            error = KmipError(
                ResultReason.RESPONSE_TOO_LARGE,
                f"the response has {len(response)} bytes, more than the {limit} asked for",
            )
            await self._audit(session, "kmip.response_too_large", error.message)
            return self._all_failed(request, error, now), True
        return response, True

    async def _refusal(
        self, session: AgentSession, request: Request, now: int, rebuilds: int
    ) -> bytes | None:
        """None when the agent may be served; else the answer that refuses it (and closes)."""
        if all(item.operation in operations.OPEN_OPERATIONS for item in request.items):
            return None
        if not self.kma.store.caught_up():  # its replica may not know the agent, or the key yet
            return self._all_failed(request, CATCHING_UP_ERROR, now)
        try:
            session.access()
        except KmipError as exc:
            if self._rebuilt_since(rebuilds):  # read from a bare snapshot: perhaps not true
                return self._all_failed(request, CATCHING_UP_ERROR, now)
            if exc.reason == ResultReason.AUTHENTICATION_NOT_SUCCESSFUL:
                await self._audit(session, "kmip.authenticate", f"refused: {exc.message}")
                return self._all_failed(request, exc, now)
        return None

    def _rebuilt_since(self, rebuilds: int) -> bool:
        """This KMA's rqlited began a restart since `rebuilds` was read (its replica rebuilt)."""
        return not self.kma.store.caught_up() or self.kma.store.replica_rebuilds() != rebuilds

    @staticmethod
    def _all_failed(request: Request, error: KmipError, now: int) -> bytes:
        results = [
            Result(i.operation, i.batch_id, ResultStatus.OPERATION_FAILED, error.reason, error.message)
            for i in request.items
        ]
        return encode_response(request.version, results, now)

    async def _refuse(
        self,
        session: AgentSession,
        stream: TlsStream,
        version: tuple[int, int] | None,
        operation: str,
        message: str,
    ) -> None:
        await self._audit(session, operation, f"refused: {message}; connection closed")
        stream.write(error_response(version, ResultReason.INVALID_MESSAGE, message, self.kma.clock.now()))
        await stream.drain()

    async def _audit(self, session: AgentSession, operation: str, message: str) -> None:
        if session.agent_id is None:
            await self._unauthenticated(session.address, operation, message)
            return
        await audit_event(
            self.kma,
            session.actor,
            operation,
            message,
            condition=Condition.ERROR,
            retention=Retention.MEDIUM,
            subject=("agent", session.agent_id),
            bridge=self._bridge,
        )

    async def _unauthenticated(self, address: str, operation: str, message: str) -> None:
        """A refusal of a peer with no agent identity: audited within the shared rate limit."""
        record, summary = refusals.UNKNOWN_PEERS.admit(address)
        await self._summarise(summary)
        if record:
            actor = Actor("unknown", address, kind="agent")
            await audit_event(self.kma, actor, operation, message, bridge=self._bridge)

    async def _summarise(self, summary: refusals.Summary | None) -> None:
        if summary is not None:
            await audit_event(
                self.kma,
                self.kma.itself,
                summary.operation,
                summary.message,
                condition=Condition.WARNING,
                bridge=self._bridge,
            )
