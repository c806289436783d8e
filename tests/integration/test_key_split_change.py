"""Changing the key split: refused with the reason when the new split breaks a rule, authorised by
the old quorum, and afterwards only the new members' credentials work."""

from __future__ import annotations

import pytest

from kms_client import KeySplit, PendingQuorumOp, User, ValidationFailed
from tests.integration.test_quorum import creds
from tests.support.kma_process import RunningKma

NEW = [("alice", "alice's new passphrase"), ("frank", "frank's passphrase"), ("gina", "gina's passphrase")]


@pytest.mark.parametrize(
    ("threshold", "members", "reason"),
    [
        (0, NEW, "threshold must be a whole number of at least 1"),
        (-1, NEW, "threshold must be a whole number of at least 1"),
        (4, NEW, "threshold (4) cannot exceed the number of members (3)"),
        (2, [(f"m{i}", f"passphrase {i}") for i in range(11)], "at most 10 members, not 11"),
        (2, [("alice", "first passphrase"), ("alice", "second passphrase")], "different name"),
        (2, [("alice", "alice's passphrase"), ("bob", "")], "'bob' has an empty passphrase"),
        (1, [], "at least one member"),
    ],
)
def test_a_bad_split_is_refused_with_its_reason_and_audited(
    demo_kma: RunningKma, threshold: int, members: list[tuple[str, str]], reason: str
) -> None:
    so = demo_kma.client("so")
    before = so.get_key_split()
    with pytest.raises(ValidationFailed, match=reason.replace("(", r"\(").replace(")", r"\)")):
        so.change_key_split(threshold, members, credentials=creds(demo_kma, "alice", "bob", "carol"))
    assert so.get_key_split() == before
    refusals = demo_kma.client("auditor").list_audit_events(
        operation="quorum.submit", condition="error", limit=1
    )
    assert reason.split("'", maxsplit=1)[0] in refusals.items[0].message


def test_the_old_quorum_changes_the_split_and_old_shares_stop_working(fresh_kma: RunningKma) -> None:
    so = fresh_kma.client("so")
    leftover = so.create_user(
        "left", "Left", ["auditor"], "a good passphrase", credentials=creds(fresh_kma, "dave")
    )
    assert isinstance(leftover, PendingQuorumOp)

    with pytest.raises(ValidationFailed, match="is wrong"):  # the old quorum must be real
        so.change_key_split(2, NEW, credentials=[*creds(fresh_kma, "alice", "bob"), ("carol", "guess")])
    split = so.change_key_split(2, NEW, credentials=creds(fresh_kma, "alice", "bob", "carol"))
    assert split == KeySplit(
        threshold=2, members=("alice", "frank", "gina"), generation=2, operation_lifetime=86400
    )

    # Operations pending under the old split can never run.
    assert so.get_quorum_operation(leftover.id).state == "failed"
    # Old shares no longer work: removed members, and alice's old passphrase.
    with pytest.raises(ValidationFailed, match="'bob' is not a member"):
        so.create_user(
            "u1", "U1", ["auditor"], "a good passphrase", credentials=creds(fresh_kma, "bob", "carol")
        )
    with pytest.raises(ValidationFailed, match="'alice' is wrong"):
        so.create_user("u1", "U1", ["auditor"], "a good passphrase", credentials=creds(fresh_kma, "alice"))
    user = so.create_user("u1", "U1", ["auditor"], "a good passphrase", credentials=NEW[1:])
    assert isinstance(user, User)

    audit = (
        fresh_kma.client("auditor")
        .list_audit_events(operation="quorum.execute", subject_id="key_split")
        .items
    )
    assert audit and "2 of 3 (alice, frank, gina)" in audit[0].message


def test_a_pending_split_change_runs_when_the_old_quorum_approves(fresh_kma: RunningKma) -> None:
    so, qm1 = fresh_kma.client("so"), fresh_kma.client("qm1")
    op = so.change_key_split(2, NEW, credentials=creds(fresh_kma, "erin"))
    assert isinstance(op, PendingQuorumOp)
    assert op.request == {"threshold": 2, "members": ["alice", "frank", "gina"]}  # never the passphrases
    assert "3 of 5" in op.summary and "2 of 3" in op.summary
    qm1.approve_quorum_operation(op.id, *creds(fresh_kma, "dave")[0])
    with pytest.raises(ValidationFailed):  # a new member is not yet a member of the split
        qm1.approve_quorum_operation(op.id, *NEW[1])
    assert qm1.approve_quorum_operation(op.id, *creds(fresh_kma, "carol")[0]).state == "executed"
    assert so.get_key_split().generation == 2
    so.set_autonomous_unlock(False, credentials=NEW[:2])  # the new quorum is a real one
    fresh_kma.restart()
    so = fresh_kma.client("so")
    assert so.status().locked
    assert not isinstance(so.unlock_kma(so.status().kma_id, credentials=NEW[1:]), PendingQuorumOp)
    assert not so.status().locked
