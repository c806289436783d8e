"""Bounded failures for passphrases, over a real KMA: key split members lock out like users do,
on every path that takes their credentials; parallel guesses never get more checks than the
limit; a lockout says nothing about which users exist; and a stranger's address cannot lock a
Security Officer out of their own workstation.

Different source addresses are real: Linux routes all of 127.0.0.0/8 to loopback, so each client
binds its own 127.0.0.N.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from kms_client import PendingQuorumOp
from kms_client.trust import ssl_context_for
from tests.integration.helpers import API, error_of, events_since, last_event_id
from tests.integration.test_quorum import creds, member_passphrases
from tests.support.kma_process import RunningKma

LOCKOUT = 15 * 60


def http_from(kma: RunningKma, address: str = "127.0.0.1", token: str | None = None) -> httpx.Client:
    """A client on the management API whose connections come from `address`."""
    transport = httpx.HTTPTransport(verify=ssl_context_for(kma.ca_pem), local_address=address)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(
        base_url=f"https://{kma.address}{API}", transport=transport, headers=headers, timeout=60
    )


def sign_in(kma: RunningKma, user_id: str, passphrase: str, address: str = "127.0.0.1") -> httpx.Response:
    with http_from(kma, address) as http:
        return http.post("/auth/sign-in", json={"user_id": user_id, "passphrase": passphrase})


def all_at_once(count: int, call: Any) -> list[httpx.Response]:
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(call, range(count)))


# --- finding 2: key split members ----------------------------------------------------------------
def test_a_key_split_member_locks_out_after_five_wrong_passphrases_on_every_path(
    fresh_kma: RunningKma,
) -> None:
    so, qm1 = fresh_kma.client("so"), fresh_kma.client("qm1")
    op = so.create_user(
        "newbie", "New", ["auditor"], "a good passphrase", credentials=creds(fresh_kma, "bob")
    )
    assert isinstance(op, PendingQuorumOp)
    alice = member_passphrases(fresh_kma)["alice"]
    last = last_event_id(fresh_kma)
    with http_from(fresh_kma, token=qm1.token) as http:
        wrong = [
            http.post(
                f"/quorum-operations/{op.id}/approve", json={"member": "alice", "passphrase": f"guess {i}"}
            )
            for i in range(5)
        ]
        assert [r.status_code for r in wrong] == [422] * 5
        assert "5 of 5 failures" in wrong[-1].json()["error"]["message"]
        # Locked: the right passphrase is refused too, on the approval ...
        right = http.post(
            f"/quorum-operations/{op.id}/approve", json={"member": "alice", "passphrase": alice}
        )
        assert right.status_code == 429
        assert error_of(right)["code"] == "locked_out"
        assert "'alice' is locked out" in right.json()["error"]["message"]
    # ... as credentials on a user's passphrase, on an unlock's path, on a key split change.
    with http_from(fresh_kma, token=so.token) as http:
        for method, path, body in [
            ("PUT", "/users/op/passphrase", {"passphrase": "another good passphrase"}),
            ("PUT", "/cluster/autonomous-unlock", {"enabled": False}),
            (
                "PUT",
                "/cluster/key-split",
                {"threshold": 1, "members": [{"name": "zed"}]},
            ),
        ]:
            response = http.request(
                method,
                path,
                json={
                    **body,
                    "credentials": [
                        {"member": "alice", "passphrase": alice},
                        *({"member": n, "passphrase": p} for n, p in creds(fresh_kma, "bob", "carol")),
                    ],
                },
            )
            assert response.status_code == 429, (path, response.text)
    assert (
        fresh_kma.client("so").get_quorum_operation(op.id).approvals[-1].member == "bob"
    )  # alice never counted

    messages = [e["message"] for e in events_since(fresh_kma, last)]
    assert sum("passphrase of key split member 'alice' is wrong" in m for m in messages) == 5
    assert sum("'alice' is locked out" in m for m in messages) == 4
    # Other members are not affected; after 15 minutes alice's right passphrase works again.
    assert qm1.approve_quorum_operation(op.id, *creds(fresh_kma, "carol")[0]).state == "pending"
    fresh_kma.advance_clock(LOCKOUT + 60)
    assert qm1.approve_quorum_operation(op.id, "alice", alice).state == "executed"


def test_parallel_guesses_at_one_member_get_five_checks_at_most(fresh_kma: RunningKma) -> None:
    so, qm1 = fresh_kma.client("so"), fresh_kma.client("qm1")
    op = so.create_user(
        "newbie", "New", ["auditor"], "a good passphrase", credentials=creds(fresh_kma, "bob")
    )
    assert isinstance(op, PendingQuorumOp)

    def guess(i: int) -> httpx.Response:
        with http_from(fresh_kma, token=qm1.token) as http:
            return http.post(
                f"/quorum-operations/{op.id}/approve", json={"member": "dave", "passphrase": f"g{i}"}
            )

    statuses = Counter(r.status_code for r in all_at_once(24, guess))
    assert statuses == {422: 5, 429: 19}


# --- finding 10a: the sign-in count cannot be raced ---------------------------------------------
def test_24_simultaneous_wrong_sign_ins_get_no_more_checks_than_the_limit(fresh_kma: RunningKma) -> None:
    """From 24 addresses at once (one each, so no address reaches its own limit of 5), the count over
    all addresses lets 20 passphrase checks through and refuses the rest unchecked."""
    last = last_event_id(fresh_kma)
    responses = all_at_once(24, lambda i: sign_in(fresh_kma, "op", f"guess {i}", f"127.0.0.{i + 2}"))
    assert Counter(r.status_code for r in responses) == {401: 20, 429: 4}
    events = [e for e in events_since(fresh_kma, last) if e["operation"] == "auth.sign_in"]
    assert sum("refused: wrong passphrase" in e["message"] for e in events) == 20
    assert sum("refused: locked out" in e["message"] for e in events) == 4


# --- finding 11: no user enumeration, no Security Officer lockout by a stranger ----------------
def test_lockout_answers_alike_for_unknown_and_known_user_ids(fresh_kma: RunningKma) -> None:
    def six_tries(user_id: str) -> list[tuple[int, str]]:
        answers = [sign_in(fresh_kma, user_id, "not the passphrase") for _ in range(6)]
        return [(r.status_code, error_of(r)["message"]) for r in answers]

    known, unknown = six_tries("auditor"), six_tries("nobody-at-all")
    assert known == unknown
    assert [status for status, _ in known] == [401] * 5 + [429]


def test_a_stranger_cannot_lock_a_security_officer_out_of_their_own_workstation(
    fresh_kma: RunningKma,
) -> None:
    right = fresh_kma.passphrases["so"]
    stranger = [sign_in(fresh_kma, "so", f"guess {i}", "127.0.0.66") for i in range(5)]
    assert [r.status_code for r in stranger] == [401] * 5
    assert sign_in(fresh_kma, "so", right, "127.0.0.66").status_code == 429  # locked there ...
    assert sign_in(fresh_kma, "so", right, "127.0.0.1").status_code == 200  # ... not here
    events = fresh_kma.client("auditor").list_audit_events(operation="auth.sign_in", subject_id="so").items
    refusals = [e for e in events if e.condition == "error"]
    assert refusals[0].entity_address == "127.0.0.66"
    assert "refused: locked out" in refusals[0].message
    assert "5 of 5 from 127.0.0.66 (now locked out)" in refusals[1].message
