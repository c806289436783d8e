"""Issue 40, what was left: an import under quorum when the key group's policy asks for it, and
large imports written in batches with progress, that a re-run finishes after the KMA was killed
halfway. Two independent clusters (two `kma demo`s, each its own CA, key split and transfer
identity, real processes over TLS); Dallas is filled by a file from a third identity the test
holds, then exports to the offsite cluster."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kma.crypto.transfer import Identity
from kms_client import Conflict, NotFound, PendingQuorumOp
from kms_client.wire import TransferJob
from tests.integration.test_quorum_cli import kma_cli
from tests.support.agents import demo_passphrase, enroll, events, kmip, last_event
from tests.support.kma_process import RunningKma, read_only_db
from tests.support.transfer import file_from, one_tape, quorum, register, text_of, upload

DAY = 86400
GUARDED = [f"Q{n:05d}" for n in range(200)]  # imported under quorum
BULK = [f"K{n:05d}" for n in range(5000)]  # imported in batches, killed halfway


class Sides:
    def __init__(self, dallas: RunningKma, offsite: RunningKma, drive: Path, units: dict[str, Any]) -> None:
        self.dallas, self.offsite, self.drive, self.units = dallas, offsite, drive, units

    def export(self, first: str, last: str) -> str:
        """Dallas's file for the offsite cluster with the tapes `first` to `last`."""
        return (
            self.dallas.client("op").export_transfer_file("offsite", volser_from=first, volser_to=last).file
        )

    def material(self, volser: str) -> tuple[str, bytes]:
        key = self.units[volser]["keys"][0]
        return key["id"], bytes.fromhex(key["material"])


def _policy(kma: RunningKma, name: str, **flags: bool) -> None:
    co = kma.client("co")
    co.create_key_policy(name, encryption_period=30 * DAY, cryptoperiod=365 * DAY, **flags)
    co.create_key_group(name, name)
    co.set_key_group_agents(name, ["t10k-dal-01"])


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sides]:
    dallas = RunningKma.demo_in(tmp_path_factory.mktemp("dallas"))
    offsite = RunningKma.demo_in(tmp_path_factory.mktemp("offsite"))
    try:
        origin = Identity.generate()
        d_so, o_so = dallas.client("so"), offsite.client("so")
        d_id, o_id = d_so.get_transfer_identity(), o_so.get_transfer_identity()
        register(d_so, dallas, "origin", text_of(origin))
        register(d_so, dallas, "offsite", o_id.identity)
        register(o_so, offsite, "dallas", d_id.identity)
        _policy(dallas, "moved", allow_import=True, allow_export=True)
        _policy(offsite, "guarded", allow_import=True, import_needs_quorum=True)
        _policy(offsite, "bulk", allow_import=True)
        units = {v: one_tape(v, os.urandom(32)) for v in GUARDED + BULK}
        d_so.import_transfer_file(
            upload(d_so, file_from(origin, d_id.identity, list(units.values()))), "moved"
        )
        drive = tmp_path_factory.mktemp("drive")
        enroll(offsite, "t10k-dal-01", drive, demo_passphrase(offsite, "t10k-dal-01"))
        yield Sides(dallas, offsite, drive, units)
    finally:
        dallas.stop()
        offsite.stop()


def counts(kma: RunningKma) -> tuple[int, ...]:
    with read_only_db(kma) as db:
        return tuple(
            db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("keys", "data_units", "transfer_files", "data_unit_transfers")
        )


def approve(kma: RunningKma, op_id: str) -> PendingQuorumOp:
    op = None
    for member, passphrase in quorum(kma):
        op = kma.client("qm1").approve_quorum_operation(op_id, member, passphrase)
    assert op is not None
    return op


def test_an_import_into_a_key_group_whose_policy_asks_for_quorum_waits_for_its_approval(
    sides: Sides, tmp_path: Path
) -> None:
    file = sides.export(GUARDED[0], GUARDED[-1])
    before = counts(sides.offsite)
    pending = sides.offsite.client("so").import_transfer_file(
        upload(sides.offsite.client("so"), file), "guarded"
    )
    assert isinstance(pending, PendingQuorumOp) and pending.state == "pending"
    digest = hashlib.sha256(file.encode()).hexdigest()
    # What will run: the partner, the file's digest, its data units and the key group
    assert pending.type == "import_transfer_file" and digest in pending.summary
    assert "'dallas'" in pending.summary and "200 data units" in pending.summary
    assert "key group 'guarded'" in pending.summary and pending.request["sha256"] == digest
    assert counts(sides.offsite) == before  # nothing written
    with kmip(sides.drive) as drive:
        assert drive.locate(data_unit=GUARDED[0]) == []

    # The CLI submits the same file again: a second operation, said to be waiting
    path = tmp_path / "guarded.kmstransfer"
    path.write_text(file, encoding="utf-8")
    code, text, err = kma_cli(
        sides.offsite, tmp_path, "so", "transfer", "import", str(path), "--key-group", "guarded"
    )
    assert code == 0 and "Submitted for approval: quorum operation" in text, err
    second_id = text.split("quorum operation ", 1)[1].split()[0]
    assert counts(sides.offsite) == before

    assert approve(sides.offsite, pending.id).state == "executed"
    landed = counts(sides.offsite)
    assert (landed[0] - before[0], landed[1] - before[1], landed[2] - before[2]) == (200, 200, 1)
    sides.offsite.client("backup").create_backup()  # an import is in a backup before its keys are sent
    with kmip(sides.drive) as drive:
        for volser in GUARDED:
            key_id, material = sides.material(volser)
            assert drive.locate(data_unit=volser) == [key_id]
            assert drive.get(key_id) == material

    # The second approval of the identical file changes nothing
    second = approve(sides.offsite, second_id)
    assert second.state == "executed" and "changed nothing" in str(second.result)
    assert counts(sides.offsite) == landed


def _held_files(kma: RunningKma) -> int:
    with read_only_db(kma) as db:
        return int(db.execute("SELECT count(*) FROM transfer_held_files").fetchone()[0])


def test_a_deleted_import_operation_drops_the_file_it_held(sides: Sides) -> None:
    pending = sides.offsite.client("so").import_transfer_file(
        upload(sides.offsite.client("so"), sides.export("Q00000", "Q00009")), "guarded"
    )
    assert isinstance(pending, PendingQuorumOp) and _held_files(sides.offsite) > 0
    sides.offsite.client("so").delete_quorum_operation(pending.id)
    assert _held_files(sides.offsite) == 0


def _file_row(kma: RunningKma, file_id: str) -> tuple[str, int, int]:
    with read_only_db(kma) as db:
        state, units, keys = db.execute(
            "SELECT state, data_units, keys FROM transfer_files WHERE id = ?", (file_id,)
        ).fetchone()
    return state, units, keys


def _bulk_keys(kma: RunningKma) -> tuple[int, int]:
    """The bulk tapes' keys here, and how many tapes have one."""
    with read_only_db(kma) as db:
        row = db.execute(
            "SELECT count(*), count(DISTINCT data_unit_id) FROM keys WHERE data_unit_id LIKE 'K%'"
        ).fetchone()
    return int(row[0]), int(row[1])


def test_an_import_killed_halfway_is_interrupted_and_resumed_to_its_end(sides: Sides, tmp_path: Path) -> None:
    file = sides.export(BULK[0], BULK[-1])
    so = sides.offsite.client("so")
    job = so.start_transfer_import(upload(so, file), "bulk")
    assert sides.offsite.client("auditor").get_transfer_job(job.id).kind == "import"  # who may see partners
    while job.done < 2000:  # the first batches are committed
        assert job.state == "running", job.error
        time.sleep(0.05)
        job = so.get_transfer_job(job.id)
    port = int(sides.offsite.address.rsplit(":", 1)[1])
    sides.offsite.kill()
    # the drive's agent file names the service port it was enrolled on: the KMA comes back on it
    sides.offsite.service_port = int(
        json.loads((sides.drive / "agent.json").read_text())["kma"].rsplit(":", 1)[1]
    )
    sides.offsite.start(port)

    so = sides.offsite.client("so")
    file_id, (written, tapes) = (
        so.preview_transfer_import(upload(so, file)).file_id,
        _bulk_keys(sides.offsite),
    )
    assert _file_row(sides.offsite, file_id)[0] == "importing"
    assert 2000 <= written < 5000 and written == tapes
    # the job outlived the KMA's process: interrupted, with exactly what it wrote
    stopped = sides.offsite.client("auditor").get_transfer_job(job.id)
    assert (stopped.state, stopped.phase, stopped.done, stopped.total) == (
        "interrupted",
        "writing",
        written,
        5000,
    )
    assert stopped.error is not None and "resume it" in stopped.error.message
    with pytest.raises(Conflict) as told:  # following it says why it ended, as the manager and CLI do
        so.follow_transfer_job(stopped)
    assert "stopped after" in told.value.message
    with pytest.raises(NotFound):
        so.resume_transfer_job("no-such-job")

    seen: list[TransferJob] = []
    resumed = so.follow_transfer_job(so.resume_transfer_job(job.id), seen.append, poll_s=0.05)
    assert resumed.id == job.id and resumed.imported is not None
    assert resumed.imported.imported == 5000 - written  # this run wrote the rest
    counted = [j.done for j in seen if j.phase in ("writing", "done")]  # on from where it stopped
    assert counted == sorted(counted) and counted[0] >= written and counted[-1] == 5000
    assert {j.total for j in seen if j.phase in ("writing", "done")} == {5000} and seen[-1].state == "done"
    assert _bulk_keys(sides.offsite) == (5000, 5000)  # nothing doubled: one key, one tape
    assert _file_row(sides.offsite, file_id) == ("done", 5000, 5000)
    assert _job_files(sides.offsite, job.id) == 0  # the held file went with the import's end
    code, _, err = kma_cli(sides.offsite, tmp_path, "so", "transfer", "resume", job.id)
    assert code != 0 and "only an interrupted job is resumed" in err  # done: nothing to resume

    before = last_event(sides.offsite)
    again = so.import_transfer_file(upload(so, file), "bulk")
    assert not isinstance(again, PendingQuorumOp) and again.imported == 0
    assert [e["condition"] for e in events(sides.offsite, before, "transfer.import")] == ["warning"]

    sides.offsite.client("backup").create_backup()
    with kmip(sides.drive) as drive:
        for volser in BULK:
            key_id, material = sides.material(volser)
            assert drive.get(key_id) == material
        assert drive.locate(data_unit=BULK[-1]) == [sides.material(BULK[-1])[0]]


def _job_files(kma: RunningKma, job_id: str) -> int:
    with read_only_db(kma) as db:
        return int(
            db.execute("SELECT count(*) FROM transfer_job_files WHERE job_id = ?", (job_id,)).fetchone()[0]
        )


def test_an_export_job_reports_its_progress_and_holds_the_file(sides: Sides, tmp_path: Path) -> None:
    op = sides.dallas.client("op")
    seen: list[TransferJob] = []
    job = op.follow_transfer_job(
        op.start_transfer_export("offsite", volser_from=BULK[0], volser_to=BULK[-1]), seen.append, poll_s=0.05
    )
    assert job.state == "done" and job.exported is not None and job.exported.data_units == 5000
    counted = [j.done for j in seen if j.total]
    assert counted == sorted(counted) and counted[-1] == 5000 and {j.total for j in seen if j.total} == {5000}
    assert job.exported.file is None  # not in the answer: downloaded as it is read from the store
    saved = tmp_path / "bulk.kmstransfer"
    assert op.get_transfer_job_file(job.id, saved) == saved.stat().st_size
    lines = saved.read_bytes().splitlines()
    assert json.loads(lines[0])["version"] == 2 and len(lines) > 3  # header, sealed chunks, trailer
    with pytest.raises(FileExistsError):  # a file saved is never overwritten
        op.get_transfer_job_file(job.id, saved)
    assert so_preview_new(sides, saved.read_text()) == 0  # every tape of it is at the partner already


def so_preview_new(sides: Sides, file: str) -> int:
    return sides.offsite.client("so").preview_transfer_import(upload(sides.offsite.client("so"), file)).new


def test_a_policy_that_asks_for_quorum_to_import_says_so_and_keeps_asking(sides: Sides) -> None:
    """One Compliance Officer must not clear the flag, import alone, and set it again."""
    co = sides.offsite.client("co")
    assert co.get_key_policy("guarded").import_needs_quorum
    assert not co.get_key_policy("bulk").import_needs_quorum
    with pytest.raises(Conflict) as refused:
        co.update_key_policy("guarded", import_needs_quorum=False)
    assert "keeps asking" in refused.value.message
    assert co.get_key_policy("guarded").import_needs_quorum
    co.create_key_policy("later", encryption_period=30 * DAY, cryptoperiod=365 * DAY, allow_import=True)
    co.update_key_policy("later", import_needs_quorum=True)  # asking from now on is anyone's to decide
    assert co.get_key_policy("later").import_needs_quorum
    co.update_key_policy("later", description="asks now")  # other changes go on as before
    assert co.get_key_policy("later").import_needs_quorum
