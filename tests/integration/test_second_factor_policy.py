"""Two-step sign-in required by role (issue 43), over real KMAs: a new cluster requires it of
Security Officers unless its installer said otherwise; such a user without a second factor signs
in but may do nothing except enrol one, and the same session may act once the first code confirms
it; a Security Officer changes the roles under quorum, which applies to open sessions at once; the
policy row forged in the store makes it stricter, never lenient; a store from before the policy
keeps signing in as it did."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from kms_client import PendingQuorumOp, SecondFactorEnrolmentRequired, SecondFactorRequired
from tests.integration.test_quorum import creds
from tests.support.first_setup import ONE_KMA_ANSWERS, ONE_KMA_MEMBER
from tests.support.kma_process import RunningKma, run_kma
from tests.support.totp import STEP, confirmed, mid_step

OFFICER = ("so", "correct horse battery")


@pytest.fixture
def new_cluster(tmp_path: Path) -> Iterator[RunningKma]:
    """`kma init` from answers that say nothing of two-step sign-in: the default."""
    answers = tmp_path / "answers.toml"
    answers.write_text(ONE_KMA_ANSWERS.format(key_pool_size=5).replace("second_factor_roles = []\n", ""))
    run_kma("init", "--data-dir", str(tmp_path / "kma"), "--answers", str(answers))
    kma = RunningKma(
        tmp_path / "kma", {"users": [{"id": "so", "passphrase": OFFICER[1]}]}, tmp_path / "clock"
    )
    kma.start()
    yield kma
    kma.stop()


def test_a_new_clusters_security_officer_enrols_before_doing_anything_else(new_cluster: RunningKma) -> None:
    so = new_cluster.client("so")  # the passphrase alone signs in: there is nothing to ask a code of
    me = so.get_me()
    assert me.second_factor_required and not me.second_factor
    for refused in (so.list_users, so.get_dashboard, lambda: so.list_keys(limit=5)):
        with pytest.raises(SecondFactorEnrolmentRequired, match="requires two-step sign-in"):
            refused()
    totp = confirmed(new_cluster, so)
    assert [u.id for u in so.list_users().items] == ["so"]  # the same session acts now
    assert so.get_second_factor_policy().roles == ("security_officer",)
    with pytest.raises(SecondFactorRequired):  # and the next sign-in needs a code
        new_cluster.client("so")
    new_cluster.advance_clock(STEP)
    client = new_cluster.client()
    client.sign_in("so", OFFICER[1], totp.at(mid_step(new_cluster) * STEP))
    # Other roles are not required: a new auditor signs in with a passphrase and reads.
    client.create_user(
        "aud", "Ann Auditor", ["auditor"], "auditor reads every line", credentials=[ONE_KMA_MEMBER]
    )
    auditor = new_cluster.client("aud", "auditor reads every line")
    assert not auditor.get_me().second_factor_required
    created = next(auditor.iter_audit_events(operation="cluster.create"))
    assert "require two-step sign-in of every security officer" in created.message


def test_a_locked_kma_asks_no_enrolment_of_whoever_unlocks_it(tmp_path: Path) -> None:
    """Autonomous unlock off: a restarted KMA is locked and its Security Officer, not enrolled yet,
    signs in with the passphrase and asks for the unlock; the requirement applies once unlocked."""
    answers = tmp_path / "answers.toml"
    text = ONE_KMA_ANSWERS.format(key_pool_size=5).replace("second_factor_roles = []\n", "")
    answers.write_text("autonomous_unlock = false\n" + text)
    run_kma("init", "--data-dir", str(tmp_path / "kma"), "--answers", str(answers))
    kma = RunningKma(
        tmp_path / "kma", {"users": [{"id": "so", "passphrase": OFFICER[1]}]}, tmp_path / "clock"
    )
    kma.start()
    try:
        so = kma.client("so")
        assert so.get_status().locked
        so.unlock_kma("kma-1", credentials=[ONE_KMA_MEMBER])
        with pytest.raises(SecondFactorEnrolmentRequired):
            so.list_users()
    finally:
        kma.stop()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    running = RunningKma.demo_in(tmp_path_factory.mktemp("second-factor-policy"))
    yield running
    running.stop()


def test_the_roles_change_under_quorum_and_apply_to_open_sessions_at_once(demo: RunningKma) -> None:
    so, auditor = demo.client("so"), demo.client("auditor")
    assert so.get_second_factor_policy().roles == ()  # the demo requires it of nobody
    assert auditor.list_audit_events(limit=1).items
    pending = so.set_second_factor_policy(["auditor"], credentials=creds(demo, "alice"))
    assert isinstance(pending, PendingQuorumOp) and "two-step sign-in of every Auditor" in pending.summary
    assert auditor.list_audit_events(limit=1).items  # not before the quorum approves
    done = so.set_second_factor_policy(["auditor"], credentials=creds(demo, "alice", "bob", "carol"))
    assert done is not None and not isinstance(done, PendingQuorumOp) and done.roles == ("auditor",)
    with pytest.raises(SecondFactorEnrolmentRequired):  # the auditor's open session, at once
        auditor.list_audit_events(limit=1)
    assert auditor.get_me().second_factor_required  # what the manager reads to ask for the enrolment
    required = {u.id: u.second_factor_required for u in so.list_users().items}
    assert required["auditor"] and required["admin"] and not required["so"]  # admin has every role
    confirmed(demo, auditor)
    assert auditor.list_audit_events(limit=1).items
    so.turn_off_second_factor("auditor", credentials=creds(demo, "alice", "bob", "carol"))
    with pytest.raises(SecondFactorEnrolmentRequired):  # off again: back to enrolling
        auditor.list_audit_events(limit=1)
    so.set_second_factor_policy([], credentials=creds(demo, "alice", "bob", "carol"))
    assert auditor.list_audit_events(limit=1).items
    with pytest.raises(Exception, match="Roles must be among"):
        so.set_second_factor_policy(["nobody"], credentials=creds(demo, "alice", "bob", "carol"))


def test_a_policy_forged_in_the_store_is_strict_and_reported(tmp_path: Path) -> None:
    kma = RunningKma.demo_in(tmp_path)
    try:
        kma.stop()
        db = sqlite3.connect(kma.data_dir / "kma.db")
        with db:  # "no role", written without the KMA (the demo's row says the same, sealed)
            db.execute("UPDATE second_factor_policy SET roles = '', mac = 'forged'")
        db.close()
        kma.start()
        so = kma.client("so")
        with pytest.raises(SecondFactorEnrolmentRequired):
            so.list_users()
        confirmed(kma, so)
        assert so.get_second_factor_policy().roles == ("security_officer",)
        tampered = [e.message for e in so.iter_audit_events(operation="security.tamper")]
        assert any("second_factor_policy" in m or "second factor policy" in m for m in tampered)
    finally:
        kma.stop()


def test_a_store_from_before_the_policy_signs_in_as_it_did(tmp_path: Path) -> None:
    """An upgrade: the migration's row says no role and has no MAC; this KMA's `rows-sealed` file is
    from before the list of tables. The first unlock on this version seals the row, no tamper."""
    kma = RunningKma.demo_in(tmp_path)
    try:
        kma.stop()
        db = sqlite3.connect(kma.data_dir / "kma.db")
        with db:
            db.execute("UPDATE second_factor_policy SET roles = '', updated_at = 0, mac = NULL")
        db.close()
        (kma.data_dir / "rows-sealed").write_text("rows that grant power carry a MAC\n")
        kma.start()
        so = kma.client("so")
        assert so.list_users().items and so.get_second_factor_policy().roles == ()
        events = list(so.iter_audit_events())
        sealed = [e.message for e in events if e.operation == "security.rows_sealed"]
        assert len(sealed) == 1 and "second_factor_policy" in sealed[0]
        assert not [e for e in events if e.operation == "security.tamper"]
        assert "table: second_factor_policy" in (kma.data_dir / "rows-sealed").read_text()
    finally:
        kma.stop()


def test_the_cli_signs_an_officer_in_with_a_code_from_a_file(new_cluster: RunningKma, tmp_path: Path) -> None:
    """`kma cluster status` and the other commands that sign in: a user whose two-step sign-in is on
    gives the code with --sign-in-code-file (or types it when asked); a wrong one is refused."""
    totp = confirmed(new_cluster, new_cluster.client("so"))
    (tmp_path / "passphrase").write_text(OFFICER[1] + "\n")

    def status(code: str) -> tuple[int, str]:
        (tmp_path / "code").write_text(code + "\n")
        done = run_kma(
            *("cluster", "status", "--kma", new_cluster.address, "--ca-fingerprint", new_cluster.fingerprint),
            *("--user", "so", "--passphrase-file", str(tmp_path / "passphrase")),
            *("--sign-in-code-file", str(tmp_path / "code"), "--json"),
            check=False,
        )
        return done.returncode, done.stdout + done.stderr

    new_cluster.advance_clock(STEP)  # the confirmation's code is spent: the next step's
    code, said = status("000000" if totp.at(mid_step(new_cluster) * STEP) != "000000" else "111111")
    assert code != 0 and "wrong" in said  # which factor was wrong is not said
    code, said = status(totp.at(mid_step(new_cluster) * STEP))
    assert code == 0, said
    assert "kma-1" in said
