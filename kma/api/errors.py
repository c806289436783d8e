"""Every error leaves as `{"error": {"code", "message"}}`, and every refusal is audited (a
lookup of something that does not exist is not a refusal).

A refusal is audited under the user whose valid session the request carries (even when it was
refused before the route ran, e.g. an oversize body), with the object it was about as subject
(the route's key, agent, user... ID), so that object's history shows it. Refusals of requests
with no valid session are audited at a bounded rate (kma/services/refusals.py): anyone can send
those as fast as the network allows. Internal failures are logged in full and reported to the
client only as a generic message (PyKMIP's engine does the same with result codes).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from kma.api.deps import bearer_token, client_address
from kma.appliance import Appliance
from kma.audit.record import Condition
from kma.domain.actor import Actor
from kma.errors import ClusterUnavailable, KmaError, Unauthenticated
from kma.metrics import API_REFUSALS
from kma.services import refusals
from kma.services.sign_in import auth

log = logging.getLogger(__name__)


# RFC 9110: a 401 names the scheme that would be accepted (Prometheus and generated clients read it).
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="kma"'}


def error_response(status: int, code: str, message: str) -> JSONResponse:
    if code != "internal":
        API_REFUSALS.labels(code).inc()
    headers = CHALLENGE if status == 401 else None
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


async def _audit_refusal(request: Request, code: str, message: str) -> None:
    """Audit off the event loop: the write waits for its commit (fsync)."""
    await run_in_threadpool(_audit_refusal_sync, request, code, message)


# The API's collections (`/api/v1/keys/{key_id}/...`) -> the audit subject type of their objects.
SUBJECTS = {
    "keys": "key",
    "data-units": "data_unit",
    "agents": "agent",
    "users": "user",
    "key-groups": "key_group",
    "key-policies": "key_policy",
    "kmas": "kma",
    "sites": "site",
    "quorum-operations": "quorum_operation",
    "backups": "backup",
}


def _subject(path: str) -> tuple[str, str] | None:
    """The object a request is about, from its path alone: also for a request refused before
    it was routed (an oversize body)."""
    parts = path.removeprefix("/api/v1/").split("/")
    if len(parts) >= 2 and parts[0] in SUBJECTS and parts[1]:
        return SUBJECTS[parts[0]], parts[1][:200]
    return None


def _audit_refusal_sync(request: Request, code: str, message: str) -> None:
    text = f"{request.method} {request.url.path[:200]}: {code}: {message}"
    kma: Appliance | None = getattr(request.app.state, "kma", None)
    if kma is None:  # set-up mode (kma/setup/api.py): no audit trail yet; the log, at the same rate
        if code in ("unauthenticated", "locked_out"):
            return  # a wrong set-up code: the set-up session logs those, a few per address
        address = client_address(request)
        record, summary = refusals.ANONYMOUS_REQUESTS.admit(address)
        if summary is not None:
            log.info("refused in set-up mode: %s", summary.message)
        if record:
            log.info("refused in set-up mode, from %s: %s", address, text)
        return
    event_class = "security" if code in ("unauthenticated", "forbidden") else "api"
    subject = _subject(request.url.path)
    try:
        actor = getattr(request.state, "actor", None) or _session_user(kma, request)
        if actor is None:
            refusals.audit_anonymous(kma, client_address(request), "api.refused", text, event_class, subject)
        else:
            kma.audit(
                actor,
                "api.refused",
                text,
                condition=Condition.ERROR,
                subject=subject,
                event_class=event_class,
            )
    except ClusterUnavailable as exc:  # a cluster KMA without a majority: one line, not a trace each
        log.warning("could not audit a refusal: %s", exc.message)
    except Exception:  # the refusal still goes out; the failure is in the log
        log.exception("could not audit a refusal")


def _session_user(kma: Appliance, request: Request) -> Actor | None:
    """The user of the request's session, for a refusal that came before the route checked it."""
    try:
        return auth.authenticate(kma, bearer_token(request), client_address(request))
    except Unauthenticated:
        return None


def _validation_message(exc: RequestValidationError) -> tuple[int, str, str]:
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return 400, "bad_request", "The request body is not valid JSON."
    first = errors[0] if errors else {}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "request"
    return 422, "validation_failed", f"{where}: {first.get('msg', 'is not valid')}."


def install(app: FastAPI) -> None:
    @app.exception_handler(KmaError)
    async def kma_error(request: Request, exc: KmaError) -> JSONResponse:
        # A read that finds nothing changed nothing and refused nothing (an auditor looking up
        # a mistyped volser): like a successful read, it is not an audit event.
        lookup_miss = request.method == "GET" and exc.code == "not_found"
        if not exc.audited and not lookup_miss:
            await _audit_refusal(request, exc.code, exc.message)
        return error_response(exc.status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        status, code, message = _validation_message(exc)
        await _audit_refusal(request, code, message)
        return error_response(status, code, message)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        codes = {
            404: "not_found",
            405: "method_not_allowed",
            413: "payload_too_large",
            401: "unauthenticated",
        }
        code = codes.get(exc.status_code, "bad_request")
        message = {404: "There is no such route.", 405: "That method is not allowed here."}.get(
            exc.status_code, str(exc.detail)
        )
        await _audit_refusal(request, code, message)
        return error_response(exc.status_code, code, message)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return error_response(
            500, "internal", "The KMA could not complete this request; the details are in its log."
        )
