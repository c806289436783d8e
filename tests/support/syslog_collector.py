"""A syslog collector for tests: RFC 5425 (TLS), octet-counted frames (RFC 6587), on loopback.

It has its own CA, not the cluster's, as a SIEM would. Like rsyslog or syslog-ng it closes a
connection once the sender has closed it and everything is read. It can be stopped and started
again on the same port, keeping every message it received, to test that a sender resumes; it can
stop reading (`pause`), and die with what it has not read (`die`), as a hung collector that is
then killed.
"""

from __future__ import annotations

import fcntl
import socket
import ssl
import struct
import tempfile
import termios
import threading
from pathlib import Path

from kma.crypto.ca import create_cluster_ca, issue_server_certificate


class SyslogCollector:
    def __init__(self) -> None:
        ca = create_cluster_ca("Test SIEM")
        cert = issue_server_certificate(ca, "siem", ["127.0.0.1"])
        self.ca_pem = ca.cert_pem.decode()
        self._files = tempfile.TemporaryDirectory()
        cert_file, key_file = Path(self._files.name, "cert.pem"), Path(self._files.name, "key.pem")
        cert_file.write_bytes(cert.cert_pem)
        key_file.write_bytes(cert.key_pem)
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._context.load_cert_chain(cert_file, key_file)
        self.messages: list[bytes] = []
        self._lock = threading.Lock()
        self._server: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._reading = threading.Event()
        self._reading.set()
        self.port = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def received(self) -> list[bytes]:
        with self._lock:
            return list(self.messages)

    def start(self) -> None:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(8)
        self.port = server.getsockname()[1]
        self._server = server
        self._spawn(self._accept, server)

    def pause(self) -> None:
        """Stop reading: what senders send stays in the kernel's buffers, acknowledged by TCP."""
        self._reading.clear()

    def unread(self) -> int:
        """Bytes the kernel holds for the collector that it has not read."""
        total = 0
        for conn in list(self._conns):
            try:
                total += struct.unpack("i", fcntl.ioctl(conn.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
            except (OSError, ValueError):
                pass
        return total

    def die(self) -> None:
        """Go down at once, as a killed process: every connection is reset, whatever it held unread
        is lost. `start` brings it back (on the same port, with what it had read)."""
        for conn in self._conns:
            try:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
            conn.close()
        self._conns.clear()
        self._reading.set()  # the readers find their sockets closed and end
        self.stop()

    def stop(self) -> None:
        """Close the listening socket and every connection, as a collector that goes down."""
        server, self._server = self._server, None
        if server is not None:
            try:
                server.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
            except OSError:
                pass
            server.close()
        for conn in self._conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        self._conns.clear()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads.clear()

    def close(self) -> None:
        self.stop()
        self._files.cleanup()

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        thread.start()
        self._threads.append(thread)

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                raw, _ = server.accept()
            except OSError:
                return  # stopped
            try:
                conn = self._context.wrap_socket(raw, server_side=True)
            except (OSError, ssl.SSLError):
                raw.close()
                continue
            self._conns.append(conn)
            self._spawn(self._read, conn)

    def _read(self, conn: socket.socket) -> None:
        buffer = b""
        while True:
            self._reading.wait()
            try:
                chunk = conn.recv(65536)
            except (OSError, ssl.SSLError, ValueError):
                return
            if not chunk:  # the sender closed its end and everything is read: close ours
                conn.close()
                return
            buffer += chunk
            while b" " in buffer:
                length, _, rest = buffer.partition(b" ")
                if len(rest) < int(length):
                    break
                with self._lock:
                    self.messages.append(rest[: int(length)])
                buffer = rest[int(length) :]
