"""Refusals in the audit trail: bounded for strangers, complete for users (issue 10, findings 6,
10b and 15).

Anyone can send requests without a valid session as fast as the network allows: at most 20 a
second are recorded one by one, the rest counted in one `api.throttled` summary that says how
many, from which address and in which second. A refusal with a valid session is always recorded,
under that user, and a refusal about an object names it. X-Forwarded-For is not believed unless
kma.toml names the proxy.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import anonymous_refusals, last_event_id, raw_http
from tests.support.kma_process import RunningKma, read_only_db

FLOOD = 200


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("refusals"))
    yield kma
    kma.stop()


def events_after(kma: RunningKma, event_id: int, operation: str) -> list[dict[str, Any]]:
    with read_only_db(kma) as db:
        rows = db.execute(
            "SELECT * FROM audit_events WHERE id > ? AND operation = ? ORDER BY id", (event_id, operation)
        )
        return [dict(r) for r in rows]


def test_a_flood_of_unauthenticated_requests_is_recorded_at_a_bounded_rate_and_summarised(
    kma: RunningKma,
) -> None:
    last = last_event_id(kma)
    started = time.monotonic()
    with raw_http(kma) as http:
        for n in range(FLOOD):
            assert http.get(f"/no-such-route-{n}").status_code == 404
    seconds = time.monotonic() - started
    assert anonymous_refusals(kma, last, expected=FLOOD) == FLOOD, "some refusals went unaccounted"
    one_by_one = [e for e in events_after(kma, last, "api.refused") if e["entity_id"] == "anonymous"]
    assert len(one_by_one) <= 20 * (int(seconds) + 2), "the flood was recorded one by one"
    summaries = events_after(kma, last, "api.throttled")
    assert summaries and all(
        "from 127.0.0.1" in e["message"] and "in the second from" in e["message"] for e in summaries
    )


def test_refusals_with_a_valid_session_are_all_recorded_under_the_user(kma: RunningKma) -> None:
    op = kma.client("op")
    last = last_event_id(kma)
    with raw_http(kma, op.token) as http:
        for n in range(40):
            assert http.get(f"/no-such-route-{n}").status_code == 404
        assert http.post("/data-units", content=b"x" * (65 * 1024)).status_code == 413
    refused = events_after(kma, last, "api.refused")
    assert len(refused) == 41
    assert {e["entity_id"] for e in refused} == {"op"}, "a refusal with a valid session lost its user"
    assert any("payload_too_large" in e["message"] for e in refused)


def test_a_refusal_about_an_object_names_it(kma: RunningKma) -> None:
    op = kma.client("op")
    key = op.list_keys(limit=1).items[0]
    last = last_event_id(kma)
    with raw_http(kma, op.token) as http:
        assert http.post(f"/keys/{key.id}/destroy", json={}).status_code == 422  # no comment
        oversize = json.dumps({"comment": "x" * 70_000})
        assert http.post(f"/keys/{key.id}/destroy", content=oversize).status_code == 413
    with raw_http(kma) as http:
        assert http.get(f"/keys/{key.id}/history").status_code == 401
    refused = events_after(kma, last, "api.refused")
    assert [(e["entity_id"], e["subject_type"], e["subject_id"]) for e in refused] == [
        ("op", "key", key.id),
        ("op", "key", key.id),
        ("anonymous", "key", key.id),
    ]
    history = kma.client("auditor").key_history(key.id)
    assert any("validation_failed" in (getattr(e, "message", "") or "") for e in history.events)


def test_x_forwarded_for_is_not_believed_unless_configured(kma: RunningKma) -> None:
    last = last_event_id(kma)
    with raw_http(kma, "not-a-session") as http:
        http.headers["X-Forwarded-For"] = "203.0.113.9"
        assert http.get("/keys").status_code == 401
    refused = events_after(kma, last, "api.refused")
    assert [e["entity_address"] for e in refused] == ["127.0.0.1"]


def test_x_forwarded_for_is_believed_from_a_configured_proxy(tmp_path: Path) -> None:
    kma = RunningKma.demo_in(tmp_path, listeners={"trusted_proxies": ["127.0.0.1"]})
    try:
        last = last_event_id(kma)
        with raw_http(kma, "not-a-session") as http:
            http.headers["X-Forwarded-For"] = "203.0.113.9"
            assert http.get("/keys").status_code == 401
        assert [e["entity_address"] for e in events_after(kma, last, "api.refused")] == ["203.0.113.9"]
    finally:
        kma.stop()


# --- refusals that came one event each (issue 26, item 3) ---------------------------------------
STRICT_RATE = 2  # events one by one a second, so a short flood shows the bound
FLOOD_OF_STRANGERS = 40


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(
        tmp_path_factory.mktemp("strict"), listeners={"refusals_per_second": STRICT_RATE}
    )
    yield kma
    kma.stop()


def _sign_in(n: int) -> tuple[str, dict[str, Any]]:
    return "/auth/sign-in", {"user_id": f"guess-{n}", "passphrase": "not the passphrase"}


def _join(n: int) -> tuple[str, dict[str, Any]]:
    return "/cluster/join", {
        "kma_id": f"kma-guess-{n}",
        "passphrase": "not the passphrase",
        "node_csr_pem": "csr",
        "server_csr_pem": "csr",
    }


def _enrol(n: int) -> tuple[str, dict[str, Any]]:
    return f"/quorum-operations/op-guess-{n}/enrol", {
        "member": f"m{n}",
        "code": "ABCD",
        "passphrase": "p" * 12,
    }


@pytest.mark.parametrize(
    ("request_for", "operation"),
    [(_sign_in, "auth.sign_in"), (_join, "kma.join"), (_enrol, "quorum.enrol")],
    ids=["sign-in", "join", "enrol"],
)
def test_strangers_guessing_ids_are_recorded_at_the_bounded_rate(
    strict: RunningKma, request_for: Any, operation: str
) -> None:
    """Sign-ins as random users, joins as random KMAs, enrolments in random operations: each ID
    is new, so no lockout stops them; the audit trail takes them at the rate of the other
    refusals without a session, and a summary counts the rest."""
    last = last_event_id(strict)
    started = time.monotonic()
    with raw_http(strict) as http:
        for n in range(FLOOD_OF_STRANGERS):
            path, body = request_for(n)
            assert http.post(path, json=body).status_code in (401, 404)
    seconds = time.monotonic() - started
    assert anonymous_refusals(strict, last, expected=FLOOD_OF_STRANGERS) == FLOOD_OF_STRANGERS
    one_by_one = events_after(strict, last, operation)
    assert len(one_by_one) <= STRICT_RATE * (int(seconds) + 2), "each guess became its own event"
    assert all(e["entity_id"] == "anonymous" for e in one_by_one)
    assert any("from 127.0.0.1" in e["message"] for e in events_after(strict, last, "api.throttled"))
