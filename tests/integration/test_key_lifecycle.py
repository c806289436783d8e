"""Keys and tapes move through their lifecycles on the KMA's clock, and the rules hold.

The KMA runs on a test clock (`advance_clock`), so a 30-day cryptoperiod passes in a moment.
Sessions last 30 minutes, so after each move of the clock the test signs in again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from kms_client import Conflict, KmsClient, ValidationFailed
from tests.integration.helpers import error_of, raw_http
from tests.support.kma_process import RunningKma, read_only_db

DAY = 86400
ENCRYPTION_PERIOD, CRYPTOPERIOD = 10 * DAY, 30 * DAY


@pytest.fixture(scope="module")
def steady_kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    """One KMA for the tests that never move the clock (each uses its own policy and tapes)."""
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("steady-kma"))
    yield kma
    kma.stop()


def setup_policy(kma: RunningKma, policy: str = "lc-policy", group: str = "lc-group") -> None:
    co = kma.client("co")
    co.create_key_policy(
        policy,
        encryption_period=ENCRYPTION_PERIOD,
        cryptoperiod=CRYPTOPERIOD,
        description="10-day writes, 30-day life",
    )
    co.create_key_group(group, policy)


def later(kma: RunningKma, seconds: int) -> KmsClient:
    """Move the KMA's clock on, and sign the operator in again (the old session has expired)."""
    kma.advance_clock(seconds)
    return kma.client("op")


def stored_material(kma: RunningKma, key_id: str) -> bytes | None:
    with read_only_db(kma) as db:
        row = db.execute("SELECT material_wrapped FROM keys WHERE id = ?", (key_id,)).fetchone()
    assert row is not None, f"key {key_id} is not in the store"
    return row[0]


def test_a_key_goes_from_protect_and_process_to_destroyed_as_its_periods_end(fresh_kma: RunningKma) -> None:
    setup_policy(fresh_kma)
    op = fresh_kma.client("op")
    op.create_data_unit("LC0001", "Cartridge LC0001")
    assert op.get_data_unit("LC0001").state == "no_key"

    # Given a key issued for a tape: it protects and processes, for exactly the policy's periods.
    key = op.issue_key("lc-group", "LC0001")
    assert key.state == "protect_and_process"
    assert (key.key_group_id, key.data_unit_id, key.algorithm, key.compromised) == (
        "lc-group",
        "LC0001",
        "AES-256",
        False,
    )
    assert key.activated_at is not None and key.protect_until is not None and key.deactivate_at is not None
    assert (key.protect_until - key.activated_at).total_seconds() == ENCRYPTION_PERIOD
    assert (key.deactivate_at - key.activated_at).total_seconds() == CRYPTOPERIOD
    assert op.get_data_unit("LC0001").state == "readable_normal"
    assert stored_material(fresh_kma, key.id) is not None

    # An active key cannot be destroyed, and the refusal is audited.
    with pytest.raises(Conflict):
        op.destroy_key(key.id, "too early")
    assert op.get_key(key.id).state == "protect_and_process"

    # When the encryption period is over: read only, and the tape needs a new key for writing.
    op = later(fresh_kma, ENCRYPTION_PERIOD + 60)
    assert op.get_key(key.id).state == "process_only"
    assert op.get_data_unit("LC0001").state == "readable_needs_rekey"
    with pytest.raises(Conflict):
        op.destroy_key(key.id, "still too early")

    # When the cryptoperiod is over: deactivated.
    op = later(fresh_kma, CRYPTOPERIOD - ENCRYPTION_PERIOD)
    assert op.get_key(key.id).state == "deactivated"
    assert op.get_data_unit("LC0001").state == "readable_needs_rekey"
    assert op.list_keys(state="deactivated", data_unit_id="LC0001").total == 1

    # Destroying needs a comment, even now.
    for comment in ("", "   ", "x" * 501):
        with pytest.raises(ValidationFailed):
            op.destroy_key(key.id, comment)
    assert op.get_key(key.id).state == "deactivated"
    assert stored_material(fresh_kma, key.id) is not None

    destroyed = op.destroy_key(key.id, "End of retention")
    assert destroyed.state == "destroyed"
    assert destroyed.destroy_comment == "End of retention"
    assert destroyed.destroyed_at is not None
    assert stored_material(fresh_kma, key.id) is None  # the material itself is gone
    assert op.get_data_unit("LC0001").state == "shredded"
    with pytest.raises(Conflict):
        op.destroy_key(key.id, "twice")

    # The trail tells the story, refusals included.
    events = (
        fresh_kma.client("auditor").list_audit_events(subject_type="key", subject_id=key.id, limit=100).items
    )
    destroys = [(e.condition, e.message) for e in events if e.operation == "key.destroy"]
    assert sum(c == "error" for c, _ in destroys) >= 3  # two before deactivation, one after it was destroyed
    assert [m for c, m in destroys if c == "success"] == [f"destroyed key {key.id}: End of retention"]


def test_a_compromised_key_can_be_destroyed_at_once(steady_kma: RunningKma) -> None:
    setup_policy(steady_kma, "lc-compromise", "lc-compromise")
    op = steady_kma.client("op")
    op.create_data_unit("LC0002")
    key = op.issue_key("lc-compromise", "LC0002")
    with pytest.raises(ValidationFailed):
        op.compromise_key(key.id, "")

    compromised = op.compromise_key(key.id, "Cartridge lost in transit")
    assert compromised.compromised and compromised.state == "protect_and_process"  # still decrypts
    assert op.list_keys(compromised=True, data_unit_id="LC0002").total == 1
    with pytest.raises(Conflict):
        op.compromise_key(key.id, "again")

    destroyed = op.destroy_key(key.id, "Compromised: destroy now")
    assert destroyed.state == "destroyed" and destroyed.compromised
    assert stored_material(steady_kma, key.id) is None
    assert op.get_data_unit("LC0002").state == "shredded"


def test_a_tape_is_shredded_only_when_every_one_of_its_keys_is_destroyed(fresh_kma: RunningKma) -> None:
    setup_policy(fresh_kma)
    op = fresh_kma.client("op")
    op.create_data_unit("LC0003")
    first = op.issue_key("lc-group", "LC0003")

    op = later(fresh_kma, ENCRYPTION_PERIOD + 60)
    assert op.get_data_unit("LC0003").state == "readable_needs_rekey"
    # The tape is mounted for writing again: a new key, and it is readable-normal once more.
    second = op.issue_key("lc-group", "LC0003")
    unit = op.get_data_unit("LC0003")
    assert (unit.state, unit.key_count) == ("readable_normal", 2)

    op = later(fresh_kma, CRYPTOPERIOD + 60)  # past both keys' cryptoperiods
    assert {op.get_key(k.id).state for k in (first, second)} == {"deactivated"}
    op.destroy_key(first.id, "first key retired")
    assert op.get_data_unit("LC0003").state == "readable_needs_rekey"
    op.destroy_key(second.id, "second key retired")
    assert op.get_data_unit("LC0003").state == "shredded"
    assert op.list_data_units(state="shredded", search="LC0003").total == 1


def test_destroy_without_a_comment_is_422_and_changes_nothing(steady_kma: RunningKma) -> None:
    setup_policy(steady_kma, "lc-comment", "lc-comment")
    op = steady_kma.client("op")
    op.create_data_unit("LC0004")
    key = op.issue_key("lc-comment", "LC0004")
    op.compromise_key(key.id, "destroyable")
    with raw_http(steady_kma, op.token) as http:
        for body in ({}, {"comment": None}, {"comment": ""}, {"comment": 5}):
            response = http.post(f"/keys/{key.id}/destroy", json=body)
            assert response.status_code == 422, (body, response.text)
            assert error_of(response)["code"] == "validation_failed"
    assert op.get_key(key.id).state == "protect_and_process"
    assert stored_material(steady_kma, key.id) is not None


def test_policy_periods_cannot_change_through_the_api_or_behind_its_back(steady_kma: RunningKma) -> None:
    setup_policy(steady_kma)
    co = steady_kma.client("co")
    with raw_http(steady_kma, co.token) as http:
        for body in (
            {"encryption_period": 20 * DAY},
            {"cryptoperiod": 60 * DAY},
            {"description": "sneaky", "encryption_period": ENCRYPTION_PERIOD + 1},
        ):
            response = http.patch("/key-policies/lc-policy", json=body)
            assert response.status_code == 409, (body, response.text)
            assert error_of(response)["code"] == "conflict"
    # Other fields still change.
    assert co.update_key_policy("lc-policy", allow_export=True).allow_export

    # Someone with the database file tries the same: the store's trigger refuses it.
    db = sqlite3.connect(steady_kma.data_dir / "kma.db", timeout=30)
    try:
        for column, value in (("encryption_period", 1), ("cryptoperiod", 365 * DAY)):
            with pytest.raises(sqlite3.IntegrityError, match="cannot change once set"):
                db.execute(f"UPDATE key_policies SET {column} = ? WHERE id = 'lc-policy'", (value,))
    finally:
        db.close()

    policy = co.get_key_policy("lc-policy")
    assert (policy.encryption_period, policy.cryptoperiod, policy.description) == (
        ENCRYPTION_PERIOD,
        CRYPTOPERIOD,
        "10-day writes, 30-day life",
    )
    # ... and keys issued now still get the original periods.
    op = steady_kma.client("op")
    op.create_data_unit("LC0005")
    key = op.issue_key("lc-group", "LC0005")
    assert key.protect_until is not None and key.activated_at is not None
    assert (key.protect_until - key.activated_at).total_seconds() == ENCRYPTION_PERIOD
