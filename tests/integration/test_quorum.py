"""Quorum over a real KMA with the demo's 3-of-5 key split (alice, bob, carol, dave, erin).

Issue 3's acceptance list: a request with M credentials runs at once, with fewer it is pending;
approvals by distinct members run it exactly once, even when they race; a member cannot approve
twice; wrong passphrases, expired and deleted operations never get through; and every step is in
the audit trail.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

import pytest

from kma.crypto import open_share
from kms_client import (
    Conflict,
    Forbidden,
    KmsClient,
    NotFound,
    PendingQuorumOp,
    User,
    ValidationFailed,
)
from tests.support.kma_process import RunningKma

DAY = 86400


def member_passphrases(kma: RunningKma) -> dict[str, str]:
    return {m["name"]: m["passphrase"] for m in kma.demo["key_split"]["members"]}


def creds(kma: RunningKma, *names: str) -> list[tuple[str, str]]:
    passphrases = member_passphrases(kma)
    return [(name, passphrases[name]) for name in names]


def events(kma: RunningKma, **filters: Any) -> list[Any]:
    return list(kma.client("auditor").iter_audit_events(**filters))


def submit_pending_user(so: KmsClient, kma: RunningKma, user_id: str, *members: str) -> PendingQuorumOp:
    op = so.create_user(
        user_id, f"User {user_id}", ["auditor"], "a good passphrase", credentials=creds(kma, *members)
    )
    assert isinstance(op, PendingQuorumOp), op
    return op


def user_exists(kma: RunningKma, user_id: str) -> bool:
    try:
        kma.client("so").get_user(user_id)
    except NotFound:
        return False
    return True


def test_create_user_with_three_credentials_runs_at_once(fresh_kma: RunningKma) -> None:
    so = fresh_kma.client("so")
    user = so.create_user(
        "jo",
        "Jo Auditor",
        ["auditor"],
        "jo's passphrase",
        credentials=creds(fresh_kma, "alice", "bob", "carol"),
    )
    assert isinstance(user, User) and user.id == "jo"
    fresh_kma.client("jo", "jo's passphrase")  # the new user can sign in
    executed = events(fresh_kma, operation="quorum.execute", subject_id="jo")
    assert len(executed) == 1 and executed[0].condition == "success"
    assert "alice, bob, carol" in executed[0].message
    assert fresh_kma.client("so").get_dashboard().pending_quorum_operations == 0


def test_one_credential_makes_it_pending_and_two_more_approvals_run_it_once(fresh_kma: RunningKma) -> None:
    so, qm1, qm2 = fresh_kma.client("so"), fresh_kma.client("qm1"), fresh_kma.client("qm2")
    op = submit_pending_user(so, fresh_kma, "pat", "alice")
    assert op.state == "pending" and op.approvals_needed == 3
    assert [a.member for a in op.approvals] == ["alice"]
    assert op.request == {
        "id": "pat",
        "name": "User pat",
        "roles": ["auditor"],
        "passphrase": "(given; kept only as its hash)",
    }
    assert op.requested_by == "so" and (op.expires_at - op.submitted_at).total_seconds() == DAY
    assert so.get_dashboard().pending_quorum_operations == 1
    assert not user_exists(fresh_kma, "pat")

    op = qm1.approve_quorum_operation(op.id, *creds(fresh_kma, "bob")[0])
    assert op.state == "pending" and len(op.approvals) == 2
    assert not user_exists(fresh_kma, "pat")

    op = qm2.approve_quorum_operation(op.id, *creds(fresh_kma, "carol")[0])
    assert op.state == "executed" and op.result == "created user 'pat' with roles Auditor"
    assert [a.member for a in op.approvals] == ["alice", "bob", "carol"]
    assert user_exists(fresh_kma, "pat")
    fresh_kma.client("pat", "a good passphrase")
    assert so.get_dashboard().pending_quorum_operations == 0

    # A fourth approval finds it done: it never runs a second time.
    with pytest.raises(Conflict, match="executed"):
        qm1.approve_quorum_operation(op.id, *creds(fresh_kma, "dave")[0])
    assert len(events(fresh_kma, operation="quorum.execute", subject_id="pat")) == 1


def test_the_same_member_cannot_approve_twice(fresh_kma: RunningKma) -> None:
    op = submit_pending_user(fresh_kma.client("so"), fresh_kma, "sam2", "alice")
    qm1 = fresh_kma.client("qm1")
    op = qm1.approve_quorum_operation(op.id, *creds(fresh_kma, "bob")[0])
    with pytest.raises(Conflict, match="already approved"):
        qm1.approve_quorum_operation(op.id, *creds(fresh_kma, "bob")[0])
    with pytest.raises(Conflict, match="already approved"):
        fresh_kma.client("qm2").approve_quorum_operation(op.id, *creds(fresh_kma, "alice")[0])
    op = qm1.get_quorum_operation(op.id)
    assert op.state == "pending" and [a.member for a in op.approvals] == ["alice", "bob"]
    refused = [
        e for e in events(fresh_kma, operation="quorum.approve", subject_id=op.id) if e.condition == "error"
    ]
    assert len(refused) == 2 and all("already approved" in e.message for e in refused)


def test_credentials_naming_a_member_twice_are_refused(fresh_kma: RunningKma) -> None:
    so = fresh_kma.client("so")
    with pytest.raises(ValidationFailed, match="counts once"):
        so.create_user(
            "dup",
            "Dup",
            ["auditor"],
            "a good passphrase",
            credentials=creds(fresh_kma, "alice", "alice", "bob"),
        )
    assert not user_exists(fresh_kma, "dup")


@pytest.mark.parametrize("weak", ["password", "password1", "jojojojo", "qwertyuiop"])
def test_a_users_passphrase_follows_the_same_rule_as_set_up(fresh_kma: RunningKma, weak: str) -> None:
    """zxcvbn score 3, as for the first Security Officer and the key split members (issue 26, item 7)."""
    so = fresh_kma.client("so")
    with pytest.raises(ValidationFailed, match="guessable"):
        so.create_user(
            "jo", "Jo Tester", ["auditor"], weak, credentials=creds(fresh_kma, "alice", "bob", "carol")
        )
    assert not user_exists(fresh_kma, "jo")
    with pytest.raises(ValidationFailed, match="guessable"):
        so.set_user_passphrase("op", weak, credentials=creds(fresh_kma, "alice", "bob", "carol"))
    fresh_kma.client("op")  # the old passphrase still works


def test_a_wrong_passphrase_is_refused_and_audited(fresh_kma: RunningKma) -> None:
    so, qm1 = fresh_kma.client("so"), fresh_kma.client("qm1")
    # At submission: nothing is made, and the refusal is in the audit trail.
    with pytest.raises(ValidationFailed, match="passphrase of key split member 'bob' is wrong"):
        so.create_user(
            "wp",
            "Wrong",
            ["auditor"],
            "a good passphrase",
            credentials=[*creds(fresh_kma, "alice", "carol"), ("bob", "not bob's passphrase")],
        )
    assert not user_exists(fresh_kma, "wp")
    assert so.list_quorum_operations().total == 0
    submit = [e for e in events(fresh_kma, operation="quorum.submit") if e.condition == "error"]
    assert len(submit) == 1 and "'bob' is wrong" in submit[0].message and submit[0].entity_id == "so"

    # At approval: the approval is not counted, and the refusal is audited under the operation.
    op = submit_pending_user(so, fresh_kma, "wp", "alice")
    with pytest.raises(ValidationFailed, match="'carol' is wrong"):
        qm1.approve_quorum_operation(op.id, "carol", "not carol's passphrase")
    with pytest.raises(ValidationFailed, match="not a member"):
        qm1.approve_quorum_operation(op.id, "mallory", "whatever it is")
    assert len(qm1.get_quorum_operation(op.id).approvals) == 1
    refused = [
        e for e in events(fresh_kma, operation="quorum.approve", subject_id=op.id) if e.condition == "error"
    ]
    assert {e.entity_id for e in refused} == {"qm1"}
    assert any("'carol' is wrong" in e.message for e in refused) and any(
        "mallory" in e.message for e in refused
    )


def test_an_expired_operation_never_runs(fresh_kma: RunningKma) -> None:
    so, qm1 = fresh_kma.client("so"), fresh_kma.client("qm1")
    op = submit_pending_user(so, fresh_kma, "late", "alice", "bob")
    fresh_kma.advance_clock(DAY + 60)
    so, qm1 = fresh_kma.client("so"), fresh_kma.client("qm1")  # sessions last 30 minutes
    with pytest.raises(Conflict, match="expired"):
        qm1.approve_quorum_operation(op.id, *creds(fresh_kma, "carol")[0])
    op = qm1.get_quorum_operation(op.id)
    assert op.state == "expired" and len(op.approvals) == 2
    assert not user_exists(fresh_kma, "late")
    assert so.get_dashboard().pending_quorum_operations == 0
    expired = events(fresh_kma, operation="quorum.expire", subject_id=op.id)
    assert len(expired) == 1 and "2 of 3 approvals" in expired[0].message
    with pytest.raises(Conflict):
        so.delete_quorum_operation(op.id)


def test_the_lifetime_of_pending_operations_is_configurable(fresh_kma: RunningKma) -> None:
    so = fresh_kma.client("so")
    assert so.get_key_split().operation_lifetime == DAY
    assert so.set_quorum_lifetime(3600).operation_lifetime == 3600
    op = submit_pending_user(so, fresh_kma, "soon", "alice")
    assert (op.expires_at - op.submitted_at).total_seconds() == 3600
    with pytest.raises(ValidationFailed):
        so.set_quorum_lifetime(10)
    fresh_kma.advance_clock(3601)
    assert fresh_kma.client("so").get_quorum_operation(op.id).state == "expired"


def test_a_deleted_operation_never_runs(fresh_kma: RunningKma) -> None:
    so, qm1 = fresh_kma.client("so"), fresh_kma.client("qm1")
    op = submit_pending_user(so, fresh_kma, "gone", "alice", "bob")
    with pytest.raises(Forbidden):
        qm1.delete_quorum_operation(op.id)  # Quorum Members approve; a Security Officer deletes
    so.delete_quorum_operation(op.id)
    with pytest.raises(Conflict, match="deleted"):
        qm1.approve_quorum_operation(op.id, *creds(fresh_kma, "carol")[0])
    assert qm1.get_quorum_operation(op.id).state == "deleted"
    assert not user_exists(fresh_kma, "gone")
    deleted = events(fresh_kma, operation="quorum.delete", subject_id=op.id)
    assert len(deleted) == 1 and deleted[0].entity_id == "so"
    with pytest.raises(NotFound):
        so.delete_quorum_operation("no-such-op")


def test_approvals_racing_from_several_threads_run_it_exactly_once(fresh_kma: RunningKma) -> None:
    """Four approvals race for the two places left: two count, the operation runs once, and the
    other two are refused as executed (never recorded beside an operation that already ran)."""
    so = fresh_kma.client("so")
    approvers = {"bob": "qm1", "carol": "qm2", "dave": "qm3", "erin": "admin"}
    clients = {member: fresh_kma.client(user) for member, user in approvers.items()}
    passphrases = member_passphrases(fresh_kma)
    for round_no in range(5):
        user_id = f"race{round_no}"
        op = submit_pending_user(so, fresh_kma, user_id, "alice")
        start = threading.Barrier(len(clients))
        outcomes: dict[str, str] = {}

        def approve(
            member: str,
            op_id: str = op.id,
            start: threading.Barrier = start,
            outcomes: dict[str, str] = outcomes,
        ) -> None:
            start.wait()
            try:
                outcomes[member] = (
                    clients[member].approve_quorum_operation(op_id, member, passphrases[member]).state
                )
            except Conflict as refused:
                assert "executed" in refused.message, refused.message
                outcomes[member] = "conflict"  # it ran before this approval could be recorded

        threads = [threading.Thread(target=approve, args=(m,)) for m in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        final = so.get_quorum_operation(op.id)
        assert final.state == "executed", (final, outcomes)
        assert len(final.approvals) == 3 and "executed" in outcomes.values(), (final.approvals, outcomes)
        assert sorted(outcomes.values()).count("conflict") == 2, outcomes
        assert user_exists(fresh_kma, user_id)
        executed = [e for e in events(fresh_kma, operation="quorum.execute", subject_id=user_id)]
        assert len(executed) == 1 and executed[0].condition == "success", executed


def test_update_and_passphrase_changes_wait_for_the_quorum(fresh_kma: RunningKma) -> None:
    so, qm1 = fresh_kma.client("so"), fresh_kma.client("qm1")
    op = so.update_user("co", roles=["compliance_officer", "auditor"], credentials=creds(fresh_kma, "alice"))
    assert isinstance(op, PendingQuorumOp) and op.type == "update_user"
    assert op.request == {"id": "co", "roles": ["auditor", "compliance_officer"]}
    assert so.get_user("co").roles == ("compliance_officer",)
    qm1.approve_quorum_operation(op.id, *creds(fresh_kma, "bob")[0])
    assert qm1.approve_quorum_operation(op.id, *creds(fresh_kma, "carol")[0]).state == "executed"
    assert set(so.get_user("co").roles) == {"auditor", "compliance_officer"}

    pending = so.set_user_passphrase("op", "the new operator passphrase")
    assert isinstance(pending, PendingQuorumOp) and "passphrase" in pending.summary
    assert "the new operator passphrase" not in str(pending.request)
    fresh_kma.client("op")  # the old passphrase still works while it is pending
    assert (
        so.set_user_passphrase(
            "op", "the new operator passphrase", credentials=creds(fresh_kma, "carol", "dave", "erin")
        )
        is None
    )
    fresh_kma.client("op", "the new operator passphrase")
    so.delete_quorum_operation(pending.id)


def test_roles_quorum_members_approve_security_officers_submit(fresh_kma: RunningKma) -> None:
    qm1, auditor = fresh_kma.client("qm1"), fresh_kma.client("auditor")
    with pytest.raises(Forbidden):
        qm1.create_user("x", "X", ["auditor"], "a good passphrase", credentials=creds(fresh_kma, "alice"))
    op = submit_pending_user(fresh_kma.client("so"), fresh_kma, "rolecheck", "alice")
    with pytest.raises(Forbidden):
        fresh_kma.client("so").approve_quorum_operation(op.id, *creds(fresh_kma, "bob")[0])
    with pytest.raises(Forbidden):
        auditor.approve_quorum_operation(op.id, *creds(fresh_kma, "bob")[0])
    assert auditor.get_quorum_operation(op.id).state == "pending"  # the auditor sees everything
    assert [o.id for o in qm1.iter_quorum_operations(state="pending")] == [op.id]


def test_shares_are_never_stored_in_the_clear_and_are_wiped_when_it_ends(fresh_kma: RunningKma) -> None:
    so = fresh_kma.client("so")
    op = submit_pending_user(so, fresh_kma, "escrow", "alice", "bob")
    passphrases = member_passphrases(fresh_kma)
    db = sqlite3.connect(f"file:{fresh_kma.data_dir / 'kma.db'}?mode=ro", uri=True)
    try:
        sealed = dict(db.execute("SELECT name, share_sealed FROM key_split_members").fetchall())
        clear = {m: open_share(sealed[m], m, passphrases[m])[1] for m in ("alice", "bob")}
        held = dict(
            db.execute(
                "SELECT member_name, share_escrowed FROM quorum_approvals WHERE op_id = ?", (op.id,)
            ).fetchall()
        )
        assert set(held) == {"alice", "bob"}
        for member, blob in held.items():
            assert blob is not None and clear[member] not in blob
        assert db.execute(
            "SELECT escrow_holder FROM pending_quorum_ops WHERE id = ?", (op.id,)
        ).fetchone() == ("master",)
        assert (
            str(db.execute("SELECT payload FROM pending_quorum_ops WHERE id = ?", (op.id,)).fetchone()).find(
                "a good passphrase"
            )
            == -1
        )

        fresh_kma.client("qm1").approve_quorum_operation(op.id, "carol", passphrases["carol"])
        assert db.execute(
            "SELECT count(*) FROM quorum_approvals WHERE op_id = ? AND share_escrowed IS NOT NULL", (op.id,)
        ).fetchone() == (0,)
        assert db.execute(
            "SELECT escrow_wrapped FROM pending_quorum_ops WHERE id = ?", (op.id,)
        ).fetchone() == (None,)
    finally:
        db.close()


def test_submit_approve_execute_expire_delete_and_refuse_are_all_audited(fresh_kma: RunningKma) -> None:
    so, qm1 = fresh_kma.client("so"), fresh_kma.client("qm1")
    ran = submit_pending_user(so, fresh_kma, "a1", "alice", "bob")
    qm1.approve_quorum_operation(ran.id, *creds(fresh_kma, "carol")[0])
    deleted = submit_pending_user(so, fresh_kma, "a2", "alice")
    so.delete_quorum_operation(deleted.id)
    with pytest.raises(Conflict):  # refused: a deleted operation takes no approvals
        qm1.approve_quorum_operation(deleted.id, *creds(fresh_kma, "bob")[0])
    expired = submit_pending_user(so, fresh_kma, "a3")
    fresh_kma.advance_clock(DAY + 1)
    fresh_kma.client("so").list_quorum_operations()
    seen = {(e.operation, e.condition, e.subject_id) for e in events(fresh_kma, event_class="quorum")}
    seen |= {(e.operation, e.condition, e.subject_id) for e in events(fresh_kma, operation="quorum.execute")}
    assert ("quorum.submit", "success", ran.id) in seen
    assert ("quorum.approve", "success", ran.id) in seen
    assert ("quorum.execute", "success", "a1") in seen
    assert ("quorum.delete", "success", deleted.id) in seen
    assert ("quorum.approve", "error", deleted.id) in seen
    assert ("quorum.expire", "warning", expired.id) in seen
    assert fresh_kma.client("auditor").verify_audit_chain().intact
