"""The FastAPI application of one KMA's management listener."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastapi import FastAPI
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kma import __version__
from kma.api import errors, openapi
from kma.api.routes import ROUTERS, metrics
from kma.api.transfer_schemas import FILE_IN_JSON as FILE_IN_JSON_TEXT
from kma.appliance import Appliance
from kma.metrics import API_REQUESTS
from kma.services.transfer import transfer_uploads

MAX_BODY = 64 * 1024
PREFIX = "/api/v1"


@dataclass(frozen=True)
class PathLimit:
    """A path's own body limit and what its refusal says. `streamed`: the route reads the body as
    it arrives and refuses it past the limit itself (a transfer upload): a body without
    Content-Length is handed on as it comes, not buffered here first."""

    limit: Callable[[], int]
    message: Callable[[int], str]
    streamed: bool = False


class BodyLimit:
    """Refuse bodies over MAX_BODY with 413 before the app sees them, whether announced by
    Content-Length or streamed (chunked), and audit the refusal like any other.

    A streamed body is read up to the limit first and then handed on: refusing it from inside
    the app is too late, as FastAPI turns any failure while reading a body into a 400. A route
    that reads its body itself (`PathLimit.streamed`) refuses it there, as it comes.
    """

    def __init__(
        self, app: ASGIApp, limit: int = MAX_BODY, paths: dict[str, PathLimit] | None = None
    ) -> None:
        self.app = app
        self.default = PathLimit(lambda: limit, _over)
        self.paths = paths or {}  # path -> its own limit (a transfer upload)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        own = self.paths.get(scope["path"], self.default)
        limit, refusal = own.limit(), own.message
        length = dict(scope.get("headers", [])).get(b"content-length")
        if length is not None:
            if not length.isdigit() or int(length) > limit:
                await _too_large(scope, send, refusal(limit))
                return
            await self.app(scope, receive, send)
            return
        if own.streamed:
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
                await _too_large(scope, send, refusal(limit))
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)


TOO_LARGE = "The request body is over 64 KiB."


def _over(limit: int) -> str:
    return TOO_LARGE if limit == MAX_BODY else f"The request body is over {limit // 2**20} MiB."


FILE_IN_JSON = PathLimit(lambda: MAX_BODY, lambda _limit: FILE_IN_JSON_TEXT + ".")


async def _too_large(scope: Scope, send: Send, message: str) -> None:
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
    # A transfer file goes up as the body of its own request, which reads it as it comes; an import's
    # JSON no longer carries it, and a large one is told so.
    paths = {f"{PREFIX}/transfer-imports{end}": FILE_IN_JSON for end in ("", "/preview", "/jobs")}
    paths[f"{PREFIX}/transfer-uploads"] = PathLimit(
        transfer_uploads.most, transfer_uploads.too_large_message, streamed=True
    )
    app.add_middleware(BodyLimit, paths=paths)
    # outermost: a body refused by BodyLimit counts too
    app.add_middleware(CountRequests, templates=openapi.route_templates(app))
    return app
