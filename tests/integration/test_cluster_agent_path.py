"""The agent path of a cluster KMA (issue 11): drives get existing keys and new write keys from
the KMA's own pool whether or not it reaches the Raft majority; what it did reaches every KMA
once it can, once. Real `kma serve` processes, each with its own rqlited, on loopback."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from kma.datadir import DataDir
from tests.support.agents import enrolled_demo_agent, kmip, service_address
from tests.support.cluster import (
    BINARY,
    assert_every_kma_agrees,
    outbox_depth,
    processes,
    replica,
)
from tests.support.cluster import three_kmas as cluster_of_three
from tests.support.kma_process import RunningKma, run_kma
from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")

CUT_ID = "kma-dal-2"
TAPES = [f"CUT{n:03d}" for n in range(1, 7)]


@pytest.fixture
def three_kmas(tmp_path: Path) -> Iterator[list[RunningKma]]:
    with cluster_of_three(tmp_path) as kmas:  # CUT_ID is the second
        yield kmas


def _own_pool(kma: RunningKma) -> int:
    with replica(kma) as db:
        sql = "SELECT count(*) FROM keys WHERE kma_id = ? AND key_group_id IS NULL AND destroyed_at IS NULL"
        return int(db.execute(sql, (CUT_ID,)).fetchone()[0])


def _tape_keys(kma: RunningKma) -> dict[str, list[tuple[str, str]]]:
    """Per tape of the test: its keys (ID, issuing KMA) as this KMA's replica has them."""
    with replica(kma) as db:
        marks = ", ".join("?" * len(TAPES))
        rows = db.execute(
            f"SELECT data_unit_id, id, kma_id FROM keys WHERE data_unit_id IN ({marks}) ORDER BY id", TAPES
        ).fetchall()
        units = {r[0] for r in db.execute(f"SELECT id FROM data_units WHERE id IN ({marks})", TAPES)}
    out: dict[str, list[tuple[str, str]]] = {tape: [] for tape in units}
    for unit, key_id, kma_id in rows:
        out.setdefault(unit, []).append((key_id, kma_id))
    return out


def _issue_events(kma: RunningKma) -> list[tuple[int, str]]:
    """(chain seq, key ID) of the cut-off KMA's "issued write key" events."""
    with replica(kma) as db:
        rows = db.execute(
            "SELECT chain_seq, subject_id FROM audit_events WHERE kma_id = ? "
            "AND operation = 'kmip.write_key' AND message LIKE 'issued write key %'",
            (CUT_ID,),
        ).fetchall()
    return [(int(r[0]), str(r[1])) for r in rows]


def _lag_seen(kma: RunningKma, kma_id: str) -> int | None:
    """The depth of `kma_id`'s outbox in `kma`'s topology (None: unknown there)."""
    lag = {k.id: k.replication_lag for k in kma.client("qm1").get_topology().kmas}[kma_id]
    return None if lag is None else lag.depth


@pytest.mark.parametrize("crash", [False, True], ids=["reconnected", "killed-then-restarted"])
def test_a_kma_cut_off_from_the_majority_issues_new_write_keys_from_its_own_pool(
    three_kmas: list[RunningKma], tmp_path_factory: pytest.TempPathFactory, crash: bool
) -> None:
    kmas = three_kmas
    cut = kmas[1]
    agent = enrolled_demo_agent(cut, tmp_path_factory, "t10k-dal-01")
    wait_until(lambda: _own_pool(cut) >= 20, 60.0, "the cut-off KMA's own pool filled")
    stopped: list[int] = []
    try:
        with kmip(agent) as drive:
            old_key, issued = drive.write_key("OLD001")
            assert issued
            old_material = drive.get(old_key)

            # The other two KMAs and their Raft nodes stop answering: no majority here.
            stopped = [pid for k in kmas if k is not cut for pid in processes(k)]
            for pid in stopped:
                os.kill(pid, signal.SIGSTOP)

            assert drive.get(old_key) == old_material  # an existing key, from the local replica
            new_keys = {}
            for tape in TAPES[:3]:  # new tapes: new write keys from this KMA's own pool
                key_id, issued = drive.write_key(tape)
                assert issued
                drive.get(key_id)  # the drive reads the key it was just given
                assert drive.locate(data_unit=tape) == [key_id]
                assert drive.write_key(tape) == (key_id, False)  # mounted again: the same key
                new_keys[tape] = key_id
            assert len(set(new_keys.values())) == len(new_keys)
            assert outbox_depth(cut) >= 3 * 4  # on the KMA's own disk, waiting for the cluster

        if crash:  # the KMA dies with unshipped assignments; it comes back once the others do
            cut.kill()
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        stopped = []
        if crash:
            cut.start()
        with kmip(agent, service_address(cut)) as drive:  # the same keys after a restart; new tapes: new keys
            for tape, key_id in new_keys.items():
                assert drive.write_key(tape) == (key_id, False)
            for tape in TAPES[3:]:
                key_id, issued = drive.write_key(tape)
                assert issued
                new_keys[tape] = key_id
        assert len(set(new_keys.values())) == len(TAPES)

        wanted = {tape: [(key_id, CUT_ID)] for tape, key_id in new_keys.items()}
        for kma in kmas:  # every KMA holds every assignment: each tape one key, none issued twice
            wait_until(lambda k=kma: _tape_keys(k) == wanted, 15.0, "the cut-off KMA's keys everywhere")
            issued_events = _issue_events(kma)  # each once, in the cut-off KMA's chain
            assert sorted(key_id for _, key_id in issued_events) == sorted([old_key, *new_keys.values()])
            assert len({seq for seq, _ in issued_events}) == len(issued_events)
        wait_until(lambda: outbox_depth(cut) == 0, 10.0, "the outbox empty")
        for kma in kmas:  # and every KMA tells the cut-off KMA's lag (as it last reported it): none now
            wait_until(lambda k=kma: _lag_seen(k, CUT_ID) == 0, 5.0, "its lag known everywhere")
        assert_every_kma_agrees(kmas)
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)


def test_a_drives_write_key_then_get_and_locate_at_once_on_a_follower(
    three_kmas: list[RunningKma], tmp_path_factory: pytest.TempPathFactory
) -> None:
    kmas = three_kmas
    follower = kmas[2]
    assert DataDir(follower.data_dir).identity().kma_id == "kma-dal-3"
    agent = enrolled_demo_agent(follower, tmp_path_factory, "t10k-dal-02")
    with kmip(agent) as drive:
        for tape in TAPES:
            key_id, issued = drive.write_key(tape)
            assert issued
            assert len(drive.get(key_id)) == 32
            assert drive.locate(data_unit=tape) == [key_id]
            assert drive.get_attributes(key_id)["State"] == 2  # Active


def test_an_assignment_the_cluster_refuses_is_an_error_event_on_every_kma_and_shipping_goes_on(
    three_kmas: list[RunningKma], tmp_path_factory: pytest.TempPathFactory
) -> None:
    kmas = three_kmas
    cut = kmas[1]
    agent = enrolled_demo_agent(cut, tmp_path_factory, "t10k-dal-01")
    wait_until(lambda: _own_pool(cut) >= 20, 60.0, "the KMA's own pool filled")
    # Meanwhile the cluster changes the KMA's unassigned pool keys (here: an operator marks every one
    # compromised through another KMA; a change written into the store without a KMA would be a forged
    # key row, served to nobody), while the KMA's pool still holds them in memory: its next assignment
    # is refused.
    with replica(kmas[0]) as db:
        sql = "SELECT id FROM keys WHERE kma_id = ? AND key_group_id IS NULL AND destroyed_at IS NULL"
        pool = [str(r[0]) for r in db.execute(sql, (CUT_ID,))]
    operator = kmas[0].client("op")
    for key_id in pool:
        operator.compromise_key(key_id, "changed in the cluster while the KMA was cut off")
    with kmip(agent) as drive:
        refused_key, issued = drive.write_key("REF001")
        assert issued

    def error_events(kma: RunningKma) -> list[str]:
        with replica(kma) as db:
            rows = db.execute(
                "SELECT message FROM audit_events WHERE kma_id = ? AND subject_id = ? "
                "AND condition = 'error'",
                (CUT_ID, refused_key),
            ).fetchall()
        return [str(r[0]) for r in rows]

    for kma in kmas:
        (message,) = wait_until(lambda k=kma: error_events(k), 10.0, "the refusal's error event everywhere")
        assert message.startswith("not recorded in the cluster: ")
        assert f"issued write key {refused_key}" in message
    wait_until(lambda: outbox_depth(cut) == 0, 10.0, "the outbox empty: shipping went on")
    for kma in kmas:  # the tape and the key kept for an officer to resolve, and the officer told
        with replica(kma) as db:
            kept = db.execute("SELECT key_id, data_unit_id, agent_id FROM unrecorded_bindings").fetchall()
        assert [tuple(r) for r in kept] == [(refused_key, "REF001", "t10k-dal-01")]
        assert any("tapes were written with a key" in w for w in kma.client("so").get_dashboard().warnings)
    with kmip(agent) as drive:  # a later read of that tape finds the key it was written with
        assert drive.locate(data_unit="REF001") == [refused_key]
        assert len(drive.get(refused_key)) == 32
    for kma in kmas:
        assert run_kma("audit", "verify", "--data-dir", str(kma.data_dir)).returncode == 0
