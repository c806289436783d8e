"""Issue 40, rules kept: a transfer file imported on one KMA of a cluster (rqlite, three real KMAs)
is served by every KMA of it, and importing it again on another KMA changes nothing."""

from __future__ import annotations

import os
from contextlib import closing
from pathlib import Path

import pytest

from kma.crypto.transfer import Identity
from tests.support.agents import enrolled_demo_agent, kmip
from tests.support.cluster import BINARY, not_the_leader, replica, three_kmas
from tests.support.kma_process import RunningKma
from tests.support.transfer import file_from, one_tape, register, text_of, upload
from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")
DAY = 86400


def test_an_import_on_one_kma_is_served_by_every_kma(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    partner = Identity.generate()
    tapes = {f"P{n:05d}": os.urandom(32) for n in range(20)}
    with three_kmas(tmp_path) as kmas:
        first, follower = kmas[0], kmas[2]
        so = first.client("so")
        register(so, first, "partner", text_of(partner))
        co = first.client("co")
        co.create_key_policy(
            "arrivals", encryption_period=30 * DAY, cryptoperiod=365 * DAY, allow_import=True
        )
        co.create_key_group("arrivals", "arrivals")
        co.set_key_group_agents("arrivals", ["t10k-dal-02"])
        units = [one_tape(volser, material) for volser, material in tapes.items()]
        file = file_from(partner, so.get_transfer_identity().identity, units)
        done = so.import_transfer_file(upload(so, file), "arrivals")
        assert (done.imported, done.keys_awaiting_backup) == (len(tapes), 0)  # held by the other KMAs

        agent = enrolled_demo_agent(follower, tmp_path_factory, "t10k-dal-02")
        ids = {u["id"]: u["keys"][0]["id"] for u in units}
        with kmip(agent) as drive:
            wait_until(lambda: drive.locate(data_unit="P00019") != [], 20, what="the import on the follower")
            for volser, material in tapes.items():
                assert drive.locate(data_unit=volser) == [ids[volser]]
                assert drive.get(ids[volser]) == material

        again = kmas[1].client("so").import_transfer_file(upload(kmas[1].client("so"), file), "arrivals")
        assert (again.imported, again.already_here) == (0, len(tapes))


def test_a_job_is_followed_through_another_kma_and_resumed_there_when_its_kma_dies(tmp_path: Path) -> None:
    """A manager polling an import job through another KMA of the cluster sees it; when the KMA
    that runs it is killed halfway, the others show it interrupted with what it wrote, and one of
    them resumes it to its end: each tape has its one key, once."""
    partner = Identity.generate()
    tapes = {f"J{n:05d}": os.urandom(32) for n in range(4000)}
    with three_kmas(tmp_path) as kmas:
        runner, (other, third) = not_the_leader(kmas)  # killing it leaves the cluster writing
        so = other.client("so")
        register(so, other, "partner", text_of(partner))
        co = other.client("co")
        co.create_key_policy("jobs", encryption_period=30 * DAY, cryptoperiod=365 * DAY, allow_import=True)
        co.create_key_group("jobs", "jobs")
        units = [one_tape(volser, material) for volser, material in tapes.items()]
        file = file_from(partner, so.get_transfer_identity().identity, units)

        job = runner.client("so").start_transfer_import(upload(runner.client("so"), file), "jobs")
        watcher = other.client("auditor")
        seen = watcher.get_transfer_job(job.id)  # the job of another KMA, read here
        assert (seen.kind, seen.kma_id) == ("import", job.kma_id)
        wait_until(lambda: watcher.get_transfer_job(job.id).done >= 1000, 120, what="the first batches")
        assert watcher.get_transfer_job(job.id).state == "running"
        runner.kill()

        stopped = wait_until(
            lambda: (j := watcher.get_transfer_job(job.id)).state == "interrupted" and j,
            90,
            what="the job shown interrupted once its KMA is silent",
        )
        with closing(replica(other)) as db:
            here = db.execute("SELECT count(*) FROM keys WHERE data_unit_id LIKE 'J%'").fetchone()[0]
        assert stopped.done == here and 1000 <= here < 4000 and stopped.total == 4000
        assert stopped.error is not None and job.kma_id in stopped.error.message

        resumed = so.follow_transfer_job(so.resume_transfer_job(job.id), poll_s=0.2)
        assert resumed.state == "done" and resumed.done == resumed.total == 4000
        assert resumed.kma_id != job.kma_id  # it ended on the KMA that resumed it
        assert resumed.imported is not None and resumed.imported.imported == 4000 - here
        wait_until(lambda: _keys_per_tape(third) == {1: 4000}, 30, what="the import replicated")
        assert _keys_per_tape(other) == {1: 4000}  # each tape its one key: nothing doubled


def _keys_per_tape(kma: RunningKma) -> dict[int, int]:
    """How many tapes have how many keys."""
    with closing(replica(kma)) as db:
        rows = db.execute(
            "SELECT n, count(*) FROM (SELECT count(*) AS n FROM keys WHERE data_unit_id LIKE 'J%' "
            "GROUP BY data_unit_id) GROUP BY n"
        ).fetchall()
    return {int(n): int(c) for n, c in rows}
