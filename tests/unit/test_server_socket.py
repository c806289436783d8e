"""The management listener answers without Nagle's delay: every response is written as headers
then body, and with Nagle on, the body waited ~40 ms for the client's delayed ACK."""

from __future__ import annotations

import asyncio
import socket

from kma.api.listener import listen


async def nodelay_of_an_accepted_connection(sock: socket.socket) -> int:
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = writer.get_extra_info("socket")
        accepted.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(on_connection, sock=sock)
    try:
        _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        value = await asyncio.wait_for(accepted, timeout=10)
        writer.close()
        return value
    finally:
        server.close()
        await server.wait_closed()


def test_connections_accepted_on_the_listener_have_tcp_nodelay() -> None:
    assert asyncio.run(nodelay_of_an_accepted_connection(listen("127.0.0.1", 0))) != 0
