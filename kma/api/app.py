"""The FastAPI application of one KMA's management listener."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kma import __version__
from kma.api import errors, schemas
from kma.api.routes import ROUTERS, metrics
from kma.appliance import Appliance

MAX_BODY = 64 * 1024
PREFIX = "/api/v1"


class BodyLimit:
    """Refuse bodies over MAX_BODY with 413 before the app sees them, whether announced by
    Content-Length or streamed (chunked), and audit the refusal like any other.

    A streamed body is read up to the limit first and then handed on: refusing it from inside
    the app is too late, as FastAPI turns any failure while reading a body into a 400.
    """

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers", [])).get(b"content-length")
        if length is not None:
            if not length.isdigit() or int(length) > self.limit:
                await _too_large(scope, send, self.limit)
                return
            await self.app(scope, receive, send)
            return
        buffered: list[Message] = []
        seen = 0
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break  # the client went away: let the app see that
            seen += len(message.get("body", b""))
            if seen > self.limit:
                await _too_large(scope, send, self.limit)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)


TOO_LARGE = "The request body is over 64 KiB."


async def _too_large(scope: Scope, send: Send, limit: int) -> None:
    message = TOO_LARGE if limit == MAX_BODY else f"The request body is over {limit // 2**20} MiB."
    await errors._audit_refusal(Request(scope), "payload_too_large", message)
    error = {"error": {"code": "payload_too_large", "message": message}}
    body = json.dumps(error, separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# Every route may answer with the contract's error shape; saying so in the OpenAPI document
# replaces FastAPI's default 422 schema (`{"detail": [...]}`), which this API never sends.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": schemas.Error, "description": description}
    for status, description in (
        (400, "Bad request (not JSON, or a bad cursor)"), (401, "Not signed in, or the session expired"),
        (403, "The signed-in user's roles do not allow this"), (404, "No such object"),
        (409, "The object's state does not allow this"), (413, "The body is over 64 KiB"),
        (422, "The request is not valid"), (429, "Locked out after failed sign-ins"),
        (500, "Internal error"), (503, "The KMA is locked"),
    )
}  # fmt: skip


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
        app.include_router(router, prefix=PREFIX, responses=ERROR_RESPONSES)
    metrics.install(app, kma)  # GET /metrics, outside /api/v1, where Prometheus looks
    app.add_middleware(BodyLimit)
    return app
