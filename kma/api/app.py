"""The FastAPI application of one KMA's management listener."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kma import __version__
from kma.api import errors
from kma.api.routes import ROUTERS
from kma.appliance import Appliance

MAX_BODY = 64 * 1024
PREFIX = "/api/v1"


class BodyLimit:
    """Refuse bodies over MAX_BODY, whether announced by Content-Length or streamed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers", [])).get(b"content-length", b"0")
        if not length.isdigit() or int(length) > MAX_BODY:
            await _too_large(send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > MAX_BODY:
                raise _TooLarge
            return message

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await _too_large(send)


class _TooLarge(Exception):
    pass


async def _too_large(send: Send) -> None:
    body = b'{"error":{"code":"payload_too_large","message":"The request body is over 64 KiB."}}'
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def create_app(kma: Appliance) -> FastAPI:
    app = FastAPI(
        title="KMA management API",
        version=__version__,
        openapi_url=f"{PREFIX}/openapi.json",
        docs_url=f"{PREFIX}/docs",
        redoc_url=None,
    )
    app.state.kma = kma
    errors.install(app)
    for router in ROUTERS:
        app.include_router(router, prefix=PREFIX)
    app.add_middleware(BodyLimit)
    return app
