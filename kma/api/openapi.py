"""The OpenAPI document and the docs page of the management API, as client generators and Swagger UI
read them.

- operationIds are the route functions' names (`sign_in`, `list_keys`): unique, and what a generated
  client calls its methods.
- The bearer token is a security scheme (kma/api/deps.py `BEARER`) on every operation that takes one.
- Each operation lists the errors it can return, derived from what it depends on (a session: 401; a
  role check: 403; the unlocked KMA: 503; a body: 400, 413, 422; ...) plus what it declares itself
  (`CHECKS_PASSPHRASES`), all in the contract's `{"error": {"code", "message"}}` shape.
- The docs page is Swagger UI served from this package's dependency `fastapi-offline` (its static
  files): no script, style sheet or image from another origin, which an isolated appliance network
  could not load and a security appliance's origin must not run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fastapi_offline
from fastapi import APIRouter, FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles

from kma.api import schemas
from kma.api.deps import ROLE_CHECKS, get_appliance, page_request, session_token

ERRORS = {
    400: "Bad request: the body is not JSON, or the cursor is not one this KMA handed out",
    401: "Not signed in, the session expired, or a wrong passphrase",
    403: "The signed-in user's roles do not allow this, or their role requires two-step sign-in and "
    "they have not set it up yet (`second_factor_enrolment_required`)",
    404: "No such object",
    409: "The object's state does not allow this",
    413: "The body is over 64 KiB",
    422: "The request is not valid",
    429: "Locked out after wrong passphrases",
    500: "Internal error (the details are in the KMA's log)",
    503: "The KMA is locked, or the cluster has no majority for a write",
}

# Declared on the routes that check a user's, a key split member's or a KMA's passphrase.
CHECKS_PASSPHRASES: dict[int | str, dict[str, Any]] = {429: {"description": ERRORS[429]}}

DOCS_ASSETS = Path(fastapi_offline.__file__).parent / "static"
# Swagger UI would otherwise fetch a validity badge from a public validator for every document.
SWAGGER_PARAMETERS = {"validatorUrl": None, "persistAuthorization": False}


def _all(dependant: Dependant) -> Iterator[Dependant]:
    yield dependant
    for sub in dependant.dependencies:
        yield from _all(sub)


def error_statuses(route: APIRoute) -> set[int]:
    """The error statuses `route` can answer with (the contract's errors, docs/api.md)."""
    every = list(_all(route.dependant))
    calls: set[Callable[..., Any]] = {d.call for d in every if d.call is not None}
    writes = bool((route.methods or set()) - {"GET", "HEAD"})
    statuses = {500}
    if session_token in calls:
        statuses.add(401)
    if calls & ROLE_CHECKS:
        statuses.add(403)
    if any(d.path_params for d in every):
        statuses |= {404, 422}
    if any(d.query_params for d in every):
        statuses.add(422)
    if page_request in calls:
        statuses.add(400)
    if any(d.body_params for d in every):
        statuses |= {400, 413, 422}
    if get_appliance in calls:
        statuses.add(503)  # a locked KMA serves no management
        if writes:
            statuses.add(409)
    if writes:
        statuses.add(503)  # a cluster KMA without a majority takes no writes
    declared = {int(status) for status in route.responses if str(status).isdigit() and int(status) >= 400}
    return statuses | declared


def _describe_errors(document: dict[str, Any], routes: dict[str, APIRoute]) -> None:
    error_schema = schemas.Error.model_json_schema(ref_template="#/components/schemas/{model}")
    components = document.setdefault("components", {}).setdefault("schemas", {})
    components.update(error_schema.pop("$defs", {}))
    components["Error"] = error_schema
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for item in document["paths"].values():
        for operation in item.values():
            responses = operation["responses"]
            for status in [s for s in responses if int(s) >= 400]:  # FastAPI's, and the declared ones
                del responses[status]
            for status in sorted(error_statuses(routes[operation["operationId"]])):
                responses[str(status)] = {"description": ERRORS[status], "content": content}
    # FastAPI's own 422 shape ({"detail": [...]}), which this API never sends
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)


def route_templates(app: FastAPI) -> dict[str, str]:
    """Each operation's route name (its operationId) -> its path template in the document."""
    return {op["operationId"]: path for path, item in app.openapi()["paths"].items() for op in item.values()}


def install(app: FastAPI, prefix: str, routers: list[APIRouter]) -> None:
    """The document at `{prefix}/openapi.json`, the docs page at `{prefix}/docs` (its files beside it).

    `routers` are the ones the app includes: their routes by name are the document's operations
    (operationIds are route names), however the FastAPI version arranges the included routes.
    """
    routes = {r.name: r for router in routers for r in router.routes if isinstance(r, APIRoute)}

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _describe_errors(FastAPI.openapi(app), routes)  # FastAPI.openapi caches the document
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]
    assets = f"{prefix}/docs/assets"
    app.mount(assets, StaticFiles(directory=DOCS_ASSETS), name="docs-assets")

    @app.get(f"{prefix}/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=f"{prefix}/openapi.json",
            title=f"{app.title}: Swagger UI",
            swagger_js_url=f"{assets}/swagger-ui-bundle.js",
            swagger_css_url=f"{assets}/swagger-ui.css",
            swagger_favicon_url=f"{assets}/favicon.png",
            swagger_ui_parameters=SWAGGER_PARAMETERS,
        )
