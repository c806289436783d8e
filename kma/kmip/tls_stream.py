"""One agent connection's TLS on the listener's event loop, with OpenSSL doing the record work.

asyncio's own TLS (`connect_accepted_socket(ssl=...)`) runs its record layer in Python
(asyncio/sslproto.py): per request a socket read, a feed of OpenSSL's memory BIO, a read loop
over it, a StreamReader and back again for the answer, each step a few Python calls and a GIL
release. Here the connection is a non-blocking `ssl.SSLSocket` watched by the loop's selector:
one readiness callback reads what arrived with one C call (`SSL_read` on the socket itself),
an answer is one `SSL_write`; the handshake is the same OpenSSL state machine, so certificate
checks, refusals and their reasons are unchanged (issue 47: the listener's thread was two
thirds of a Get's CPU).

A `TlsStream` offers the few StreamReader and StreamWriter calls the listener makes (`read`,
`readexactly`, `write`, `drain`, `close`, `get_extra_info`). It buffers at most about twice
`limit` bytes before it stops reading (a peer cannot make the KMA buffer more); a peer that
sends half a message and stalls holds nothing but its own task, which the listener's sweeper
cancels at its deadline.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import Any

RECEIVE_SIZE = 65536  # more than a TLS record (16 KiB): one SSL_read takes a whole record


class TlsStream:
    __slots__ = (
        "_buffer",
        "_eof",
        "_error",
        "_fd",
        "_limit",
        "_loop",
        "_outgoing",
        "_peer_closed",
        "_reading",
        "_sock",
        "_waiter",
        "_write_waiter",
        "_writing",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: ssl.SSLSocket, limit: int) -> None:
        self._loop = loop
        self._sock = sock
        self._fd = sock.fileno()
        self._limit = limit
        self._buffer = bytearray()
        self._eof = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None  # a read waiting for bytes
        self._reading = False
        self._outgoing: list[bytes] = []  # answers OpenSSL could not take yet, in order
        self._write_waiter: asyncio.Future[None] | None = None
        self._writing = False
        self._peer_closed = False  # its close_notify came: it reads nothing more

    @classmethod
    async def accept(
        cls,
        loop: asyncio.AbstractEventLoop,
        raw: socket.socket,
        context: ssl.SSLContext,
        timeout: float,
        limit: int,
    ) -> TlsStream:
        """The TLS handshake on an accepted socket; raises ssl.SSLError (with OpenSSL's reason)
        or OSError when it is refused, breaks off or takes longer than `timeout` seconds."""
        raw.setblocking(False)
        # Ragged ends raise SSLEOFError, so that b"" from recv means the peer's close_notify.
        sock = context.wrap_socket(
            raw, server_side=True, do_handshake_on_connect=False, suppress_ragged_eofs=False
        )
        stream = cls(loop, sock, limit)
        try:
            async with asyncio.timeout(timeout):
                await stream._handshake()
        except TimeoutError:
            stream._abort()
            raise ConnectionAbortedError(f"the TLS handshake took longer than {timeout:g} s") from None
        except BaseException:
            stream._abort()
            raise
        stream._resume_reading()
        return stream

    async def _handshake(self) -> None:
        while True:
            try:
                self._sock.do_handshake()
                return
            except ssl.SSLWantReadError:
                await self._ready(reading=True)
            except ssl.SSLWantWriteError:
                await self._ready(reading=False)

    async def _ready(self, reading: bool) -> None:
        """Until the socket is readable (or writable): only for the handshake."""
        ready: asyncio.Future[None] = self._loop.create_future()
        if reading:
            self._loop.add_reader(self._fd, _wake, ready)
        else:
            self._loop.add_writer(self._fd, _wake, ready)
        try:
            await ready
        finally:
            if reading:
                self._loop.remove_reader(self._fd)
            else:
                self._loop.remove_writer(self._fd)

    # --- reading ----------------------------------------------------------------------------
    def _resume_reading(self) -> None:
        if not self._reading and not self._eof and self._error is None:
            self._reading = True
            self._loop.add_reader(self._fd, self._on_readable)

    def _pause_reading(self) -> None:
        if self._reading:
            self._reading = False
            self._loop.remove_reader(self._fd)

    def _on_readable(self) -> None:
        """Whatever OpenSSL can decrypt now (a record it holds in part waits for the rest)."""
        sock = self._sock
        try:
            chunk = sock.recv(RECEIVE_SIZE)
            while chunk:
                self._buffer += chunk
                if not sock.pending():
                    break
                chunk = sock.recv(RECEIVE_SIZE)
            if not chunk:  # the peer's close_notify: as asyncio's TLS did, nothing more is sent to it
                self._eof = self._peer_closed = True
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass  # a record not yet whole, or a TLS message that was no data (a key update)
        except ssl.SSLEOFError:
            self._eof = True  # the peer closed TCP without close_notify, as many clients do
        except (OSError, ssl.SSLError) as exc:
            self._error = exc
        if self._eof or self._error is not None or len(self._buffer) > 2 * self._limit:
            self._pause_reading()
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def _more(self) -> None:
        if self._error is not None:
            raise self._error
        self._resume_reading()
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._waiter = waiter
        try:
            await waiter
        finally:
            self._waiter = None

    def _taken(self, n: int) -> bytes:
        data = bytes(self._buffer[:n])
        del self._buffer[:n]
        if not self._reading and len(self._buffer) <= self._limit:
            self._resume_reading()
        return data

    async def readexactly(self, n: int) -> bytes:
        """Exactly `n` bytes; asyncio.IncompleteReadError when the peer closes before them."""
        while len(self._buffer) < n:
            if self._eof:
                partial = self._taken(len(self._buffer))
                raise asyncio.IncompleteReadError(partial, n)
            await self._more()
        return self._taken(n)

    async def read(self, n: int) -> bytes:
        """At most `n` bytes once any are here; b"" once the peer has closed."""
        while not self._buffer:
            if self._eof:
                return b""
            await self._more()
        return self._taken(n)

    # --- writing ----------------------------------------------------------------------------
    def write(self, data: bytes) -> None:
        """Send `data` (an error shows at `drain`); what OpenSSL cannot take now goes when it can.
        Nothing goes once the peer said close_notify: it would refuse data after its own."""
        if self._error is not None or self._peer_closed:
            return
        self._outgoing.append(data)
        if not self._writing:
            self._flush()

    def _flush(self) -> None:
        try:
            while self._outgoing:
                # Retried with the same bytes after SSLWantWriteError, as OpenSSL requires.
                self._sock.send(self._outgoing[0])
                self._outgoing.pop(0)
        except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
            if not self._writing:
                self._writing = True
                self._loop.add_writer(self._fd, self._flush)
            return
        except (OSError, ssl.SSLError) as exc:
            self._error = exc
            self._outgoing.clear()
        if self._writing:
            self._writing = False
            self._loop.remove_writer(self._fd)
        waiter = self._write_waiter
        if waiter is not None:
            self._write_waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def drain(self) -> None:
        """Until everything written is with the kernel; raises what broke the connection."""
        if self._outgoing and self._error is None:
            waiter: asyncio.Future[None] = self._loop.create_future()
            self._write_waiter = waiter
            try:
                await waiter
            finally:
                self._write_waiter = None
        if self._error is not None:
            raise self._error

    # --- the connection -----------------------------------------------------------------------
    def get_extra_info(self, name: str) -> Any:
        return self._sock if name == "ssl_object" else None

    def close(self) -> None:
        """Say close_notify (a client then reads a clean end, not a broken one) and close."""
        self._pause_reading()
        if self._writing:
            self._writing = False
            self._loop.remove_writer(self._fd)
        if self._error is None:
            try:
                self._sock.unwrap()  # sends close_notify; it does not wait for the peer's
            except (OSError, ssl.SSLError, ValueError):
                pass  # the peer is gone already, or has not answered with its own: nothing owed
        self._sock.close()

    def _abort(self) -> None:
        """A handshake that failed: no close_notify (there is no session to end)."""
        self._pause_reading()
        self._sock.close()


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)
