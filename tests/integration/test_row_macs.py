"""Rows that grant power carry a MAC only an unlocked KMA can make (issue 26, part 4): a user or a key
group membership written straight into the store grants nothing, and is reported as tampering."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from kma.crypto import hash_passphrase
from kma.crypto.keysplit import seal_share
from kma.kmip.client import KmipFailure
from kma.kmip.enums import ResultReason
from kma.services.sign_in.auth import token_hash
from kms_client import Unauthenticated, ValidationFailed
from tests.integration.test_quorum import creds
from tests.support.agents import demo_passphrase, enroll, kmip, service_address
from tests.support.alert_receivers import WebhookReceiver
from tests.support.cluster import BINARY, execute, first_node
from tests.support.kma_process import RunningKma, run_kma
from tests.support.waiting import wait_until

FORGED = "forged passphrase of mallory"


def _write_behind_the_kma(kma: RunningKma, *statements: tuple[str, tuple[object, ...]]) -> None:
    """Rows written with sqlite3 into a stopped KMA's store, as a leaked store file allows."""
    kma.stop()
    db = sqlite3.connect(kma.data_dir / "kma.db")
    with db:
        for sql, params in statements:
            db.execute(sql, params)
    db.close()
    kma.start()


def _forged_officer(user_id: str, mac: str | None) -> tuple[str, tuple[object, ...]]:
    return (
        "INSERT INTO users (id, name, roles, passphrase_hash, created_at, updated_at, mac) "
        "VALUES (?, 'Mallory', 'security_officer', ?, 0, 0, ?)",
        (user_id, hash_passphrase(FORGED), mac),
    )


def _audit_verify(kma: RunningKma) -> tuple[int, str]:
    done = run_kma("audit", "verify", "--data-dir", str(kma.data_dir), check=False)
    return done.returncode, done.stdout + done.stderr


def test_a_user_written_into_the_store_cannot_sign_in_and_is_reported(fresh_kma: RunningKma) -> None:
    quorum = creds(fresh_kma, "alice", "bob", "carol")
    made = fresh_kma.client("so").create_user(
        "jo", "Jo Auditor", ["auditor"], "jo's good passphrase", credentials=quorum
    )
    assert made.id == "jo"
    fresh_kma.client("jo", "jo's good passphrase")  # a user made through the API signs in
    assert _audit_verify(fresh_kma)[0] == 0

    _write_behind_the_kma(fresh_kma, _forged_officer("mallory", None), _forged_officer("eve", "00" * 32))
    for user_id in ("mallory", "eve"):
        with pytest.raises(Unauthenticated):
            fresh_kma.client(user_id, FORGED)
    fresh_kma.client("jo", "jo's good passphrase")  # still fine

    code, said = _audit_verify(fresh_kma)
    assert code == 1
    assert "TAMPERED row: users 'mallory' has no MAC" in said
    assert "TAMPERED row: users 'eve' has a MAC that does not verify" in said
    tamper = [e for e in fresh_kma.client("auditor").iter_audit_events() if e.operation == "security.tamper"]
    assert {e.subject_id for e in tamper} >= {"mallory", "eve"}
    warnings = fresh_kma.client("so").get_dashboard().warnings
    assert any("tamper events" in w for w in warnings)


def test_a_session_written_into_the_store_acts_for_nobody(fresh_kma: RunningKma) -> None:
    forged = (
        "INSERT INTO sessions (token_hash, user_id, created_at, expires_at, mac) VALUES (?, 'so', 0, ?, ?)"
    )
    rows = [(forged, (token_hash(f"token-{mac}"), 2**40, mac)) for mac in ("00" * 32, None)]
    _write_behind_the_kma(fresh_kma, *rows)
    for mac in ("00" * 32, None):
        client = fresh_kma.client()
        client.use_token(f"token-{mac}")
        with pytest.raises(Unauthenticated):
            client.list_users()
    assert fresh_kma.client("so").list_users().items  # a real sign-in still works
    tamper = [e for e in fresh_kma.client("auditor").iter_audit_events() if e.operation == "security.tamper"]
    assert [e.subject_type for e in tamper] == ["session"]  # the wrong MAC; one without is refused quietly


def test_a_membership_written_into_the_store_gives_no_key(fresh_kma: RunningKma, tmp_path: Path) -> None:
    enroll(fresh_kma, "t10k-dal-02", tmp_path / "dal", demo_passphrase(fresh_kma, "t10k-dal-02"))
    enroll(fresh_kma, "t10k-bos-01", tmp_path / "bos", demo_passphrase(fresh_kma, "t10k-bos-01"))
    with kmip(tmp_path / "dal") as dal:
        dallas_key = dal.create_and_activate("E40001")  # in backup-dallas

    forged = "INSERT INTO key_group_agents (key_group_id, agent_id, mac) VALUES ('backup-dallas', ?, ?)"
    _write_behind_the_kma(fresh_kma, (forged, ("t10k-bos-01", "ab" * 32)))
    with kmip(tmp_path / "bos", service_address(fresh_kma)) as bos:
        with pytest.raises(KmipFailure) as hidden:
            bos.get(dallas_key)
        assert hidden.value.reason == ResultReason.ITEM_NOT_FOUND
        assert bos.locate(data_unit="E40001") == []
        with pytest.raises(KmipFailure) as refused:
            bos.create(group="backup-dallas")
        assert refused.value.reason == ResultReason.PERMISSION_DENIED
        assert len(bos.get(bos.create_and_activate("B40001"))) == 32  # its own group still works
    code, said = _audit_verify(fresh_kma)
    assert code == 1 and "key_group_agents 'backup-dallas/t10k-bos-01'" in said


def test_an_alert_channel_altered_in_the_store_gets_no_alert_and_is_reported(fresh_kma: RunningKma) -> None:
    """A leaked store could point a channel at someone else's receiver: the cluster's warnings and the
    audit events an officer chose would go there, signed with the channel's own secret."""
    ours, theirs = WebhookReceiver("the SOC's secret"), WebhookReceiver("the SOC's secret")
    ours.start()
    theirs.start()
    try:
        so = fresh_kma.client("so")
        settings = {"url": ours.url, "ca_pem": ours.tls.ca_pem}
        for name in ("SOC", "NOC"):
            so.add_alert_channel(
                name, "webhook", settings, {"secret": "the SOC's secret"}, audit_classes=["site"]
            )
        moved = next(c.id for c in so.list_alert_channels().items if c.name == "NOC")
        elsewhere = json.dumps({"url": theirs.url, "ca_pem": theirs.tls.ca_pem})
        _write_behind_the_kma(
            fresh_kma, ("UPDATE alert_channels SET settings = ? WHERE id = ?", (elsewhere, moved))
        )

        so = fresh_kma.client("so")
        so.create_site("after-the-leak", "Made once the store was altered")
        wait_until(
            lambda: any("after-the-leak" in a["text"] for a in ours.alerts), 30, "the SOC's channel hears"
        )
        with pytest.raises(ValidationFailed, match="without the KMA"):
            so.send_test_alert(moved)
        assert theirs.alerts == []
    finally:
        ours.stop()
        theirs.stop()
    code, said = _audit_verify(fresh_kma)
    assert code == 1 and f"alert_channels '{moved}'" in said


def test_a_store_from_before_row_macs_keeps_working(fresh_kma: RunningKma, tmp_path: Path) -> None:
    """An upgrade: rows without a MAC are sealed at the first unlock on this version, once, audited."""
    fresh_kma.stop()
    (fresh_kma.data_dir / "rows-sealed").unlink()
    db = sqlite3.connect(fresh_kma.data_dir / "kma.db")
    with db:
        for table in ("users", "key_group_agents", "key_split_members"):
            db.execute(f"UPDATE {table} SET mac = NULL")
    db.close()
    fresh_kma.start()
    fresh_kma.client("so")  # signs in
    enroll(fresh_kma, "t10k-dal-02", tmp_path / "dal", demo_passphrase(fresh_kma, "t10k-dal-02"))
    with kmip(tmp_path / "dal") as dal:
        assert len(dal.get(dal.create_and_activate("E50001"))) == 32
    events = list(fresh_kma.client("auditor").iter_audit_events())
    assert [e.operation for e in events].count("security.rows_sealed") == 1
    assert not [e for e in events if e.operation == "security.tamper"]
    fresh_kma.restart()  # sealed once only
    events = list(fresh_kma.client("auditor").iter_audit_events())
    assert [e.operation for e in events].count("security.rows_sealed") == 1
    assert _audit_verify(fresh_kma)[0] == 0


@pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")
def test_a_user_written_through_rqlite_with_a_node_credential_cannot_sign_in(tmp_path: Path) -> None:
    """A node's leaked `cluster/` folder writes rows into the running cluster: they grant nothing."""
    first, _ = first_node(tmp_path)
    try:
        sql, params = _forged_officer("mallory", "00" * 32)
        execute(first, [[sql, *params]])
        with pytest.raises(Unauthenticated):
            first.client("mallory", FORGED)
        first.client("so")  # the real officer still signs in

        def reported() -> bool:
            events = first.client("auditor").iter_audit_events()
            return any(e.operation == "security.tamper" and e.subject_id == "mallory" for e in events)

        wait_until(reported, 10.0, "the tamper event")
        code, said = _audit_verify(first)
        assert code == 1 and "users 'mallory' has a MAC that does not verify" in said
    finally:
        first.stop()


def test_a_key_split_member_written_into_the_store_does_not_count(fresh_kma: RunningKma) -> None:
    sealed = seal_share((9, bytes(32)), "mallory", FORGED)
    forged = "INSERT INTO key_split_members (name, share_sealed, generation) VALUES ('mallory', ?, 1)"
    _write_behind_the_kma(fresh_kma, (forged, (sealed,)))
    quorum = [*creds(fresh_kma, "alice", "bob"), ("mallory", FORGED)]
    with pytest.raises(ValidationFailed) as refused:
        fresh_kma.client("so").create_user(
            "jo", "Jo", ["auditor"], "jo's good passphrase", credentials=quorum
        )
    assert "'mallory' is not a member of the key split" in str(refused.value)
    tamper = [e for e in fresh_kma.client("auditor").iter_audit_events() if e.operation == "security.tamper"]
    assert "mallory" in {e.subject_id for e in tamper}
