"""The Agents page's health columns come from the KMA: when an agent last asked for anything,
when its certificate expires, and how many keys it was sent this week."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kma.kmip.client import KmipFailure
from tests.support.agents import enroll, kmip, new_passphrase
from tests.support.kma_process import RunningKma


def test_an_agent_that_was_sent_keys_shows_its_health(fresh_kma: RunningKma, tmp_path: Path) -> None:
    op = fresh_kma.client("op")
    # Given an agent that never enrolled: no contact, no certificate, no keys
    quiet = op.get_agent("t10k-dal-02")
    assert (quiet.last_contact_at, quiet.certificate_expires_at, quiet.keys_served_7d) == (None, None, 0)

    # When it enrolls and a drive mounts two tapes, reading each tape's key
    enroll(fresh_kma, "t10k-dal-02", tmp_path / "drive", new_passphrase(fresh_kma, "t10k-dal-02"))
    drive = kmip(tmp_path / "drive")
    try:
        for volser in ("E40001", "E40002"):
            key_id, _issued = drive.write_key(volser)
            assert len(drive.get(key_id)) == 32
    finally:
        drive.close()

    # Then the list shows when it last asked, its certificate's expiry and the keys it was sent
    agent = next(a for a in op.list_agents(limit=100).items if a.id == "t10k-dal-02")
    assert agent.keys_served_7d == 2
    assert agent.last_contact_at is not None
    assert abs(agent.last_contact_at - datetime.now(UTC)) < timedelta(minutes=5)
    assert agent.certificate_expires_at is not None
    assert agent.certificate_expires_at > datetime.now(UTC) + timedelta(days=30)
    assert op.get_agent("t10k-dal-02") == agent


def test_keys_this_week_counts_only_this_weeks_keys(fresh_kma: RunningKma, tmp_path: Path) -> None:
    enroll(fresh_kma, "t10k-dal-02", tmp_path / "drive", new_passphrase(fresh_kma, "t10k-dal-02"))
    drive = kmip(tmp_path / "drive")
    try:
        # Given a drive that was sent a key three times eight days ago
        key_id, _issued = drive.write_key("E40011")
        for _ in range(3):
            drive.get(key_id)
        fresh_kma.advance_clock(8 * 86400)
        # When this week it reads two keys, and asks for one that does not exist
        for volser in ("E40012", "E40013"):
            drive.get(drive.write_key(volser)[0])
        with pytest.raises(KmipFailure):
            drive.get("no-such-key")
    finally:
        drive.close()

    op = fresh_kma.client("op")  # signed in now: the clock moved past any earlier session
    # Then "keys this week" counts the two, not last week's three nor the refused request
    agent = next(a for a in op.list_agents(limit=100).items if a.id == "t10k-dal-02")
    assert agent.keys_served_7d == 2
    assert op.get_agent("t10k-dal-02").keys_served_7d == 2
    # And an agent with nothing this week shows none
    assert next(a for a in op.list_agents(limit=100).items if a.id == "t10k-dal-01").keys_served_7d == 0
