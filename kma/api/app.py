"""The FastAPI application of one KMA's management listener."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kma import __version__
from kma.api import errors, openapi
from kma.api.routes import ROUTERS, metrics
from kma.appliance import Appliance
from kma.metrics import API_REQUESTS

MAX_BODY = 64 * 1024
MAX_TRANSFER_BODY = 256 * 2**20 + MAX_BODY  # a transfer file (kma/api/transfer_schemas.py) and its request
PREFIX = "/api/v1"


class BodyLimit:
    """Refuse bodies over MAX_BODY with 413 before the app sees them, whether announced by
    Content-Length or streamed (chunked), and audit the refusal like any other.

    A streamed body is read up to the limit first and then handed on: refusing it from inside
    the app is too late, as FastAPI turns any failure while reading a body into a 400.
    """

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY, larger: dict[str, int] | None = None) -> None:
        self.app = app
        self.limit = limit
        self.larger = larger or {}  # path -> its own limit (a transfer file)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.larger.get(scope["path"], self.limit)
        length = dict(scope.get("headers", [])).get(b"content-length")
        if length is not None:
            if not length.isdigit() or int(length) > limit:
                await _too_large(scope, send, limit)
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
            if seen > limit:
                await _too_large(scope, send, limit)
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
    await errors.error_response(413, "payload_too_large", message)(scope, _no_body, send)


async def _no_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


class CountRequests:
    """`kma_api_requests_total` by route template (`/api/v1/keys/{key_id}`, so one key's ID does not
    make a series of its own), method and status; requests no route matched count as `unmatched`.

    `templates`: each route's name (its operationId) -> its full path in the OpenAPI document; the
    route a request matched is known by name (FastAPI's routes may not carry the routers' prefixes).
    """

    def __init__(self, app: ASGIApp, templates: dict[str, str]) -> None:
        self.app = app
        self.templates = templates

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500  # what the server error middleware sends when the app raises

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            template = self.templates.get(getattr(scope.get("route"), "name", ""), "unmatched")
            API_REQUESTS.labels(template, scope["method"], str(status)).inc()


def create_app(kma: Appliance) -> FastAPI:
    app = FastAPI(
        title="KMA management API",
        version=__version__,
        openapi_url=f"{PREFIX}/openapi.json",
        docs_url=None,  # kma/api/openapi.py serves it from the package, not a CDN
        redoc_url=None,
        generate_unique_id_function=lambda route: route.name,  # operationIds: sign_in, list_keys, ...
    )
    app.state.kma = kma
    errors.install(app)
    for router in ROUTERS:
        app.include_router(router, prefix=PREFIX)
    metrics.install(app, kma)  # GET /metrics, outside /api/v1, where Prometheus looks
    openapi.install(app, PREFIX, [*ROUTERS, metrics.router])  # the document's errors, the docs page
    transfer = {f"{PREFIX}/transfer-imports{end}": MAX_TRANSFER_BODY for end in ("", "/preview", "/jobs")}
    app.add_middleware(BodyLimit, larger=transfer)
    # outermost: a body refused by BodyLimit counts too
    app.add_middleware(CountRequests, templates=openapi.route_templates(app))
    return app
