"""Issue 30: a cluster of three KMAs of release 0.1.0 is upgraded to this tree one KMA at a time
while tape drives get keys from it; then the cluster version is raised under quorum, and a KMA
too old for it (release 0.1.0, or this tree told it supports less) refuses to start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kma.agent.simulator import Drive, KmaList, Tally
from kma.datadir import DataDir
from kma.kmip.client import KmipFailure
from kma.store.cluster_version import SUPPORTED_FOR_TESTS
from kma.store.schema import EXTRA_FOR_TESTS, latest_schema_version
from kms_client import ApiError
from kms_client.release import release
from tests.integration.test_quorum import creds
from tests.support.agents import demo_passphrase, enroll, kmip
from tests.support.cluster import BINARY, assert_every_kma_agrees, replica
from tests.support.kma_process import RunningKma
from tests.support.releases import release_tree
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow
CONTRACT = "-- phase: contract\nCREATE TABLE contract_probe (id INTEGER PRIMARY KEY);\n"
AGENT = "t10k-dal-02"
# Run by release 0.1.0's own test support (PYTHONPATH = its tree): the cluster as it was formed
# then. Its KMAs are stopped at the end; the test starts them again.
FORM = """
import json, sys
from pathlib import Path
# The release's own test support, as it was then (its free_port lived in tests/support/cluster.py)
from tests.support.cluster import add_node, first_node, free_port
tmp = Path(sys.argv[1])
first, ca = first_node(tmp / "first")
kmas = [first]
for kma_id in ("kma-dal-2", "kma-dal-3"):
    kmas.append(add_node(first, ca, tmp, kma_id, ports=(free_port(), free_port())))
    kmas[-1].start()
print(json.dumps({"demo": first.demo, "data_dirs": [str(k.data_dir) for k in kmas]}))
for kma in reversed(kmas):
    kma.stop()
"""


class Drives:
    """Tape drives (the simulator's: each fails over between the KMAs and retries "try again" as a
    drive does) writing new tapes and reading each back, until stopped."""

    def __init__(self, agent_dir: Path, count: int = 2) -> None:
        self.agent_dir = agent_dir
        self.kmas = KmaList(agent_dir)
        self.tally = Tally()
        self.written: list[str] = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(count)]
        for thread in self.threads:
            thread.start()

    def _run(self, index: int) -> None:
        drive = Drive(f"drive-{index}", self.agent_dir, self.kmas)
        n = 0
        try:
            while not self.stopping.is_set():
                volser = f"U{index}{n:04d}"
                n += 1
                try:
                    drive.mount(volser, write=True, rewrite=False, tally=self.tally)
                    with self.tally.lock:
                        self.written.append(volser)
                    drive.mount(volser, write=False, rewrite=False, tally=self.tally)
                except (KmipFailure, ConnectionError) as exc:  # beyond the drive's retries
                    with self.tally.lock:
                        self.tally.failures += 1
                        self.tally.errors.append(f"{drive.name} {volser}: {exc}")
                with self.tally.lock:
                    self.tally.mounts += 2
                self.stopping.wait(0.3)
        finally:
            drive.close()

    def mounts(self) -> int:
        with self.tally.lock:
            return self.tally.mounts

    def keep_mounting(self, more: int = 6) -> None:
        """Wait until the drives have mounted `more` tapes more (they go on meanwhile)."""
        target = self.mounts() + more
        wait_until(lambda: self.mounts() >= target, 180, what=f"{more} more mounts")

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=120)


def form_cluster_on(tree: Path, tmp: Path) -> list[RunningKma]:
    """Three KMAs of one site formed by release `tree`'s own code and test support, running it."""
    env = {**os.environ, "PYTHONPATH": str(tree), "KMA_RQLITED": str(BINARY)}
    done = subprocess.run(
        [sys.executable, "-c", FORM, str(tmp)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    formed = json.loads(done.stdout.strip().splitlines()[-1])
    kmas = []
    for path in formed["data_dirs"]:
        data_dir = Path(path)
        service_port = int(DataDir(data_dir).identity().service_address.rsplit(":", 1)[1])
        kmas.append(RunningKma(data_dir, formed["demo"], source=tree, service_port=service_port))
    with ThreadPoolExecutor(len(kmas)) as pool:  # each waits for the others to have a majority
        list(pool.map(lambda k: k.start(caught_up=False), kmas))
    for kma in kmas:
        kma.wait_ready(caught_up=True)
    return kmas


def recorded(kma: RunningKma) -> dict[str, tuple[str, int | None]]:
    """Each KMA's release and schema version, as its last start recorded them."""
    with replica(kma) as db:
        return {
            r["id"]: (r["version"], r["schema_version"])
            for r in db.execute("SELECT id, version, schema_version FROM kmas")
        }


def written_by(kma: RunningKma, kma_id: str) -> list[tuple[object, ...]]:
    """What a start of KMA `kma_id` writes to the cluster's store, as `kma`'s replica has it: its
    row, its write and outbox marks, its audit chain (the other KMAs go on writing meanwhile)."""
    with replica(kma) as db:
        return [
            tuple(db.execute(sql, (kma_id,)).fetchone() or ())
            for sql in (
                "SELECT * FROM kmas WHERE id = ?",
                "SELECT seq FROM cluster_write_marks WHERE kma_id = ?",
                "SELECT * FROM cluster_outbox_marks WHERE kma_id = ?",
                "SELECT count(*), max(chain_seq) FROM audit_events WHERE kma_id = ?",
            )
        ]


def unsealed(kma: RunningKma) -> int:
    """Keys without a MAC (written by release 0.1.0, or not sealed yet), as `kma`'s replica has it."""
    with replica(kma) as db:
        return int(db.execute("SELECT count(*) FROM keys WHERE mac IS NULL").fetchone()[0])


def sealings(kma: RunningKma) -> int:
    with replica(kma) as db:
        sql = "SELECT count(*) FROM audit_events WHERE operation = 'security.keys_sealed'"
        return int(db.execute(sql).fetchone()[0])


def tables(kma: RunningKma) -> set[str]:
    with replica(kma) as db:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def keys_seen_by(kma: RunningKma, agent_dir: Path, tapes: list[str]) -> dict[str, dict[str, bytes]]:
    """Every key of these tapes, as this KMA serves them to the drive: {tape: {key ID: bytes}}."""
    address = json.loads((kma.data_dir.parent / "ready.json").read_text())["service_address"]
    with kmip(agent_dir, address) as client:
        return {tape: {uid: client.get(uid) for uid in client.locate(data_unit=tape)} for tape in tapes}


@pytest.fixture
def old_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[RunningKma], Path]]:
    """Three KMAs of release 0.1.0, running; this tree (when they run it) has one contract
    migration more (release 0.1.0 knows no such setting)."""
    extra = tmp_path / "migrations"
    extra.mkdir()
    (extra / "9001_contract_probe.sql").write_text(CONTRACT)
    monkeypatch.setenv(EXTRA_FOR_TESTS, str(extra))
    tree = release_tree("0.1.0", tmp_path / "release-0.1.0")  # reports 0.1.0, as an install does
    kmas = form_cluster_on(tree, tmp_path / "cluster")
    try:
        yield kmas, tree
    finally:
        for kma in reversed(kmas):
            kma.stop()


def test_a_cluster_of_release_0_1_0_upgrades_one_kma_at_a_time_while_drives_get_keys(
    old_cluster: tuple[list[RunningKma], Path], tmp_path: Path
) -> None:
    kmas, old = old_cluster
    agent = tmp_path / "agent" / AGENT
    enroll(kmas[0], AGENT, agent, demo_passphrase(kmas[0], AGENT))
    drives = Drives(agent)
    try:
        drives.keep_mounting()
        for n, kma in enumerate(kmas):
            kma.stop()
            kma.source = None  # this tree
            kma.start()  # and caught up with the cluster
            drives.keep_mounting()
            kma_id = DataDir(kma.data_dir).identity().kma_id
            assert recorded(kma)[kma_id] == (release(), latest_schema_version())
            if n < len(kmas) - 1:  # keys of 0.1.0 have no MAC: none sealed while it writes keys too
                assert sealings(kma) == 0 and unsealed(kma) > 0
            if n == 0:  # the raise is refused while KMAs of release 0.1.0 serve, naming them
                with pytest.raises(ApiError) as refused:
                    kma.client("so").raise_cluster_version(2)
                assert refused.value.status == 409
                too_old = "kma-dal-2 (not started on 0.2.0 or later), kma-dal-3 (not started on 0.2.0 or"
                assert too_old in refused.value.message
    finally:
        drives.stop()
    summary = drives.tally.summary(1.0)
    assert summary["failures"] == 0, summary["errors"]
    assert summary["failovers"] > 0  # each KMA was stopped in turn: the drives went to the others
    assert "contract_probe" not in tables(kmas[0])  # this tree's contract migration waits
    assert drives.written

    # Once no KMA runs 0.1.0, the keys written without a MAC are sealed (then a key without one is
    # forged); every key was served meanwhile, whichever release wrote it (no failures above).
    wait_until(lambda: unsealed(kmas[0]) == 0, 60, what="the keys of 0.1.0 sealed after the last upgrade")
    assert sealings(kmas[0]) >= 1

    # Every key issued meanwhile is on every KMA, the same bytes; chains verify; tables agree.
    seen = [keys_seen_by(kma, agent, drives.written) for kma in kmas]
    assert all(len(keys) == 1 for keys in seen[0].values()), seen[0]
    assert seen[1] == seen[0] and seen[2] == seen[0]
    assert_every_kma_agrees(kmas)

    # A KMA taken back to release 0.1.0 (before the raise it may) holds the raise back, named.
    kmas[2].stop()
    kmas[2].source = old
    kmas[2].start()
    with pytest.raises(ApiError, match=r"still too old: kma-dal-3 \(0\.1\.0\)\."):
        kmas[1].client("so").raise_cluster_version(2)
    kmas[2].stop()
    kmas[2].source = None
    kmas[2].start()

    # The cluster version, raised under quorum: pending, then approved by the key split's members.
    so = kmas[1].client("so")
    assert so.get_topology().cluster_version == 1
    pending = so.raise_cluster_version(2, credentials=creds(kmas[1], "alice"))
    assert pending.state == "pending" and pending.type == "raise_cluster_version"
    for user, member in (("qm1", "bob"), ("qm2", "carol")):
        approved = kmas[1].client(user).approve_quorum_operation(pending.id, *creds(kmas[1], member)[0])
    assert approved.state == "executed", approved
    assert approved.result == "raised the cluster version from 1 to 2 (every KMA runs 0.2.0 or later)"
    assert so.get_topology().cluster_version == 2
    # The contract migration waited for the raise, and ran once it was committed.
    wait_until(
        lambda: tables(kmas[2]) >= {"cluster_version", "contract_probe"},
        30,
        what="the raise and the contract migration in the last KMA's replica",
    )

    # Release 0.1.0 started on one of them afterwards: refused, it does not serve.
    late = kmas[2]
    late.stop()
    late.source = old
    with pytest.raises(RuntimeError) as exited:
        late.start()
    assert late.process is not None and late.process.wait(timeout=60) == 2, exited.value
    assert "kma: The change breaks a rule of the store." in str(exited.value)
    assert recorded(kmas[0])["kma-dal-3"] == (release(), latest_schema_version())  # 0.1.0 not recorded

    # This release, told it supports less than the cluster runs at: refused, nothing written.
    late.source = None
    before = written_by(kmas[0], "kma-dal-3")
    env = {**os.environ, SUPPORTED_FOR_TESTS: "1..1"}
    served = subprocess.run(
        [sys.executable, "-m", "kma", "serve", "--data-dir", str(late.data_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert served.returncode == 2, served.stderr
    assert (
        f"kma: This cluster runs at cluster version 2; this KMA's release ({release()}) supports cluster "
        "versions 1 to 1. Install release 0.2.0 or later on this KMA." in served.stderr
    )
    assert written_by(kmas[0], "kma-dal-3") == before

    # Installed again, this release starts.
    late.start()
    assert recorded(late)["kma-dal-3"] == (release(), latest_schema_version())
