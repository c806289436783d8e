"""Lock, unlock and autonomous unlock over a real KMA process that is really restarted.

A locked KMA answers status, sign-in, the quorum's view and approvals, and unlock; everything
else (key service included) gets 503 `kma_locked` until a quorum of the key split unlocks it.
"""

from __future__ import annotations

import pytest

from kms_client import (
    AutonomousUnlock,
    Conflict,
    Forbidden,
    Kma,
    KmaLocked,
    PendingQuorumOp,
    ValidationFailed,
)
from tests.integration.test_quorum import creds
from tests.support.kma_process import RunningKma


def assert_locked_out(kma: RunningKma) -> None:
    """Managers and agents alike get the clear "KMA locked" error; status says why."""
    status = kma.client().get_status()
    assert status.locked and any("locked" in w for w in status.warnings)
    op, so = kma.client("op"), kma.client("so")  # signing in still works
    with pytest.raises(KmaLocked, match="locked"):
        op.list_keys()
    with pytest.raises(KmaLocked):
        op.issue_key("backup-dallas", "E00009")  # what an agent's key request does
    with pytest.raises(KmaLocked):
        so.get_dashboard()
    with pytest.raises(KmaLocked):
        so.create_user(
            "nope", "Nope", ["auditor"], "a good passphrase", credentials=creds(kma, "alice", "bob", "carol")
        )


def assert_serving(kma: RunningKma) -> None:
    assert not kma.client().get_status().locked
    op = kma.client("op")
    assert op.list_keys(limit=1).total > 0
    assert op.issue_key("backup-dallas", "E00009").state == "protect_and_process"


def test_restart_with_autonomous_unlock_off_stays_locked_until_a_quorum_unlocks(
    fresh_kma: RunningKma,
) -> None:
    so = fresh_kma.client("so")
    assert so.get_autonomous_unlock().enabled and fresh_kma.client().get_status().autonomous_unlock
    pending = so.set_autonomous_unlock(False, credentials=creds(fresh_kma, "alice"))
    assert isinstance(pending, PendingQuorumOp) and pending.type == "set_autonomous_unlock"
    so.delete_quorum_operation(pending.id)
    done = so.set_autonomous_unlock(False, credentials=creds(fresh_kma, "alice", "bob", "carol"))
    assert done == AutonomousUnlock(kma_id=so.get_status().kma_id, enabled=False)
    assert not (fresh_kma.data_dir / "unlock.key").exists()

    fresh_kma.restart()
    assert_locked_out(fresh_kma)

    kma_id = fresh_kma.client().get_status().kma_id
    so, qm1 = fresh_kma.client("so"), fresh_kma.client("qm1")
    op = so.unlock_kma(kma_id, credentials=creds(fresh_kma, "alice"))
    assert isinstance(op, PendingQuorumOp) and op.summary == f"Unlock KMA '{kma_id}'"
    with pytest.raises(Conflict, match="already pending"):
        so.unlock_kma(kma_id, credentials=creds(fresh_kma, "bob"))
    assert [o.id for o in qm1.iter_quorum_operations(state="pending")] == [op.id]
    assert qm1.approve_quorum_operation(op.id, *creds(fresh_kma, "dave")[0]).state == "pending"
    assert fresh_kma.client().get_status().locked
    assert qm1.approve_quorum_operation(op.id, *creds(fresh_kma, "erin")[0]).state == "executed"
    assert_serving(fresh_kma)
    assert (
        len(
            fresh_kma.client("auditor").list_audit_events(operation="quorum.execute", subject_id=kma_id).items
        )
        >= 1
    )


def test_restart_with_autonomous_unlock_on_resumes_service_at_once(fresh_kma: RunningKma) -> None:
    assert fresh_kma.client().get_status().autonomous_unlock
    fresh_kma.restart()
    assert_serving(fresh_kma)


def test_autonomous_unlock_can_be_turned_back_on(fresh_kma: RunningKma) -> None:
    so = fresh_kma.client("so")
    so.set_autonomous_unlock(False, credentials=creds(fresh_kma, "alice", "bob", "carol"))
    with pytest.raises(Conflict, match="already off"):
        so.set_autonomous_unlock(False, credentials=creds(fresh_kma, "alice", "bob", "carol"))
    assert so.set_autonomous_unlock(True, credentials=creds(fresh_kma, "carol", "dave", "erin")).enabled  # type: ignore[union-attr]
    fresh_kma.restart()
    assert_serving(fresh_kma)


def test_a_security_officers_lock_holds_across_a_restart_until_a_quorum_unlocks(
    fresh_kma: RunningKma,
) -> None:
    so = fresh_kma.client("so")
    kma_id = so.get_status().kma_id
    with pytest.raises(Forbidden):
        fresh_kma.client("qm1").lock_kma(kma_id)
    with pytest.raises(Conflict, match="not locked"):
        so.unlock_kma(kma_id, credentials=creds(fresh_kma, "alice", "bob", "carol"))
    locked = so.lock_kma(kma_id)
    assert isinstance(locked, Kma) and locked.locked
    assert_locked_out(fresh_kma)
    fresh_kma.restart()  # autonomous unlock is on, but it does not undo a Security Officer's lock
    assert_locked_out(fresh_kma)

    so = fresh_kma.client("so")
    with pytest.raises(ValidationFailed, match="'carol' is wrong"):
        so.unlock_kma(
            kma_id, credentials=[*creds(fresh_kma, "alice", "bob"), ("carol", "not carol's passphrase")]
        )
    unlocked = so.unlock_kma(kma_id, credentials=creds(fresh_kma, "alice", "bob", "carol"))
    assert isinstance(unlocked, Kma) and not unlocked.locked
    assert_serving(fresh_kma)
    events = fresh_kma.client("auditor").list_audit_events(operation="kma.lock", subject_id=kma_id).items
    assert len(events) == 1 and events[0].entity_id == "so"


def test_an_unlock_pending_when_the_kma_restarts_is_settled_not_stuck(fresh_kma: RunningKma) -> None:
    """An unlock submitted while locked holds its approvals in memory only; after a restart it
    fails with the reason, and a new unlock can be submitted."""
    so = fresh_kma.client("so")
    kma_id = so.get_status().kma_id
    so.lock_kma(kma_id)
    op = so.unlock_kma(kma_id, credentials=creds(fresh_kma, "alice"))
    assert isinstance(op, PendingQuorumOp)
    fresh_kma.restart()
    so = fresh_kma.client("so")
    settled = so.get_quorum_operation(op.id)
    assert settled.state == "failed" and "restarted" in (settled.result or "")
    again = so.unlock_kma(kma_id, credentials=creds(fresh_kma, "bob"))
    assert isinstance(again, PendingQuorumOp)
    qm1 = fresh_kma.client("qm1")
    qm1.approve_quorum_operation(again.id, *creds(fresh_kma, "carol")[0])
    assert qm1.approve_quorum_operation(again.id, *creds(fresh_kma, "dave")[0]).state == "executed"
    assert_serving(fresh_kma)
