"""Verifying the audit chain in the background (issue 47): an auditor starts it, anyone who may
read the trail follows its progress, requests keep being answered meanwhile, and its result is
the one the whole-chain verification gives, a changed event named with its place in the chain.

A real demo KMA is given 30,000 more events, appended to its chain in its database while it is
stopped, as bench/audit.py builds its millions (every hash by the writer's own function), so the
verification reads several chunks.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from bench.audit import generate
from kms_client import ChainVerification
from tests.integration.test_audit_trail import tamper
from tests.support.cluster import BINARY, replica, three_kmas
from tests.support.kma_process import RunningKma, read_only_db, run_kma
from tests.support.waiting import wait_until

EVENTS = 30_000


@pytest.fixture(scope="module")
def busy_kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("audit-verification"))
    kma.stop()
    generate(kma.data_dir / "kma.db", EVENTS)
    kma.start()
    yield kma
    kma.stop()


def events_in_chain(kma: RunningKma) -> int:
    with read_only_db(kma.data_dir / "kma.db") as db:
        return int(db.execute("SELECT count(*) FROM audit_events").fetchone()[0])


def follow(kma: RunningKma, started: ChainVerification) -> list[ChainVerification]:
    """Every state seen while polling, until the verification has ended."""
    auditor = kma.client("auditor")
    seen = [started]

    def ended() -> bool:
        seen.append(auditor.get_audit_verification())
        return seen[-1].state != "running"

    wait_until(ended, 120, interval=0.05, what="the verification to end")
    return seen


def test_nothing_to_follow_before_a_verification_was_started(busy_kma: RunningKma) -> None:
    none = busy_kma.client("co").get_audit_verification()
    assert none.state == "none" and none.report is None and none.started_by is None


def test_progress_rises_to_the_total_and_the_result_is_the_whole_chain_verification(
    busy_kma: RunningKma,
) -> None:
    before = events_in_chain(busy_kma)
    assert before > EVENTS
    auditor = busy_kma.client("auditor")
    started = auditor.start_audit_verification()
    assert started.state in ("running", "finished") and started.started_by == "auditor"
    seen = follow(busy_kma, started)
    checked = [s.events_checked for s in seen]
    assert checked == sorted(checked), "progress went backwards"
    done = seen[-1]
    assert done.state == "finished" and done.finished_at is not None
    assert done.events_total >= before and done.events_checked == done.events_total
    assert done.report is not None and done.report.intact
    assert done.report.events_checked == done.events_total

    old = auditor.verify_audit_chain()  # the route old clients call, answered within its wait
    assert old.intact and old.events_checked >= done.events_checked
    cli = run_kma("audit", "verify", "--data-dir", str(busy_kma.data_dir), check=False)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert "events checked" in cli.stderr  # its progress, e.g. "30,062 of 30,062 events checked"

    ends = auditor.list_audit_events(operation="audit.verify", limit=5).items
    assert any(e.entity_id == "auditor" and "intact" in e.message for e in ends)


def test_requests_are_answered_while_a_verification_runs(busy_kma: RunningKma) -> None:
    auditor, op = busy_kma.client("auditor"), busy_kma.client("op")
    started = auditor.start_audit_verification()
    joined = busy_kma.client("so").start_audit_verification()  # one per KMA: the second joins it
    assert joined.started_at == started.started_at and joined.started_by == "auditor"
    answered = []
    while auditor.get_audit_verification().state == "running":
        answered.append(auditor.list_audit_events(limit=50).items[0].id)
        answered.append(len(op.list_keys(limit=20).items))
    assert auditor.get_audit_verification().report is not None
    op.create_data_unit("AV0001", "made while the chain was verified")  # a write after it, too
    assert op.get_data_unit("AV0001").description == "made while the chain was verified"


def test_a_changed_event_is_reported_with_its_place_in_the_chain(busy_kma: RunningKma) -> None:
    auditor = busy_kma.client("auditor")
    with read_only_db(busy_kma.data_dir / "kma.db") as db:
        target, seq, kma_id = db.execute(
            "SELECT id, chain_seq, kma_id FROM audit_events WHERE operation = 'key.issue' "
            "ORDER BY id LIMIT 1 OFFSET 8000"
        ).fetchone()
        place = db.execute(
            "SELECT count(*) FROM audit_events WHERE kma_id = ? AND chain_seq <= ?", (kma_id, seq)
        ).fetchone()[0]
    tamper(
        busy_kma,
        "DROP TRIGGER audit_events_no_update",
        f"UPDATE audit_events SET message = 'issued nothing' WHERE id = {target}",
    )
    done = follow(busy_kma, auditor.start_audit_verification())[-1]
    assert done.state == "finished" and done.report is not None
    assert not done.report.intact
    assert done.report.first_bad_event_id == target
    assert done.report.events_checked == done.events_checked == place < done.events_total
    assert f"#{target}" in (done.report.reason or "")

    old = auditor.verify_audit_chain()
    assert (old.intact, old.first_bad_event_id) == (False, target)
    broken = auditor.list_audit_events(operation="audit.verify", condition="error", limit=1).items
    assert broken and f"BROKEN at event #{target}" in broken[0].message


@pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")
def test_a_cluster_kma_verifies_every_kmas_chain_from_its_replica(tmp_path: Path) -> None:
    """On a cluster node the job reads its own replica, which holds every KMA's chain."""
    with three_kmas(tmp_path) as kmas:
        first, second = kmas[0], kmas[1]
        second.client("op").create_data_unit("AVC001", "written through another KMA")

        def on_first() -> int:
            with closing(replica(first)) as db:
                sql = "SELECT count(*) FROM audit_events WHERE kma_id <> ?"
                return int(db.execute(sql, ("kma-dal-1",)).fetchone()[0])

        others = wait_until(on_first, 30, "the other KMAs' events on the first KMA's replica")
        done = follow(first, first.client("auditor").start_audit_verification())[-1]
        assert done.state == "finished" and done.report is not None and done.report.intact
        assert done.events_checked == done.events_total > others
