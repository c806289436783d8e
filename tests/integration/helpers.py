"""What the acceptance tests share: raw HTTP with the pinned CA, a read-only look at the store,
and the contract's error shape.

The store is opened the way an auditor with file access would: read-only (`mode=ro`), so a test
never changes what it inspects.
"""

from __future__ import annotations

import contextlib
from typing import Any

import httpx

from kms_client.trust import ssl_context_for
from tests.support.kma_process import RunningKma, read_only_db
from tests.support.waiting import wait_until

API = "/api/v1"
# docs/api.md, "Conventions": every error code and the status it comes with.
ERROR_STATUS = {
    "bad_request": 400,
    "validation_failed": 422,
    "unauthenticated": 401,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "conflict": 409,
    "payload_too_large": 413,
    "locked_out": 429,
    "kma_locked": 503,
    "cluster_unavailable": 503,
    "internal": 500,
}
# The tables that hold what users manage; audit_events and sessions are left out on purpose
# (a refusal writes an audit event, a sign-in writes a session).
DOMAIN_TABLES = (
    "cluster",
    "key_split_members",
    "sites",
    "kmas",
    "users",
    "key_policies",
    "key_groups",
    "agents",
    "key_group_agents",
    "data_units",
)
# The background pool refill adds unassigned keys at any time; issued keys are what users see.
ISSUED_KEYS = "SELECT * FROM keys WHERE activated_at IS NOT NULL ORDER BY id"


def raw_http(kma: RunningKma, token: str | None = None) -> httpx.Client:
    """An httpx client on the KMA's management API, verifying TLS against the pinned CA only."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(
        base_url=f"https://{kma.address}{API}",
        verify=ssl_context_for(kma.ca_pem),
        headers=headers,
        timeout=30,
    )


def error_of(response: httpx.Response) -> dict[str, str]:
    """The `{"error": {code, message}}` body of a refusal, checked against the contract."""
    assert response.headers.get("content-type", "").startswith("application/json"), response.text
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "message"}, body
    assert isinstance(error["code"], str) and isinstance(error["message"], str), body
    assert error["message"].strip(), body
    assert ERROR_STATUS.get(error["code"]) == response.status_code, (response.status_code, body)
    return dict(error)


def row_counts(kma: RunningKma) -> dict[str, int]:
    """Rows per domain table (issued keys only), for "nothing was written" checks."""
    with read_only_db(kma) as db:
        counts = {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in DOMAIN_TABLES}
        counts["keys (issued)"] = db.execute(
            "SELECT count(*) FROM keys WHERE activated_at IS NOT NULL"
        ).fetchone()[0]
    return counts


def domain_snapshot(kma: RunningKma) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every domain table (and every issued key), to compare before and after."""
    with read_only_db(kma) as db:
        snap = {t: [tuple(r) for r in db.execute(f"SELECT * FROM {t} ORDER BY rowid")] for t in DOMAIN_TABLES}
        snap["keys"] = [tuple(r) for r in db.execute(ISSUED_KEYS)]
    return snap


def last_event_id(kma: RunningKma) -> int:
    with read_only_db(kma) as db:
        return int(db.execute("SELECT coalesce(max(id), 0) FROM audit_events").fetchone()[0])


def anonymous_refusals(kma: RunningKma, event_id: int, expected: int, wait: float = 5.0) -> int:
    """How many refused requests without a valid session since `event_id` the audit trail
    accounts for: recorded one by one, or counted in an `api.throttled` summary (which comes once
    its second is over). Waits up to `wait` s for `expected`."""

    def accounted() -> int:
        with read_only_db(kma) as db:
            one_by_one = db.execute(
                "SELECT count(*) FROM audit_events WHERE id > ? AND entity_id = 'anonymous'", (event_id,)
            ).fetchone()[0]
            summaries = db.execute(
                "SELECT message FROM audit_events WHERE id > ? AND operation = 'api.throttled'", (event_id,)
            ).fetchall()
        return int(one_by_one) + sum(int(row[0].split(" ", 1)[0]) for row in summaries)

    with contextlib.suppress(AssertionError):  # the caller compares the count, whatever it is
        wait_until(lambda: accounted() >= expected, wait, interval=0.2)
    return accounted()


def events_since(kma: RunningKma, event_id: int) -> list[dict[str, Any]]:
    """Audit events written after `event_id` by users (or anonymous callers), leaving out what
    KMAs do on their own (the key pool's refills)."""
    with read_only_db(kma) as db:
        rows = db.execute(
            "SELECT * FROM audit_events WHERE id > ? AND entity_id NOT IN (SELECT id FROM kmas) ORDER BY id",
            (event_id,),
        )
        return [dict(r) for r in rows]
