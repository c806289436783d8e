"""kms_client's quorum-protected calls over `httpx.MockTransport`: credentials in the body, and the
result when the request ran versus the `PendingQuorumOp` on 202."""

from __future__ import annotations

import json

import httpx
import pytest

from kms_client import Credential, Kma, PendingQuorumOp, User
from tests.unit.test_client_http import T0, USER, Handler, client_with, make_ca_pem

OP = {
    "id": "9f3a0b12cd",
    "type": "create_user",
    "summary": "Create user 'jo' (Jo) with roles auditor",
    "request": {
        "id": "jo",
        "name": "Jo",
        "roles": ["auditor"],
        "passphrase": "(given; kept only as its hash)",
    },
    "requested_by": "so",
    "submitted_at": T0,
    "updated_at": T0,
    "expires_at": "2026-11-22T07:40:00Z",
    "state": "pending",
    "approvals_needed": 3,
    "approvals": [{"member": "alice", "approved_by": "so", "approved_at": T0}],
    "result": None,
}
KMA = {
    "id": "k1",
    "name": "K1",
    "site_id": "s",
    "management_address": "a:1",
    "service_address": "a:2",
    "version": "0.1.0",
    "locked": False,
    "key_pool_size": 10,
    "pool_ready": 10,
    "created_at": T0,
}


@pytest.fixture(scope="module")
def ca_pem() -> str:
    return make_ca_pem()


def recording(status: int, body: object, seen: list[httpx.Request]) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, json=body) if body is not None else httpx.Response(status)

    return handler


def test_create_user_with_enough_credentials_returns_the_user(ca_pem: str) -> None:
    seen: list[httpx.Request] = []
    client = client_with(ca_pem, recording(201, USER, seen))
    user = client.create_user(
        "so1", "Sam", ["security_officer"], "passphrase", credentials={"alice": "pa", "bob": "pb"}
    )
    assert isinstance(user, User)
    assert json.loads(seen[0].content)["credentials"] == [
        {"member": "alice", "passphrase": "pa"},
        {"member": "bob", "passphrase": "pb"},
    ]


def test_a_202_gives_the_pending_quorum_operation(ca_pem: str) -> None:
    seen: list[httpx.Request] = []
    client = client_with(ca_pem, recording(202, OP, seen))
    op = client.create_user("jo", "Jo", ["auditor"], "passphrase", credentials=[Credential("alice", "pa")])
    assert isinstance(op, PendingQuorumOp) and op.pending and op.approvals[0].member == "alice"
    assert op.request["passphrase"].startswith("(given")
    assert "pa" not in repr(Credential("alice", "pa"))  # passphrases stay out of logs


def test_without_credentials_the_body_is_unchanged(ca_pem: str) -> None:
    seen: list[httpx.Request] = []
    client = client_with(ca_pem, recording(204, None, seen))
    assert client.set_user_passphrase("so1", "new passphrase") is None
    assert json.loads(seen[0].content) == {"passphrase": "new passphrase"}


def test_unlock_and_approve(ca_pem: str) -> None:
    seen: list[httpx.Request] = []
    client = client_with(ca_pem, recording(200, KMA, seen))
    assert isinstance(client.unlock_kma("k1", credentials=[("alice", "pa")]), Kma)
    assert seen[-1].url.path == "/api/v1/kmas/k1/unlock"
    client = client_with(ca_pem, recording(200, {**OP, "state": "executed"}, seen))
    op = client.approve_quorum_operation(OP["id"], "bob", "pb")
    assert op.state == "executed" and not op.pending
    assert seen[-1].url.path == f"/api/v1/quorum-operations/{OP['id']}/approve"
    assert json.loads(seen[-1].content) == {"member": "bob", "passphrase": "pb"}


def test_change_key_split_sends_only_the_new_members_names_and_the_old_quorum(ca_pem: str) -> None:
    seen: list[httpx.Request] = []
    client = client_with(
        ca_pem, recording(202, {**OP, "enrolment_codes": {"a": "CODE-A", "b": "CODE-B"}}, seen)
    )
    change = client.change_key_split(2, ["a", "b"], credentials={"alice": "pa"})
    assert change.op.id == OP["id"] and change.enrolment_codes == {"a": "CODE-A", "b": "CODE-B"}
    assert json.loads(seen[0].content) == {
        "threshold": 2,
        "members": [{"name": "a"}, {"name": "b"}],
        "credentials": [{"member": "alice", "passphrase": "pa"}],
    }


def test_a_new_member_enrols_with_their_code_and_own_passphrase(ca_pem: str) -> None:
    seen: list[httpx.Request] = []
    enrolment = [
        {"member": "a", "enrolled_at": "2026-11-21T07:55:00Z", "enrolled_from": "10.0.0.9"},
        {"member": "b", "enrolled_at": None, "enrolled_from": None},
    ]
    client = client_with(ca_pem, recording(200, {**OP, "enrolment": enrolment}, seen))
    op = client.enrol_key_split_member(OP["id"], "a", "CODE-A", "a's own passphrase")
    assert op.awaiting_enrolment == ("b",) and op.enrolment[0].enrolled
    assert seen[-1].url.path == f"/api/v1/quorum-operations/{OP['id']}/enrol"
    assert json.loads(seen[-1].content) == {
        "member": "a",
        "code": "CODE-A",
        "passphrase": "a's own passphrase",
    }
