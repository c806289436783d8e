"""An Auditor sees every area and can change nothing: every write route of the live OpenAPI
document is refused with 403 and leaves an audit event naming the route.

The routes come from the served OpenAPI document, not from a list kept by hand, so a write
route added later by any area is covered the day it is served.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.helpers import API, domain_snapshot, error_of, raw_http
from tests.support.kma_process import RunningKma

WRITE_METHODS = ("post", "put", "patch", "delete")
# Session routes every signed-in user may call; they change no managed object.
# Writes a session's roles do not govern: signing in and out, a new key split member's enrolment
# (its one-time code authenticates it; tests/integration/test_key_split_change.py), and a new KMA
# joining the cluster (its one-time KMA passphrase does; tests/integration/test_kma_join_init.py).
# A user's own session and second factor (any user enrols their own authenticator): no records.
SESSION_ROUTES = {
    "/auth/sign-in",
    "/auth/sign-out",
    "/auth/second-factor",
    "/auth/second-factor/confirm",
    "/quorum-operations/{op_id}/enrol",
    "/cluster/join",
    # Starting a verification of the audit chain: an audit reader's own work, which changes no
    # record (tests/integration/test_audit_verification.py).
    "/audit-events/verification",
}
# Reads that are no area of records: the upgrade check asks every KMA of the cluster over TLS before
# a rolling upgrade, a Security Officer's step (docs/upgrades.md), and tells nothing an auditor
# cannot read on the Cluster page.
NOT_AREAS = {"/cluster/upgrade-check"}


def _openapi(kma: RunningKma) -> dict[str, Any]:
    with raw_http(kma) as http:
        spec: dict[str, Any] = http.get("/openapi.json").json()
    return spec


def _concrete(path: str) -> str:
    """A path template with each parameter filled by a placeholder ID (the role check comes first)."""
    parts = ["x-auditor-probe" if p.startswith("{") else p for p in path.split("/")]
    return "/".join(parts)


def test_auditor_sees_every_area(demo_kma: RunningKma) -> None:
    """Given the auditor, when every list and read route without an ID is called, then each answers."""
    auditor = demo_kma.client("auditor")
    spec = _openapi(demo_kma)
    reads = sorted(p.removeprefix(API) for p, ops in spec["paths"].items() if "get" in ops and "{" not in p)
    reads = [p for p in reads if p not in NOT_AREAS]
    assert "/audit-events" in reads and "/keys" in reads and "/users" in reads
    failures = {}
    with raw_http(demo_kma, auditor.token) as http:
        for path in reads:
            # /metrics is at the root, where Prometheus looks; every other route under /api/v1
            response = http.get(f"https://{demo_kma.address}{path}" if path == "/metrics" else path)
            if not response.is_success:
                failures[path] = (response.status_code, response.text[:200])
    assert failures == {}, f"areas the auditor cannot read: {failures}"

    # And the three histories, for a real key, tape and drive.
    key = next(k for k in auditor.iter_keys(state="destroyed"))
    assert auditor.key_history(key.id).state == "destroyed"
    assert auditor.data_unit_history("E00005").lanes
    assert auditor.agent_history("t10k-dal-01").events


def test_auditor_can_change_nothing_and_every_refusal_is_audited(demo_kma: RunningKma) -> None:
    auditor = demo_kma.client("auditor")
    spec = _openapi(demo_kma)
    writes = sorted(
        (method.upper(), path)
        for path, ops in spec["paths"].items()
        for method in ops
        if method in WRITE_METHODS and path.removeprefix(API) not in SESSION_ROUTES
    )
    assert len(writes) >= 20, writes  # the foundation alone has 20 write routes
    assert ("POST", f"{API}/audit-events/prune") in writes
    before_id = auditor.list_audit_events(limit=1).items[0].id
    unchanged = domain_snapshot(demo_kma)

    sent = []
    with raw_http(demo_kma, auditor.token) as http:
        for method, path in writes:
            url = _concrete(path)
            response = http.request(method, url.removeprefix(API), json={})
            assert response.status_code == 403, f"{method} {path}: {response.status_code} {response.text}"
            assert error_of(response)["code"] == "forbidden"
            sent.append(f"{method} {url}: forbidden:")

    assert domain_snapshot(demo_kma) == unchanged, "a refused write changed the store"
    refusals = [
        e.message
        for e in auditor.iter_audit_events(
            after_id=before_id, entity_id="auditor", operation="api.refused", limit=1000
        )
    ]
    missing = [s for s in sent if not any(m.startswith(s) for m in refusals)]
    assert missing == [], f"refusals without an audit event: {missing}"


@pytest.mark.parametrize("user", ["co", "so"])
def test_other_audit_readers_can_browse_and_verify(demo_kma: RunningKma, user: str) -> None:
    client = demo_kma.client(user)
    assert client.verify_audit_chain().intact
    assert client.list_audit_events(limit=5).total > 0
