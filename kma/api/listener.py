"""The management listener's connections: accepted, bounded and timed here, served by uvicorn.

asyncio's own server accepts every connection and gives a TLS handshake a minute; uvicorn then
waits as long as a client likes for a request's first byte, or for the rest of one. So this
module accepts connections itself: each must fit the listener's limits (kma/limits.py, counted
per address and in all), finish its handshake in `handshake_timeout` under the KMA's TLS policy
(kma/tls.py), and send each whole request (headers and body) within `request_timeout` of
connecting or of its previous response. A request that has fully arrived may take as long as it
needs.

When the listener holds all the connections it may, a new one is not refused: the idlest
connection makes room for it (one in its handshake, waiting for a request or half-sent, never
one whose request is being answered), from the address holding the most, oldest first. So
strangers holding connections open from a few addresses only push out each other, and a manager
from anywhere gets in and is answered. Refused and closed connections are audited at a bounded
rate (kma/services/refusals.py).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import ssl
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from kma import metrics
from kma.limits import ConnectionGate, Full, ListenerLimits, Refused, Ticket

log = logging.getLogger(__name__)


class ManagementProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with a deadline for receiving each whole request."""

    def __init__(
        self,
        *args: Any,
        request_timeout: float,
        on_lost: Callable[[], None],
        peer_refused: Callable[[str, bytes], bool] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._request_timeout = request_timeout
        self._on_lost = on_lost
        self._peer_refused = peer_refused  # (address, client certificate DER) -> refuse it?
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if der and self._peer_refused is not None and self._peer_refused(str(self.client), der):
            transport.abort()  # before any request is read: e.g. a removed KMA's certificate
            return
        self._expect_request()

    @property
    def answering(self) -> bool:
        """A whole request has arrived and its answer is not complete yet."""
        return self._request_in()

    def handle_events(self) -> None:
        super().handle_events()
        if self._request_in():
            self._cancel_deadline()

    def on_response_complete(self) -> None:
        self._expect_request()  # before uvicorn goes on to a pipelined request, which may be whole
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)
        self._on_lost()

    def _request_in(self) -> bool:
        """A request has fully arrived and is being answered."""
        return self.cycle is not None and not self.cycle.more_body and not self.cycle.response_complete

    def _expect_request(self) -> None:
        self._cancel_deadline()
        self._deadline = self.loop.call_later(self._request_timeout, self._too_slow)

    def _too_slow(self) -> None:
        self._deadline = None
        if not self._request_in() and not self.transport.is_closing():
            log.info(
                "closed a management connection from %s: no whole request in %.0f s",
                self.client,
                self._request_timeout,
            )
            self.transport.close()

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None


class _Held:
    """One admitted connection: its place in the gate, and how to close it to make room."""

    def __init__(self, ticket: Ticket, release: Callable[[Ticket], None]) -> None:
        self.ticket = ticket
        self.opened = time.monotonic()
        self.protocol: ManagementProtocol | None = None
        self.handshake: asyncio.Task[None] | None = None
        self._release = release

    def attach(self, protocol: asyncio.Protocol) -> asyncio.Protocol:
        self.protocol = protocol if isinstance(protocol, ManagementProtocol) else None
        return protocol

    @property
    def answering(self) -> bool:
        return self.protocol is not None and self.protocol.answering

    def release(self) -> None:
        """Give its place back (a connection that made room is released before it has closed;
        releasing again changes nothing)."""
        self._release(self.ticket)

    def close(self) -> None:
        self.release()
        if self.handshake is not None and not self.handshake.done():
            self.handshake.cancel()
        elif self.protocol is not None and self.protocol.transport is not None:
            self.protocol.transport.abort()


class ManagementAcceptor:
    """Accepts on the management socket; stands in for asyncio's server in uvicorn's shutdown."""

    def __init__(
        self,
        sock: socket.socket,
        protocol: Callable[[Callable[[], None]], asyncio.Protocol],
        context: ssl.SSLContext,
        limits: ListenerLimits,
        refused: Callable[[str, str], None],
    ) -> None:
        self.sock = sock
        self.protocol = protocol  # (called when the connection ends) -> a protocol for it
        self.context = context
        self.limits = limits
        self.refused = refused  # (address, why): audits it, off the event loop
        self.gate = ConnectionGate(limits.management_max_connections, limits.max_per_address)
        self._held: dict[Ticket, _Held] = {}
        self._handshakes: set[asyncio.Task[None]] = set()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.sock.setblocking(False)
        self._task = asyncio.create_task(self._accept())

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, peer = await loop.sock_accept(self.sock)
            except OSError as exc:  # e.g. EMFILE: say so, and keep accepting
                log.warning("accepting a management connection failed: %s", exc)
                await asyncio.sleep(0.1)
                continue
            try:
                held = self._admit(peer[0])
            except Refused as refused:
                conn.close()
                self.refused(f"{peer[0]}:{peer[1]}", str(refused))
                continue
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = asyncio.create_task(self._handshake(conn, held))
            held.handshake = task
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    def _admit(self, host: str) -> _Held:
        try:
            ticket = self.gate.admit(host)
        except Full:
            idlest = self._idlest()
            if idlest is None:  # every connection is being answered: this one must wait its turn
                raise
            idlest.close()
            self.refused(
                idlest.ticket.host,
                f"closed an idle connection from {idlest.ticket.host} to make "
                f"room: {self.gate.most} connections were open, this listener's limit",
            )
            ticket = self.gate.admit(host)
        held = self._held[ticket] = _Held(ticket, self._release)
        return held

    def _idlest(self) -> _Held | None:
        """The connection to close for a new one: not being answered, from the address holding the
        most connections, the oldest of them."""
        per_host = Counter(h.ticket.host for h in self._held.values())
        idle = (h for h in self._held.values() if not h.answering)
        return max(idle, key=lambda h: (per_host[h.ticket.host], -h.opened), default=None)

    def _release(self, ticket: Ticket) -> None:
        self._held.pop(ticket, None)
        self.gate.release(ticket)

    async def _handshake(self, conn: socket.socket, held: _Held) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.connect_accepted_socket(
                lambda: held.attach(self.protocol(held.release)),
                conn,
                ssl=self.context,
                ssl_handshake_timeout=self.limits.handshake_timeout,
            )
        except (OSError, ssl.SSLError) as exc:  # refused or too slow: the protocol never started
            metrics.TLS_REFUSALS.labels("management").inc()
            log.info("a management TLS handshake failed: %s", exc)
            conn.close()
            held.release()
        except asyncio.CancelledError:  # closed to make room, or the listener is stopping
            conn.close()
            held.release()
            raise

    # --- what uvicorn's shutdown calls on each of its servers ---------------------------------
    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        for task in self._handshakes:
            task.cancel()
        self.sock.close()

    async def wait_closed(self) -> None:
        await asyncio.gather(*filter(None, [self._task]), *self._handshakes, return_exceptions=True)


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


STOP_REQUESTED = threading.Event()


def note_stop_requests() -> None:
    """uvicorn shuts down on SIGTERM/SIGINT and then raises the signal again for the previous
    handler; with the default one that would end the process before the clean-up (agents, store,
    ready file). This handler only notes it, so `serve` returns normally (exit 0 = stopped cleanly),
    and a stop asked for between two listeners (set-up mode handing over) is not lost."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: STOP_REQUESTED.set())


class Listener(uvicorn.Server):
    """uvicorn serving a management app on connections that ManagementAcceptor lets in."""

    def __init__(
        self, config: uvicorn.Config, tls: ssl.SSLContext, limits: ListenerLimits, on_ready: Any
    ) -> None:
        super().__init__(config)
        self.tls = tls
        self.limits = limits
        self._on_ready = on_ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await self.lifespan.startup()
        if self.lifespan.should_exit:
            sys.exit(3)  # uvicorn's STARTUP_FAILURE
        assert sockets is not None and len(sockets) == 1
        acceptor = ManagementAcceptor(sockets[0], self._protocol, self.tls, self.limits, self._refused)
        acceptor.start()
        self.servers = [acceptor]  # type: ignore[list-item]  # closed and awaited by uvicorn's shutdown
        self.started = True
        self._on_ready()

    def _protocol(self, on_lost: Any) -> ManagementProtocol:
        return ManagementProtocol(
            config=self.config,
            server_state=self.server_state,
            app_state=self.lifespan.state,
            request_timeout=self.limits.request_timeout,
            on_lost=on_lost,
            peer_refused=self._peer_refused,
        )

    def _peer_refused(self, address: str, der: bytes) -> bool:
        return False  # before set-up there are no KMAs to refuse

    def _refused(self, address: str, message: str) -> None:
        log.info("refused a management connection from %s: %s", address, message)
