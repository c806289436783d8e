"""What the data says is what happened: a data unit's Updated date moves when it gets a key; a
shredded tape that gets a key again says so in its history; the demo's policy names its period;
looking up something that does not exist is not an audit event."""

from __future__ import annotations

import pytest

import kms_client
from tests.support.kma_process import RunningKma

DAY = 86400


def test_a_shredded_tape_that_gets_a_key_says_so_and_its_updated_date_moves(fresh_kma: RunningKma) -> None:
    op = fresh_kma.client("op")
    before = op.get_data_unit("E00001")
    assert before.state == "shredded"  # the demo destroyed its only key yesterday
    assert before.updated_at > before.created_at  # and that changed the data unit

    # When a key is issued for it again (a drive writes the tape)
    key = op.issue_key("backup-dallas", "E00001")

    # Then its Updated date moves and its history says it is readable again
    after = op.get_data_unit("E00001")
    assert after.state == "readable_normal"
    assert after.updated_at > before.updated_at
    history = fresh_kma.client("auditor").data_unit_history("E00001")
    said = [e.message for e in history.events if key.id in e.message]
    assert any("was shredded" in m and "readable again" in m for m in said), said


def test_the_demo_policy_names_its_period(demo_kma: RunningKma) -> None:
    policy = demo_kma.client("co").get_key_policy("tape-30d")
    assert policy.encryption_period == 30 * DAY


def test_looking_up_a_missing_volser_is_not_an_audit_event(demo_kma: RunningKma) -> None:
    auditor = demo_kma.client("auditor")
    newest = auditor.list_audit_events(limit=1).items[0].id
    with pytest.raises(kms_client.NotFound):
        auditor.data_unit_history("NOPE99")
    events = list(auditor.iter_audit_events(after_id=newest, entity_id="auditor", limit=100))
    assert not [e for e in events if "NOPE99" in e.message]
